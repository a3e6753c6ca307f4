package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// LaneRunner runs one read-only step for a lane, in a goroutine of its own;
// ctx ends at the step's deadline or when its group is cancelled. The step
// is data (operation, arguments, the gate's answer, a seal); the runner is
// code, a dependency of the lane, never part of a message: harnessd's runs
// the step through the operation registry (op.Pipeline.RunLaneStep), and
// refuses one whose seal does not match.
type LaneRunner func(ctx context.Context, step messages.LaneRun) (json.RawMessage, error)

// LaneConfig configures NewLane.
type LaneConfig struct {
	Name   string
	Runner LaneRunner
	Logger *zap.Logger
	Now    func() time.Time
	Tasks  *Tasks
}

// Lane runs read-only steps one at a time. Each step arrives as data (a
// LaneRun) and queues in the lane's state, nowhere else; the running step
// executes in a goroutine that reports back with a completion message, and
// only then does the lane start the next one, so Receive never blocks and a
// lane never runs two steps at once. Lanes keep no durable
// state: a restarted lane answers the requesters of its lost steps with
// UNAVAILABLE (the old instance does, on Restarting).
type Lane struct {
	cfg LaneConfig
	lg  *zap.Logger

	queue     []laneItem
	running   *laneItem // identifies the running step's completion too
	cancel    context.CancelFunc
	cancelled map[string]time.Time // group -> when it was cancelled

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
	result     json.RawMessage
	err        error
	startedAt  time.Time
	finishedAt time.Time
}

// laneCancelledTTL is how long a lane remembers a cancelled group.
const laneCancelledTTL = time.Minute

// NewLane returns the producer of a lane.
func NewLane(cfg LaneConfig) actor.Producer {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return func() actor.Actor { return &Lane{cfg: cfg, lg: cfg.Logger.With(zap.String("actor", cfg.Name))} }
}

// Receive dispatches the lane's messages.
func (a *Lane) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case messages.LaneRun:
		if a.cfg.Runner == nil {
			reply(ctx, nil, errs.New(errs.Unavailable, "lane %s has no runner", a.cfg.Name))
			return
		}
		a.queue = append(a.queue, laneItem{run: m, sender: ctx.Sender(), queued: a.cfg.Now()})
		a.next(ctx)
	case messages.LaneCancel:
		a.cancelGroup(ctx, m)
	case laneFinished:
		a.finish(ctx, m)
		a.next(ctx)
	case messages.LaneStatus:
		st := messages.LaneStatusReply{Lane: a.cfg.Name, Queued: len(a.queue), Completed: a.completed, Failed: a.failed, Skipped: a.skipped}
		if a.running != nil {
			st.Running = a.running.run.Kind
		}
		ctx.Respond(st)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping, *actor.Restarting:
		a.abandon(ctx)
	}
}

// cancelGroup skips the group's queued steps at their turn and cancels its
// running step.
func (a *Lane) cancelGroup(ctx actor.Context, m messages.LaneCancel) {
	now := a.cfg.Now()
	if a.cancelled == nil {
		a.cancelled = map[string]time.Time{}
	}
	for g, at := range a.cancelled {
		if now.Sub(at) > laneCancelledTTL {
			delete(a.cancelled, g)
		}
	}
	a.cancelled[m.Group] = now
	if a.running != nil && a.running.run.Group == m.Group && a.cancel != nil {
		a.cancel()
	}
	a.next(ctx)
}

// skipReason says why a queued step must not start, or "" when it may.
func (a *Lane) skipReason(it laneItem, now time.Time) (errs.Code, string) {
	if _, ok := a.cancelled[it.run.Group]; ok {
		return errs.Cancelled, "its group was cancelled"
	}
	if !it.run.Deadline.IsZero() && !now.Before(it.run.Deadline) {
		return errs.Timeout, "its deadline passed while it was queued"
	}
	return "", ""
}

// next starts the first queued step that may still run, unless a step is
// running. Steps that may not run are answered Skipped.
func (a *Lane) next(ctx actor.Context) {
	for a.running == nil && len(a.queue) > 0 {
		it := a.queue[0]
		a.queue[0] = laneItem{}
		a.queue = a.queue[1:]
		now := a.cfg.Now()
		if code, why := a.skipReason(it, now); code != "" {
			a.skipped++
			f := Failure(errs.New(code, "step %d (%s) did not start: %s", it.run.Index, it.run.Kind, why))
			a.send(ctx, it.sender, messages.LaneDone{Index: it.run.Index, Lane: a.cfg.Name, Skipped: true, Failure: &f, Queued: now.Sub(it.queued)})
			continue
		}
		item := &it
		a.running = item
		sctx, cancel := context.Background(), context.CancelFunc(func() {})
		if !it.run.Deadline.IsZero() {
			sctx, cancel = context.WithDeadline(sctx, it.run.Deadline)
		} else {
			sctx, cancel = context.WithCancel(sctx)
		}
		a.cancel = cancel
		self, root, clock, run, lg := ctx.Self(), ctx.ActorSystem().Root, a.cfg.Now, a.cfg.Runner, a.lg
		step := it.run
		a.cfg.Tasks.Go(func() {
			defer cancel()
			done := laneFinished{item: item, startedAt: clock()}
			func() {
				defer func() {
					if r := recover(); r != nil {
						lg.Error("lane step panicked", zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
						done.err = errs.New(errs.Internal, "step panicked: %v", fmt.Sprint(r))
					}
				}()
				done.result, done.err = run(sctx, step)
			}()
			done.finishedAt = clock()
			root.Send(self, done)
		})
	}
}

// finish answers the requester of the running step.
func (a *Lane) finish(ctx actor.Context, m laneFinished) {
	if a.running == nil || m.item != a.running {
		return // a step abandoned by a restart: its requester was answered then
	}
	it := a.running
	a.running, a.cancel = nil, nil
	d := messages.LaneDone{Index: it.run.Index, Lane: a.cfg.Name, Result: m.result,
		Queued: m.startedAt.Sub(it.queued), StartedAt: m.startedAt, FinishedAt: m.finishedAt}
	if m.err != nil {
		a.failed++
		f := Failure(m.err)
		d.Failure, d.Result = &f, nil
	} else {
		a.completed++
	}
	a.send(ctx, it.sender, d)
}

// abandon answers every waiting requester when the lane stops or restarts.
func (a *Lane) abandon(ctx actor.Context) {
	stopped := func(it laneItem) {
		a.send(ctx, it.sender, Failure(errs.New(errs.Unavailable, "%s stopped before step %d (%s) finished", a.cfg.Name, it.run.Index, it.run.Kind)))
	}
	if a.running != nil {
		if a.cancel != nil {
			a.cancel()
		}
		stopped(*a.running)
		a.running, a.cancel = nil, nil
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
