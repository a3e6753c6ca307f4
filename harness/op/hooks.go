package op

import (
	"context"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/trailer"
	"github.com/harnessd/harnessd/internal/verify"
)

// Wiring is what the operation packages lend each other through op, set
// once at Open (ops.Wiring): the hooks of the write path and the services
// of run_check and the Durable Path. With it no operation package calls a
// sibling: a write calls its Call, a run's verification its Checker, an
// unfocused check the Durable Path.
type Wiring struct {
	Hooks WriteHooks
	// Checks is run_check's side of a run's verification (ops/check).
	Checks Checker
	// Jobs is the Durable Path for an unfocused check, and the sandbox's
	// diagnosis of a failed confined process (ops/job).
	Jobs Durable
}

// Check reports the first part of w that is missing (INTERNAL): Open
// refuses to start with an incomplete wiring rather than fail a call.
func (w Wiring) Check() error {
	h := w.Hooks
	for _, p := range []struct {
		name string
		set  bool
	}{
		{"Hooks.Verify", h.Verify != nil}, {"Hooks.Keep", h.Keep != nil}, {"Hooks.Trailers", h.Trailers != nil},
		{"Hooks.Committed", h.Committed != nil}, {"Checks", w.Checks != nil}, {"Jobs", w.Jobs != nil},
	} {
		if !p.set {
			return errs.New(errs.Internal, "op: the wiring has no %s: build it with ops.Wiring", p.name).With("missing", p.name)
		}
	}
	return nil
}

// WriteHooks are the parts other concerns take in every write, registered
// once at Open. The write path runs them in this order (Write, step 3):
//
//  1. Verify, under the lease, before the write changes anything: the
//     verification gate. It re-verifies the stages the gate's decision
//     requires of the call (require_verified: the operation's own and the
//     matching policy rules) and returns their stamps for the receipt; an
//     error refuses the write with nothing written (VERIFICATION_REQUIRED
//     with the blockers). Registered by ops/run.
//  2. Keep, as the write changes files, for each one before it changes:
//     the pre-image capture, which names the file's state before in the
//     receipt (and stores its bytes for revert: a small one's file
//     without an fsync, its bytes in the write's synced commit, see
//     preimages.go). Registered by ops/undo; the write hands
//     Call.KeepPreImages to patch.Options.PreImage.
//  3. Trailers, as a commit's message is written: the provenance trailers
//     (Harnessd-Receipt, -Run, -Policy, -Approvals, -Verified, -Repo)
//     that commit_verify checks. Registered by ops/provenance; the write
//     asks Call.Trailers.
//  4. Committed, after a commit: what it changed (every path with its
//     blob digests before and after), recorded in the receipt for
//     commit_verify. Registered by ops/provenance; the write calls
//     Call.Committed. Best effort, as it runs after the commit exists.
//
// Then Write's own steps follow: ledger completion, audit, the receipt and
// the run's span.
type WriteHooks struct {
	Verify    func(ctx context.Context, c *Call) ([]verify.Stamp, error)
	Keep      func(c *Call, r *Receipt) func(patch.PreImage) error
	Trailers  func(c *Call, r *Receipt, approvals []string) []trailer.Trailer
	Committed func(ctx context.Context, c *Call, r *Receipt, commit string)
}

// Apply runs t's write under the lease l, recording into r, behind the
// hooks that come before it: the verification gate (WriteHooks.Verify),
// then t.Run. It is step 3 of Write, and what a composite operation (a
// batch) runs for each of its write steps, with the step's own call and
// the composite's lease and receipt.
func (c *Call) Apply(ctx context.Context, t Txn, l runtime.Lease, r *Receipt) error {
	if err := c.verify(ctx, r); err != nil {
		return err
	}
	return t.Run(ctx, l, r)
}

// verify runs the verification gate: the stamps of the stages the call's
// decision requires go into r. Without a registered gate a write that
// requires a verified stage is refused, never let through.
func (c *Call) verify(ctx context.Context, r *Receipt) error {
	if len(c.gated.Decision.RequireVerified) == 0 {
		return nil
	}
	h := c.Env.Hooks.Verify
	if h == nil {
		return missingHook("Verify")
	}
	stamps, err := h(ctx, c)
	if err != nil {
		return err
	}
	r.Verified = append(r.Verified, stamps...)
	return nil
}

// KeepPreImages returns the patch.Options.PreImage of a write recording
// into r: the pre-image hook (WriteHooks.Keep). Without one every file
// the write would change refuses it (INTERNAL): a write is never left
// without what its revert needs.
func (c *Call) KeepPreImages(r *Receipt) func(patch.PreImage) error {
	if h := c.Env.Hooks.Keep; h != nil {
		return h(c, r)
	}
	return func(patch.PreImage) error { return missingHook("Keep") }
}

// Trailers returns the provenance trailers of a commit the call writes
// (WriteHooks.Trailers) from what r knows so far: its receipt id and its
// verified stages. approvals are the approvals the call carries.
func (c *Call) Trailers(r *Receipt, approvals []string) ([]trailer.Trailer, error) {
	h := c.Env.Hooks.Trailers
	if h == nil {
		return nil, missingHook("Trailers")
	}
	return h(c, r, approvals), nil
}

// Committed records in r what the commit the call just made changed
// (WriteHooks.Committed); nothing without the hook.
func (c *Call) Committed(ctx context.Context, r *Receipt, commit string) {
	if h := c.Env.Hooks.Committed; h != nil {
		h(ctx, c, r, commit)
	}
}

// missingHook is the refusal of a write whose hook was never registered:
// a harness assembled without ops.Wiring.
func missingHook(name string) error {
	return errs.New(errs.Internal, "the write hook %s is not registered: build the operations' environment with ops.Wiring (harness.Open does)", name).
		With("hook", name)
}
