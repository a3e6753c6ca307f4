package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Lease is one granted lease, held by its own actor (lease-<id>, a child of
// its checkout): its TTL, its renewals, its expiry, and its end. The
// checkout grants it and keeps only the overlap index (which keys are
// leased by whom, the fencing tokens); it hands the lease's Renew, Fence
// and Release to this actor, which answers them from its lease.Held.
//
// The lease ends when its owner releases it, or when it is not renewed
// before it expires. Either way the actor deletes its durable record, tells
// an owner that asked (messages.LeaseLost, on expiry) to abort, and tells
// its checkout (leaseEnded), which frees the keys in its index and stops
// the actor. Until the checkout has been told, the keys stay taken: an
// expired lease is never overtaken before its holder knows it ended.
//
// A durable lease (a job's, whose processes write on their own) that
// expires is fenced out before its keys go: it stays in the index, Renew
// and Fence answer LEASE_LOST, and its owner is told LeaseLost (again on
// every tick) until it confirms with a Release that its processes are
// dead; only then is the checkout told. An owner nobody knows (a lease
// restored at boot that no job renewed) is waited for FenceOwnerWait, or
// FenceOutMax while its job's record says the job runs under it (the
// restarted jobs actor, still loading, sweeps its leftovers, then
// releases it), an
// owner that never confirms FenceOutMax, then the keys go with an error
// in the log. A durable lease found expired when its checkout loads, while
// its job's record says the job runs under it (its processes may have
// outlived a killed daemon), starts fenced out the same way (Fenced): the
// jobs actor kills the job's leftover processes at boot, then releases it.
//
// The expiry clock is a timer the actor owns, not protoactor's receive
// timeout (whose handler races with the actor stopping; see
// checkActor.armIdle): it only sends leaseTick{Now} into the mailbox, with
// the time of the injected clock, and is armed again after each tick (no
// goroutine waits meanwhile). A restarted instance gets what its
// predecessor knew (the renewed expiry, the owner) handed over on
// Restarting: its producer knows only the grant.
type Lease struct {
	cfg   LeaseConfig
	info  messages.LeaseInfo // as granted: the checkout and run it belongs to
	held  lease.Held
	owner *actor.PID // told LeaseLost on expiry; nil = nobody asked
	lg    *zap.Logger
	timer *time.Timer
	// fencing is set while an expired durable lease waits for its owner to
	// confirm that its processes are dead (since fencingSince).
	fencing      bool
	fencingSince time.Time
}

// Bounds of a fence-out (see Lease).
const (
	// FenceOwnerWait is how long an expired durable lease whose owner is
	// unknown waits for one to renew (and hear LeaseLost).
	FenceOwnerWait = time.Minute
	// FenceOutMax is how long an expired durable lease waits for its
	// owner's confirmation at most.
	FenceOutMax = 10 * time.Minute
)

// LeaseConfig holds what a lease actor needs besides its grant.
type LeaseConfig struct {
	// Store holds a durable lease's record: its actor rewrites it on each
	// renewal and deletes it when the lease ends.
	Store  *persistence.Store
	Logger *zap.Logger
	// Now is the clock; nil = time.Now.
	Now func() time.Time
	// Owner is the actor to tell LeaseLost (Acquire.NotifyLost); nil =
	// none yet (a Renew with NotifyLost names it).
	Owner *actor.PID
	// Fenced starts the actor of a durable lease restored after it
	// expired (its job may still run) fenced out at once, as if it had
	// just expired under it.
	Fenced bool
}

type (
	// leaseTick is the lease's own timer firing; by tells a tick of this
	// instance's timer from one its predecessor armed before a restart.
	leaseTick struct {
		now time.Time
		by  *Lease
	}
	// leaseHandover carries what a restarting lease actor knew to its
	// successor (sent to itself on Restarting).
	leaseHandover struct {
		held         lease.Held
		owner        *actor.PID
		fencing      bool
		fencingSince time.Time
	}
	// leaseDescribe asks a lease actor for its lease; answered leaseState.
	leaseDescribe struct{}
	// leaseState describes a lease as its actor holds it: the renewed
	// expiry, and when it ended (zero while held).
	leaseState struct {
		info  messages.LeaseInfo
		ended time.Time
	}
	// leaseEnded tells the checkout that a lease ended at at (released, or
	// expired when expired is set); info is the lease as its actor last
	// held it.
	leaseEnded struct {
		info    messages.LeaseInfo
		expired bool
		at      time.Time
	}
)

// LeaseName is the name of a lease's actor under its checkout.
func LeaseName(id string) string { return "lease-" + id }

// leaseTickEvery is how often a lease looks at its clock: a tenth of the
// TTL, between 50 ms and 1 s.
func leaseTickEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/10, 50*time.Millisecond), time.Second)
}

// NewLease returns the producer of the actor of a lease granted as info.
func NewLease(info messages.LeaseInfo, cfg LeaseConfig) actor.Producer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return func() actor.Actor {
		return &Lease{cfg: cfg, info: info, held: lease.Hold(fromInfo(info)), owner: cfg.Owner}
	}
}

// Receive dispatches the lease's messages.
func (a *Lease) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.cfg.Logger.With(zap.String("actor", "lease"), zap.String("lease_id", a.held.ID))
		switch {
		case a.cfg.Fenced && a.held.Holding():
			a.check(ctx, a.cfg.Now()) // expired: fenced out now, not at the first tick
		case a.held.Holding():
			a.arm(ctx)
		}
	case leaseHandover:
		a.held.Adopt(m.held)
		if a.owner == nil {
			a.owner = m.owner
		}
		if m.fencing {
			a.fencing, a.fencingSince = true, m.fencingSince
			a.arm(ctx)
		} else if !a.held.Holding() {
			a.disarm()
		}
	case messages.Renew:
		r, err := a.renew(ctx, m)
		reply(ctx, r, err)
	case messages.Fence:
		reply(ctx, messages.Fenced{}, a.held.Fence(a.cfg.Now()))
	case messages.Release:
		reply(ctx, messages.Released{Known: a.release(ctx)}, nil)
	case messages.LeaseTick:
		a.check(ctx, m.Now)
	case leaseTick:
		if m.by == a {
			a.check(ctx, m.now)
		}
	case leaseDescribe:
		ctx.Respond(leaseState{info: a.current(), ended: a.held.Ended})
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Restarting:
		a.disarm()
		ctx.Send(ctx.Self(), leaseHandover{held: a.held, owner: a.owner, fencing: a.fencing, fencingSince: a.fencingSince})
	case *actor.Stopping:
		a.disarm()
	}
}

// current describes the lease as held now.
func (a *Lease) current() messages.LeaseInfo {
	info := toInfo(a.info.CheckoutID, a.held.Lease)
	info.RunID = a.info.RunID
	return info
}

func (a *Lease) renew(ctx actor.Context, m messages.Renew) (messages.Renewed, error) {
	exp, err := a.held.Renew(a.cfg.Now())
	if err != nil {
		if a.fencing && m.NotifyLost && ctx.Sender() != nil {
			a.owner = ctx.Sender() // the owner of a restored lease shows up
		}
		return messages.Renewed{}, err
	}
	if m.NotifyLost && ctx.Sender() != nil {
		a.owner = ctx.Sender()
	}
	if a.held.Visibility == lease.Durable {
		if err := a.cfg.Store.Put(persistence.LeaseKey(a.info.CheckoutID, a.held.ID), a.current()); err != nil {
			a.lg.Warn("persist renewed durable lease", zap.Error(err))
		}
	}
	return messages.Renewed{Expires: exp}, nil
}

func (a *Lease) release(ctx actor.Context) bool {
	if a.fencing {
		// The owner of an expired durable lease confirms that its
		// processes are dead: the keys may go.
		a.fencing = false
		a.lg.Info("fenced out: the holder of the expired lease confirmed its processes are dead",
			zap.String("operation", a.held.Operation), zap.String("owner", a.held.Owner))
		a.end(ctx, false)
		return true
	}
	if !a.held.Release(a.cfg.Now()) {
		return false
	}
	a.end(ctx, true)
	return true
}

// check ends the lease when it expired at now (a durable one is fenced
// out first), else waits for the next tick.
func (a *Lease) check(ctx actor.Context, now time.Time) {
	if a.fencing {
		a.fenceOut(ctx, now)
		return
	}
	if a.held.Expire(now) {
		if a.held.Visibility == lease.Durable {
			a.lg.Warn("lease lost: not renewed before it expired; its keys stay taken until its holder's processes are dead",
				zap.String("operation", a.held.Operation), zap.String("owner", a.held.Owner), zap.Time("expired", a.held.Expires))
			a.fencing, a.fencingSince = true, now
			a.fenceOut(ctx, now)
			return
		}
		a.lg.Warn("lease lost: not renewed before it expired",
			zap.String("operation", a.held.Operation), zap.String("owner", a.held.Owner), zap.Time("expired", a.held.Expires))
		a.end(ctx, true)
		return
	}
	if a.held.Holding() {
		a.arm(ctx)
	}
}

// fenceOut is a tick of an expired durable lease waiting for its owner:
// the owner hears LeaseLost (again), and past the bounds (FenceOwnerWait,
// FenceOutMax) the keys go without its confirmation.
func (a *Lease) fenceOut(ctx actor.Context, now time.Time) {
	waited := now.Sub(a.fencingSince)
	if fenceGivesUp(a.owner != nil || a.holderMayRun(waited), waited) {
		a.lg.Error("fence-out not confirmed: the expired lease's keys go without its holder saying its processes are dead",
			zap.String("operation", a.held.Operation), zap.String("owner", a.held.Owner), zap.Duration("waited", now.Sub(a.fencingSince)))
		a.fencing = false
		a.end(ctx, false)
		return
	}
	if a.owner != nil {
		ctx.Send(a.owner, messages.LeaseLost{LeaseID: a.held.ID, Expired: a.held.Expires})
	}
	a.arm(ctx)
}

// holderMayRun says, once an expired durable lease whose owner never showed
// up has waited FenceOwnerWait, whether the store says its holder may
// still run: a job whose record says it runs under the lease (or a record
// that cannot be read). Its processes may have outlived a killed daemon,
// and the restarted jobs actor, still loading, has not swept them yet: the
// fence waits for its release (FenceOutMax), not for an owner to renew.
func (a *Lease) holderMayRun(waited time.Duration) bool {
	if waited < FenceOwnerWait || waited >= FenceOutMax {
		return false // the answer changes nothing: no store read
	}
	return jobHolder(a.cfg.Store, a.lg, a.current()) != holderGone
}

// fenceGivesUp says whether an expired durable lease that has waited
// waited for its holder's confirmation gives up: after FenceOwnerWait when
// no holder is known (no owner renewed it, no job record says it runs
// under it), after FenceOutMax otherwise.
func fenceGivesUp(ownerKnown bool, waited time.Duration) bool {
	if ownerKnown {
		return waited >= FenceOutMax
	}
	return waited >= FenceOwnerWait
}

// end follows the lease's end: the durable record goes, an owner that
// asked hears of an expiry (when notify), and the checkout is told (it
// frees the keys and stops this actor).
func (a *Lease) end(ctx actor.Context, notify bool) {
	a.disarm()
	if a.held.Visibility == lease.Durable {
		if err := a.cfg.Store.DeleteSync(persistence.LeaseKey(a.info.CheckoutID, a.held.ID)); err != nil {
			a.lg.Warn("delete durable lease", zap.Error(err))
		}
	}
	expired := a.held.End == lease.Expired
	if expired && notify && a.owner != nil {
		ctx.Send(a.owner, messages.LeaseLost{LeaseID: a.held.ID, Expired: a.held.Expires})
	}
	if p := ctx.Parent(); p != nil {
		ctx.Send(p, leaseEnded{info: a.current(), expired: expired, at: a.held.Ended})
	}
}

// arm schedules the next tick.
func (a *Lease) arm(ctx actor.Context) {
	a.disarm()
	root, self, clock, by := ctx.ActorSystem().Root, ctx.Self(), a.cfg.Now, a
	a.timer = time.AfterFunc(leaseTickEvery(a.held.TTL), func() { root.Send(self, leaseTick{now: clock(), by: by}) })
}

func (a *Lease) disarm() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}
