package read_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

const secret = "TOPSECRET-7f3a\n"

// attackRepo registers a repository holding a file literally named "--"
// (with the content of a secret file outside the root, so git's implicit
// --no-index mode would find them equal) and returns the harness, the repo
// id, the root and the secret's path.
func attackRepo(t *testing.T) (*harness.Harness, string, string, string) {
	t.Helper()
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n", "--": secret, "x/y.txt": "y\n"})
	outDir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(outDir, "secret.txt")
	if err := os.WriteFile(outside, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return h, r.ID, root, outside
}

func TestGitDiffRevThatIsAPathLeaksNothing(t *testing.T) {
	h, id, root, outside := attackRepo(t)
	ctx := context.Background()
	rel, err := filepath.Rel(root, outside)
	if err != nil {
		t.Fatal(err)
	}
	revs := []string{"/", outside, rel, "x/../" + rel, "/etc/passwd", "..", ".", "./--", "--", "HEAD^{/../" + rel + "}"}
	for _, differ := range []bool{false, true} {
		if differ {
			testutil.WriteFile(t, root, "--", "different\n")
		}
		for _, rev := range revs {
			for _, staged := range []bool{false, true} {
				d, err := h.GitDiff(ctx, harness.GitDiffArgs{RepoID: id, Rev: rev, Staged: staged})
				var e *errs.Error
				if !errors.As(err, &e) || e.Code != errs.InvalidArgument {
					t.Errorf("git_diff rev %q staged %v = %+v, %v; want INVALID_ARGUMENT", rev, staged, d, err)
					continue
				}
				if !strings.Contains(e.Message, "rev ") || !strings.Contains(e.Message, "paths go in paths") {
					t.Errorf("git_diff rev %q: message %q does not name the field and the fix", rev, e.Message)
				}
				if strings.Contains(err.Error(), "TOPSECRET") {
					t.Errorf("git_diff rev %q leaked the secret: %v", rev, err)
				}
			}
		}
	}
	// A real revision still works.
	if _, err := h.GitDiff(ctx, harness.GitDiffArgs{RepoID: id, Rev: "HEAD"}); err != nil {
		t.Errorf("git_diff rev HEAD: %v", err)
	}
}

func TestTempLeftoversHiddenFromStatusAndSearch(t *testing.T) {
	h, id, root, _ := attackRepo(t)
	ctx := context.Background()
	testutil.WriteFile(t, root, ".README.md.harnessd-tmp-1234567", "hello from a crashed patch\n")
	testutil.WriteFile(t, root, "x/.y.txt.harnessd-tmp-0123456789abcdef", "hello again\n")
	st, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Clean || len(st.Untracked) != 0 {
		t.Errorf("git_status = %+v, want clean", st.Status)
	}
	res, err := h.Search(ctx, harness.SearchArgs{RepoID: id, Query: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Matches {
		if strings.Contains(m.Path, ".harnessd-tmp-") {
			t.Errorf("search reported temp file %s", m.Path)
		}
	}
	if len(res.Matches) != 1 || res.Matches[0].Path != "README.md" {
		t.Errorf("search = %+v, want only README.md", res.Matches)
	}
}
