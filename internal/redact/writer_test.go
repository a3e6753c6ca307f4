package redact

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"pgregory.net/rapid"
)

// streamPieces are the building blocks of generated streams: clean lines,
// every rule fixture and false positive, and PEM blocks in several dresses.
func streamPieces() []string {
	p := strings.Split(cleanText(3000), "\n")
	for _, f := range ruleFixtures() {
		p = append(p, f.in)
	}
	for _, f := range falsePositives {
		p = append(p, f.in)
	}
	return append(p, pemRSA, pemLegacy, "-----BEGIN RSA PRIVATE"+" KEY-----\n"+pemLines(40, 2), // unterminated
		"-----BEGIN EC PRIVATE"+" KEY-----", "", "\n\n", "+"+strings.ReplaceAll(pemEC, "\n", "\n+"))
}

// writeChunks writes in through a Writer, cut at the given offsets, and
// returns the output and the Writer's count.
func writeChunks(t interface{ Fatalf(string, ...any) }, r *Redactor, in string, cuts []int) (string, int) {
	var out bytes.Buffer
	w := r.Writer(&out)
	prev := 0
	for _, c := range append(cuts, len(in)) {
		if n, err := w.Write([]byte(in[prev:c])); err != nil || n != c-prev {
			t.Fatalf("Write = %d, %v, want %d, nil", n, err, c-prev)
		}
		prev = c
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return out.String(), w.Count()
}

func TestWriterMatchesStringProperty(t *testing.T) {
	pieces := streamPieces()
	r := Default()
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(pieces), 1, 30).Draw(t, "parts")
		sep := rapid.SampledFrom([]string{"\n", "\r\n", "\n\n"}).Draw(t, "sep")
		in := strings.Join(parts, sep)
		if rapid.Bool().Draw(t, "trailingNewline") {
			in += "\n"
		}
		cuts := rapid.SliceOfN(rapid.IntRange(0, len(in)), 0, 20).Draw(t, "cuts")
		slices.Sort(cuts)
		want, wantN := r.String(in)
		got, gotN := writeChunks(t, r, in, cuts)
		if got != want {
			t.Fatalf("Writer output differs from String\ninput %q\ncuts %v\n got %q\nwant %q", in, cuts, got, want)
		}
		if gotN != wantN {
			t.Fatalf("Count() = %d, want %d", gotN, wantN)
		}
	})
}

func TestWriterEveryByte(t *testing.T) {
	in := strings.Join(streamPieces(), "\n")
	cuts := make([]int, 0, len(in))
	for i := 1; i < len(in); i++ {
		cuts = append(cuts, i)
	}
	want, wantN := Default().String(in)
	got, gotN := writeChunks(t, Default(), in, cuts)
	if got != want || gotN != wantN {
		t.Fatalf("byte-at-a-time Writer = %d redactions, equal output %v; want %d, true", gotN, got == want, wantN)
	}
}

func TestWriterHoldsPEMUntilEnd(t *testing.T) {
	var out bytes.Buffer
	w := Default().Writer(&out)
	lines := strings.SplitAfter("log line\n"+pemRSA+"\nafter\n", "\n")
	for _, l := range lines[:3] { // "log line", BEGIN, first body line
		if _, err := w.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if got := out.String(); got != "log line\n" {
		t.Fatalf("output after BEGIN and one body line = %q, want only %q", got, "log line\n")
	}
	for _, l := range lines[3:] {
		if _, err := w.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "log line\n"+mark("pem-private-key")+"\nafter\n"; got != want {
		t.Fatalf("output = %q, want %q", got, want)
	}
	if err := w.Close(); err != nil || w.Count() != 1 {
		t.Fatalf("Close = %v, Count = %d, want nil, 1", err, w.Count())
	}
}

func TestWriterFlushInsidePEM(t *testing.T) {
	var out bytes.Buffer
	w := Default().Writer(&out)
	body := pemLines(50, 4)
	bl := strings.SplitAfter(body, "\n")
	mustWrite(t, w, "-----BEGIN RSA PRIVATE"+" KEY-----\n"+bl[0]+bl[1])
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, bl[2]+bl[3]+"-----END RSA PRIVATE KEY-----\nnext\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, l := range bl[:4] {
		if strings.Contains(got, strings.TrimSpace(l)) {
			t.Fatalf("output %q leaks body line %q", got, l)
		}
	}
	if !strings.HasSuffix(got, "\nnext\n") {
		t.Fatalf("output %q, want it to end with the line after the block", got)
	}
}

func TestWriterLongLine(t *testing.T) {
	tests := []struct {
		name string
		line string
	}{
		{"no blanks", strings.Repeat("abcdefgh", 3*MaxLine/8+5)},
		{"blanks", strings.Repeat("word ", 3*MaxLine/5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := Default().Writer(&out)
			for i := 0; i < len(tt.line); i += 1000 {
				mustWrite(t, w, tt.line[i:min(i+1000, len(tt.line))])
				if len(w.buf) > MaxLine+1000 {
					t.Fatalf("buffered %d bytes of one line, want at most %d", len(w.buf), MaxLine+1000)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.line {
				t.Fatalf("long clean line changed: got %d bytes, want %d", out.Len(), len(tt.line))
			}
		})
	}
}

func TestWriterHoldIsBounded(t *testing.T) {
	var out bytes.Buffer
	w := Default().Writer(&out)
	mustWrite(t, w, "-----BEGIN RSA PRIVATE"+" KEY-----\n")
	line := fake(60, 64, lowerUpperDigits) + "\n"
	for i := 0; i < (maxHold/len(line))+10; i++ {
		mustWrite(t, w, line)
	}
	if len(w.buf) > maxHold+len(line) {
		t.Fatalf("held %d bytes, want at most %d", len(w.buf), maxHold+len(line))
	}
	mustWrite(t, w, line+line)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), strings.TrimSpace(line)) {
		t.Fatal("body of an over-long PEM block leaked")
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	w := Default().Writer(&failWriter{n: 1})
	mustWrite(t, w, "one\n")
	if _, err := w.Write([]byte("two\n")); err == nil {
		t.Fatal("Write to a failing writer: got nil error, want one")
	}
	if _, err := w.Write([]byte("three\n")); err == nil {
		t.Fatal("Write after a failure: got nil error, want the sticky error")
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush after a failure: got nil error, want the sticky error")
	}

	var out bytes.Buffer
	w = Default().Writer(&out)
	mustWrite(t, w, "partial")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	if out.String() != "partial" {
		t.Fatalf("Close wrote %q, want %q", out.String(), "partial")
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, errs.E(errs.InvalidArgument)) {
		t.Fatalf("Write after Close error = %v, want %s", err, errs.InvalidArgument)
	}
}

func TestWriterConcurrentWrites(t *testing.T) {
	var out safeBuffer
	w := Default().Writer(&out)
	line := "token " + ghToken + "\n"
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if _, err := w.Write([]byte(line)); err != nil {
					t.Error(err)
					return
				}
				_ = w.Count()
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Count() != 400 || strings.Contains(out.String(), ghToken) {
		t.Fatalf("Count = %d, leaked = %v, want 400, false", w.Count(), strings.Contains(out.String(), ghToken))
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func mustWrite(t *testing.T, w *Writer, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%d bytes) = %d, %v", len(s), n, err)
	}
}
