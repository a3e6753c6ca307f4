package harness

import (
	"context"
	"time"

	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/messages"
)

// The governance types of the embedding API.
type (
	Approval     = govern.Approval
	ApprovalList = govern.ApprovalList
	PolicyInfo   = govern.PolicyInfo
)

// ApprovalTTL is how long an approval request stays decidable and an
// approval usable.
const ApprovalTTL = govern.ApprovalTTL

// Approval statuses.
const (
	ApprovalPending  = govern.ApprovalPending
	ApprovalApproved = govern.ApprovalApproved
	ApprovalDenied   = govern.ApprovalDenied
	ApprovalUsed     = govern.ApprovalUsed
	ApprovalExpired  = govern.ApprovalExpired
)

// Policy reports the loaded policy.
func (h *Harness) Policy() PolicyInfo { return h.gov.Policy() }

// PolicyRule is one rule of the policy file, with its examples.
type PolicyRule = policy.Rule

// PolicyRules returns the rules of the policy in force, in file order,
// each with its examples (a copy).
func (h *Harness) PolicyRules() []PolicyRule { return h.gov.LoadedPolicy().Rules() }

// ReloadPolicy loads the policy file again. On error the previous policy
// stays in force and the error names the bad rule or example. People
// reload (SIGHUP, `harness policy reload`); no agent-facing tool can.
func (h *Harness) ReloadPolicy(ctx context.Context) (PolicyInfo, error) {
	leave, err := h.enter()
	if err != nil {
		return PolicyInfo{}, err
	}
	defer leave()
	info, err := h.gov.ReloadPolicy()
	if err == nil {
		h.checkGrants(ctx) // the policy's roots may have changed
	}
	return info, err
}

// Approvals lists approval requests, newest first. status "" = pending
// only; "all" = every status.
func (h *Harness) Approvals(ctx context.Context, status string) (*ApprovalList, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	return h.gov.Approvals(status)
}

// Approval returns one approval request by id (NOT_FOUND if unknown),
// with its status as of now.
func (h *Harness) Approval(ctx context.Context, id string) (*Approval, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	return h.gov.Approval(id)
}

// DecideApproval approves or denies a pending approval. It is for people
// (CLI, HTTP API, the web console, or an MCP client's person through
// elicitation), never an MCP tool.
func (h *Harness) DecideApproval(ctx context.Context, id string, approve bool, by, reason string) (*Approval, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	return h.gov.DecideApproval(id, approve, by, reason)
}

// AuditArgs filter the audit log.
type AuditArgs struct {
	Kind      string    `json:"kind,omitempty"`
	RepoID    string    `json:"repo_id,omitempty"`
	Operation string    `json:"operation,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
	RunID     string    `json:"run_id,omitempty"`
	Since     time.Time `json:"since,omitempty"`
	Limit     int       `json:"limit,omitempty"`
	AfterSeq  uint64    `json:"after_seq,omitempty"`
}

// AuditResult is a page of the audit log.
type AuditResult struct {
	Entries []messages.AuditEntry `json:"entries"`
	More    bool                  `json:"more"`
}

// Audit lists audit entries, oldest first.
func (h *Harness) Audit(ctx context.Context, a AuditArgs) (*AuditResult, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	r, err := h.gov.Audit(ctx, messages.AuditQuery{
		Kind: messages.AuditKind(a.Kind), RepoID: a.RepoID, Operation: a.Operation, RequestID: a.RequestID, RunID: a.RunID,
		Since: a.Since, Limit: a.Limit, AfterSeq: a.AfterSeq,
	})
	if err != nil {
		return nil, err
	}
	if r.Entries == nil {
		r.Entries = []messages.AuditEntry{}
	}
	return &AuditResult{Entries: r.Entries, More: r.More}, nil
}

// AuditVerifyResult reports a verification of the audit chain.
type AuditVerifyResult struct {
	OK           bool   `json:"ok"`
	Checked      int    `json:"checked"`
	BrokenSeq    uint64 `json:"broken_seq,omitempty"`
	BrokenReason string `json:"broken_reason,omitempty"`
	// Unkeyed counts the entries checked by their plain hash (written
	// before the chain was keyed); KeyID is the current audit key's id.
	Unkeyed int    `json:"unkeyed,omitempty"`
	KeyID   string `json:"key_id,omitempty"`
	// Anchored is true when an anchor was given and the chain holds it.
	Anchored bool `json:"anchored,omitempty"`
}

// AuditVerify checks the whole hash chain and names the first broken entry.
// Entries sealed with a key are checked by their HMAC (see
// AuditVerifyAnchored, harness/audit.go, internal/audit/keyfile.go).
func (h *Harness) AuditVerify(ctx context.Context) (*AuditVerifyResult, error) {
	return h.AuditVerifyAnchored(ctx, nil)
}
