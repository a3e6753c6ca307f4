package messages

import "time"

// AuditKind names what an audit entry records. The known kinds and their
// meaning are the Kind* constants of harness/audit.
type AuditKind string

// AuditEntry is one record of the hash-chained audit log. harness/audit
// defines Entry as a type with this exact layout (convert with
// audit.Entry(m) and messages.AuditEntry(e)) and owns its hashing rules.
//
// The JSON form is the stored and hashed form: every field added later must
// be omitempty, so entries written before it keep their hash.
type AuditEntry struct {
	// Seq is the entry's position in the log, 1 for the first. Set by the
	// audit actor; ignored on append.
	Seq uint64 `json:"seq"`
	// Time is when the audited event happened (UTC). Zero on append means
	// "when the audit actor received it".
	Time time.Time `json:"time"`
	// Kind is what the entry records: mutation, rejection, ask, ...
	Kind AuditKind `json:"kind"`
	// Operation is the harnessd operation involved (apply_patch, job_start, ...).
	Operation string `json:"operation,omitempty"`
	// RepoID is the repository involved, if any.
	RepoID string `json:"repo_id,omitempty"`
	// RequestID is the caller's idempotency key, if any.
	RequestID string `json:"request_id,omitempty"`
	// Actor is who acted: "agent", "cli:<user>", "daemon".
	Actor string `json:"actor,omitempty"`
	// Outcome is the decision or result: allow, block, ask, escalate,
	// succeeded, failed, approved, denied, ...
	Outcome string `json:"outcome,omitempty"`
	// Code is the harnessd error code of a failure or rejection.
	Code string `json:"code,omitempty"`
	// Reason is free text; it is redacted before it is stored.
	Reason string `json:"reason,omitempty"`
	// RuleID is the policy rule that decided, if any.
	RuleID string `json:"rule_id,omitempty"`
	// Risk is the routing risk score, if any.
	Risk int `json:"risk,omitempty"`
	// InputHash identifies the request's input without storing it.
	InputHash string `json:"input_hash,omitempty"`
	// Paths are the repository-relative paths touched or requested.
	Paths []string `json:"paths,omitempty"`
	// FencingToken is the lease fencing token the mutation ran under.
	FencingToken uint64 `json:"fencing_token,omitempty"`
	// PolicyDigest identifies the policy version that decided.
	PolicyDigest string `json:"policy_digest,omitempty"`
	// Details holds further small key/value facts; values are redacted.
	Details map[string]string `json:"details,omitempty"`
	// RunID, Session and Client say who asked: the run, the MCP session
	// and the client's name and version (absent for people and daemons).
	RunID   string `json:"run_id,omitempty"`
	Session string `json:"session,omitempty"`
	Client  string `json:"client,omitempty"`
	// KeyID names the audit key whose HMAC is Hash (the first 8 bytes of
	// the key's sha256, in hex); empty for an unkeyed entry, whose Hash is
	// a plain sha256 (written before keys existed). Set by the audit actor.
	KeyID string `json:"key_id,omitempty"`
	// PrevHash is the Hash of entry Seq-1, or the genesis value for Seq 1.
	// Set by the audit actor.
	PrevHash string `json:"prev_hash"`
	// Hash is "hmac-sha256:<hex>" (keyed) or "sha256:<hex>" (unkeyed)
	// over the entry's canonical form. Set by the audit actor.
	Hash string `json:"hash"`
}

// AuditAppend asks the audit actor to redact, chain and persist Entry.
// Seq, PrevHash and Hash are assigned by the actor. Sent with Send it is
// fire-and-forget; sent as a request it is answered with AuditAppended once
// the entry is durable (or Failed). With are records other owners decided
// (a mutation's ledger completion, its receipt) that the actor writes in
// the same synced transaction as Entry: one group commit for all of them.
type AuditAppend struct {
	Entry AuditEntry
	With  []StoreRecord
}

// StoreRecord is one key and its encoded value (a persistence envelope),
// decided by the actor that owns the key and written by another in its
// transaction.
type StoreRecord struct {
	Key   []byte
	Value []byte
}

// AuditAppended answers a request-style AuditAppend once the entry is synced
// to the store.
type AuditAppended struct {
	Seq  uint64
	Hash string
}

// AuditQuery asks for the persisted entries that match every non-zero
// filter field, in ascending Seq order. Page with AfterSeq set to the last
// Seq of the previous page.
type AuditQuery struct {
	Kind      AuditKind
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
	Since time.Time
	Until time.Time
	// Limit caps the number of entries: 0 means 100, at most 1000.
	Limit int
	// AfterSeq skips entries with Seq <= AfterSeq.
	AfterSeq uint64
}

// AuditEntries answers AuditQuery. More is true when Limit cut the result:
// ask again with AfterSeq = the last entry's Seq.
type AuditEntries struct {
	Entries []AuditEntry
	More    bool
}

// AuditVerify asks the audit actor to flush and check the whole chain.
// A non-zero AnchorSeq also checks that the chain still holds the anchored
// head: entry AnchorSeq with Hash AnchorHash.
type AuditVerify struct {
	AnchorSeq  uint64
	AnchorHash string
	// Incremental checks only the entries appended since the last check
	// that held in this process (its data dir lock keeps other writers
	// out meanwhile); the first check, and one with an anchor, read the
	// whole chain.
	Incremental bool
}

// AuditVerified answers AuditVerify. OK is true when all Checked entries
// chain correctly up to the current head; otherwise BrokenSeq is the first
// broken entry and BrokenReason says why.
type AuditVerified struct {
	Checked      int
	BrokenSeq    uint64
	BrokenReason string
	OK           bool
	// Unkeyed counts the entries checked by their plain hash (written
	// before the chain was keyed).
	Unkeyed int
	// Anchored is true when the anchor given was found in the chain.
	Anchored bool
}

// AuditFlush asks the audit actor to persist every buffered entry now.
type AuditFlush struct{}

// AuditFlushed answers AuditFlush once every entry appended before it is
// durable.
type AuditFlushed struct{}
