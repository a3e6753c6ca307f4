package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// inbox is an actor that hands every message it gets to the test (an
// owner that asked to hear of a lost lease).
type inbox struct{ got chan<- any }

func (b *inbox) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		b.got <- m
	}
}

func spawnInbox(t *testing.T, s *actor.ActorSystem) (*actor.PID, <-chan any) {
	t.Helper()
	got := make(chan any, 16)
	pid := s.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &inbox{got: got} }))
	t.Cleanup(func() { _ = s.Root.PoisonFuture(pid).Wait() })
	return pid, got
}

func next(t *testing.T, got <-chan any) any {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived")
		return nil
	}
}

// An owner that asked (NotifyLost) hears that its lease expired from the
// lease's actor, without renewing; one that released it, or did not ask,
// hears nothing.
func TestLeaseLostTellsTheOwner(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	owner, got := spawnInbox(t, s)

	s.Root.RequestWithCustomSender(co, messages.Acquire{Owner: "job-1", Operation: "job_start", Keys: []string{pathKey("a")}, TTL: 3 * time.Second, NotifyLost: true}, owner)
	a := want[messages.Acquired](t, next(t, got))
	s.Root.RequestWithCustomSender(co, messages.Acquire{Owner: "job-2", Operation: "job_start", Keys: []string{pathKey("b")}, TTL: 3 * time.Second, NotifyLost: true}, owner)
	b := want[messages.Acquired](t, next(t, got))
	c := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "fast", Operation: "apply_patch", Keys: []string{pathKey("c")}, TTL: 3 * time.Second}))
	want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: b.Lease.ID}))

	s.Root.Send(co, messages.LeaseTick{Now: clk.add(4 * time.Second)})
	lost := want[messages.LeaseLost](t, next(t, got))
	if lost.LeaseID != a.Lease.ID || !lost.Expired.Equal(a.Lease.Expires) {
		t.Fatalf("LeaseLost = %+v, want %s expired at %v", lost, a.Lease.ID, a.Lease.Expires)
	}
	// c expired too, and its owner fences: lost.
	f := want[messages.Failed](t, request(t, s, co, messages.Fence{LeaseID: c.Lease.ID}))
	if errs.CodeOf(ErrorOf(f)) != errs.LeaseLost {
		t.Fatalf("fence of the expired lease: %v, want LEASE_LOST", ErrorOf(f))
	}
	want[messages.Pong](t, request(t, s, owner, messages.Ping{}))
	select {
	case m := <-got:
		t.Fatalf("owner got %#v, want only the loss of %s", m, a.Lease.ID)
	default:
	}
}

// A lease restored at boot learns its owner from a renewal that asks.
func TestRestoredLeaseLearnsItsOwnerFromARenewal(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co1")
	d := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "job-1", Operation: "job_start", Keys: []string{pathKey("g")}, Visibility: "durable", TTL: 3 * time.Second}))
	if err := s.Root.StopFuture(co).Wait(); err != nil {
		t.Fatal(err)
	}
	co2 := spawnCheckout(t, s, st, clk, "co2")
	owner, got := spawnInbox(t, s)
	s.Root.RequestWithCustomSender(co2, messages.Renew{LeaseID: d.Lease.ID, NotifyLost: true}, owner)
	want[messages.Renewed](t, next(t, got))
	s.Root.Send(co2, messages.LeaseTick{Now: clk.add(10 * time.Second)})
	if lost := want[messages.LeaseLost](t, next(t, got)); lost.LeaseID != d.Lease.ID {
		t.Fatalf("LeaseLost = %+v, want %s", lost, d.Lease.ID)
	}
}

// The lease's actor keeps its renewals: a durable lease comes back after a
// restart with the expiry of its last renewal (its actor rewrote the
// record), MUTATION_BUSY and ListLeases name that expiry, and once it has
// passed the restart restores nothing and deletes the record.
func TestDurableLeaseKeepsItsRenewalsAcrossRestart(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co1")
	d := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "job-1", Operation: "job_start", Keys: []string{pathKey("g")}, Visibility: "durable", TTL: 3 * time.Second}))
	clk.add(2 * time.Second)
	r := want[messages.Renewed](t, request(t, s, co, messages.Renew{LeaseID: d.Lease.ID}))
	if !r.Expires.After(d.Lease.Expires) {
		t.Fatalf("renewed until %v, want after %v", r.Expires, d.Lease.Expires)
	}
	if err := s.Root.StopFuture(co).Wait(); err != nil {
		t.Fatal(err)
	}
	// Past the grant's expiry, before the renewed one.
	clk.add(2 * time.Second)
	co2 := spawnCheckout(t, s, st, clk, "co2")
	l := want[messages.LeaseList](t, request(t, s, co2, messages.ListLeases{}))
	if len(l.Leases) != 1 || l.Leases[0].ID != d.Lease.ID || !l.Leases[0].Expires.Equal(r.Expires) {
		t.Fatalf("leases after restart = %+v, want %s until %v", l.Leases, d.Lease.ID, r.Expires)
	}
	f := want[messages.Failed](t, acquire(t, s, co2, messages.Acquire{Owner: "x", Operation: "apply_patch", Keys: []string{pathKey("g")}}))
	if e := errs.From(ErrorOf(f)); e.Code != errs.MutationBusy || e.Details["expires_at"] != r.Expires.UTC().Format(time.RFC3339Nano) {
		t.Fatalf("busy = %v %v, want MUTATION_BUSY until the renewed expiry %v", e, e.Details["expires_at"], r.Expires)
	}
	if err := s.Root.StopFuture(co2).Wait(); err != nil {
		t.Fatal(err)
	}
	clk.add(2 * time.Second) // past the renewed expiry too
	co3 := spawnCheckout(t, s, st, clk, "co3")
	if l := want[messages.LeaseList](t, request(t, s, co3, messages.ListLeases{})); len(l.Leases) != 0 {
		t.Fatalf("an expired durable lease was restored: %+v", l.Leases)
	}
	if err := st.Get(persistence.LeaseKey(testRepo.CheckoutID, d.Lease.ID), &messages.LeaseInfo{}); err != persistence.ErrNotFound {
		t.Fatalf("record of the expired durable lease: %v, want it deleted", err)
	}
	want[messages.Acquired](t, acquire(t, s, co3, messages.Acquire{Owner: "x", Operation: "apply_patch", Keys: []string{pathKey("g")}}))
}

// MUTATION_BUSY names the holder's current expiry, asked of its actor,
// not the one it was granted with.
func TestBusyNamesTheRenewedExpiry(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("f")}, TTL: 3 * time.Second}))
	clk.add(2 * time.Second)
	r := want[messages.Renewed](t, request(t, s, co, messages.Renew{LeaseID: a.Lease.ID}))
	for _, wait := range []time.Duration{0, 20 * time.Millisecond} {
		f := want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("f")}, Wait: wait}))
		e := errs.From(ErrorOf(f))
		if e.Code != errs.MutationBusy || e.Details["lease_id"] != a.Lease.ID || e.Details["expires_at"] != r.Expires.UTC().Format(time.RFC3339Nano) {
			t.Fatalf("wait %s: %v %+v, want MUTATION_BUSY naming %s until %v", wait, e, e.Details, a.Lease.ID, r.Expires)
		}
	}
}

// A lease actor that stops while its lease is held (its supervisor gave
// up on it) takes the lease with it: the keys are free, fences say lost.
func TestLeaseActorThatStopsLosesItsLease(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "job_start", Keys: []string{pathKey("f")}, Visibility: "durable"}))
	if err := s.Root.StopFuture(actor.NewPID(co.Address, co.Id+"/"+LeaseName(a.Lease.ID))).Wait(); err != nil {
		t.Fatal(err)
	}
	// The checkout hears of the stop as a system message: ask it, one
	// round trip at a time, until it says the lease is lost.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := s.Root.RequestFuture(co, messages.Fence{LeaseID: a.Lease.ID}, 10*time.Second).Result()
		if f, ok := res.(messages.Failed); err == nil && ok && errs.CodeOf(ErrorOf(f)) == errs.LeaseLost {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease of a stopped actor is still held")
		}
	}
	b := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("f")}}))
	if b.Lease.Tokens[pathKey("f")] <= a.Lease.Tokens[pathKey("f")] {
		t.Fatalf("token %v not above %v", b.Lease.Tokens, a.Lease.Tokens)
	}
	if err := st.Get(persistence.LeaseKey(testRepo.CheckoutID, a.Lease.ID), &messages.LeaseInfo{}); err != persistence.ErrNotFound {
		t.Fatalf("record of the lost durable lease: %v, want it deleted", err)
	}
}

// The index and the lease actor are one lease: an expired lease stays in
// the index (its keys taken) until its actor says it ended, and a fence in
// between already says lost.
func TestExpiredLeaseHoldsItsKeysUntilItsActorEndsIt(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	// A lease actor that never ticks on its own: only the test's ticks.
	co, err := s.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		a := NewCheckout(testRepo, st, zap.NewNop(), clk.now)().(*Checkout)
		a.leaseWrap = noTimer
		return a
	}), "co")
	if err != nil {
		t.Fatal(err)
	}
	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("f")}, TTL: 3 * time.Second}))
	clk.add(4 * time.Second)
	f := want[messages.Failed](t, request(t, s, co, messages.Fence{LeaseID: a.Lease.ID}))
	if errs.CodeOf(ErrorOf(f)) != errs.LeaseLost {
		t.Fatalf("fence past the expiry: %v, want LEASE_LOST", ErrorOf(f))
	}
	f = want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("f")}}))
	if errs.CodeOf(ErrorOf(f)) != errs.MutationBusy {
		t.Fatalf("acquire before the lease actor ended the lease: %v, want MUTATION_BUSY", ErrorOf(f))
	}
	s.Root.Send(actor.NewPID(co.Address, co.Id+"/"+LeaseName(a.Lease.ID)), messages.LeaseTick{Now: clk.now()})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := request(t, s, co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("f")}}).(messages.Acquired); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the keys of the ended lease stayed taken")
		}
	}
}

// noTimer wraps a lease actor so that its own timer's ticks are dropped.
func noTimer(p actor.Producer) actor.Producer {
	return func() actor.Actor { return tickless{p()} }
}

type tickless struct{ actor.Actor }

func (t tickless) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(leaseTick); ok {
		return
	}
	t.Actor.Receive(ctx)
}
