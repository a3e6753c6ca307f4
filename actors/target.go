package actors

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	itarget "github.com/harnessd/harnessd/internal/target"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
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
//
// Each grant carries a fencing token (TargetAcquired.Seq, a receipt's
// fencing_token and hold_seqs) that rises across restarts: the root's
// reservation (fence/<workspace id>/slot) is persisted with sync before
// any token above the previous one is granted (itarget.Fence), so a
// restarted actor, after kill -9 too, continues above every token issued.
type Target struct {
	root  string
	store *persistence.Store
	lg    *zap.Logger

	holder    string
	holdSeq   uint64 // fencing token of the current holder
	holdTimer *time.Timer
	fence     itarget.Fence
	broken    error // the reservation could not be read: every acquire answers it
	waiters   waiters[messages.TargetAcquire]
}

// targetHoldExpired tells the target that a holder kept the slot past its
// hold bound.
type targetHoldExpired struct{ seq uint64 }

// DefaultTargetHold bounds how long a holder may keep a root when it names
// no bound: longer than the 30 s command cap.
const DefaultTargetHold = 2 * time.Minute

// NewTarget returns the producer of root's target actor, which keeps its
// fencing reservation in store.
func NewTarget(root string, store *persistence.Store, lg *zap.Logger) actor.Producer {
	if lg == nil {
		lg = zap.NewNop()
	}
	return func() actor.Actor { return &Target{root: root, store: store, lg: lg} }
}

// TargetFenceKey is where the fencing reservation of a root's slot is
// kept: fence/<workspace id>/slot (under fence/, so the store's marks and
// a reset's fencing floor cover it).
func TargetFenceKey(root string) []byte { return persistence.FenceKey(WorkspaceID(root), "slot") }

// Receive dispatches the target's messages.
func (a *Target) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "target"), zap.String("root", a.root))
		a.restore()
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

// restore reads the root's fencing reservation. Idempotent: a restarted
// instance reads it again.
func (a *Target) restore() {
	var reserved uint64
	err := a.store.Get(TargetFenceKey(a.root), &reserved)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		code := errs.CodeOf(err)
		if code == errs.Internal {
			code = errs.Unavailable
		}
		a.broken = errs.Wrap(code, err, "target root %s could not read its fencing tokens from the store (%v), so it grants nothing: "+
			"check the store with `harness store verify`, then restart harnessd; nothing was written", a.root, err).
			With("root", a.root).With(DetailNothingWritten, true)
		a.lg.Error("target: cannot read its fencing reservation; it refuses every mutation until harnessd restarts with a readable store", zap.Error(err))
		return
	}
	a.fence = itarget.NewFence(reserved, a.store.FenceFloor())
}

func (a *Target) acquire(ctx actor.Context, m messages.TargetAcquire) {
	if m.Holder == "" {
		ctx.Respond(Failure(errs.New(errs.InvalidArgument, "target acquire: empty holder")))
		return
	}
	if a.broken != nil {
		ctx.Respond(Failure(a.broken))
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

// grant hands the slot to m's holder with the next fencing token and
// answers sender. When the token needs a new reservation it is persisted
// with sync first (one write per itarget.FenceBlock grants); if that
// fails the slot stays free, sender is answered the error and grant
// reports false.
func (a *Target) grant(ctx actor.Context, m messages.TargetAcquire, sender *actor.PID) bool {
	tok, reserve := a.fence.Next()
	if reserve > 0 {
		err := a.store.Update(true, func(tx *persistence.Txn) error { return tx.Put(TargetFenceKey(a.root), reserve) })
		if err != nil {
			if sender != nil {
				ctx.Send(sender, Failure(errs.Wrap(errs.Internal, err, "target root %s: persist its fencing tokens: %v; nothing was written", a.root, err).
					With("root", a.root).With(DetailNothingWritten, true)))
			}
			return false
		}
	}
	a.fence.Commit(tok, reserve)
	a.holder, a.holdSeq = m.Holder, tok
	hold := m.Hold
	if hold <= 0 {
		hold = DefaultTargetHold
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.holdTimer = time.AfterFunc(hold, func() { root.Send(self, targetHoldExpired{seq: tok}) })
	if sender != nil {
		ctx.Send(sender, messages.TargetAcquired{Holder: m.Holder, Seq: tok})
	}
	return true
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
	for a.waiters.size() > 0 {
		w := a.waiters.items()[0]
		a.waiters.remove(w)
		if a.grant(ctx, w.req, w.sender) {
			return
		}
	}
}
