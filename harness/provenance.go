package harness

import (
	"context"

	"github.com/harnessd/harnessd/harness/ops/provenance"
	"github.com/harnessd/harnessd/internal/trailer"
)

// Commit provenance: the trailers git_commit writes and commit_verify
// checks (docs/provenance.md).
type (
	CommitVerifyArgs   = provenance.VerifyArgs
	CommitVerifyResult = provenance.VerifyResult
	CommitCheck        = provenance.Check
	Trailer            = trailer.Trailer
)

// CommitVerify checks a commit's Harnessd- trailers against harnessd's
// records (receipt, audit log, runs, approvals, policy).
func (h *Harness) CommitVerify(ctx context.Context, args CommitVerifyArgs) (*CommitVerifyResult, error) {
	return call(ctx, h, h.handles.CommitVerify, args)
}
