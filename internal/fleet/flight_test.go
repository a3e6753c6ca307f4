package fleet

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
