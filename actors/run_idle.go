package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/verify"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Runs that end with their session.
//
// When a run's session goes away (the MCP client closed it, the stdio
// bridge saw EOF, an HTTP session was deleted or expired) the run is
// detached, as before. An implicit run then ends at once with reason
// "session ended" when nothing of it is open (runs.OnSessionEnd): no
// current stage, no queued or running job, no claim waiting to be
// verified. What is open outside the run's state — its jobs' states and
// its claims — is gathered off the mailbox (a task asks the jobs actor
// and reads the claims) and comes back as runOpenWork. A run left with
// work open stays active and detached, says why in an observation, and
// looks again every runs.IdleRecheck (on the sweep) until the work is
// done, it is resumed, or the resume window abandons it. An explicit run
// (run_start) is never ended behind the agent's back.

// idleState is a run actor's bookkeeping of the look at its open work.
type idleState struct {
	checking  bool      // a gathering task is out
	checkedAt time.Time // when the last one started
	noted     bool      // the observation of why it stays was made
}

// runOpenWork answers a gathering task: the work open at detachedAt,
// with jobs the number of the run's jobs it looked at.
type runOpenWork struct {
	detachedAt time.Time
	jobs       int
	open       runs.Open
}

// jobLookTimeout bounds the task's question to the jobs actor per job.
const jobLookTimeout = 5 * time.Second

// sessionGone looks at a detached run's open work: at once when the run
// can have none outside its state (no job, never stored, so no claim),
// else through a task.
func (a *runActor) sessionGone(ctx actor.Context, now time.Time) {
	if a.st.Status != messages.RunActive || a.st.DetachedAt.IsZero() || a.idle.checking {
		return
	}
	if len(a.st.Jobs) == 0 && !a.stored {
		a.openWork(ctx, runOpenWork{detachedAt: a.st.DetachedAt}, now)
		return
	}
	if !a.st.Implicit && a.idle.noted {
		return // nothing will end it here: no need to look again
	}
	a.idle.checking, a.idle.checkedAt = true, now
	self, root := ctx.Self(), ctx.ActorSystem().Root
	jobs, store, id, detachedAt := append([]string(nil), a.st.Jobs...), a.cfg.Store, a.st.RunID, a.st.DetachedAt
	jobsPID := a.cfg.Jobs
	a.cfg.Tasks.Go(func() {
		root.Send(self, runOpenWork{detachedAt: detachedAt, jobs: len(jobs), open: gatherOpen(root, jobsPID, store, id, jobs)})
	})
}

// gatherOpen asks the jobs actor for each job's state (a job it does not
// know was pruned: finished; one it cannot answer for counts as live) and
// reads the run's claims from the store.
func gatherOpen(root *actor.RootContext, jobsPID *actor.PID, store *persistence.Store, runID string, jobs []string) runs.Open {
	var open runs.Open
	for _, j := range jobs {
		state := ""
		if jobsPID != nil {
			res, err := root.RequestFuture(jobsPID, messages.JobGet{ID: j}, jobLookTimeout).Result()
			switch r := res.(type) {
			case messages.JobInfo:
				state = r.Job.State
			case messages.Failed:
				if errs.CodeOf(ErrorOf(r)) == errs.NotFound {
					state = messages.JobSucceeded // pruned: long finished
				}
			}
			_ = err // no answer: the state stays unknown, so the job counts as live
		}
		if runs.LiveJob(state) {
			open.Jobs = append(open.Jobs, j)
		}
	}
	err := store.Scan(persistence.ClaimRunPrefix(runID), func(_ []byte, decode func(any) error) error {
		var s struct {
			Stage  string `json:"stage"`
			Status string `json:"status"`
		}
		if decode(&s) != nil || s.Status != verify.StatusVerified {
			open.Claims = append(open.Claims, s.Stage)
		}
		return nil
	})
	if err != nil {
		open.Claims = append(open.Claims, "(the claims could not be read)")
	}
	return open
}

// openWork decides on what a look found: the run ends (an implicit run
// with nothing open) or stays, saying why once. A look that is stale (the
// run was resumed or detached again, or started a job since) is dropped;
// the next sweep looks again.
func (a *runActor) openWork(ctx actor.Context, m runOpenWork, now time.Time) {
	a.idle.checking = false
	if a.st.Status != messages.RunActive || !a.st.DetachedAt.Equal(m.detachedAt) || len(a.st.Jobs) != m.jobs {
		return
	}
	end, keep := runs.OnSessionEnd(a.st, m.open)
	if end {
		a.sweepEnd(ctx, messages.RunEnded, runs.SessionEnded, now)
		return
	}
	if a.idle.noted {
		return
	}
	a.idle.noted = true
	text := "the session ended; the run stays active and can be resumed (run_resume): "
	for i, k := range keep {
		if i > 0 {
			text += "; "
		}
		text += k
	}
	if len(text) > runs.MaxText {
		text = text[:runs.MaxText-3] + "..."
	}
	prev := cloneRunState(a.st)
	o := messages.RunObservation{At: now, Source: "harnessd", Kind: "detached", Text: text}
	runs.Observe(&a.st, o)
	if err := a.commit(ctx, prev, a.stored, messages.RunEvent{Type: "observation", Observation: &o}); err != nil {
		a.idle.noted = false // the next look says it again
		return
	}
	a.summarize(ctx, runs.SummaryIdle, now) // the run goes idle: the next session reads what it left
}

// idleSweep looks again at a detached implicit run left with work open,
// every runs.IdleRecheck.
func (a *runActor) idleSweep(ctx actor.Context, now time.Time) {
	if !a.st.Implicit || a.st.DetachedAt.IsZero() || now.Sub(a.idle.checkedAt) < runs.IdleRecheck {
		return
	}
	a.sessionGone(ctx, now)
}
