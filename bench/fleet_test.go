package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/testutil"
)

// BenchmarkFleetChecks is the fleet's bench (docs/fleet.md): the same
// check workload on a fleet of 3 nodes and on 3 independent daemons, in
// process. Each op asks every node for one new check (its own clone of
// the same content) at once. It reports the check processes run per op
// (runs/op: 1 in a fleet, 3 independent) and the median latency of one
// call (median-ms).
func BenchmarkFleetChecks(b *testing.B) {
	bin := b.TempDir()
	script := "#!/bin/sh\ncase \"$1\" in\nversion) echo \"go version go1.26.0-fake linux/amd64\"; exit 0 ;;\n" +
		"test) sleep 0.05; echo ok; exit 0 ;;\nesac\nexit 2\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	b.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	files := map[string]string{"go.mod": "module example.com/demo\n\ngo 1.22\n", "pkg/a.go": "package pkg\n"}

	ctx := context.Background()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cluster, err := fleet.StartCluster(sctx, 3, fleet.EmbedConfig{Dir: b.TempDir(), UnsafeNoFsync: true})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, e := range cluster {
			e.Close()
		}
	})
	for _, mode := range []string{"fleet", "independent"} {
		b.Run(mode, func(b *testing.B) {
			nodes := make([]*harness.Harness, 3)
			ids := make([]string, 3)
			for i := range nodes {
				cfg := harness.Config{DataDir: b.TempDir(), StoreReserve: -1}
				if mode == "fleet" {
					cfg.Fleet = harness.FleetConfig{Endpoints: []string{cluster[i].ClientURL()}, Node: fmt.Sprintf("n%d", i+1)}
				}
				h, err := harness.Open(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = h.Close(context.Background()) })
				r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: testutil.Repo(b, files)})
				if err != nil {
					b.Fatal(err)
				}
				nodes[i], ids[i] = h, r.ID
			}
			var (
				mu        sync.Mutex
				latencies []time.Duration
				ran       = map[string]bool{}
			)
			b.ResetTimer()
			for op := 0; b.Loop(); op++ {
				argv := []string{"go", "test", "./pkg", "-run", fmt.Sprintf("Test%s%d", mode, op)}
				var wg sync.WaitGroup
				for i, h := range nodes {
					wg.Go(func() {
						start := time.Now()
						r, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: ids[i], Argv: argv})
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						defer mu.Unlock()
						latencies = append(latencies, time.Since(start))
						run := fmt.Sprintf("%d/%s/%d", op, r.OriginalRun.RepoID, r.OriginalRun.Pid)
						if r.Fleet != nil {
							run = r.Fleet.RunID
						}
						ran[run] = true
					})
				}
				wg.Wait()
			}
			b.StopTimer()
			slices.Sort(latencies)
			if len(latencies) > 0 {
				b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "median-ms")
			}
			b.ReportMetric(float64(len(ran))/float64(b.N), "runs/op")
		})
	}
}
