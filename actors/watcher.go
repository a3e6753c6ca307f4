package actors

import (
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	iwatch "github.com/harnessd/harnessd/internal/watch"
	"github.com/harnessd/harnessd/messages"
)

// Watcher keeps the live view of one checkout's work tree: a child of the
// checkout, fed by an inotify pump (internal/watch) whose batches arrive as
// messages, so generations, changed paths and sync cookies are ordered by
// the mailbox. It answers messages.WatchSync once the asker's cookie event
// has been seen. Idle for WatchIdle, it asks its checkout to stop it
// (passivation): the watches are released and rebuilt on the next use.
//
// The pump's walk (blocking I/O) runs in a goroutine started from Started.
// A sync that arrives before it is ready waits for it when it comes from a
// view with no position yet (Epoch 0: a view warming up in the
// background); one from a view that holds a position (after a
// passivation) is answered at once, not ready (watch.ReasonStarting): that
// view must rebuild whatever the answer, so it answers its caller from git
// and warms up in the background instead of making it wait for the walk.
type Watcher struct {
	cfg   WatchConfig
	root  string
	lg    *zap.Logger
	track *iwatch.Tracker
	pump  *iwatch.Pump
	life  *watchLife

	ready  bool
	failed string // why the checkout cannot be watched ("" = fine)
	// late: a sync cookie was not seen in time, and none has been since.
	// Syncs are answered not Ready at once meanwhile (the caller runs
	// git), instead of each waiting SyncWait for an event that may never
	// come (a file system whose changes inotify does not report); the
	// next cookie event, of any sync, ends it.
	late    bool
	waiters waiters[messages.WatchSync] // syncs waiting for their cookie (SyncWait)
	early   waiters[messages.WatchSync] // syncs before the pump was ready

	handled   uint64
	idleTimer *time.Timer

	self *actor.PID
	// evicting: the budget chose this watcher to make room for another;
	// it asks its checkout to stop it once no sync waits on it.
	evicting bool
}

// WatchConfig configures the watchers of checkouts.
type WatchConfig struct {
	// Off disables watchers: every WatchSync is answered not Ready.
	Off bool
	// CookieBase holds the cookie dirs (watch.CookieDir(CookieBase,
	// root)); it must be absolute, and out of reach of confined processes.
	CookieBase string
	// Ignored lists the directories of a work tree git ignores entirely
	// (not watched); nil = watch every directory.
	Ignored func(root string) map[string]bool
	// Idle is the passivation delay (0 = WatchIdle).
	Idle time.Duration
	// SyncWait bounds the wait for a cookie's event (0 = WatchSyncWait).
	SyncWait time.Duration
	// Passivated, if set, is called (from the checkout's Receive) each
	// time an idle watcher is stopped; tests wait on it.
	Passivated func()
	// Changed, if set, sees every batch of changed paths of a checkout as
	// the watch reports it (lost: events were lost, anything may have
	// changed), from the watch's own goroutine, before the watcher does:
	// the secrets cache learns at once that a secret-named file appeared.
	// It must not block.
	Changed func(root string, paths []string, lost bool)
	// Budget caps the watchers of every checkout together (their inotify
	// instances); nil = no cap.
	Budget *WatchBudget
}

// WatchBudget caps how many checkouts are watched at once: each watcher
// holds one of the user's inotify instances, and the kernel's
// max_user_instances is shared with every other program the user runs.
// Starting a watcher beyond the cap passivates the least recently used
// ones (iwatch.Evict): their checkouts are answered by git and rg, as with
// the live index off, and get a watcher again on their next use. It is
// shared by the watchers of all checkouts, which call it from their
// Receive (a mutex, no I/O).
type WatchBudget struct {
	cap int
	now func() time.Time

	mu     sync.Mutex // protects active
	active map[string]watchSlot
}

type watchSlot struct {
	pid  *actor.PID
	last time.Time
}

// NewWatchBudget returns a budget of limit watchers: 0 = a share
// (iwatch.DefaultShare) of the kernel's max_user_instances, negative = no
// cap (nil).
func NewWatchBudget(limit int) *WatchBudget {
	switch {
	case limit < 0:
		return nil
	case limit == 0:
		n, _ := iwatch.ReadMaxInstances(iwatch.MaxInstancesPath) // unknown: the kernel's default
		limit = iwatch.InstanceCap(n, iwatch.DefaultShare)
	}
	return &WatchBudget{cap: limit, now: time.Now, active: map[string]watchSlot{}}
}

// Cap returns how many watchers may run at once (0 for no budget).
func (b *WatchBudget) Cap() int {
	if b == nil {
		return 0
	}
	return b.cap
}

// admit counts a starting watcher and returns the watchers to passivate
// to make room for it.
func (b *WatchBudget) admit(pid *actor.PID) []*actor.PID {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	uses := make([]iwatch.Use, 0, len(b.active))
	for k, sl := range b.active {
		uses = append(uses, iwatch.Use{Key: k, Last: sl.last})
	}
	var out []*actor.PID
	for _, k := range iwatch.Evict(uses, b.cap, pid.String()) {
		out = append(out, b.active[k].pid) // counted until it stops (leave)
	}
	b.active[pid.String()] = watchSlot{pid: pid, last: now}
	return out
}

// touch records a use of a watcher.
func (b *WatchBudget) touch(pid *actor.PID) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if sl, ok := b.active[pid.String()]; ok {
		sl.last = b.now()
		b.active[pid.String()] = sl
	}
}

// leave uncounts a watcher that stopped.
func (b *WatchBudget) leave(pid *actor.PID) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.active, pid.String())
}

// running returns how many watchers the budget counts.
func (b *WatchBudget) running() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.active)
}

// Defaults of WatchConfig.
const (
	WatchIdle     = 10 * time.Minute
	WatchSyncWait = 2 * time.Second
)

// watchLife hands the pump from the goroutine that starts it to the
// actor, or closes it when the actor stopped first.
type watchLife struct {
	mu      sync.Mutex
	stopped bool
	pump    *iwatch.Pump
}

// watchPumpStarted reports the end of the pump's initial walk.
type watchPumpStarted struct {
	pump *iwatch.Pump
	err  error
}

// watchIdleTick is the passivation timer's message; watchIdle is what the
// watcher tells its checkout when it has been idle (or evicted);
// watchEvict is the budget's choice of this watcher to make room.
type (
	watchIdleTick struct{ handled uint64 }
	watchIdle     struct {
		pid     *actor.PID
		handled uint64
	}
	watchEvict struct{}
)

func newWatcher(root string, cfg WatchConfig, lg *zap.Logger) actor.Producer {
	if cfg.Idle <= 0 {
		cfg.Idle = WatchIdle
	}
	if cfg.SyncWait <= 0 {
		cfg.SyncWait = WatchSyncWait
	}
	return func() actor.Actor {
		return &Watcher{cfg: cfg, root: root, lg: lg, track: iwatch.NewTrackerAt(uint64(time.Now().UnixNano()), 0), life: &watchLife{}}
	}
}

// Receive dispatches the watcher's messages.
func (a *Watcher) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.self = ctx.Self()
		a.start(ctx)
		a.armIdle(ctx)
	case watchEvict:
		a.evicting = true
		a.passivateIfEvicted(ctx)
	case watchPumpStarted:
		a.pumpStarted(ctx, m)
	case iwatch.Batch:
		if m.Failed != "" && a.failed == "" {
			a.failed = m.Failed
			a.lg.Info("checkout no longer watched", zap.String("root", a.root), zap.String("reason", m.Failed))
		}
		if len(m.Cookies) > 0 && a.late {
			a.late = false
			a.lg.Info("sync cookies arrive again", zap.String("root", a.root))
		}
		for _, c := range a.track.Apply(m) {
			if w := a.waiters.find(func(s messages.WatchSync) bool { return s.Cookie == c }); w != nil && a.track.TakeCookie(c) {
				st := a.state(w.req)
				st.CookieSeen = true
				a.waiters.answer(ctx, w, st)
			}
		}
		a.passivateIfEvicted(ctx)
	case messages.WatchSync:
		a.handled++
		a.cfg.Budget.touch(a.self)
		a.sync(ctx, m)
		a.passivateIfEvicted(ctx)
	case messages.WatchOverflow:
		a.handled++
		a.track.Apply(iwatch.Batch{Overflow: true, Reason: "forced overflow"})
		ctx.Respond(a.state(messages.WatchSync{}))
	case waitExpired:
		if w, ok := a.waiters.expired(m); ok {
			if !a.late {
				a.late = true
				a.lg.Warn("a sync cookie was not seen in time: answering from git until one is", zap.String("root", a.root), zap.Duration("wait", a.cfg.SyncWait))
			}
			if w.sender != nil {
				ctx.Send(w.sender, Failure(errs.New(errs.Unavailable, "the watcher did not see its sync cookie within %s", a.cfg.SyncWait)))
			}
		}
		a.passivateIfEvicted(ctx)
	case watchIdleTick:
		switch {
		// Busy: a sync since the timer was armed, one waiting for its
		// cookie, or one waiting for the watches (the first walk runs git
		// and may outlast Idle; stopping now would fail it).
		case m.handled != a.handled || a.waiters.size() > 0 || a.early.size() > 0:
			a.armIdle(ctx)
		case ctx.Parent() != nil:
			ctx.Send(ctx.Parent(), watchIdle{pid: ctx.Self(), handled: a.handled})
			a.armIdle(ctx)
		}
	case *actor.Stopping:
		a.cfg.Budget.leave(a.self)
		if a.idleTimer != nil {
			a.idleTimer.Stop()
		}
		stopping := func(messages.WatchSync) any {
			return Failure(errs.New(errs.Unavailable, "the watcher of %s is stopping", a.root))
		}
		a.waiters.answerAll(ctx, stopping)
		a.early.answerAll(ctx, stopping)
		a.life.mu.Lock()
		a.life.stopped = true
		if a.life.pump != nil {
			_ = a.life.pump.Close()
		}
		a.life.mu.Unlock()
		a.pump = nil
	}
}

func (a *Watcher) start(ctx actor.Context) {
	if a.cfg.Off {
		a.ready, a.failed = true, "the live index is off"
		return
	}
	for _, pid := range a.cfg.Budget.admit(ctx.Self()) {
		ctx.Send(pid, watchEvict{})
	}
	self, sys := ctx.Self(), ctx.ActorSystem()
	cfg, root, life := a.cfg, a.root, a.life
	go func() {
		var ignored map[string]bool
		if cfg.Ignored != nil {
			ignored = cfg.Ignored(root)
		}
		p, err := iwatch.Start(root, iwatch.Options{Ignored: ignored, CookieDir: iwatch.CookieDir(cfg.CookieBase, root)}, func(b iwatch.Batch) {
			if cfg.Changed != nil && (len(b.Paths) > 0 || b.Overflow) {
				cfg.Changed(root, b.Paths, b.Overflow)
			}
			sys.Root.Send(self, b)
		})
		life.mu.Lock()
		if life.stopped && p != nil {
			_ = p.Close()
			p, err = nil, errs.New(errs.Unavailable, "the watcher stopped")
		}
		life.pump = p
		life.mu.Unlock()
		sys.Root.Send(self, watchPumpStarted{pump: p, err: err})
	}()
}

func (a *Watcher) pumpStarted(ctx actor.Context, m watchPumpStarted) {
	a.ready = true
	if m.err != nil {
		a.failed = m.err.Error()
		a.lg.Info("checkout not watched", zap.String("root", a.root), zap.Error(m.err))
	} else {
		a.pump = m.pump
		// Whatever happened before the watches existed is unknown: a new
		// epoch makes every asker rebuild.
		a.track.Apply(iwatch.Batch{Overflow: true, Reason: "watcher started"})
	}
	// The early askers' cookies may predate the watch on the git dir:
	// answer them with the new epoch (they rebuild, after the watches
	// exist, so nothing before their ask is missed).
	a.early.answerAll(ctx, func(m messages.WatchSync) any { return a.state(m) })
}

func (a *Watcher) sync(ctx actor.Context, m messages.WatchSync) {
	switch {
	case !a.ready && m.Epoch != 0:
		ctx.Respond(messages.WatchState{Reason: iwatch.ReasonStarting})
	case !a.ready:
		a.early.add(ctx, m, 0)
	case a.failed != "":
		ctx.Respond(a.state(m))
	case a.track.TakeCookie(m.Cookie):
		st := a.state(m)
		st.CookieSeen = true
		ctx.Respond(st)
	case a.late:
		// Not Ready, CookieSeen false: the caller runs git and never
		// raises this name again; its event, when it comes, ends late.
		ctx.Respond(messages.WatchState{Reason: lateReason(a.cfg.SyncWait)})
	case a.otherEpoch(m):
		// The asker rebuilds from git after this answer (it is not
		// complete), and the watches exist by now, so it needs no proof
		// that earlier events were seen; its cookie may even predate the
		// watch on the git dir and never be seen. (CookieSeen is false:
		// the asker must not reuse the name, whose event may come later.)
		ctx.Respond(a.state(m))
	default:
		if old := a.waiters.find(func(s messages.WatchSync) bool { return s.Cookie == m.Cookie }); old != nil { // a reused name: answer the older ask
			a.waiters.answer(ctx, old, Failure(errs.New(errs.Unavailable, "sync cookie %s asked twice", m.Cookie)))
		}
		a.waiters.add(ctx, m, a.cfg.SyncWait)
	}
}

// lateReason says why a sync is answered from git while cookies are late.
func lateReason(wait time.Duration) string {
	return fmt.Sprintf("the watcher saw no sync cookie within %s (a file system whose changes inotify does not report, or a backlog): answering from git until one arrives", wait)
}

// otherEpoch reports whether m's asker is from another epoch than the
// tracker's (its answer cannot be complete).
func (a *Watcher) otherEpoch(m messages.WatchSync) bool {
	epoch, _ := a.track.Position()
	return m.Epoch != epoch
}

// state answers m from the tracker.
func (a *Watcher) state(m messages.WatchSync) messages.WatchState {
	if a.failed != "" {
		return messages.WatchState{Reason: a.failed}
	}
	st := a.track.Since(m.Epoch, m.Gen)
	out := messages.WatchState{Ready: true, Reason: st.Reason, Epoch: st.Epoch, Gen: st.Gen, Complete: st.Complete, Changed: st.Changed, Meta: st.Meta}
	if a.pump != nil {
		out.Watches = a.pump.Watches()
	}
	return out
}

// passivateIfEvicted asks the checkout to stop an evicted watcher once no
// sync waits on it (the checkout stops it only if no sync is on its way).
func (a *Watcher) passivateIfEvicted(ctx actor.Context) {
	if !a.evicting || a.waiters.size() > 0 || a.early.size() > 0 || ctx.Parent() == nil {
		return
	}
	ctx.Send(ctx.Parent(), watchIdle{pid: ctx.Self(), handled: a.handled})
}

// armIdle (re)starts the passivation timer (a plain timer sending a
// message; see checkActor.armIdle for why not SetReceiveTimeout).
func (a *Watcher) armIdle(ctx actor.Context) {
	if a.idleTimer != nil {
		a.idleTimer.Stop()
	}
	self, sys, handled := ctx.Self(), ctx.ActorSystem(), a.handled
	a.idleTimer = time.AfterFunc(a.cfg.Idle, func() { sys.Root.Send(self, watchIdleTick{handled: handled}) })
}
