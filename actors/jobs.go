package actors

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/cgroup"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/internal/worktree"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Job defaults.
const (
	// DefaultJobGrace is the SIGTERM -> SIGKILL grace of a job's process group.
	DefaultJobGrace = 2 * time.Second
	// DefaultJobLeaseTTL is the TTL of a writing job's durable lease; it is
	// renewed every TTL/3 while the job runs.
	DefaultJobLeaseTTL = 30 * time.Second
	// DefaultWorktreeTTL is how long a failed job's worktree is kept.
	DefaultWorktreeTTL = 24 * time.Hour
	// DefaultJobPidsMax is the pids.max of a job's cgroup.
	DefaultJobPidsMax = 4096
	// MaxJobsKept bounds the finished jobs remembered; the oldest are
	// forgotten (record and logs) at boot beyond it.
	MaxJobsKept = 5000
	// jobLeaseWait is how long a writing job waits for a busy workspace.
	jobLeaseWait = 30 * time.Second
	// jobsTickEvery is the period of the jobs actor's housekeeping tick.
	jobsTickEvery = time.Second
)

// JobsConfig configures the jobs actor. Zero fields mean "use the default".
type JobsConfig struct {
	Store  *persistence.Store
	Index  *RepoIndex
	Logger *zap.Logger
	Now    func() time.Time
	// DataDir holds jobs/<id>/ (logs) and worktrees/<id>/. Required: the
	// runtime gives in-memory harnesses a temp dir of their own.
	DataDir string
	// Concurrency is the number of jobs running at once; 0 = runtime.NumCPU().
	Concurrency int
	// Git runs git for worktrees; nil = a default gitx.Git.
	Git *gitx.Git
	// Cgroups contains job processes; nil = uncontained, Containment says why.
	Cgroups     *cgroup.Manager
	Containment string
	Limits      cgroup.Limits
	Grace       time.Duration // 0 = DefaultJobGrace
	LeaseTTL    time.Duration // 0 = DefaultJobLeaseTTL
	WorktreeTTL time.Duration // 0 = DefaultWorktreeTTL
	// Tasks runs processes, worktree and log I/O and the boot walk; nil =
	// untracked goroutines.
	Tasks *Tasks

	// Confiner confines each job's process (the sandbox's job profile);
	// nil = unconfined.
	Confiner JobConfiner
	// WorktreeSkip names the paths of a checkout its jobs' worktrees must
	// not carry over (its secret files); nil = none.
	WorktreeSkip WorktreeSkipper
	// Audit records each job's start and end (kind job); nil = none. It
	// must not block (the runtime's audit client sends a message).
	Audit func(messages.AuditEntry)
	// AuditDurable records a job's start and returns a wait that answers
	// once the entry is durable: the runner waits for it before the
	// process starts. nil = the start goes through Audit, not waited for.
	AuditDurable func(messages.AuditEntry) func() error
	// Undo keeps the pre-images of what writing jobs change in their
	// checkout and makes their receipts; nil = none.
	Undo JobUndo
	// Write runs the writes of write jobs (on_busy: "durable",
	// job_write.go); nil = a write job fails.
	Write JobWriter
	// Native performs the jobs harnessd does itself instead of a process
	// (git reset --hard, git branch -D, git tag -f; job_native.go); nil =
	// every job runs its argv.
	Native JobNative
	// RunUsage charges the CPU time of a job that ended to the run that
	// started it (Job.CallerRunID), a run budget's cpu_seconds; nil =
	// none. It must not block (the runtime sends a message).
	RunUsage func(runID string, cpuMs int64)

	// childWrap wraps the producer of job actors (tests inject faults).
	childWrap func(actor.Producer) actor.Producer
	// beforeProcess runs on the runner goroutine just before a job's
	// process starts (tests check what is durable by then).
	beforeProcess func(messages.Job)
}

// WorktreeSkipper returns the paths of the checkout at repoRoot that a
// job's worktree must not carry over (slash-separated, relative): a
// dependency of the jobs actor, never part of a message. It runs off the
// actor's goroutine.
type WorktreeSkipper func(ctx context.Context, repoRoot string) (worktree.Skip, error)

// JobConfiner returns the confinement of a job's process that runs in dir:
// a dependency of the jobs actor, never part of a message.
type JobConfiner func(ctx context.Context, j messages.Job, dir string) (JobConfinement, error)

// JobConfinement is how one job's process runs.
type JobConfinement struct {
	Confine  proc.Confiner // nil = unconfined
	PidsMax  int
	Env      []string         // nil = the daemon's, scrubbed
	Redactor *redact.Redactor // nil = the default rules
}

func (c JobsConfig) withDefaults() JobsConfig {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Concurrency <= 0 {
		c.Concurrency = runtime.NumCPU()
	}
	if c.Git == nil {
		c.Git = &gitx.Git{}
	}
	if c.Grace <= 0 {
		c.Grace = DefaultJobGrace
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultJobLeaseTTL
	}
	if c.WorktreeTTL <= 0 {
		c.WorktreeTTL = DefaultWorktreeTTL
	}
	if c.Containment == "" {
		c.Containment = c.Cgroups.Status()
	}
	return c
}

// Messages between the jobs actor and its job children.
type (
	jobRun    struct{}                   // parent -> child: a run slot is yours
	jobUpdate struct{ job messages.Job } // child -> parent: the record changed
	jobDone   struct{ job messages.Job } // child -> parent: final; the child stops
	jobGone   struct{ id string }        // child -> parent: no record; forget it
	// jobHello is sent by every child instance once it loaded its record:
	// a restarted child in state queued whose slot the parent had handed
	// out gets it again.
	jobHello struct {
		id    string
		state string
	}
	wtAcquire struct {
		repoID string
		pid    *actor.PID
	} // child -> parent: may I create a worktree?
	wtGranted     struct{}                // parent -> child
	wtRelease     struct{ repoID string } // child -> parent: done creating
	jobsTick      struct{}                // housekeeping
	jobsWTRemoved struct{ ids []string }  // kept worktrees removed
	// jobsLoaded reports the load walk of Started (see load).
	jobsLoaded struct {
		jobs    []messages.Job
		release []messages.Job // interrupted jobs whose durable lease is to be released
		expired []messages.Job // kept worktrees past their TTL
		err     error
	}
)

// stashed is a request that arrived while the jobs were loading.
type stashed struct {
	msg    any
	sender *actor.PID
}

// Jobs is the jobs supervisor actor: it owns the bounded, fair run queue,
// spawns one job-<id> child per live job, restores every job at start and
// serialises worktree creation per repository.
//
// Started loads the jobs in a goroutine (a walk of the store, the
// interruption of jobs a crash left running, the sweep of their leftover
// processes, old logs removed); requests that arrive meanwhile are stashed
// and handled, in order, once it reports. The same load runs at boot and
// after a crash of this actor (whose children a restart stops).
type Jobs struct {
	cfg     JobsConfig
	lg      *zap.Logger
	logRoot string
	wtRoot  string

	loading bool
	stash   []stashed
	// startReleases counts the releases of interrupted jobs' leases sent
	// by the load (holding is set while it sends them): requests stay
	// stashed until they are answered, so nobody hears of an interrupted
	// job before its lease let its keys go.
	startReleases int
	holding       bool

	jobs        map[string]*messages.Job
	kids        map[string]*actor.PID
	dispatched  map[string]bool
	queue       *JobQueue
	running     int
	maxObserved int

	wtBusy    map[string]bool
	wtWaiters map[string][]*actor.PID

	pendingRelease map[string]messages.Job // job id -> job whose durable lease is to be released
	ticker         *ticker
}

// NewJobs returns the producer of the jobs actor.
func NewJobs(cfg JobsConfig) actor.Producer {
	cfg = cfg.withDefaults()
	return func() actor.Actor { return &Jobs{cfg: cfg, lg: cfg.Logger.With(zap.String("actor", "jobs"))} }
}

// Receive dispatches the jobs actor's messages.
func (a *Jobs) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start(ctx)
	case jobsLoaded:
		a.loaded(ctx, m)
	case messages.JobSubmit, messages.JobGet, messages.JobCancel, messages.JobList, messages.JobStats, messages.JobClean:
		if a.loading || a.startReleases > 0 {
			a.stash = append(a.stash, stashed{msg: m, sender: ctx.Sender()})
			return
		}
		a.request(ctx, m)
	case jobHello:
		if m.state == messages.JobQueued && a.dispatched[m.id] {
			if pid, ok := a.kids[m.id]; ok {
				ctx.Send(pid, jobRun{})
			}
		}
	case jobUpdate:
		j := m.job
		a.jobs[j.ID] = &j
	case jobDone:
		a.done(ctx, m.job)
	case jobGone:
		if pid, ok := a.kids[m.id]; ok {
			ctx.Poison(pid)
		}
		a.forgetLive(m.id)
		delete(a.jobs, m.id)
		a.schedule(ctx)
	case wtAcquire:
		a.wtAcquire(ctx, m.repoID, m.pid)
	case wtRelease:
		a.wtRelease(ctx, m.repoID)
	case jobsTick:
		a.releasePending(ctx)
	case jobsWTRemoved:
		a.worktreesRemoved(m.ids)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping, *actor.Restarting:
		a.ticker.stop()
		a.ticker = nil
		for _, s := range a.stash {
			if s.sender != nil {
				ctx.Send(s.sender, Failure(errs.New(errs.Unavailable, "jobs are shutting down")))
			}
		}
		a.stash = nil
	}
}

// request handles one request of a caller.
func (a *Jobs) request(ctx actor.Context, msg any) {
	switch m := msg.(type) {
	case messages.JobSubmit:
		a.submit(ctx, m)
	case messages.JobGet:
		a.get(ctx, m.ID)
	case messages.JobCancel:
		a.cancel(ctx, m.ID)
	case messages.JobList:
		ctx.Respond(messages.JobListReply{Jobs: a.list(m)})
	case messages.JobStats:
		ctx.Respond(a.stats())
	case messages.JobClean:
		a.clean(ctx, m.Before)
	}
}

// JobLogRoot returns where job logs of a data dir live.
func JobLogRoot(dataDir string) string { return filepath.Join(dataDir, "jobs") }

func (a *Jobs) start(ctx actor.Context) {
	a.jobs = map[string]*messages.Job{}
	a.kids = map[string]*actor.PID{}
	a.dispatched = map[string]bool{}
	a.queue = NewJobQueue()
	a.running, a.maxObserved = 0, 0
	a.wtBusy = map[string]bool{}
	a.wtWaiters = map[string][]*actor.PID{}
	a.pendingRelease = map[string]messages.Job{}
	a.logRoot = JobLogRoot(a.cfg.DataDir)
	a.wtRoot = filepath.Join(a.cfg.DataDir, "worktrees")
	a.loading, a.stash, a.startReleases = true, nil, 0
	a.ticker = startTicker(ctx, jobsTickEvery, func() any { return jobsTick{} })
	self, root, cfg, logRoot := ctx.Self(), ctx.ActorSystem().Root, a.cfg, a.logRoot
	a.cfg.Tasks.Go(func() { root.Send(self, loadJobs(cfg, logRoot, a.lg)) })
}

// loadJobs is the load walk of Started, run outside the actor: every job is
// read; live ones are interrupted (their leftover processes killed, their
// leases queued for release) and queued again when they have retries left;
// the oldest finished ones beyond MaxJobsKept are forgotten.
func loadJobs(cfg JobsConfig, logRoot string, lg *zap.Logger) jobsLoaded {
	if err := os.MkdirAll(logRoot, 0o700); err != nil {
		return jobsLoaded{err: err}
	}
	var all []messages.Job
	err := cfg.Store.Scan([]byte(persistence.PrefixJob), func(_ []byte, decode func(any) error) error {
		var j messages.Job
		if err := decode(&j); err != nil {
			lg.Warn("skip undecodable job record", zap.Error(err))
			return nil
		}
		all = append(all, j)
		return nil
	})
	if err != nil {
		return jobsLoaded{err: err}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].CreatedAt.Before(all[j].CreatedAt) })
	all = pruneOldJobs(cfg, logRoot, lg, all)
	now := cfg.Now()
	var out jobsLoaded
	live := map[string]bool{}
	for _, j := range all {
		if j.State == messages.JobRunning {
			if j.RunID != "" {
				if n := proc.SweepMarked(j.RunID, 0); n > 0 {
					lg.Info("killed leftover processes of an interrupted job", zap.String("job_id", j.ID), zap.Int("processes", n))
				}
			}
			if undoes(cfg, j) && !j.StartedAt.IsZero() {
				// Its processes are dead, its lease not yet released:
				// what it changed is its receipt.
				if id, _ := jobReceipt(cfg.Undo, lg, j); id != "" {
					j.ReceiptID = id
				}
			}
			j = interruptJob(cfg, lg, j, now)
			if j.LeaseID != "" {
				out.release = append(out.release, j)
			}
			if j.RetryMax > 0 && j.Attempt <= j.RetryMax {
				if nj, err := retryJob(cfg, j); err != nil {
					lg.Error("requeue interrupted job", zap.String("job_id", j.ID), zap.Error(err))
				} else {
					j = nj
				}
			}
		} else if releaseDue(j) {
			out.release = append(out.release, j)
		}
		if j.State == messages.JobQueued {
			live[j.ID] = true
		}
		if j.WorktreeKept && !j.FinishedAt.IsZero() && now.Sub(j.FinishedAt) > cfg.WorktreeTTL {
			out.expired = append(out.expired, j)
		}
		out.jobs = append(out.jobs, j)
	}
	if cfg.Cgroups != nil {
		if err := cfg.Cgroups.Cleanup(func(id string) bool { return live[id] }); err != nil {
			lg.Warn("clean up job cgroups", zap.Error(err))
		}
	}
	return out
}

// loaded takes the load walk over, then handles the stashed requests.
func (a *Jobs) loaded(ctx actor.Context, m jobsLoaded) {
	if m.err != nil {
		// A store we cannot read is a broken invariant: crash and let the
		// supervisor decide.
		panic("jobs: load: " + m.err.Error())
	}
	a.loading = false
	for _, j := range m.jobs {
		jj := j
		a.jobs[j.ID] = &jj
		if j.State == messages.JobQueued {
			a.spawn(ctx, j)
			a.enqueue(ctx, j)
		}
	}
	for _, j := range m.release {
		a.pendingRelease[j.ID] = j
	}
	a.holding = true
	a.releasePending(ctx)
	a.holding = false
	if len(m.expired) > 0 {
		a.removeWorktrees(ctx, m.expired, nil)
	}
	a.schedule(ctx)
	if a.startReleases == 0 {
		a.drainStash(ctx)
	}
}

// drainStash handles the stashed requests, in order.
func (a *Jobs) drainStash(ctx actor.Context) {
	stash := a.stash
	a.stash = nil
	for _, s := range stash {
		a.requestAs(ctx, s)
	}
}

// requestAs handles a stashed request as if it came now from its sender.
func (a *Jobs) requestAs(ctx actor.Context, s stashed) {
	if s.sender == nil {
		ctx.Send(ctx.Self(), s.msg)
		return
	}
	ctx.RequestWithCustomSender(ctx.Self(), s.msg, s.sender)
}

// pruneOldJobs forgets the oldest finished jobs beyond MaxJobsKept.
func pruneOldJobs(cfg JobsConfig, logRoot string, lg *zap.Logger, all []messages.Job) []messages.Job {
	extra := len(all) - MaxJobsKept
	if extra <= 0 {
		return all
	}
	kept := all[:0]
	for _, j := range all {
		if extra > 0 && JobFinal(j.State) && !j.WorktreeKept {
			extra--
			if err := cfg.Store.Delete(persistence.JobKey(j.ID)); err != nil {
				lg.Warn("forget old job", zap.String("job_id", j.ID), zap.Error(err))
			}
			if j.LogDir != "" && filepath.Dir(j.LogDir) == logRoot {
				_ = os.RemoveAll(j.LogDir)
			}
			continue
		}
		kept = append(kept, j)
	}
	return kept
}

// interruptJob persists a live job as interrupted.
func interruptJob(cfg JobsConfig, lg *zap.Logger, j messages.Job, now time.Time) messages.Job {
	next, err := JobTransition(j.State, JobEvInterrupt)
	if err != nil {
		return j
	}
	j.State = next
	j.FinishedAt = now.UTC()
	if !j.StartedAt.IsZero() {
		j.DurationMs = float64(now.Sub(j.StartedAt).Microseconds()) / 1000
	}
	j.Error = &messages.JobError{Code: string(errs.Unavailable), Message: "harnessd restarted while the job was running; its processes were killed"}
	if j.Worktree != "" {
		j.WorktreeKept = true
	}
	if j.LeaseID != "" {
		j.LeaseReleaseState = messages.LeaseReleasePending // released by loaded, recorded
	}
	if err := cfg.Store.PutSync(persistence.JobKey(j.ID), j); err != nil {
		lg.Error("persist interrupted job", zap.String("job_id", j.ID), zap.Error(err))
	}
	return j
}

// retryJob queues an interrupted job again as a new attempt.
func retryJob(cfg JobsConfig, j messages.Job) (messages.Job, error) {
	next, err := JobTransition(j.State, JobEvRetry)
	if err != nil {
		return j, err
	}
	n := j
	n.State = next
	n.Attempt++
	n.StartedAt, n.FinishedAt = time.Time{}, time.Time{}
	n.Pid, n.RunID, n.ExitCode, n.Signal, n.DurationMs, n.TimedOut = 0, "", nil, "", 0, false
	n.Worktree, n.WorktreeKept, n.LeaseID, n.Cgroup = "", false, "", ""
	n.LeaseReleaseState, n.LeaseReleaseFailure = "", nil
	n.StdoutBytes, n.StderrBytes, n.Redactions, n.Summary, n.Tail, n.Error, n.Swept = 0, 0, 0, nil, "", nil, 0
	if err := cfg.Store.PutSync(persistence.JobKey(n.ID), n); err != nil {
		return j, err
	}
	return n, nil
}

// releasePending releases the durable leases whose release was pending at
// start-up (interrupted jobs, failed releases) once their checkout is
// known (the registry may publish it after we start); each answer is
// recorded in the job's record (job_release.go).
func (a *Jobs) releasePending(ctx actor.Context) {
	for id, j := range a.pendingRelease {
		if a.releaseAtStart(ctx, j) {
			delete(a.pendingRelease, id)
		}
	}
}

// spawn starts the child of a job whose record is in the store. The
// producer captures only the id: every instance loads the record itself.
func (a *Jobs) spawn(ctx actor.Context, j messages.Job) *actor.PID {
	cfg, id, wtRoot := &a.cfg, j.ID, a.wtRoot
	var prod actor.Producer = func() actor.Actor { return newJobActor(cfg, id, wtRoot) }
	if a.cfg.childWrap != nil {
		prod = a.cfg.childWrap(prod)
	}
	props := actor.PropsFromProducer(prod, actor.WithReceiverMiddleware(Recover(a.lg)))
	pid, err := ctx.SpawnNamed(props, "job-"+j.ID)
	if err != nil {
		pid = ctx.Spawn(props)
	}
	a.kids[j.ID] = pid
	return pid
}

// submit persists a new queued job with sync (with the records the
// request carries, in one transaction), then starts its child and
// answers: a job is never acknowledged before it is durable.
func (a *Jobs) submit(ctx actor.Context, m messages.JobSubmit) {
	j := m.Job
	if j.Write != nil && a.joinWrite(ctx, &j) {
		return // a retry of the same request: its live job answered
	}
	if j.ID == "" || (len(j.Argv) == 0 && j.Write == nil) {
		reply(ctx, nil, errs.New(errs.InvalidArgument, "job needs an id and an argv"))
		return
	}
	if _, ok := a.jobs[j.ID]; ok {
		reply(ctx, nil, errs.New(errs.InvalidArgument, "job %s already exists", j.ID))
		return
	}
	j.State = messages.JobQueued
	j.Attempt = 1
	if j.CreatedAt.IsZero() {
		j.CreatedAt = a.cfg.Now().UTC()
	}
	if j.Isolation == "" {
		j.Isolation = messages.JobIsolationNone
	}
	j.LogDir = filepath.Join(a.logRoot, j.ID)
	err := a.cfg.Store.Update(true, func(tx *persistence.Txn) error {
		if err := tx.Put(persistence.JobKey(j.ID), j); err != nil {
			return err
		}
		for _, r := range m.With {
			if err := tx.PutEncoded(r.Key, r.Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		reply(ctx, nil, errs.Wrap(errs.Internal, err, "persist job: %v", err))
		return
	}
	a.jobs[j.ID] = &j
	a.spawn(ctx, j)
	a.enqueue(ctx, j)
	ctx.Respond(messages.JobInfo{Job: j})
	a.schedule(ctx)
}
func (a *Jobs) get(ctx actor.Context, id string) {
	if pid, ok := a.kids[id]; ok {
		ctx.Forward(pid) // live: the child adds its output counters
		return
	}
	j, ok := a.jobs[id]
	if !ok {
		reply(ctx, nil, errs.New(errs.NotFound, "no job %q", id).With("job_id", id))
		return
	}
	ctx.Respond(messages.JobInfo{Job: *j})
}

func (a *Jobs) cancel(ctx actor.Context, id string) {
	pid, live := a.kids[id]
	if !live {
		a.get(ctx, id)
		return
	}
	if !a.dispatched[id] {
		a.queue.Remove(id)
	}
	ctx.Forward(pid)
}

func (a *Jobs) list(m messages.JobList) []messages.Job {
	limit := m.Limit
	if limit <= 0 {
		limit = 50
	}
	out := make([]messages.Job, 0, min(limit, len(a.jobs)))
	all := make([]*messages.Job, 0, len(a.jobs))
	for _, j := range a.jobs {
		if (m.RepoID == "" || j.RepoID == m.RepoID) && (m.State == "" || j.State == m.State) {
			all = append(all, j)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.After(all[j].CreatedAt)
		}
		return all[i].ID > all[j].ID
	})
	for _, j := range all {
		if len(out) == limit {
			break
		}
		out = append(out, *j)
	}
	return out
}

func (a *Jobs) stats() messages.JobStatsReply {
	return messages.JobStatsReply{
		Queued: a.queue.Len(), Running: a.running, Concurrency: a.cfg.Concurrency, MaxObserved: a.maxObserved,
		Total: len(a.jobs), Containment: a.cfg.Containment, Contained: a.cfg.Cgroups != nil, LogDir: a.logRoot,
		Ended: endedResources(a.jobs),
	}
}

// schedule hands free run slots to queued jobs, fairly across repositories.
func (a *Jobs) schedule(ctx actor.Context) {
	for a.running < a.cfg.Concurrency {
		_, id, ok := a.queue.Pop(nil)
		if !ok {
			return
		}
		pid, live := a.kids[id]
		if !live {
			continue
		}
		a.dispatched[id] = true
		a.running++
		a.maxObserved = max(a.maxObserved, a.running)
		ctx.Send(pid, jobRun{})
	}
}

func (a *Jobs) forgetLive(id string) {
	if a.dispatched[id] {
		if a.slotHeld(id) {
			a.running--
		}
		delete(a.dispatched, id)
	} else {
		a.queue.Remove(id)
	}
	delete(a.kids, id)
}

func (a *Jobs) done(ctx actor.Context, j messages.Job) {
	if pid, ok := a.kids[j.ID]; ok {
		ctx.Poison(pid)
	}
	a.forgetLive(j.ID)
	a.jobs[j.ID] = &j
	a.schedule(ctx)
}

func (a *Jobs) wtAcquire(ctx actor.Context, repoID string, pid *actor.PID) {
	if a.wtBusy[repoID] {
		a.wtWaiters[repoID] = append(a.wtWaiters[repoID], pid)
		return
	}
	a.wtBusy[repoID] = true
	ctx.Send(pid, wtGranted{})
}

func (a *Jobs) wtRelease(ctx actor.Context, repoID string) {
	if w := a.wtWaiters[repoID]; len(w) > 0 {
		next := w[0]
		if len(w) == 1 {
			delete(a.wtWaiters, repoID)
		} else {
			a.wtWaiters[repoID] = w[1:]
		}
		ctx.Send(next, wtGranted{})
		return
	}
	delete(a.wtBusy, repoID)
}

func (a *Jobs) clean(ctx actor.Context, before time.Time) {
	var victims []messages.Job
	for _, j := range a.jobs {
		if j.WorktreeKept && JobFinal(j.State) && (before.IsZero() || j.FinishedAt.Before(before)) {
			victims = append(victims, *j)
		}
	}
	a.removeWorktrees(ctx, victims, ctx.Sender())
}

// removeWorktrees removes kept worktrees in the background and answers
// JobCleaned to sender (when not nil).
func (a *Jobs) removeWorktrees(ctx actor.Context, victims []messages.Job, sender *actor.PID) {
	self, root, g, lg := ctx.Self(), ctx.ActorSystem().Root, a.cfg.Git, a.lg
	a.cfg.Tasks.Go(func() {
		removed := []string{}
		var ids []string
		for _, j := range victims {
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := worktree.Remove(rctx, g, j.Root, j.Worktree)
			cancel()
			if err != nil {
				if _, serr := os.Stat(j.Worktree); serr == nil {
					lg.Warn("remove kept worktree", zap.String("job_id", j.ID), zap.Error(err))
					continue
				}
			}
			removed = append(removed, j.Worktree)
			ids = append(ids, j.ID)
		}
		root.Send(self, jobsWTRemoved{ids: ids})
		if sender != nil {
			root.Send(sender, messages.JobCleaned{Removed: removed})
		}
	})
}

func (a *Jobs) worktreesRemoved(ids []string) {
	for _, id := range ids {
		j, ok := a.jobs[id]
		if !ok {
			continue
		}
		c := *j
		c.WorktreeKept = false
		if err := a.cfg.Store.PutSync(persistence.JobKey(id), c); err != nil {
			a.lg.Warn("persist cleaned job", zap.String("job_id", id), zap.Error(err))
			continue
		}
		a.jobs[id] = &c
	}
}
