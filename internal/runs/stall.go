package runs

import (
	"time"

	"github.com/harnessd/harnessd/messages"
)

// DefaultStallAfter is how long a run's current stage may go without
// progress before the run is marked stuck (RunsConfig.StallAfter).
const DefaultStallAfter = 15 * time.Minute

// LastProgress is when st last made progress: its last stage change,
// successful call or note, else its last update, else its start.
func LastProgress(st messages.RunState) time.Time {
	switch {
	case !st.StageProgressAt.IsZero():
		return st.StageProgressAt
	case !st.UpdatedAt.IsZero():
		return st.UpdatedAt
	}
	return st.StartedAt
}

// Stalled reports whether an active run becomes stuck at now: it has a
// current stage that is not blocked (a blocked stage says what it waits
// for), it is not stuck already, and it made no progress for after (0 or
// less: detection off).
func Stalled(st messages.RunState, now time.Time, after time.Duration) bool {
	if after <= 0 || st.Status != messages.RunActive || st.CurrentStage == "" || st.Blocked || st.Stuck {
		return false
	}
	return now.Sub(LastProgress(st)) >= after
}

// Progress records progress of st at at; it answers true when it cleared
// the stuck flag (the caller notes it).
func Progress(st *messages.RunState, at time.Time) (unstuck bool) {
	if at.After(st.StageProgressAt) {
		st.StageProgressAt = at
	}
	if !st.Stuck {
		return false
	}
	st.Stuck, st.StuckSince = false, time.Time{}
	return true
}

// SpanProgress reports whether a span is progress: a call that
// succeeded. Failures, refusals and loops are not.
func SpanProgress(s messages.RunSpan) bool { return s.Outcome == "ok" }
