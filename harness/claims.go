package harness

import (
	"context"

	"github.com/harnessd/harnessd/harness/ops/run"
	"github.com/harnessd/harnessd/internal/verify"
)

// The types of claims and verification (FlowDeck L5) under the names of
// the embedding API.
type (
	RunClaimArgs         = run.ClaimArgs
	RunClaimResult       = run.ClaimResult
	RunVerifyArgs        = run.VerifyArgs
	RunVerifyResult      = run.VerifyResult
	Evidence             = verify.Evidence
	Claim                = verify.Claim
	EvidenceResult       = verify.EvidenceResult
	VerificationBlocker  = verify.Blocker
	VerificationStamp    = verify.Stamp
	VerificationRevision = verify.RepoRevision
)

// The evidence kinds and claim statuses.
const (
	EvidenceCheck   = verify.KindCheck
	EvidenceReceipt = verify.KindReceipt
	EvidenceFile    = verify.KindFile
	ClaimClaimed    = verify.StatusClaimed
	ClaimVerified   = verify.StatusVerified
)

// RunClaim records a claim about a stage of a run, with its evidence; it
// stays claimed until RunVerify finds every piece of its evidence verified.
func (h *Harness) RunClaim(ctx context.Context, a RunClaimArgs) (*RunClaimResult, error) {
	return call(ctx, h, h.handles.RunClaim, a)
}

// RunVerify verifies the claims of a stage of a run against the checkout
// now and records the stage as verified or claimed with its blockers.
func (h *Harness) RunVerify(ctx context.Context, a RunVerifyArgs) (*RunVerifyResult, error) {
	return call(ctx, h, h.handles.RunVerify, a)
}
