package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/messages"
)

// Lease owns the clock of one granted lease. Its checkout (the parent)
// tells it of renewals; when a renewal does not come before the lease
// expires, it tells the checkout, which frees the claim (the checkout's
// table is the authority: a premature notice frees nothing). The owner then
// learns of the loss (LEASE_LOST) on its next renewal or fence check.
//
// The expiry clock is a tick the actor owns, not protoactor's receive
// timeout (whose handler races with the actor stopping): a timer that only
// sends LeaseTick{Now} into the mailbox, with the time of the injected
// clock, and is armed again after each tick (no goroutine waits meanwhile).
// A restarted instance asks its checkout for the lease's current expiry,
// since its producer knows only the grant.
type Lease struct {
	info    messages.LeaseInfo
	expires time.Time
	now     func() time.Time
	fired   bool
	timer   *time.Timer
}

// leaseSync asks the checkout for the current expiry of a lease; it answers
// LeaseTouched when it still holds the lease.
type leaseSync struct{ id string }

// leaseTickEvery is how often a lease looks at its clock: a tenth of the
// TTL, between 50 ms and 1 s.
func leaseTickEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/10, 50*time.Millisecond), time.Second)
}

// NewLease returns the producer of a lease actor.
func NewLease(info messages.LeaseInfo, now func() time.Time) actor.Producer {
	if now == nil {
		now = time.Now
	}
	return func() actor.Actor { return &Lease{info: info, expires: info.Expires, now: now} }
}

// Receive dispatches the lease's messages.
func (a *Lease) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.arm(ctx)
		if p := ctx.Parent(); p != nil {
			ctx.Request(p, leaseSync{id: a.info.ID})
		}
	case messages.LeaseTouched:
		a.expires = m.Expires
	case messages.LeaseTick:
		a.check(ctx, m.Now)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping, *actor.Restarting:
		a.disarm()
	}
}

// arm schedules the next tick.
func (a *Lease) arm(ctx actor.Context) {
	a.disarm()
	root, self, clock := ctx.ActorSystem().Root, ctx.Self(), a.now
	a.timer = time.AfterFunc(leaseTickEvery(a.info.TTL), func() { root.Send(self, messages.LeaseTick{Now: clock()}) })
}

func (a *Lease) disarm() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}

func (a *Lease) check(ctx actor.Context, now time.Time) {
	if a.fired {
		return
	}
	if now.Before(a.expires) {
		a.arm(ctx)
		return
	}
	a.fired = true
	a.disarm()
	ctx.Send(ctx.Parent(), messages.LeaseExpired{LeaseID: a.info.ID, Now: now})
}
