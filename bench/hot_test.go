// Benchmarks of the hot functions on harnessd's Fast Path. They live in
// package main_test because bench/ holds the suite's command (package main).
package main_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/bench/suite"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/readfile"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of confined checks and jobs
	code := m.Run()
	if code == 0 {
		// etcd's peer connections (the fleet bench's cluster) end only at
		// their 5 s read deadline after the members close: wait them out
		// (up to 15 s), ignoring nothing.
		deadline := time.Now().Add(15 * time.Second)
		for err := goleak.Find(); err != nil; err = goleak.Find() {
			if time.Now().After(deadline) {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
				break
			}
		}
	}
	os.Exit(code)
}

// fixture returns the suite's fixture repository, removed after b.
func fixture(b *testing.B) *suite.Fixture {
	b.Helper()
	fx, err := suite.NewFixture(context.Background(), b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return fx
}

func root(b *testing.B, fx *suite.Fixture) *pathsafe.Root {
	b.Helper()
	deny, err := pathsafe.NewDenylist(pathsafe.DefaultSecretPatterns())
	if err != nil {
		b.Fatal(err)
	}
	r, err := pathsafe.NewRoot(fx.Root, deny)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkPathResolveRead(b *testing.B) {
	r := root(b, fixture(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.ResolveRead(suite.AppPath); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClassifyArgv(b *testing.B) {
	for _, argv := range [][]string{
		{"git", "status", "--short"},
		{"go", "test", "-run", "TestX", "./..."},
		{"sh", "-c", "grep -rn TODO src | head -20"},
	} {
		b.Run(strings.Join(argv, "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				classify.Argv(argv)
			}
		})
	}
}

// cleanText is 4 KiB of code and log lines with no secret in them.
func cleanText(b *testing.B) string {
	b.Helper()
	lines := []string{
		"func (ix *Index) ResolveWidgetIndex(name string) (int, error) {",
		"\tkey := strings.ToLower(name) // the key of the widget",
		"2026-01-02T03:04:05Z INFO request served path=/v1/read_file status=200 took=0.42ms",
		"    at com.example.widgets.Index.lookup(Index.java:42)",
		"diff --git a/src/app.go b/src/app.go",
		"+const greeting = \"hello, patch\"",
	}
	var sb strings.Builder
	for i := 0; sb.Len() < 4096; i++ {
		sb.WriteString(lines[i%len(lines)])
		sb.WriteByte('\n')
	}
	s := sb.String()[:4096]
	if _, n := redact.Default().String(s); n != 0 {
		b.Fatalf("clean text: %d redactions, want 0", n)
	}
	return s
}

func BenchmarkRedactClean4KiB(b *testing.B) {
	in := cleanText(b)
	r := redact.Default()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, n := r.String(in); n != 0 {
			b.Fatalf("%d redactions, want 0", n)
		}
	}
}

func BenchmarkRouteDecide(b *testing.B) {
	for _, req := range []route.Request{
		{Tool: "read_file", Kind: route.Readonly},
		{Tool: "run_command", Kind: route.Command, Argv: []string{"git", "status", "--short"}},
	} {
		b.Run(req.Tool, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				route.Decide(req)
			}
		})
	}
}

func BenchmarkLedgerBeginComplete(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	hash, err := ledger.InputHash("apply_patch", map[string]any{"path": suite.AppPath, "old_text": suite.PatchTextA, "new_text": suite.PatchTextB})
	if err != nil {
		b.Fatal(err)
	}
	paths := []string{suite.AppPath}
	result := struct {
		Changed []string `json:"changed"`
	}{Changed: paths}
	b.ReportAllocs()
	for b.Loop() {
		e, d, err := ledger.Begin(nil, "bench-request-1", "apply_patch", hash, paths, now)
		if err != nil || d != ledger.Proceed {
			b.Fatalf("begin = %v, %v; want proceed", d, err)
		}
		if _, err := ledger.Complete(e, result, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLeasePrepareCommitRelease(b *testing.B) {
	t := lease.NewTable(nil)
	req := lease.Request{Owner: "agent-1", Operation: "apply_patch", Keys: []lease.Key{lease.PathKey("chk_1", suite.AppPath)}}
	now := time.Unix(1_800_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		l, err := t.Prepare(req, now)
		if err != nil {
			b.Fatal(err)
		}
		t.Commit(l)
		if _, ok := t.Release(l.ID); !ok {
			b.Fatal("release: lease not found")
		}
	}
}

func BenchmarkReadfileSmall(b *testing.B) {
	r := root(b, fixture(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readfile.Read(r, readfile.Request{Path: suite.ReadmePath}, readfile.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHarnessReadFileWarm is read_file through the embedding API on a
// registered repository with its path checker cached (target < 50 µs).
func BenchmarkHarnessReadFileWarm(b *testing.B) {
	ctx := context.Background()
	fx := fixture(b)
	h, err := harness.Open(ctx, harness.Config{InMemory: true, AllowRoots: []string{os.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			b.Errorf("close: %v", err)
		}
	})
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: fx.Root})
	if err != nil {
		b.Fatal(err)
	}
	args := harness.ReadFileArgs{RepoID: reg.ID, Path: suite.ReadmePath}
	if _, err := h.ReadFile(ctx, args); err != nil { // warm: the path checker is cached
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.ReadFile(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
