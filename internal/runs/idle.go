package runs

import (
	"strconv"
	"time"

	"github.com/harnessd/harnessd/messages"
)

// SessionEnded is the end reason of an implicit run that ended with its
// session.
const SessionEnded = "session ended"

// IdleRecheck is how often a detached implicit run that its session left
// with work open looks again whether the work is done (then it ends).
const IdleRecheck = 30 * time.Second

// Open is the work a run still has open outside its own state, as the run
// actor gathered it when its session went away: its jobs that are queued
// or running (or whose state could not be read), and its stages with a
// claim that is not verified.
type Open struct {
	Jobs   []string
	Claims []string
}

// LiveJob reports whether a job in state keeps its run open: queued or
// running, or a state that could not be read ("").
func LiveJob(state string) bool {
	switch state {
	case messages.JobQueued, messages.JobRunning, "":
		return true
	}
	return false
}

// OnSessionEnd decides what becomes of an active run whose session went
// away. An implicit run (the session's own, started by its first call)
// with nothing open ends: end is true and the reason is SessionEnded. A
// run that keeps going stays active and detached, resumable (run_resume)
// until runs.Due abandons it; keep says why, for a person reading the run:
// an explicit run (run_start) is never ended behind the agent's back, and
// an open stage (started or blocked), a live job or an unverified claim
// keeps an implicit run too.
func OnSessionEnd(st messages.RunState, open Open) (end bool, keep []string) {
	if st.Status != messages.RunActive {
		return false, nil
	}
	if !st.Implicit {
		keep = append(keep, "it was started with run_start: it ends by run_end, its deadline, or after the resume window")
	}
	if st.CurrentStage != "" {
		what := "open"
		if st.Blocked {
			what = "blocked"
		}
		keep = append(keep, "stage "+strconv.Quote(st.CurrentStage)+" is "+what)
	}
	for _, j := range open.Jobs {
		keep = append(keep, "job "+j+" is not finished")
	}
	for _, s := range open.Claims {
		keep = append(keep, "stage "+strconv.Quote(s)+" has a claim that is not verified")
	}
	return len(keep) == 0, keep
}

// ListOrder orders runs as run_list answers them: active runs first, then
// newest first (by start; ties by id, so the order is total).
func ListOrder(a, b messages.RunState) int {
	aLive, bLive := a.Status == messages.RunActive, b.Status == messages.RunActive
	switch {
	case aLive && !bLive:
		return -1
	case bLive && !aLive:
		return 1
	}
	if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
		return c
	}
	switch {
	case a.RunID < b.RunID:
		return -1
	case a.RunID > b.RunID:
		return 1
	}
	return 0
}
