package actors

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// asker sends one request for a test and hands the reply to a channel, so
// a test can tell a request that still waits from one that was answered.
type asker struct{ out chan any }

type askTo struct {
	to  *actor.PID
	msg any
}

func (a *asker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case askTo:
		ctx.Request(m.to, m.msg)
		ctx.Respond(messages.Pong{}) // the request is in the target's mailbox
	case messages.Acquired, messages.Failed:
		a.out <- m
	}
}

// dlFixture is a detector and checkouts of several repositories on one
// fake clock.
type dlFixture struct {
	t   *testing.T
	s   *actor.ActorSystem
	st  *persistence.Store
	clk *fakeClock
	det *actor.PID
	cos map[string]*actor.PID // checkout id -> actor
	n   int
}

func newDLFixture(t *testing.T, checkouts ...string) *dlFixture {
	t.Helper()
	f := &dlFixture{t: t, s: newTestSystem(t), st: newStore(t), clk: &fakeClock{t: time.Unix(1_700_000_000, 0)}, cos: map[string]*actor.PID{}}
	ix := &RepoIndex{}
	var err error
	f.det = spawnCrashable(t, f.s, "deadlocks", NewDeadlocks(DeadlocksConfig{Index: ix, Logger: zap.NewNop()}))
	entries := map[string]RepoEntry{}
	for _, id := range checkouts {
		repo := messages.Repository{ID: "repo_" + id, CheckoutID: id, Root: "/src/" + id}
		f.cos[id], err = f.s.Root.SpawnNamed(actor.PropsFromProducer(NewCheckoutWith(repo, f.st, zap.NewNop(), f.clk.now, CheckoutConfig{Deadlocks: f.det})), "checkout-"+id)
		if err != nil {
			t.Fatal(err)
		}
		entries[repo.ID] = RepoEntry{Repo: repo, Checkout: f.cos[id]}
	}
	ix.publish(entries)
	return f
}

// settle waits until every checkout and the detector handled what was sent
// to them, twice over: a report, the break it caused, the answer to the
// waiter and the report withdrawing it.
func (f *dlFixture) settle() {
	f.t.Helper()
	for range 2 {
		for _, id := range slices.Sorted(maps.Keys(f.cos)) {
			want[messages.Pong](f.t, request(f.t, f.s, f.cos[id], messages.Ping{}))
		}
		want[messages.Pong](f.t, request(f.t, f.s, f.det, messages.Ping{}))
	}
}

// hold takes a lease of run over key at checkout co at once.
func (f *dlFixture) hold(co, run, key string) messages.LeaseInfo {
	f.t.Helper()
	a := want[messages.Acquired](f.t, request(f.t, f.s, f.cos[co], messages.Acquire{Owner: "own-" + run, Operation: "job_start", Keys: []string{key}, Visibility: "durable", RunID: run}))
	if a.Lease.RunID != run {
		f.t.Fatalf("lease run %q, want %q", a.Lease.RunID, run)
	}
	return a.Lease
}

func (f *dlFixture) release(co string, l messages.LeaseInfo) {
	f.t.Helper()
	want[messages.Released](f.t, request(f.t, f.s, f.cos[co], messages.Release{LeaseID: l.ID}))
}

// wait starts a request of run for key at checkout co that waits, one
// second of the fake clock after the previous one, and returns its reply
// channel once the detector has seen it.
func (f *dlFixture) wait(co, run, op, key string) <-chan any {
	f.t.Helper()
	f.n++
	f.clk.add(time.Second)
	out := make(chan any, 1)
	pid := f.s.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &asker{out: out} }))
	f.t.Cleanup(func() { f.s.Root.Stop(pid) })
	want[messages.Pong](f.t, request(f.t, f.s, pid, askTo{to: f.cos[co], msg: messages.Acquire{
		Owner: run + "-req-" + string(rune('0'+f.n)), Operation: op, Keys: []string{key}, Wait: 20 * time.Second, RunID: run}}))
	f.settle()
	return out
}

func (f *dlFixture) stats() messages.DeadlockStatsReply {
	f.t.Helper()
	return want[messages.DeadlockStatsReply](f.t, request(f.t, f.s, f.det, messages.DeadlockStats{}))
}

// stillWaiting fails the test if any of chans was answered.
func (f *dlFixture) stillWaiting(what string, chans ...<-chan any) {
	f.t.Helper()
	for i, c := range chans {
		select {
		case v := <-c:
			f.t.Fatalf("%s: waiter %d was answered %#v, want it still waiting", what, i, v)
		default:
		}
	}
}

func answer(t *testing.T, c <-chan any) any {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10s")
		return nil
	}
}

func wantDeadlock(t *testing.T, c <-chan any) *errs.Error {
	t.Helper()
	v := answer(t, c)
	fl, ok := v.(messages.Failed)
	if !ok || errs.Code(fl.Code) != errs.Deadlock {
		t.Fatalf("answer %#v, want DEADLOCK", v)
	}
	return errs.From(ErrorOf(fl))
}

func wantGranted(t *testing.T, c <-chan any) messages.LeaseInfo {
	t.Helper()
	v := answer(t, c)
	a, ok := v.(messages.Acquired)
	if !ok {
		t.Fatalf("answer %#v, want Acquired", v)
	}
	return a.Lease
}

// cycleRuns returns the run ids of a DEADLOCK's cycle detail, and checks
// that every entry has holds and waits_for.
func cycleRuns(t *testing.T, e *errs.Error) []string {
	t.Helper()
	entries, ok := e.Details["cycle"].([]map[string]any)
	if !ok {
		t.Fatalf("details %#v: no cycle", e.Details)
	}
	var out []string
	for _, c := range entries {
		holds, _ := c["holds"].([]string)
		waits, _ := c["waits_for"].([]string)
		if len(holds) == 0 || len(waits) == 0 {
			t.Fatalf("cycle entry %v lacks holds or waits_for", c)
		}
		out = append(out, c["run_id"].(string))
	}
	return out
}

func ws(co string) string      { return string(lease.WorkspaceKey(co)) }
func pk(co, rel string) string { return string(lease.PathKey(co, rel)) }
func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

func TestDeadlockTwoRunsOneCheckout(t *testing.T) {
	f := newDLFixture(t, "co_1")
	f.hold("co_1", "run_a", pk("co_1", "a"))
	lb := f.hold("co_1", "run_b", pk("co_1", "b"))
	aWaits := f.wait("co_1", "run_a", "apply_patch", pk("co_1", "b"))
	f.stillWaiting("a chain of one wait", aWaits)
	bWaits := f.wait("co_1", "run_b", "git_commit", pk("co_1", "a"))
	e := wantDeadlock(t, bWaits)
	if got := cycleRuns(t, e); !slices.Equal(got, []string{"run_b", "run_a"}) {
		t.Fatalf("cycle %v, want the youngest (run_b) first", got)
	}
	if !contains(e.Message, "run run_b (git_commit) waits for path:co_1:a held by run run_a (path:co_1:a)", "run run_a (apply_patch) waits for path:co_1:b held by run run_b (path:co_1:b)") {
		t.Fatalf("message %q does not name the cycle", e.Message)
	}
	f.stillWaiting("the older waiter", aWaits)
	// run_b gives up what it holds: run_a proceeds.
	f.release("co_1", lb)
	if l := wantGranted(t, aWaits); l.RunID != "run_a" {
		t.Fatalf("granted %+v", l)
	}
	f.settle()
	if st := f.stats(); st.Waits != 0 || st.Broken != 1 {
		t.Fatalf("stats %+v, want no waits and one break", st)
	}
}

func TestDeadlockTwoRunsAcrossCheckouts(t *testing.T) {
	f := newDLFixture(t, "co_1", "co_2")
	f.hold("co_1", "run_a", ws("co_1")) // run_a's writing job on checkout 1
	lb := f.hold("co_2", "run_b", ws("co_2"))
	aWaits := f.wait("co_2", "run_a", "apply_patch", pk("co_2", "x.txt"))
	bWaits := f.wait("co_1", "run_b", "apply_patch", pk("co_1", "y.txt"))
	e := wantDeadlock(t, bWaits)
	if got := cycleRuns(t, e); !slices.Equal(got, []string{"run_b", "run_a"}) {
		t.Fatalf("cycle %v", got)
	}
	entries := e.Details["cycle"].([]map[string]any)
	if b := entries[0]; !slices.Equal(b["holds"].([]string), []string{ws("co_2")}) || !slices.Equal(b["waits_for"].([]string), []string{pk("co_1", "y.txt")}) ||
		b["waits_on"] != "run_a" || b["checkout_id"] != "co_1" {
		t.Fatalf("run_b's entry %v", b)
	}
	if a := entries[1]; !slices.Equal(a["holds"].([]string), []string{ws("co_1")}) || !slices.Equal(a["waits_for"].([]string), []string{pk("co_2", "x.txt")}) {
		t.Fatalf("run_a's entry %v", a)
	}
	f.stillWaiting("the older waiter", aWaits)
	f.release("co_2", lb)
	wantGranted(t, aWaits)
}

func TestDeadlockThreeRunsAcrossCheckouts(t *testing.T) {
	f := newDLFixture(t, "co_1", "co_2")
	f.hold("co_1", "run_a", pk("co_1", "a"))
	f.hold("co_2", "run_b", pk("co_2", "b"))
	lc := f.hold("co_1", "run_c", pk("co_1", "c"))
	aWaits := f.wait("co_2", "run_a", "apply_patch", pk("co_2", "b"))
	bWaits := f.wait("co_1", "run_b", "apply_patch", pk("co_1", "c"))
	f.stillWaiting("a chain", aWaits, bWaits)
	cWaits := f.wait("co_1", "run_c", "apply_patch", pk("co_1", "a"))
	e := wantDeadlock(t, cWaits)
	if got := cycleRuns(t, e); !slices.Equal(got, []string{"run_c", "run_a", "run_b"}) {
		t.Fatalf("cycle %v", got)
	}
	f.stillWaiting("the older waiters", aWaits, bWaits)
	f.release("co_1", lc)
	wantGranted(t, bWaits)
	f.stillWaiting("run_a, behind run_b", aWaits)
}

// A release that turns a queued waiter into a holder can close a cycle;
// then the youngest waiter may be at another checkout than the one that
// reported.
func TestDeadlockClosedByARelease(t *testing.T) {
	f := newDLFixture(t, "co_1", "co_2")
	lx := f.hold("co_1", "run_x", pk("co_1", "k"))
	f.hold("co_2", "run_b", pk("co_2", "j"))
	aWaits := f.wait("co_1", "run_a", "apply_patch", pk("co_1", "k"))  // behind run_x
	bWaits := f.wait("co_1", "run_b", "apply_patch", pk("co_1", "k"))  // behind run_x, then run_a
	a2Waits := f.wait("co_2", "run_a", "apply_patch", pk("co_2", "j")) // run_a waits for run_b
	f.stillWaiting("no cycle while run_x holds k", aWaits, bWaits, a2Waits)
	f.release("co_1", lx)
	f.settle()
	wantGranted(t, aWaits) // run_a now holds k, which run_b waits for: a cycle
	e := wantDeadlock(t, a2Waits)
	if got := cycleRuns(t, e); !slices.Equal(got, []string{"run_a", "run_b"}) {
		t.Fatalf("cycle %v", got)
	}
	f.stillWaiting("run_b", bWaits)
}

func TestDeadlockChainIsNoCycle(t *testing.T) {
	f := newDLFixture(t, "co_1", "co_2")
	la := f.hold("co_1", "run_a", pk("co_1", "a"))
	lb := f.hold("co_2", "run_b", pk("co_2", "b"))
	lc := f.hold("co_1", "run_c", pk("co_1", "c"))
	aWaits := f.wait("co_2", "run_a", "apply_patch", pk("co_2", "b"))
	bWaits := f.wait("co_1", "run_b", "apply_patch", pk("co_1", "c"))
	dWaits := f.wait("co_1", "run_d", "apply_patch", pk("co_1", "a"))
	f.stillWaiting("a chain", aWaits, bWaits, dWaits)
	if st := f.stats(); st.Waits != 3 || st.Broken != 0 {
		t.Fatalf("stats %+v, want three waits and no break", st)
	}
	f.release("co_1", lc)
	lb2 := wantGranted(t, bWaits)
	f.release("co_2", lb)
	f.release("co_1", lb2)
	wantGranted(t, aWaits)
	f.release("co_1", la)
	wantGranted(t, dWaits)
	f.settle()
	if st := f.stats(); st.Waits != 0 || st.Broken != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A run waiting for its own job's lease only waits: no edge, no report, and
// no cycle with itself, even when another run waits for it.
func TestDeadlockOwnRunIsNoCycle(t *testing.T) {
	f := newDLFixture(t, "co_1", "co_2")
	job := f.hold("co_1", "run_a", ws("co_1"))
	aWaits := f.wait("co_1", "run_a", "apply_patch", pk("co_1", "x"))
	if st := f.stats(); st.Waits != 0 {
		t.Fatalf("stats %+v: a wait on its own run is an edge", st)
	}
	bWaits := f.wait("co_1", "run_b", "apply_patch", pk("co_1", "x"))
	f.stillWaiting("own run", aWaits, bWaits)
	if st := f.stats(); st.Waits != 1 || st.Broken != 0 {
		t.Fatalf("stats %+v, want run_b's wait only", st)
	}
	f.release("co_1", job)
	a := wantGranted(t, aWaits)
	f.stillWaiting("run_b, behind run_a's patch", bWaits)
	f.release("co_1", a)
	wantGranted(t, bWaits)
}

// Leases and requests outside any run take part in nothing, and a checkout
// whose requests never wait sends the detector nothing.
func TestDeadlockOutsideRunsAndQuietWithoutWaits(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	got := make(chan any, 64)
	probe := s.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case messages.DeadlockWaits:
				got <- m
			case messages.Ping:
				ctx.Respond(messages.Pong{})
			}
		})
	}))
	co, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewCheckoutWith(testRepo, st, zap.NewNop(), clk.now, CheckoutConfig{Deadlocks: probe})), "co")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "o", Operation: "apply_patch", Keys: []string{pathKey("f")}, RunID: "run_" + string(rune('a'+i%3))}))
		want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: a.Lease.ID}))
	}
	// A runless holder and a waiter of a run: no edge, nothing to report.
	l := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "cli", Operation: "apply_patch", Keys: []string{pathKey("f")}}))
	w := s.Root.RequestFuture(co, messages.Acquire{Owner: "w", Operation: "apply_patch", Keys: []string{pathKey("f")}, Wait: 10 * time.Second, RunID: "run_a"}, 10*time.Second)
	// A runless waiter behind a lease of a run: nothing either.
	l2 := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "o", Operation: "apply_patch", Keys: []string{pathKey("g")}, RunID: "run_b"}))
	w2 := s.Root.RequestFuture(co, messages.Acquire{Owner: "w2", Operation: "apply_patch", Keys: []string{pathKey("g")}, Wait: 10 * time.Second}, 10*time.Second)
	want[messages.Pong](t, request(t, s, co, messages.Ping{}))
	want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: l.Lease.ID}))
	want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: l2.Lease.ID}))
	for _, fut := range []*actor.Future{w, w2} {
		if r, err := fut.Result(); err != nil {
			t.Fatal(err)
		} else if _, ok := r.(messages.Acquired); !ok {
			t.Fatalf("waiter got %#v", r)
		}
	}
	want[messages.Pong](t, request(t, s, co, messages.Ping{}))
	want[messages.Pong](t, request(t, s, probe, messages.Ping{}))
	if n := len(got); n != 0 {
		t.Fatalf("the detector got %d messages (%v), want none", n, <-got)
	}
}

// A restarted detector asks the checkouts for their waits: a cycle whose
// first half was reported before the restart is still found.
func TestDeadlockDetectorRestartRebuildsFromLiveWaits(t *testing.T) {
	f := newDLFixture(t, "co_1", "co_2")
	f.hold("co_1", "run_a", ws("co_1"))
	lb := f.hold("co_2", "run_b", ws("co_2"))
	aWaits := f.wait("co_2", "run_a", "apply_patch", pk("co_2", "x"))
	crashNow(t, f.s, f.det)
	f.settle() // Started asked for a resync; the checkouts answered
	if st := f.stats(); st.Waits != 1 {
		t.Fatalf("stats after restart %+v, want run_a's wait back", st)
	}
	bWaits := f.wait("co_1", "run_b", "apply_patch", pk("co_1", "y"))
	wantDeadlock(t, bWaits)
	f.release("co_2", lb)
	wantGranted(t, aWaits)
}

// A checkout that stops withdraws its waits; a timed-out waiter is
// withdrawn too.
func TestDeadlockWaitsWithdrawn(t *testing.T) {
	f := newDLFixture(t, "co_1", "co_2")
	f.hold("co_1", "run_a", ws("co_1"))
	f.hold("co_2", "run_b", ws("co_2"))
	f.wait("co_2", "run_a", "apply_patch", pk("co_2", "x"))
	f.wait("co_1", "run_c", "apply_patch", pk("co_1", "x"))
	if st := f.stats(); st.Waits != 2 {
		t.Fatalf("stats %+v", st)
	}
	if err := f.s.Root.StopFuture(f.cos["co_2"]).Wait(); err != nil {
		t.Fatal(err)
	}
	delete(f.cos, "co_2")
	f.settle()
	if st := f.stats(); st.Waits != 1 {
		t.Fatalf("stats after co_2 stopped %+v, want run_c's wait only", st)
	}
	f.clk.add(time.Second)
	short := make(chan any, 1)
	pid := f.s.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &asker{out: short} }))
	want[messages.Pong](t, request(t, f.s, pid, askTo{to: f.cos["co_1"], msg: messages.Acquire{Owner: "d", Operation: "apply_patch", Keys: []string{pk("co_1", "z")}, Wait: 50 * time.Millisecond, RunID: "run_d"}}))
	if fl, ok := answer(t, short).(messages.Failed); !ok || errs.Code(fl.Code) != errs.MutationBusy {
		t.Fatalf("short wait: %v", fl)
	}
	f.settle()
	if st := f.stats(); st.Waits != 1 {
		t.Fatalf("stats after a timeout %+v", st)
	}
}
