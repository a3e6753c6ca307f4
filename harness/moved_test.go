package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// A repository moved, deleted or replaced after registration answers
// REPOSITORY_MOVED and nothing is written: a patch must not recreate the
// deleted root, and another repository at the path must not be served
// under the old repo_id.
func TestRepositoryMovedOrReplaced(t *testing.T) {
	ctx := context.Background()
	patchAt := func(h *harness.Harness, id, req string) error {
		_, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: id, RequestID: req,
			Operations: replaceOp("README.md", "hello world", "hello moved")})
		return err
	}
	wantMoved := func(t *testing.T, err error) {
		t.Helper()
		if errs.CodeOf(err) != errs.RepositoryMoved {
			t.Fatalf("err = %v, want REPOSITORY_MOVED", err)
		}
	}

	t.Run("moved away", func(t *testing.T) {
		h, root, id := fixture(t)
		away := root + "-away"
		if err := os.Rename(root, away); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(away) })
		wantMoved(t, patchAt(h, id, "m-1"))
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Fatalf("the patch recreated the moved root (stat: %v)", err)
		}
		_, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "README.md"})
		wantMoved(t, err)
		// Moved back, it is the same directory again.
		if err := os.Rename(away, root); err != nil {
			t.Fatalf("move back: %v", err)
		}
		if err := patchAt(h, id, "m-2"); err != nil {
			t.Fatalf("patch after moving back: %v", err)
		}
	})

	t.Run("replaced by another repository", func(t *testing.T) {
		h, root, id := fixture(t)
		other := testutil.Repo(t, map[string]string{"README.md": "# other\nhello world\n"})
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(other, root); err != nil {
			t.Fatal(err)
		}
		wantMoved(t, patchAt(h, id, "r-1"))
		if got := readFile(t, root, "README.md"); got != "# other\nhello world\n" {
			t.Fatalf("the other repository was written: %q", got)
		}
		_, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
		wantMoved(t, err)
		// Registering the path again records the directory now there.
		r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
		if err != nil || r.ID != id || !r.Reidentified {
			t.Fatalf("re-register = %+v, %v; want the same id, reidentified", r, err)
		}
		if err := patchAt(h, id, "r-2"); err != nil {
			t.Fatalf("patch after re-registering: %v", err)
		}
	})

	t.Run(".git replaced", func(t *testing.T) {
		h, root, id := fixture(t)
		other := testutil.Repo(t, map[string]string{"x": "y"})
		if err := os.RemoveAll(filepath.Join(root, ".git")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(other, ".git"), filepath.Join(root, ".git")); err != nil {
			t.Fatal(err)
		}
		wantMoved(t, patchAt(h, id, "g-1"))
	})
}
