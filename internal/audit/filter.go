package audit

import (
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// Query limits.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Filter selects entries: every non-zero field must match. It has exactly
// the layout of messages.AuditQuery (convert with Filter(q)).
type Filter struct {
	Kind      Kind
	RepoID    string
	Operation string
	RequestID string
	// RunID selects the entries of one run.
	RunID string
	// InputHash selects the entries of one input (a used approval's).
	InputHash string
	// PolicyDigest selects the entries recorded under one policy digest
	// (with Kind policy_load: the loads of that policy).
	PolicyDigest string
	// Since (inclusive) and Until (exclusive) bound the entry Time.
	Since, Until time.Time
	// Limit caps a query's result: 0 means DefaultLimit; at most MaxLimit.
	// Match ignores it.
	Limit int
	// AfterSeq keeps only entries with Seq > AfterSeq.
	AfterSeq uint64
}

// FilterOf converts a query message into a Filter.
func FilterOf(q messages.AuditQuery) Filter {
	return Filter{Kind: q.Kind, RepoID: q.RepoID, Operation: q.Operation, RequestID: q.RequestID, RunID: q.RunID,
		InputHash: q.InputHash, PolicyDigest: q.PolicyDigest, Since: q.Since, Until: q.Until, Limit: q.Limit, AfterSeq: q.AfterSeq}
}

// Validate rejects a filter no query can serve: an unknown kind, a negative
// or too large limit, or Until not after Since.
func (f Filter) Validate() error {
	if f.Kind != "" && !KnownKind(f.Kind) {
		return errs.New(errs.InvalidArgument, "audit query: unknown kind %q", clip(string(f.Kind), 64))
	}
	if f.Limit < 0 || f.Limit > MaxLimit {
		return errs.New(errs.InvalidArgument, "audit query: limit %d is outside 0..%d", f.Limit, MaxLimit)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return errs.New(errs.InvalidArgument, "audit query: until %s is not after since %s",
			f.Until.UTC().Format(time.RFC3339Nano), f.Since.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// EffectiveLimit returns Limit, DefaultLimit when it is 0 or negative, and
// at most MaxLimit.
func (f Filter) EffectiveLimit() int {
	switch {
	case f.Limit <= 0:
		return DefaultLimit
	case f.Limit > MaxLimit:
		return MaxLimit
	}
	return f.Limit
}

// Match reports whether e passes every non-zero field of f (Limit aside).
func (f Filter) Match(e Entry) bool {
	switch {
	case e.Seq <= f.AfterSeq:
		return false
	case f.Kind != "" && e.Kind != f.Kind:
		return false
	case f.RepoID != "" && e.RepoID != f.RepoID:
		return false
	case f.Operation != "" && e.Operation != f.Operation:
		return false
	case f.RequestID != "" && e.RequestID != f.RequestID:
		return false
	case f.RunID != "" && e.RunID != f.RunID:
		return false
	case f.InputHash != "" && e.InputHash != f.InputHash:
		return false
	case f.PolicyDigest != "" && e.PolicyDigest != f.PolicyDigest:
		return false
	case !f.Since.IsZero() && e.Time.Before(f.Since):
		return false
	case !f.Until.IsZero() && !e.Time.Before(f.Until):
		return false
	}
	return true
}
