package mutation

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// A git commit that answered an error counts as made only when HEAD moved
// to a commit carrying the write's own receipt id.
func TestCommittedAnyway(t *testing.T) {
	ctx := context.Background()
	git := &gitx.Git{}
	dir := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	before, err := git.Head(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if committedAnyway(ctx, git, dir, before, "rcpt_1") {
		t.Fatal("HEAD did not move: no commit was made")
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := git.Run(ctx, dir, 0, "commit", "-q", "-a", "-m", "change\n\nHarnessd-Receipt: rcpt_1\nHarnessd-Repo: repo_1\n"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		receipt string
		want    bool
	}{{"rcpt_1", true}, {"rcpt_2", false}, {"", false}} {
		if got := committedAnyway(ctx, git, dir, before, c.receipt); got != c.want {
			t.Errorf("receipt %q: committed %v, want %v", c.receipt, got, c.want)
		}
	}
}
