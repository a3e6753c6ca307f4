package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// passing answers a RunFunc that counts its calls and passes after d.
func passing(calls *atomic.Int64, d time.Duration, stdout string) RunFunc {
	return func(ctx context.Context, c Claim) (Outcome, error) {
		calls.Add(1)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return Outcome{Cancelled: true}, nil
		}
		now := time.Now()
		return Outcome{ExitCode: 0, Passed: true, Stdout: stdout, Stderr: "warn: " + c.RunID,
			Summary: []string{"ok"}, StartedAt: now.Add(-d), FinishedAt: now, Path: "fast", RepoID: "r1"}, nil
	}
}

func TestSingleFlightTwentyCallersOneRun(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 3, 0)
	id := identity(t.Name())
	var calls atomic.Int64
	run := passing(&calls, 300*time.Millisecond, "all tests passed\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	results := make([]Result, 20)
	errc := make([]error, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errc[i] = nodes[i%3].SingleFlight(ctx, id, run)
		}()
	}
	wg.Wait()
	if got := calls.Load(); got != 1 {
		t.Fatalf("runs = %d, want 1", got)
	}
	sources := map[string]int{}
	for i, r := range results {
		if errc[i] != nil {
			t.Fatalf("caller %d: %v", i, errc[i])
		}
		if r.RunID != results[0].RunID || r.Token != results[0].Token || r.Node != results[0].Node {
			t.Fatalf("caller %d answered run %s/%d on %s, want %s/%d on %s", i, r.RunID, r.Token, r.Node, results[0].RunID, results[0].Token, results[0].Node)
		}
		if r.Outcome.Stdout != "all tests passed\n" || !r.Outcome.Passed || r.Outcome.Stderr != "warn: "+r.RunID {
			t.Fatalf("caller %d outcome = %+v", i, r.Outcome)
		}
		sources[r.Source]++
	}
	if sources[SourceRan] != 1 || sources[SourceJoined]+sources[SourceReused] != 19 {
		t.Fatalf("sources = %v, want 1 ran and 19 joined or reused", sources)
	}
	// A later call on every node: reused, the same run.
	for _, n := range nodes {
		r, err := n.SingleFlight(ctx, id, run)
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != SourceReused || r.RunID != results[0].RunID || r.Outcome.Stdout != "all tests passed\n" {
			t.Fatalf("later call on %s = %s run %s, want reused run %s", n.Name(), r.Source, r.RunID, results[0].RunID)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("runs after reuse = %d, want 1", got)
	}
}

// blocking answers a RunFunc that reports its claim and its context on
// started, then returns a pass with stdout once release is closed
// (ignoring its context, as a stuck process would).
func blocking(started chan<- claimed, release <-chan struct{}, stdout string) RunFunc {
	return func(ctx context.Context, c Claim) (Outcome, error) {
		started <- claimed{c, ctx}
		<-release
		return Outcome{Passed: true, Stdout: stdout}, nil
	}
}

type claimed struct {
	c   Claim
	ctx context.Context
}

type answer struct {
	r   Result
	err error
}

func goFlight(n *Node, id string, run RunFunc) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := n.SingleFlight(ctx, id, run)
		ch <- answer{r, err}
	}()
	return ch
}

// resultRunID answers the run id of the check's result record.
func resultRunID(t *testing.T, n *Node, id string) string {
	t.Helper()
	resp, err := n.cli.Get(context.Background(), n.keys.result(id))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("result of %s: %v (%d keys)", id, err, len(resp.Kvs))
	}
	rec, err := UnmarshalActionRecord(resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return rec.RunID
}

// TestOwnerLeaseExpiresWaiterRetakes: node A claims and its run hangs;
// A stops renewing (paused); its lease expires in etcd, the claim goes,
// B's waiter retakes it with a higher token and runs; A's late
// completion is refused and never overwrites B's result.
func TestOwnerLeaseExpiresWaiterRetakes(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 2*time.Second)
	a, b := nodes[0], nodes[1]
	id := identity(t.Name())
	started := make(chan claimed, 1)
	release := make(chan struct{})
	ansA := goFlight(a, id, blocking(started, release, "A"))
	ca := <-started
	var calls atomic.Int64
	ansB := goFlight(b, id, passing(&calls, 10*time.Millisecond, "B"))

	a.pauseKeepalive.Store(true)
	var rb answer
	select {
	case rb = <-ansB:
	case <-time.After(10 * time.Second):
		t.Fatal("B's waiter did not retake A's claim after A's lease expired")
	}
	if rb.err != nil || rb.r.Source != SourceRan || rb.r.Node != "n2" {
		t.Fatalf("B = %+v, %v; want B ran it", rb.r, rb.err)
	}
	if rb.r.Token <= ca.c.Token {
		t.Fatalf("B's token %d, want above A's %d", rb.r.Token, ca.c.Token)
	}
	if ca.ctx.Err() != nil {
		t.Fatal("A's run was stopped when its session expired: a stale run is fenced by its token where it is recorded, not by A's clock")
	}
	close(release)
	ra := <-ansA
	if errs.CodeOf(ra.err) != errs.LeaseLost {
		t.Fatalf("A's late completion = %+v, %v; want LEASE_LOST", ra.r, ra.err)
	}
	if got := resultRunID(t, b, id); got != rb.r.RunID {
		t.Fatalf("result record is run %s, want B's %s", got, rb.r.RunID)
	}
	r, err := b.SingleFlight(context.Background(), id, passing(&calls, 0, "C"))
	if err != nil || r.Source != SourceReused || r.RunID != rb.r.RunID || r.Outcome.Stdout != "B" {
		t.Fatalf("later call = %+v, %v; want B's run reused", r, err)
	}
	a.pauseKeepalive.Store(false)
}

// TestStaleCompletionRefusedByEtcd: A's lease is revoked by an operator
// while A's run hangs and A has not noticed (its own deadline is still
// ahead); B retakes and records; A's completion reaches etcd, whose
// compare of the claim's revision refuses it.
func TestStaleCompletionRefusedByEtcd(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 10*time.Second)
	a, b := nodes[0], nodes[1]
	id := identity(t.Name())
	started := make(chan claimed, 1)
	release := make(chan struct{})
	ansA := goFlight(a, id, blocking(started, release, "A"))
	ca := <-started
	var calls atomic.Int64
	ansB := goFlight(b, id, passing(&calls, 10*time.Millisecond, "B"))

	a.pauseKeepalive.Store(true) // A will not notice the revocation
	a.mu.Lock()
	lease := a.sess.lease
	a.mu.Unlock()
	if _, err := rawClient(t, ClientURLs(shared)).Revoke(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	rb := <-ansB
	if rb.err != nil || rb.r.Source != SourceRan || rb.r.Token <= ca.c.Token {
		t.Fatalf("B = %+v, %v; want B ran it with a token above %d", rb.r, rb.err, ca.c.Token)
	}
	if err := a.Live(); err != nil {
		t.Fatalf("A noticed before its deadline (%v): the test needs its completion to reach etcd", err)
	}
	close(release)
	ra := <-ansA
	if errs.CodeOf(ra.err) != errs.LeaseLost || !strings.Contains(ra.err.Error(), "lost its claim") {
		t.Fatalf("A's completion = %+v, %v; want LEASE_LOST from etcd's compare", ra.r, ra.err)
	}
	if got := resultRunID(t, b, id); got != rb.r.RunID {
		t.Fatalf("result record is run %s, want B's %s", got, rb.r.RunID)
	}
	a.pauseKeepalive.Store(false)
}

// TestCloseLetsRunsFinish: a node leaving while it runs a check
// publishes it first, so its waiters never run it again.
func TestCloseLetsRunsFinish(t *testing.T) {
	prefix := testPrefix(t)
	a, err := Join(context.Background(), Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "a", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := join(t, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "b", TTL: 2 * time.Second})
	id := identity(t.Name())
	started := make(chan claimed, 1)
	release := make(chan struct{})
	ansA := goFlight(a, id, blocking(started, release, "A"))
	<-started
	var calls atomic.Int64
	ansB := goFlight(b, id, passing(&calls, 0, "B"))
	closed := make(chan error, 1)
	go func() { closed <- a.Close(context.Background()) }()
	waitFor(t, 5*time.Second, "A is leaving", a.isLeaving)
	if _, err := a.SingleFlight(context.Background(), identity("other"), passing(&calls, 0, "x")); errs.CodeOf(err) != errs.Unavailable {
		t.Fatalf("SingleFlight on a leaving node = %v, want UNAVAILABLE", err)
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	ra, rb := <-ansA, <-ansB
	if ra.err != nil || ra.r.Source != SourceRan {
		t.Fatalf("A = %+v, %v; want ran", ra.r, ra.err)
	}
	if rb.err != nil || (rb.r.Source != SourceJoined && rb.r.Source != SourceReused) || rb.r.RunID != ra.r.RunID || calls.Load() != 0 {
		t.Fatalf("B = %+v, %v, B's runs %d; want A's run %s joined", rb.r, rb.err, calls.Load(), ra.r.RunID)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := a.Live(); errs.CodeOf(err) != errs.Unavailable {
		t.Fatalf("Live after Close = %v, want UNAVAILABLE", err)
	}
}

// TestFailedRunIsAResultNotEvidence: waiters get a failed run's
// outcome; a later call runs again.
func TestFailedRunIsAResultNotEvidence(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 0)
	id := identity(t.Name())
	var calls atomic.Int64
	fail := func(ctx context.Context, c Claim) (Outcome, error) {
		o, err := passing(&calls, 200*time.Millisecond, "")(ctx, c)
		o.Passed, o.ExitCode, o.Stdout, o.Stderr = false, 1, "FAIL: TestX", "exit status 1"
		return o, err
	}
	a1, a2 := goFlight(nodes[0], id, fail), goFlight(nodes[1], id, fail)
	r1, r2 := <-a1, <-a2
	if r1.err != nil || r2.err != nil || calls.Load() != 1 || r1.r.RunID != r2.r.RunID || r1.r.Outcome.ExitCode != 1 || r2.r.Outcome.Stdout != "FAIL: TestX" {
		t.Fatalf("answers %+v %v / %+v %v, runs %d; want one failed run for both", r1.r, r1.err, r2.r, r2.err, calls.Load())
	}
	r, err := nodes[1].SingleFlight(context.Background(), id, fail)
	if err != nil || r.Source != SourceRan || calls.Load() != 2 {
		t.Fatalf("later call = %+v, %v (runs %d); want a new run", r, err, calls.Load())
	}
}

// TestRunErrorReleasesTheClaim: a RunFunc that errs records nothing; the
// waiter retakes and runs.
func TestRunErrorReleasesTheClaim(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 0)
	id := identity(t.Name())
	started := make(chan claimed, 1)
	release := make(chan struct{})
	ansA := goFlight(nodes[0], id, func(ctx context.Context, c Claim) (Outcome, error) {
		started <- claimed{c, ctx}
		<-release
		return Outcome{}, errs.New(errs.Internal, "the checkout vanished")
	})
	<-started
	var calls atomic.Int64
	ansB := goFlight(nodes[1], id, passing(&calls, 0, "B"))
	close(release)
	ra, rb := <-ansA, <-ansB
	if errs.CodeOf(ra.err) != errs.Internal {
		t.Fatalf("A = %v, want its run's error", ra.err)
	}
	if rb.err != nil || rb.r.Source != SourceRan || calls.Load() != 1 {
		t.Fatalf("B = %+v, %v; want B ran it", rb.r, rb.err)
	}
}

// TestCallerGivingUpReleasesTheClaim: the caller of the running node
// cancels; its run is cancelled, nothing is recorded, and a waiter on
// another node retakes the claim and runs the check itself.
func TestCallerGivingUpReleasesTheClaim(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 0)
	id := identity(t.Name())
	var aCalls, bCalls atomic.Int64
	actx, acancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	ansA := make(chan answer, 1)
	go func() {
		r, err := nodes[0].SingleFlight(actx, id, func(ctx context.Context, c Claim) (Outcome, error) {
			close(started)
			return passing(&aCalls, time.Minute, "A")(ctx, c)
		})
		ansA <- answer{r, err}
	}()
	<-started
	ansB := goFlight(nodes[1], id, passing(&bCalls, 0, "B"))
	acancel()
	ra := <-ansA
	if errs.CodeOf(ra.err) != errs.Cancelled {
		t.Fatalf("A = %+v, %v; want CANCELLED", ra.r, ra.err)
	}
	rb := <-ansB
	if rb.err != nil || rb.r.Source != SourceRan || rb.r.Outcome.Stdout != "B" || bCalls.Load() != 1 {
		t.Fatalf("B = %+v, %v; want B ran it", rb.r, rb.err)
	}
}

// TestWaiterSurvivesCompaction: a waiter whose watch starts below
// etcd's compacted revision reads the keys again and keeps waiting for
// the claim's result.
func TestWaiterSurvivesCompaction(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 0)
	a, b := nodes[0], nodes[1]
	id := identity(t.Name())
	started := make(chan claimed, 1)
	release := make(chan struct{})
	ansA := goFlight(a, id, blocking(started, release, "A"))
	ca := <-started
	ctx := context.Background()
	for i := range 3 { // history to compact away
		if _, err := b.cli.Put(ctx, b.keys.prefix+"filler", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := b.cli.Get(ctx, b.keys.prefix+"filler")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	ad, _ := ActionDigest(id)
	b.mu.Lock()
	f := &flight{n: b, s: b.sess, id: id, ad: ad}
	b.mu.Unlock()
	type waited struct {
		rec []byte
		err error
	}
	got := make(chan waited, 1)
	go func() {
		rec, _, err := f.wait(ctx, ctx, ca.c.Token, ca.c.Token+1) // below the compaction
		got <- waited{rec, err}
	}()
	close(release)
	w := <-got
	if w.err != nil || w.rec == nil {
		t.Fatalf("wait across a compaction = %v, %v; want A's result", w.rec, w.err)
	}
	rec, err := UnmarshalActionRecord(w.rec)
	if err != nil || rec.Token != ca.c.Token || rec.Node != "n1" {
		t.Fatalf("record = %+v, %v; want A's run, token %d", rec, err, ca.c.Token)
	}
	if ra := <-ansA; ra.err != nil {
		t.Fatal(ra.err)
	}
}
