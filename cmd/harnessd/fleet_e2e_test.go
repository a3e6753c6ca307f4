package main

// The fleet's must-show tests (issue #34): harnessd processes joined to a
// 3-member etcd cluster on 127.0.0.1, each with its own clone of one
// fixture repository, whose check runs are counted (and held) by the run
// log and whose results go to a fenced sink, the fleet's remote cache
// (fleet_helpers_test.go). The session TTL is fleetTTL (2 s).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// callResult is one caller's run_check answer and when it came.
type callResult struct {
	node  string
	who   string
	a     checkAnswer
	err   error
	start time.Time
	end   time.Time
	done  chan struct{} // closed once answered
}

// asker starts run_check calls in goroutines and collects their answers.
type asker struct {
	wg    sync.WaitGroup
	mu    sync.Mutex // protects calls
	calls []*callResult
}

// ask calls run_check for who on n through call (n's API when nil).
func (k *asker) ask(n *fleetNode, call caller, who string) *callResult {
	c := &callResult{node: n.name, who: who, start: time.Now(), done: make(chan struct{})}
	k.mu.Lock()
	k.calls = append(k.calls, c)
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		c.a, c.err = n.runCheck(ctx, call, who)
		c.end = time.Now()
		close(c.done)
	}()
	return c
}

// answered waits (at most timeout) for c's answer.
func (c *callResult) answered(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(timeout):
		t.Fatalf("run_check %s on %s not answered within %s", c.who, c.node, timeout)
	}
}

// wait waits for every call (at most timeout) and returns them.
func (k *asker) wait(t *testing.T, timeout time.Duration) []*callResult {
	t.Helper()
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("%d run_check calls not all answered within %s", len(k.calls), timeout)
	}
	return k.calls
}

// totalCalls is how many run_check calls reached the check actors of ns.
func totalCalls(t *testing.T, ns []*fleetNode) int {
	total := 0
	for _, n := range ns {
		total += n.checkCalls(t)
	}
	return total
}

// oneRun fails t unless the run log saw exactly one run of who, and
// returns it.
func oneRun(t *testing.T, l *runLog, who string) runEntry {
	t.Helper()
	runs := l.of(who)
	if len(runs) != 1 {
		t.Fatalf("the run log saw %d runs of %s: %v; want exactly one fleet-wide", len(runs), who, runs)
	}
	return runs[0]
}

// onePut fails t unless the sink accepted the PUT of an action record
// with token tok and no other for its action.
func onePut(t *testing.T, s *sink, tok int64) cacheReq {
	t.Helper()
	put, ok := s.putOf(tok)
	if !ok || put.Status != 200 {
		t.Fatalf("the sink's PUTs of action records: %v; want the one with token %d accepted", s.acPuts(), tok)
	}
	for _, r := range s.acPuts() {
		if r.Hex == put.Hex && r.Token != tok && r.Status == 200 {
			t.Fatalf("the sink accepted another record of the same action: %v (the run's token %d)", r, tok)
		}
	}
	return put
}

// 1. Twenty agents on three nodes (three of them through MCP, the rest
// through the HTTP API on TCP) ask for one check while its one run is
// held: exactly one run fleet-wide, twenty answers naming it, one action
// record in the fleet's cache (with the run's token); a later call on a
// node that did not run it answers reused, with the same output.
func TestFleetSingleFlight(t *testing.T) {
	f := newFleetEnv(t, true)
	ns := f.nodes(t, "n", 3, f.direct)
	const who, agents = "TestOnce", 20
	f.runs.holdRuns(who)

	var k asker
	for i := range agents {
		n := ns[i%3]
		var call caller
		if i < 3 {
			call = mcpCaller(mcpSession(t, n.dataDir))
		} else {
			tok, err := daemon.ReadToken(daemon.PathsOf(n.dataDir))
			if err != nil {
				t.Fatal(err)
			}
			c := client.TCP(n.listen, tok)
			t.Cleanup(c.Close)
			call = apiCaller(c)
		}
		k.ask(n, call, who)
	}
	waitFor(t, 30*time.Second, "the one run to start and all 20 calls to reach the nodes' check actors", func() bool {
		return len(f.runs.held(who)) > 0 && totalCalls(t, ns) >= agents
	}, func() string {
		return fmt.Sprintf("runs %v, calls at the check actors %d", f.runs.of(""), totalCalls(t, ns))
	})
	if held := f.runs.held(who); len(held) != 1 {
		t.Fatalf("%d runs of %s in flight while 20 callers wait: %v; want 1", len(held), who, held)
	}
	// Every node's status shows the fleet: 3 live members, its session
	// live, and the one claim (as etcd has it).
	claims := f.etcd.claims(t)
	if len(claims) != 1 {
		t.Fatalf("claims in etcd while the run is held: %+v; want 1", claims)
	}
	for _, n := range ns {
		st := n.fleetOf(t)
		live := 0
		for _, m := range st.Members {
			if m.Live {
				live++
			}
		}
		if st.State != "live" || live != 3 || len(st.Claims) != 1 || st.Claims[0].Node != claims[0].Node || st.Claims[0].Token != claims[0].Token {
			t.Fatalf("%s's status: %+v; want its session live, 3 live members and the claim %+v", n.name, st, claims[0])
		}
	}
	f.runs.release(t, f.runs.held(who)[0].Seq)
	calls := k.wait(t, 60*time.Second)
	run := oneRun(t, f.runs, who)

	var ran fleetRun
	sources := map[string]int{}
	for i, c := range calls {
		if c.err != nil {
			t.Fatalf("agent %d on %s: %v", i, c.node, errorOf(c.err))
		}
		if !c.a.Passed || c.a.Fleet == nil {
			t.Fatalf("agent %d on %s: %s; want a pass with a fleet section", i, c.node, c.a)
		}
		if ran.RunID == "" {
			ran = *c.a.Fleet
		}
		if c.a.Fleet.RunID != ran.RunID || c.a.Fleet.Node != ran.Node || c.a.Fleet.Token != ran.Token {
			t.Errorf("agent %d on %s names run %s of %s with token %d; agent 0 run %s of %s with token %d",
				i, c.node, c.a.Fleet.RunID, c.a.Fleet.Node, c.a.Fleet.Token, ran.RunID, ran.Node, ran.Token)
		}
		want := "ran"
		if c.node != ran.Node {
			want = "joined"
		}
		if c.a.Fleet.Source != want {
			t.Errorf("agent %d on %s: source %q; want %q (run on %s)", i, c.node, c.a.Fleet.Source, want, ran.Node)
		}
		if c.a.Stdout != stdoutOf(who, run.Seq) {
			t.Errorf("agent %d on %s: stdout %q; want the run's %q", i, c.node, c.a.Stdout, stdoutOf(who, run.Seq))
		}
		sources[c.node+" "+c.a.Fleet.Source]++
	}
	if ran.Node != claims[0].Node || ran.Token != claims[0].Token {
		t.Fatalf("the answers name run %s of %s with token %d; the claim was %s's with token %d", ran.RunID, ran.Node, ran.Token, claims[0].Node, claims[0].Token)
	}
	onePut(t, f.sink, ran.Token)
	t.Logf("20 agents, 1 run (%s on %s, token %d); answers by node and source: %v", ran.RunID, ran.Node, ran.Token, sources)

	// A later call on a node that did not run it.
	var other *fleetNode
	for _, n := range ns {
		if n.name != ran.Node {
			other = n
		}
	}
	a := other.mustCheck(t, who)
	if !a.Reused || a.Fleet.Source != "reused" || a.Fleet.RunID != ran.RunID || a.Stdout != stdoutOf(who, run.Seq) {
		t.Fatalf("a later call on %s: %s; want reused, naming run %s, with its output", other.name, a, ran.RunID)
	}
	oneRun(t, f.runs, who)
	onePut(t, f.sink, ran.Token)
}

// 2. Churn: 30 distinct checks in flight on three nodes; a fourth node
// joins (and asks for all 30) and one of the three leaves with `harnessd
// stop` while they run: exactly 30 runs, one action record each, and
// every caller is answered within its run's time plus 2×TTL.
func TestFleetChurn(t *testing.T) {
	f := newFleetEnv(t, true)
	ns := f.nodes(t, "c", 3, f.direct)
	const checks = 30
	names := make([]string, checks)
	for i := range names {
		names[i] = fmt.Sprintf("TestChurn%02d", i)
	}
	f.runs.holdRuns(names...)
	var k asker
	for _, who := range names {
		for _, n := range ns {
			k.ask(n, nil, who)
		}
	}
	waitFor(t, 30*time.Second, "the 30 runs to start", func() bool { return f.runs.heldCount() >= checks }, func() string {
		return fmt.Sprintf("%d runs held: %v", f.runs.heldCount(), f.runs.of(""))
	})
	released := map[string]time.Time{}
	release := func(from, to int) {
		for _, who := range names[from:to] {
			held := f.runs.held(who)
			if len(held) != 1 {
				t.Fatalf("%s has %d runs in flight: %v; want 1", who, len(held), held)
			}
			released[who] = f.runs.release(t, held[0].Seq)
		}
	}
	// A third finish before the churn.
	release(0, 10)

	joinStart := time.Now()
	n4 := f.node(t, "c4")
	for _, who := range names {
		k.ask(n4, nil, who)
	}
	waitFor(t, 30*time.Second, "the 30 calls on the joining node to reach its check actors", func() bool {
		return n4.checkCalls(t) >= checks
	}, nil)
	joined := time.Since(joinStart)

	leaver := ns[2]
	stopped := make(chan error, 1)
	go func() { stopped <- leaver.stop() }()
	release(10, checks)
	calls := k.wait(t, 90*time.Second)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}

	if runs := f.runs.of(""); len(runs) != checks {
		t.Fatalf("the run log saw %d runs for 30 checks: %v", len(runs), runs)
	}
	for _, who := range names {
		oneRun(t, f.runs, who)
	}
	runOf := map[string]fleetRun{}
	bound := 2 * fleetTTL
	var worst time.Duration
	var redirected []*callResult
	for _, c := range calls {
		// The run ended when the run log let it finish; the caller is
		// answered within 2×TTL of that (or of its call, if later).
		from := released[c.who]
		if c.start.After(from) {
			from = c.start
		}
		late := c.end.Sub(from)
		worst = max(worst, late)
		if late > bound {
			t.Errorf("%s on %s answered %s after its run ended (called %s, run released %s); want within 2×TTL = %s",
				c.who, c.node, late.Round(time.Millisecond), c.start.Format("15:04:05.000"), released[c.who].Format("15:04:05.000"), bound)
		}
		if c.err != nil {
			// The leaving node may send a caller waiting for another
			// node's run elsewhere, saying so; any other error fails.
			if c.node == leaver.name && codeIs(c.err, errs.Unavailable) && strings.Contains(errorOf(c.err), "another node") {
				redirected = append(redirected, c)
				continue
			}
			t.Errorf("%s on %s: %v", c.who, c.node, errorOf(c.err))
			continue
		}
		if !c.a.Passed || c.a.Fleet == nil {
			t.Errorf("%s on %s: %s; want a pass with a fleet section", c.who, c.node, c.a)
			continue
		}
		if r, ok := runOf[c.who]; ok && r.RunID != c.a.Fleet.RunID {
			t.Errorf("%s on %s names run %s; another caller got run %s", c.who, c.node, c.a.Fleet.RunID, r.RunID)
		}
		runOf[c.who] = *c.a.Fleet
	}
	if t.Failed() {
		t.FailNow()
	}
	// The redirected callers ask another node, as told: the same run.
	for _, c := range redirected {
		a := ns[0].mustCheck(t, c.who)
		if r := runOf[c.who]; a.Fleet.RunID != r.RunID || !a.Reused {
			t.Errorf("%s, asked again on %s after %s left: %s; want reused from run %s", c.who, ns[0].name, leaver.name, a, r.RunID)
		}
	}
	if runs := f.runs.of(""); len(runs) != checks {
		t.Fatalf("the run log saw %d runs for 30 checks after the redirected callers asked again: %v", len(runs), runs)
	}
	for _, r := range runOf {
		onePut(t, f.sink, r.Token)
	}
	t.Logf("30 checks, %d callers on 4 nodes (c4 joined in %s, c3 left mid-flight: %d of its callers were sent to another node), 30 runs, 30 action records; slowest answer %s after its run ended (bound %s)",
		len(calls), joined.Round(time.Millisecond), len(redirected), worst.Round(time.Millisecond), bound)
}

// 3. A pause: the node holding a check's claim is stopped (SIGSTOP) for
// at least 2×TTL, then continued (SIGCONT). A waiter on another node
// retakes the claim with a larger token, runs the check and records it.
// The stale node's record is refused by the sink (409: a higher token was
// accepted) and by etcd (its caller gets LEASE_LOST; the fleet's result
// names the new run), and its next mutation answers LEASE_LOST, until it
// rejoins. Two moments of the pause:
//
//   - while running: the check's process (not stopped with its daemon)
//     finishes during the pause; the node records it when it continues;
//   - while writing: its record's PUT is at the sink when the node stops,
//     and the sink decides it after it accepted the new run's record.
func TestFleetPause(t *testing.T) {
	for _, moment := range []string{"while running", "while writing"} {
		t.Run(moment, func(t *testing.T) { testFleetPause(t, moment == "while writing") })
	}
}

func testFleetPause(t *testing.T, writing bool) {
	f := newFleetEnv(t, true)
	ns := f.nodes(t, "p", 3, f.direct)
	stale, taker := ns[0], ns[1]
	const who = "TestPause"
	if writing {
		f.sink.holdPuts()
	} else {
		f.runs.holdRuns(who)
	}
	var k asker
	cs := k.ask(stale, nil, who)
	var tA int64
	if writing {
		waitFor(t, 20*time.Second, "p1's record to reach the sink", func() bool { return len(f.sink.heldPuts()) == 1 }, nil)
		tA = f.sink.heldPuts()[0]
	} else {
		waitFor(t, 20*time.Second, "p1's run to start", func() bool { return len(f.runs.held(who)) == 1 }, nil)
	}
	claims := f.etcd.claims(t)
	if len(claims) != 1 || claims[0].Node != stale.name || (writing && claims[0].Token != tA) {
		t.Fatalf("claims while p1 runs %s: %+v; want one, p1's (its record's token %d)", who, claims, tA)
	}
	tA = claims[0].Token

	if err := syscall.Kill(stale.d.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	if !writing {
		// Its check's process is not stopped: it finishes during the pause.
		f.runs.release(t, f.runs.held(who)[0].Seq)
	}
	ct := k.ask(taker, nil, who)
	if writing {
		waitFor(t, 4*fleetTTL+20*time.Second, "p2 to retake the claim and its record to reach the sink", func() bool {
			return len(f.sink.heldPuts()) == 2
		}, func() string { return fmt.Sprintf("held PUTs %v", f.sink.heldPuts()) })
		tB := f.sink.heldPuts()[1]
		f.sink.releasePut(t, tB)
	}
	ct.answered(t, 4*fleetTTL+30*time.Second)
	retook := time.Since(paused)
	if ct.err != nil || !ct.a.Passed || ct.a.Fleet == nil || ct.a.Fleet.Node != taker.name || ct.a.Fleet.Source != "ran" {
		t.Fatalf("the waiter on p2: %s / %s; want a pass it ran itself", errorOf(ct.err), ct.a)
	}
	tB := ct.a.Fleet.Token
	if tB <= tA {
		t.Fatalf("the retaken claim's token %d is not above the stale one's %d", tB, tA)
	}
	if runs := f.runs.of(who); len(runs) != 2 || ct.a.Stdout != stdoutOf(who, runs[1].Seq) {
		t.Fatalf("runs of %s: %v; p2 printed %q; want p1's and then p2's", who, runs, ct.a.Stdout)
	}
	if writing {
		// The stale holder's write, decided now: refused.
		f.sink.releasePut(t, tA)
		waitFor(t, 10*time.Second, "the sink to answer the stale PUT", func() bool { _, ok := f.sink.putOf(tA); return ok }, nil)
	}
	onePut(t, f.sink, tB)

	if d := 2*fleetTTL - time.Since(paused); d > 0 {
		time.Sleep(d) // the pause lasts at least 2×TTL: its length is the scenario, not a condition
	}
	if err := syscall.Kill(stale.d.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	pausedFor := time.Since(paused)
	cs.answered(t, 60*time.Second)
	if !codeIs(cs.err, errs.LeaseLost) {
		t.Fatalf("the stale holder's caller got %s / %s; want LEASE_LOST (its record refused)", errorOf(cs.err), cs.a)
	}
	// Its next mutation.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := stale.write(ctx, "after-pause-0"); !codeIs(err, errs.LeaseLost) {
		t.Fatalf("p1's first mutation after the pause: %s; want LEASE_LOST", errorOf(err))
	}
	if put, sent := f.sink.putOf(tA); !sent || put.Status != 409 {
		t.Fatalf("the stale holder's record (token %d) at the sink: %v (sent: %v); want refused with 409 after %d was accepted (PUTs: %v)", tA, put, sent, tB, f.sink.acPuts())
	}
	// The fleet's result names the new run.
	raw, _ := f.etcd.get(t, fleetPrefix+"check/"+ct.a.Identity+"/result")
	if raw == nil {
		t.Fatalf("no fleet result of %s in etcd; keys: %v", who, f.etcd.keys(t, fleetPrefix))
	}
	rec, err := fleet.UnmarshalActionRecord(raw)
	if err != nil {
		t.Fatalf("the fleet's result of %s: %v (%q)", who, err, raw)
	}
	if rec.RunID != ct.a.Fleet.RunID || rec.Token != tB || rec.Node != taker.name {
		t.Fatalf("the fleet's result names run %s of %s with token %d; want the new run %s of %s with %d", rec.RunID, rec.Node, rec.Token, ct.a.Fleet.RunID, taker.name, tB)
	}
	// It rejoins: mutations work again.
	i := 0
	waitFor(t, 4*fleetTTL+20*time.Second, "p1 to rejoin and accept a mutation", func() bool {
		i++
		return stale.write(ctx, fmt.Sprintf("after-pause-%d", i)) == nil
	}, nil)
	if st := stale.fleetOf(t); st.State != "live" {
		t.Fatalf("p1 accepts mutations but its fleet session is %q", st.State)
	}
	t.Logf("paused %s; p2 retook and answered %s after the pause (token %d > %d); the stale record refused by the sink (409) and etcd (LEASE_LOST); p1 rejoined after %d refused mutations",
		pausedFor.Round(time.Millisecond), retook.Round(time.Millisecond), tB, tA, i)
}

// 4. A partition without root tools: each node reaches the etcd members
// through its own TCP proxies; cutting a node's proxies cuts it off. Cut
// from two members of three (the leader among them) it goes on through
// the third. Cut from all, after its session deadline it refuses claims (run_check answers
// LEASE_LOST or UNAVAILABLE and runs nothing) and writes (LEASE_LOST);
// another node runs the check meanwhile; after healing, the cut node's
// next claim token is above every token issued meanwhile.
func TestFleetPartition(t *testing.T) {
	f := newFleetEnv(t, true)
	proxies := make([][]*tcpProxy, 3)
	ns := f.nodes(t, "q", 3, func(i int, name, listen string) []string {
		var addrs []string
		for _, a := range f.etcd.clientAddrs {
			p := newProxy(t, a)
			proxies[i] = append(proxies[i], p)
			addrs = append(addrs, p.addr())
		}
		return f.cached(nodeFlags(name, listen, addrs))
	})
	cut, other, third := ns[0], ns[1], ns[2]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cut.write(ctx, "before-cut"); err != nil {
		t.Fatalf("q1 before the cut: %s", errorOf(err))
	}

	// Cut from two members of three, the leader among them: q1 goes on
	// through the third (its session live, its writes and claims
	// accepted) for 2×TTL at least.
	lead := f.etcd.leader(t)
	for _, i := range []int{lead, (lead + 1) % 3} {
		proxies[0][i].setCut(true)
	}
	partialAt := time.Now()
	for i := 0; time.Since(partialAt) < 2*fleetTTL || i == 0; i++ {
		if err := cut.write(ctx, fmt.Sprintf("partial-%d", i)); err != nil {
			t.Fatalf("q1's write %s after it was cut from two etcd members: %s", time.Since(partialAt).Round(time.Millisecond), errorOf(err))
		}
		if st := cut.fleetOf(t); st.State != "live" || !st.LostAt.IsZero() {
			t.Fatalf("q1's session %s after it was cut from two etcd members: %+v; want live, never lost", time.Since(partialAt).Round(time.Millisecond), st)
		}
	}
	if p := cut.mustCheck(t, "TestPartial"); p.Fleet.Source != "ran" || p.Fleet.Node != cut.name {
		t.Fatalf("a check on q1 cut from two etcd members: %s; want run there", p)
	}

	for _, p := range proxies[0] {
		p.setCut(true)
	}
	cutAt := time.Now()
	i := 0
	var lastErr error
	waitFor(t, 4*fleetTTL+10*time.Second, "q1 to refuse writes with LEASE_LOST", func() bool {
		i++
		lastErr = cut.write(ctx, fmt.Sprintf("cut-%d", i))
		return codeIs(lastErr, errs.LeaseLost)
	}, func() string { return "last answer: " + errorOf(lastErr) })
	refusedAfter := time.Since(cutAt)
	if refusedAfter > 2*fleetTTL+2*time.Second {
		t.Errorf("q1 refused writes %s after the cut; want within its session deadline (TTL %s) and a margin", refusedAfter.Round(time.Millisecond), fleetTTL)
	}

	const who = "TestPartition"
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	start := time.Now()
	_, err := cut.runCheck(cctx, nil, who)
	ccancel()
	if !codeIs(err, errs.LeaseLost, errs.Unavailable) {
		t.Fatalf("run_check on the cut node: %s; want LEASE_LOST or UNAVAILABLE", errorOf(err))
	}
	refusedIn := time.Since(start)
	if runs := f.runs.of(who); len(runs) != 0 {
		t.Fatalf("the cut node ran %s: %v", who, runs)
	}
	a := other.mustCheck(t, who)
	b := third.mustCheck(t, "TestPartitionB")
	if a.Fleet.Source != "ran" || a.Fleet.Node != other.name || b.Fleet.Source != "ran" {
		t.Fatalf("checks on the other side: %s; %s; want both run there", a, b)
	}
	oneRun(t, f.runs, who)
	_, meanwhile := f.etcd.get(t, fleetPrefix+"members/"+cut.name)
	select {
	case <-cut.d.done:
		t.Fatalf("q1 exited during the partition: %v", cut.d.err)
	default:
	}

	for _, p := range proxies[0] {
		p.setCut(false)
	}
	healed := time.Now()
	j := 0
	waitFor(t, 4*fleetTTL+30*time.Second, "q1 to rejoin and accept a write", func() bool {
		j++
		lastErr = cut.write(ctx, fmt.Sprintf("healed-%d", j))
		return lastErr == nil
	}, func() string { return "last answer: " + errorOf(lastErr) })
	rejoined := time.Since(healed)
	c := cut.mustCheck(t, "TestAfterHeal")
	if c.Fleet.Source != "ran" || c.Fleet.Node != cut.name {
		t.Fatalf("the first check on q1 after healing: %s; want run there", c)
	}
	for _, tok := range []int64{a.Fleet.Token, b.Fleet.Token, meanwhile} {
		if c.Fleet.Token <= tok {
			t.Fatalf("q1's token after healing %d is not above %d (issued during the partition: %d, %d; etcd's revision then %d)",
				c.Fleet.Token, tok, a.Fleet.Token, b.Fleet.Token, meanwhile)
		}
	}
	onePut(t, f.sink, c.Fleet.Token)
	r := cut.mustCheck(t, who)
	if !r.Reused || r.Fleet.RunID != a.Fleet.RunID {
		t.Fatalf("%s on q1 after healing: %s; want reused from %s's run %s", who, r, other.name, a.Fleet.RunID)
	}
	oneRun(t, f.runs, who)
	t.Logf("cut q1: writes refused %s after the cut (TTL %s), run_check refused in %s; healed: a write accepted after %s (%d tries); its token %d > %d (the revision during the partition)",
		refusedAfter.Round(time.Millisecond), fleetTTL, refusedIn.Round(time.Millisecond), rejoined.Round(time.Millisecond), j, c.Fleet.Token, meanwhile)
}

// 5. Evidence by digest, with the evidence in etcd, in the remote cache,
// and in the remote cache with a fleet key: node B answers reused with
// the output of the run on A, its blob fetched by digest from where the
// fleet keeps it; with the remote cache, once the blob is evicted there,
// node C fetches it from A itself (node to node, by digest, with the
// fleet secret, which no log and no status shows). Then the evidence is
// tampered with: the output's blob corrupted where the fleet keeps it, or
// (with a fleet key) the cache's record and blob replaced by a consistent
// forgery. The next node does not serve it: its answer never carries the
// bad bytes, says which check failed, and comes from a new run.
func TestFleetEvidenceByDigest(t *testing.T) {
	for _, mode := range []struct {
		name           string
		remote, sealed bool
	}{{"etcd", false, false}, {"remote cache", true, false}, {"remote cache sealed", true, true}} {
		t.Run(mode.name, func(t *testing.T) {
			f := newFleetEnv(t, true)
			flags, count := f.etcdCached, 3
			corrupt := func(hex string, b []byte) { f.etcd.put(t, fleetPrefix+"cas/"+hex, b) }
			stored := func(hex string) []byte { b, _ := f.etcd.get(t, fleetPrefix+"cas/"+hex); return b }
			if mode.remote {
				flags, corrupt, stored = f.direct, f.sink.corrupt, f.sink.blob
			}
			if mode.remote && !mode.sealed {
				count = 4 // one more: the evicted blob
			}
			if mode.sealed {
				f.key = []byte(hex.EncodeToString([]byte(newSecret(t))))
			}
			ns := f.nodes(t, "d", count, flags)
			const who = "TestDigest"
			a := ns[0].mustCheck(t, who)
			run := oneRun(t, f.runs, who)
			if a.Fleet.Source != "ran" || a.Fleet.Node != ns[0].name || a.Stdout != stdoutOf(who, run.Seq) {
				t.Fatalf("the first run on d1: %s", a)
			}
			sum := sha256.Sum256([]byte(a.Stdout))
			h := hex.EncodeToString(sum[:])
			if got := stored(h); string(got) != a.Stdout {
				t.Fatalf("the stdout blob %s holds %q in the %s; want %q", h, got, mode.name, a.Stdout)
			}
			casGets := f.sink.gets("cas")
			b := ns[1].mustCheck(t, who)
			if !b.Reused || b.Fleet.Source != "reused" || b.Fleet.RunID != a.Fleet.RunID || b.Stdout != a.Stdout || b.ExitCode != a.ExitCode {
				t.Fatalf("d2: %s; want reused with d1's output %q", b, a.Stdout)
			}
			if mode.remote && f.sink.gets("cas") <= casGets {
				t.Fatalf("d2 reused d1's output without fetching its blob from the remote cache")
			}
			next := ns[2]
			if count == 4 {
				// Evicted from the cache: d3 fetches it from d1.
				f.sink.evict(h)
				c := ns[2].mustCheck(t, who)
				if !c.Reused || c.Fleet.RunID != a.Fleet.RunID || c.Stdout != a.Stdout {
					t.Fatalf("d3 with the blob evicted from the cache: %s; want reused with d1's output %q, fetched from d1", c, a.Stdout)
				}
				if !f.sink.missed("cas", h) {
					t.Fatalf("d3 never asked the cache for the evicted blob")
				}
				f.sink.restore(h, []byte(a.Stdout))
				next = ns[3]
			}
			oneRun(t, f.runs, who)
			noFleetSecret(t, f, ns)

			bad := fmt.Sprintf("ran who=%s n=999 (tampered)\n", who)
			want := []string{"sha256:" + h, "digest"}
			if mode.sealed {
				// A consistent forgery: a blob that matches its digest and
				// a record naming it (the seal left as it was).
				ad, err := fleet.ActionDigest(a.Identity)
				if err != nil {
					t.Fatal(err)
				}
				rec, err := fleet.UnmarshalActionRecord(f.sink.record(ad.Hash))
				if err != nil || rec.Seal == "" {
					t.Fatalf("the cache's record of %s: %+v, %v; want a sealed record", who, rec, err)
				}
				rec.Stdout = fleet.DigestOf([]byte(bad))
				forged, err := rec.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				f.sink.restore(rec.Stdout.Hash, []byte(bad))
				f.sink.forge(ad.Hash, forged)
				want = []string{"no valid seal", rec.RunID}
			} else {
				corrupt(h, []byte(bad))
			}
			c, err := next.runCheck(context.Background(), nil, who)
			if err != nil {
				t.Fatalf("%s after the tampering: %s", next.name, errorOf(err))
			}
			if strings.Contains(c.Stdout, "tampered") || !c.Passed || c.Fleet == nil {
				t.Fatalf("%s after the tampering: %s; want a pass without the tampered output", next.name, c)
			}
			said := strings.Join(c.MissReasons, "; ")
			for _, w := range want {
				if c.Reused || !strings.Contains(said, w) {
					t.Fatalf("%s after the tampering: %s; want a new run, its miss_reasons saying %q", next.name, c, w)
				}
			}
			runs := f.runs.of(who)
			if len(runs) != 2 || c.Stdout != stdoutOf(who, runs[1].Seq) || c.Fleet.Source != "ran" || c.Fleet.Node != next.name {
				t.Fatalf("%s ran the check again (%s); runs %v", next.name, c, runs)
			}
			fetched := ""
			if count == 4 {
				fetched = "; d3 fetched it from d1 once the cache had evicted it"
			}
			t.Logf("%s: d2 reused d1's run %s, its blob %.12s fetched by digest%s; %s refused the tampered evidence and ran it again (run %s), saying %q",
				mode.name, a.Fleet.RunID, h, fetched, next.name, c.Fleet.RunID, said)
		})
	}
}

// noFleetSecret fails t if the fleet secret (etcd's <prefix>secret, or
// the fleet key) or a node's bearer token is in any node's log or status.
func noFleetSecret(t *testing.T, f *fleetEnv, ns []*fleetNode) {
	t.Helper()
	secret, _ := f.etcd.get(t, fleetPrefix+"secret")
	secrets := map[string]string{"the fleet secret": string(secret)}
	if f.key != nil {
		// The person's fleet key is the secret then (hex of its bytes).
		secrets = map[string]string{"the fleet key": string(f.key), "the fleet key in hex": hex.EncodeToString(f.key)}
	} else if len(secret) < 32 {
		t.Fatalf("the fleet secret in etcd is %d bytes; want 32 random bytes in hex", len(secret))
	}
	for _, n := range ns {
		tok, err := daemon.ReadToken(daemon.PathsOf(n.dataDir))
		if err != nil {
			t.Fatal(err)
		}
		secrets[n.name+"'s bearer token"] = tok
	}
	for _, n := range ns {
		st, err := json.Marshal(n.status(t))
		if err != nil {
			t.Fatal(err)
		}
		for what, v := range secrets {
			if strings.Contains(n.d.stderr.String(), v) {
				t.Errorf("%s is in %s's log", what, n.name)
			}
			if strings.Contains(string(st), v) {
				t.Errorf("%s is in %s's status", what, n.name)
			}
		}
	}
}

// 6. --embed-etcd: three harnessd processes, each running a member of the
// fleet's etcd (--cluster-peers), form a fleet and single-flight a check
// six agents ask for.
func TestFleetEmbeddedEtcd(t *testing.T) {
	f := newFleetEnv(t, false)
	type urls struct{ client, peer string }
	us := make([]urls, 3)
	var peers []string
	for i := range us {
		us[i] = urls{"http://" + freeAddr(t), "http://" + freeAddr(t)}
		peers = append(peers, fmt.Sprintf("m%d=%s", i+1, us[i].peer))
	}
	start := time.Now()
	ns := f.nodes(t, "m", 3, func(i int, name, listen string) []string {
		return []string{"--listen", listen, "--node-name", name, "--cluster-ttl", fleetTTL.String(), "--embed-etcd",
			"--etcd-client-url", us[i].client, "--etcd-peer-url", us[i].peer, "--cluster-peers", strings.Join(peers, ",")}
	})
	up := time.Since(start)
	waitFor(t, 20*time.Second, "every node to see 3 live members", func() bool {
		for _, n := range ns {
			live := 0
			for _, m := range n.fleetOf(t).Members {
				if m.Live {
					live++
				}
			}
			if live != 3 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("m1 sees %+v", ns[0].fleetOf(t).Members) })

	const who, agents = "TestEmbedded", 6
	f.runs.holdRuns(who)
	var k asker
	for i := range agents {
		k.ask(ns[i%3], nil, who)
	}
	waitFor(t, 30*time.Second, "the one run to start and all 6 calls to reach the check actors", func() bool {
		return len(f.runs.held(who)) > 0 && totalCalls(t, ns) >= agents
	}, nil)
	if held := f.runs.held(who); len(held) != 1 {
		t.Fatalf("%d runs of %s in flight: %v; want 1", len(held), who, held)
	}
	f.runs.release(t, f.runs.held(who)[0].Seq)
	calls := k.wait(t, 60*time.Second)
	run := oneRun(t, f.runs, who)
	for _, c := range calls {
		if c.err != nil || !c.a.Passed || c.a.Fleet == nil || c.a.Fleet.RunID != calls[0].a.Fleet.RunID || c.a.Stdout != stdoutOf(who, run.Seq) {
			t.Fatalf("%s on %s: %s / %s; want a pass naming the one run", who, c.node, errorOf(c.err), c.a)
		}
	}
	// The fleet's keys are in the embedded cluster itself.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{us[0].client}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, fleetPrefix+"members/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil || len(r.Kvs) != 3 {
		t.Fatalf("members in the embedded etcd: %v (%v); want 3", r, err)
	}
	t.Logf("3 nodes with embedded etcd members up in %s; 6 agents, 1 run (%s, token %d)", up.Round(time.Millisecond), calls[0].a.Fleet.RunID, calls[0].a.Fleet.Token)
}

// 7. Report only: the same 12-check workload (each check asked on each of
// three nodes, one node after another) on a fleet of 3 and on 3
// independent daemons: runs executed (12 against 36) and the latency a
// fleet call adds over a local one.
func TestFleetVsIndependent(t *testing.T) {
	f := newFleetEnv(t, true)
	fl := f.nodes(t, "v", 3, f.direct)
	solo := f.nodes(t, "s", 3, func(_ int, _, listen string) []string { return []string{"--listen", listen} })
	const checks = 12
	// Each check is asked on the three nodes of each group in turn, the
	// two groups interleaved call by call, so both see the same load.
	var fleetFirst, soloFirst, added, fleetLater, soloLater []time.Duration
	call := func(n *fleetNode, who string) time.Duration {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		a, err := n.runCheck(ctx, nil, who)
		took := time.Since(start)
		if err != nil || !a.Passed {
			t.Fatalf("%s on %s: %s / %s", who, n.name, errorOf(err), a)
		}
		return took
	}
	for i := range checks {
		for j := range 3 {
			fd := call(fl[(i+j)%3], fmt.Sprintf("TestCmpFleet%02d", i))
			sd := call(solo[(i+j)%3], fmt.Sprintf("TestCmpSolo%02d", i))
			if j == 0 {
				fleetFirst, soloFirst, added = append(fleetFirst, fd), append(soloFirst, sd), append(added, fd-sd)
			} else {
				fleetLater, soloLater = append(fleetLater, fd), append(soloLater, sd)
			}
		}
	}
	count := func(prefix string) int {
		n := 0
		for _, r := range f.runs.of("") {
			if strings.HasPrefix(r.Who, prefix) {
				n++
			}
		}
		return n
	}
	fleetRuns, soloRuns := count("TestCmpFleet"), count("TestCmpSolo")
	if fleetRuns != checks || soloRuns != 3*checks {
		t.Fatalf("runs: fleet %d, independent %d; want %d and %d", fleetRuns, soloRuns, checks, 3*checks)
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	t.Logf("12 checks, each asked on 3 nodes: runs executed: fleet of 3: %d, 3 independent daemons: %d", fleetRuns, soloRuns)
	t.Logf("first call (it runs the check): median fleet %s, independent %s; median added latency of the fleet call (claim, publish) over the local one: %s",
		ms(durMedian(fleetFirst)), ms(durMedian(soloFirst)), ms(durMedian(added)))
	t.Logf("later calls on the other nodes: median fleet %s (the fleet's evidence, fetched by digest), independent %s (the check runs again)",
		ms(durMedian(fleetLater)), ms(durMedian(soloLater)))
	t.Logf("remote cache GETs served: %d action records, %d blobs", f.sink.gets("ac"), f.sink.gets("cas"))
}

// 8. etcd's failures: with one member of three gone (the leader: a new
// one is elected) the fleet goes on (sessions live, one run fleet-wide,
// writes accepted); with two gone (no quorum) every node refuses claims
// (nothing runs) and writes (LEASE_LOST) once its session's deadline
// passed, while reads go on; with the members back, the nodes rejoin and
// a new claim's token is above every token issued before.
func TestFleetEtcdQuorum(t *testing.T) {
	f := newFleetEnv(t, true)
	ns := f.nodes(t, "e", 3, f.direct)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	first := f.etcd.leader(t)
	f.etcd.stop(first)
	stopped := time.Now()
	const who = "TestMinority"
	f.runs.holdRuns(who)
	var k asker
	for _, n := range ns {
		k.ask(n, nil, who)
	}
	waitFor(t, 30*time.Second, "the one run to start and the 3 calls to reach the check actors", func() bool {
		return len(f.runs.held(who)) > 0 && totalCalls(t, ns) >= 3
	}, func() string { return fmt.Sprintf("runs %v", f.runs.of("")) })
	f.runs.release(t, f.runs.held(who)[0].Seq)
	calls := k.wait(t, 60*time.Second)
	run := oneRun(t, f.runs, who)
	for _, c := range calls {
		if c.err != nil || !c.a.Passed || c.a.Fleet == nil || c.a.Fleet.RunID != calls[0].a.Fleet.RunID || c.a.Stdout != stdoutOf(who, run.Seq) {
			t.Fatalf("%s on %s with etcd's leader gone: %s / %s; want a pass naming the one run", who, c.node, errorOf(c.err), c.a)
		}
	}
	// For 2×TTL at least, every node's session stays live and its writes
	// are accepted.
	for i := 0; time.Since(stopped) < 2*fleetTTL || i == 0; i++ {
		for _, n := range ns {
			if err := n.write(ctx, fmt.Sprintf("minority-%s-%d", n.name, i)); err != nil {
				t.Fatalf("%s's write %s after one etcd member of three went: %s", n.name, time.Since(stopped).Round(time.Millisecond), errorOf(err))
			}
			if st := n.fleetOf(t); st.State != "live" || !st.LostAt.IsZero() {
				t.Fatalf("%s's session %s after one etcd member of three went: %+v; want live, never lost", n.name, time.Since(stopped).Round(time.Millisecond), st)
			}
		}
	}
	minority := time.Since(stopped)
	_, before := f.etcd.get(t, fleetPrefix+"members/"+ns[0].name)

	second := (first + 1) % 3
	f.etcd.stop(second)
	lostQuorum := time.Now()
	var lastErr error
	for i, n := range ns {
		j := 0
		waitFor(t, 4*fleetTTL+10*time.Second, n.name+" to refuse writes with LEASE_LOST", func() bool {
			j++
			lastErr = n.write(ctx, fmt.Sprintf("quorum-%d-%d", i, j))
			return codeIs(lastErr, errs.LeaseLost)
		}, func() string { return "last answer: " + errorOf(lastErr) })
	}
	refusedAfter := time.Since(lostQuorum)
	const who2 = "TestNoQuorum"
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	_, err := ns[1].runCheck(cctx, nil, who2)
	ccancel()
	if !codeIs(err, errs.LeaseLost, errs.Unavailable) {
		t.Fatalf("run_check without an etcd quorum: %s; want LEASE_LOST or UNAVAILABLE", errorOf(err))
	}
	if runs := f.runs.of(who2); len(runs) != 0 {
		t.Fatalf("a check ran without an etcd quorum: %v", runs)
	}
	// Reads go on.
	raw, err := ns[0].api.Call(ctx, "read_file", map[string]any{"repo_id": ns[0].repoID, "path": "README.md"})
	if err != nil || !strings.Contains(string(raw), "the fleet's fixture") {
		t.Fatalf("read_file without an etcd quorum: %.200s, %s; want the file", raw, errorOf(err))
	}
	if _, err := ns[2].api.Call(ctx, "git_status", map[string]any{"repo_id": ns[2].repoID}); err != nil {
		t.Fatalf("git_status without an etcd quorum: %s", errorOf(err))
	}

	f.etcd.restart(t, first)
	f.etcd.restart(t, second)
	healed := time.Now()
	for i, n := range ns {
		j := 0
		waitFor(t, 4*fleetTTL+30*time.Second, n.name+" to rejoin and accept a write", func() bool {
			j++
			lastErr = n.write(ctx, fmt.Sprintf("back-%d-%d", i, j))
			return lastErr == nil
		}, func() string { return "last answer: " + errorOf(lastErr) })
	}
	rejoined := time.Since(healed)
	a := ns[1].mustCheck(t, who2)
	if a.Fleet.Source != "ran" || a.Fleet.Token <= before || a.Fleet.Token <= calls[0].a.Fleet.Token {
		t.Fatalf("%s with the quorum back: %s; want a run with a token above %d (the revision before the quorum went)", who2, a, before)
	}
	oneRun(t, f.runs, who2)
	t.Logf("leader gone: one run for 3 callers, writes and sessions live (%s); quorum gone: writes refused on every node %s after (TTL %s), run_check refused, reads answered; members back: every node writes again after %s, token %d > %d",
		minority.Round(time.Millisecond), refusedAfter.Round(time.Millisecond), fleetTTL, rejoined.Round(time.Millisecond), a.Fleet.Token, before)
}

// 9. kill -9 of the node running a claimed check: its claim goes with its
// session, a waiter on another node retakes it within the TTL (and a
// margin) with a larger token and runs the check; one record accepted.
// Restarted on its data dir, the killed node rejoins and answers the
// check from the new run's evidence.
func TestFleetOwnerKilled(t *testing.T) {
	f := newFleetEnv(t, true)
	ns := f.nodes(t, "k", 3, f.direct)
	owner, waiter := ns[0], ns[1]
	const who = "TestKilled"
	f.runs.holdRuns(who)
	var k asker
	k.ask(owner, nil, who)
	waitFor(t, 20*time.Second, "k1's run to start", func() bool { return len(f.runs.held(who)) == 1 }, nil)
	claims := f.etcd.claims(t)
	if len(claims) != 1 || claims[0].Node != owner.name {
		t.Fatalf("claims while k1 runs %s: %+v; want one, k1's", who, claims)
	}
	tA := claims[0].Token
	ct := k.ask(waiter, nil, who)
	if err := owner.d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-owner.d.done
	waitFor(t, 4*fleetTTL+20*time.Second, "k2 to retake the claim and start its run", func() bool {
		return len(f.runs.held(who)) == 1 && len(f.runs.of(who)) == 2
	}, func() string { return fmt.Sprintf("runs %v", f.runs.of(who)) })
	retook := time.Since(killed)
	if retook > fleetTTL+2*time.Second {
		t.Errorf("k2 retook the claim %s after k1 was killed; want within the TTL (%s) and a margin", retook.Round(time.Millisecond), fleetTTL)
	}
	second := f.runs.held(who)[0]
	f.runs.release(t, second.Seq)
	ct.answered(t, 30*time.Second)
	if ct.err != nil || !ct.a.Passed || ct.a.Fleet == nil || ct.a.Fleet.Node != waiter.name || ct.a.Fleet.Source != "ran" ||
		ct.a.Fleet.Token <= tA || ct.a.Stdout != stdoutOf(who, second.Seq) {
		t.Fatalf("k2 after k1 was killed: %s / %s; want its own run with a token above %d", errorOf(ct.err), ct.a, tA)
	}
	onePut(t, f.sink, ct.a.Fleet.Token)

	// k1 restarted on its data dir rejoins and reuses the new run.
	f.launch(t, owner)
	f.ready(t, owner)
	a := owner.mustCheck(t, who)
	if !a.Reused || a.Fleet.RunID != ct.a.Fleet.RunID {
		t.Fatalf("k1 after its restart: %s; want reused from k2's run %s", a, ct.a.Fleet.RunID)
	}
	if runs := f.runs.of(who); len(runs) != 2 {
		t.Fatalf("runs of %s: %v; want k1's (killed) and k2's", who, runs)
	}
	t.Logf("k1 killed while running %s (token %d); k2 retook the claim %s later (token %d); k1 restarted and reused k2's run",
		who, tA, retook.Round(time.Millisecond), ct.a.Fleet.Token)
}
