package pathsafe

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestDirBeneath(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	for _, d := range []string{"a/b", "../outside"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(root, "inner")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dir  string
		want errs.Code
	}{
		{root, ""},
		{filepath.Join(root, "a", "b"), ""},
		{filepath.Join(root, "link"), errs.PathOutsideRoot},
		{filepath.Join(root, "inner", "b"), errs.PathOutsideRoot}, // canonical paths have no link
		{filepath.Join(base, "outside"), errs.PathOutsideRoot},
		{filepath.Join(root, "missing"), errs.NotFound},
	} {
		f, err := DirBeneath(root, tt.dir)
		if errs.CodeOf(err) != tt.want {
			t.Errorf("DirBeneath(%s) = %v, want %q", tt.dir, err, tt.want)
		}
		if f != nil {
			f.Close()
		}
		// The walk of a kernel without openat2 decides the same.
		if tt.want == "" || tt.want == errs.PathOutsideRoot && tt.dir != filepath.Join(base, "outside") {
			rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, tt.dir)
			fd, werr := walkBeneath(rfd, rel)
			unix.Close(rfd)
			if (werr == nil) != (tt.want == "") {
				t.Errorf("walkBeneath(%s) = %v, want ok=%v", rel, werr, tt.want == "")
			}
			if werr == nil {
				unix.Close(fd)
			}
		}
	}
}
