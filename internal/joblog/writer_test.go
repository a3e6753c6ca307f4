package joblog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// fakeToken is a GitHub-token-shaped secret built at run time.
var fakeToken = "gh" + "p_" + strings.Repeat("aB3dE5gH7jK9", 3)[:36]

func readAll(t *testing.T, dir, name string) string {
	t.Helper()
	var out []byte
	var off int64
	for {
		data, next, total, err := Read(dir, name, off, 0)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, data...)
		if next >= total {
			return string(out)
		}
		off = next
	}
}

func TestCreateModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "jobs", "j1")
	w, err := Create(dir, "stdout.log", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dir)
	if got := st.Mode().Perm(); got != 0o700 {
		t.Errorf("dir mode: got %o, want 700", got)
	}
	st, _ = os.Stat(filepath.Join(dir, "stdout.log"))
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode: got %o, want 600", got)
	}
	if _, err := w.Write([]byte("x")); errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("write after close: got %v, want INVALID_ARGUMENT", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
}

func TestCreateRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file string
		capBytes   int64
	}{
		{"empty name", "", 0},
		{"slash", "a/b", 0},
		{"dotdot", "..", 0},
		{"hidden", ".x", 0},
		{"nul", "a\x00", 0},
		{"tiny cap", "x.log", 100},
		{"negative cap", "x.log", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Create(dir, tt.file, tt.capBytes)
			if errs.CodeOf(err) != errs.InvalidArgument {
				if w != nil {
					w.Close()
				}
				t.Fatalf("got %v, want INVALID_ARGUMENT", err)
			}
		})
	}
}

func TestRedactsSecretSplitAcrossWrites(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, "out.log", 0)
	if err != nil {
		t.Fatal(err)
	}
	line := "token=" + fakeToken + " done\n"
	for i := 0; i < len(line); i += 5 {
		if _, err := w.Write([]byte(line[i:min(i+5, len(line))])); err != nil {
			t.Fatal(err)
		}
		// Nothing of the secret may reach the disk before the line is done.
		b, _ := os.ReadFile(filepath.Join(dir, "out.log"))
		if bytes.Contains(b, []byte(fakeToken[:12])) {
			t.Fatalf("secret prefix on disk after %d bytes: %q", i, b)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir, "out.log")
	if strings.Contains(got, fakeToken) || !strings.Contains(got, "[REDACTED:") || !strings.HasSuffix(got, " done\n") {
		t.Errorf("got %q, want the token redacted and the rest kept", got)
	}
	if w.Redactions() != 1 {
		t.Errorf("Redactions: got %d, want 1", w.Redactions())
	}
	if w.Written() != int64(len(line)) {
		t.Errorf("Written: got %d, want %d", w.Written(), len(line))
	}
}

func TestCapKeepsHeadAndTail(t *testing.T) {
	dir := t.TempDir()
	const capBytes = 16 << 10
	w, err := Create(dir, "out.log", capBytes)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for i := 0; i < 5000; i++ {
		line := fmt.Sprintf("line %05d %s\n", i, strings.Repeat("x", i%37))
		all.WriteString(line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	// While writing, the disk holds at most about 2*capBytes.
	if n := dirSize(t, dir); n > 2*capBytes {
		t.Errorf("on-disk size while writing: got %d, want <= %d", n, 2*capBytes)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if int64(len(b)) > capBytes {
		t.Errorf("compacted size: got %d, want <= %d", len(b), capBytes)
	}
	if !strings.HasPrefix(s, "line 00000 \nline 00001 x\n") {
		t.Errorf("head: got %q, want the first lines", s[:40])
	}
	if !strings.Contains(s, "\n[... joblog: ") || !strings.Contains(s, " bytes omitted ...]\n") {
		t.Errorf("no omission marker in %q", s[len(s)/4-50:len(s)/4+100])
	}
	want := all.String()
	lastLine := want[strings.LastIndex(want[:len(want)-1], "\n")+1:]
	if !strings.HasSuffix(s, lastLine) {
		t.Errorf("tail: got %q, want it to end with %q", s[len(s)-60:], lastLine)
	}
	// The tail starts at a line boundary and is a suffix of the input.
	tail := s[strings.Index(s, " bytes omitted ...]\n")+len(" bytes omitted ...]\n"):]
	if !strings.HasSuffix(want, tail) || !strings.HasPrefix(tail, "line ") {
		t.Errorf("tail %q... is not a line-aligned suffix of the input", tail[:20])
	}
	if segs, _ := listSegments(dir, "out.log"); len(segs) != 0 {
		t.Errorf("segments after Close: got %d, want 0", len(segs))
	}
	// Read with stream offsets: the whole log reads as head+marker+tail, and
	// total is the redacted stream length.
	data, next, total, err := Read(dir, "out.log", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != s || total != int64(len(want)) || next != total {
		t.Errorf("Read: got %d bytes next=%d total=%d, want the file (%d) next=total=%d", len(data), next, total, len(s), len(want))
	}
	data, _, _, err = Read(dir, "out.log", 0, int64(len(lastLine)))
	if err != nil || string(data) != lastLine {
		t.Errorf("Read tail: got %q, %v, want %q", data, err, lastLine)
	}
}

func TestCapSingleHugeWrite(t *testing.T) {
	dir := t.TempDir()
	const capBytes = 8 << 10
	w, err := Create(dir, "out.log", capBytes)
	if err != nil {
		t.Fatal(err)
	}
	in := bytes.Repeat([]byte("0123456789abcdef"), 10000)
	in = append(in, "\nlast line\n"...)
	if _, err := w.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out.log"))
	if len(b) > capBytes || !bytes.HasSuffix(b, []byte("\nlast line\n")) || !bytes.HasPrefix(b, in[:100]) {
		t.Errorf("got %d bytes ending %q, want <= %d ending with the last line", len(b), b[max(0, len(b)-20):], capBytes)
	}
}

func TestCrashLeavesReadableLog(t *testing.T) {
	// Simulate kill -9: never Close; the files must read as a log.
	dir := t.TempDir()
	const capBytes = 8 << 10
	w, err := Create(dir, "out.log", capBytes)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for i := 0; i < 3000; i++ {
		line := fmt.Sprintf("row %d\n", i)
		all.WriteString(line)
		w.Write([]byte(line))
	}
	w.red.Flush()
	if n := dirSize(t, dir); n > 2*capBytes {
		t.Errorf("on-disk size: got %d, want <= %d", n, 2*capBytes)
	}
	got := readAll(t, dir, "out.log")
	if !strings.HasPrefix(got, "row 0\nrow 1\n") || !strings.HasSuffix(got, "row 2999\n") || !strings.Contains(got, "bytes omitted") {
		t.Errorf("crashed log reads as %q...%q", got[:20], got[len(got)-20:])
	}
	// Compact repairs it like Close would.
	w.sink.head.Close()
	w.sink.seg.Close()
	if err := Compact(dir, "out.log", capBytes); err != nil {
		t.Fatal(err)
	}
	after := readAll(t, dir, "out.log")
	if !strings.HasPrefix(after, "row 0\n") || !strings.HasSuffix(after, "row 2999\n") {
		t.Errorf("compacted log reads as %q...%q", after[:20], after[len(after)-20:])
	}
	if segs, _ := listSegments(dir, "out.log"); len(segs) != 0 {
		t.Errorf("segments after Compact: got %d, want 0", len(segs))
	}
}

func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, "combined.log", 32<<10)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	const perWriter = 2000
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if _, err := fmt.Fprintf(w, "writer %d line %d\n", g, i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// A concurrent follower.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var off int64
		for i := 0; i < 200; i++ {
			_, next, _, err := Read(dir, "combined.log", off, 0)
			if err != nil {
				t.Error(err)
				return
			}
			if next < off {
				t.Errorf("next went back: got %d, want >= %d", next, off)
				return
			}
			off = next
		}
	}()
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var want int64
	for g := 0; g < 4; g++ {
		for i := 0; i < perWriter; i++ {
			want += int64(len(fmt.Sprintf("writer %d line %d\n", g, i)))
		}
	}
	if w.Written() != want || w.Stored() != want {
		t.Errorf("Written/Stored: got %d/%d, want %d", w.Written(), w.Stored(), want)
	}
	got := readAll(t, dir, "combined.log")
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if !strings.HasPrefix(l, "writer ") && !strings.HasPrefix(l, "[... joblog:") {
			t.Fatalf("torn line %q", l)
		}
	}
}

func TestReadGrowing(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, "out.log", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write([]byte("one\ntwo\n"))
	data, next, total, err := Read(dir, "out.log", 0, 0)
	if string(data) != "one\ntwo\n" || next != 8 || total != 8 || err != nil {
		t.Fatalf("got %q next=%d total=%d err=%v, want all 8 bytes", data, next, total, err)
	}
	w.Write([]byte("three\n"))
	data, next, total, _ = Read(dir, "out.log", next, 0)
	if string(data) != "three\n" || next != 14 || total != 14 {
		t.Errorf("follow: got %q next=%d total=%d, want %q 14 14", data, next, total, "three\n")
	}
	data, next, _, _ = Read(dir, "out.log", next, 0)
	if len(data) != 0 || next != 14 {
		t.Errorf("at end: got %q next=%d, want nothing at 14", data, next)
	}
	data, _, _, _ = Read(dir, "out.log", 0, 6)
	if string(data) != "three\n" {
		t.Errorf("tail 6: got %q, want %q", data, "three\n")
	}
	data, _, _, _ = Read(dir, "out.log", 0, 1000)
	if string(data) != "one\ntwo\nthree\n" {
		t.Errorf("tail larger than log: got %q", data)
	}
	// A partial line without newline is still buffered by the redactor.
	w.Write([]byte("partial"))
	if _, _, total, _ := Read(dir, "out.log", 0, 0); total != 14 {
		t.Errorf("partial line reached disk early: total %d, want 14", total)
	}
}

func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, "big.log", 0)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("z", 1023) + "\n"
	for i := 0; i < 3*1024; i++ {
		w.Write([]byte(line))
	}
	w.Close()
	data, next, total, err := Read(dir, "big.log", 0, 0)
	if err != nil || len(data) != MaxReadBytes || next != MaxReadBytes || total != 3<<20 {
		t.Errorf("got len=%d next=%d total=%d err=%v, want 1 MiB of 3 MiB", len(data), next, total, err)
	}
	data, _, _, _ = Read(dir, "big.log", 0, 5<<20)
	if len(data) != MaxReadBytes {
		t.Errorf("tail read: got %d bytes, want %d", len(data), MaxReadBytes)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name         string
		file         string
		offset, tail int64
		want         errs.Code
	}{
		{"missing", "nope.log", 0, 0, errs.NotFound},
		{"bad name", "../x", 0, 0, errs.InvalidArgument},
		{"negative offset", "x.log", -1, 0, errs.InvalidArgument},
		{"negative tail", "x.log", 0, -5, errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := Read(dir, tt.file, tt.offset, tt.tail)
			if got := errs.CodeOf(err); got != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
}

func TestCreateRemovesStaleState(t *testing.T) {
	dir := t.TempDir()
	w, _ := Create(dir, "out.log", MinMaxBytes)
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(w, "old %d\n", i)
	}
	w.Close()
	if _, err := os.Stat(filepath.Join(dir, "out.log.idx")); err != nil {
		t.Fatalf("index missing after a capped Close: %v", err)
	}
	w2, err := Create(dir, "out.log", 0)
	if err != nil {
		t.Fatal(err)
	}
	w2.Write([]byte("new\n"))
	w2.Close()
	if got := readAll(t, dir, "out.log"); got != "new\n" {
		t.Errorf("got %q, want %q", got, "new\n")
	}
	if _, err := os.Stat(filepath.Join(dir, "out.log.idx")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale index kept: %v", err)
	}
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n
}

func BenchmarkWrite(b *testing.B) {
	w, err := Create(b.TempDir(), "out.log", 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	line := []byte("ok  \tgithub.com/harnessd/harnessd/harness/joblog\t0.123s some ordinary output line\n")
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadTail(b *testing.B) {
	dir := b.TempDir()
	w, _ := Create(dir, "out.log", 1<<20)
	for i := 0; i < 50000; i++ {
		fmt.Fprintf(w, "line %d of the log\n", i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, _, err := Read(dir, "out.log", 0, 4096); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	w.Close()
}
