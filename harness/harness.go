package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops"
	"github.com/harnessd/harnessd/harness/ops/batch"
	"github.com/harnessd/harnessd/harness/ops/check"
	"github.com/harnessd/harnessd/harness/ops/job"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/search"
	"github.com/harnessd/harnessd/internal/secrets"
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
	// StoreReserve is the free space kept on the data dir's file system:
	// a write that would leave less answers STORAGE_FULL (reads go on,
	// writes resume once space is freed). 0 = a sixteenth of the file
	// system, between 1 MiB and 64 MiB; negative = no check.
	StoreReserve int64
	// StoreFaults makes the store's disk fail or stall (tests only).
	StoreFaults *persistence.Faults
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
	// GateObserver, if set, sees every decision of the gate (tests count
	// gate crossings with it; a metrics exporter could count outcomes).
	GateObserver func(govern.Decision)
	// ActorObserver, if set, sees every message sent to an actor from
	// outside the actors: the actor's name, the message and whether a
	// reply is awaited (tests count an operation's mailbox round trips).
	ActorObserver func(actor string, msg any, request bool)
	// Sandbox is the confinement of every process harnessd starts:
	// "require" (refuse to start commands without Landlock), "auto" (every
	// layer the kernel has; the default) or "off".
	Sandbox string
	// RunEvents receives every run event (spans, observations, state
	// changes), for an exporter such as OTLP; it must not block. Nil = none.
	RunEvents func(messages.RunEvent)
	// Runs tunes the runs (tests shorten the sweep); zero = the defaults.
	Runs supervisors.RunsOptions
	// NoClientApprovals keeps approvals out of MCP clients: without it, an
	// APPROVAL_REQUIRED call from a client that declared the elicitation
	// capability asks the client's person (see ClientApprovals).
	NoClientApprovals bool
	// PreImageMaxAge and PreImageMaxBytes bound the pre-images kept for
	// revert in <DataDir>/preimages (in memory when InMemory): older ones,
	// then the oldest beyond the total size, are pruned, and their
	// receipts can no longer be reverted. 0 = 7 days and 1 GiB; negative =
	// no bound of that kind.
	PreImageMaxAge   time.Duration
	PreImageMaxBytes int64
	// JobUndoMaxBytes and JobUndoMaxFiles bound what a job that writes
	// its checkout in place may change: its pre-images are kept before
	// it starts, and a job beyond them is refused (BUDGET_EXCEEDED)
	// before it runs. 0 = 256 MiB and 50,000 paths (docs/undo.md).
	JobUndoMaxBytes int64
	JobUndoMaxFiles int
	// NoLiveIndex turns the live checkout index off: no watcher per
	// checkout; git_status, search and git_diff run git or rg every time.
	NoLiveIndex bool
	// WatchIdle is how long an unused checkout keeps its watcher before it
	// is passivated (0 = 10 minutes).
	WatchIdle time.Duration
	// WatchInstances caps the checkouts watched at once (each holds one of
	// the user's inotify instances): 0 = a quarter of the kernel's
	// max_user_instances, negative = no cap. Beyond it the least recently
	// used watcher is passivated.
	WatchInstances int
	// AllowRoots are allowed areas (absolute directories): agents may
	// register repositories and targets inside them without asking a
	// person (harnessd serve --allow-root). The policy's roots and the
	// areas people add (harness roots allow) count too. Elsewhere an
	// agent's registration needs a person's approval; the never-grantable
	// paths (DESIGN §13) are refused everywhere.
	AllowRoots []string
	// Fleet joins a fleet of harnessd nodes on etcd (docs/fleet.md); the
	// zero value is no fleet.
	Fleet FleetConfig
	// CheckFastCap is the longest a focused check runs on the Fast Path
	// before it is handed over to a durable job (0 = 15 s; tests shorten
	// it).
	CheckFastCap time.Duration
}

// ClientApprovals reports whether an MCP client's person may decide an
// approval through elicitation (Config.NoClientApprovals unset).
func (h *Harness) ClientApprovals() bool { return !h.cfg.NoClientApprovals }

// SandboxMain must be called first thing in main by a program that embeds
// harnessd and wants its checks and jobs confined in namespaces: harnessd
// re-executes the program itself as the sandbox's launcher, and in that
// process SandboxMain confines it, runs the command and never returns.
// Without it, checks and jobs are confined by Landlock and seccomp alone
// (status says so).
func SandboxMain() { sandbox.Main() }

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
	if c.SecretPatterns == nil {
		c.SecretPatterns = pathsafe.DefaultSecretPatterns()
	}
	if c.PolicyPath == "" && !c.InMemory {
		c.PolicyPath = filepath.Join(c.DataDir, "policy.yaml")
	}
	return c
}

// Harness is an open harnessd runtime. Its methods are safe for concurrent
// use.
type Harness struct {
	cfg     Config
	lg      *zap.Logger
	store   *persistence.Store
	rt      *runtime.Runtime
	gov     *govern.Governor
	sb      *sandbox.Sandbox
	secrets *secrets.Cache
	areas   *areas          // the allowed areas (harness/authority.go)
	akeys   *audit.KeyFiles // the audit chain's HMAC keys (internal/audit/keyfile.go)
	env     *op.Env
	pipe    *op.Pipeline
	handles *handles // the typed operations of the methods (methods.go)
	started time.Time
	fleet   *fleet.Node     // this node's membership of a fleet (nil = none; fleet.go)
	etcd    *fleet.Embedded // the etcd member it runs (--embed-etcd), or nil

	closeOnce sync.Once
	closeErr  error
}

// Open starts a Harness. It builds every component explicitly, in order:
//  1. the store (Badger in <DataDir>/store, or in memory);
//  2. the actor runtime (system and clients; nothing runs yet);
//  3. the governor (policy, approvals, loop memory, audit append);
//  4. the environment of the operations and the request pipeline over the
//     static registry;
//  5. the actor tree, with the check and lane runners of the pipeline.
//
// It returns once the registry has restored its state. On failure it undoes
// what it started.
func Open(ctx context.Context, cfg Config) (_ *Harness, err error) {
	cfg = cfg.withDefaults()
	h := &Harness{cfg: cfg, lg: cfg.Logger, started: cfg.Now()}
	defer func() {
		if err != nil {
			_ = h.teardown()
		}
	}()

	storeDir, dataDir, marksPath := "", "", ""
	if !cfg.InMemory {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
		storeDir, dataDir, marksPath = StoreDir(cfg.DataDir), cfg.DataDir, MarksPath(cfg.DataDir)
	}
	if h.store, err = persistence.Open(persistence.Options{Dir: storeDir, InMemory: cfg.InMemory, Logger: cfg.Logger,
		MarksPath: marksPath, Reserve: cfg.StoreReserve, Faults: cfg.StoreFaults}); err != nil {
		return nil, errs.Wrap(errs.Internal, err, "%v", err)
	}
	if h.akeys, err = audit.LoadKeyFiles(dataDir, h.store, cfg.Logger); err != nil {
		return nil, err
	}
	if h.rt, err = runtime.New(runtime.Config{Store: h.store, Logger: cfg.Logger, Now: cfg.Now, RequestTimeout: cfg.RequestTimeout,
		DataDir: dataDir, Runs: runsOptions(cfg), AuditKeys: h.akeys.Ring(), OnSend: cfg.ActorObserver,
		Watch: actors.WatchConfig{Off: cfg.NoLiveIndex, Idle: cfg.WatchIdle, Budget: actors.NewWatchBudget(cfg.WatchInstances), Ignored: func(root string) map[string]bool { return ignoredDirs(h.env.Git, root) },
			Changed: func(root string, paths []string, lost bool) { h.secretsChanged(root, paths, lost) }}}); err != nil {
		return nil, err
	}
	deny, err := pathsafe.NewDenylist(cfg.SecretPatterns)
	if err != nil {
		return nil, err
	}
	mode, err := sandbox.ParseMode(cfg.Sandbox)
	if err != nil {
		return nil, errs.New(errs.InvalidArgument, "%v", err)
	}
	// Hidden from every confined process: the data dir (store, sockets,
	// token) and the runtime's job logs and worktrees.
	hidden := []string{h.rt.DataDir()}
	if dataDir != "" && dataDir != h.rt.DataDir() {
		hidden = append(hidden, dataDir)
	}
	if h.sb, err = sandbox.New(sandbox.Config{Mode: mode, Hidden: hidden}); err != nil {
		return nil, err
	}
	redactor := redact.Default()
	reg := ops.Registry() // the policy's require_verified vocabulary comes from its descriptors
	if h.gov, err = govern.New(govern.Config{Store: h.store, Audit: h.rt.Audit, PolicyPath: cfg.PolicyPath, LoopThreshold: cfg.LoopThreshold,
		Now: cfg.Now, Logger: cfg.Logger, Deny: deny, Redactor: redactor, Observe: cfg.GateObserver, Verified: reg.Verified()}); err != nil {
		return nil, err
	}
	// The base Searcher; each root searches with its own (Env.SearcherFor).
	exclude := func(rel string) bool { _, ok := deny.Match(rel); return ok }
	// The secret paths of each checkout (closed to confined processes) and
	// the values in them (redacted from every output), by the root's own
	// list (its canonical path, the policy's exceptions). The cache reads
	// blobs with an unconfined git: the confinement of git needs it.
	h.secrets = secrets.NewCache(secrets.Config{Deny: deny, DenyFor: func(root string) *pathsafe.Denylist { return h.env.DenyFor(root) }, Git: &gitx.Git{}})
	// harnessd's own read-only git calls run confined by the read profile.
	git := &gitx.Git{}
	h.env = &op.Env{
		Store: h.store, RT: h.rt, Ledger: h.rt.Ledger, Leases: h.rt.Leases, Gov: h.gov,
		Git: git, Deny: deny, Secrets: h.secrets, Hidden: hidden, Searcher: search.New(exclude, search.Limits{}), Redactor: redactor,
		Probe: checkid.NewEnvProbe(nil), Results: &op.ResultCache{}, Sandbox: h.sb,
		Logger: cfg.Logger, Now: cfg.Now, RequestTimeout: cfg.RequestTimeout, Runs: &h.rt.Runs,
		NoLiveIndex: cfg.NoLiveIndex, Wiring: ops.Wiring(),
	}
	if err := h.env.Wiring.Check(); err != nil {
		return nil, err
	}
	git.Confine = h.env.ConfineGit
	h.env.Searcher.Start = h.env.StartSearch // rg and its listing git, confined
	if err := h.setupAuthority(hidden); err != nil {
		return nil, err
	}
	if h.env.PreImages, err = openPreImages(cfg); err != nil {
		return nil, err
	}
	// Pre-images a crash left unsettled are made whole from their durable copies.
	if n, err := op.RestorePreImages(h.store, h.env.PreImages); err != nil {
		cfg.Logger.Warn("pre-images: restore from their durable copies", zap.Int("copies", n), zap.Error(err))
	}
	h.env.JobUndoMaxBytes, h.env.JobUndoMaxFiles = cfg.JobUndoMaxBytes, cfg.JobUndoMaxFiles
	h.rt.Runs.SetMaxRetries(h.gov.MaxRetries) // the policy's max_retries bounds new runs' retries
	h.pipe = op.NewPipeline(reg, h.env)
	h.handles = newHandles(h.pipe.Registry())
	checkRunner := check.Runner(h.pipe, check.RunnerConfig{FastCap: cfg.CheckFastCap})
	if err := h.joinFleet(ctx, dataDir); err != nil {
		return nil, err
	}
	if h.fleet != nil {
		checkRunner = check.FleetRunner(h.fleet, checkRunner)
		h.env.Fence = h.fleet.Live
	}
	if err = h.rt.Start(ctx, runtime.Runners{Check: checkRunner, Lane: batch.LaneRunner(h.pipe), Job: job.Confiner(h.env), WorktreeSkip: job.WorktreeSkip(h.env),
		JobUndo: job.Undo(h.env, job.UndoConfig{MaxBytes: cfg.JobUndoMaxBytes, MaxFiles: cfg.JobUndoMaxFiles}), JobWrite: h.pipe.QueuedWriter(), JobNative: job.GitState(h.env)}); err != nil {
		return nil, err
	}
	h.startFleetJobs() // jobs that outlive their node (fleetjobs.go)
	h.claimHomes(ctx)  // this node is the home of the checkouts it has (fleethome.go)
	h.afterBoot(ctx)
	return h, nil
}

func runsOptions(cfg Config) supervisors.RunsOptions {
	o := cfg.Runs
	if o.OnEvent == nil {
		o.OnEvent = cfg.RunEvents
	}
	return o
}

// Close shuts the Harness down in the documented order (see the package
// doc). Safe to call more than once; later calls return the first call's
// error.
func (h *Harness) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		// Requests queued for a lease are answered UNAVAILABLE now, not
		// after the wait: nothing of theirs was written, and their ledger
		// entries are closed as never begun while the ledger still runs.
		if _, err := h.rt.DrainLeaseWaits(ctx); err != nil {
			h.lg.Warn("shutdown: lease waiters not all answered", zap.Error(err))
		}
		h.leaveFleet(ctx) // no new claims; the runs in flight publish first
		if !h.pipe.Close(ctx) {
			h.lg.Warn("closing with operations still running")
		}
		h.closeErr = h.teardown()
	})
	return h.closeErr
}

func (h *Harness) teardown() error {
	var errList []error
	if h.rt != nil {
		if err := h.rt.Close(); err != nil {
			errList = append(errList, err)
		}
	}
	if h.secrets != nil {
		_ = h.secrets.Close()
	}
	h.closeFleet()
	if h.env != nil {
		h.env.CloseViews()
	}
	h.sb.Close()
	if h.store != nil {
		if err := h.store.Close(); err != nil {
			errList = append(errList, fmt.Errorf("close store: %w", err))
		}
	}
	_ = h.lg.Sync()
	return errors.Join(errList...)
}

// enter marks work in flight for the facade methods that are not
// operations; it fails once Close has begun.
func (h *Harness) enter() (func(), error) { return h.pipe.Enter() }

// StoreDir is where the store of a data dir lives.
func StoreDir(dataDir string) string { return filepath.Join(dataDir, "store") }

// MarksPath is the store's marks file of a data dir: beside the store,
// so a store that lost acknowledged writes (or was replaced or emptied)
// is refused at open.
func MarksPath(dataDir string) string { return filepath.Join(dataDir, "store.marks") }

// Store returns the underlying store (for tools such as `harness store dump`).
func (h *Harness) Store() *persistence.Store { return h.store }

// Logger returns the harness logger.
func (h *Harness) Logger() *zap.Logger { return h.lg }

// Registry returns the operations of this Harness.
func (h *Harness) Registry() *op.Registry { return h.pipe.Registry() }

// SandboxStatus reports, per profile, which confinement layers are active
// and what a missing one weakens.
func (h *Harness) SandboxStatus() []sandbox.Layers { return h.sb.Status() }

// SandboxThreads returns the confined threads the Fast Path keeps for its
// next commands (each a goroutine).
func (h *Harness) SandboxThreads() int { return h.sb.Pooled() }

// Runtime returns the actor runtime (tests and tools).
func (h *Harness) Runtime() *runtime.Runtime { return h.rt }

// Op describes one operation for the generic surfaces.
type Op = op.Op

// Ops returns every operation, sorted by name (a fresh registry: for
// listings without an open Harness).
func Ops() []Op { return ops.Registry().All() }

// CallOp runs the named operation with raw JSON arguments through the
// request pipeline (the MCP, HTTP and CLI surfaces).
func (h *Harness) CallOp(ctx context.Context, name string, args json.RawMessage) (any, error) {
	if h.fleet != nil {
		return h.callOrForward(ctx, name, args) // checkouts stay home (fleethome.go)
	}
	return h.pipe.Call(ctx, name, args)
}

// call runs one of the facade's typed operations (h.handles) through the
// pipeline. The typed methods are the embedding program's own calls: a
// person's, for what they grant (servers run agents' calls through
// CallOp).
func call[In, Out any](ctx context.Context, h *Harness, o op.Handle[In, Out], in In) (Out, error) {
	if _, ok := op.PersonFrom(ctx); !ok {
		ctx = op.AsPerson(ctx, "embedding")
	}
	return o.Call(ctx, h.pipe, in)
}

// AsPerson returns ctx for calls a person makes through CallOp (the HTTP
// API with the human token, the console): roots they register are theirs
// to grant. who says how ("cli (token 1a2b…)").
func AsPerson(ctx context.Context, who string) context.Context { return op.AsPerson(ctx, who) }

// secretsChanged marks a checkout's secret set stale when the watch saw a
// secret-named path appear (or lost events): the next command's ruleset
// closes the new file, not one a background walk finds seconds later.
func (h *Harness) secretsChanged(root string, paths []string, lost bool) {
	if h.secrets == nil || h.env == nil {
		return
	}
	if lost {
		h.secrets.Stale(root)
		return
	}
	deny := h.env.DenyFor(root)
	for _, p := range paths {
		if _, ok := deny.Match(p); ok {
			h.secrets.Stale(root)
			return
		}
	}
}
