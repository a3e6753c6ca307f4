package actors

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

type fakeClock struct {
	mu sync.Mutex // protects t
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

var testRepo = messages.Repository{ID: "repo_t", CheckoutID: "co_t", Root: "/src/t"}

func spawnCheckout(t *testing.T, s *actor.ActorSystem, st *persistence.Store, clk *fakeClock, name string) *actor.PID {
	t.Helper()
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewCheckout(testRepo, st, zap.NewNop(), clk.now)), name)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func pathKey(rel string) string { return string(lease.PathKey(testRepo.CheckoutID, rel)) }

func acquire(t *testing.T, s *actor.ActorSystem, pid *actor.PID, m messages.Acquire) any {
	t.Helper()
	return request(t, s, pid, m)
}

func TestCheckoutGrantBusyRelease(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")

	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("src/a.go")}}))
	f := want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("src")}}))
	e := errs.From(ErrorOf(f))
	if e.Code != errs.MutationBusy || e.Details["holder_operation"] != "apply_patch" {
		t.Fatalf("overlapping acquire: %v %+v, want MUTATION_BUSY naming apply_patch", e, e.Details)
	}
	// A disjoint path is granted at once.
	want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "c", Operation: "apply_patch", Keys: []string{pathKey("docs/x.md")}}))
	want[messages.Fenced](t, request(t, s, co, messages.Fence{LeaseID: a.Lease.ID}))
	if r := want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: a.Lease.ID})); !r.Known {
		t.Fatal("release of a held lease: not known")
	}
	b := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("src/a.go")}}))
	if b.Lease.Tokens[pathKey("src/a.go")] <= a.Lease.Tokens[pathKey("src/a.go")] {
		t.Fatalf("token %v not above %v", b.Lease.Tokens, a.Lease.Tokens)
	}
	f = want[messages.Failed](t, request(t, s, co, messages.Fence{LeaseID: a.Lease.ID}))
	if errs.CodeOf(ErrorOf(f)) != errs.LeaseLost {
		t.Fatalf("fence of a released lease: %v, want LEASE_LOST", ErrorOf(f))
	}
}

func TestCheckoutWaitInOrder(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	ws := string(lease.WorkspaceKey(testRepo.CheckoutID))
	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "job", Keys: []string{ws}}))

	// b waits; c (no wait) is refused because b is queued ahead of it.
	bReply := s.Root.RequestFuture(co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("x")}, Wait: 5 * time.Second}, 10*time.Second)
	f := want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "c", Operation: "apply_patch", Keys: []string{pathKey("x")}}))
	if errs.CodeOf(ErrorOf(f)) != errs.MutationBusy {
		t.Fatalf("c: %v", ErrorOf(f))
	}
	want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: a.Lease.ID}))
	res, err := bReply.Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(messages.Acquired); !ok {
		t.Fatalf("b got %T %v, want Acquired after a released", res, res)
	}
	// A short wait runs out.
	start := time.Now()
	f = want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "d", Operation: "apply_patch", Keys: []string{pathKey("x")}, Wait: 50 * time.Millisecond}))
	if errs.CodeOf(ErrorOf(f)) != errs.MutationBusy || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("d: %v after %s", ErrorOf(f), time.Since(start))
	}
}

func TestCheckoutExpiryFreesClaimAndFences(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("f")}, TTL: 3 * time.Second}))
	clk.add(2 * time.Second)
	r := want[messages.Renewed](t, request(t, s, co, messages.Renew{LeaseID: a.Lease.ID}))
	if !r.Expires.Equal(clk.now().Add(3 * time.Second)) {
		t.Fatalf("renewed until %v", r.Expires)
	}
	now := clk.add(4 * time.Second)
	s.Root.Send(co, messages.LeaseTick{Now: now})
	f := want[messages.Failed](t, request(t, s, co, messages.Fence{LeaseID: a.Lease.ID}))
	if errs.CodeOf(ErrorOf(f)) != errs.LeaseLost {
		t.Fatalf("fence after expiry: %v", ErrorOf(f))
	}
	f = want[messages.Failed](t, request(t, s, co, messages.Renew{LeaseID: a.Lease.ID}))
	if errs.CodeOf(ErrorOf(f)) != errs.LeaseLost {
		t.Fatalf("renew after expiry: %v", ErrorOf(f))
	}
	b := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("f")}}))
	if b.Lease.Tokens[pathKey("f")] <= a.Lease.Tokens[pathKey("f")] {
		t.Fatal("token did not increase after expiry")
	}
}

// The lease actor's own ticker expires a lease that is not renewed: on the
// fake clock, past its TTL, the checkout frees the claim and stops the
// lease actor.
func TestLeaseActorExpiresOnItsOwn(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("f")}, TTL: 3 * time.Second}))
	leaseActor := actor.NewPID(co.Address, co.Id+"/lease-"+a.Lease.ID)
	stopped := watch(t, s, leaseActor)
	want[messages.Fenced](t, request(t, s, co, messages.Fence{LeaseID: a.Lease.ID}))
	clk.add(4 * time.Second)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("lease did not expire on its own")
	}
	res := request(t, s, co, messages.Fence{LeaseID: a.Lease.ID})
	if f, ok := res.(messages.Failed); !ok || errs.CodeOf(ErrorOf(f)) != errs.LeaseLost {
		t.Fatalf("fence after the lease expired: %#v, want LEASE_LOST", res)
	}
}

func TestCheckoutRestartKeepsHighWaterAndDurableLeases(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co1")
	var last uint64
	for i := 0; i < 5; i++ {
		a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "p", Keys: []string{pathKey("f")}}))
		last = a.Lease.Tokens[pathKey("f")]
		want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: a.Lease.ID}))
	}
	d := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "job-1", Operation: "job_start", Keys: []string{pathKey("g")}, Visibility: "durable", TTL: time.Minute}))
	if err := s.Root.StopFuture(co).Wait(); err != nil {
		t.Fatal(err)
	}
	co2 := spawnCheckout(t, s, st, clk, "co2")
	a := want[messages.Acquired](t, acquire(t, s, co2, messages.Acquire{Owner: "a", Operation: "p", Keys: []string{pathKey("f")}}))
	if a.Lease.Tokens[pathKey("f")] <= last {
		t.Fatalf("token after restart %d, want above %d", a.Lease.Tokens[pathKey("f")], last)
	}
	l := want[messages.LeaseList](t, request(t, s, co2, messages.ListLeases{}))
	found := false
	for _, x := range l.Leases {
		found = found || (x.ID == d.Lease.ID && x.Visibility == "durable")
	}
	if !found {
		t.Fatalf("durable lease not restored: %+v", l.Leases)
	}
	f := want[messages.Failed](t, acquire(t, s, co2, messages.Acquire{Owner: "x", Operation: "apply_patch", Keys: []string{pathKey("g")}}))
	if errs.CodeOf(ErrorOf(f)) != errs.MutationBusy {
		t.Fatalf("write under a restored durable lease: %v", ErrorOf(f))
	}
}
