package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// moduleRoot returns the directory of the module's go.mod, above the
// test's working directory.
func moduleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Skip("no go.mod above the working directory")
		}
		dir = up
	}
}

// BenchmarkContextAssemble is a warm context_assemble on this repository
// itself: every candidate file parsed and cached, so a call stats them,
// reads nothing, and budgets (target: 5 ms).
func BenchmarkContextAssemble(b *testing.B) {
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, LoopThreshold: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close(context.Background()) })
	ctx := context.Background()
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: moduleRoot(b)})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, args string }{
		{"plain", `{"repo_id":"` + r.ID + `"}`},
		{"command", `{"repo_id":"` + r.ID + `","command":"run_command","args":{"argv":["go","test","./..."]}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw := json.RawMessage(c.args)
			if _, err := h.CallOp(ctx, "context_assemble", raw); err != nil { // cold: fills the cache
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := h.CallOp(ctx, "context_assemble", raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
