package patch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// A directory swapped for a symbolic link between resolving a patch's
// paths and writing them (another process racing the patch) cannot carry
// the write, the delete or a new directory out of the root: the directory
// is opened beneath the root without following links, at the moment of
// the write.
func TestWritesStayBeneathTheRoot(t *testing.T) {
	for _, tt := range []struct {
		name string
		op   Op
		pre  func(t *testing.T, root string)
	}{
		{"write", Op{Op: OpWrite, Path: "sub/a.txt", Content: "new\n"}, nil},
		{"create in a new dir", Op{Op: OpCreate, Path: "sub/new/b.txt", Content: "b\n"}, nil},
		{"delete", Op{Op: OpDelete, Path: "sub/a.txt"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			outside := filepath.Join(base, "outside")
			for _, d := range []string{filepath.Join(root, "sub"), outside} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFile(t, root, "sub/a.txt", "old\n", 0o644)
			writeFile(t, outside, "a.txt", "outside\n", 0o644)
			r, err := pathsafe.NewRoot(root, nil)
			if err != nil {
				t.Fatal(err)
			}
			swapped := false
			fence := func() error {
				if swapped {
					return nil
				}
				swapped = true
				// The race: sub becomes a link to a directory outside.
				if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub-moved")); err != nil {
					return err
				}
				return os.Symlink(outside, filepath.Join(root, "sub"))
			}
			_, err = Apply(context.Background(), r, []Op{tt.op}, Options{Fence: fence, NoSync: true})
			if errs.CodeOf(err) != errs.PathOutsideRoot && errs.CodeOf(err) != errs.PatchRollbackIncomplete {
				t.Fatalf("got %v, want PATH_OUTSIDE_ROOT", err)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "a.txt")); err != nil || string(b) != "outside\n" {
				t.Fatalf("the write reached outside the root: %q %v", b, err)
			}
			if _, err := os.Lstat(filepath.Join(outside, "new")); err == nil {
				t.Fatal("a directory was created outside the root")
			}
			// Control: without the race the same patch applies.
			root2 := filepath.Join(base, "root2")
			writeFile(t, root2, "sub/a.txt", "old\n", 0o644)
			r2, err := pathsafe.NewRoot(root2, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(context.Background(), r2, []Op{tt.op}, Options{NoSync: true}); err != nil {
				t.Fatalf("control: %v", err)
			}
		})
	}
}
