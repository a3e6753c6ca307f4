package actors

import (
	"errors"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Checkout is the lease arbiter of one checkout: it grants write leases
// over the checkout's resource keys, refuses or queues overlapping ones,
// and issues fencing tokens that never go back, also across kill -9 (the
// high-water mark of each key is persisted with sync before a grant).
//
// Mailbox order is the synchronisation: no lock guards the table.
//
// When harnessd begins shutting down (LeaseDrain) the checkout answers its
// queued requests UNAVAILABLE at once, with nothing_written in the details
// (the mutation engine then closes their ledger entries as never begun),
// and refuses every later request that would have to wait; holders finish.
// It also remembers the last maxEnded leases that ended, so a reader can
// ask who held the checkout while it ran (LeaseHistory).
type Checkout struct {
	repo  messages.Repository
	store *persistence.Store
	lg    *zap.Logger
	now   func() time.Time

	table    *lease.Table
	reserved map[lease.Key]uint64  // persisted fencing reservation per key
	pids     map[string]*actor.PID // lease id -> lease actor
	waiters  []*waiter
	seq      uint64
	runs     map[string]string // lease id -> the run it was taken for (leases of runs only)

	// draining is set once harnessd began shutting down: no request waits.
	draining bool
	// ended holds the last maxEnded leases that ended, oldest first; the
	// memory reaches back to endedFrom (this instance's start, or the end
	// of the newest lease it forgot).
	ended     []messages.HeldLease
	endedFrom time.Time

	// deadlocks is the deadlock detector the waits of runs are reported
	// to (nil = none); reported is set while it holds waits of this checkout.
	deadlocks *actor.PID
	reported  bool

	// leaseWrap wraps the producer of lease actors (tests inject faults).
	leaseWrap func(actor.Producer) actor.Producer

	// watch configures the watcher child; watcher is it while alive and
	// watchSent counts the syncs forwarded to it (passivation compares).
	watch     WatchConfig
	watcher   *actor.PID
	watchSent uint64
}

type waiter struct {
	seq    uint64
	req    lease.Request
	run    string    // the run of the request ("" = none)
	since  time.Time // when it started waiting
	sender *actor.PID
	timer  *time.Timer
}

// fenceBlock is how many fencing tokens one persisted reservation covers.
// A key's reservation is written with sync before any token above the
// previous one is issued, so a restart (even after kill -9) starts above
// every token ever issued, at the cost of one fsync per fenceBlock grants.
const fenceBlock = 1024

// maxEnded bounds the memory of ended leases (LeaseHistory).
const maxEnded = 256

// DetailNothingWritten is the detail an error of a lease request carries
// when the request was answered before it held its lease (harnessd began
// shutting down, or the checkout stopped, while it waited): nothing of it
// was written, so its ledger entry is closed as never begun.
const DetailNothingWritten = "nothing_written"

// errShuttingDown answers a request that waits, or would wait, for a lease
// once harnessd began shutting down.
func errShuttingDown() error {
	return errs.New(errs.Unavailable, "harnessd is shutting down; retry after it restarts — nothing was written").
		With(DetailNothingWritten, true)
}

// waitExpired tells the checkout that a queued Acquire ran out of time.
type waitExpired struct{ seq uint64 }

// CheckoutConfig holds a checkout's optional dependencies.
type CheckoutConfig struct {
	// Deadlocks is the deadlock detector (the "deadlocks" child of the
	// root) the checkout reports the waits of runs to; nil = no detection.
	Deadlocks *actor.PID
	// Watch configures the checkout's watcher (the live index).
	Watch WatchConfig
}

// NewCheckout returns the producer of a checkout actor without a deadlock
// detector. now nil = time.Now.
func NewCheckout(repo messages.Repository, store *persistence.Store, lg *zap.Logger, now func() time.Time) actor.Producer {
	return NewCheckoutWith(repo, store, lg, now, CheckoutConfig{})
}

// NewCheckoutWith returns the producer of a checkout actor with cfg.
func NewCheckoutWith(repo messages.Repository, store *persistence.Store, lg *zap.Logger, now func() time.Time, cfg CheckoutConfig) actor.Producer {
	if now == nil {
		now = time.Now
	}
	return func() actor.Actor {
		return &Checkout{repo: repo, store: store, lg: lg, now: now, deadlocks: cfg.Deadlocks, watch: cfg.Watch}
	}
}

// Receive dispatches the checkout's messages.
func (a *Checkout) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "checkout"), zap.String("checkout_id", a.repo.CheckoutID))
		a.restore(ctx)
	case messages.Acquire:
		a.acquire(ctx, m)
	case messages.Renew:
		r, err := a.renew(ctx, m)
		reply(ctx, r, err)
	case messages.Release:
		reply(ctx, a.release(ctx, m.LeaseID), nil)
	case messages.Fence:
		reply(ctx, messages.Fenced{}, a.fence(m.LeaseID))
	case leaseSync:
		if l, ok := a.table.Get(m.id); ok {
			ctx.Respond(messages.LeaseTouched{Expires: l.Expires})
		}
	case messages.LeaseExpired:
		a.expire(ctx, m.Now)
	case messages.LeaseTick:
		a.expire(ctx, m.Now)
	case waitExpired:
		a.waitExpired(ctx, m.seq)
	case messages.ListLeases:
		ctx.Respond(messages.LeaseList{Leases: a.list()})
	case messages.LeaseHistory:
		ctx.Respond(a.history(m.Since))
	case messages.LeaseDrain:
		ctx.Respond(messages.LeaseDrained{Refused: a.drain(ctx)})
	case messages.DeadlockBreak:
		a.breakWait(ctx, m)
	case messages.DeadlockResync:
		a.reported = true // report even nothing: the detector restarted
		a.reportWaits(ctx)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case messages.WatchSync, messages.WatchOverflow:
		pid := a.watcherPID(ctx)
		a.watchSent++
		ctx.Forward(pid)
	case watchIdle:
		if m.pid.Equal(a.watcher) && m.handled == a.watchSent {
			ctx.Stop(a.watcher) // passivate: the next sync starts a new one
			a.watcher, a.watchSent = nil, 0
			if a.watch.Passivated != nil {
				a.watch.Passivated()
			}
		}
	case *actor.Terminated:
		if m.Who.Equal(a.watcher) {
			a.watcher, a.watchSent = nil, 0
		}
	case *actor.Stopping, *actor.Restarting:
		// A restarted instance reloads the fencing marks and durable
		// leases; its waiters are answered now rather than left to time out
		// (and withdrawn from the deadlock detector).
		for _, w := range a.waiters {
			w.timer.Stop()
			ctx.Send(w.sender, Failure(errs.New(errs.Unavailable, "checkout %s is stopping; retry — nothing was written", a.repo.CheckoutID).
				With(DetailNothingWritten, true)))
		}
		a.waiters = nil
		a.reportWaits(ctx)
	}
}

// watcherPID returns the watcher child, spawning it if none is alive.
func (a *Checkout) watcherPID(ctx actor.Context) *actor.PID {
	if a.watcher == nil {
		a.watcher = ctx.Spawn(actor.PropsFromProducer(newWatcher(a.repo.Root, a.watch, a.lg)))
		a.watchSent = 0
	}
	return a.watcher
}

// restore loads the fencing high-water marks and the durable leases.
func (a *Checkout) restore(ctx actor.Context) {
	hw := map[lease.Key]uint64{}
	err := a.store.Scan(persistence.FencePrefix(a.repo.CheckoutID), func(key []byte, decode func(any) error) error {
		var tok uint64
		if err := decode(&tok); err != nil {
			return err
		}
		hw[lease.Key(key[len(persistence.FencePrefix(a.repo.CheckoutID)):])] = tok
		return nil
	})
	if err != nil {
		panic("checkout: restore fencing marks: " + err.Error())
	}
	a.table = lease.NewTable(hw)
	a.table.SetFloor(a.store.FenceFloor()) // tokens stay above a reset or restored store's
	a.reserved = hw
	a.pids = map[string]*actor.PID{}
	a.runs = map[string]string{}
	a.waiters = nil
	a.reported = false
	a.draining = false
	a.ended, a.endedFrom = nil, a.now()
	var durable []messages.LeaseInfo
	err = a.store.Scan(persistence.LeasePrefix(a.repo.CheckoutID), func(_ []byte, decode func(any) error) error {
		var li messages.LeaseInfo
		if err := decode(&li); err != nil {
			return err
		}
		durable = append(durable, li)
		return nil
	})
	if err != nil {
		panic("checkout: restore durable leases: " + err.Error())
	}
	now := a.now()
	for _, li := range durable {
		a.table.Restore(fromInfo(li))
		if li.RunID != "" {
			a.runs[li.ID] = li.RunID
		}
	}
	for _, l := range a.table.Expire(now) {
		a.forget(ctx, l, expiredWhileDown)
	}
	for _, l := range a.table.Leases() {
		a.spawnLease(ctx, a.info(l))
	}
}

func (a *Checkout) acquire(ctx actor.Context, m messages.Acquire) {
	req, err := a.request(m)
	if err != nil {
		reply(ctx, nil, err)
		return
	}
	if w := a.blockingWaiter(req.Keys); w != nil && m.Wait <= 0 {
		reply(ctx, nil, errs.New(errs.MutationBusy, "resource is queued for another %s", w.req.Operation).
			With("holder_operation", w.req.Operation).With("holder_owner", w.req.Owner).With("queued", true))
		return
	}
	if a.blockingWaiter(req.Keys) == nil {
		info, err := a.grant(ctx, req, m.RunID)
		if err == nil || errs.CodeOf(err) != errs.MutationBusy || m.Wait <= 0 {
			reply(ctx, messages.Acquired{Lease: info}, err)
			return
		}
	}
	// Busy and the caller would wait: refused once shutdown began (nothing
	// was written), else queued in mailbox order.
	if a.draining {
		reply(ctx, nil, errShuttingDown())
		return
	}
	a.seq++
	seq, self, sys := a.seq, ctx.Self(), ctx.ActorSystem()
	w := &waiter{seq: seq, req: req, run: m.RunID, since: a.now(), sender: ctx.Sender()}
	w.timer = time.AfterFunc(m.Wait, func() { sys.Root.Send(self, waitExpired{seq: seq}) })
	a.waiters = append(a.waiters, w)
	a.reportWaits(ctx)
}

func (a *Checkout) request(m messages.Acquire) (lease.Request, error) {
	keys := make([]lease.Key, 0, len(m.Keys))
	for _, s := range m.Keys {
		k, err := lease.ParseKey(s)
		if err != nil {
			return lease.Request{}, err
		}
		if k.Checkout() != a.repo.CheckoutID {
			return lease.Request{}, errs.New(errs.InvalidArgument, "key %q is not of checkout %s", s, a.repo.CheckoutID)
		}
		keys = append(keys, k)
	}
	vis := lease.Visibility(m.Visibility)
	if vis == "" {
		vis = lease.Ephemeral
	}
	return lease.Request{Owner: m.Owner, Operation: m.Operation, Keys: keys, TTL: m.TTL, Visibility: vis}, nil
}

// blockingWaiter returns the first queued waiter whose keys overlap keys:
// a newcomer never overtakes a waiter it conflicts with.
func (a *Checkout) blockingWaiter(keys []lease.Key) *waiter {
	for _, w := range a.waiters {
		for _, k := range keys {
			for _, wk := range w.req.Keys {
				if lease.Overlaps(k, wk) {
					return w
				}
			}
		}
	}
	return nil
}

// grant prepares a lease, persists the new high-water marks (and the lease
// itself when durable) with sync, and only then commits and answers.
func (a *Checkout) grant(ctx actor.Context, req lease.Request, run string) (messages.LeaseInfo, error) {
	now := a.now()
	l, err := a.table.Prepare(req, now)
	if err != nil {
		return messages.LeaseInfo{}, err
	}
	info := toInfo(a.repo.CheckoutID, l)
	info.RunID = run
	reserve := map[lease.Key]uint64{}
	for k, tok := range l.Tokens {
		if tok > a.reserved[k] {
			reserve[k] = tok + fenceBlock - 1
		}
	}
	if len(reserve) > 0 || l.Visibility == lease.Durable {
		err = a.store.Update(true, func(tx *persistence.Txn) error {
			for k, tok := range reserve {
				if err := tx.Put(persistence.FenceKey(a.repo.CheckoutID, string(k)), tok); err != nil {
					return err
				}
			}
			if l.Visibility == lease.Durable {
				return tx.Put(persistence.LeaseKey(a.repo.CheckoutID, l.ID), info)
			}
			return nil
		})
		if err != nil {
			return messages.LeaseInfo{}, errs.Wrap(errs.Internal, err, "persist fencing tokens: %v", err)
		}
		for k, tok := range reserve {
			a.reserved[k] = tok
		}
	}
	a.table.Commit(l)
	if _, ok := a.table.Get(l.ID); !ok {
		return messages.LeaseInfo{}, errs.New(errs.Internal, "lease %s was not committed", l.ID)
	}
	if run != "" {
		a.runs[l.ID] = run
	}
	a.spawnLease(ctx, info)
	return info, nil
}

func (a *Checkout) spawnLease(ctx actor.Context, info messages.LeaseInfo) {
	prod := NewLease(info, a.now)
	if a.leaseWrap != nil {
		prod = a.leaseWrap(prod)
	}
	pid, err := ctx.SpawnNamed(actor.PropsFromProducer(prod, actor.WithReceiverMiddleware(Recover(a.lg))), "lease-"+info.ID)
	if err != nil && !errors.Is(err, actor.ErrNameExists) {
		a.lg.Error("spawn lease actor", zap.String("lease_id", info.ID), zap.Error(err))
		return
	}
	a.pids[info.ID] = pid
}

func (a *Checkout) renew(ctx actor.Context, m messages.Renew) (messages.Renewed, error) {
	l, err := a.table.Renew(m.LeaseID, a.now())
	if err != nil {
		return messages.Renewed{}, err
	}
	if pid := a.pids[l.ID]; pid != nil {
		ctx.Send(pid, messages.LeaseTouched{Expires: l.Expires})
	}
	if l.Visibility == lease.Durable {
		if err := a.store.Put(persistence.LeaseKey(a.repo.CheckoutID, l.ID), a.info(l)); err != nil {
			a.lg.Warn("persist renewed durable lease", zap.String("lease_id", l.ID), zap.Error(err))
		}
	}
	return messages.Renewed{Expires: l.Expires}, nil
}

func (a *Checkout) release(ctx actor.Context, id string) messages.Released {
	l, ok := a.table.Release(id)
	if ok {
		a.forget(ctx, l, "")
		a.serveWaiters(ctx)
	}
	return messages.Released{Known: ok}
}

func (a *Checkout) fence(id string) error {
	l, ok := a.table.Get(id)
	now := a.now()
	if !ok || !l.Live(now) {
		return errs.New(errs.LeaseLost, "lease %s is no longer held (expired or released); nothing was written after the loss", id).With("lease_id", id)
	}
	for k, tok := range l.Tokens {
		if !a.table.CurrentAt(k, tok, now) {
			return errs.New(errs.LeaseLost, "fencing token %d of %s is stale", tok, k).With("lease_id", id).With("key", string(k))
		}
	}
	return nil
}

func (a *Checkout) expire(ctx actor.Context, now time.Time) {
	expired := a.table.Expire(now)
	for _, l := range expired {
		a.lg.Warn("lease lost: not renewed before it expired",
			zap.String("lease_id", l.ID), zap.String("operation", l.Operation), zap.String("owner", l.Owner))
		a.forget(ctx, l, "expired")
	}
	if len(expired) > 0 {
		a.serveWaiters(ctx)
	}
}

// expiredWhileDown is the reason forget is given for a durable lease that
// expired while harnessd was down: it ended before this instance.
const expiredWhileDown = "expired while harnessd was down"

// forget stops a lease's actor and deletes its durable record; a lease
// that ends now is remembered as ended (LeaseHistory).
func (a *Checkout) forget(ctx actor.Context, l lease.Lease, reason string) {
	if reason != expiredWhileDown {
		a.remember(a.info(l), a.now())
	}
	delete(a.runs, l.ID)
	if pid := a.pids[l.ID]; pid != nil {
		ctx.Stop(pid)
		delete(a.pids, l.ID)
	}
	if l.Visibility == lease.Durable {
		if err := a.store.DeleteSync(persistence.LeaseKey(a.repo.CheckoutID, l.ID)); err != nil {
			a.lg.Warn("delete durable lease", zap.String("lease_id", l.ID), zap.Error(err))
		}
	}
}

// serveWaiters grants queued requests in order; a waiter that is still
// blocked keeps its place and blocks later waiters that overlap it.
func (a *Checkout) serveWaiters(ctx actor.Context) {
	var keep []*waiter
	for _, w := range a.waiters {
		blocked := false
		for _, earlier := range keep {
			if overlapAny(w.req.Keys, earlier.req.Keys) {
				blocked = true
				break
			}
		}
		if !blocked {
			info, err := a.grant(ctx, w.req, w.run)
			if err == nil {
				w.timer.Stop()
				ctx.Send(w.sender, messages.Acquired{Lease: info})
				continue
			}
			if errs.CodeOf(err) != errs.MutationBusy {
				w.timer.Stop()
				ctx.Send(w.sender, Failure(err))
				continue
			}
		}
		keep = append(keep, w)
	}
	a.waiters = keep
	a.reportWaits(ctx)
}

func overlapAny(a, b []lease.Key) bool {
	for _, x := range a {
		for _, y := range b {
			if lease.Overlaps(x, y) {
				return true
			}
		}
	}
	return false
}

func (a *Checkout) waitExpired(ctx actor.Context, seq uint64) {
	for i, w := range a.waiters {
		if w.seq != seq {
			continue
		}
		a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
		_, err := a.table.Prepare(w.req, a.now())
		if err == nil {
			err = errs.New(errs.MutationBusy, "resource still busy after waiting")
		}
		ctx.Send(w.sender, Failure(err))
		a.serveWaiters(ctx)
		return
	}
}

// drain answers every queued request UNAVAILABLE (nothing was written) and
// makes the checkout refuse every later one that would wait: harnessd is
// shutting down. It returns how many it answered.
func (a *Checkout) drain(ctx actor.Context) int {
	a.draining = true
	n := len(a.waiters)
	for _, w := range a.waiters {
		w.timer.Stop()
		ctx.Send(w.sender, Failure(errShuttingDown()))
	}
	a.waiters = nil
	if n > 0 {
		a.lg.Info("shutting down: lease waiters answered at once", zap.Int("waiters", n))
		a.reportWaits(ctx)
	}
	return n
}

// remember records a lease that ended at end, forgetting the oldest beyond
// maxEnded.
func (a *Checkout) remember(info messages.LeaseInfo, end time.Time) {
	if len(a.ended) == maxEnded {
		a.endedFrom = a.ended[0].Ended
		a.ended = append(a.ended[:0], a.ended[1:]...)
	}
	a.ended = append(a.ended, messages.HeldLease{LeaseInfo: info, Ended: end})
}

// history returns every lease held at some moment since since: those that
// ended since then and the live ones, oldest grant first.
func (a *Checkout) history(since time.Time) messages.LeaseHeld {
	out := messages.LeaseHeld{Complete: !a.endedFrom.After(since)}
	for _, h := range a.ended {
		if !h.Ended.Before(since) {
			out.Leases = append(out.Leases, h)
		}
	}
	for _, l := range a.table.Leases() {
		out.Leases = append(out.Leases, messages.HeldLease{LeaseInfo: a.info(l)})
	}
	slices.SortStableFunc(out.Leases, func(x, y messages.HeldLease) int { return x.Granted.Compare(y.Granted) })
	return out
}

func (a *Checkout) list() []messages.LeaseInfo {
	ls := a.table.Leases()
	out := make([]messages.LeaseInfo, 0, len(ls))
	now := a.now()
	for _, l := range ls {
		if l.Live(now) {
			out = append(out, a.info(l))
		}
	}
	return out
}

// info describes a lease of this checkout, with the run it was taken for.
func (a *Checkout) info(l lease.Lease) messages.LeaseInfo {
	info := toInfo(a.repo.CheckoutID, l)
	info.RunID = a.runs[l.ID]
	return info
}

func toInfo(checkout string, l lease.Lease) messages.LeaseInfo {
	keys := make([]string, len(l.Keys))
	toks := make(map[string]uint64, len(l.Tokens))
	for i, k := range l.Keys {
		keys[i] = string(k)
	}
	for k, v := range l.Tokens {
		toks[string(k)] = v
	}
	return messages.LeaseInfo{ID: l.ID, CheckoutID: checkout, Owner: l.Owner, Operation: l.Operation, Keys: keys, Tokens: toks,
		TTL: l.TTL, Granted: l.Granted, Expires: l.Expires, Visibility: string(l.Visibility)}
}

func fromInfo(li messages.LeaseInfo) lease.Lease {
	keys := make([]lease.Key, len(li.Keys))
	toks := make(map[lease.Key]uint64, len(li.Tokens))
	for i, k := range li.Keys {
		keys[i] = lease.Key(k)
	}
	for k, v := range li.Tokens {
		toks[lease.Key(k)] = v
	}
	return lease.Lease{ID: li.ID, Owner: li.Owner, Operation: li.Operation, Keys: keys, Tokens: toks,
		TTL: li.TTL, Granted: li.Granted, Expires: li.Expires, Visibility: lease.Visibility(li.Visibility)}
}
