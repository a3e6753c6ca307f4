package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// waitProbe is an actor with two waiter queues, driven by the test.
type waitProbe struct {
	q, other    waiters[string]
	expiredHits int // waitExpired messages that took a waiter out
}

type (
	// probeWait queues req (no reply); probeOther queues it in the other
	// queue.
	probeWait struct {
		req  string
		wait time.Duration
	}
	probeOther struct {
		req  string
		wait time.Duration
	}
	probeAnswer struct{ req string } // answer req; replies bool
	// probeRace answers req and then delivers the waiter's own timeout, as
	// when the timer fires just before the answer stops it.
	probeRace   struct{ req string }
	probeCancel struct{ req string } // take req out unanswered; replies bool
	probeSize   struct{}             // replies [2]int{queued, expiredHits}
)

func (p *waitProbe) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case probeWait:
		p.q.add(ctx, m.req, m.wait)
	case probeOther:
		p.other.add(ctx, m.req, m.wait)
	case probeAnswer:
		w := p.q.find(func(r string) bool { return r == m.req })
		ctx.Respond(w != nil && p.q.answer(ctx, w, "answered "+m.req))
	case probeRace:
		w := p.q.find(func(r string) bool { return r == m.req })
		stale := waitExpired{tag: p.q.tag, id: w.id}
		p.q.answer(ctx, w, "answered "+m.req)
		ctx.Send(ctx.Self(), stale)
		ctx.Respond(true)
	case probeCancel:
		w := p.q.find(func(r string) bool { return r == m.req })
		ok := w != nil && p.q.remove(w)
		// A removed waiter's timer is stopped: stopping it again says so.
		ctx.Respond(ok && (w.timer == nil || !w.timer.Stop()))
	case probeSize:
		ctx.Respond([2]int{p.q.size() + p.other.size(), p.expiredHits})
	case waitExpired:
		if w, ok := p.q.expired(m); ok {
			p.expiredHits++
			ctx.Send(w.sender, "timeout "+w.req)
		} else if w, ok := p.other.expired(m); ok {
			p.expiredHits++
			ctx.Send(w.sender, "other timeout "+w.req)
		}
	case *actor.Stopping:
		p.q.answerAll(ctx, func(r string) any { return "stopping " + r })
		p.other.answerAll(ctx, func(r string) any { return "stopping other " + r })
	}
}

// collector hands every string it receives to the test, and answers
// probeSize (a barrier: everything sent to it earlier was handed over).
type collector struct{ got chan<- string }

func (c *collector) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case string:
		c.got <- m
	case probeSize:
		ctx.Respond(true)
	}
}

type waitFixture struct {
	t       *testing.T
	s       *actor.ActorSystem
	probe   *actor.PID
	asker   *actor.PID
	answers chan string
}

func newWaitFixture(t *testing.T) *waitFixture {
	t.Helper()
	s := newTestSystem(t)
	f := &waitFixture{t: t, s: s, answers: make(chan string, 16)}
	f.probe = s.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &waitProbe{} }))
	f.asker = s.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &collector{got: f.answers} }))
	t.Cleanup(func() {
		_ = s.Root.PoisonFuture(f.probe).Wait()
		_ = s.Root.PoisonFuture(f.asker).Wait()
	})
	return f
}

// wait queues req at the probe on behalf of the asker.
func (f *waitFixture) wait(m any) { f.s.Root.RequestWithCustomSender(f.probe, m, f.asker) }

// next returns the asker's next answer.
func (f *waitFixture) next() string {
	f.t.Helper()
	select {
	case a := <-f.answers:
		return a
	case <-time.After(10 * time.Second):
		f.t.Fatal("the asker got no answer")
		return ""
	}
}

// none checks the asker got nothing more: both mailboxes are drained first.
func (f *waitFixture) none() {
	f.t.Helper()
	request(f.t, f.s, f.probe, probeSize{})
	request(f.t, f.s, f.asker, probeSize{})
	select {
	case a := <-f.answers:
		f.t.Fatalf("the asker got %q, want nothing more", a)
	default:
	}
}

func (f *waitFixture) size() [2]int {
	f.t.Helper()
	return want[[2]int](f.t, request(f.t, f.s, f.probe, probeSize{}))
}

func TestWaitersAnswerInTime(t *testing.T) {
	f := newWaitFixture(t)
	f.wait(probeWait{req: "a", wait: time.Hour})
	if !want[bool](t, request(t, f.s, f.probe, probeAnswer{req: "a"})) {
		t.Fatal("answer of a queued waiter = false")
	}
	if got := f.next(); got != "answered a" {
		t.Fatalf("asker got %q, want the answer", got)
	}
	if want[bool](t, request(t, f.s, f.probe, probeAnswer{req: "a"})) {
		t.Fatal("a waiter was answered twice")
	}
	f.none()
	if n := f.size(); n != [2]int{0, 0} {
		t.Fatalf("queued, expired = %v, want none", n)
	}
}

func TestWaitersTimeOut(t *testing.T) {
	f := newWaitFixture(t)
	start := time.Now()
	f.wait(probeWait{req: "short", wait: 20 * time.Millisecond})
	f.wait(probeWait{req: "unbounded"})
	if got := f.next(); got != "timeout short" {
		t.Fatalf("asker got %q, want the timeout", got)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("timed out after %s, before its 20ms", d)
	}
	// The reply after the timeout is dropped: nothing reaches the asker.
	if want[bool](t, request(t, f.s, f.probe, probeAnswer{req: "short"})) {
		t.Fatal("answer after the timeout = true, want dropped")
	}
	f.none()
	if n := f.size(); n != [2]int{1, 1} {
		t.Fatalf("queued, expired = %v, want the unbounded one queued, one expiry", n)
	}
}

// A timeout that fires just before the answer takes the waiter out finds
// nothing: the asker gets the answer only.
func TestWaitersTimeoutAfterAnswerIsDropped(t *testing.T) {
	f := newWaitFixture(t)
	f.wait(probeWait{req: "a", wait: time.Hour})
	want[bool](t, request(t, f.s, f.probe, probeRace{req: "a"}))
	if got := f.next(); got != "answered a" {
		t.Fatalf("asker got %q, want the answer", got)
	}
	f.none()
	if n := f.size(); n != [2]int{0, 0} {
		t.Fatalf("queued, expired = %v, want the stale timeout dropped", n)
	}
}

func TestWaitersCancel(t *testing.T) {
	f := newWaitFixture(t)
	f.wait(probeWait{req: "a", wait: time.Hour})
	f.wait(probeWait{req: "b", wait: time.Hour})
	if !want[bool](t, request(t, f.s, f.probe, probeCancel{req: "a"})) {
		t.Fatal("cancel of a queued waiter: not removed, or its timer still running")
	}
	if want[bool](t, request(t, f.s, f.probe, probeCancel{req: "a"})) {
		t.Fatal("a waiter was removed twice")
	}
	if want[bool](t, request(t, f.s, f.probe, probeAnswer{req: "a"})) {
		t.Fatal("a removed waiter was answered")
	}
	f.none()
	if n := f.size(); n != [2]int{1, 0} {
		t.Fatalf("queued, expired = %v, want b alone", n)
	}
}

// Each queue takes only its own timeouts; stopping answers every waiter
// of both, in arrival order.
func TestWaitersQueuesAndStop(t *testing.T) {
	f := newWaitFixture(t)
	f.wait(probeOther{req: "x", wait: 20 * time.Millisecond})
	f.wait(probeWait{req: "a"})
	f.wait(probeWait{req: "b", wait: time.Hour})
	f.wait(probeWait{req: "c"})
	if got := f.next(); got != "other timeout x" {
		t.Fatalf("asker got %q, want the other queue's timeout", got)
	}
	if n := f.size(); n != [2]int{3, 1} {
		t.Fatalf("queued, expired = %v, want a, b, c queued", n)
	}
	if err := f.s.Root.PoisonFuture(f.probe).Wait(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"stopping a", "stopping b", "stopping c"} {
		if got := f.next(); got != w {
			t.Fatalf("asker got %q, want %q", got, w)
		}
	}
	request(t, f.s, f.asker, probeSize{})
	select {
	case a := <-f.answers:
		t.Fatalf("asker got %q after the stop answers", a)
	default:
	}
}
