package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// askProbe answers Ping at once and holds every string until release.
type askProbe struct {
	held []*actor.PID
	got  chan<- string // each string as it arrives
}

type release struct{}

func (p *askProbe) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case string:
		p.got <- m
		if m == "fail" {
			ctx.Respond(actors.Failure(errs.New(errs.LeaseLost, "lost")))
			return
		}
		p.held = append(p.held, ctx.Sender())
	case release:
		for _, s := range p.held {
			ctx.Send(s, messages.Pong{})
		}
		p.held = nil
		ctx.Respond(true)
	}
}

// newAskRuntime returns a runtime (not started: Ask needs only its actor
// system) with a long request timeout and a probe actor. Its cleanup
// answers what the probe holds, closes everything and checks that no
// goroutine of Ask outlived it.
func newAskRuntime(t *testing.T) (*Runtime, *actor.PID, <-chan string) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r, err := New(Config{Store: st, RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	got := make(chan string, 16)
	pid := r.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &askProbe{got: got} }))
	t.Cleanup(func() {
		// Answer what is held: the waiters of abandoned asks end with it.
		if _, err := r.system.Root.RequestFuture(pid, release{}, 5*time.Second).Result(); err != nil {
			t.Error(err)
		}
		_ = r.system.Root.PoisonFuture(pid).Wait()
	})
	return r, pid, got
}

func TestAskReturnsWhenTheContextIsCancelled(t *testing.T) {
	r, pid, got := newAskRuntime(t)
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		_, err := Ask[messages.Pong](ctx, r, pid, "held")
		done <- result{err, time.Since(start)}
	}()
	<-got // the probe holds the request: only the cancel can end the wait
	cancel()
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return after its context was cancelled")
	}
	if errs.CodeOf(res.err) != errs.Cancelled || !errors.Is(res.err, context.Canceled) {
		t.Fatalf("Ask after cancel = %v, want CANCELLED wrapping context.Canceled", res.err)
	}
	if res.took > 5*time.Second {
		t.Fatalf("Ask returned after %s, want at once (the request timeout is 30 s)", res.took)
	}
	// The probe still holds the request, yet nothing of Ask may wait on:
	// its waiter ends with the call, not with the 30 s timeout.
	goleak.VerifyNone(t, before)
}

func TestAskReturnsAtTheContextsDeadline(t *testing.T) {
	r, pid, _ := newAskRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Ask[messages.Pong](ctx, r, pid, "held")
	if errs.CodeOf(err) != errs.Timeout {
		t.Fatalf("Ask past its deadline = %v, want TIMEOUT", err)
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Fatalf("Ask returned after %s, want at its 50ms deadline", took)
	}
}

func TestAskWithAnEndedContextSendsNothing(t *testing.T) {
	r, pid, got := newAskRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Ask[messages.Pong](ctx, r, pid, "never"); errs.CodeOf(err) != errs.Cancelled {
		t.Fatalf("Ask with a cancelled context = %v, want CANCELLED", err)
	}
	// The mailbox is FIFO: once Ping is answered, anything sent before it
	// has arrived.
	if _, err := Ask[messages.Pong](context.Background(), r, pid, messages.Ping{}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		t.Fatalf("the actor got %q from an Ask whose context had ended", m)
	default:
	}
}

func TestAskAnswers(t *testing.T) {
	r, pid, _ := newAskRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []context.Context{ctx, context.Background()} {
		if _, err := Ask[messages.Pong](c, r, pid, messages.Ping{}); err != nil {
			t.Fatalf("Ask(Ping) = %v", err)
		}
		if _, err := Ask[messages.Pong](c, r, pid, "fail"); errs.CodeOf(err) != errs.LeaseLost {
			t.Fatalf("Ask answered Failed = %v, want its code LEASE_LOST", err)
		}
		if _, err := Ask[bool](c, r, pid, messages.Ping{}); errs.CodeOf(err) != errs.Internal {
			t.Fatalf("Ask with the wrong reply type = %v, want INTERNAL", err)
		}
		gone := actor.NewPID(r.system.Address(), "no-such-actor")
		if _, err := Ask[messages.Pong](c, r, gone, messages.Ping{}); errs.CodeOf(err) != errs.Unavailable {
			t.Fatalf("Ask of a missing actor = %v, want UNAVAILABLE", err)
		}
	}
}

// A reply that comes after the asker stopped waiting goes to askLate's
// late handler (how a lease granted to a caller that left is given back),
// once, and the asker's wait left no goroutine behind.
func TestAskLateHandsALateReplyOver(t *testing.T) {
	r, pid, got := newAskRuntime(t)
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	lates := make(chan messages.Pong, 2)
	done := make(chan error, 1)
	go func() {
		_, err := askLate(ctx, r, pid, "held", func(p messages.Pong) { lates <- p })
		done <- err
	}()
	<-got // the probe holds the request
	cancel()
	if err := <-done; errs.CodeOf(err) != errs.Cancelled {
		t.Fatalf("askLate after cancel = %v, want CANCELLED", err)
	}
	goleak.VerifyNone(t, before) // the reply process waits on a timer, not a goroutine
	if len(lates) != 0 {
		t.Fatal("the late handler ran before any reply")
	}
	if _, err := r.system.Root.RequestFuture(pid, release{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lates:
	case <-time.After(10 * time.Second):
		t.Fatal("the late reply never reached the handler")
	}
	// Plain Ask drops a late reply: no handler, nothing kept.
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() {
		_, err := Ask[messages.Pong](ctx2, r, pid, "held")
		done <- err
	}()
	<-got
	cancel2()
	if err := <-done; errs.CodeOf(err) != errs.Cancelled {
		t.Fatalf("Ask after cancel = %v, want CANCELLED", err)
	}
	if len(lates) != 0 {
		t.Fatal("a late reply reached the handler twice")
	}
}

// A caller whose deadline ended its wait (a client's timeout, not a
// cancel) is given the same late handling: the reply process outlives the
// deadline by the ask's own timeout. Before, it was kept only for what was
// left of the deadline (nothing), so a lease granted a moment later went
// to dead letters and stayed held until its TTL.
func TestAskLateAfterADeadline(t *testing.T) {
	r, pid, got := newAskRuntime(t)
	lates := make(chan messages.Pong, 1)
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	go func() {
		_, err := askLate(ctx, r, pid, "held", func(p messages.Pong) { lates <- p })
		done <- err
	}()
	<-got // the probe holds the request past the deadline
	if err := <-done; err == nil {
		t.Fatal("askLate past its deadline answered no error")
	}
	if _, err := r.system.Root.RequestFuture(pid, release{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lates:
	case <-time.After(10 * time.Second):
		t.Fatal("the reply after the deadline never reached the late handler")
	}
}
