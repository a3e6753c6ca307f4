package actors

import (
	"errors"
	"time"
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// The release of a job's durable workspace lease is one phase of its end,
// awaited and recorded: the job's record says lease_release_state pending
// until the lease's actor answered Released, then released. A release
// that fails (an error answered, no answer within leaseReleaseWait, the
// checkout gone) keeps the record pending with one redacted diagnostic
// (code, message, attempted_at, count) and is retried when the jobs
// actor starts. A release is only ever sent by the holder, with the
// lease id it was granted (its own record's LeaseID); the diagnostic is
// never read to decide one.

// leaseReleaseWait bounds the wait for the answer to a Release.
const leaseReleaseWait = 10 * time.Second

// maxReleaseMessage bounds a diagnostic's message, in bytes.
const maxReleaseMessage = 512

// releaseAnswer reads the answer to a Release request (a future's result):
// nil when the lease is released or not held any more (Released, known or
// not), else the failure as a coded error.
func releaseAnswer(res any, err error) error {
	switch {
	case errors.Is(err, actor.ErrTimeout):
		return errs.New(errs.Timeout, "the checkout did not answer the lease release within %s", leaseReleaseWait)
	case errors.Is(err, actor.ErrDeadLetter):
		return errs.New(errs.Unavailable, "the checkout's actor is gone (the repository was removed or harnessd is stopping)")
	case err != nil:
		return errs.New(errs.Unavailable, "the lease release was not answered: %v", err)
	}
	switch m := res.(type) {
	case messages.Released:
		return nil
	case messages.Failed:
		return ErrorOf(m)
	case *actor.DeadLetterResponse:
		return errs.New(errs.Unavailable, "the checkout's actor is gone (the repository was removed or harnessd is stopping)")
	}
	return errs.New(errs.Internal, "unexpected answer %T to a lease release", res)
}

// recordRelease applies the outcome of one release attempt at now to j:
// released when failure is nil, else pending with the diagnostic counting
// one more failed attempt (its message redacted by the default rules, cut to
// maxReleaseMessage bytes). A release that succeeds keeps the diagnostic
// of the attempts that failed before it.
func recordRelease(j *messages.Job, failure error, now time.Time) {
	if failure == nil {
		j.LeaseReleaseState = messages.LeaseReleaseReleased
		return
	}
	j.LeaseReleaseState = messages.LeaseReleasePending
	e := errs.From(failure)
	msg, _ := redact.Default().String(e.Message)
	if len(msg) > maxReleaseMessage {
		cut := maxReleaseMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	count := 1
	if j.LeaseReleaseFailure != nil {
		count = j.LeaseReleaseFailure.Count + 1
	}
	j.LeaseReleaseFailure = &messages.LeaseReleaseDiag{Code: string(e.Code), Message: msg, AttemptedAt: now.UTC(), Count: count}
}

// releaseDue says whether the jobs actor releases a stored job's lease at
// start-up: a final job whose release is pending, by the lease id it
// holds. The diagnostic plays no part.
func releaseDue(j messages.Job) bool {
	return j.LeaseID != "" && j.LeaseReleaseState == messages.LeaseReleasePending && JobFinal(j.State)
}

// askRelease sends the Release of leaseID to checkout and hands its
// outcome to answered, on the actor's goroutine.
func askRelease(ctx actor.Context, checkout *actor.PID, leaseID string, answered func(failure error)) {
	ctx.ReenterAfter(ctx.RequestFuture(checkout, messages.Release{LeaseID: leaseID}, leaseReleaseWait), func(res any, err error) {
		answered(releaseAnswer(res, err))
	})
}

// releaseLease is the job's lease-release phase (finishWith calls it
// before the final state is stored): the record says pending, and the
// job actor reports done only once the answer is recorded (released).
func (a *jobActor) releaseLease(ctx actor.Context) {
	a.stopLeaseTicker()
	if a.job.LeaseID == "" {
		return
	}
	a.job.LeaseReleaseState = messages.LeaseReleasePending
	if a.checkout == nil {
		recordRelease(&a.job, errs.New(errs.RepositoryNotRegistered, "the checkout of repository %s is not known; the release is retried at start-up", a.job.RepoID),
			a.cfg.Now())
		return
	}
	a.releasing = true
	askRelease(ctx, a.checkout, a.job.LeaseID, func(failure error) { a.releaseAnswered(ctx, failure) })
}

// releaseAnswered records the release's outcome, stores it, and reports
// the job done when its final state is stored too.
func (a *jobActor) releaseAnswered(ctx actor.Context, failure error) {
	if !a.releasing {
		return
	}
	a.releasing = false
	recordRelease(&a.job, failure, a.cfg.Now())
	if failure != nil {
		a.lg.Warn("the job's lease release failed; it is retried at start-up",
			zap.String("lease_id", a.job.LeaseID), zap.String("code", a.job.LeaseReleaseFailure.Code))
	}
	if !a.unstored {
		if err := a.persist(); err != nil {
			a.unstored = true
			a.lg.Error("the job's lease release could not be stored; it is stored again with backoff", zap.Error(err))
			a.scheduleStoreFinal(ctx)
		}
	}
	ctx.Send(ctx.Parent(), jobUpdate{job: a.job})
	a.doneIfSettled(ctx)
}

// doneIfSettled tells the parent the job is over once its final state is
// stored and its lease release answered: the parent then stops it.
func (a *jobActor) doneIfSettled(ctx actor.Context) {
	if a.unstored || a.releasing {
		return
	}
	ctx.Send(ctx.Parent(), jobDone{job: a.job})
}

// releaseAtStart releases the lease of a job whose release is pending
// (loaded at start-up) once its checkout is known, and records the outcome.
// The releases the load sends hold the stashed requests until answered
// (startReleases); a release retried later, its checkout published late,
// holds nothing.
func (a *Jobs) releaseAtStart(ctx actor.Context, j messages.Job) bool {
	e, ok := a.cfg.Index.Lookup(j.RepoID)
	if !ok {
		return false
	}
	id, leaseID, held := j.ID, j.LeaseID, a.holding
	if held {
		a.startReleases++
	}
	askRelease(ctx, e.Checkout, leaseID, func(failure error) {
		a.releaseRecorded(id, leaseID, failure)
		if held {
			if a.startReleases--; a.startReleases == 0 {
				a.drainStash(ctx) // the load's releases are answered
			}
		}
	})
	return true
}

// releaseRecorded stores the outcome of a start-up release in the job's
// record, if the record still names that lease (a retried job's new
// attempt holds none).
func (a *Jobs) releaseRecorded(id, leaseID string, failure error) {
	j, ok := a.jobs[id]
	if !ok || j.LeaseID != leaseID || !JobFinal(j.State) {
		return
	}
	recordRelease(j, failure, a.cfg.Now())
	if failure != nil {
		a.lg.Warn("a job's lease release failed again at start-up; it is retried at the next start",
			zap.String("job_id", id), zap.String("lease_id", leaseID), zap.String("code", j.LeaseReleaseFailure.Code))
	}
	if err := a.cfg.Store.PutSync(persistence.JobKey(id), *j); err != nil {
		a.lg.Warn("store a job's lease release", zap.String("job_id", id), zap.Error(err))
	}
}
