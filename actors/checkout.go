package actors

import (
	"errors"
	"fmt"
	"maps"
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
// It keeps only the overlap index (lease.Table: which keys are leased by
// whom, the newest token of each): every granted lease is an actor of its
// own (Lease, a child) that keeps its TTL, renewals and expiry. The
// checkout hands a lease's Renew, Fence and Release to its actor (a Fence
// only once the lease's tokens are still the newest), and frees the keys
// when the actor reports that the lease ended. The expiry a MUTATION_BUSY,
// ListLeases or LeaseHistory names is asked of the lease actors.
//
// Mailbox order is the synchronisation: no lock guards the index.
//
// When harnessd begins shutting down (LeaseDrain) the checkout answers its
// queued requests UNAVAILABLE at once, with nothing_written in the details
// (the mutation engine then closes their ledger entries as never begun),
// and refuses every later request that would have to wait; holders finish.
// It also remembers the last maxEnded leases that ended, so a reader can
// ask who held the checkout while it ran (LeaseHistory).
//
// A store that cannot be read at start leaves the checkout broken rather
// than panicking into a restart loop (a restart reads the same store): it
// logs the error once and answers every lease request with it.
type Checkout struct {
	repo  messages.Repository
	store *persistence.Store
	lg    *zap.Logger
	now   func() time.Time

	table    *lease.Table
	reserved map[lease.Key]uint64  // persisted fencing reservation per key
	pids     map[string]*actor.PID // lease id -> lease actor
	waiters  waiters[leaseWait]
	runs     map[string]string // lease id -> the run it was taken for (leases of runs only)

	// broken is the error the store gave at restore: every lease request
	// is answered with it.
	broken error
	// stopping is set once the checkout stops or restarts: its lease
	// actors stop with it, and their leases are not lost for that.
	stopping bool
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

	// fleet is the token block a fleet reserved (TokenBlock), shared by
	// every incarnation of the actor; high is the highest token issued
	// or restored.
	fleet *TokenBlock
	high  uint64
}

// TokenBlock is the block of fencing tokens a fleet reserved for the
// checkout (harness/fleet.go): every token from now on is above Floor
// (never lowered), and a grant whose token would pass Ceiling is refused
// (UNAVAILABLE, nothing written) until a higher block comes. Ceiling 0
// changes nothing. Answered with TokenBlockSet. The block outlives a
// restart of the actor, not of the process; without a fleet no block is
// ever set and nothing changes.
type TokenBlock struct{ Floor, Ceiling uint64 }

// TokenBlockSet answers TokenBlock: High is the highest token the
// checkout issued or restored from its persisted reservations.
type TokenBlockSet struct{ High uint64 }

// leaseWait is an Acquire queued until its keys are free.
type leaseWait struct {
	want   lease.Request
	run    string    // the run of the request ("" = none)
	since  time.Time // when it started waiting
	notify bool      // Acquire.NotifyLost: its sender owns the lease
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

// describeWait bounds how long the checkout waits for a lease actor to
// describe its lease (then the index's record stands in).
const describeWait = 5 * time.Second

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
	fleet := &TokenBlock{}
	return func() actor.Actor {
		return &Checkout{repo: repo, store: store, lg: lg, now: now, deadlocks: cfg.Deadlocks, watch: cfg.Watch, fleet: fleet}
	}
}

// Receive dispatches the checkout's messages.
func (a *Checkout) Receive(ctx actor.Context) {
	if a.broken != nil && a.refuse(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "checkout"), zap.String("checkout_id", a.repo.CheckoutID))
		a.restore(ctx)
	case messages.Acquire:
		a.acquire(ctx, m)
	case messages.Renew:
		if !a.handOn(ctx, m.LeaseID) {
			reply(ctx, nil, errs.New(errs.LeaseLost, "lease %s is not held (released, expired or never granted)", m.LeaseID).With("lease_id", m.LeaseID))
		}
	case messages.Release:
		if !a.handOn(ctx, m.LeaseID) {
			reply(ctx, messages.Released{}, nil)
		}
	case messages.Fence:
		a.fence(ctx, m.LeaseID)
	case TokenBlock:
		if m.Ceiling > 0 {
			*a.fleet = TokenBlock{Floor: max(a.fleet.Floor, m.Floor), Ceiling: m.Ceiling}
			a.table.SetFloor(max(a.store.FenceFloor(), a.fleet.Floor))
		}
		reply(ctx, TokenBlockSet{High: a.high}, nil)
	case leaseEnded:
		a.leaseEnded(ctx, m)
	case messages.LeaseTick:
		for _, pid := range a.pids {
			ctx.Send(pid, m)
		}
	case waitExpired:
		a.waitExpired(ctx, m)
	case messages.ListLeases:
		a.gather(ctx, func(st map[string]leaseState) { ctx.Respond(messages.LeaseList{Leases: a.list(st)}) })
	case messages.LeaseHistory:
		a.gather(ctx, func(st map[string]leaseState) { ctx.Respond(a.history(m.Since, st)) })
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
			return
		}
		a.leaseActorStopped(ctx, m.Who)
	case *actor.Stopping, *actor.Restarting:
		// A restarted instance reloads the fencing marks and durable
		// leases (its lease actors stop with it); its waiters are answered
		// now rather than left to time out (and withdrawn from the
		// deadlock detector).
		a.stopping = true
		a.waiters.answerAll(ctx, func(leaseWait) any {
			return Failure(errs.New(errs.Unavailable, "checkout %s is stopping; retry — nothing was written", a.repo.CheckoutID).
				With(DetailNothingWritten, true))
		})
		a.reportWaits(ctx)
	}
}

// refuse answers a lease request of a broken checkout with the store's
// error, and reports whether the message was one.
func (a *Checkout) refuse(ctx actor.Context) bool {
	switch ctx.Message().(type) {
	case messages.Acquire, messages.Renew, messages.Release, messages.Fence, messages.ListLeases, messages.LeaseHistory, TokenBlock:
		reply(ctx, nil, a.broken)
		return true
	}
	return false
}

// watcherPID returns the watcher child, spawning it if none is alive.
func (a *Checkout) watcherPID(ctx actor.Context) *actor.PID {
	if a.watcher == nil {
		a.watcher = ctx.Spawn(actor.PropsFromProducer(newWatcher(a.repo.Root, a.watch, a.lg)))
		a.watchSent = 0
	}
	return a.watcher
}

// restore loads the fencing high-water marks and the durable leases still
// live, and those expired whose job may still run (fenced out: see
// leaseAtLoad), and starts an actor for each of those. A store error leaves the
// checkout broken (see Checkout), logged here once.
func (a *Checkout) restore(ctx actor.Context) {
	a.pids = map[string]*actor.PID{}
	a.runs = map[string]string{}
	a.ended, a.endedFrom = nil, a.now()
	hw, durable, err := a.load()
	if err != nil {
		a.broken = storeError(a.repo.CheckoutID, err)
		a.lg.Error("checkout cannot read its leases from the store; it refuses every lease request until harnessd restarts with a readable store",
			zap.Error(err))
		return
	}
	a.table = lease.NewTable(hw)
	a.table.SetFloor(max(a.store.FenceFloor(), a.fleet.Floor)) // tokens stay above a reset or restored store's, and a fleet's floor
	a.reserved = hw
	for _, tok := range hw {
		a.high = max(a.high, tok)
	}
	now := a.now()
	fenced := map[string]bool{}
	for _, li := range durable {
		l := fromInfo(li)
		fate := leaseAtLoad(l.Live(now), a.holderAtLoad(li))
		if fate != dropAtLoad {
			a.table.Restore(l)
		}
		if _, ok := a.table.Get(li.ID); !ok {
			// Expired while harnessd was down with nothing of its holder
			// left running, or malformed, or overtaken by a later grant:
			// it ended before this instance.
			if err := a.store.DeleteSync(persistence.LeaseKey(a.repo.CheckoutID, li.ID)); err != nil {
				a.lg.Warn("delete ended durable lease", zap.String("lease_id", li.ID), zap.Error(err))
			}
			continue
		}
		if fate == fenceAtLoad {
			fenced[li.ID] = true
			a.lg.Warn("a durable lease expired while harnessd was down and its job may still be running; its keys stay taken until the job's processes are dead",
				zap.String("lease_id", li.ID), zap.String("owner", li.Owner), zap.Time("expired", li.Expires))
		}
		if li.RunID != "" {
			a.runs[li.ID] = li.RunID
		}
	}
	for _, l := range a.table.Leases() {
		if err := a.spawnLease(ctx, a.info(l), nil, fenced[l.ID]); err != nil {
			a.lg.Error("start the actor of a restored lease; the lease is lost", zap.String("lease_id", l.ID), zap.Error(err))
			a.table.Release(l.ID)
			delete(a.runs, l.ID)
		}
	}
}

// JobLeaseOperation is the operation of a writing job's durable lease
// (its Owner is the job's id).
const JobLeaseOperation = "job_start"

// holderState is what the store says, at load, of the holder of a
// durable lease.
type holderState int

const (
	// holderGone: nothing of the holder can be running: the lease is not
	// a job's, the job is unknown, not running, or running under another
	// lease (a later attempt).
	holderGone holderState = iota
	// holderMayRun: the job's record says it runs under this lease: its
	// processes may have outlived the daemon that started them.
	holderMayRun
	// holderUnknown: the job's record could not be read.
	holderUnknown
)

// loadFate is what the checkout does with a durable lease found at load.
type loadFate int

const (
	dropAtLoad    loadFate = iota // ended before this instance: the record goes
	restoreAtLoad                 // still live: held as before
	fenceAtLoad                   // expired, its holder may run: fenced out (see Lease)
)

// leaseAtLoad decides the fate of a durable lease found at load: a live
// one is restored; an expired one is fenced out while its holder may
// still run (or nobody can tell), so its keys go to no one before the
// holder's processes are dead, and dropped otherwise.
func leaseAtLoad(live bool, holder holderState) loadFate {
	switch {
	case live:
		return restoreAtLoad
	case holder == holderGone:
		return dropAtLoad
	default:
		return fenceAtLoad
	}
}

// holderAtLoad reads what the store says of the holder of durable lease
// li: a job whose record says it runs under li may still be running
// (after a restart the jobs actor kills its leftover processes, then
// releases li).
func (a *Checkout) holderAtLoad(li messages.LeaseInfo) holderState {
	return jobHolder(a.store, a.lg, li)
}

// jobHolder reads what the store says of the holder of durable lease li
// (holderAtLoad; and an expired lease whose owner never showed up, see
// Lease.holderMayRun).
func jobHolder(store *persistence.Store, lg *zap.Logger, li messages.LeaseInfo) holderState {
	if li.Operation != JobLeaseOperation || li.Owner == "" {
		return holderGone
	}
	var j messages.Job
	switch err := store.Get(persistence.JobKey(li.Owner), &j); {
	case errors.Is(err, persistence.ErrNotFound):
		return holderGone
	case err != nil:
		lg.Warn("read the job holding a durable lease", zap.String("lease_id", li.ID), zap.String("job_id", li.Owner), zap.Error(err))
		return holderUnknown
	case j.State == messages.JobRunning && j.LeaseID == li.ID:
		return holderMayRun
	}
	return holderGone
}

// load reads the checkout's fencing high-water marks and durable leases.
func (a *Checkout) load() (map[lease.Key]uint64, []messages.LeaseInfo, error) {
	hw := map[lease.Key]uint64{}
	prefix := persistence.FencePrefix(a.repo.CheckoutID)
	err := a.store.Scan(prefix, func(key []byte, decode func(any) error) error {
		var tok uint64
		if err := decode(&tok); err != nil {
			return fmt.Errorf("fencing mark %s: %w", key, err)
		}
		hw[lease.Key(key[len(prefix):])] = tok
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read fencing marks: %w", err)
	}
	var durable []messages.LeaseInfo
	err = a.store.Scan(persistence.LeasePrefix(a.repo.CheckoutID), func(key []byte, decode func(any) error) error {
		var li messages.LeaseInfo
		if err := decode(&li); err != nil {
			return fmt.Errorf("durable lease %s: %w", key, err)
		}
		durable = append(durable, li)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read durable leases: %w", err)
	}
	return hw, durable, nil
}

// storeError is what a checkout whose store could not be read answers: the
// store's own code when it has one (STORE_DAMAGED, ...), else UNAVAILABLE,
// with the fix.
func storeError(checkout string, err error) error {
	code := errs.CodeOf(err)
	if code == errs.Internal {
		code = errs.Unavailable
	}
	return errs.Wrap(code, err, "checkout %s could not read its leases from the store (%v), so it grants, renews and fences nothing: "+
		"check the store with `harness store verify`, then restart harnessd", checkout, err)
}

func (a *Checkout) acquire(ctx actor.Context, m messages.Acquire) {
	req, err := a.request(m)
	if err != nil {
		reply(ctx, nil, err)
		return
	}
	queued := a.blockingWaiter(req.Keys)
	if queued != nil && m.Wait <= 0 {
		reply(ctx, nil, errs.New(errs.MutationBusy, "resource is queued for another %s", queued.req.want.Operation).
			With("holder_operation", queued.req.want.Operation).With("holder_owner", queued.req.want.Owner).With("queued", true))
		return
	}
	if queued == nil {
		info, err := a.grant(ctx, req, m.RunID, ownerOf(ctx.Sender(), m.NotifyLost))
		switch {
		case err == nil:
			reply(ctx, messages.Acquired{Lease: info}, nil)
			return
		case errs.CodeOf(err) != errs.MutationBusy || m.Wait <= 0:
			a.answerBusy(ctx, ctx.Sender(), err)
			return
		}
	}
	// Busy and the caller would wait: refused once shutdown began (nothing
	// was written), else queued in mailbox order.
	if a.draining {
		reply(ctx, nil, errShuttingDown())
		return
	}
	a.waiters.add(ctx, leaseWait{want: req, run: m.RunID, since: a.now(), notify: m.NotifyLost}, m.Wait)
	a.reportWaits(ctx)
}

// ownerOf is the actor a lease tells of its loss: the requester, when it
// asked.
func ownerOf(sender *actor.PID, notify bool) *actor.PID {
	if notify {
		return sender
	}
	return nil
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
func (a *Checkout) blockingWaiter(keys []lease.Key) *waiter[leaseWait] {
	return a.waiters.find(func(w leaseWait) bool { return overlapAny(keys, w.want.Keys) })
}

// grant prepares a lease, persists the new high-water marks (and the lease
// itself when durable) with sync, commits it and starts its actor; only
// then does the caller answer. owner is told if the lease is lost.
func (a *Checkout) grant(ctx actor.Context, req lease.Request, run string, owner *actor.PID) (messages.LeaseInfo, error) {
	now := a.now()
	l, err := a.table.Prepare(req, now)
	if err != nil {
		return messages.LeaseInfo{}, err
	}
	info := toInfo(a.repo.CheckoutID, l)
	info.RunID = run
	top := maxTok(l.Tokens)
	if c := a.fleet.Ceiling; c > 0 && top > c {
		return messages.LeaseInfo{}, errs.New(errs.Unavailable, "checkout %s has issued the fencing tokens its fleet reserved for it (up to %d); this node reserves the next block while its fleet session is live: retry in a moment — nothing was written", a.repo.CheckoutID, c).
			With(DetailNothingWritten, true)
	}
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
	a.high = max(a.high, top)
	if _, ok := a.table.Get(l.ID); !ok {
		return messages.LeaseInfo{}, errs.New(errs.Internal, "lease %s was not committed", l.ID)
	}
	if err := a.spawnLease(ctx, info, owner, false); err != nil {
		// No actor would ever end it: take it back.
		a.table.Release(l.ID)
		if l.Visibility == lease.Durable {
			if derr := a.store.DeleteSync(persistence.LeaseKey(a.repo.CheckoutID, l.ID)); derr != nil {
				a.lg.Warn("delete durable lease", zap.String("lease_id", l.ID), zap.Error(derr))
			}
		}
		return messages.LeaseInfo{}, errs.Wrap(errs.Internal, err, "start the actor of lease %s: %v", l.ID, err)
	}
	if run != "" {
		a.runs[l.ID] = run
	}
	return info, nil
}

// spawnLease starts the actor that holds a granted (or restored) lease.
// A lease restored fenced (expired at load, its holder may run) starts
// fenced out.
func (a *Checkout) spawnLease(ctx actor.Context, info messages.LeaseInfo, owner *actor.PID, fenced bool) error {
	prod := NewLease(info, LeaseConfig{Store: a.store, Logger: a.lg, Now: a.now, Owner: owner, Fenced: fenced})
	if a.leaseWrap != nil {
		prod = a.leaseWrap(prod)
	}
	pid, err := ctx.SpawnNamed(actor.PropsFromProducer(prod, actor.WithReceiverMiddleware(Recover(a.lg))), LeaseName(info.ID))
	if err != nil && !errors.Is(err, actor.ErrNameExists) {
		return err
	}
	a.pids[info.ID] = pid
	return nil
}

// handOn hands the current message to the actor of lease id, which answers
// it, and reports whether the index records that lease (a lease has an
// actor exactly while the index records it).
func (a *Checkout) handOn(ctx actor.Context, id string) bool {
	pid := a.pids[id]
	if pid == nil {
		return false
	}
	ctx.Forward(pid)
	return true
}

// fence answers LEASE_LOST for a lease the index no longer records or whose
// tokens are no longer the newest, and hands the rest to the lease's actor,
// which answers from its expiry.
func (a *Checkout) fence(ctx actor.Context, id string) {
	l, ok := a.table.Get(id)
	pid := a.pids[id]
	if !ok || pid == nil {
		reply(ctx, nil, errs.New(errs.LeaseLost, "lease %s is no longer held (expired or released); nothing was written after the loss", id).With("lease_id", id))
		return
	}
	for k, tok := range l.Tokens {
		if !a.table.Current(k, tok) {
			reply(ctx, nil, errs.New(errs.LeaseLost, "fencing token %d of %s is stale", tok, k).With("lease_id", id).With("key", string(k)))
			return
		}
	}
	ctx.Forward(pid)
}

// leaseEnded frees the keys of a lease whose actor reports its end,
// remembers it (LeaseHistory), stops the actor once it has answered what
// was handed to it, and serves the waiters.
func (a *Checkout) leaseEnded(ctx actor.Context, m leaseEnded) {
	pid, ok := a.pids[m.info.ID]
	if !ok {
		return
	}
	a.table.Release(m.info.ID)
	a.remember(m.info, m.at)
	delete(a.runs, m.info.ID)
	delete(a.pids, m.info.ID)
	ctx.Poison(pid)
	a.serveWaiters(ctx)
}

// leaseActorStopped handles a lease actor that stopped while its lease was
// recorded (its supervisor gave up restarting it): no actor is left to end
// the lease, so it is lost now, and its owner learns it on its next
// renewal or fence.
func (a *Checkout) leaseActorStopped(ctx actor.Context, who *actor.PID) {
	if a.stopping {
		return
	}
	for id, pid := range a.pids {
		if !pid.Equal(who) {
			continue
		}
		l, _ := a.table.Get(id)
		a.lg.Error("lease actor stopped while its lease was held; the lease is lost", zap.String("lease_id", id))
		a.table.Release(id)
		a.remember(a.info(l), a.now())
		delete(a.runs, id)
		delete(a.pids, id)
		if l.Visibility == lease.Durable {
			if err := a.store.DeleteSync(persistence.LeaseKey(a.repo.CheckoutID, id)); err != nil {
				a.lg.Warn("delete durable lease", zap.String("lease_id", id), zap.Error(err))
			}
		}
		a.serveWaiters(ctx)
		return
	}
}

// answerBusy sends err to to. A MUTATION_BUSY naming a lease is sent with
// that lease's current expiry, asked of its actor (the index records the
// one it was granted with, before any renewal).
func (a *Checkout) answerBusy(ctx actor.Context, to *actor.PID, err error) {
	if to == nil {
		return
	}
	e := errs.From(err)
	id, _ := e.Details["lease_id"].(string)
	l, recorded := a.table.Get(id)
	pid := a.pids[id]
	if e.Code != errs.MutationBusy || !recorded || pid == nil {
		ctx.Send(to, Failure(err))
		return
	}
	held, _ := e.Details["held_key"].(string)
	wanted, _ := e.Details["requested_key"].(string)
	ctx.ReenterAfter(ctx.RequestFuture(pid, leaseDescribe{}, describeWait), func(res any, ferr error) {
		if s, ok := res.(leaseState); ok && ferr == nil {
			l.Expires = s.info.Expires
		}
		ctx.Send(to, Failure(lease.Busy(l, lease.Key(held), lease.Key(wanted))))
	})
}

// gather asks the actor of every recorded lease for its lease and calls
// done, in the checkout, once all answered; a lease whose actor did not
// answer within describeWait is described as the index records it.
func (a *Checkout) gather(ctx actor.Context, done func(map[string]leaseState)) {
	states := make(map[string]leaseState, len(a.pids))
	left := len(a.pids)
	if left == 0 {
		done(states)
		return
	}
	for id, pid := range a.pids {
		ctx.ReenterAfter(ctx.RequestFuture(pid, leaseDescribe{}, describeWait), func(res any, err error) {
			if s, ok := res.(leaseState); ok && err == nil {
				states[id] = s
			} else if l, ok := a.table.Get(id); ok {
				states[id] = leaseState{info: a.info(l)}
			}
			if left--; left == 0 {
				done(states)
			}
		})
	}
}

// serveWaiters grants queued requests in order; a waiter that is still
// blocked keeps its place and blocks later waiters that overlap it.
func (a *Checkout) serveWaiters(ctx actor.Context) {
	var kept []*waiter[leaseWait]
	for _, w := range a.waiters.items() {
		blocked := slices.ContainsFunc(kept, func(e *waiter[leaseWait]) bool { return overlapAny(w.req.want.Keys, e.req.want.Keys) })
		if !blocked {
			info, err := a.grant(ctx, w.req.want, w.req.run, ownerOf(w.sender, w.req.notify))
			if err == nil {
				a.waiters.answer(ctx, w, messages.Acquired{Lease: info})
				continue
			}
			if errs.CodeOf(err) != errs.MutationBusy {
				a.waiters.answer(ctx, w, Failure(err))
				continue
			}
		}
		kept = append(kept, w)
	}
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

// waitExpired answers a queued Acquire that ran out of time MUTATION_BUSY,
// naming what still blocks it.
func (a *Checkout) waitExpired(ctx actor.Context, m waitExpired) {
	w, ok := a.waiters.expired(m)
	if !ok {
		return
	}
	_, err := a.table.Prepare(w.req.want, a.now())
	if err == nil {
		err = errs.New(errs.MutationBusy, "resource still busy after waiting")
	}
	a.answerBusy(ctx, w.sender, err)
	a.serveWaiters(ctx)
}

// drain answers every queued request UNAVAILABLE (nothing was written) and
// makes the checkout refuse every later one that would wait: harnessd is
// shutting down. It returns how many it answered.
func (a *Checkout) drain(ctx actor.Context) int {
	a.draining = true
	n := a.waiters.answerAll(ctx, func(leaseWait) any { return Failure(errShuttingDown()) })
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
// ended since then and those held, as their actors describe them (st),
// oldest grant first.
func (a *Checkout) history(since time.Time, st map[string]leaseState) messages.LeaseHeld {
	out := messages.LeaseHeld{Complete: !a.endedFrom.After(since)}
	known := map[string]bool{}
	for _, h := range a.ended {
		known[h.ID] = true
		if !h.Ended.Before(since) {
			out.Leases = append(out.Leases, h)
		}
	}
	// Ended (their actors answered before the checkout heard) before held,
	// each by id, as the memory of ended leases lists them before the index.
	var ended, held []messages.HeldLease
	for _, id := range slices.Sorted(maps.Keys(st)) {
		s := st[id]
		switch {
		case known[id]:
		case s.ended.IsZero():
			held = append(held, messages.HeldLease{LeaseInfo: s.info})
		case !s.ended.Before(since):
			ended = append(ended, messages.HeldLease{LeaseInfo: s.info, Ended: s.ended})
		}
	}
	out.Leases = append(append(out.Leases, ended...), held...)
	slices.SortStableFunc(out.Leases, func(x, y messages.HeldLease) int { return x.Granted.Compare(y.Granted) })
	return out
}

// list returns the leases held and live now, as their actors describe them
// (st), by id.
func (a *Checkout) list(st map[string]leaseState) []messages.LeaseInfo {
	out := make([]messages.LeaseInfo, 0, len(st))
	now := a.now()
	for _, id := range slices.Sorted(maps.Keys(st)) {
		if s := st[id]; s.ended.IsZero() && now.Before(s.info.Expires) {
			out = append(out, s.info)
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

// maxTok answers the highest of a lease's tokens.
func maxTok(toks map[lease.Key]uint64) uint64 {
	var m uint64
	for _, t := range toks {
		m = max(m, t)
	}
	return m
}
