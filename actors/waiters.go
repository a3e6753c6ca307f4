package actors

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// waiters is the queue of requests an actor answers later ("reply later or
// time out"): each waiter holds its requester, the request's data and, when
// it has a bound, a timer that only sends the actor waitExpired when the
// bound passes; the actor then takes the waiter out with expired and
// answers it. Whatever answers a waiter first takes it out of the queue, so
// an answer after its timeout, or a timeout after its answer, does nothing.
//
// It is the actor's state, touched only from Receive (no lock), and holds
// no goroutine: a timer that has not fired is only a timer. The zero value
// is an empty queue. Answer every waiter (answerAll) on Stopping and
// Restarting: that also stops their timers.
//
// Shape: etcd's wait.Wait (register an id, trigger it later), with the
// trigger a message and the timeout a message, so mailbox order decides
// which comes first.
type waiters[T any] struct {
	// tag tells this queue's timeouts from those of another queue of the
	// actor, or of a predecessor instance's queue (drawn at first use).
	tag  uint64
	next uint64
	list []*waiter[T] // in arrival order
}

// waiter is one request answered later.
type waiter[T any] struct {
	id     uint64
	sender *actor.PID // nil: a Send without a requester (answers go nowhere)
	req    T
	timer  *time.Timer
}

// waitExpired tells an actor that a waiter of one of its queues ran out of
// time; the queue with that tag takes it out (expired).
type waitExpired struct{ tag, id uint64 }

// add queues req for the sender of the current message. With wait > 0 a
// timer sends the actor waitExpired once wait has passed; wait <= 0 means
// no bound (the waiter waits until it is answered or the actor stops).
func (q *waiters[T]) add(ctx actor.Context, req T, wait time.Duration) *waiter[T] {
	return q.addFor(ctx, ctx.Sender(), req, wait)
}

// addFor is add for a requester other than the current message's sender.
func (q *waiters[T]) addFor(ctx actor.Context, sender *actor.PID, req T, wait time.Duration) *waiter[T] {
	for q.tag == 0 {
		q.tag = rand.Uint64()
	}
	q.next++
	w := &waiter[T]{id: q.next, sender: sender, req: req}
	if wait > 0 {
		root, self, m := ctx.ActorSystem().Root, ctx.Self(), waitExpired{tag: q.tag, id: w.id}
		w.timer = time.AfterFunc(wait, func() { root.Send(self, m) })
	}
	q.list = append(q.list, w)
	return w
}

// expired takes the waiter m names out of the queue and returns it, or
// false when m is of another queue or its waiter was answered already.
func (q *waiters[T]) expired(m waitExpired) (*waiter[T], bool) {
	if m.tag != q.tag || q.tag == 0 {
		return nil, false
	}
	for _, w := range q.list {
		if w.id == m.id {
			q.remove(w)
			return w, true
		}
	}
	return nil, false
}

// remove takes w out of the queue and stops its timer; false when it was
// not queued (answered, expired or removed before).
func (q *waiters[T]) remove(w *waiter[T]) bool {
	i := slices.Index(q.list, w)
	if i < 0 {
		return false
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	q.list = slices.Delete(q.list, i, i+1)
	return true
}

// answer takes w out of the queue and sends msg to its requester; false
// (and nothing sent) when w was no longer queued.
func (q *waiters[T]) answer(ctx actor.Context, w *waiter[T], msg any) bool {
	if !q.remove(w) {
		return false
	}
	if w.sender != nil {
		ctx.Send(w.sender, msg)
	}
	return true
}

// answerAll answers every waiter, in arrival order, with msg of its request,
// and empties the queue; it returns how many it answered.
func (q *waiters[T]) answerAll(ctx actor.Context, msg func(T) any) int {
	ws := q.list
	q.list = nil
	for _, w := range ws {
		if w.timer != nil {
			w.timer.Stop()
		}
		if w.sender != nil {
			ctx.Send(w.sender, msg(w.req))
		}
	}
	return len(ws)
}

// items returns the queued waiters in arrival order: a copy, so the caller
// may answer or remove them while it ranges over it.
func (q *waiters[T]) items() []*waiter[T] { return slices.Clone(q.list) }

// size returns how many waiters are queued.
func (q *waiters[T]) size() int { return len(q.list) }

// find returns the first queued waiter whose request matches, or nil.
func (q *waiters[T]) find(match func(T) bool) *waiter[T] {
	for _, w := range q.list {
		if match(w.req) {
			return w
		}
	}
	return nil
}
