package actors

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/cgroup"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/proc"
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
	// DataDir holds jobs/<id>/ (logs) and worktrees/<id>/; "" = a temp dir
	// made at start and removed at stop.
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
	jobGone   struct{ id string }        // child -> parent: the submit failed; forget it
	wtAcquire struct {
		repoID string
		pid    *actor.PID
	} // child -> parent: may I create a worktree?
	wtGranted       struct{}                // parent -> child
	wtRelease       struct{ repoID string } // child -> parent: done creating
	jobsTick        struct{}                // housekeeping
	jobsWTRemoved   struct{ ids []string }  // kept worktrees removed
	jobsSweepResult struct {
		id string
		n  int
	} // a boot sweep finished
)

// Jobs is the jobs supervisor actor: it owns the bounded, fair run queue,
// spawns one job-<id> child per live job, restores every job at start and
// serialises worktree creation per repository.
type Jobs struct {
	cfg      JobsConfig
	lg       *zap.Logger
	logRoot  string
	wtRoot   string
	tempRoot string

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
	wg             sync.WaitGroup
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
	case jobsSweepResult:
		if m.n > 0 {
			a.lg.Info("killed leftover processes of an interrupted job", zap.String("job_id", m.id), zap.Int("processes", m.n))
		}
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		a.ticker.stop()
		a.ticker = nil
	case *actor.Stopped:
		a.wg.Wait()
		if a.tempRoot != "" {
			_ = os.RemoveAll(a.tempRoot)
		}
	}
}

// LogRoot returns where job logs of a data dir live.
func jobLogRoot(dataDir string) string { return filepath.Join(dataDir, "jobs") }

func (a *Jobs) start(ctx actor.Context) {
	a.jobs = map[string]*messages.Job{}
	a.kids = map[string]*actor.PID{}
	a.dispatched = map[string]bool{}
	a.queue = NewJobQueue()
	a.running, a.maxObserved = 0, 0
	a.wtBusy = map[string]bool{}
	a.wtWaiters = map[string][]*actor.PID{}
	a.pendingRelease = map[string]messages.Job{}
	dir := a.cfg.DataDir
	if dir == "" && a.tempRoot == "" {
		t, err := os.MkdirTemp("", "harnessd-jobs-")
		if err != nil {
			panic("jobs: temp dir: " + err.Error())
		}
		a.tempRoot = t
	}
	if dir == "" {
		dir = a.tempRoot
	}
	a.logRoot = jobLogRoot(dir)
	a.wtRoot = filepath.Join(dir, "worktrees")
	if err := os.MkdirAll(a.logRoot, 0o700); err != nil {
		panic("jobs: create log dir: " + err.Error())
	}
	a.restore(ctx)
	a.ticker = startTicker(ctx, jobsTickEvery, func() any { return jobsTick{} })
	a.schedule(ctx)
}

// restore loads every job: live ones are interrupted (their leftover
// processes killed, their leases released) and queued again when they have
// retries left; queued ones are queued again.
func (a *Jobs) restore(ctx actor.Context) {
	var all []messages.Job
	err := a.cfg.Store.Scan([]byte(persistence.PrefixJob), func(_ []byte, decode func(any) error) error {
		var j messages.Job
		if err := decode(&j); err != nil {
			a.lg.Warn("skip undecodable job record", zap.Error(err))
			return nil
		}
		all = append(all, j)
		return nil
	})
	if err != nil {
		panic("jobs: restore: " + err.Error())
	}
	sort.Slice(all, func(i, j int) bool { return all[i].CreatedAt.Before(all[j].CreatedAt) })
	all = a.pruneOld(all)
	now := a.cfg.Now()
	var requeue []messages.Job
	var expired []messages.Job
	for _, j := range all {
		switch j.State {
		case messages.JobRunning:
			if j.RunID != "" {
				a.sweep(ctx, j)
			}
			if j.LeaseID != "" {
				a.pendingRelease[j.ID] = j
			}
			j = a.interrupt(j, now)
			if j.RetryMax > 0 && j.Attempt <= j.RetryMax {
				nj, err := a.retry(j)
				if err != nil {
					a.lg.Error("requeue interrupted job", zap.String("job_id", j.ID), zap.Error(err))
				} else {
					j = nj
					requeue = append(requeue, j)
				}
			}
		case messages.JobQueued:
			requeue = append(requeue, j)
		}
		if j.WorktreeKept && !j.FinishedAt.IsZero() && now.Sub(j.FinishedAt) > a.cfg.WorktreeTTL {
			expired = append(expired, j)
		}
		jj := j
		a.jobs[j.ID] = &jj
	}
	if a.cfg.Cgroups != nil {
		live := map[string]bool{}
		for _, j := range requeue {
			live[j.ID] = true
		}
		m := a.cfg.Cgroups
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if err := m.Cleanup(func(id string) bool { return live[id] }); err != nil {
				a.lg.Warn("clean up job cgroups", zap.Error(err))
			}
		}()
	}
	for _, j := range requeue {
		a.spawn(ctx, j)
		a.queue.Push(j.RepoID, j.ID)
	}
	a.releasePending(ctx)
	if len(expired) > 0 {
		a.removeWorktrees(ctx, expired, nil)
	}
}

// pruneOld forgets the oldest finished jobs beyond MaxJobsKept.
func (a *Jobs) pruneOld(all []messages.Job) []messages.Job {
	extra := len(all) - MaxJobsKept
	if extra <= 0 {
		return all
	}
	kept := all[:0]
	for _, j := range all {
		if extra > 0 && JobFinal(j.State) && !j.WorktreeKept {
			extra--
			if err := a.cfg.Store.Delete(persistence.JobKey(j.ID)); err != nil {
				a.lg.Warn("forget old job", zap.String("job_id", j.ID), zap.Error(err))
			}
			if j.LogDir != "" && filepath.Dir(j.LogDir) == a.logRoot {
				_ = os.RemoveAll(j.LogDir)
			}
			continue
		}
		kept = append(kept, j)
	}
	return kept
}

// interrupt persists a live job as interrupted.
func (a *Jobs) interrupt(j messages.Job, now time.Time) messages.Job {
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
	if err := a.cfg.Store.PutSync(persistence.JobKey(j.ID), j); err != nil {
		a.lg.Error("persist interrupted job", zap.String("job_id", j.ID), zap.Error(err))
	}
	return j
}

// retry queues an interrupted job again as a new attempt.
func (a *Jobs) retry(j messages.Job) (messages.Job, error) {
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
	n.StdoutBytes, n.StderrBytes, n.Redactions, n.Summary, n.Tail, n.Error, n.Swept = 0, 0, 0, nil, "", nil, 0
	if err := a.cfg.Store.PutSync(persistence.JobKey(n.ID), n); err != nil {
		return j, err
	}
	return n, nil
}

// sweep kills, in the background, every process still carrying the run
// marker of an interrupted job.
func (a *Jobs) sweep(ctx actor.Context, j messages.Job) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		n := proc.SweepMarked(j.RunID, 0)
		root.Send(self, jobsSweepResult{id: j.ID, n: n})
	}()
}

// releasePending releases the durable leases of interrupted jobs whose
// checkout is known (the registry may publish it after we start).
func (a *Jobs) releasePending(ctx actor.Context) {
	for id, j := range a.pendingRelease {
		e, ok := a.cfg.Index.Lookup(j.RepoID)
		if !ok {
			continue
		}
		ctx.Send(e.Checkout, messages.Release{LeaseID: j.LeaseID})
		delete(a.pendingRelease, id)
	}
}

func (a *Jobs) spawn(ctx actor.Context, j messages.Job) *actor.PID {
	cfg := &a.cfg
	props := actor.PropsFromProducer(func() actor.Actor { return newJobActor(cfg, j, a.wtRoot) },
		actor.WithReceiverMiddleware(Recover(a.lg)),
		actor.WithSupervisor(actor.NewOneForOneStrategy(0, time.Second, actor.DefaultDecider)))
	pid, err := ctx.SpawnNamed(props, "job-"+j.ID)
	if err != nil {
		pid = ctx.Spawn(props)
	}
	a.kids[j.ID] = pid
	return pid
}

func (a *Jobs) submit(ctx actor.Context, m messages.JobSubmit) {
	j := m.Job
	if j.ID == "" || len(j.Argv) == 0 {
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
	a.jobs[j.ID] = &j
	pid := a.spawn(ctx, j)
	// The child persists the queued state and answers the caller.
	ctx.RequestWithCustomSender(pid, messages.JobSubmit{Job: j}, ctx.Sender())
	a.queue.Push(j.RepoID, j.ID)
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
		a.running--
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
	self, root, g := ctx.Self(), ctx.ActorSystem().Root, a.cfg.Git
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		removed := []string{}
		var ids []string
		for _, j := range victims {
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := worktree.Remove(rctx, g, j.Root, j.Worktree)
			cancel()
			if err != nil {
				if _, serr := os.Stat(j.Worktree); serr == nil {
					a.lg.Warn("remove kept worktree", zap.String("job_id", j.ID), zap.Error(err))
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
	}()
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
