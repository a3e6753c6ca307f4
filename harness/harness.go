package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/logx"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
	"github.com/harnessd/harnessd/supervisors"
)

// Config configures Open. Zero fields mean "use the default".
type Config struct {
	// DataDir holds the store and, for the daemon, the socket, token and
	// logs. Default: DefaultDataDir(). Ignored for the store when InMemory.
	DataDir string
	// InMemory keeps the store in memory (tests, throw-away embedding).
	InMemory bool
	// Logger receives all logs; nil = no logs.
	Logger *zap.Logger
	// RequestTimeout bounds one request to an actor; 0 = 10 s.
	RequestTimeout time.Duration
	// Now is the clock; nil = time.Now.
	Now func() time.Time
	// PolicyPath is the policy file; "" = <DataDir>/policy.yaml (none when
	// InMemory). A missing file is the empty policy.
	PolicyPath string
	// LoopThreshold is how many identical results of the same input in the
	// loop window count as a loop (LOOP_DETECTED); 0 = 3, negative = off.
	LoopThreshold int
	// SecretPatterns replaces the default secret-path denylist (doublestar
	// globs, see pathsafe.DefaultSecretPatterns). Nil = the default.
	SecretPatterns []string
}

func (c Config) secretPatterns() []string {
	if c.SecretPatterns != nil {
		return c.SecretPatterns
	}
	return pathsafe.DefaultSecretPatterns()
}

// DefaultDataDir returns $HARNESSD_DATA_DIR, else $XDG_STATE_HOME/harnessd,
// else ~/.local/state/harnessd.
func DefaultDataDir() string {
	if d := os.Getenv("HARNESSD_DATA_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "harnessd")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(os.TempDir(), "harnessd-state")
	}
	return filepath.Join(home, ".local", "state", "harnessd")
}

func (c Config) withDefaults() Config {
	if c.DataDir == "" && !c.InMemory {
		c.DataDir = DefaultDataDir()
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Harness is an open harnessd runtime. Its methods are safe for concurrent use.
type Harness struct {
	cfg     Config
	lg      *zap.Logger
	store   *persistence.Store
	system  *actor.ActorSystem
	root    *actor.PID
	reg     *actor.PID
	ledger  *actor.PID
	index   *actors.RepoIndex
	started time.Time

	fast *fastPath
	gov  *governance

	closed    atomic.Bool
	inflight  sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Open starts a Harness: it opens the store, starts the actor tree and
// waits until the registry has restored its state. On failure it undoes
// what it started.
func Open(ctx context.Context, cfg Config) (_ *Harness, err error) {
	cfg = cfg.withDefaults()
	h := &Harness{cfg: cfg, lg: cfg.Logger, index: &actors.RepoIndex{}, started: cfg.Now()}
	defer func() {
		if err != nil {
			h.teardown()
		}
	}()

	storeDir := ""
	if !cfg.InMemory {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
		storeDir = filepath.Join(cfg.DataDir, "store")
	}
	h.store, err = persistence.Open(persistence.Options{Dir: storeDir, InMemory: cfg.InMemory, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	h.fast, err = newFastPath(h)
	if err != nil {
		return nil, err
	}
	if err = h.initGovernance(); err != nil {
		return nil, err
	}

	h.system = actor.NewActorSystemWithConfig(actor.Configure(
		logx.ActorSystemOption(cfg.Logger),
		actor.WithDeadLetterThrottleInterval(time.Millisecond),
	))
	spec := supervisors.Tree(supervisors.Deps{Store: h.store, Index: h.index, Logger: cfg.Logger, Now: cfg.Now, DataDir: h.dataDirIfPersistent(), System: h.system})
	h.root, err = h.system.Root.SpawnNamed(supervisors.Props(spec, cfg.Logger), "harnessd")
	if err != nil {
		return nil, fmt.Errorf("start actor tree: %w", err)
	}
	h.reg = supervisors.ChildPID(h.root, supervisors.RegistryName)
	h.ledger = supervisors.ChildPID(h.root, supervisors.LedgerName)
	// The root spawns its children in Started, which it handles before any
	// message: once it answers, every child exists and (handling its own
	// Started first) will answer only after restoring its state.
	if _, err = request[messages.Pong](ctx, h, h.root, messages.Ping{}); err != nil {
		return nil, fmt.Errorf("wait for root supervisor: %w", err)
	}
	if _, err = request[messages.Pong](ctx, h, h.reg, messages.Ping{}); err != nil {
		return nil, fmt.Errorf("wait for registry: %w", err)
	}
	for _, hook := range openHooks {
		if err = hook(ctx, h); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// openHooks run at the end of Open, in registration order; closeHooks run
// at the start of teardown (before the actor tree drains), in reverse.
// Files that add components register them from init.
var (
	openHooks  []func(ctx context.Context, h *Harness) error
	closeHooks []func(h *Harness)
)

func onOpen(f func(ctx context.Context, h *Harness) error) { openHooks = append(openHooks, f) }
func onClose(f func(h *Harness))                           { closeHooks = append(closeHooks, f) }

// child returns the PID of a child of the root supervisor.
func (h *Harness) child(name string) *actor.PID { return supervisors.ChildPID(h.root, name) }

// Close shuts the Harness down in the documented order. Safe to call more
// than once; later calls return the first call's error.
func (h *Harness) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		done := make(chan struct{})
		go func() { h.inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			h.lg.Warn("closing with operations still running")
		}
		h.closeErr = h.teardown()
	})
	return h.closeErr
}

func (h *Harness) teardown() error {
	var errList []error
	if h.root != nil {
		for i := len(closeHooks) - 1; i >= 0; i-- {
			closeHooks[i](h)
		}
	}
	if h.root != nil {
		if err := h.system.Root.PoisonFuture(h.root).Wait(); err != nil {
			errList = append(errList, fmt.Errorf("drain actors: %w", err))
		}
	}
	if h.system != nil {
		h.system.Shutdown()
	}
	if h.fast != nil {
		h.fast.close()
	}
	if h.store != nil {
		if err := h.store.Close(); err != nil {
			errList = append(errList, fmt.Errorf("close store: %w", err))
		}
	}
	_ = h.lg.Sync()
	return errors.Join(errList...)
}

// enter marks an operation in flight; it fails once Close has begun.
func (h *Harness) enter() error {
	if h.closed.Load() {
		return errs.New(errs.Unavailable, "harness is shutting down")
	}
	h.inflight.Add(1)
	if h.closed.Load() {
		h.inflight.Done()
		return errs.New(errs.Unavailable, "harness is shutting down")
	}
	return nil
}

func (h *Harness) leave() { h.inflight.Done() }

// request sends msg to pid and waits for a reply of type T. A Failed reply
// becomes its error; a timeout becomes errs.Timeout.
func request[T any](ctx context.Context, h *Harness, pid *actor.PID, msg any) (T, error) {
	var zero T
	// The caller's deadline rules when it has one (a lease request that
	// may wait, a long check); otherwise RequestTimeout bounds the wait.
	timeout := h.cfg.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return zero, errs.New(errs.Timeout, "deadline passed before %T was sent", msg)
	}
	res, err := h.system.Root.RequestFuture(pid, msg, timeout).Result()
	switch {
	case errors.Is(err, actor.ErrTimeout):
		return zero, errs.New(errs.Timeout, "%s did not answer %T within %s", pid.Id, msg, timeout)
	case errors.Is(err, actor.ErrDeadLetter):
		return zero, errs.New(errs.Unavailable, "%s is not running", pid.Id)
	case err != nil:
		return zero, errs.Wrap(errs.Internal, err, "request %T: %v", msg, err)
	}
	switch r := res.(type) {
	case T:
		return r, nil
	case messages.Failed:
		return zero, r.Err
	}
	return zero, errs.New(errs.Internal, "request %T: unexpected reply %T", msg, res)
}

// Store returns the underlying store (for tools such as `harness store dump`).
func (h *Harness) Store() *persistence.Store { return h.store }

// Logger returns the harness logger.
func (h *Harness) Logger() *zap.Logger { return h.lg }

// begin starts an operation on a repository: it counts the operation in
// flight (refused once Close has begun), starts its latency trace and
// resolves the repo_id. Call done when the operation ends.
func (h *Harness) begin(repoID string) (e actors.RepoEntry, tr trace, done func(), err error) {
	if err := h.enter(); err != nil {
		return e, tr, nil, err
	}
	tr = startTrace()
	if e, err = h.lookup(repoID); err != nil {
		h.leave()
		return e, tr, nil, err
	}
	return e, tr, h.leave, nil
}
