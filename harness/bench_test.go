package harness_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
)

func benchHarness(b *testing.B, inMemory bool, sandbox ...string) (*harness.Harness, string) {
	b.Helper()
	cfg := harness.Config{InMemory: inMemory, LoopThreshold: -1} // benchmarks repeat their input
	if len(sandbox) > 0 {
		cfg.Sandbox = sandbox[0]
	}
	if !inMemory {
		cfg.DataDir = b.TempDir()
	}
	h, err := harness.Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close(context.Background()) })
	root := testutil.Repo(b, map[string]string{"README.md": "# bench\nhello world\n", "src/app.go": "package app\n\nvar v = \"a\"\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		b.Fatal(err)
	}
	return h, r.ID
}

// BenchmarkApplyPatchSmall is an uncontended one-replace apply_patch:
// ledger begin + lease + fenced write with fsync + ledger complete + receipt.
func BenchmarkApplyPatchSmall(b *testing.B) {
	for _, disk := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory-store", true: "disk-store"}[disk], func(b *testing.B) {
			h, id := benchHarness(b, !disk)
			ctx := context.Background()
			texts := [2]string{`"a"`, `"b"`}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: id, RequestID: fmt.Sprintf("bench-%d", i),
					Operations: []patch.Op{{Op: "replace", Path: "src/app.go", OldText: texts[i%2], NewText: texts[(i+1)%2]}}})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadFileWarm is a warm in-process read_file of a small file.
func BenchmarkReadFileWarm(b *testing.B) {
	h, id := benchHarness(b, true)
	ctx := context.Background()
	args := harness.ReadFileArgs{RepoID: id, Path: "README.md"}
	if _, err := h.ReadFile(ctx, args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.ReadFile(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunCommandConfined is a Fast Path run_command (`git status
// --short`) confined by the read profile, against the same command run
// bare: their difference is run_command's overhead.
func BenchmarkRunCommandConfined(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		root := testutil.Repo(b, map[string]string{"README.md": "# bench\n"})
		for i := 0; i < b.N; i++ {
			cmd := exec.Command("git", "status", "--short")
			cmd.Dir = root
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []string{"off", "auto"} {
		b.Run("sandbox="+mode, func(b *testing.B) {
			h, id := benchHarness(b, true, mode)
			ctx := context.Background()
			args := harness.RunCommandArgs{RepoID: id, Argv: []string{"git", "status", "--short"}}
			if _, err := h.RunCommand(ctx, args); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := h.RunCommand(ctx, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadFileRun is BenchmarkReadFileWarm outside any run, in an
// MCP session's implicit run, and in an explicit run: the difference is
// the cost of a span (resolve the run, send the span to its actor).
func BenchmarkReadFileRun(b *testing.B) {
	h, id := benchHarness(b, true)
	args := harness.ReadFileArgs{RepoID: id, Path: "README.md"}
	sess := harness.WithCaller(context.Background(), harness.Caller{Session: "bench", Client: harness.Client{Name: "bench"}})
	r, err := h.RunStart(context.Background(), harness.RunStartArgs{Goal: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"no-run", context.Background()}, {"implicit-run", sess}, {"explicit-run", harness.WithRun(context.Background(), r.RunID)}} {
		b.Run(c.name, func(b *testing.B) {
			if _, err := h.ReadFile(c.ctx, args); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := h.ReadFile(c.ctx, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunStart is run_start of an explicit run: a new actor and one
// fsynced snapshot, on the memory and the disk store.
func BenchmarkRunStart(b *testing.B) {
	for _, disk := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory-store", true: "disk-store"}[disk], func(b *testing.B) {
			h, _ := benchHarness(b, !disk)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGitStatusLive is a warm git_status answered by the live index
// (a sync cookie, nothing changed), against BenchmarkGitStatusExec, the
// same call with the live index off.
func BenchmarkGitStatusLive(b *testing.B) {
	h, id := benchHarness(b, true)
	ctx := context.Background()
	args := harness.GitStatusArgs{RepoID: id}
	if _, err := h.GitStatus(ctx, args); err != nil {
		b.Fatal(err)
	}
	if err := h.WarmLiveIndex(ctx, id); err != nil {
		b.Fatal(err)
	}
	if r, err := h.GitStatus(ctx, args); err != nil || r.Source != "index" {
		b.Fatalf("second status: %+v %v", r, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.GitStatus(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
