package joblog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/proc"
)

// fastPath is what proc keeps of the same stream with the same cap.
func fastPath(s string, maxBytes int) proc.Output {
	h := proc.NewHeadTail(maxBytes)
	h.Write([]byte(s))
	return h.Output()
}

func writeLog(t *testing.T, dir, name string, capBytes int64, chunks []string, closeIt bool) *Writer {
	t.Helper()
	w, err := Create(dir, name, capBytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if _, err := w.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if closeIt {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		w.red.Flush()
	}
	return w
}

func lines(n int, format string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

func TestHeadTailMatchesFastPath(t *testing.T) {
	tests := []struct {
		name     string
		chunks   []string
		maxBytes int
	}{
		{"empty", nil, 64 << 10},
		{"short", []string{"ok  \texample.com/pkg\t0.01s\n"}, 64 << 10},
		{"exactly the cap", []string{strings.Repeat("x", 1<<10)}, 1 << 10},
		{"one over the cap", []string{strings.Repeat("x", 1<<10+1)}, 1 << 10},
		{"many lines", lines(20000, "=== RUN   TestLine%05d\n"), 64 << 10},
		{"one huge write", []string{strings.Repeat("0123456789abcdef", 30000) + "\nlast line\n"}, 64 << 10},
		{"utf-8 at the cuts", []string{strings.Repeat("é", 5000)}, 1001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLog(t, dir, "stdout.log", 0, tt.chunks, true)
			got, err := HeadTail(dir, "stdout.log", tt.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			want := fastPath(strings.Join(tt.chunks, ""), tt.maxBytes)
			if got != want {
				t.Errorf("got %d bytes total=%d truncated=%v, want %d bytes total=%d truncated=%v\n got %.200q\nwant %.200q",
					len(got.Text), got.TotalBytes, got.Truncated, len(want.Text), want.TotalBytes, want.Truncated, got.Text, want.Text)
			}
		})
	}
}

// TestHeadTailOfCappedLogs reads logs whose middle the writer dropped
// (capped below the stream), compacted or left by a writer that died.
func TestHeadTailOfCappedLogs(t *testing.T) {
	all := lines(5000, "line %05d of the stream\n")
	in := strings.Join(all, "")
	for _, closed := range []bool{true, false} {
		t.Run(fmt.Sprintf("closed=%v", closed), func(t *testing.T) {
			dir := t.TempDir()
			w := writeLog(t, dir, "out.log", 16<<10, all, closed)
			if !closed {
				defer w.Close()
			}
			got, err := HeadTail(dir, "out.log", 8<<10)
			if err != nil {
				t.Fatal(err)
			}
			if got.TotalBytes != int64(len(in)) || !got.Truncated {
				t.Fatalf("got total %d truncated %v, want %d true", got.TotalBytes, got.Truncated, len(in))
			}
			head, rest, ok := strings.Cut(got.Text, "\n[... truncated ")
			if !ok {
				t.Fatalf("no truncation marker in %.300q", got.Text)
			}
			n, tail := 0, ""
			if _, err := fmt.Sscanf(rest, "%d bytes ...]\n", &n); err != nil {
				t.Fatalf("marker: %v in %.60q", err, rest)
			}
			tail = rest[strings.Index(rest, "]\n")+2:]
			// The log's own head (4 KiB, cut back to a line end) bounds it.
			if head != in[:len(head)] || len(head) > 4<<10 || len(head) < 2<<10 {
				t.Errorf("head: got %d bytes, want a prefix of the stream of 2-4 KiB", len(head))
			}
			if !strings.HasSuffix(in, tail) || len(tail) != 4<<10 {
				t.Errorf("tail: got %d bytes, want the last 4096 of the stream", len(tail))
			}
			if int64(len(head)+n+len(tail)) != got.TotalBytes {
				t.Errorf("head %d + omitted %d + tail %d = %d, want the stream's %d", len(head), n, len(tail), len(head)+n+len(tail), got.TotalBytes)
			}
		})
	}
}

func TestHeadTailRedacts(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, "stderr.log", 0, []string{"token=" + fakeToken + "\n", strings.Repeat("y", 200<<10), "\nGITHUB_TOKEN=" + fakeToken + "\n"}, true)
	got, err := HeadTail(dir, "stderr.log", 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.Text, fakeToken) || strings.Count(got.Text, "[REDACTED") != 2 {
		t.Errorf("got %q...%q, want both tokens redacted", got.Text[:60], got.Text[len(got.Text)-60:])
	}
}

func TestHeadTailErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := HeadTail(dir, "missing.log", 0); errs.CodeOf(err) != errs.NotFound {
		t.Errorf("missing log: got %v, want NOT_FOUND", err)
	}
	if _, err := HeadTail(dir, "../x", 0); errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("bad name: got %v, want INVALID_ARGUMENT", err)
	}
}
