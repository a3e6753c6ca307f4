package govern

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/jsonx"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// ApprovalTTL is how long an approval request stays decidable and an
// approval usable.
const ApprovalTTL = time.Hour

// Approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalUsed     = "used"
	ApprovalExpired  = "expired"
)

// Approval is a request for a person to allow one exact operation. It is
// single-use and bound to the input hash of the operation's arguments.
type Approval struct {
	ID        string `json:"approval_id"`
	Operation string `json:"operation"`
	RepoID    string `json:"repo_id,omitempty"`
	InputHash string `json:"input_hash"`
	Summary   string `json:"summary"` // redacted: argv or paths
	// Detail is the operation's arguments as JSON (redacted, capped at
	// 16 KiB): what a person approves, e.g. a patch's old and new text.
	Detail     string    `json:"detail,omitempty"`
	Risk       int       `json:"risk"`
	Reason     string    `json:"reason"`
	RuleID     string    `json:"rule_id,omitempty"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	DecidedBy  string    `json:"decided_by,omitempty"`
	DecidedAt  time.Time `json:"decided_at,omitzero"`
	DenyReason string    `json:"deny_reason,omitempty"`
	UsedAt     time.Time `json:"used_at,omitzero"`
	// RunID, Session and Client say which run asked.
	RunID   string `json:"run_id,omitempty"`
	Session string `json:"session,omitempty"`
	Client  string `json:"client,omitempty"`
}

func approvalKey(id string) []byte { return []byte(persistence.PrefixApproval + id) }

func newApprovalID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "apr_" + hex.EncodeToString(b)
}

// effectiveStatus reports expiry without a write.
func (a Approval) effectiveStatus(now time.Time) string {
	if (a.Status == ApprovalPending || a.Status == ApprovalApproved) && !now.Before(a.ExpiresAt) {
		return ApprovalExpired
	}
	return a.Status
}

// maxApprovalDetail caps Approval.Detail.
const maxApprovalDetail = 16 << 10

// MaxPendingApprovals is how many approval requests of one scope may wait
// for a person at once (see approvalScope): past it the gate files no
// more and answers BUDGET_EXCEEDED (resource pending_approvals) until a
// person decides one or it expires. A person reads every request; an
// agent that files hundreds buries the one that matters.
const MaxPendingApprovals = 20

// approvalScope is whose pending approval requests count together: the
// MCP session of the caller, else (a caller of the JSON API or the
// library, which names no session) the repository, "" for operations
// without one. A run is no scope of its own: an agent starts runs at will.
func approvalScope(c messages.Caller, repoID string) (name string, in func(Approval) bool) {
	if c.Session != "" {
		return "session", func(a Approval) bool { return a.Session == c.Session }
	}
	return "repository", func(a Approval) bool { return a.Session == "" && a.RepoID == repoID }
}

// requestApproval persists an approval request for an ask decision, or
// returns the one already pending (or approved and not yet used) for
// exactly this operation and input: an agent that retries the same call
// before a person answered does not file another request. filed reports
// whether this call filed it (the gate audits the ask once, when filed).
func (g *Governor) requestApproval(in Input, d mediate.Decision, hash string) (a Approval, filed bool, err error) {
	g.filing.Lock()
	defer g.filing.Unlock()
	now := g.now().UTC()
	repoID := ""
	if in.Repo != nil {
		repoID = in.Repo.ID
	}
	scope, inScope := approvalScope(in.Caller, repoID)
	a, ok, pending, err := g.openApproval(in.Tool, repoID, hash, now, inScope)
	if err != nil || ok {
		return a, false, err
	}
	if pending >= MaxPendingApprovals {
		return Approval{}, false, g.approvalLimit(in, repoID, scope, pending)
	}
	summary := in.Tool
	if len(in.Argv) > 0 {
		summary += " " + strings.Join(in.Argv, " ")
	}
	if len(in.Paths) > 0 {
		summary += " paths: " + strings.Join(in.Paths, ", ")
	}
	if len(summary) > 500 {
		summary = summary[:500] + "…"
	}
	summary, _ = g.redactor.String(summary)
	detail := ""
	if in.Args != nil {
		if b, err := jsonx.MarshalIndent(in.Args); err == nil {
			detail, _ = g.redactor.String(string(b))
			if len(detail) > maxApprovalDetail {
				detail = strings.ToValidUTF8(detail[:maxApprovalDetail], "") + "\n…"
			}
		}
	}
	a = Approval{ID: newApprovalID(), Operation: in.Tool, InputHash: hash, Summary: summary, Detail: detail, Risk: d.Risk, Reason: d.Reason,
		RuleID: d.RuleID, Status: ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(ApprovalTTL),
		RunID: in.Caller.RunID, Session: in.Caller.Session, Client: ClientString(in.Caller.Client)}
	if in.Repo != nil {
		a.RepoID = in.Repo.ID
	}
	if err := g.store.PutSync(approvalKey(a.ID), a); err != nil {
		return Approval{}, false, errs.Wrap(errs.Internal, err, "persist approval request: %v", err)
	}
	return a, true, nil
}

// approvalLimit audits and answers an ask past MaxPendingApprovals.
func (g *Governor) approvalLimit(in Input, repoID, scope string, pending int) error {
	reason := fmt.Sprintf("%d approval requests of this %s are waiting for a person, the most that may wait at once (%d)", pending, scope, MaxPendingApprovals)
	e := audit.Entry{Kind: audit.KindRejection, Operation: in.Tool, RepoID: repoID, Outcome: string(mediate.Block), Code: string(errs.BudgetExceeded),
		Reason: reason, Paths: in.Paths, Details: map[string]string{"resource": "pending_approvals", "scope": scope}}
	Identify(&e, in.Caller)
	g.AuditAppend(e)
	return errs.New(errs.BudgetExceeded, "%s: no new one is filed until a person decides them (harness approvals, then harness approve ID or harness deny ID --reason R; or the console) "+
		"or they expire, %s after they were asked; wait for that instead of asking again", reason, ApprovalTTL).
		With("resource", "pending_approvals").With("scope", scope).With("limit", MaxPendingApprovals).With("used", pending)
}

// openApproval finds a pending or approved (unused, unexpired) approval
// of op on repoID for the input hash, and counts the pending requests
// inScope.
func (g *Governor) openApproval(op, repoID, hash string, now time.Time, inScope func(Approval) bool) (Approval, bool, int, error) {
	var found Approval
	ok := false
	pending := 0
	err := g.store.Scan([]byte(persistence.PrefixApproval), func(_ []byte, decode func(any) error) error {
		var a Approval
		if err := decode(&a); err != nil {
			return err
		}
		st := a.effectiveStatus(now)
		if st == ApprovalPending && inScope(a) {
			pending++
		}
		if (st == ApprovalPending || st == ApprovalApproved) && a.Operation == op && a.RepoID == repoID && a.InputHash == hash &&
			(!ok || a.CreatedAt.After(found.CreatedAt)) {
			found, ok = a, true
		}
		return nil
	})
	if err != nil {
		return Approval{}, false, 0, errs.Wrap(errs.Internal, err, "read approvals: %v", err)
	}
	return found, ok, pending, nil
}

// Approval returns the approval id with its status as of now.
func (g *Governor) Approval(id string) (*Approval, error) {
	var a Approval
	if err := g.store.Get(approvalKey(id), &a); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, errs.New(errs.NotFound, "unknown approval_id %q (list them with `harness approvals`)", id)
		}
		return nil, errs.Wrap(errs.Internal, err, "read approval: %v", err)
	}
	a.Status = a.effectiveStatus(g.now())
	return &a, nil
}

// checkApproval tells whether approval id allows exactly this input,
// without using it up.
func (g *Governor) checkApproval(id, op, hash string) error {
	var a Approval
	if err := g.store.Get(approvalKey(id), &a); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			return errs.New(errs.InvalidArgument, "unknown approval_id %q", id)
		}
		return errs.Wrap(errs.Internal, err, "read approval: %v", err)
	}
	return approvalUsable(a, op, hash, g.now())
}

func approvalUsable(a Approval, op, hash string, now time.Time) error {
	switch a.effectiveStatus(now) {
	case ApprovalApproved:
	case ApprovalPending:
		return errs.New(errs.ApprovalRequired, "approval %s is still pending: a person must approve it (harness approve %s)", a.ID, a.ID).With("approval_id", a.ID)
	case ApprovalDenied:
		return errs.New(errs.PolicyDenied, "approval %s was denied: %s", a.ID, a.DenyReason).With("approval_id", a.ID)
	case ApprovalUsed:
		return errs.New(errs.ApprovalRequired, "approval %s was already used; approvals are single-use", a.ID).With("approval_id", a.ID)
	case ApprovalExpired:
		return errs.New(errs.ApprovalRequired, "approval %s expired at %s", a.ID, a.ExpiresAt.Format(time.RFC3339)).With("approval_id", a.ID)
	}
	if a.Operation != op || a.InputHash != hash {
		return errs.New(errs.ApprovalRequired, "approval %s was granted for different input (%s); it cannot be applied to this one", a.ID, a.Operation).With("approval_id", a.ID)
	}
	return nil
}

// consumeApproval marks an approval used, atomically: of two concurrent
// uses exactly one succeeds.
func (g *Governor) consumeApproval(id, op, hash string) error {
	now := g.now().UTC()
	err := g.store.Update(true, func(tx *persistence.Txn) error {
		var a Approval
		if err := tx.Get(approvalKey(id), &a); err != nil {
			return err
		}
		if err := approvalUsable(a, op, hash, now); err != nil {
			return err
		}
		a.Status, a.UsedAt = ApprovalUsed, now
		return tx.Put(approvalKey(id), a)
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return errs.New(errs.InvalidArgument, "unknown approval_id %q", id)
	}
	return err
}

// ApprovalList is the result of Approvals.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// Approvals lists approval requests, newest first. status "" = pending only;
// "all" = every status.
func (g *Governor) Approvals(status string) (*ApprovalList, error) {
	now := g.now()
	out := []Approval{}
	err := g.store.Scan([]byte(persistence.PrefixApproval), func(_ []byte, decode func(any) error) error {
		var a Approval
		if err := decode(&a); err != nil {
			return err
		}
		a.Status = a.effectiveStatus(now)
		if (status == "" && a.Status == ApprovalPending) || status == "all" || status == a.Status {
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return &ApprovalList{Approvals: out}, nil
}

// DecideApproval approves or denies a pending approval. It is for people
// (CLI, HTTP API), never an MCP tool.
func (g *Governor) DecideApproval(id string, approve bool, by, reason string) (*Approval, error) {
	if by == "" {
		by = "person"
	}
	if !approve && strings.TrimSpace(reason) == "" {
		return nil, errs.New(errs.InvalidArgument, "a denial needs a reason")
	}
	now := g.now().UTC()
	var out Approval
	err := g.store.Update(true, func(tx *persistence.Txn) error {
		var a Approval
		if err := tx.Get(approvalKey(id), &a); err != nil {
			return err
		}
		if st := a.effectiveStatus(now); st != ApprovalPending {
			return errs.New(errs.InvalidArgument, "approval %s is %s, not pending", id, st).With("status", st)
		}
		a.DecidedBy, a.DecidedAt = by, now
		if approve {
			a.Status = ApprovalApproved
		} else {
			a.Status, a.DenyReason = ApprovalDenied, reason
		}
		out = a
		return tx.Put(approvalKey(id), a)
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, errs.New(errs.NotFound, "no approval %q", id)
	}
	if err != nil {
		return nil, err
	}
	kind, outcome := audit.KindApproval, "approved"
	if !approve {
		kind, outcome = audit.KindDenial, "denied"
	}
	g.AuditAppend(audit.Entry{Kind: kind, Operation: out.Operation, RepoID: out.RepoID, Outcome: outcome, Reason: reason,
		RuleID: out.RuleID, Risk: out.Risk, InputHash: out.InputHash, Actor: "person:" + by, Details: map[string]string{"approval_id": id},
		RunID: out.RunID, Session: out.Session, Client: out.Client})
	return &out, nil
}
