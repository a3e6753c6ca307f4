package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
)

// waitFor polls cond every 20ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// rawClient answers an etcd client of the test's own (an operator's
// etcdctl), closed at the end of the test.
func rawClient(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func TestLiveLostAfterDeadlineThenRejoinsWithHigherEpoch(t *testing.T) {
	prefix := testPrefix(t)
	n := join(t, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "n1", TTL: 2 * time.Second})
	if err := n.Live(); err != nil {
		t.Fatalf("Live after Join = %v", err)
	}
	e0 := n.Epoch()
	n.mu.Lock()
	deadline := n.sess.deadline
	n.mu.Unlock()

	// A claim context ends at the session deadline.
	claimCtx := make(chan context.Context, 1)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := n.SingleFlight(context.Background(), identity(t.Name()), func(ctx context.Context, c Claim) (Outcome, error) {
			claimCtx <- ctx
			<-release
			return Outcome{Passed: true, Stdout: "late"}, nil
		})
		done <- err
	}()
	cctx := <-claimCtx

	n.pauseKeepalive.Store(true) // the process is paused: no keepalive leaves it
	paused := time.Now()
	var lost error
	waitFor(t, 5*time.Second, "Live answers LEASE_LOST", func() bool { lost = n.Live(); return lost != nil })
	lostAfter := time.Since(paused)
	if errs.CodeOf(lost) != errs.LeaseLost || !strings.Contains(lost.Error(), "rejoins at") || !strings.Contains(lost.Error(), "expired at") {
		t.Fatalf("Live = %v, want LEASE_LOST naming when it expired and when it rejoins", lost)
	}
	if lostAfter > 2*time.Second+500*time.Millisecond {
		t.Fatalf("Live refused %s after the pause, want within the TTL (2s)", lostAfter)
	}
	if time.Now().Before(deadline) {
		t.Fatalf("Live refused before the deadline %s", deadline)
	}
	// The run goes on (a check only reads); once etcd has expired the
	// lease (the claim key is gone), its late result is refused there.
	if cctx.Err() != nil {
		t.Fatal("the claim context was cancelled at the session deadline: the run's result is fenced by its token, not stopped by the clock")
	}
	cli := rawClient(t, ClientURLs(shared))
	waitFor(t, 10*time.Second, "etcd expires the paused node's claim", func() bool {
		r, err := cli.Get(context.Background(), n.keys.run(identity(t.Name())))
		return err == nil && len(r.Kvs) == 0
	})
	close(release)
	if err := <-done; errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("SingleFlight of the lost claim = %v, want LEASE_LOST", err)
	}
	if _, err := n.SingleFlight(context.Background(), identity(t.Name()+"2"), func(context.Context, Claim) (Outcome, error) {
		t.Error("ran while lost")
		return Outcome{}, nil
	}); errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("SingleFlight while lost = %v, want LEASE_LOST", err)
	}
	st, err := n.Status(context.Background())
	if err != nil || st.State != "lost" {
		t.Fatalf("Status while lost = %s, %v; want lost", st.State, err)
	}

	lostAt := time.Now()
	n.pauseKeepalive.Store(false)
	waitFor(t, 10*time.Second, "the node rejoins", func() bool { return n.Live() == nil })
	if held := time.Since(lostAt); held < time.Second {
		t.Fatalf("rejoined %s after losing its session, want after a hold-off of about one TTL", held)
	}
	if e1 := n.Epoch(); e1 <= e0 {
		t.Fatalf("epoch after rejoin = %d, want above %d", e1, e0)
	}
	st, err = n.Status(context.Background())
	if err != nil || st.State != "live" || len(st.Members) != 1 || st.Members[0].Epoch != n.Epoch() {
		t.Fatalf("Status after rejoin = %+v, %v", st, err)
	}
}

func TestJoinRefusesANameHeldByALiveNode(t *testing.T) {
	prefix := testPrefix(t)
	n1 := join(t, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "dup", TTL: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Join(ctx, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "dup", TTL: 2 * time.Second})
	if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "another node named dup is live; pick --node-name") {
		t.Fatalf("second Join = %v, want INVALID_ARGUMENT naming --node-name", err)
	}
	if n1.Live() != nil {
		t.Fatal("the first node lost its session")
	}
}

func TestJoinWaitsOutAPreviousProcessesKey(t *testing.T) {
	prefix := testPrefix(t)
	cli := rawClient(t, ClientURLs(shared))
	ctx := context.Background()
	// The previous process of node "again": a lease nobody renews (it was
	// killed) and its member key.
	lr, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, prefix+"members/again", `{"name":"again"}`, clientv3.WithLease(lr.ID)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n := join(t, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "again", TTL: 2 * time.Second})
	if n.Live() != nil {
		t.Fatal("not live after Join")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Join took %s, want about the old lease's TTL", d)
	}
}

func TestJoinWithoutEtcdAnswersUnavailable(t *testing.T) {
	dead, err := FreeLoopbackURL()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Join(context.Background(), Config{Endpoints: []string{dead}, Node: "n", DialTimeout: time.Second})
	if errs.CodeOf(err) != errs.Unavailable || !strings.Contains(err.Error(), "check --cluster-store") {
		t.Fatalf("Join without etcd = %v, want UNAVAILABLE naming --cluster-store", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Join without etcd took %s, want about the dial timeout (1s)", d)
	}
}

func TestStatusShowsMembersAndClaims(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 0)
	id := identity(t.Name())
	started := make(chan claimed, 1)
	release := make(chan struct{})
	ans := goFlight(nodes[1], id, blocking(started, release, "x"))
	c := <-started
	st, err := nodes[0].Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "live" || st.Node != "n1" || st.Epoch != nodes[0].Epoch() || !st.Deadline.After(time.Now()) {
		t.Fatalf("status = %+v", st)
	}
	if len(st.Members) != 2 || st.Members[0].Name != "n1" || st.Members[1].Name != "n2" || st.Members[1].Epoch != nodes[1].Epoch() || !st.Members[1].Live {
		t.Fatalf("members = %+v", st.Members)
	}
	if len(st.Claims) != 1 || st.Claims[0] != (ClaimInfo{Identity: id, Node: "n2", Token: c.c.Token, RunID: c.c.RunID}) {
		t.Fatalf("claims = %+v, want %s on n2 token %d", st.Claims, id, c.c.Token)
	}
	close(release)
	if a := <-ans; a.err != nil {
		t.Fatal(a.err)
	}
	if st, err := nodes[0].Status(context.Background()); err != nil || len(st.Claims) != 0 {
		t.Fatalf("claims after the run = %+v, %v", st.Claims, err)
	}
}
