package actors

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/cgroup"
	"github.com/harnessd/harnessd/internal/joblog"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/internal/worktree"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// JobTailBytes is how much of a job's combined output its result keeps.
const JobTailBytes = 4 << 10

// Job log file names under the job's log directory.
const (
	JobStdoutLog = "stdout.log"
	JobStderrLog = "stderr.log"
)

// jobPhase is where a job actor is in its run.
type jobPhase int

const (
	phaseQueued   jobPhase = iota // waiting for a run slot
	phaseLeasing                  // waiting for the durable workspace lease
	phaseWorktree                 // waiting for (or creating) the worktree
	phaseStarting                 // the process is being started
	phaseRunning                  // the process runs
	phaseFinal                    // the job is over
)

// Messages a job actor sends itself from its goroutines.
type (
	jobLeaseReply struct {
		res any
		err error
	}
	jobLeaseTick    struct{}
	jobWorktreeMade struct {
		wt  worktree.Worktree
		err error
	}
	jobProcStarted struct {
		p   *proc.Process
		err error
	}
	jobProcExited struct{ out jobOutcome }
)

// jobOutcome is what the runner goroutine learned after the process ended.
type jobOutcome struct {
	res        proc.Result
	stdout     int64
	stderr     int64
	redactions int
	tail       string
	summary    []string
	wtRemoved  bool
}

// jobActor is one durable job: a persisted state machine. Every transition
// is written with PutSync before anyone hears of it.
type jobActor struct {
	cfg    *JobsConfig
	wtRoot string
	job    messages.Job
	phase  jobPhase
	lg     *zap.Logger

	cancelReq     bool
	cancelWaiters []*actor.PID
	dispatched    bool

	checkout *actor.PID
	p        *proc.Process
	group    *cgroup.Group
	stdout   *joblog.Writer
	stderr   *joblog.Writer
	failErr  *messages.JobError

	runCtx      context.Context
	runCancel   context.CancelFunc
	leaseTicker *ticker
	wg          sync.WaitGroup
}

func newJobActor(cfg *JobsConfig, j messages.Job, wtRoot string) *jobActor {
	return &jobActor{cfg: cfg, job: j, wtRoot: wtRoot, lg: cfg.Logger.With(zap.String("actor", "job"), zap.String("job_id", j.ID))}
}

// Receive dispatches a job's messages.
func (a *jobActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.runCtx, a.runCancel = context.WithCancel(context.Background())
	case messages.JobSubmit:
		if err := a.persist(); err != nil {
			reply(ctx, nil, errs.Wrap(errs.Internal, err, "persist job: %v", err))
			ctx.Send(ctx.Parent(), jobGone{id: a.job.ID})
			return
		}
		ctx.Respond(messages.JobInfo{Job: a.job})
	case messages.JobGet:
		ctx.Respond(messages.JobInfo{Job: a.live()})
	case messages.JobCancel:
		a.cancel(ctx)
	case jobRun:
		a.dispatched = true
		a.prepare(ctx)
	case jobLeaseReply:
		a.leaseReply(ctx, m)
	case jobLeaseTick:
		a.renew(ctx)
	case wtGranted:
		a.makeWorktree(ctx)
	case jobWorktreeMade:
		a.worktreeMade(ctx, m)
	case jobProcStarted:
		a.procStarted(ctx, m)
	case jobProcExited:
		a.procExited(ctx, m.out)
	case *actor.Stopping:
		a.stopLeaseTicker()
		if a.runCancel != nil {
			a.runCancel()
		}
		if a.p != nil {
			a.p.Cancel()
		}
		a.wg.Wait()
	}
}

func (a *jobActor) persist() error {
	return a.cfg.Store.PutSync(persistence.JobKey(a.job.ID), a.job)
}

// live returns the record with the output counters of a running process.
func (a *jobActor) live() messages.Job {
	j := a.job
	if a.stdout != nil && a.phase == phaseRunning {
		j.StdoutBytes, j.StderrBytes = a.stdout.Written(), a.stderr.Written()
		j.Redactions = a.stdout.Redactions() + a.stderr.Redactions()
	}
	if j.State == messages.JobRunning && !j.StartedAt.IsZero() {
		j.DurationMs = float64(a.cfg.Now().Sub(j.StartedAt).Microseconds()) / 1000
	}
	return j
}

// transition moves the job with ev, persists it and tells the parent.
func (a *jobActor) transition(ctx actor.Context, ev JobEvent, edit func(j *messages.Job)) error {
	next, err := JobTransition(a.job.State, ev)
	if err != nil {
		return err
	}
	prev := a.job
	a.job.State = next
	if edit != nil {
		edit(&a.job)
	}
	if err := a.persist(); err != nil {
		a.job = prev
		return errs.Wrap(errs.Internal, err, "persist job %s: %v", a.job.ID, err)
	}
	ctx.Send(ctx.Parent(), jobUpdate{job: a.job})
	return nil
}

func (a *jobActor) cancel(ctx actor.Context) {
	switch a.phase {
	case phaseFinal:
		ctx.Respond(messages.JobInfo{Job: a.job})
		return
	case phaseQueued:
		if !a.dispatched {
			a.cancelWaiters = append(a.cancelWaiters, ctx.Sender())
			a.finish(ctx, JobEvCancel, nil)
			return
		}
	}
	a.cancelReq = true
	a.cancelWaiters = append(a.cancelWaiters, ctx.Sender())
	if a.p != nil {
		a.p.Cancel()
	}
}

// prepare runs the steps before the process: the durable lease of a job
// that writes the main checkout, or the worktree of an isolated job.
func (a *jobActor) prepare(ctx actor.Context) {
	if a.cancelReq {
		a.finish(ctx, JobEvCancel, nil)
		return
	}
	switch {
	case a.job.Isolation == messages.JobIsolationWorktree:
		a.phase = phaseWorktree
		ctx.Send(ctx.Parent(), wtAcquire{repoID: a.job.RepoID, pid: ctx.Self()})
	case a.job.Writes:
		e, ok := a.cfg.Index.Lookup(a.job.RepoID)
		if !ok {
			a.finish(ctx, JobEvFail, errs.New(errs.RepositoryNotRegistered, "repository %s is no longer registered", a.job.RepoID))
			return
		}
		a.checkout = e.Checkout
		a.phase = phaseLeasing
		key := string(lease.WorkspaceKey(a.job.CheckoutID))
		f := ctx.RequestFuture(a.checkout, messages.Acquire{
			Owner: a.job.ID, Operation: "job_start", Keys: []string{key},
			TTL: a.cfg.LeaseTTL, Visibility: "durable", Wait: jobLeaseWait,
		}, jobLeaseWait+10*time.Second)
		ctx.ReenterAfter(f, func(res any, err error) { a.leaseReply(ctx, jobLeaseReply{res: res, err: err}) })
	default:
		a.startProcess(ctx, a.job.Root)
	}
}

func (a *jobActor) leaseReply(ctx actor.Context, m jobLeaseReply) {
	if a.phase != phaseLeasing {
		return
	}
	var err error
	switch r := m.res.(type) {
	case messages.Acquired:
		a.job.LeaseID = r.Lease.ID
		a.startLeaseTicker(ctx)
	case messages.Failed:
		err = r.Err
	default:
		err = m.err
		if err == nil {
			err = errs.New(errs.Internal, "unexpected lease reply %T", m.res)
		}
	}
	if err != nil {
		a.finish(ctx, JobEvFail, errs.Wrap(errs.CodeOf(err), err, "workspace lease for a writing job: %v", errs.From(err).Message))
		return
	}
	if a.cancelReq {
		a.finish(ctx, JobEvCancel, nil)
		return
	}
	a.startProcess(ctx, a.job.Root)
}

func (a *jobActor) startLeaseTicker(ctx actor.Context) {
	a.leaseTicker = startTicker(ctx, a.cfg.LeaseTTL/3, func() any { return jobLeaseTick{} })
}

func (a *jobActor) stopLeaseTicker() {
	if a.leaseTicker != nil {
		a.leaseTicker.stop()
		a.leaseTicker = nil
	}
}

func (a *jobActor) renew(ctx actor.Context) {
	if a.job.LeaseID == "" || a.checkout == nil || a.phase == phaseFinal {
		return
	}
	f := ctx.RequestFuture(a.checkout, messages.Renew{LeaseID: a.job.LeaseID}, a.cfg.LeaseTTL/3)
	ctx.ReenterAfter(f, func(res any, _ error) {
		if r, ok := res.(messages.Failed); ok && errs.CodeOf(r.Err) == errs.LeaseLost && a.phase != phaseFinal {
			a.lg.Warn("writing job lost its workspace lease; cancelling it")
			a.failErr = &messages.JobError{Code: string(errs.LeaseLost), Message: "the job's workspace lease was lost: " + errs.From(r.Err).Message}
			a.job.LeaseID = ""
			a.stopLeaseTicker()
			if a.p != nil {
				a.p.Cancel()
			}
		}
	})
}

func (a *jobActor) releaseLease(ctx actor.Context) {
	a.stopLeaseTicker()
	if a.job.LeaseID != "" && a.checkout != nil {
		ctx.Request(a.checkout, messages.Release{LeaseID: a.job.LeaseID})
	}
}

func (a *jobActor) worktreeDest() string {
	name := a.job.ID
	if a.job.Attempt > 1 {
		name += "-" + strconv.Itoa(a.job.Attempt)
	}
	return filepath.Join(a.wtRoot, name)
}

func (a *jobActor) makeWorktree(ctx actor.Context) {
	if a.cancelReq {
		ctx.Send(ctx.Parent(), wtRelease{repoID: a.job.RepoID})
		a.finish(ctx, JobEvCancel, nil)
		return
	}
	self, root, g := ctx.Self(), ctx.ActorSystem().Root, a.cfg.Git
	rctx, repoRoot, dest := a.runCtx, a.job.Root, a.worktreeDest()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		wt, err := worktree.Create(rctx, g, repoRoot, dest)
		root.Send(self, jobWorktreeMade{wt: wt, err: err})
	}()
}

func (a *jobActor) worktreeMade(ctx actor.Context, m jobWorktreeMade) {
	ctx.Send(ctx.Parent(), wtRelease{repoID: a.job.RepoID})
	if m.err != nil {
		a.finish(ctx, JobEvFail, errs.Wrap(errs.CodeOf(m.err), m.err, "create the job's worktree: %v", errs.From(m.err).Message))
		return
	}
	a.job.Worktree = m.wt.Path
	if a.cancelReq {
		a.finish(ctx, JobEvCancel, nil)
		return
	}
	a.startProcess(ctx, m.wt.Path)
}

// fanout writes to every writer, ignoring their errors (proc drops a sink
// that fails; the log must not take the tail down with it).
type fanout []interface{ Write([]byte) (int, error) }

func (f fanout) Write(p []byte) (int, error) {
	for _, w := range f {
		_, _ = w.Write(p)
	}
	return len(p), nil
}

// tailBuffer keeps the last n bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= t.n {
		t.buf = append(t.buf[:0], p[len(p)-t.n:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func (a *jobActor) startProcess(ctx actor.Context, base string) {
	dir := base
	if a.job.Cwd != "" {
		dir = filepath.Join(base, filepath.FromSlash(a.job.Cwd))
	}
	var err error
	if a.stdout, err = joblog.Create(a.job.LogDir, JobStdoutLog, 0); err == nil {
		a.stderr, err = joblog.Create(a.job.LogDir, JobStderrLog, 0)
	}
	if err != nil {
		a.closeLogs()
		a.finish(ctx, JobEvFail, errs.Wrap(errs.Internal, err, "create job logs: %v", err))
		return
	}
	if a.cfg.Cgroups != nil {
		g, gerr := a.cfg.Cgroups.New(a.job.ID, a.cfg.Limits)
		if gerr != nil {
			a.lg.Warn("job runs uncontained: create its cgroup", zap.Error(gerr))
		} else {
			a.group = g
		}
	}
	if err := a.transition(ctx, JobEvStart, func(j *messages.Job) {
		j.StartedAt = a.cfg.Now().UTC()
		if a.group != nil {
			j.Cgroup = a.group.Path()
		}
	}); err != nil {
		a.closeLogs()
		a.finish(ctx, JobEvFail, err)
		return
	}
	a.phase = phaseStarting
	tail := &tailBuffer{n: JobTailBytes}
	spec := proc.Spec{
		Argv:    append([]string(nil), a.job.Argv...),
		Dir:     dir,
		Timeout: time.Duration(a.job.TimeoutS) * time.Second,
		Grace:   a.cfg.Grace,
		Stdout:  fanout{a.stdout, tail},
		Stderr:  fanout{a.stderr, tail},
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	rctx, stdout, stderr, group := a.runCtx, a.stdout, a.stderr, a.group
	job, g := a.job, a.cfg.Git
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		p, err := proc.Start(rctx, spec)
		root.Send(self, jobProcStarted{p: p, err: err})
		var out jobOutcome
		if err == nil {
			out.res, _ = p.Wait()
		}
		_ = stdout.Close()
		_ = stderr.Close()
		out.stdout, out.stderr = stdout.Written(), stderr.Written()
		out.redactions = stdout.Redactions() + stderr.Redactions()
		t, _ := redact.Default().String(tail.String())
		out.tail = t
		out.summary = joblog.Summarize(t, joblog.DefaultSummaryLines)
		if group != nil {
			_ = group.Kill()
			_ = group.Remove()
		}
		if err == nil && out.res.ExitCode == 0 && !out.res.TimedOut && !out.res.Cancelled && job.Worktree != "" {
			wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out.wtRemoved = worktree.Remove(wctx, g, job.Root, job.Worktree) == nil
			cancel()
		}
		if err != nil {
			return // procStarted reports it
		}
		root.Send(self, jobProcExited{out: out})
	}()
}

func (a *jobActor) closeLogs() {
	if a.stdout != nil {
		_ = a.stdout.Close()
	}
	if a.stderr != nil {
		_ = a.stderr.Close()
	}
}

func (a *jobActor) procStarted(ctx actor.Context, m jobProcStarted) {
	if m.err != nil {
		if a.group != nil {
			_ = a.group.Remove()
		}
		a.finish(ctx, JobEvFail, errs.Wrap(errs.CodeOf(m.err), m.err, "start %q: %v", a.job.Argv[0], errs.From(m.err).Message))
		return
	}
	a.p = m.p
	a.phase = phaseRunning
	if a.group != nil {
		if err := a.group.Add(m.p.Pid()); err != nil {
			a.lg.Warn("add job process to its cgroup", zap.Error(err))
		}
	}
	a.job.Pid, a.job.RunID = m.p.Pid(), m.p.RunID()
	if err := a.persist(); err != nil {
		a.lg.Error("persist job pid", zap.Error(err))
	}
	ctx.Send(ctx.Parent(), jobUpdate{job: a.job})
	if a.cancelReq || a.failErr != nil {
		m.p.Cancel()
	}
}

func (a *jobActor) procExited(ctx actor.Context, o jobOutcome) {
	r := o.res
	ev := JobEvFail
	var cause error
	switch {
	case a.failErr != nil:
		cause = errs.New(errs.Code(a.failErr.Code), "%s", a.failErr.Message)
	case a.cancelReq:
		ev = JobEvCancel
	case r.TimedOut:
		ev = JobEvTimeout
		cause = errs.New(errs.Timeout, "the job ran longer than its timeout of %ds and was killed", a.job.TimeoutS)
	case r.ExitCode == 0 && r.Signal == "":
		ev = JobEvSucceed
	case r.Signal != "":
		cause = errs.New(errs.Internal, "the job was killed by signal %s", r.Signal)
	default:
		cause = errs.New(errs.Internal, "the job exited with status %d", r.ExitCode)
	}
	a.finishWith(ctx, ev, cause, func(j *messages.Job) {
		code := r.ExitCode
		j.ExitCode = &code
		j.Signal = r.Signal
		j.DurationMs = r.DurationMs
		j.TimedOut = r.TimedOut
		j.StdoutBytes, j.StderrBytes, j.Redactions = o.stdout, o.stderr, o.redactions
		j.Tail, j.Summary, j.Swept = o.tail, o.summary, r.Swept
		if j.Worktree != "" {
			j.WorktreeKept = !o.wtRemoved
		}
	})
}

// finish ends the job with ev (and cause as its error).
func (a *jobActor) finish(ctx actor.Context, ev JobEvent, cause error) {
	a.finishWith(ctx, ev, cause, nil)
}

func (a *jobActor) finishWith(ctx actor.Context, ev JobEvent, cause error, edit func(j *messages.Job)) {
	if a.phase == phaseFinal {
		return
	}
	a.releaseLease(ctx)
	now := a.cfg.Now().UTC()
	err := a.transition(ctx, ev, func(j *messages.Job) {
		j.FinishedAt = now
		if !j.StartedAt.IsZero() {
			j.DurationMs = float64(now.Sub(j.StartedAt).Microseconds()) / 1000
		}
		if edit != nil {
			edit(j)
		}
		if j.Worktree != "" && edit == nil {
			j.WorktreeKept = true
		}
		switch {
		case cause != nil:
			e := errs.From(cause)
			j.Error = &messages.JobError{Code: string(e.Code), Message: e.Message}
		case ev == JobEvCancel:
			j.Error = &messages.JobError{Code: string(errs.Cancelled), Message: "the job was cancelled"}
		}
	})
	if err != nil {
		a.lg.Error("persist final job state", zap.Error(err))
	}
	a.phase = phaseFinal
	for _, w := range a.cancelWaiters {
		if w != nil {
			ctx.Send(w, messages.JobInfo{Job: a.job})
		}
	}
	a.cancelWaiters = nil
	// The parent stops us when it has taken the record over, so requests it
	// forwarded before then are still answered here.
	ctx.Send(ctx.Parent(), jobDone{job: a.job})
}
