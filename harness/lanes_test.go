package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
)

func TestReadLanesOverlap(t *testing.T) {
	h, _, id := fixture(t)
	sleep := step("run_command", map[string]any{"argv": []string{"sleep", "0.3"}})
	r, err := h.ReadLanes(context.Background(), harness.ReadLanesArgs{RepoID: id, Lanes: []harness.BatchStep{sleep, sleep, sleep, sleep}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || !r.Concurrent || r.MaxOverlap < 2 {
		t.Fatalf("ok %v concurrent %v max_overlap %d, want overlap", r.OK, r.Concurrent, r.MaxOverlap)
	}
	if r.Latency.TotalMs >= 0.75*r.StepsMs {
		t.Fatalf("total %.1f ms, sum of steps %.1f ms: want total < 0.75 x sum", r.Latency.TotalMs, r.StepsMs)
	}
	lanes := map[string]bool{}
	for i, l := range r.Lanes {
		if l.Index != i || l.StartedAt == nil || l.FinishedAt == nil || l.DurationMs < 250 {
			t.Fatalf("lane %d = %+v", i, l)
		}
		lanes[l.Lane] = true
	}
	if len(lanes) != 4 {
		t.Fatalf("ran on %d lanes, want 4", len(lanes))
	}

	// max_concurrency 1: one lane, no overlap.
	one, err := h.ReadLanes(context.Background(), harness.ReadLanesArgs{RepoID: id, MaxConcurrency: 1, Lanes: []harness.BatchStep{
		step("git_status", nil), step("read_file", map[string]any{"path": "README.md"}), step("search", map[string]any{"query": "hello"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if one.Concurrent || !one.OK {
		t.Fatalf("max_concurrency 1: concurrent %v ok %v", one.Concurrent, one.OK)
	}
}

func TestReadLanesRefusals(t *testing.T) {
	h, root, id := fixture(t)
	read := step("read_file", map[string]any{"path": "README.md"})
	tests := []struct {
		name  string
		lanes []harness.BatchStep
		conc  int
		want  errs.Code
	}{
		{"mutating kind", []harness.BatchStep{read, step("apply_patch", patchArgs("README.md", "a", "b"))}, 0, errs.InvalidArgument},
		{"writing command", []harness.BatchStep{read, step("run_command", map[string]any{"argv": []string{"touch", "x.txt"}})}, 0, errs.RouteDurableRequired},
		{"destructive command", []harness.BatchStep{read, step("run_command", map[string]any{"argv": []string{"rm", "-rf", "/"}})}, 0, errs.RouteRejected},
		{"empty", nil, 0, errs.InvalidArgument},
		{"concurrency", []harness.BatchStep{read}, 5, errs.InvalidArgument},
		{"secret", []harness.BatchStep{read, step("read_file", map[string]any{"path": ".env"})}, 0, errs.SecretPathDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.ReadLanes(context.Background(), harness.ReadLanesArgs{RepoID: id, Lanes: tt.lanes, MaxConcurrency: tt.conc})
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("code = %s (%v), want %s", got, err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(root, "x.txt")); err == nil {
				t.Fatal("x.txt exists: a step ran")
			}
		})
	}
}

func TestReadLanesFailFast(t *testing.T) {
	h, _, id := fixture(t)
	r, err := h.ReadLanes(context.Background(), harness.ReadLanesArgs{RepoID: id, MaxConcurrency: 1, FailFast: true, Lanes: []harness.BatchStep{
		step("read_file", map[string]any{"path": "missing.txt"}),
		step("run_command", map[string]any{"argv": []string{"sleep", "2"}}),
		step("git_status", nil),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || r.Lanes[0].Status != "failed" {
		t.Fatalf("lane 0 = %+v, want failed", r.Lanes[0])
	}
	for _, l := range r.Lanes[1:] {
		if l.Status == "ok" && l.Kind == "run_command" {
			t.Fatalf("lane %d ran to the end despite fail_fast: %+v", l.Index, l)
		}
	}
	if r.Latency.TotalMs > 1500 {
		t.Fatalf("took %.0f ms: fail_fast did not cancel the sleep", r.Latency.TotalMs)
	}
}
