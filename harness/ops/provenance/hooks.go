package provenance

import (
	"context"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/trailer"
)

// StampCommit is the write path's Trailers hook (op.WriteHooks): the
// trailer block of the commit c writes, from what its receipt r knows
// (the receipt id, the verified stages), c's run and repository, the
// policy in force and the approvals c carries.
func StampCommit(c *op.Call, r *op.Receipt, approvals []string) []trailer.Trailer {
	return Trailers(Stamp{ReceiptID: r.ReceiptID, RunID: c.Caller.RunID, Policy: c.Env.Gov.Policy().Digest,
		Approvals: approvals, Verified: r.Verified, RepoID: c.Repo.Repo.ID})
}

// RecordCommit is the write path's Committed hook: every path commit
// changed, with the sha256 of its blob before and after, goes into r.Tree
// (what commit_verify compares with the commit's tree), and the paths
// into r.Changes (a commit writes no file contents). A tree that cannot be
// read is left out: commit_verify then reports the receipt's tree as not
// matching, and the commit stands.
func RecordCommit(ctx context.Context, c *op.Call, r *op.Receipt, commit string) {
	tree, err := TreeChanges(ctx, c.Env.Git, c.Root.Path(), commit)
	if err != nil {
		return
	}
	r.Tree = append(r.Tree, tree...)
	for _, ch := range tree {
		r.Changes = append(r.Changes, patch.Change{Path: ch.Path, Op: ch.Op})
	}
}
