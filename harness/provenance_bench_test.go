package harness_test

import (
	"context"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// BenchmarkCommitVerify is commit_verify of a one-file commit in a store
// holding one receipt: rev-parse, cat-file, the receipt scan, the audit
// query, the tree digests and a full audit chain verification.
func BenchmarkCommitVerify(b *testing.B) {
	h, id := benchHarness(b, true)
	ctx := context.Background()
	l, err := h.Repositories(ctx, harness.ListArgs{})
	if err != nil {
		b.Fatal(err)
	}
	root := l.Repositories[0].Root
	testutil.WriteFile(b, root, "src/app.go", "package app\n\nvar v = \"c\"\n")
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: id, RequestID: "bs", Paths: []string{"src/app.go"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "bc", Message: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		r, err := h.CommitVerify(ctx, harness.CommitVerifyArgs{RepoID: id, Rev: "HEAD"})
		if err != nil || !r.Verified {
			b.Fatalf("verify = %+v, %v", r, err)
		}
	}
}
