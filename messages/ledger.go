package messages

import (
	"encoding/json"
	"time"
)

// LedgerEntry is one request in the idempotency ledger.
type LedgerEntry struct {
	RequestID string          `json:"request_id"`
	Operation string          `json:"operation"`
	InputHash string          `json:"input_hash"`
	State     string          `json:"state"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     json.RawMessage `json:"error,omitempty"`
	Paths     []string        `json:"paths,omitempty"`
	Created   time.Time       `json:"created"`
	Updated   time.Time       `json:"updated"`
}

// LedgerBegin starts a request: create-if-absent. The reply says whether to
// proceed, or carries the stored result to replay.
type LedgerBegin struct {
	RequestID string
	Operation string
	InputHash string
	Paths     []string
}

// LedgerBegun answers LedgerBegin. Replay is true when the request already
// succeeded: Entry.Result is the stored result and nothing must run again.
// Conflicts, in-progress and unknown outcomes come back as Failed.
type LedgerBegun struct {
	Entry  LedgerEntry
	Replay bool
}

// LedgerComplete records success (compare-and-set from executing).
// Deferred decides the completion without writing it: the answer's Record
// is the entry to write, which the caller has written in its own synced
// transaction (a mutation's, with its audit entry).
type LedgerComplete struct {
	RequestID string
	Result    json.RawMessage
	Deferred  bool
}

// LedgerFail records failure with its coded error; the request may be
// retried.
type LedgerFail struct {
	RequestID string
	Code      string
	Message   string
}

// LedgerDone answers LedgerComplete and LedgerFail; Record is set for a
// Deferred completion.
type LedgerDone struct {
	Entry  LedgerEntry
	Record StoreRecord
}

// LedgerGet asks for one entry.
type LedgerGet struct{ RequestID string }

// LedgerGot answers LedgerGet.
type LedgerGot struct {
	Entry LedgerEntry
	Found bool
}

// LedgerPrune removes entries older than the retention at Now.
type LedgerPrune struct{ Now time.Time }

// LedgerPruned answers LedgerPrune.
type LedgerPruned struct{ Removed int }

// LedgerAbandon closes an executing entry as never begun: its request gave
// up before it wrote anything (harnessd began shutting down while it waited
// for its lease). The entry is deleted (compare-and-delete on InputHash), so
// the same request runs normally later, neither REQUEST_OUTCOME_UNKNOWN nor
// a stored failure. Answered with LedgerDone (the entry as it was).
type LedgerAbandon struct {
	RequestID string
	InputHash string
}
