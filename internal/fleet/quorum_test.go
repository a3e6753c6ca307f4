package fleet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// TestQuorumLossRefusesInBoundedTime: with 2 of 3 members stopped, a
// check neither hangs nor runs: SingleFlight answers UNAVAILABLE or
// LEASE_LOST within the session's TTL (plus slack), and Live refuses.
func TestQuorumLossRefusesInBoundedTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	members, err := StartCluster(ctx, 3, EmbedConfig{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3-member embedded cluster started in %s", time.Since(start))
	t.Cleanup(func() {
		for _, m := range members {
			m.Close()
		}
	})
	ttl := 2 * time.Second
	n := join(t, Config{Endpoints: ClientURLs(members), Node: "q", TTL: ttl, DialTimeout: time.Second})
	var calls atomic.Int64
	if r, err := n.SingleFlight(ctx, identity("before"), passing(&calls, 0, "ok")); err != nil || r.Source != SourceRan {
		t.Fatalf("before the loss: %+v, %v", r, err)
	}

	// Stop the two followers (a leader's graceful stop first hands its
	// leadership over, which a cluster losing its quorum cannot take).
	var followers []*Embedded
	for _, m := range members {
		if m.e.Server.Leader() != m.e.Server.MemberID() {
			followers = append(followers, m)
		}
	}
	if len(followers) != 2 {
		t.Fatalf("%d followers, want 2", len(followers))
	}
	t0 := time.Now()
	followers[0].Close()
	followers[1].Close()
	lost := time.Now()
	t.Logf("stopped two followers in %s", lost.Sub(t0))

	r, err := n.SingleFlight(ctx, identity("during"), passing(&calls, 0, "ran without quorum"))
	took := time.Since(lost)
	if c := errs.CodeOf(err); c != errs.Unavailable && c != errs.LeaseLost {
		t.Fatalf("SingleFlight without quorum = %+v, %v; want UNAVAILABLE or LEASE_LOST", r, err)
	}
	if took > ttl+2*time.Second {
		t.Fatalf("SingleFlight without quorum answered after %s, want within the TTL %s (+2s)", took, ttl)
	}
	if calls.Load() != 1 {
		t.Fatalf("runs = %d; the check ran without quorum", calls.Load())
	}
	waitFor(t, ttl+time.Second, "Live refuses without quorum", func() bool { return n.Live() != nil })
	if err := n.Live(); errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("Live without quorum = %v, want LEASE_LOST", err)
	}
	t.Logf("refused %s after the quorum loss: %v", took, err)
}

// TestChurn: 30 checks in flight, callers on every node, while a 4th
// node joins and one leaves gracefully: exactly 30 runs, every caller
// answered with its check's one run.
func TestChurn(t *testing.T) {
	prefix := testPrefix(t)
	ttl := 2 * time.Second
	base := []*Node{
		join(t, Config{Endpoints: ClientURLs(shared)[0:1], Prefix: prefix, Node: "n1", TTL: ttl}),
		join(t, Config{Endpoints: ClientURLs(shared)[1:2], Prefix: prefix, Node: "n2", TTL: ttl}),
	}
	leaver, err := Join(context.Background(), Config{Endpoints: ClientURLs(shared)[2:3], Prefix: prefix, Node: "n3", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*Node{base[0], base[1], leaver}
	var mu sync.Mutex
	runs := map[string]int{}
	run := func(id string) RunFunc {
		return func(ctx context.Context, c Claim) (Outcome, error) {
			mu.Lock()
			runs[id]++
			mu.Unlock()
			var calls atomic.Int64
			return passing(&calls, 300*time.Millisecond, "ok "+id)(ctx, c)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type got struct {
		id  string
		r   Result
		err error
	}
	const checks, callers = 30, 4
	out := make(chan got, checks*(callers+1))
	var wg sync.WaitGroup
	// ask asks node i, and another live node if i is leaving (as an
	// agent whose node answers UNAVAILABLE does).
	ask := func(i int, id string, all func() []*Node) {
		defer wg.Done()
		ns := all()
		r, err := ns[i%len(ns)].SingleFlight(ctx, id, run(id))
		for attempt := 1; errs.CodeOf(err) == errs.Unavailable && attempt < 5; attempt++ {
			r, err = base[attempt%2].SingleFlight(ctx, id, run(id))
		}
		out <- got{id, r, err}
	}
	var fourth atomic.Pointer[Node]
	all := func() []*Node {
		if f := fourth.Load(); f != nil {
			return append(append([]*Node{}, nodes...), f)
		}
		return nodes
	}
	for c := range checks {
		id := identity(fmt.Sprintf("%s/%d", t.Name(), c))
		for k := range callers {
			wg.Add(1)
			go ask(c+k, id, all)
		}
	}
	// Churn while they run: a 4th node joins (and gets callers), n3 leaves.
	f := join(t, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "n4", TTL: ttl})
	fourth.Store(f)
	for c := range checks {
		wg.Add(1)
		go ask(3, identity(fmt.Sprintf("%s/%d", t.Name(), c)), all)
	}
	if err := leaver.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(out)
	byID := map[string]string{}
	answered := 0
	for g := range out {
		if g.err != nil {
			t.Fatalf("caller of %s: %v", g.id, g.err)
		}
		if prev, ok := byID[g.id]; ok && prev != g.r.RunID {
			t.Fatalf("check %s answered runs %s and %s", g.id, prev, g.r.RunID)
		}
		byID[g.id] = g.r.RunID
		answered++
	}
	total := 0
	for id, k := range runs {
		if k != 1 {
			t.Errorf("check %s ran %d times", id, k)
		}
		total += k
	}
	if total != checks || len(runs) != checks || answered != checks*(callers+1) {
		t.Fatalf("runs = %d over %d checks, answers %d; want %d runs and %d answers", total, len(runs), answered, checks, checks*(callers+1))
	}
}
