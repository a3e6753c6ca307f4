package ledger

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// State is the state of a ledger entry.
type State string

// The entry states.
const (
	StateExecuting State = "executing"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
	// StateUnknown marks an entry that was executing when the daemon
	// stopped: the operation may or may not have taken effect.
	StateUnknown State = "unknown"
)

// Valid reports whether s is one of the four states.
func (s State) Valid() bool {
	switch s {
	case StateExecuting, StateSucceeded, StateFailed, StateUnknown:
		return true
	}
	return false
}

// DefaultRetention is how long finished entries are kept when Expired is
// given a zero retention.
const DefaultRetention = 24 * time.Hour

// MaxRequestIDLen is the longest valid request id, in bytes.
const MaxRequestIDLen = 255

// ErrNotExecuting is the cause of the error Complete and Fail return for an
// entry that is not executing. Match it with errors.Is.
var ErrNotExecuting = errors.New("ledger: entry is not executing")

// Entry is one request in the ledger.
type Entry struct {
	RequestID string          `json:"request_id"`
	Operation string          `json:"operation"`
	InputHash string          `json:"input_hash"`
	State     State           `json:"state"`
	Result    json.RawMessage `json:"result,omitempty"` // stored result on success
	Error     json.RawMessage `json:"error,omitempty"`  // stored error on failure
	Paths     []string        `json:"paths,omitempty"`  // paths the operation may touch (for "what is known" after a crash)
	Created   time.Time       `json:"created"`
	Updated   time.Time       `json:"updated"`
}

// Decision tells the caller of Begin what to do with a request.
type Decision int

// The decisions of Begin. The zero Decision is none of them: Begin returns it
// with an error for invalid input.
const (
	// Proceed: execute the operation (a new request, or a retry of a failed
	// one) after persisting the returned executing entry.
	Proceed Decision = iota + 1
	// Replay: return the stored result without executing again.
	Replay
	// Conflict: the request id was used with different input
	// (errs.RequestConflict).
	Conflict
	// InProgress: the same request is executing (errs.RequestInProgress).
	InProgress
	// Unknown: the same request was executing when the daemon stopped; its
	// outcome is not known (errs.RequestOutcomeUnknown).
	Unknown
)

// String returns the decision's lowercase name.
func (d Decision) String() string {
	switch d {
	case Proceed:
		return "proceed"
	case Replay:
		return "replay"
	case Conflict:
		return "conflict"
	case InProgress:
		return "in_progress"
	case Unknown:
		return "unknown"
	}
	return "decision(" + strconv.Itoa(int(d)) + ")"
}

// ValidateRequestID checks a client request id: 1 to 255 characters from
// [A-Za-z0-9._:/-]. An empty id gives errs.RequestIDRequired, anything else
// invalid errs.InvalidArgument.
func ValidateRequestID(id string) error {
	if id == "" {
		return errs.New(errs.RequestIDRequired, "request_id is required for this operation")
	}
	if len(id) > MaxRequestIDLen {
		return errs.New(errs.InvalidArgument, "request_id is %d bytes long, the limit is %d", len(id), MaxRequestIDLen)
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return errs.New(errs.InvalidArgument, "request_id %q has %q at byte %d; allowed are A-Z a-z 0-9 . _ : / -", id, id[i:i+1], i)
		}
	}
	return nil
}

func idByte(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') ||
		c == '.' || c == '_' || c == ':' || c == '/' || c == '-'
}

// Begin decides what to do with request id given the entry already stored for
// it (nil if none):
//
//   - nil: Proceed, with a new executing entry.
//   - different operation or input hash: Conflict (errs.RequestConflict).
//   - succeeded: Replay; next is the stored entry with its Result.
//   - executing: InProgress (errs.RequestInProgress).
//   - failed: Proceed with the entry reset to executing (a retry).
//   - unknown: Unknown (errs.RequestOutcomeUnknown, with the entry's paths).
//
// For every decision but Proceed, next is the existing entry unchanged and
// nothing needs persisting. Invalid input gives the zero Decision and an error.
func Begin(existing *Entry, id, op, inputHash string, paths []string, now time.Time) (next Entry, d Decision, err error) {
	if err := ValidateRequestID(id); err != nil {
		return Entry{}, 0, err
	}
	if op == "" {
		return Entry{}, 0, errs.New(errs.InvalidArgument, "request %q has no operation", id)
	}
	if inputHash == "" {
		return Entry{}, 0, errs.New(errs.InvalidArgument, "request %q has no input hash", id)
	}
	if existing == nil {
		return Entry{
			RequestID: id,
			Operation: op,
			InputHash: inputHash,
			State:     StateExecuting,
			Paths:     slices.Clone(paths),
			Created:   now,
			Updated:   now,
		}, Proceed, nil
	}
	e := *existing
	if e.RequestID != id {
		return Entry{}, 0, errs.New(errs.Internal, "ledger entry of request %q was looked up for request %q", e.RequestID, id)
	}
	if e.Operation != op || e.InputHash != inputHash {
		return e, Conflict, errs.New(errs.RequestConflict,
			"request_id %q was already used for a %s request with different input; use a new request_id", id, e.Operation).
			With("request_id", id).With("operation", e.Operation).With("state", string(e.State))
	}
	switch e.State {
	case StateSucceeded:
		return e, Replay, nil
	case StateExecuting:
		return e, InProgress, errs.New(errs.RequestInProgress,
			"request %q (%s) is still executing; retry later with the same request_id", id, op).
			With("request_id", id).With("operation", op).With("started_at", e.Updated.UTC().Format(time.RFC3339Nano))
	case StateFailed:
		e.State = StateExecuting
		e.Result = nil
		e.Error = nil
		e.Paths = slices.Clone(paths)
		e.Updated = now
		return e, Proceed, nil
	case StateUnknown:
		return e, Unknown, errs.New(errs.RequestOutcomeUnknown,
			"request %q (%s) was executing when harnessd stopped, so its outcome is unknown; inspect the paths it may have touched before retrying with a new request_id", id, op).
			With("request_id", id).With("operation", op).With("paths", slices.Clone(e.Paths))
	}
	return e, 0, errs.New(errs.Internal, "ledger entry of request %q has invalid state %q", id, e.State)
}

// notExecuting is the error of Complete and Fail for an entry in another state.
func notExecuting(e Entry, to State) error {
	return errs.Wrap(errs.Internal, ErrNotExecuting,
		"ledger: cannot mark request %q %s: it is %s, not executing", e.RequestID, to, e.State).
		With("request_id", e.RequestID).With("state", string(e.State))
}

// Complete moves an executing entry to succeeded and stores result as JSON
// (a json.RawMessage or []byte must already be valid JSON). It is a
// compare-and-set: any other state gives an errs.Internal error wrapping
// ErrNotExecuting, and an unencodable result an errs.Internal error; e is
// returned unchanged on error.
func Complete(e Entry, result any, now time.Time) (Entry, error) {
	if e.State != StateExecuting {
		return e, notExecuting(e, StateSucceeded)
	}
	raw, err := encodeResult(result)
	if err != nil {
		return e, errs.Wrap(errs.Internal, err, "ledger: encode result of request %q: %v", e.RequestID, err)
	}
	e.State = StateSucceeded
	e.Result = raw
	e.Error = nil
	e.Updated = now
	return e, nil
}

// encodeResult returns result as compact JSON in a new slice.
func encodeResult(result any) (json.RawMessage, error) {
	var b []byte
	switch r := result.(type) {
	case json.RawMessage:
		b = r
	case []byte:
		b = r
	default:
		return json.Marshal(result)
	}
	if !json.Valid(b) {
		return nil, errors.New("raw result is not valid JSON")
	}
	return slices.Clone(b), nil
}

// Fail moves an executing entry to failed and stores cause as the JSON of its
// coded error ({"code","message","details"}); an uncoded cause is stored as
// INTERNAL and a nil cause as an INTERNAL "failed without an error". Any other
// state gives an errs.Internal error wrapping ErrNotExecuting.
func Fail(e Entry, cause error, now time.Time) (Entry, error) {
	if e.State != StateExecuting {
		return e, notExecuting(e, StateFailed)
	}
	ce := errs.From(cause)
	if ce == nil {
		ce = errs.New(errs.Internal, "operation failed without an error")
	}
	raw, err := json.Marshal(ce)
	if err != nil {
		// Details that do not encode are dropped rather than losing the
		// failure.
		raw, err = json.Marshal(&errs.Error{Code: ce.Code, Message: ce.Message})
		if err != nil {
			return e, errs.Wrap(errs.Internal, err, "ledger: encode error of request %q: %v", e.RequestID, err)
		}
	}
	e.State = StateFailed
	e.Error = raw
	e.Result = nil
	e.Updated = now
	return e, nil
}

// Abandon checks that e may be closed as never begun: a request that gave
// up before it could write anything (harnessd began shutting down while the
// request waited for its lease). The owner then deletes the entry, so the
// request id is free again: the same request runs normally after a restart,
// neither REQUEST_OUTCOME_UNKNOWN nor a stored failure. It is a
// compare-and-delete: e must be executing with inputHash (the attempt that
// abandons is the one that began); anything else gives an errs.Internal
// error (wrapping ErrNotExecuting for another state) and must not be
// deleted.
func Abandon(e Entry, inputHash string) error {
	if e.State != StateExecuting {
		return errs.Wrap(errs.Internal, ErrNotExecuting,
			"ledger: cannot abandon request %q: it is %s, not executing", e.RequestID, e.State).
			With("request_id", e.RequestID).With("state", string(e.State))
	}
	if e.InputHash != inputHash {
		return errs.New(errs.Internal, "ledger: cannot abandon request %q: it executes another input", e.RequestID).
			With("request_id", e.RequestID)
	}
	return nil
}

// MarkUnknown is the boot transition executing -> unknown for entries whose
// operation was cut off by a restart. It reports whether e changed.
func MarkUnknown(e Entry, now time.Time) (Entry, bool) {
	if e.State != StateExecuting {
		return e, false
	}
	e.State = StateUnknown
	e.Updated = now
	return e, true
}

// Expired reports whether e may be deleted at now: it is not executing and its
// last change (Updated, or Created if Updated is zero) is at least retention
// old. A retention <= 0 means DefaultRetention.
func Expired(e Entry, now time.Time, retention time.Duration) bool {
	if e.State == StateExecuting {
		return false
	}
	if retention <= 0 {
		retention = DefaultRetention
	}
	last := e.Updated
	if last.IsZero() {
		last = e.Created
	}
	return !now.Before(last.Add(retention))
}
