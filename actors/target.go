package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// Target serializes the physical mutations of one canonical root: it hands
// the root's single mutation slot to one holder at a time (TargetAcquire),
// queues later requests in mailbox order for their bounded wait and
// refuses them MUTATION_BUSY when it runs out. The mutation itself runs in
// the holder's goroutine, never in Receive; the root stays busy until the
// holder's TargetRelease (or, for a holder that vanished, until its hold
// bound passes). Reads never come here.
//
// Serialization is by canonical root, never by target id, owner or
// workspace: every grant on the root shares this actor.
type Target struct {
	root string
	lg   *zap.Logger

	holder    string
	holdSeq   uint64 // grant number of the current holder
	holdTimer *time.Timer
	seq       uint64 // grants so far
	waiters   waiters[messages.TargetAcquire]
}

// targetHoldExpired tells the target that a holder kept the slot past its
// hold bound.
type targetHoldExpired struct{ seq uint64 }

// DefaultTargetHold bounds how long a holder may keep a root when it names
// no bound: longer than the 30 s command cap.
const DefaultTargetHold = 2 * time.Minute

// NewTarget returns the producer of root's target actor.
func NewTarget(root string, lg *zap.Logger) actor.Producer {
	if lg == nil {
		lg = zap.NewNop()
	}
	return func() actor.Actor { return &Target{root: root, lg: lg} }
}

// Receive dispatches the target's messages.
func (a *Target) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "target"), zap.String("root", a.root))
	case messages.TargetAcquire:
		a.acquire(ctx, m)
	case messages.TargetRelease:
		a.release(ctx, m.Holder)
		if ctx.Sender() != nil {
			ctx.Respond(messages.TargetReleased{})
		}
	case waitExpired:
		if w, ok := a.waiters.expired(m); ok && w.sender != nil {
			ctx.Send(w.sender, Failure(a.busy()))
		}
	case targetHoldExpired:
		if a.holder != "" && a.holdSeq == m.seq {
			a.lg.Warn("target: holder kept the root past its bound; released", zap.String("holder", a.holder))
			a.free(ctx)
		}
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping, *actor.Restarting:
		// Waiters are answered now rather than left to time out; nothing
		// of theirs ran.
		a.waiters.answerAll(ctx, func(messages.TargetAcquire) any {
			return Failure(errs.New(errs.Unavailable, "target %s is stopping; retry — nothing was written", a.root).
				With(DetailNothingWritten, true))
		})
		if a.holdTimer != nil {
			a.holdTimer.Stop()
		}
	}
}

func (a *Target) acquire(ctx actor.Context, m messages.TargetAcquire) {
	if m.Holder == "" {
		ctx.Respond(Failure(errs.New(errs.InvalidArgument, "target acquire: empty holder")))
		return
	}
	if a.holder == m.Holder {
		ctx.Respond(messages.TargetAcquired{Holder: m.Holder, Seq: a.holdSeq})
		return
	}
	if a.holder == "" && a.waiters.size() == 0 {
		a.grant(ctx, m, ctx.Sender())
		return
	}
	if m.Wait <= 0 {
		ctx.Respond(Failure(a.busy()))
		return
	}
	a.waiters.add(ctx, m, m.Wait)
}

func (a *Target) busy() error {
	return errs.New(errs.MutationBusy, "target root %s is busy with another mutation; retry, or pass a larger wait_ms", a.root).
		With("root", a.root).With(DetailNothingWritten, true)
}

// grant hands the slot to m's holder and answers sender.
func (a *Target) grant(ctx actor.Context, m messages.TargetAcquire, sender *actor.PID) {
	a.seq++
	a.holder, a.holdSeq = m.Holder, a.seq
	hold := m.Hold
	if hold <= 0 {
		hold = DefaultTargetHold
	}
	self, root, seq := ctx.Self(), ctx.ActorSystem().Root, a.seq
	a.holdTimer = time.AfterFunc(hold, func() { root.Send(self, targetHoldExpired{seq: seq}) })
	if sender != nil {
		ctx.Send(sender, messages.TargetAcquired{Holder: m.Holder, Seq: a.seq})
	}
}

// release frees the slot when holder has it, or withdraws holder's queued
// request.
func (a *Target) release(ctx actor.Context, holder string) {
	if holder != "" && a.holder == holder {
		a.free(ctx)
		return
	}
	if w := a.waiters.find(func(r messages.TargetAcquire) bool { return r.Holder == holder }); w != nil {
		a.waiters.remove(w)
	}
}

// free ends the current hold and grants the first waiter.
func (a *Target) free(ctx actor.Context) {
	if a.holdTimer != nil {
		a.holdTimer.Stop()
		a.holdTimer = nil
	}
	a.holder = ""
	if a.waiters.size() == 0 {
		return
	}
	w := a.waiters.items()[0]
	a.waiters.remove(w)
	a.grant(ctx, w.req, w.sender)
}
