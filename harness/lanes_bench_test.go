package harness_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// BenchmarkReadLanes is one read_lanes call of four warm read_file steps,
// one per lane: the gate once for the call and its steps, then each step
// handed to its lane and run there. Beside the usual figures it reports
// ns/step (the call's wall time over its four steps), cpu-ns/op (the
// process's CPU time per call, all goroutines: steadier than wall time on
// a shared machine) and the messages sent to actors from outside them per
// step (Config.ActorObserver): requests (a reply awaited) and tells.
func BenchmarkReadLanes(b *testing.B) {
	var asks, tells atomic.Int64
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true, LoopThreshold: -1,
		ActorObserver: func(_ string, _ any, request bool) {
			if request {
				asks.Add(1)
			} else {
				tells.Add(1)
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close(ctx) })
	root := testutil.Repo(b, map[string]string{"README.md": "# bench\nhello world\n"})
	repo, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		b.Fatal(err)
	}
	read := harness.BatchStep{Kind: "read_file", Args: map[string]any{"path": "README.md"}}
	args := harness.ReadLanesArgs{RepoID: repo.ID, Lanes: []harness.BatchStep{read, read, read, read}}
	if r, err := h.ReadLanes(ctx, args); err != nil || !r.OK {
		b.Fatalf("read_lanes: %v (%+v)", err, r)
	}
	asks.Store(0)
	tells.Store(0)
	cpu0 := cpuTime(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := h.ReadLanes(ctx, args)
		if err != nil || !r.OK {
			b.Fatalf("read_lanes: %v (%+v)", err, r)
		}
	}
	b.StopTimer()
	steps := float64(b.N * len(args.Lanes))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/steps, "ns/step")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(asks.Load())/steps, "asks/step")
	b.ReportMetric(float64(tells.Load())/steps, "tells/step")
}

// cpuTime is the CPU time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(fmt.Errorf("getrusage: %w", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
