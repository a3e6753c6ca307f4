package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/loop"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/supervisors"
)

// governance holds the mediation state of a Harness: the loaded policy, the
// loop detector and recent history for the risk score.
type governance struct {
	policyPath string

	mu      sync.Mutex // protects policy, loops and history
	policy  *policy.Policy
	loops   *loop.Detector
	history map[string]*mediate.History // repo id -> recent counts
}

func (h *Harness) policyPath() string {
	if h.cfg.PolicyPath != "" {
		return h.cfg.PolicyPath
	}
	if h.cfg.InMemory {
		return ""
	}
	return filepath.Join(h.cfg.DataDir, "policy.yaml")
}

// initGovernance loads the policy (a missing file is the empty policy; a
// bad one stops Open with the error naming the rule).
func (h *Harness) initGovernance() error {
	h.gov = &governance{policyPath: h.policyPath(), loops: loop.New(loop.Config{Threshold: max(h.cfg.LoopThreshold, 0)}), history: map[string]*mediate.History{}}
	p, err := loadPolicy(h.gov.policyPath)
	if err != nil {
		return err
	}
	h.gov.policy = p
	return nil
}

func loadPolicy(path string) (*policy.Policy, error) {
	if path == "" {
		return policy.Default(), nil
	}
	return policy.Load(path)
}

func (h *Harness) currentPolicy() *policy.Policy {
	h.gov.mu.Lock()
	defer h.gov.mu.Unlock()
	return h.gov.policy
}

// PolicyInfo describes the loaded policy.
type PolicyInfo struct {
	Source string `json:"source"`
	Digest string `json:"digest"`
	Rules  int    `json:"rules"`
}

// Policy reports the loaded policy.
func (h *Harness) Policy() PolicyInfo {
	p := h.currentPolicy()
	return PolicyInfo{Source: p.Source(), Digest: p.Digest(), Rules: p.Len()}
}

// ReloadPolicy loads the policy file again. On error the previous policy
// stays in force and the error names the bad rule or example. People
// reload (SIGHUP, `harness policy reload`); no agent-facing tool can.
func (h *Harness) ReloadPolicy(ctx context.Context) (PolicyInfo, error) {
	if err := h.enter(); err != nil {
		return PolicyInfo{}, err
	}
	defer h.leave()
	p, err := loadPolicy(h.gov.policyPath)
	if err != nil {
		h.auditAppend(audit.Entry{Kind: audit.KindPolicyLoad, Outcome: "failed", Reason: errs.From(err).Message, Actor: "person"})
		return PolicyInfo{}, err
	}
	h.gov.mu.Lock()
	h.gov.policy = p
	h.gov.mu.Unlock()
	h.auditAppend(audit.Entry{Kind: audit.KindPolicyLoad, Outcome: "loaded", Reason: fmt.Sprintf("%d rules from %s", p.Len(), p.Source()), Actor: "person"})
	h.lg.Info("policy loaded", zap.String("source", p.Source()), zap.String("digest", p.Digest()), zap.Int("rules", p.Len()))
	return h.Policy(), nil
}

// auditAppend appends an entry to the hash-chained audit log without
// waiting: a failure to audit never turns a success into a failure. The
// loaded policy's digest is recorded in every entry.
func (h *Harness) auditAppend(e audit.Entry) {
	if e.PolicyDigest == "" {
		e.PolicyDigest = h.currentPolicy().Digest()
	}
	if e.Actor == "" {
		e.Actor = "agent"
	}
	h.system.Root.Send(h.child(supervisors.AuditName), messages.AuditAppend{Entry: messages.AuditEntry(e)})
}

// history returns a copy of a repository's recent counts.
func (h *Harness) historyOf(repoID string) mediate.History {
	h.gov.mu.Lock()
	defer h.gov.mu.Unlock()
	if x := h.gov.history[repoID]; x != nil {
		return *x
	}
	return mediate.History{}
}

func (h *Harness) noteHistory(repoID string, f func(*mediate.History)) {
	h.gov.mu.Lock()
	defer h.gov.mu.Unlock()
	x := h.gov.history[repoID]
	if x == nil {
		x = &mediate.History{}
		h.gov.history[repoID] = x
	}
	f(x)
}

func (h *Harness) loopCheck(op, inputHash, tree string) loop.Verdict {
	if h.cfg.LoopThreshold < 0 {
		return loop.Verdict{}
	}
	h.gov.mu.Lock()
	defer h.gov.mu.Unlock()
	return h.gov.loops.Check(op, inputHash, tree, h.cfg.Now())
}

func (h *Harness) loopRecord(o loop.Observation) {
	h.gov.mu.Lock()
	defer h.gov.mu.Unlock()
	o.At = h.cfg.Now()
	h.gov.loops.Record(o)
}

// AuditArgs filter the audit log.
type AuditArgs struct {
	Kind      string    `json:"kind,omitempty"`
	RepoID    string    `json:"repo_id,omitempty"`
	Operation string    `json:"operation,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
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
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	r, err := request[messages.AuditEntries](ctx, h, h.child(supervisors.AuditName), messages.AuditQuery{
		Kind: messages.AuditKind(a.Kind), RepoID: a.RepoID, Operation: a.Operation, RequestID: a.RequestID,
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
}

// AuditVerify checks the whole hash chain and names the first broken entry.
func (h *Harness) AuditVerify(ctx context.Context) (*AuditVerifyResult, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	r, err := request[messages.AuditVerified](ctx, h, h.child(supervisors.AuditName), messages.AuditVerify{})
	if err != nil {
		return nil, err
	}
	return &AuditVerifyResult{OK: r.OK, Checked: r.Checked, BrokenSeq: r.BrokenSeq, BrokenReason: r.BrokenReason}, nil
}

// digestOf returns a short sha256 of s, for audit details.
func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
