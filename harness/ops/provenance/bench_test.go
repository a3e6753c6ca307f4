package provenance

import (
	"context"
	"fmt"
	"testing"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// benchCommit makes a repository whose HEAD changed n files.
func benchCommit(b *testing.B, n int) string {
	b.Helper()
	dir := testutil.Repo(b, map[string]string{"README.md": "x\n"})
	for i := range n {
		testutil.WriteFile(b, dir, fmt.Sprintf("f%03d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	testutil.Git(b, dir, "add", "-A")
	testutil.Git(b, dir, "commit", "-q", "-m", "n files")
	return dir
}

// BenchmarkTreeChanges is what git_commit adds to a commit and
// commit_verify spends on the tree check (diff-tree --raw plus one
// cat-file --batch), against the name-status diff-tree git_commit ran
// before ("name-status").
func BenchmarkTreeChanges(b *testing.B) {
	for _, n := range []int{1, 50} {
		dir := benchCommit(b, n)
		g := &gitx.Git{}
		ctx := context.Background()
		b.Run(fmt.Sprintf("digests/%d-files", n), func(b *testing.B) {
			for range b.N {
				if ch, err := TreeChanges(ctx, g, dir, "HEAD"); err != nil || len(ch) != n {
					b.Fatalf("TreeChanges = %d, %v", len(ch), err)
				}
			}
		})
		b.Run(fmt.Sprintf("name-status/%d-files", n), func(b *testing.B) {
			for range b.N {
				if _, _, err := g.Run(ctx, dir, 0, "diff-tree", "--no-commit-id", "--name-status", "-r", "-z", "--root", "HEAD"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
