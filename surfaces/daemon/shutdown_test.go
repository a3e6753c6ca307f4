package daemon_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/harnessd/harnessd/persistence"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// SIGTERM on a frozen data dir: every store write is held a minute, so
// the run actors sit in their writes inside Receive, the drain of the
// actor tree (10 s per child) and the store's close (15 s) would run far
// past --shutdown-wait. The whole shutdown still ends within the wait
// plus ShutdownMargin: Serve returns ErrShutdownAbandoned (the daemon
// exits non-zero) and logs what it abandoned. Once the disk thaws, the
// abandoned work ends.
func TestShutdownEndsWithinItsDeadlineOnAFrozenDisk(t *testing.T) {
	faults := &persistence.Faults{}
	t.Cleanup(func() { faults.DelayWrites(0) })
	core, logs := observer.New(zap.InfoLevel)
	const wait = time.Second
	abandoned := make(chan (<-chan struct{}), 1)
	ready := make(chan daemon.Paths, 1)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	cfg := daemon.Config{DataDir: dataDir(t), ShutdownWait: wait, StoreFaults: faults,
		Ready:     func(p daemon.Paths) { ready <- p },
		Abandoned: func(finished <-chan struct{}) { abandoned <- finished }}
	go func() { done <- daemon.Serve(ctx, cfg, zap.New(core)) }()
	var p daemon.Paths
	select {
	case p = <-ready:
	case err := <-done:
		t.Fatalf("Serve returned before Ready: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve was not ready within 20s")
	}
	c := unixClient(t, p.Socket)

	// The disk freezes with writes in flight.
	faults.DelayWrites(time.Minute)
	calls := make(chan error, 4)
	for range cap(calls) {
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err := c.Call(cctx, "run_start", map[string]any{"goal": "frozen"})
			calls <- err
		}()
	}
	select {
	case err := <-calls:
		t.Fatalf("run_start answered (%v) on a frozen disk: the test needs it held", err)
	case <-time.After(500 * time.Millisecond):
	}

	begin := time.Now()
	stop() // SIGTERM
	var err error
	select {
	case err = <-done:
	case <-time.After(wait + daemon.ShutdownMargin + 10*time.Second):
		t.Fatal("Serve did not return long past its deadline")
	}
	took := time.Since(begin)
	if limit := wait + daemon.ShutdownMargin + time.Second; took > limit {
		t.Errorf("shutdown took %s, want at most %s", took, limit)
	}
	if !errors.Is(err, daemon.ErrShutdownAbandoned) {
		t.Errorf("Serve = %v, want ErrShutdownAbandoned", err)
	}
	entries := logs.FilterMessageSnippet("work abandoned").All()
	if len(entries) != 1 {
		t.Fatalf("abandon logged %d times, want once: %v", len(entries), logs.All())
	}
	fields := entries[0].ContextMap()
	steps, _ := fields["abandoned"].([]any)
	if !strings.Contains(strings.Join(strs(steps), "|"), "harness close") {
		t.Errorf("abandoned steps %v, want the harness close among them", fields["abandoned"])
	}
	if n, _ := fields["goroutines_in_store_calls"].(int64); n == 0 {
		t.Errorf("goroutines in store calls = %v, want the held writes counted", fields["goroutines_in_store_calls"])
	}

	// The disk thaws: the abandoned work ends (in the daemon, the process
	// has exited by then).
	var finished <-chan struct{}
	select {
	case finished = <-abandoned:
	default:
		t.Fatal("Abandoned was not called")
	}
	faults.DelayWrites(0)
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatal("the abandoned shutdown did not end after the disk thawed")
	}
	for range cap(calls) {
		<-calls
	}
}

func strs(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i], _ = x.(string)
	}
	return out
}
