package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/logx"
	"github.com/harnessd/harnessd/internal/watch"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
	"github.com/harnessd/harnessd/supervisors"
)

// Config configures New. Zero fields mean "use the default".
type Config struct {
	Store  *persistence.Store
	Logger *zap.Logger
	// Now is the clock of the actors; nil = time.Now.
	Now func() time.Time
	// RequestTimeout bounds one request to an actor when the caller's
	// context has no deadline; 0 = 10 s.
	RequestTimeout time.Duration
	// DataDir holds job logs and worktrees; "" = a temp dir made by New
	// and removed by Close.
	DataDir string
	// Jobs configures durable jobs; nil = supervisors.JobsFromEnv().
	Jobs *supervisors.JobsOptions
	// Runs configures the runs (zero = the defaults).
	Runs supervisors.RunsOptions
	// AuditKeys seal and verify the audit chain; nil = unkeyed.
	AuditKeys *audit.Keyring
	// Watch configures the checkouts' watchers (the live index).
	Watch actors.WatchConfig
	// OnSend, if set, sees every message sent to an actor from outside
	// the actors (an Ask, a request or a tell): the actor's name, the
	// message, and whether a reply is awaited. Tests count an operation's
	// mailbox round trips with it; unset, nothing is observed.
	OnSend func(to string, msg any, request bool)
}

// Runners are the code the actors that run work call: it is wired in at
// Start, never carried by a message.
type Runners struct {
	Check actors.CheckRunner
	Lane  actors.LaneRunner
	Job   actors.JobConfiner
	// WorktreeSkip names what a job's worktree must not carry over.
	WorktreeSkip actors.WorktreeSkipper
	// JobUndo keeps the undo of jobs that write their checkout.
	JobUndo actors.JobUndo
	// JobWrite runs the writes queued as jobs (on_busy: "durable").
	JobWrite actors.JobWriter
	// JobNative performs the jobs harnessd does itself (git reset --hard).
	JobNative actors.JobNative
}

// Runtime is a running actor system and the clients of its actors.
type Runtime struct {
	cfg     Config
	lg      *zap.Logger
	system  *actor.ActorSystem
	root    *actor.PID
	index   *actors.RepoIndex
	runs    *actors.RunIndex
	tasks   *actors.Tasks
	dataDir string
	tempDir string
	started bool

	Registry Registry
	Ledger   Ledger
	Audit    Audit
	Leases   Leases
	Jobs     Jobs
	Checks   Checks
	Lanes    Lanes
	Runs     Runs
	Targets  Targets
}

// rootName is the root supervisor's name.
const rootName = "harnessd"

// New builds the actor system and the clients; nothing runs until Start.
func New(cfg Config) (*Runtime, error) {
	if cfg.Store == nil {
		return nil, errors.New("runtime: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.Jobs == nil {
		o := supervisors.JobsFromEnv()
		cfg.Jobs = &o
	}
	r := &Runtime{cfg: cfg, lg: cfg.Logger, index: &actors.RepoIndex{}, runs: &actors.RunIndex{}, tasks: &actors.Tasks{}, dataDir: cfg.DataDir}
	if r.dataDir == "" {
		d, err := os.MkdirTemp("", "harnessd-runtime-")
		if err != nil {
			return nil, fmt.Errorf("runtime: temp data dir: %w", err)
		}
		r.dataDir, r.tempDir = d, d
	}
	if r.cfg.Watch.CookieBase == "" {
		abs, err := filepath.Abs(filepath.Join(r.dataDir, "cookies"))
		if err != nil {
			return nil, fmt.Errorf("runtime: cookie dir: %w", err)
		}
		r.cfg.Watch.CookieBase = abs
	}
	r.system = actor.NewActorSystemWithConfig(actor.Configure(
		logx.ActorSystemOption(cfg.Logger),
		actor.WithDeadLetterThrottleInterval(time.Millisecond),
	))
	if f := cfg.OnSend; f != nil {
		r.system.Root.WithSenderMiddleware(func(next actor.SenderFunc) actor.SenderFunc {
			return func(c actor.SenderContext, to *actor.PID, env *actor.MessageEnvelope) {
				f(to.Id, env.Message, env.Sender != nil)
				next(c, to, env)
			}
		})
	}
	r.root = actor.NewPID(r.system.Address(), rootName)
	child := func(name string) *actor.PID { return supervisors.ChildPID(r.root, name) }
	r.Registry = Registry{r: r, pid: child(supervisors.RegistryName)}
	r.Ledger = actorLedger{r: r, pid: child(supervisors.LedgerName)}
	r.Audit = actorAudit{r: r, pid: child(supervisors.AuditName)}
	r.Leases = actorLeases{r: r}
	r.Jobs = Jobs{r: r, pid: child(supervisors.JobsName)}
	r.Checks = Checks{r: r, pid: child(supervisors.ChecksName)}
	r.Lanes = Lanes{r: r}
	r.Runs = Runs{r: r, pid: child(supervisors.RunsName), index: r.runs}
	r.Targets = newTargets(r, child(supervisors.TargetsName))
	return r, nil
}

// Start runs the boot-time restore and spawns the tree with the runners,
// then waits until it answers (see the package doc).
func (r *Runtime) Start(ctx context.Context, run Runners) error {
	d := supervisors.Deps{
		Store: r.cfg.Store, Index: r.index, Logger: r.lg, Now: r.cfg.Now, DataDir: r.dataDir, Tasks: r.tasks,
		CheckRunner: run.Check, LaneRunner: run.Lane, JobConfiner: run.Job, WorktreeSkip: run.WorktreeSkip, JobUndo: run.JobUndo, JobWrite: run.JobWrite, JobNative: run.JobNative, Jobs: *r.cfg.Jobs,
		Audit:        func(e messages.AuditEntry) { r.Audit.Append(e) },
		AuditDurable: func(e messages.AuditEntry) func() error { return r.Audit.AppendDurable(e) },
		AuditKeys:    r.cfg.AuditKeys,
		RunUsage:     r.Runs.Use,
		Runs:         r.runs,
		JobsPID:      r.Jobs.pid, RunsOptions: r.cfg.Runs,
		DeadlocksPID: supervisors.ChildPID(r.root, supervisors.DeadlocksName),
		Watch:        r.cfg.Watch,
		Targets:      r.Targets.index,
	}
	if err := supervisors.Boot(d); err != nil {
		return err
	}
	pid, err := r.system.Root.SpawnNamed(supervisors.Props(tree(d), r.lg), rootName)
	if err != nil {
		return fmt.Errorf("start actor tree: %w", err)
	}
	r.root, r.started = pid, true
	// The root spawns its children in Started, which it handles before any
	// message: once it answers, every child exists and (handling its own
	// Started first) answers only after restoring its state.
	wait := []*actor.PID{r.root, r.Registry.pid, supervisors.ChildPID(r.root, supervisors.LanesName), r.Runs.pid, r.Targets.pid}
	for i := range actors.NumLanes {
		wait = append(wait, supervisors.LanePID(r.root, i))
	}
	for _, p := range wait {
		if _, err := Ask[messages.Pong](ctx, r, p, messages.Ping{}); err != nil {
			return fmt.Errorf("wait for %s: %w", p.Id, err)
		}
	}
	return nil
}

// Close stops the tree in the documented order. Safe to call once.
func (r *Runtime) Close() error {
	var errList []error
	if r.started {
		if err := r.system.Root.PoisonFuture(r.root).Wait(); err != nil {
			errList = append(errList, fmt.Errorf("drain actors: %w", err))
		}
	}
	r.system.Shutdown()
	if !r.tasks.Wait(30 * time.Second) {
		errList = append(errList, errors.New("runtime: background work still running after 30s"))
	}
	if r.tempDir != "" {
		if err := os.RemoveAll(r.tempDir); err != nil {
			errList = append(errList, fmt.Errorf("remove temp data dir: %w", err))
		}
	}
	return errors.Join(errList...)
}

// Index returns the registry's published index of repositories.
func (r *Runtime) Index() *actors.RepoIndex { return r.index }

// DataDir returns the data dir of job logs and worktrees.
func (r *Runtime) DataDir() string { return r.dataDir }

// CookieDir returns where the live index raises the sync cookies of the
// work tree root: a dir of its own under <data dir>/cookies, which the
// sandbox hides from every confined process.
func (r *Runtime) CookieDir(root string) string { return watch.CookieDir(r.cfg.Watch.CookieBase, root) }

// Tasks returns the tracker of the goroutines that do blocking work for the
// actors (and for the layers above that start such work).
func (r *Runtime) Tasks() *actors.Tasks { return r.tasks }

// Root returns the root supervisor's PID (for tests and status).
func (r *Runtime) Root() *actor.PID { return r.root }

// System returns the actor system (for tests).
func (r *Runtime) System() *actor.ActorSystem { return r.system }

// Ask sends msg to pid and waits for a reply of type T. A Failed reply
// becomes its coded error; a timeout becomes TIMEOUT, a dead actor
// UNAVAILABLE. The caller's deadline rules when it has one; otherwise
// Config.RequestTimeout bounds the wait. When ctx ends first, Ask returns
// at once with ctx's error, coded CANCELLED (TIMEOUT for a deadline): the
// actor may still handle msg, and its late reply is dropped.
func Ask[T any](ctx context.Context, r *Runtime, pid *actor.PID, msg any) (T, error) {
	return askLate[T](ctx, r, pid, msg, nil)
}

// askLate is Ask whose reply, when it comes after ctx ended (within the
// ask's timeout), is handed to late instead of dropped: a grant the
// caller stopped waiting for is given back, not left to expire. late
// runs on the replying actor's send: it must not block (a Send).
func askLate[T any](ctx context.Context, r *Runtime, pid *actor.PID, msg any, late func(T)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, stoppedWaiting(ctx, pid, msg)
	}
	// grace is how long a reply the caller stopped waiting for is still
	// handed to late: the ask's own timeout, counted from the moment the
	// caller gave up (a deadline's remainder is nothing by then).
	grace := r.cfg.RequestTimeout
	timeout := grace
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if ctx.Done() == nil { // never cancelled: wait on the future alone
		return askWithin[T](r, pid, msg, timeout)
	}
	if timeout <= 0 {
		return zero, errs.New(errs.Timeout, "deadline passed before %T was sent", msg)
	}
	// The reply comes to a one-shot process registered for this call: no
	// goroutine waits on a future, so nothing outlives Ask when ctx ends
	// first (the actor's late reply lands in the dropped process's buffer
	// or in dead letters).
	reply := &askReply{ch: make(chan any, 1)}
	self, _ := r.system.ProcessRegistry.Add(reply, "ask"+r.system.ProcessRegistry.NextId())
	r.system.Root.RequestWithCustomSender(pid, msg, self)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case res := <-reply.ch:
		r.system.ProcessRegistry.Remove(self)
		if _, dead := res.(*actor.DeadLetterResponse); dead {
			return replyAs[T](pid, msg, nil, actor.ErrDeadLetter, timeout)
		}
		return replyAs[T](pid, msg, res, nil, timeout)
	case <-timer.C:
		// With a deadline, the timer and ctx end together: either way a
		// reply still on its way goes to late.
		_, err := replyAs[T](pid, msg, nil, actor.ErrTimeout, timeout)
		abandonAsk(r, self, reply, late, grace)
		return zero, err
	case <-ctx.Done():
		abandonAsk(r, self, reply, late, grace)
		return zero, stoppedWaiting(ctx, pid, msg)
	}
}

// abandonAsk ends an ask whose caller stopped waiting: without late the
// reply process goes at once; with it, the process stays registered for
// grace (a timer, no goroutine) and hands a reply already kept, or one
// still on its way, to late.
func abandonAsk[T any](r *Runtime, self *actor.PID, reply *askReply, late func(T), grace time.Duration) {
	if late == nil {
		r.system.ProcessRegistry.Remove(self)
		return
	}
	reply.abandon(func(m any) {
		if v, ok := m.(T); ok {
			late(v)
		}
	})
	time.AfterFunc(grace, func() { r.system.ProcessRegistry.Remove(self) })
}

// askReply is the sender of one Ask: the first reply is kept, any later
// one dropped; once the asker stopped waiting (abandon), replies go to
// its late handler. It is safe to call from any goroutine.
type askReply struct {
	ch   chan any
	mu   sync.Mutex
	late func(any) // set by abandon
}

func (p *askReply) SendUserMessage(_ *actor.PID, m any) {
	_, msg, _ := actor.UnwrapEnvelope(m)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.late != nil {
		p.late(msg)
		return
	}
	select {
	case p.ch <- msg:
	default:
	}
}

// abandon hands the reply to late: one already kept, or one to come.
func (p *askReply) abandon(late func(any)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.late = late
	select {
	case m := <-p.ch:
		late(m)
	default:
	}
}

func (p *askReply) SendSystemMessage(pid *actor.PID, m any) { p.SendUserMessage(pid, m) }
func (p *askReply) Stop(*actor.PID)                         {}

// stoppedWaiting is Ask's error when ctx ended before the reply.
func stoppedWaiting(ctx context.Context, pid *actor.PID, msg any) error {
	err := ctx.Err()
	return errs.Wrap(errs.CodeOf(err), err, "stopped waiting for %s to answer %T: %v", pid.Id, msg, err)
}

func askWithin[T any](r *Runtime, pid *actor.PID, msg any, timeout time.Duration) (T, error) {
	var zero T
	if timeout <= 0 {
		return zero, errs.New(errs.Timeout, "deadline passed before %T was sent", msg)
	}
	res, err := r.system.Root.RequestFuture(pid, msg, timeout).Result()
	return replyAs[T](pid, msg, res, err, timeout)
}

// replyAs turns a future's outcome into T or a coded error.
func replyAs[T any](pid *actor.PID, msg, res any, err error, timeout time.Duration) (T, error) {
	var zero T
	switch {
	case errors.Is(err, actor.ErrTimeout):
		return zero, errs.New(errs.Timeout, "%s did not answer %T within %s", pid.Id, msg, timeout)
	case errors.Is(err, actor.ErrDeadLetter):
		return zero, errs.New(errs.Unavailable, "%s is not running", pid.Id)
	case err != nil:
		return zero, errs.Wrap(errs.Internal, err, "request %T: %v", msg, err)
	}
	switch v := res.(type) {
	case T:
		return v, nil
	case messages.Failed:
		return zero, actors.ErrorOf(v)
	}
	return zero, errs.New(errs.Internal, "request %T: unexpected reply %T", msg, res)
}
