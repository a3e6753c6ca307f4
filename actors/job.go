package actors

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/cgroup"
	"github.com/harnessd/harnessd/internal/joblog"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/procstat"
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

// Messages a job actor sends itself (from its goroutines and timers).
type (
	jobLeaseTick    struct{}
	jobLeaseTimeout struct{}
	jobWorktreeMade struct {
		wt  worktree.Worktree
		err error
	}
	// jobProcStarted reports the start of the process. A restarted
	// instance that receives it adopts the process its predecessor started.
	jobProcStarted struct {
		p      *proc.Process
		logs   *jobLogs
		cgroup string
		err    error
	}
	// jobAdopt hands a running process from an instance that is being
	// restarted to its successor (sent to itself on Restarting).
	jobAdopt struct {
		p    *proc.Process
		logs *jobLogs
	}
	jobProcExited struct{ out jobOutcome }
	// jobStoreFinal retries storing a final state the store refused.
	jobStoreFinal struct{}
)

// The backoff of storing a job's final state the store refused: from
// finalRetryFirst, doubling, at most finalRetryMax apart.
const (
	finalRetryFirst = 250 * time.Millisecond
	finalRetryMax   = 30 * time.Second
)

// nextFinalRetry is the wait after one of delay: doubled, within the bounds.
func nextFinalRetry(delay time.Duration) time.Duration {
	if delay <= 0 {
		return finalRetryFirst
	}
	return min(2*delay, finalRetryMax)
}

// jobLogs are the log writers of a running process (safe for concurrent
// use: the runner goroutine writes, the actor reads the counters).
type jobLogs struct {
	stdout, stderr *joblog.Writer
	usage          *procstat.Sampler // the process tree's figures
}

// jobOutcome is what the runner goroutine learned after the process ended.
type jobOutcome struct {
	res        proc.Result
	stdout     int64
	stderr     int64
	redactions int
	tail       string
	summary    []string
	wtRemoved  bool
	receiptID  string // the job's receipt (JobsConfig.Undo)
	err        error  // why the work harnessd performs itself failed (JobsConfig.Native)
	resources  messages.Resources
}

// jobActor is one durable job: a persisted state machine. Every transition
// is written with PutSync before anyone hears of it. Its producer knows only
// the job's id: every instance loads the record on Started, so an instance
// that replaces one that panicked carries on from the stored state.
//
// Reconciliation after a restart:
//   - queued: it tells the parent (jobHello); a parent that had handed it
//     a run slot hands it again.
//   - running: it adopts the process. The runner goroutine of its
//     predecessor keeps waiting on the process and reports its start and
//     exit to the same PID; on Restarting the predecessor also hands its
//     process handle over (jobAdopt). A cancel without a handle kills the
//     process tree by its run marker.
//   - final: it reports to the parent, which stops it.
type jobActor struct {
	cfg    *JobsConfig
	id     string
	wtRoot string
	lg     *zap.Logger

	job        messages.Job
	phase      jobPhase
	dispatched bool

	cancelReq     bool
	cancelWaiters []*actor.PID

	checkout *actor.PID
	p        *proc.Process
	logs     *jobLogs
	failErr  *messages.JobError

	runCtx      context.Context
	runCancel   context.CancelFunc
	leaseTicker *ticker
	leaseTimer  *time.Timer

	// unstored: the job is final but the store refused its final state;
	// it is kept here (job_status answers it) and stored again with
	// backoff (finalTimer, finalDelay, finalTries); the parent stops
	// this actor only once it is stored.
	unstored   bool
	finalTimer *time.Timer
	finalDelay time.Duration
	finalTries int

	// releasing: the lease's Release awaits its answer (job_release.go);
	// the parent hears jobDone only after it.
	releasing bool
}

func newJobActor(cfg *JobsConfig, id, wtRoot string) *jobActor {
	return &jobActor{cfg: cfg, id: id, wtRoot: wtRoot, lg: cfg.Logger.With(zap.String("actor", "job"), zap.String("job_id", id))}
}

// Receive dispatches a job's messages.
func (a *jobActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start(ctx)
	case messages.JobGet:
		ctx.Respond(messages.JobInfo{Job: a.live()})
	case messages.JobCancel:
		a.cancel(ctx)
	case jobRun:
		if a.dispatched || a.phase != phaseQueued {
			return // a slot handed twice (the parent answered our hello)
		}
		a.dispatched = true
		a.prepare(ctx)
	case messages.Acquired:
		a.leaseGranted(ctx, m.Lease)
	case messages.Failed:
		a.requestFailed(ctx, m)
	case messages.Renewed, messages.Released:
	case messages.LeaseLost: // the lease actor saw it expire: abort now
		if m.LeaseID == a.job.LeaseID {
			a.requestFailed(ctx, messages.Failed{Code: string(errs.LeaseLost), Message: "lease " + m.LeaseID + " expired before it was renewed"})
		}
	case jobLeaseTimeout:
		if a.phase == phaseLeasing {
			a.finish(ctx, JobEvFail, errs.New(errs.Timeout, "the workspace lease for a writing job did not come within %s", jobLeaseWait))
		}
	case jobLeaseTick:
		a.renew(ctx)
	case wtGranted:
		a.makeWorktree(ctx)
	case jobWorktreeMade:
		a.worktreeMade(ctx, m)
	case jobProcStarted:
		a.procStarted(ctx, m)
	case jobAdopt:
		if a.p == nil && a.phase != phaseFinal {
			a.p, a.logs = m.p, m.logs
			if a.cancelReq || a.failErr != nil {
				a.stopProcess()
			}
		}
	case jobProcExited:
		a.procExited(ctx, m.out)
	case jobStoreFinal:
		a.storeFinal(ctx)
	case jobWriteLeased:
		a.writeLeased(ctx)
	case jobWriteDone:
		a.writeDone(ctx, m.out)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Restarting:
		// The process goes on: the successor adopts it. Only the timers of
		// this instance end.
		a.stopTimers()
		if a.p != nil {
			ctx.Send(ctx.Self(), jobAdopt{p: a.p, logs: a.logs})
		}
	case *actor.Stopping:
		a.stopTimers()
		a.lastStoreFinal()
		if a.runCancel != nil {
			a.runCancel()
		}
		if a.p != nil {
			a.p.Cancel()
		}
	}
}

// start loads the record and reconciles with the parent.
func (a *jobActor) start(ctx actor.Context) {
	a.runCtx, a.runCancel = context.WithCancel(context.Background())
	var j messages.Job
	if err := a.cfg.Store.Get(persistence.JobKey(a.id), &j); err != nil {
		a.lg.Error("job record is missing; forgetting the job", zap.Error(err))
		ctx.Send(ctx.Parent(), jobGone{id: a.id})
		return
	}
	a.job = j
	switch j.State {
	case messages.JobQueued:
		a.phase = phaseQueued
	case messages.JobRunning:
		a.phase = phaseRunning
		if j.LeaseID != "" {
			if e, ok := a.cfg.Index.Lookup(j.RepoID); ok {
				a.checkout = e.Checkout
				a.startLeaseTicker(ctx)
				// Renewed at once: an adopted job whose lease expired
				// (fenced out meanwhile) hears LEASE_LOST and is killed
				// now, not a third of a TTL later.
				a.renew(ctx)
			}
		}
	default:
		a.phase = phaseFinal
		ctx.Send(ctx.Parent(), jobDone{job: a.job})
		return
	}
	ctx.Send(ctx.Parent(), jobHello{id: a.id, state: j.State})
}

func (a *jobActor) stopTimers() {
	a.stopLeaseTicker()
	if a.leaseTimer != nil {
		a.leaseTimer.Stop()
		a.leaseTimer = nil
	}
	if a.finalTimer != nil {
		a.finalTimer.Stop()
		a.finalTimer = nil
	}
}

func (a *jobActor) persist() error {
	return a.cfg.Store.PutSync(persistence.JobKey(a.job.ID), a.job)
}

// live returns the record with the output counters of a running process.
func (a *jobActor) live() messages.Job {
	j := a.job
	if a.logs != nil && a.phase == phaseRunning {
		j.StdoutBytes, j.StderrBytes = a.logs.stdout.Written(), a.logs.stderr.Written()
		j.Redactions = a.logs.stdout.Redactions() + a.logs.stderr.Redactions()
		j.Resources = liveResources(a.logs.usage)
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
	if a.job.Write != nil && a.runCancel != nil {
		a.runCancel() // ends its wait for the lease; a write that holds it runs to its end
	}
	switch {
	case a.p != nil:
		a.p.Cancel()
	case a.phase == phaseRunning && a.job.RunID != "":
		// Adopted without a handle: kill the tree by its run marker; the
		// runner goroutine then reports the exit.
		runID := a.job.RunID
		a.cfg.Tasks.Go(func() { proc.SweepMarked(runID, 0) })
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
	case a.job.Write != nil:
		a.startWrite(ctx) // job_write.go
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
		// The answer (Acquired or Failed) comes back as a message.
		ctx.Request(a.checkout, messages.Acquire{
			Owner: a.job.ID, Operation: JobLeaseOperation, Keys: []string{key},
			TTL: a.cfg.LeaseTTL, Visibility: "durable", Wait: jobLeaseWait, RunID: a.job.CallerRunID, NotifyLost: true,
		})
		self, root := ctx.Self(), ctx.ActorSystem().Root
		a.leaseTimer = time.AfterFunc(jobLeaseWait+10*time.Second, func() { root.Send(self, jobLeaseTimeout{}) })
	default:
		a.startProcess(ctx, a.job.Root)
	}
}

func (a *jobActor) leaseGranted(ctx actor.Context, l messages.LeaseInfo) {
	if a.phase != phaseLeasing || a.job.LeaseID != "" {
		// Not waiting for one (a grant to a request of a predecessor, or
		// after a timeout): give it back.
		if from := ctx.Sender(); from != nil {
			ctx.Request(from, messages.Release{LeaseID: l.ID})
		}
		return
	}
	if a.leaseTimer != nil {
		a.leaseTimer.Stop()
		a.leaseTimer = nil
	}
	a.job.LeaseID = l.ID
	a.startLeaseTicker(ctx)
	if a.cancelReq {
		a.finish(ctx, JobEvCancel, nil)
		return
	}
	a.startProcess(ctx, a.job.Root)
}

// requestFailed handles a Failed answer of the checkout: to the lease
// request while leasing, or to a renewal.
func (a *jobActor) requestFailed(ctx actor.Context, f messages.Failed) {
	err := ErrorOf(f)
	switch {
	case a.phase == phaseLeasing:
		if a.leaseTimer != nil {
			a.leaseTimer.Stop()
			a.leaseTimer = nil
		}
		a.finish(ctx, JobEvFail, errs.Wrap(errs.CodeOf(err), err, "workspace lease for a writing job: %v", errs.From(err).Message))
	case errs.CodeOf(err) == errs.LeaseLost && a.phase != phaseFinal && a.job.LeaseID != "":
		// The lease's actor keeps the keys until this job's processes are
		// dead: they are killed now, without a grace, and the Release
		// sent once the runner saw them exit (finishWith) confirms it.
		if a.failErr == nil {
			a.lg.Warn("writing job lost its workspace lease; killing its processes before the lease goes to anyone else")
			a.failErr = &messages.JobError{Code: string(errs.LeaseLost), Message: "the job's workspace lease was lost: " + f.Message}
		}
		a.stopLeaseTicker()
		a.stopProcess()
	case errs.CodeOf(err) == errs.LeaseLost && a.phase == phaseFinal && a.job.LeaseID != "" && a.checkout != nil:
		// A reminder of a lease whose Release was not heard: the
		// processes are dead, say so again.
		ctx.Request(a.checkout, messages.Release{LeaseID: a.job.LeaseID})
	}
}

// stopProcess stops the job's process: at once (SIGKILL to its group, the
// kill sequence then sweeps what left it) when the job lost its lease,
// else through the kill sequence with its grace. A process adopted without
// a handle is killed by its run marker.
func (a *jobActor) stopProcess() {
	lost := a.failErr != nil && a.failErr.Code == string(errs.LeaseLost)
	switch {
	case a.p != nil:
		if lost {
			_ = a.p.Signal(syscall.SIGKILL)
		}
		a.p.Cancel()
	case lost && a.phase == phaseRunning && a.job.RunID != "":
		runID := a.job.RunID
		a.cfg.Tasks.Go(func() { proc.SweepMarked(runID, 0) })
	}
}

func (a *jobActor) startLeaseTicker(ctx actor.Context) {
	a.stopLeaseTicker()
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
	ctx.Request(a.checkout, messages.Renew{LeaseID: a.job.LeaseID, NotifyLost: true})
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
	skipper := a.cfg.WorktreeSkip
	a.cfg.Tasks.Go(func() {
		var skip worktree.Skip
		if skipper != nil {
			var err error
			if skip, err = skipper(rctx, repoRoot); err != nil {
				root.Send(self, jobWorktreeMade{err: errs.Wrap(errs.CodeOf(err), err, "find the secret files not to copy: %v", errs.From(err).Message)})
				return
			}
		}
		wt, err := worktree.CreateSkipping(rctx, g, repoRoot, dest, skip)
		root.Send(self, jobWorktreeMade{wt: wt, err: err})
	})
}

func (a *jobActor) worktreeMade(ctx actor.Context, m jobWorktreeMade) {
	ctx.Send(ctx.Parent(), wtRelease{repoID: a.job.RepoID})
	if a.phase != phaseWorktree {
		return
	}
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
	mu  sync.Mutex // protects buf
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

// startProcess persists the running state and hands the process to a
// runner goroutine: it creates the logs and the cgroup, starts the
// process, reports the start, waits, cleans up and reports the exit. No
// file or process I/O happens in Receive.
func (a *jobActor) startProcess(ctx actor.Context, base string) {
	dir := base
	if a.job.Cwd != "" {
		dir = filepath.Join(base, filepath.FromSlash(a.job.Cwd))
	}
	if err := a.transition(ctx, JobEvStart, func(j *messages.Job) { j.StartedAt = a.cfg.Now().UTC() }); err != nil {
		a.finish(ctx, JobEvFail, err)
		return
	}
	a.phase = phaseStarting
	spec := proc.Spec{
		Argv:    append([]string(nil), a.job.Argv...),
		Dir:     dir,
		Timeout: time.Duration(a.job.TimeoutS) * time.Second,
		Grace:   a.cfg.Grace,
	}
	// The start is audited durably before the process exists (the job's
	// record says running already): a kill at any point leaves no job that
	// ran without its audit entry. The runner waits for the entry, off
	// the actor's goroutine.
	durable := a.auditDurable("started", "", nil)
	self, root := ctx.Self(), ctx.ActorSystem().Root
	rctx, job, cfg := a.runCtx, a.job, a.cfg
	a.cfg.Tasks.Go(func() {
		send := func(m any) { root.Send(self, m) }
		if err := durable(); err != nil {
			send(jobProcStarted{err: errs.Wrap(errs.CodeOf(err), err, "record the job's start in the audit log (its process was not started): %v", errs.From(err).Message)})
			return
		}
		runJobProcess(rctx, cfg, job, spec, send)
	})
}

// runJobProcess is the runner goroutine of one attempt (see startProcess).
func runJobProcess(ctx context.Context, cfg *JobsConfig, job messages.Job, spec proc.Spec, send func(any)) {
	undo := undoes(*cfg, job)
	if undo {
		if err := cfg.Undo.Before(ctx, job); err != nil {
			send(jobProcStarted{err: err}) // never run without its undo
			return
		}
	}
	if cfg.Native != nil && cfg.Native.Performs(job) {
		runNative(ctx, cfg, job, undo, send) // job_native.go: no process
		return
	}
	var conf JobConfinement
	if cfg.Confiner != nil {
		var err error
		if conf, err = cfg.Confiner(ctx, job, spec.Dir); err != nil {
			send(jobProcStarted{err: errs.Wrap(errs.CodeOf(err), err, "confine the job: %v", errs.From(err).Message)})
			return
		}
		spec.Confine, spec.PidsMax, spec.Env = conf.Confine, conf.PidsMax, conf.Env
	}
	red := conf.Redactor
	if red == nil {
		red = redact.Default()
	}
	stdout, stderr, err := createJobLogs(job.LogDir, red)
	if err != nil {
		send(jobProcStarted{err: err})
		return
	}
	var group *cgroup.Group
	if cfg.Cgroups != nil {
		if g, gerr := cfg.Cgroups.New(job.ID, cfg.Limits); gerr != nil {
			cfg.Logger.Warn("job runs uncontained: create its cgroup", zap.String("job_id", job.ID), zap.Error(gerr))
		} else {
			group = g
		}
	}
	tail := &tailBuffer{n: JobTailBytes}
	spec.Stdout, spec.Stderr = fanout{stdout, tail}, fanout{stderr, tail}
	if cfg.beforeProcess != nil {
		cfg.beforeProcess(job)
	}
	p, err := proc.Start(ctx, spec)
	if err != nil {
		_ = stdout.Close()
		_ = stderr.Close()
		if group != nil {
			_ = group.Remove()
		}
		if spec.Confine != nil {
			spec.Confine.Done()
		}
		send(jobProcStarted{err: err})
		return
	}
	usage := procstat.Start(p.Pid(), 0) // stopped once the tree is dead (below)
	started := jobProcStarted{p: p, logs: &jobLogs{stdout: stdout, stderr: stderr, usage: usage}}
	if group != nil {
		if err := group.Add(p.Pid()); err != nil {
			cfg.Logger.Warn("add job process to its cgroup", zap.String("job_id", job.ID), zap.Error(err))
		}
		started.cgroup = group.Path()
	}
	send(started)
	var out jobOutcome
	out.res, _ = p.Wait()
	out.resources = finalResources(usage.Stop(), out.res, group)
	_ = stdout.Close()
	_ = stderr.Close()
	out.stdout, out.stderr = stdout.Written(), stderr.Written()
	out.redactions = stdout.Redactions() + stderr.Redactions()
	t, _ := red.String(tail.String())
	out.tail = t
	out.summary = joblog.Summarize(t, joblog.DefaultSummaryLines)
	if group != nil {
		_ = group.Kill()
		_ = group.Remove()
	}
	if undo {
		var failed string
		job.Resources = &out.resources // the receipt carries the final figures
		if out.receiptID, failed = jobReceipt(cfg.Undo, cfg.Logger, job); failed != "" {
			out.summary = append(out.summary, failed)
		}
	}
	if out.res.PidsExceeded {
		out.summary = append([]string{"killed: the job started more processes than its ceiling"}, out.summary...)
	}
	if out.res.ExitCode == 0 && !out.res.TimedOut && !out.res.Cancelled && job.Worktree != "" {
		wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out.wtRemoved = worktree.Remove(wctx, cfg.Git, job.Root, job.Worktree) == nil
		cancel()
	}
	send(jobProcExited{out: out})
}

func (a *jobActor) procStarted(ctx actor.Context, m jobProcStarted) {
	if m.err != nil {
		a.finish(ctx, JobEvFail, errs.Wrap(errs.CodeOf(m.err), m.err, "start %q: %v", a.job.Argv[0], errs.From(m.err).Message))
		return
	}
	a.p, a.logs = m.p, m.logs
	a.phase = phaseRunning
	a.job.Pid, a.job.RunID, a.job.Cgroup = m.p.Pid(), m.p.RunID(), m.cgroup
	if err := a.persist(); err != nil {
		a.lg.Error("persist job pid", zap.Error(err))
	}
	ctx.Send(ctx.Parent(), jobUpdate{job: a.job})
	if a.cancelReq || a.failErr != nil {
		a.stopProcess()
	}
}

// audit records an event of the job (kind job): its argv is there only as
// the program's name, its input as the request's id.
func (a *jobActor) audit(outcome, code string, details map[string]string) {
	if a.cfg.Audit == nil {
		return
	}
	a.cfg.Audit(a.auditEntry(outcome, code, details))
}

// auditDurable records an event of the job and returns a wait that
// answers once the entry is durable (at once when the jobs actor has no
// durable audit). The wait blocks: call it off the actor's goroutine.
func (a *jobActor) auditDurable(outcome, code string, details map[string]string) func() error {
	switch {
	case a.cfg.AuditDurable != nil:
		return a.cfg.AuditDurable(a.auditEntry(outcome, code, details))
	case a.cfg.Audit != nil:
		a.cfg.Audit(a.auditEntry(outcome, code, details))
	}
	return func() error { return nil }
}

// auditEntry is the audit entry of an event of the job.
func (a *jobActor) auditEntry(outcome, code string, details map[string]string) messages.AuditEntry {
	j := a.job
	d := map[string]string{"job_id": j.ID, "attempt": strconv.Itoa(j.Attempt), "isolation": j.Isolation,
		"writes": strconv.FormatBool(j.Writes), "network": strconv.FormatBool(j.Network)}
	if len(j.Argv) > 0 {
		d["program"] = filepath.Base(j.Argv[0])
	}
	for k, v := range details {
		d[k] = v
	}
	return messages.AuditEntry{Kind: messages.AuditKind(audit.KindJob), Operation: writeJobOperation(j), RepoID: j.RepoID, RequestID: j.RequestID,
		Actor: "daemon", Outcome: outcome, Code: code, Details: d}
}

func (a *jobActor) procExited(ctx actor.Context, o jobOutcome) {
	if a.phase == phaseFinal {
		return
	}
	r := o.res
	ev := JobEvFail
	var cause error
	switch {
	case a.failErr != nil:
		cause = errs.New(errs.Code(a.failErr.Code), "%s", a.failErr.Message)
	case a.cancelReq:
		ev = JobEvCancel
	case o.err != nil:
		cause = o.err
	case r.TimedOut:
		ev = JobEvTimeout
		cause = errs.New(errs.Timeout, "the job ran longer than its timeout of %ds and was killed", a.job.TimeoutS)
	case r.ExitCode == 0 && r.Signal == "":
		ev = JobEvSucceed
	case r.Signal != "":
		cause = errs.New(errs.JobFailed, "the job was killed by signal %s: its logs (job_logs) tell why", r.Signal).With("signal", r.Signal)
	default:
		cause = errs.New(errs.JobFailed, "the job exited with status %d: its logs (job_logs) tell why", r.ExitCode).With("exit_code", r.ExitCode)
	}
	a.finishWith(ctx, ev, cause, func(j *messages.Job) {
		code := r.ExitCode
		j.ExitCode = &code
		j.Signal = r.Signal
		j.DurationMs = r.DurationMs
		j.TimedOut = r.TimedOut
		j.StdoutBytes, j.StderrBytes, j.Redactions = o.stdout, o.stderr, o.redactions
		j.Tail, j.Summary, j.Swept = o.tail, o.summary, r.Swept
		if o.receiptID != "" {
			j.ReceiptID = o.receiptID
		}
		j.Resources = &o.resources
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
	if a.leaseTimer != nil {
		a.leaseTimer.Stop()
		a.leaseTimer = nil
	}
	now := a.cfg.Now().UTC()
	err := a.transitionFinal(ctx, ev, func(j *messages.Job) {
		j.FinishedAt = now
		if !j.StartedAt.IsZero() {
			j.DurationMs = float64(now.Sub(j.StartedAt).Microseconds()) / 1000
		}
		if edit != nil {
			edit(j)
		}
		// Charged before anyone can see the job ended: the run's next
		// call finds its cpu_seconds used (runs.Check).
		if j.CallerRunID != "" && j.Resources != nil && a.cfg.RunUsage != nil {
			a.cfg.RunUsage(j.CallerRunID, j.Resources.CPUMs)
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
	a.p, a.logs = nil, nil
	details := map[string]string{"duration_ms": strconv.FormatFloat(a.job.DurationMs, 'f', 1, 64)}
	if a.job.ExitCode != nil {
		details["exit_code"] = strconv.Itoa(*a.job.ExitCode)
	}
	if a.job.Signal != "" {
		details["signal"] = a.job.Signal
	}
	if a.job.ReceiptID != "" {
		details["receipt_id"] = a.job.ReceiptID
	}
	code := ""
	if a.job.Error != nil {
		code = a.job.Error.Code
	}
	a.audit(a.job.State, code, details)
	for _, w := range a.cancelWaiters {
		if w != nil {
			ctx.Send(w, messages.JobInfo{Job: a.job})
		}
	}
	a.cancelWaiters = nil
	if a.unstored {
		a.scheduleStoreFinal(ctx)
		return
	}
	// The parent stops us when it has taken the record over, so requests it
	// forwarded before then are still answered here.
	a.doneIfSettled(ctx)
}

// transitionFinal moves the job into a final state with ev. Unlike
// transition, a store that refuses the write does not undo it: the
// process has ended, so its outcome is kept in memory (unstored) and
// stored again later; err is then nil. An invalid transition is err.
func (a *jobActor) transitionFinal(ctx actor.Context, ev JobEvent, edit func(j *messages.Job)) error {
	next, err := JobTransition(a.job.State, ev)
	if err != nil {
		return err
	}
	a.job.State = next
	if edit != nil {
		edit(&a.job)
	}
	if err := a.persist(); err != nil {
		a.unstored = true
		a.lg.Error("the job's final state could not be stored; job_status answers it from memory and it is stored again with backoff",
			zap.String("state", a.job.State), zap.Error(err))
	}
	ctx.Send(ctx.Parent(), jobUpdate{job: a.job})
	return nil
}

// scheduleStoreFinal retries storing the final state after the backoff.
func (a *jobActor) scheduleStoreFinal(ctx actor.Context) {
	a.finalDelay = nextFinalRetry(a.finalDelay)
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.finalTimer = time.AfterFunc(a.finalDelay, func() { root.Send(self, jobStoreFinal{}) })
}

// storeFinal tries again to store the final state; once stored the
// parent takes the record over (jobDone) and stops this actor.
func (a *jobActor) storeFinal(ctx actor.Context) {
	if !a.unstored {
		return
	}
	a.finalTries++
	if err := a.persist(); err != nil {
		if a.finalTries%10 == 0 {
			a.lg.Warn("the job's final state still cannot be stored", zap.Int("attempts", a.finalTries), zap.Error(err))
		}
		a.scheduleStoreFinal(ctx)
		return
	}
	a.unstored = false
	a.lg.Info("stored the job's final state", zap.String("state", a.job.State), zap.Int("attempts", a.finalTries))
	a.doneIfSettled(ctx)
}

// lastStoreFinal is the last try at shutdown: what the store still
// refuses is logged, and after the restart the job is interrupted (its
// outcome was never stored; its logs hold what it wrote).
func (a *jobActor) lastStoreFinal() {
	if !a.unstored {
		return
	}
	if err := a.persist(); err != nil {
		exit := ""
		if a.job.ExitCode != nil {
			exit = strconv.Itoa(*a.job.ExitCode)
		}
		a.lg.Error("shutting down with a job's final state not stored: after the restart it shows as interrupted",
			zap.String("state", a.job.State), zap.String("exit_code", exit), zap.Error(err))
		return
	}
	a.unstored = false
}
