package harness

import (
	"context"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/mediate"
	"github.com/harnessd/harnessd/harness/pathsafe"
)

// gateInput describes one operation for the action mediator.
type gateInput struct {
	Tool       string
	Repo       *actors.RepoEntry // nil for operations without a repository
	Root       *pathsafe.Root    // for scope checks of Paths; nil = lexical checks only
	Argv       []string
	Paths      []string // rel paths the operation touches
	TimeoutMs  int
	Writes     bool
	Args       any    // the operation's arguments: hashed for approvals and loop detection
	ApprovalID string // an approval the caller holds for exactly this input
	// TreeRevision identifies the work tree's state for loop detection
	// ("" = not computed: loop detection skipped).
	TreeRevision string
}

// gateResult is what passed the gate.
type gateResult struct {
	Decision  mediate.Decision
	InputHash string
}

// gate runs the action mediator for one operation: route, scope and secret
// checks, policy, loop detection and approvals, composed into one decision.
// It returns an error (the decision's code) unless the operation is allowed.
// Every operation crosses it before it executes.
func (h *Harness) gate(ctx context.Context, in gateInput) (gateResult, error) {
	in2 := mediate.Input{Tool: in.Tool, Argv: in.Argv, Paths: in.Paths, TimeoutMs: in.TimeoutMs, Writes: in.Writes, Deny: h.fast.deny}
	if in.Root != nil {
		root := in.Root
		in2.ScopeCheck = func(p string) error { _, _, err := root.Resolve(p); return err }
	}
	d := mediate.Decide(in2)
	return gateResult{Decision: d}, d.Err()
}
