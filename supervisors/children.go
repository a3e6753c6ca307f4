package supervisors

import (
	"os"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/cgroup"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Names of the root supervisor's children.
const (
	RegistryName = "registry"
	LedgerName   = "ledger"
	AuditName    = "audit"
	LanesName    = "lanes"
	ChecksName   = "checks"
	JobsName     = "jobs"
	RunsName     = "runs"
	// TargetsName is the repository-free targets: target/<canonical root>
	// below it, one per granted root.
	TargetsName = "targets"
	// DeadlocksName is the deadlock detector: it starts before the registry
	// (and drains after it), so every checkout can reach it.
	DeadlocksName = "deadlocks"
)

// Deps are what the tree's actors need. The runners are dependencies of the
// actors that run work (checks, lanes): messages carry specs, never code.
type Deps struct {
	Store  *persistence.Store
	Index  *actors.RepoIndex
	Logger *zap.Logger
	// Now is the clock of leases, ledger entries and jobs; nil = time.Now.
	Now func() time.Time
	// DataDir holds job logs and worktrees. Required.
	DataDir string
	// Tasks tracks the goroutines actors start for blocking work.
	Tasks *actors.Tasks
	// CheckRunner runs a check's spec; LaneRunner runs a lane's step, handed
	// to it as data with the gate's answer.
	CheckRunner actors.CheckRunner
	LaneRunner  actors.LaneRunner
	// JobConfiner confines the processes of durable jobs.
	JobConfiner actors.JobConfiner
	// WorktreeSkip names what a job's worktree must not carry over.
	WorktreeSkip actors.WorktreeSkipper
	// JobUndo keeps the undo of jobs that write their checkout; nil = none.
	JobUndo actors.JobUndo
	// JobWrite runs the writes queued as jobs (on_busy: "durable").
	JobWrite actors.JobWriter
	// JobNative performs the jobs harnessd does itself (git reset --hard).
	JobNative actors.JobNative
	// RunUsage charges a job's CPU time to the run that started it.
	RunUsage func(runID string, cpuMs int64)
	// Audit records what actors do on their own (a job's start and end).
	Audit func(messages.AuditEntry)
	// AuditDurable records an entry and returns a wait for it to be
	// durable (a job's start, before its process starts); nil = Audit.
	AuditDurable func(messages.AuditEntry) func() error
	// AuditKeys seal and verify the audit chain; nil = unkeyed.
	AuditKeys *audit.Keyring
	// Jobs configures the durable jobs (zero = the defaults, see JobsFromEnv).
	Jobs JobsOptions
	// Runs is the published index of live runs; JobsPID the jobs
	// supervisor a run past its deadline cancels its jobs with.
	Runs    *actors.RunIndex
	JobsPID *actor.PID
	// RunsOptions configure the runs (zero = the defaults).
	RunsOptions RunsOptions
	// DeadlocksPID is the deadlock detector the checkouts report the waits
	// of runs to (ChildPID(root, DeadlocksName)); nil = no detection.
	DeadlocksPID *actor.PID
	// Watch configures the checkouts' watchers (the live index).
	Watch actors.WatchConfig
	// Targets is the published index of granted target roots.
	Targets *actors.TargetIndex
}

// RunsOptions configure the runs supervisor (zero fields = the defaults).
type RunsOptions struct {
	SweepEvery   time.Duration
	ResumeWindow time.Duration
	Linger       time.Duration
	// StallAfter is how long a run's stage may make no progress before
	// the run is marked stuck; 0 = 15 minutes, < 0 = never.
	StallAfter time.Duration
	// OnEvent receives every run event (the OTLP exporter); must not block.
	OnEvent func(messages.RunEvent)
}

func (d Deps) logger() *zap.Logger {
	if d.Logger == nil {
		return zap.NewNop()
	}
	return d.Logger
}

func (d Deps) recover() actor.PropsOption {
	return actor.WithReceiverMiddleware(actors.Recover(d.logger()))
}

// Registry is the child that owns the registered repositories and one
// checkout actor per checkout.
func Registry(d Deps) Child {
	lg, mw := d.logger(), d.recover()
	checkout := func(r messages.Repository) *actor.Props {
		return actor.PropsFromProducer(actors.NewCheckoutWith(r, d.Store, lg, d.Now, actors.CheckoutConfig{Deadlocks: d.DeadlocksPID, Watch: d.Watch}), mw,
			actor.WithSupervisor(CheckoutChildPolicy().Strategy(lg)))
	}
	props := actor.PropsFromProducer(actors.NewRegistry(d.Store, d.Index, checkout, lg), mw,
		actor.WithSupervisor(CheckoutPolicy().Strategy(lg)))
	return Child{Name: RegistryName, Props: props, Restart: Permanent}
}

// Deadlocks is the deadlock detector: the wait-for graph of the runs'
// lease waits across every checkout, in memory only (a restart rebuilds it
// from the live waits).
func Deadlocks(d Deps) Child {
	props := actor.PropsFromProducer(actors.NewDeadlocks(actors.DeadlocksConfig{Index: d.Index, Logger: d.logger()}), d.recover())
	return Child{Name: DeadlocksName, Props: props, Restart: Permanent}
}

// Ledger is the request ledger.
func Ledger(d Deps) Child {
	props := actor.PropsFromProducer(actors.NewLedger(d.Store, d.logger(), actors.LedgerConfig{Now: d.Now, Tasks: d.Tasks}), d.recover())
	return Child{Name: LedgerName, Props: props, Restart: Permanent}
}

// Audit is the hash-chained audit writer.
func Audit(d Deps) Child {
	props := actor.PropsFromProducer(actors.NewAudit(d.Store, d.logger(), actors.AuditConfig{Now: d.Now, Tasks: d.Tasks, Keys: d.AuditKeys}), d.recover())
	return Child{Name: AuditName, Props: props, Restart: Permanent}
}

// Lanes is the supervisor of the read lanes.
func Lanes(d Deps) Child {
	children := make([]Child, actors.NumLanes)
	for i := range children {
		name := actors.LaneName(i)
		lane := actors.NewLane(actors.LaneConfig{Name: name, Runner: d.LaneRunner, Logger: d.logger(), Now: d.Now, Tasks: d.Tasks})
		children[i] = Child{Name: name, Props: actor.PropsFromProducer(lane, d.recover()), Restart: Permanent}
	}
	return Child{Name: LanesName, Props: Props(Spec{Children: children, Intensity: 10, Period: 30 * time.Second}, d.logger()), Restart: Permanent}
}

// Checks is the supervisor of the check actors.
func Checks(d Deps) Child {
	props := actor.PropsFromProducer(actors.NewChecks(d.Store, d.logger(), actors.CheckBudgetFromEnv(actors.ChecksConfig{Now: d.Now, Runner: d.CheckRunner, Tasks: d.Tasks})), d.recover(),
		actor.WithSupervisor(CheckPolicy().Strategy(d.logger())))
	return Child{Name: ChecksName, Props: props, Restart: Permanent}
}

// Jobs is the durable jobs supervisor.
func Jobs(d Deps) Child {
	o := d.Jobs
	cfg := actors.JobsConfig{
		Store: d.Store, Index: d.Index, Logger: d.logger(), Now: d.Now, DataDir: d.DataDir, Tasks: d.Tasks,
		Concurrency: o.Concurrency, Cgroups: o.Cgroups, Containment: o.Containment, Limits: o.Limits,
		Confiner: d.JobConfiner, WorktreeSkip: d.WorktreeSkip, Audit: d.Audit, AuditDurable: d.AuditDurable,
		Undo: d.JobUndo, Write: d.JobWrite, Native: d.JobNative, RunUsage: d.RunUsage,
	}
	props := actor.PropsFromProducer(actors.NewJobs(cfg), d.recover(),
		actor.WithSupervisor(JobPolicy().Strategy(d.logger())))
	return Child{Name: JobsName, Props: props, Restart: Permanent}
}

// Runs is the supervisor of the run actors: run/<id>, one per live run.
func Runs(d Deps) Child {
	o := d.RunsOptions
	cfg := actors.RunsConfig{Store: d.Store, Index: d.Runs, Logger: d.logger(), Now: d.Now, Jobs: d.JobsPID, Tasks: d.Tasks,
		SweepEvery: o.SweepEvery, ResumeWindow: o.ResumeWindow, Linger: o.Linger, StallAfter: o.StallAfter, OnEvent: o.OnEvent}
	props := actor.PropsFromProducer(actors.NewRuns(cfg), d.recover(),
		actor.WithSupervisor(RunPolicy().Strategy(d.logger())))
	return Child{Name: RunsName, Props: props, Restart: Permanent}
}

// Targets is the targets actor: target/<canonical root> below it, one per
// granted root.
func Targets(d Deps) Child {
	props := actor.PropsFromProducer(actors.NewTargets(d.Store, d.Targets, d.logger(), d.Now), d.recover(),
		actor.WithSupervisor(TargetPolicy().Strategy(d.logger())))
	return Child{Name: TargetsName, Props: props, Restart: Permanent}
}

// Boot runs the restore that must happen once per process, before the tree
// starts (an actor restarted after a panic must not repeat it): requests a
// crash left executing become unknown.
func Boot(d Deps) error {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	return actors.RecoverLedger(d.Store, d.logger(), now())
}

// LanePID returns the PID of lane i under the root supervisor root.
func LanePID(root *actor.PID, i int) *actor.PID {
	return ChildPID(ChildPID(root, LanesName), actors.LaneName(i))
}

// Environment variables that configure durable jobs.
const (
	// EnvJobsConcurrency sets how many jobs run at once (default: the CPUs).
	EnvJobsConcurrency = "HARNESSD_JOBS_CONCURRENCY"
	// EnvJobsCgroup = "off" disables cgroup v2 containment.
	EnvJobsCgroup = "HARNESSD_JOBS_CGROUP"
	// EnvJobsPidsMax sets a job cgroup's pids.max (default 4096, 0 = none).
	EnvJobsPidsMax = "HARNESSD_JOBS_PIDS_MAX"
	// EnvJobsMemoryMax sets a job cgroup's memory.max in bytes (default none).
	EnvJobsMemoryMax = "HARNESSD_JOBS_MEMORY_MAX"
)

// JobsOptions configure the durable jobs.
type JobsOptions struct {
	Concurrency int
	Cgroups     *cgroup.Manager // nil = uncontained; Containment says why
	Containment string
	Limits      cgroup.Limits
}

// JobsFromEnv reads the job options from the environment variables above
// and detects cgroup v2 containment (once per process).
func JobsFromEnv() JobsOptions {
	var m *cgroup.Manager
	var err error
	off := os.Getenv(EnvJobsCgroup) == "off"
	if !off {
		m, err = cgroup.DetectOnce()
	}
	containment := m.Status()
	switch {
	case err != nil:
		containment = "cgroup v2: jobs not contained: " + err.Error()
	case off:
		containment = "cgroup v2: jobs not contained: disabled by " + EnvJobsCgroup + "=off"
	}
	return JobsOptions{
		Concurrency: int(envInt(EnvJobsConcurrency, 0)),
		Cgroups:     m, Containment: containment,
		Limits: cgroup.Limits{PidsMax: envInt(EnvJobsPidsMax, actors.DefaultJobPidsMax), MemoryMax: envInt(EnvJobsMemoryMax, 0)},
	}
}

func envInt(name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return def
	}
	return n
}
