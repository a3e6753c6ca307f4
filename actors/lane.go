package actors

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/messages"
)

// Lane runs read-only steps one at a time. Steps queue in its state; the
// running step executes in a goroutine that reports back with a completion
// message, and only then does the lane start the next one, so Receive never
// blocks and a lane never runs two steps at once. Lanes keep no durable
// state: after a restart the queue is empty and callers whose steps were
// lost time out (their own deadline), which is what a read can afford.
type Lane struct {
	name string
	lg   *zap.Logger
	now  func() time.Time

	queue   []laneItem
	running *laneItem // identifies the running step's completion too

	completed, failed, skipped uint64
}

// laneItem is one queued step and who asked for it.
type laneItem struct {
	run    messages.LaneRun
	sender *actor.PID
	queued time.Time
}

// laneFinished is sent by a step's goroutine to its lane.
type laneFinished struct {
	item       *laneItem
	result     any
	err        error
	startedAt  time.Time
	finishedAt time.Time
}

// NewLane returns the producer of the lane called name.
func NewLane(name string, lg *zap.Logger, now func() time.Time) actor.Producer {
	if lg == nil {
		lg = zap.NewNop()
	}
	if now == nil {
		now = time.Now
	}
	return func() actor.Actor { return &Lane{name: name, lg: lg.With(zap.String("actor", name)), now: now} }
}

// Receive dispatches the lane's messages.
func (a *Lane) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case messages.LaneRun:
		if m.Run == nil {
			reply(ctx, nil, errs.New(errs.InvalidArgument, "lane step %d (%s) has nothing to run", m.Index, m.Kind))
			return
		}
		a.queue = append(a.queue, laneItem{run: m, sender: ctx.Sender(), queued: a.now()})
		a.next(ctx)
	case laneFinished:
		a.finish(ctx, m)
		a.next(ctx)
	case messages.LaneStatus:
		st := messages.LaneStatusReply{Lane: a.name, Queued: len(a.queue), Completed: a.completed, Failed: a.failed, Skipped: a.skipped}
		if a.running != nil {
			st.Running = a.running.run.Kind
		}
		ctx.Respond(st)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		a.abandon(ctx)
	}
}

// next starts the first queued step whose context is still live, unless a
// step is running. Steps whose context is done are answered Skipped.
func (a *Lane) next(ctx actor.Context) {
	for a.running == nil && len(a.queue) > 0 {
		it := a.queue[0]
		a.queue[0] = laneItem{}
		a.queue = a.queue[1:]
		sctx := it.run.Ctx
		if sctx == nil {
			sctx = context.Background()
		}
		if sctx.Err() != nil {
			a.skipped++
			a.send(ctx, it.sender, messages.LaneDone{Index: it.run.Index, Lane: a.name, Skipped: true,
				Err: errs.Wrap(errs.CodeOf(context.Cause(sctx)), context.Cause(sctx), "step %d (%s) did not start: %v", it.run.Index, it.run.Kind, context.Cause(sctx)), Queued: a.now().Sub(it.queued)})
			continue
		}
		item := &it
		a.running = item
		self, sys, now, run, lg := ctx.Self(), ctx.ActorSystem(), a.now, it.run.Run, a.lg
		go func() {
			done := laneFinished{item: item, startedAt: now()}
			func() {
				defer func() {
					if r := recover(); r != nil {
						lg.Error("lane step panicked", zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
						done.err = errs.New(errs.Internal, "step panicked: %v", fmt.Sprint(r))
					}
				}()
				done.result, done.err = run(sctx)
			}()
			done.finishedAt = now()
			sys.Root.Send(self, done)
		}()
	}
}

// finish answers the requester of the running step.
func (a *Lane) finish(ctx actor.Context, m laneFinished) {
	if a.running == nil || m.item != a.running {
		return // a step abandoned by a restart: nobody waits for it here
	}
	it := a.running
	a.running = nil
	if m.err != nil {
		a.failed++
	} else {
		a.completed++
	}
	a.send(ctx, it.sender, messages.LaneDone{Index: it.run.Index, Lane: a.name, Result: m.result, Err: m.err,
		Queued: m.startedAt.Sub(it.queued), StartedAt: m.startedAt, FinishedAt: m.finishedAt})
}

// abandon answers every waiting requester when the lane stops.
func (a *Lane) abandon(ctx actor.Context) {
	stopped := func(it laneItem) {
		a.send(ctx, it.sender, messages.Failed{Err: errs.New(errs.Unavailable, "%s stopped before step %d (%s) finished", a.name, it.run.Index, it.run.Kind)})
	}
	if a.running != nil {
		stopped(*a.running)
		a.running = nil
	}
	for _, it := range a.queue {
		stopped(it)
	}
	a.queue = nil
}

func (a *Lane) send(ctx actor.Context, to *actor.PID, msg any) {
	if to != nil {
		ctx.Send(to, msg)
	}
}
