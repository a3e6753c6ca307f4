package actors

import (
	"context"
	"strconv"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// A write job (messages.Job.Write) is a Fast Path write that found its
// files busy and was queued on the Durable Path (on_busy: "durable"). It
// runs no process: the jobs actor hands it to its run at once, without a
// run slot (it waits for a lease, not a CPU), and the job's actor calls
// the JobWriter off its goroutine. The job stays queued while the write
// waits for its lease and is running from the moment the lease is held
// (leased). A restart while it waits finds it queued and runs it again;
// one while it writes interrupts it, and its retry asks the request
// ledger, which replays the write if it landed and answers
// REQUEST_OUTCOME_UNKNOWN if it may have: never a second write.

// JobWriter runs the write of a write job: a dependency of the jobs actor,
// never part of a message (the pipeline's queued writer, wired at Start).
// It calls leased once it holds the write's lease, before it writes. ctx
// ends when the job is cancelled or its actor stops.
type JobWriter func(ctx context.Context, j messages.Job, leased func()) JobWritten

// JobWritten is what the run of a write job came to.
type JobWritten struct {
	// ReceiptID is the write's receipt (also when a retry found it
	// written and replayed it).
	ReceiptID string
	// Leased: the write held its lease (it ran, or was answered by the
	// ledger under it).
	Leased bool
	// Err is why the write failed, with the code the Fast Path would
	// have answered; nil = written.
	Err error
	// Requeue: nothing was written and harnessd is stopping; the job is
	// left as stored (queued) and runs again after the restart.
	Requeue bool
}

// writeJobRetries is the retry bound of a write job: a restart while it
// writes interrupts it, and its one retry asks the ledger what happened.
const writeJobRetries = 1

// Messages of a write job's run to its actor.
type (
	jobWriteLeased struct{}
	jobWriteDone   struct{ out JobWritten }
)

// startWrite hands a write job to the JobWriter off the actor's
// goroutine; its answers come back as messages.
func (a *jobActor) startWrite(ctx actor.Context) {
	w := a.cfg.Write
	if w == nil {
		a.finish(ctx, JobEvFail, errs.New(errs.Internal, "jobs: no writer runs write jobs (JobsConfig.Write)"))
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	rctx, job := a.runCtx, a.job
	a.cfg.Tasks.Go(func() {
		out := w(rctx, job, func() { root.Send(self, jobWriteLeased{}) })
		root.Send(self, jobWriteDone{out: out})
	})
}

// writeLeased records that the write holds its lease: running.
func (a *jobActor) writeLeased(ctx actor.Context) {
	if a.phase != phaseQueued {
		return
	}
	if err := a.transition(ctx, JobEvStart, func(j *messages.Job) { j.StartedAt = a.cfg.Now().UTC() }); err != nil {
		a.lg.Warn("persist the running state of a write job", zap.Error(err))
	}
	a.phase = phaseRunning
}

// writeDone ends a write job with what its write came to.
func (a *jobActor) writeDone(ctx actor.Context, out JobWritten) {
	if a.phase == phaseFinal {
		return
	}
	if out.Err != nil && out.Requeue && !a.cancelReq {
		// Not dispatched any more: a cancel meanwhile ends it at once.
		a.dispatched = false
		a.lg.Info("harnessd is stopping: the write job runs again after the restart")
		return
	}
	ev, cause := writeEvent(out, a.cancelReq)
	if ev == JobEvSucceed && a.job.State == messages.JobQueued {
		// Written, but the running state was not recorded (the store
		// refused it, or the ledger answered before the lease).
		a.job.State = messages.JobRunning
		if a.job.StartedAt.IsZero() {
			a.job.StartedAt = a.cfg.Now().UTC()
		}
	}
	a.finishWith(ctx, ev, cause, func(j *messages.Job) {
		if out.ReceiptID != "" {
			j.ReceiptID = out.ReceiptID
		}
	})
}

// writeEvent is the event that ends a write job with out: a write that
// landed succeeded even when a cancel came after its lease (it ran to its
// end, as every write holding its lease does); a cancel before that
// cancels; anything else fails with the write's own error.
func writeEvent(out JobWritten, cancelled bool) (JobEvent, error) {
	switch {
	case out.Err == nil:
		return JobEvSucceed, nil
	case cancelled && !out.Leased:
		return JobEvCancel, nil
	}
	return JobEvFail, out.Err
}

// writeJobOperation is the operation a job's audit entries name: its
// write's, or job_start.
func writeJobOperation(j messages.Job) string {
	if j.Write != nil {
		return j.Write.Operation
	}
	return "job_start"
}

// enqueue makes a queued job wait for its run: a process job in the fair
// run queue, a write job handed its run at once (it takes no slot).
func (a *Jobs) enqueue(ctx actor.Context, j messages.Job) {
	if j.Write == nil {
		a.queue.Push(j.RepoID, j.ID)
		return
	}
	if pid, ok := a.kids[j.ID]; ok {
		a.dispatched[j.ID] = true
		ctx.Send(pid, jobRun{})
	}
}

// slotHeld reports whether a dispatched job holds a run slot.
func (a *Jobs) slotHeld(id string) bool {
	j, ok := a.jobs[id]
	return !ok || j.Write == nil
}

// joinWrite decides the id of a submitted write job among its request's
// jobs (writeSlot) and answers, returning true, when it joins a live one
// or conflicts with it.
func (a *Jobs) joinWrite(ctx actor.Context, j *messages.Job) bool {
	id, live := writeSlot(j.ID, func(id string) (messages.Job, bool) {
		x, ok := a.jobs[id]
		if !ok {
			return messages.Job{}, false
		}
		return *x, true
	})
	if live == nil {
		j.ID, j.RetryMax = id, writeJobRetries
		return false
	}
	if live.Write == nil || live.Write.Operation != j.Write.Operation || live.Write.InputHash != j.Write.InputHash {
		reply(ctx, nil, errs.New(errs.RequestConflict, "request_id %q is already queued as job %s with different input; use a new request_id", j.RequestID, live.ID).
			With("request_id", j.RequestID).With("job_id", live.ID))
		return true
	}
	ctx.Respond(messages.JobInfo{Job: *live}) // the record as its actor last reported it
	return true
}

// maxWriteAttempts bounds the jobs one request's queued write may have.
const maxWriteAttempts = 100

// writeSlot returns the job a write job of request base (the id derived
// from its repository and request id) joins: the live one among base,
// base+"r2", base+"r3", ... (a retry of the request joins it), or else
// the first of them that is free (after attempts that ended: a write that
// failed may be sent again).
func writeSlot(base string, lookup func(id string) (messages.Job, bool)) (string, *messages.Job) {
	for n := 1; n <= maxWriteAttempts; n++ {
		id := base
		if n > 1 {
			id += "r" + strconv.Itoa(n)
		}
		j, ok := lookup(id)
		if !ok {
			return id, nil
		}
		if !JobFinal(j.State) {
			return id, &j
		}
	}
	return base + "r" + strconv.Itoa(maxWriteAttempts+1), nil
}
