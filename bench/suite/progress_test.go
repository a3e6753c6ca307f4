package suite

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// Progress is drawn only on a terminal: into a buffer, a pipe or
// /dev/null (a character device, not a terminal) nothing is written, so no
// "\r" reaches a file.
func TestProgressOffTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var buf bytes.Buffer
	for name, out := range map[string]io.Writer{"buffer": &buf, "pipe": w, "/dev/null": devnull} {
		if drawProgress(out) {
			t.Errorf("%s: progress drawn", name)
		}
	}
	p := &progress{w: &buf, total: 3, off: !drawProgress(&buf)}
	p.show("inproc", "small_file_read")
	p.show("inproc", "git_status")
	p.clear()
	progressLine(&buf, "load: opening %s ...", "inproc")
	if buf.Len() != 0 {
		t.Errorf("progress written off a terminal: %q", buf.String())
	}
}

// openPty opens a pseudo-terminal and returns its terminal side.
func openPty(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pty number: %v", err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// On a terminal progress is drawn, unless NO_COLOR or TERM=dumb.
func TestProgressRespectsNoColor(t *testing.T) {
	tty := openPty(t)
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	if !drawProgress(tty) {
		t.Error("no progress on a terminal")
	}
	t.Setenv("NO_COLOR", "1")
	if drawProgress(tty) {
		t.Error("progress drawn with NO_COLOR")
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	if drawProgress(tty) {
		t.Error("progress drawn with TERM=dumb")
	}
}
