package actors

import (
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
)

// Shutdown begins while a lease is held and N requests wait for it: the
// waiters are answered UNAVAILABLE (nothing_written) at once, not after
// their wait; later requests that would wait are refused at once too; the
// holder keeps its lease, and grants that need no wait go on.
func TestCheckoutDrainAnswersWaitersAtOnce(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	ws := string(lease.WorkspaceKey(testRepo.CheckoutID))
	holder := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "holder", Operation: "apply_patch", Keys: []string{ws}}))

	const n = 5
	waiters := make([]*actor.Future, n)
	for i := range waiters {
		// Waits far longer than the test may take: only the drain answers.
		waiters[i] = s.Root.RequestFuture(co, messages.Acquire{Owner: "w" + strconv.Itoa(i), Operation: "apply_patch",
			Keys: []string{pathKey("f")}, Wait: time.Hour}, time.Hour)
	}
	// The mailbox is FIFO: once Ping is answered, every Acquire is queued.
	want[messages.Pong](t, request(t, s, co, messages.Ping{}))

	start := time.Now()
	d := want[messages.LeaseDrained](t, request(t, s, co, messages.LeaseDrain{}))
	if d.Refused != n {
		t.Fatalf("drain answered %d waiters, want %d", d.Refused, n)
	}
	for i, f := range waiters {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("waiter %d: %v", i, err)
		}
		e := errs.From(ErrorOf(want[messages.Failed](t, res)))
		if e.Code != errs.Unavailable || e.Details[DetailNothingWritten] != true {
			t.Fatalf("waiter %d: %v %+v, want UNAVAILABLE with nothing_written", i, e, e.Details)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("waiters answered after %s", took)
	}

	// Drained: a request that would wait is refused at once...
	f := want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "late", Operation: "apply_patch", Keys: []string{pathKey("f")}, Wait: time.Hour}))
	if e := errs.From(ErrorOf(f)); e.Code != errs.Unavailable || e.Details[DetailNothingWritten] != true {
		t.Fatalf("late waiter: %v, want UNAVAILABLE with nothing_written", e)
	}
	// ...one that would not wait is busy as before...
	f = want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "nowait", Operation: "apply_patch", Keys: []string{pathKey("f")}}))
	if errs.CodeOf(ErrorOf(f)) != errs.MutationBusy {
		t.Fatalf("no-wait request: %v, want MUTATION_BUSY", ErrorOf(f))
	}
	// ...and the holder finishes as today.
	want[messages.Fenced](t, request(t, s, co, messages.Fence{LeaseID: holder.Lease.ID}))
	want[messages.Renewed](t, request(t, s, co, messages.Renew{LeaseID: holder.Lease.ID}))
	want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: holder.Lease.ID}))
	want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "free", Operation: "apply_patch", Keys: []string{pathKey("f")}, Wait: time.Hour}))
	if d := want[messages.LeaseDrained](t, request(t, s, co, messages.LeaseDrain{})); d.Refused != 0 {
		t.Fatalf("second drain answered %d, want 0", d.Refused)
	}
}

// A checkout that stops with waiters (a crash, or a stop without a drain)
// says nothing was written too.
func TestCheckoutStopSaysNothingWritten(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "holder", Operation: "apply_patch", Keys: []string{pathKey("f")}}))
	w := s.Root.RequestFuture(co, messages.Acquire{Owner: "w", Operation: "apply_patch", Keys: []string{pathKey("f")}, Wait: time.Hour}, time.Hour)
	want[messages.Pong](t, request(t, s, co, messages.Ping{}))
	if err := s.Root.PoisonFuture(co).Wait(); err != nil {
		t.Fatal(err)
	}
	res, err := w.Result()
	if err != nil {
		t.Fatal(err)
	}
	if e := errs.From(ErrorOf(want[messages.Failed](t, res))); e.Code != errs.Unavailable || e.Details[DetailNothingWritten] != true {
		t.Fatalf("waiter of a stopped checkout: %v, want UNAVAILABLE with nothing_written", e)
	}
}

// LeaseHistory names every lease held at some moment since a time: ended
// ones (released or expired) and live ones, oldest grant first; once the
// bounded memory no longer reaches back, it says so.
func TestCheckoutLeaseHistory(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co")
	t0 := clk.now()
	old := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "old", Operation: "apply_patch", Keys: []string{pathKey("old")}}))
	want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: old.Lease.ID}))
	since := clk.add(time.Second)
	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("a")}}))
	clk.add(time.Second)
	want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: a.Lease.ID}))
	b := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "b", Operation: "git_commit", Keys: []string{pathKey("b")}, TTL: 3 * time.Second}))
	live := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "live", Operation: "job_start", Keys: []string{pathKey("c")}, TTL: time.Minute}))
	s.Root.Send(co, messages.LeaseTick{Now: clk.add(4 * time.Second)}) // b expires

	h := want[messages.LeaseHeld](t, request(t, s, co, messages.LeaseHistory{Since: since}))
	if !h.Complete {
		t.Fatal("history since a recent time: not complete")
	}
	var got []string
	for _, l := range h.Leases {
		got = append(got, l.Owner+"/"+strconv.FormatBool(l.Ended.IsZero()))
	}
	if w := []string{"a/false", "b/false", "live/true"}; len(got) != len(w) || got[0] != w[0] || got[1] != w[1] || got[2] != w[2] {
		t.Fatalf("history = %v, want %v", got, w)
	}
	if h.Leases[1].ID != b.Lease.ID || h.Leases[2].ID != live.Lease.ID {
		t.Fatalf("history ids = %+v", h.Leases)
	}

	// Past the bound the oldest are forgotten, and a question reaching
	// back that far is answered incomplete.
	for i := range maxEnded {
		l := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "x" + strconv.Itoa(i), Operation: "apply_patch", Keys: []string{pathKey("x")}}))
		clk.add(time.Millisecond)
		want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: l.Lease.ID}))
	}
	if h := want[messages.LeaseHeld](t, request(t, s, co, messages.LeaseHistory{Since: t0})); h.Complete || len(h.Leases) != maxEnded+1 {
		t.Fatalf("history past the bound: complete %v, %d leases; want incomplete, %d", h.Complete, len(h.Leases), maxEnded+1)
	}
	if h := want[messages.LeaseHeld](t, request(t, s, co, messages.LeaseHistory{Since: clk.now()})); !h.Complete || len(h.Leases) != 2 {
		t.Fatalf("history since now: complete %v, %+v; want the last ended and the live one", h.Complete, h.Leases)
	}
}
