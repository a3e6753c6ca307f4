package harness

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/pathsafe"
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

// gate runs the action mediator for one operation: scope and secret
// checks, the route, policy rules, loop detection and approvals, composed
// into one decision (mediate.Decide). It returns the decision's coded error
// unless the operation is allowed. Every operation crosses it before it
// executes; it fails closed.
//
// Blocks, asks and escalations are audited; an ask persists an approval
// request and answers APPROVAL_REQUIRED with its approval_id.
func (h *Harness) gate(ctx context.Context, in gateInput) (gateResult, error) {
	mi := mediate.Input{Tool: in.Tool, Argv: in.Argv, Paths: in.Paths, TimeoutMs: in.TimeoutMs, Writes: in.Writes,
		Policy: h.currentPolicy(), Deny: h.fast.deny}
	if in.Root != nil {
		// Lexical scope here; the executor resolves symlinks itself
		// (readfile.Read, patch.Apply, ...) with the same error codes, so
		// the file system is walked once per path, not twice.
		root := in.Root.Path()
		mi.ScopeCheck = func(p string) error { return lexicalScope(root, p) }
	}
	repoID := ""
	if in.Repo != nil {
		repoID = in.Repo.Repo.ID
		mi.History = h.historyOf(repoID)
	}
	var res gateResult
	hash := func() (string, error) {
		if res.InputHash == "" {
			hv, err := ledger.InputHash(in.Tool, in.Args)
			if err != nil {
				return "", errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
			}
			res.InputHash = hv
		}
		return res.InputHash, nil
	}
	if in.TreeRevision != "" {
		hv, err := hash()
		if err != nil {
			return res, err
		}
		v := h.loopCheck(in.Tool, hv, in.TreeRevision)
		mi.Loop = &v
	}
	if in.ApprovalID != "" {
		hv, err := hash()
		if err != nil {
			return res, err
		}
		if err := h.checkApproval(in.ApprovalID, in.Tool, hv); err != nil {
			return res, err
		}
		mi.ApprovalOK = true
	}
	d := mediate.Decide(mi)
	res.Decision = d
	entry := audit.Entry{Operation: in.Tool, RepoID: repoID, Outcome: string(d.Outcome), Code: string(d.Code), Reason: d.Reason,
		RuleID: d.RuleID, Risk: d.Risk, Paths: in.Paths, InputHash: res.InputHash}
	switch d.Outcome {
	case mediate.Allow:
		if mi.ApprovalOK {
			if err := h.consumeApproval(in.ApprovalID, in.Tool, res.InputHash); err != nil {
				return res, err
			}
			entry.Kind, entry.Outcome = audit.KindApproval, "used"
			entry.Details = map[string]string{"approval_id": in.ApprovalID}
			h.auditAppend(entry)
		}
		return res, nil
	case mediate.Ask:
		hv, err := hash()
		if err != nil {
			return res, err
		}
		entry.InputHash = hv
		a, err := h.requestApproval(in, d, hv)
		if err != nil {
			return res, err
		}
		entry.Kind = audit.KindAsk
		entry.Details = map[string]string{"approval_id": a.ID}
		h.auditAppend(entry)
		return res, errs.New(errs.ApprovalRequired, "%s; a person must approve it (harness approve %s), then retry with approval_id", d.Reason, a.ID).
			With("approval_id", a.ID).With("risk", d.Risk).With("rule_id", d.RuleID).With("expires_at", a.ExpiresAt)
	default:
		entry.Kind = audit.KindRejection
		if mi.Loop != nil && d.RuleID == mediate.RuleLoop {
			entry.Details = map[string]string{"earlier": mi.Loop.Earlier}
		}
		h.auditAppend(entry)
		if d.Outcome == mediate.Block {
			h.noteHistory(repoID, func(x *mediate.History) { x.RecentRejections++ })
		}
		err := d.Err()
		if d.RuleID == mediate.RuleLoop && mi.Loop != nil {
			err = errs.From(err).With("earlier_receipt", mi.Loop.Earlier).With("hint", mi.Loop.Hint)
		}
		return res, err
	}
}

// lexicalScope refuses a path that is absolute outside root or escapes it
// with "..", without touching the file system.
func lexicalScope(root, p string) error {
	if p == "" {
		return errs.New(errs.InvalidArgument, "empty path")
	}
	c := filepath.Clean(filepath.FromSlash(p))
	if filepath.IsAbs(c) {
		if c != root && !strings.HasPrefix(c, root+string(filepath.Separator)) {
			return errs.New(errs.PathOutsideRoot, "path %q is outside the repository root", p).With("path", p)
		}
		return nil
	}
	if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return errs.New(errs.PathOutsideRoot, "path %q escapes the repository root", p).With("path", p)
	}
	return nil
}
