package govern

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
)

// Input describes one operation for the gate.
type Input struct {
	Tool string
	// Kind is the operation's route class, from its descriptor
	// (harness/op.Spec.Route; the pipeline fills it in): the router
	// decides by it when Route is nil.
	Kind route.Kind
	// HashIgnore are the operation's own argument fields the hash of Args
	// leaves out, beside the common ones (its descriptor's
	// op.Spec.HashIgnore; the pipeline fills it in).
	HashIgnore []string
	Repo       *messages.Repository // nil for operations without a repository
	Root       *pathsafe.Root       // for scope checks of Paths; nil = lexical checks only
	Argv       []string
	Paths      []string // rel paths the operation touches
	TimeoutMs  int
	Writes     bool
	Args       any    // the operation's arguments: hashed for approvals and loop detection
	ApprovalID string // an approval the caller holds for exactly this input
	// TreeRevision identifies the work tree's state for loop detection
	// ("" = not computed: loop detection skipped).
	TreeRevision string
	// Route is the routing decision when the operation routed itself (a
	// batch routes its steps as one); nil = route.Decide on the fields above.
	Route *route.Decision
	// Steps are the steps of a composite operation (batch, read_lanes):
	// each is decided too, after the operation itself.
	Steps []Input
	// Confined says the Durable Path confines commands (the sandbox's job
	// profile): routing accepts shell scripts there.
	Confined bool
	// Network says the operation asks for network access: a policy rule
	// must allow it or a person approve it.
	Network bool
	// RunsDurable says the operation runs its durable path itself when the
	// route requires one (run_check runs unfocused checks as durable jobs):
	// the route does not escalate it; Run reads the route from the call.
	RunsDurable bool
	// Caller is who asked: the run, the MCP session and the client. Audit
	// entries and approval requests carry it, and loop detection counts
	// repetitions per caller (LoopScope: its run, else its session).
	Caller messages.Caller
	// RequireVerified are stages of the caller's run the operation asks to
	// have verified (git_commit's require_verified). The decision lists
	// them with the matching require_verified policy rules
	// (mediate.Decision.RequireVerified); the write enforces them.
	RequireVerified []string
	// Grant, when set, says the operation grants agents a root outside the
	// allowed areas (the text says which): only a person's approval lets
	// it run (mediate.Input.Grant).
	Grant string
}

// Identify fills in e's run, session and client from c.
func Identify(e *audit.Entry, c messages.Caller) {
	e.RunID, e.Session, e.Client = c.RunID, c.Session, ClientString(c.Client)
}

// ClientString names a client as "name version".
func ClientString(c messages.Client) string {
	if c.Version == "" {
		return c.Name
	}
	return c.Name + " " + c.Version
}

// Result is what the gate decided.
type Result struct {
	Decision  mediate.Decision
	InputHash string
	// Steps holds the outcome of each of Input.Steps, in order: the gate
	// never fails the operation for a step, the operation decides (a
	// batch refuses to run when any step is refused, proposals mark the
	// refused one invalid).
	Steps []StepResult
}

// StepResult is the gate's answer for one step.
type StepResult struct {
	Result
	Err error
}

// Gate runs the action mediator for one operation (and each of its steps):
// scope and secret checks, the route, policy rules, loop detection and
// approvals, composed into one decision (mediate.Decide). It returns the
// decision's coded error unless the operation is allowed. It fails closed.
//
// Blocks, asks and escalations are audited; an ask persists an approval
// request and answers APPROVAL_REQUIRED with its approval_id; a used
// approval is consumed (single use) and audited.
func (g *Governor) Gate(ctx context.Context, in Input) (Result, error) {
	res, err := g.gateOne(ctx, in)
	if err != nil {
		return res, err
	}
	for _, s := range in.Steps {
		sr, serr := g.gateOne(ctx, s)
		res.Steps = append(res.Steps, StepResult{Result: sr, Err: serr})
	}
	return res, nil
}

func (g *Governor) gateOne(ctx context.Context, in Input) (Result, error) {
	mi := mediate.Input{Tool: in.Tool, Kind: in.Kind, Argv: in.Argv, Paths: in.Paths, TimeoutMs: in.TimeoutMs, Writes: in.Writes,
		Route: in.Route, Policy: g.currentPolicy(), Deny: g.deny, Confined: in.Confined, Network: in.Network, RunsDurable: in.RunsDurable,
		RequireVerified: in.RequireVerified, Grant: in.Grant}
	if in.Root != nil {
		mi.Deny = in.Root.Deny() // the root's own list: its absolute path, its exceptions
		// Lexical scope here; the executor resolves symlinks itself
		// (readfile.Read, patch.Apply, ...) with the same error codes, so
		// the file system is walked once per path, not twice.
		root := in.Root.Path()
		mi.ScopeCheck = func(p string) error { return lexicalScope(root, p) }
	}
	repoID := ""
	if in.Repo != nil {
		repoID = in.Repo.ID
	}
	scope := LoopScope(in.Caller)
	mi.History = g.History(in.Caller, in.Tool, in.Argv, in.Paths)
	var res Result
	hash := func() (string, error) {
		if res.InputHash == "" {
			hv, err := ledger.InputHashIgnoring(in.Tool, in.Args, in.HashIgnore)
			if err != nil {
				return "", errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
			}
			res.InputHash = hv
		}
		return res.InputHash, nil
	}
	// Every call is noted for loop detection (another call ends the
	// caller's streaks); one whose tree is known is checked first.
	if in.TreeRevision != "" {
		hv, err := hash()
		if err != nil {
			return res, err
		}
		v := g.loopCall(scope, in.Tool, hv, in.TreeRevision)
		mi.Loop = &v
	} else {
		g.loopCall(scope, in.Tool, "", "")
	}
	if in.ApprovalID != "" {
		hv, err := hash()
		if err != nil {
			return res, err
		}
		if err := g.checkApproval(in.ApprovalID, in.Tool, hv); err != nil {
			return res, err
		}
		mi.ApprovalOK = true
	}
	d := mediate.Decide(mi)
	res.Decision = d
	if g.cfg.Observe != nil {
		g.cfg.Observe(Decision{Tool: in.Tool, Outcome: string(d.Outcome), Code: string(d.Code), RuleID: d.RuleID, Risk: d.Risk})
	}
	entry := audit.Entry{Operation: in.Tool, RepoID: repoID, Outcome: string(d.Outcome), Code: string(d.Code), Reason: d.Reason,
		RuleID: d.RuleID, Risk: d.Risk, Paths: in.Paths, InputHash: res.InputHash}
	Identify(&entry, in.Caller)
	switch d.Outcome {
	case mediate.Allow:
		if mi.ApprovalOK {
			if err := g.consumeApproval(in.ApprovalID, in.Tool, res.InputHash); err != nil {
				return res, err
			}
			entry.Kind, entry.Outcome = audit.KindApproval, "used"
			entry.Details = map[string]string{"approval_id": in.ApprovalID}
			g.AuditAppend(entry)
		}
		return res, nil
	case mediate.Ask:
		hv, err := hash()
		if err != nil {
			return res, err
		}
		entry.InputHash = hv
		a, filed, err := g.requestApproval(in, d, hv)
		if err != nil {
			return res, err
		}
		if a.Status == ApprovalApproved {
			return res, errs.New(errs.ApprovalRequired, "%s; approval %s for exactly this input was granted by %s: retry with approval_id %s", d.Reason, a.ID, a.DecidedBy, a.ID).
				With("approval_id", a.ID).With("approval_status", a.Status).With("risk", d.Risk).With("rule_id", d.RuleID).With("expires_at", a.ExpiresAt)
		}
		if filed {
			// One ask per approval: a call repeated while it waits (an
			// agent's retry, the call an MCP client repeats with the
			// person's answer) finds it pending and audits nothing new.
			entry.Kind = audit.KindAsk
			entry.Details = map[string]string{"approval_id": a.ID}
			g.AuditAppend(entry)
		}
		return res, errs.New(errs.ApprovalRequired, "%s; a person must approve it (harness approve %s), then retry with approval_id", d.Reason, a.ID).
			With("approval_id", a.ID).With("approval_status", a.Status).With("risk", d.Risk).With("rule_id", d.RuleID).With("expires_at", a.ExpiresAt).
			With("summary", a.Summary)
	default:
		entry.Kind = audit.KindRejection
		if mi.Loop != nil && d.RuleID == mediate.RuleLoop {
			entry.Details = map[string]string{"earlier": mi.Loop.Earlier}
		}
		g.AuditAppend(entry)
		if d.Outcome == mediate.Block && d.Code != errs.Internal {
			g.noteRefusal(in)
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

// CheckLoop runs the loop check alone for an operation whose tree revision
// is known only when it runs (a run_command step of a batch, whose gate
// was passed before the steps ahead of it ran). A loop is audited and
// answered LOOP_DETECTED, as from the gate. Like the gate's, the check is
// in the scope of in.Caller (LoopScope).
func (g *Governor) CheckLoop(in Input) error {
	if in.TreeRevision == "" {
		return nil
	}
	hv, err := ledger.InputHashIgnoring(in.Tool, in.Args, in.HashIgnore)
	if err != nil {
		return errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	v := g.loopCheck(LoopScope(in.Caller), in.Tool, hv, in.TreeRevision)
	if !v.Loop {
		return nil
	}
	repoID := ""
	if in.Repo != nil {
		repoID = in.Repo.ID
	}
	reason := "loop detected"
	if v.Reason != "" {
		reason += ": " + v.Reason
	}
	if v.Hint != "" {
		reason += " (" + v.Hint + ")"
	}
	e := audit.Entry{Kind: audit.KindRejection, Operation: in.Tool, RepoID: repoID, Outcome: string(mediate.Block), Code: string(errs.LoopDetected),
		Reason: reason, RuleID: mediate.RuleLoop, InputHash: hv, Details: map[string]string{"earlier": v.Earlier}}
	Identify(&e, in.Caller)
	g.AuditAppend(e)
	g.noteRefusal(in)
	return errs.New(errs.LoopDetected, "%s", reason).With("outcome", string(mediate.Block)).With("rule_id", mediate.RuleLoop).
		With("earlier_receipt", v.Earlier).With("hint", v.Hint)
}

// Refuse audits a refusal decided outside the mediator (an argv naming a
// secret path, a path outside the root) and returns err: every block of
// an operation leaves a trace.
func (g *Governor) Refuse(in Input, err error) error {
	e := errs.From(err)
	repoID := ""
	if in.Repo != nil {
		repoID = in.Repo.ID
	}
	entry := audit.Entry{Kind: audit.KindRejection, Operation: in.Tool, RepoID: repoID, Outcome: string(mediate.Block),
		Code: string(e.Code), Reason: e.Message, RuleID: mediate.RuleScope, Paths: in.Paths}
	Identify(&entry, in.Caller)
	g.AuditAppend(entry)
	if e.Code == errs.SecretPathDenied || e.Code == errs.PathOutsideRoot {
		g.noteRefusal(in)
	}
	return err
}
