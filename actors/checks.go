package actors

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// ChecksConfig configures NewChecks. Zero fields mean the defaults.
type ChecksConfig struct {
	Now  func() time.Time
	Idle time.Duration // a check actor idle this long passivates; 0 = 5 min
	// MaxPerRepo and MaxBytesPerRepo are the evidence budget of one
	// repository: entries and stored bytes (0 = 200 and 64 MiB; < 0 = no
	// bound of that kind). Beyond it the least recently used passes go;
	// there is no age bound.
	MaxPerRepo      int
	MaxBytesPerRepo int64
	PruneEvery      time.Duration // 0 = 10 min; < 0 = never (tests send CheckPrune)
	Runner          CheckRunner   // runs a check's spec; nil = every run fails UNAVAILABLE
	Tasks           *Tasks        // runs checks and pruning walks; nil = untracked goroutines

	// childWrap wraps the producer of check actors (tests inject faults).
	childWrap func(actor.Producer) actor.Producer
}

// NewChecks returns the producer of the checks supervisor. It routes each
// CheckRun to the check actor of its key, spawning it on demand, keeps
// idle check actors' passivation race-free (a Run never reaches an actor
// that is stopping: it waits and goes to its successor), and bounds the
// stored evidence of every repository.
func NewChecks(store *persistence.Store, lg *zap.Logger, cfg ChecksConfig) actor.Producer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultCheckIdle
	}
	if cfg.MaxPerRepo == 0 {
		cfg.MaxPerRepo = DefaultCheckMaxPerRepo
	}
	if cfg.MaxBytesPerRepo == 0 {
		cfg.MaxBytesPerRepo = DefaultCheckMaxBytesPerRepo
	}
	if cfg.PruneEvery == 0 {
		cfg.PruneEvery = 10 * time.Minute
	}
	if cfg.Runner == nil {
		cfg.Runner = noRunner
	}
	if lg == nil {
		lg = zap.NewNop()
	}
	return func() actor.Actor {
		return &checksActor{store: store, lg: lg, cfg: cfg, children: map[string]*checkChild{}, byPID: map[string]string{}}
	}
}

// checkChild is the supervisor's view of one check actor.
type checkChild struct {
	key       messages.CheckKey
	pid       *actor.PID
	forwarded uint64 // Runs sent to pid
	stopping  bool
	pending   []pendingMsg // Runs waiting for the successor of a stopping actor
}

type pendingMsg struct {
	msg    messages.CheckRun
	sender *actor.PID
}

type checksActor struct {
	store    *persistence.Store
	lg       *zap.Logger
	cfg      ChecksConfig
	children map[string]*checkChild // by child name
	byPID    map[string]string      // pid id -> child name
	stats    messages.CheckStatsReply
	pruner   *ticker

	// One prune walk runs at a time, outside the mailbox; requests that
	// arrive meanwhile are merged into the next walk.
	pruning    bool
	pruneNext  *pruneRequest
	pruneWaits waiters[struct{}] // CheckPrunes the next walk answers
	pingWaits  waiters[struct{}] // Pings held until the walks end
}

// pruneRequest is a pending walk: repos nil = every repository.
type pruneRequest struct {
	repos map[string]bool
	all   bool
}

// checksPruned reports a finished prune walk to the checks supervisor,
// with the requests it answers (handed to the walk when it started).
type checksPruned struct {
	removed int
	err     error
	waiters waiters[struct{}]
}

// Receive dispatches the checks supervisor's messages.
func (a *checksActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "checks"))
		a.startPruning(ctx)
	case messages.CheckRun:
		a.route(ctx, m)
	case checkIdle:
		a.idle(ctx, m)
	case checkNote:
		a.stats.Started += m.started
		a.stats.Reused += m.reused
		a.stats.Joined += m.joined
		a.stats.Running += m.started - m.finished
		if m.storedRepo != "" {
			a.requestPrune(ctx, []string{m.storedRepo}, nil)
		}
	case *actor.Terminated:
		a.terminated(ctx, m.Who)
	case messages.CheckPrune:
		a.requestPrune(ctx, nil, ctx.Sender())
	case checksPruned:
		a.pruned(ctx, m)
	case messages.CheckStats:
		st := a.stats
		st.Active = len(a.children)
		ctx.Respond(st)
	case messages.Counts:
		ctx.Respond(messages.CountsReply{ByKind: map[string]int{"check": len(a.children)}})
	case messages.Ping:
		// A barrier covers the prune walks started before it.
		if a.pruning || a.pruneNext != nil {
			a.pingWaits.add(ctx, struct{}{}, 0)
			return
		}
		ctx.Respond(messages.Pong{})
	case *actor.Stopping, *actor.Restarting:
		// A restart stops every check actor (each answers its waiters);
		// what waits here for a successor is answered now.
		a.pruner.stop()
		a.pruner = nil
		for _, c := range a.children {
			for _, p := range c.pending {
				if p.sender != nil {
					ctx.Send(p.sender, Failure(errs.New(errs.Unavailable, "checks are shutting down")))
				}
			}
			c.pending = nil
		}
		shutting := func(struct{}) any { return Failure(errs.New(errs.Unavailable, "checks are shutting down")) }
		a.pruneWaits.answerAll(ctx, shutting)
		a.pingWaits.answerAll(ctx, shutting)
	}
}

// requestPrune queues a prune walk of repos (nil = all); waiter, if any, is
// answered CheckPruned when the walk that covers it ends.
func (a *checksActor) requestPrune(ctx actor.Context, repos []string, waiter *actor.PID) {
	if a.pruneNext == nil {
		a.pruneNext = &pruneRequest{repos: map[string]bool{}}
	}
	if repos == nil {
		a.pruneNext.all = true
	}
	for _, r := range repos {
		a.pruneNext.repos[r] = true
	}
	if waiter != nil {
		a.pruneWaits.addFor(ctx, waiter, struct{}{}, 0)
	}
	a.startPrune(ctx)
}

// startPrune starts the queued walk unless one is running.
func (a *checksActor) startPrune(ctx actor.Context) {
	if a.pruning || a.pruneNext == nil {
		return
	}
	req, batch := a.pruneNext, a.pruneWaits
	a.pruneNext, a.pruneWaits, a.pruning = nil, waiters[struct{}]{}, true
	var repos []string
	if !req.all {
		for r := range req.repos {
			repos = append(repos, r)
		}
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.cfg.Tasks.Go(func() {
		n, err := a.prune(repos)
		root.Send(self, checksPruned{removed: n, err: err, waiters: batch})
	})
}

func (a *checksActor) pruned(ctx actor.Context, m checksPruned) {
	a.pruning = false
	if m.err != nil {
		a.lg.Warn("prune check evidence", zap.Error(m.err))
	}
	m.waiters.answerAll(ctx, func(struct{}) any {
		if m.err != nil {
			return Failure(m.err)
		}
		return messages.CheckPruned{Removed: m.removed}
	})
	a.startPrune(ctx)
	if !a.pruning {
		a.pingWaits.answerAll(ctx, func(struct{}) any { return messages.Pong{} })
	}
}

func (a *checksActor) route(ctx actor.Context, m messages.CheckRun) {
	if m.Key.Identity == "" || m.Key.RepoID == "" {
		reply(ctx, nil, errs.New(errs.InvalidArgument, "a check run needs a repo_id and an identity"))
		return
	}
	if m.Key.Shared && m.Key.CommonDir == "" {
		reply(ctx, nil, errs.New(errs.InvalidArgument, "a shared check run needs the git common dir"))
		return
	}
	name := CheckActorName(m.Key)
	c := a.children[name]
	if c != nil && c.stopping {
		c.pending = append(c.pending, pendingMsg{msg: m, sender: ctx.Sender()})
		return
	}
	if c == nil {
		var err error
		if c, err = a.spawn(ctx, name, m.Key); err != nil {
			reply(ctx, nil, err)
			return
		}
	}
	c.forwarded++
	ctx.Forward(c.pid)
}

func (a *checksActor) spawn(ctx actor.Context, name string, key messages.CheckKey) (*checkChild, error) {
	prod := newCheckActor(checkConfig{
		store: a.store, lg: a.lg, now: a.cfg.Now, key: key,
		idle: a.cfg.Idle, runner: a.cfg.Runner, tasks: a.cfg.Tasks,
	})
	if a.cfg.childWrap != nil {
		prod = a.cfg.childWrap(prod)
	}
	props := actor.PropsFromProducer(prod, actor.WithReceiverMiddleware(Recover(a.lg)))
	pid, err := ctx.SpawnNamed(props, name)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "start check actor %s: %v", name, err)
	}
	c := &checkChild{key: key, pid: pid}
	a.children[name] = c
	a.byPID[pid.Id] = name
	a.stats.Spawned++
	return c, nil
}

// idle passivates a check actor that has answered every Run sent to it:
// later Runs for its key wait until it has stopped.
func (a *checksActor) idle(ctx actor.Context, m checkIdle) {
	name, ok := a.byPID[m.pid.Id]
	if !ok {
		return
	}
	c := a.children[name]
	if c.stopping || c.forwarded != m.handled {
		return // a Run is on its way: the actor is not idle after all
	}
	c.stopping = true
	a.stats.Passived++
	ctx.Stop(c.pid)
}

func (a *checksActor) terminated(ctx actor.Context, who *actor.PID) {
	name, ok := a.byPID[who.Id]
	if !ok {
		return
	}
	delete(a.byPID, who.Id)
	c := a.children[name]
	delete(a.children, name)
	if c == nil || len(c.pending) == 0 {
		return
	}
	next, err := a.spawn(ctx, name, c.key)
	for _, p := range c.pending {
		if err != nil {
			if p.sender != nil {
				ctx.Send(p.sender, Failure(err))
			}
			continue
		}
		next.forwarded++
		if p.sender != nil {
			ctx.RequestWithCustomSender(next.pid, p.msg, p.sender)
		} else {
			ctx.Send(next.pid, p.msg)
		}
	}
}

func (a *checksActor) startPruning(ctx actor.Context) {
	if a.cfg.PruneEvery < 0 {
		return
	}
	a.pruner = startTicker(ctx, a.cfg.PruneEvery, func() any { return messages.CheckPrune{} })
}

// prune bounds the evidence of the given repositories (nil = all) to
// the budget (checkid.Evict: failed runs, then the least recently used
// passes beyond MaxPerRepo entries or MaxBytesPerRepo bytes), outside the
// actor (it reads only the store and the immutable config). Definition and
// shared index entries pointing at removed evidence go with them.
func (a *checksActor) prune(repos []string) (int, error) {
	type item struct {
		key []byte
		ev  messages.CheckEvidence
	}
	byRepo := map[string][]item{}
	sizes := map[string][]checkid.Held{}
	scan := func(prefix []byte) error {
		return a.store.ScanRaw(prefix, func(key, value []byte) error {
			if !isEvidenceKey(key) {
				return nil
			}
			var ev messages.CheckEvidence
			if err := persistence.Decode(value, &ev); err != nil {
				return nil // left for `harness store dump`
			}
			byRepo[ev.RepoID] = append(byRepo[ev.RepoID], item{key: key, ev: ev})
			sizes[ev.RepoID] = append(sizes[ev.RepoID], checkid.Held{Key: string(key), Bytes: int64(len(key) + len(value)),
				Passed: ev.Outcome.Passed, LastUsed: lastUse(&ev)})
			return nil
		})
	}
	if repos == nil {
		if err := scan([]byte(persistence.PrefixCheck)); err != nil {
			return 0, err
		}
	} else {
		for _, r := range repos {
			if err := scan(persistence.CheckEvidencePrefix(r)); err != nil {
				return 0, err
			}
		}
	}
	var drop []item
	budget := checkid.Budget{MaxCount: a.cfg.MaxPerRepo, MaxBytes: a.cfg.MaxBytesPerRepo}
	for repo, items := range byRepo {
		for _, i := range checkid.Evict(sizes[repo], budget) {
			drop = append(drop, items[i])
		}
	}
	if len(drop) == 0 {
		return 0, nil
	}
	err := a.store.Update(false, func(tx *persistence.Txn) error {
		for _, it := range drop {
			if err := tx.Delete(it.key); err != nil {
				return err
			}
			if it.ev.DefinitionDigest != "" {
				dk := persistence.CheckDefKey(it.ev.RepoID, it.ev.DefinitionDigest)
				var ix checkDefIndex
				if err := tx.Get(dk, &ix); err == nil && ix.Identity == it.ev.Identity {
					if err := tx.Delete(dk); err != nil {
						return err
					}
				}
			}
			if it.ev.Shared && it.ev.CommonDir != "" {
				sk := persistence.CheckSharedKey(it.ev.CommonDir, it.ev.Identity)
				var owner string
				if err := tx.Get(sk, &owner); err == nil && owner == it.ev.RepoID {
					if err := tx.Delete(sk); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(drop), nil
}

// isEvidenceKey reports whether key is check/<repo id>/sha256:<hex>.
func isEvidenceKey(key []byte) bool {
	if bytes.HasPrefix(key, []byte(persistence.PrefixCheckShared)) || !bytes.HasPrefix(key, []byte(persistence.PrefixCheck)) {
		return false
	}
	rest := key[len(persistence.PrefixCheck):]
	i := bytes.IndexByte(rest, '/')
	return i > 0 && bytes.HasPrefix(rest[i+1:], []byte("sha256:")) && bytes.IndexByte(rest[i+1:], '/') < 0
}

// The environment variables of the check evidence budget (a count and
// bytes per repository; unset or invalid = the default, 0 = no bound).
const (
	EnvCheckEvidenceMax      = "HARNESSD_CHECK_EVIDENCE_MAX"
	EnvCheckEvidenceMaxBytes = "HARNESSD_CHECK_EVIDENCE_MAX_BYTES"
)

// CheckBudgetFromEnv returns cfg with its evidence budget taken from the
// environment (EnvCheckEvidenceMax, EnvCheckEvidenceMaxBytes) where set.
func CheckBudgetFromEnv(cfg ChecksConfig) ChecksConfig {
	if n, ok := envBound(EnvCheckEvidenceMax); ok {
		cfg.MaxPerRepo = int(n)
	}
	if n, ok := envBound(EnvCheckEvidenceMaxBytes); ok {
		cfg.MaxBytesPerRepo = n
	}
	return cfg
}

// envBound reads a bound: a non-negative integer, 0 meaning none (-1 in
// ChecksConfig).
func envBound(name string) (int64, bool) {
	n, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if n == 0 {
		return -1, true
	}
	return n, true
}
