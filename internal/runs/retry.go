package runs

import (
	"slices"

	"github.com/harnessd/harnessd/messages"
)

// Bounds of retries (FlowDeck L6).
const (
	// DefaultMaxRetries is how many times a run lets a failed call be
	// retried in a stage when run_start names no max_retries.
	DefaultMaxRetries = 3
	// MaxMaxRetries bounds max_retries.
	MaxMaxRetries = 100
	// MaxRetryKeys bounds the open retry streaks a run keeps; the oldest
	// is dropped first.
	MaxRetryKeys = 64
	// MaxAttemptsKept bounds the attempts a streak remembers (its count
	// goes on).
	MaxAttemptsKept = 16
)

// RetryBound is st's retry bound: how many retries of a failed call a
// stage allows.
func RetryBound(st messages.RunState) int {
	if st.MaxRetries == nil {
		return DefaultMaxRetries
	}
	return max(*st.MaxRetries, 0)
}

// PendingFailure reports whether s is a failed call of its run (not a
// step of a batch): the pipeline counts it in flight until the run actor
// has recorded it, so a retry check never misses a failure on its way.
func PendingFailure(s messages.RunSpan) bool {
	return s.ParentID == "" && s.Outcome != "ok"
}

// Attempted reports whether a failed span is an attempt a retry counts:
// a call of the run (not a batch's step), with an input hash, that ran
// or was refused for what it is. Refusals of the retry bound itself, an
// ended run and a wait for a person's approval are not attempts, nor are
// the answers about an attempt already made rather than a new one: the
// request ledger's REQUEST_IN_PROGRESS (a client polling its own write)
// and REQUEST_OUTCOME_UNKNOWN, and CANCELLED (the client stopped waiting;
// a write it started runs to its end and a retry replays it).
//
// A request_id retried after its recorded failure runs again, so each
// such failure is an attempt of its own; a replay succeeds and closes
// the streak (RecordAttempt).
func Attempted(s messages.RunSpan) bool {
	if s.ParentID != "" || s.Kind == messages.SpanRun || s.InputHash == "" || s.Outcome == "ok" {
		return false
	}
	switch s.ErrorCode {
	case "RETRY_LIMIT", "RUN_ENDED", "APPROVAL_REQUIRED", "REQUEST_IN_PROGRESS", "REQUEST_OUTCOME_UNKNOWN", "CANCELLED":
		return false
	}
	return true
}

// RecordAttempt updates st's retry streaks with a finished call s of the
// current stage: a counted failure opens or extends its streak, a
// success of the same call closes it. Calls of a batch's steps and spans
// without an input hash change nothing. It reports whether st changed.
func RecordAttempt(st *messages.RunState, s messages.RunSpan) bool {
	if s.ParentID != "" || s.InputHash == "" {
		return false
	}
	i := retryIndex(st.Retries, s.Stage, s.Op, s.InputHash)
	if s.Outcome == "ok" {
		if i < 0 {
			return false
		}
		st.Retries = slices.Delete(st.Retries, i, i+1)
		return true
	}
	if !Attempted(s) {
		return false
	}
	at := messages.RunAttempt{SpanID: s.SpanID, ErrorCode: s.ErrorCode, At: s.Start, DurationMs: s.DurationMs}
	if i < 0 {
		if len(st.Retries) >= MaxRetryKeys {
			st.Retries = slices.Delete(st.Retries, 0, len(st.Retries)-MaxRetryKeys+1)
		}
		st.Retries = append(st.Retries, messages.RunRetry{Stage: s.Stage, Op: s.Op, InputHash: s.InputHash})
		i = len(st.Retries) - 1
	}
	r := &st.Retries[i]
	r.Failures++
	// A fresh slice: snapshots share the old one.
	atts := make([]messages.RunAttempt, 0, min(len(r.Attempts)+1, MaxAttemptsKept))
	if n := len(r.Attempts); n >= MaxAttemptsKept {
		atts = append(atts, r.Attempts[n-MaxAttemptsKept+1:]...)
	} else {
		atts = append(atts, r.Attempts...)
	}
	r.Attempts = append(atts, at)
	return true
}

// ResetRetries drops the streaks of other stages than st's current one:
// a new stage starts its retries afresh.
func ResetRetries(st *messages.RunState) bool {
	n := len(st.Retries)
	st.Retries = slices.DeleteFunc(slices.Clone(st.Retries), func(r messages.RunRetry) bool { return r.Stage != st.CurrentStage })
	if len(st.Retries) == 0 {
		st.Retries = nil
	}
	return len(st.Retries) != n
}

// RetryRefused returns the streak of op with inputHash in st's current
// stage when one more call of it would be a retry past st's bound
// (RETRY_LIMIT), and false when the call may run.
func RetryRefused(st messages.RunState, op, inputHash string) (messages.RunRetry, bool) {
	i := retryIndex(st.Retries, st.CurrentStage, op, inputHash)
	if i < 0 {
		return messages.RunRetry{}, false
	}
	r := st.Retries[i]
	// Failures-1 retries are used; this call would be retry number Failures.
	return r, r.Failures > RetryBound(st)
}

func retryIndex(rs []messages.RunRetry, stage, op, hash string) int {
	for i := len(rs) - 1; i >= 0; i-- {
		if r := rs[i]; r.InputHash == hash && r.Op == op && r.Stage == stage {
			return i
		}
	}
	return -1
}

// AttemptsOf returns the failed attempts of the call of span s among
// spans (same operation, input hash and stage; counted failures since
// the last success of it), oldest first, up to and including s.
func AttemptsOf(spans []messages.RunSpan, s messages.RunSpan) []messages.RunAttempt {
	var out []messages.RunAttempt
	for _, x := range spans {
		if x.ParentID != "" || x.Op != s.Op || x.InputHash != s.InputHash || x.Stage != s.Stage {
			if x.SpanID == s.SpanID {
				break
			}
			continue
		}
		switch {
		case x.Outcome == "ok":
			out = out[:0]
		case Attempted(x) || x.SpanID == s.SpanID:
			out = append(out, messages.RunAttempt{SpanID: x.SpanID, ErrorCode: x.ErrorCode, At: x.Start, DurationMs: x.DurationMs})
		}
		if x.SpanID == s.SpanID {
			break
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// LatestFailure returns the span run_assess assesses by default: the
// newest failed call of the run (a batch's failed step when nothing else
// failed), and false when nothing failed.
func LatestFailure(spans []messages.RunSpan) (messages.RunSpan, bool) {
	var step *messages.RunSpan
	for i := len(spans) - 1; i >= 0; i-- {
		s := &spans[i]
		if s.Kind == messages.SpanRun || s.Outcome == "ok" {
			continue
		}
		if s.ParentID == "" {
			return *s, true
		}
		if step == nil {
			step = s
		}
	}
	if step != nil {
		return *step, true
	}
	return messages.RunSpan{}, false
}
