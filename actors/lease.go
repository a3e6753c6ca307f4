package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/messages"
)

// Lease owns the clock of one granted lease. Its checkout (the parent)
// tells it of renewals; when a renewal does not come before the lease
// expires, it tells the checkout, which frees the claim. The owner then
// learns of the loss (LEASE_LOST) on its next renewal or fence check.
type Lease struct {
	info    messages.LeaseInfo
	expires time.Time
	now     func() time.Time
	fired   bool
}

// NewLease returns the producer of a lease actor.
func NewLease(info messages.LeaseInfo, now func() time.Time) actor.Producer {
	return func() actor.Actor { return &Lease{info: info, expires: info.Expires, now: now} }
}

// Receive dispatches the lease's messages.
func (a *Lease) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.arm(ctx, a.now())
	case messages.LeaseTouched:
		a.expires = m.Expires
		a.arm(ctx, a.now())
	case *actor.ReceiveTimeout:
		a.check(ctx, a.now())
	case messages.LeaseTick:
		a.check(ctx, m.Now)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	}
}

// arm sets the receive timeout to fire when the lease would expire.
func (a *Lease) arm(ctx actor.Context, now time.Time) {
	d := a.expires.Sub(now)
	if d < time.Millisecond {
		d = time.Millisecond
	}
	ctx.SetReceiveTimeout(d)
}

func (a *Lease) check(ctx actor.Context, now time.Time) {
	if now.Before(a.expires) {
		a.arm(ctx, now)
		return
	}
	if a.fired {
		return
	}
	a.fired = true
	ctx.CancelReceiveTimeout()
	ctx.Send(ctx.Parent(), messages.LeaseExpired{LeaseID: a.info.ID, Now: now})
}
