package harness_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
)

// gateLog records the gate's decisions.
type gateLog struct {
	mu    sync.Mutex // protects tools
	tools []string
}

func (g *gateLog) observe(d govern.Decision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tools = append(g.tools, d.Tool)
}

func (g *gateLog) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.tools
	g.tools = nil
	return out
}

// Every operation crosses the gate exactly once, and each step of a batch
// or read_lanes exactly once as a step of it (never again when it runs).
func TestEveryOperationCrossesTheGateOnce(t *testing.T) {
	log := &gateLog{}
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true, LoopThreshold: -1, GateObserver: log.observe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	root := testutil.Repo(t, map[string]string{"README.md": "hello world\n", "src/a.go": "package a\n"})

	call := func(name string, args map[string]any) (any, error) {
		b, _ := json.Marshal(args)
		return h.CallOp(ctx, name, b)
	}
	reg, err := call("repository_register", map[string]any{"path": root})
	if err != nil {
		t.Fatal(err)
	}
	repoID := reg.(*harness.RegisterResult).ID
	log.take()
	job, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: repoID, Argv: []string{"true"}, RequestID: "gate-job"})
	if err != nil {
		t.Fatal(err)
	}
	log.take()
	val, err := h.PatchProposalValidate(ctx, harness.PatchProposalValidateArgs{RepoID: repoID, Proposals: []harness.Proposal{
		{ID: "p", Operations: []patch.Op{{Op: "replace", Path: "src/a.go", OldText: "package a", NewText: "package a // p"}}}}})
	if err != nil || val.Proposals[0].ProposalID == "" {
		t.Fatalf("validate: %+v, %v", val, err)
	}
	log.take()

	repo := map[string]any{"repo_id": repoID}
	with := func(kv ...any) map[string]any {
		m := map[string]any{"repo_id": repoID}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	step := func(kind string, args map[string]any) map[string]any {
		return map[string]any{"kind": kind, "args": args}
	}
	tests := []struct {
		op   string
		args map[string]any
		want []string // the decisions, in order
	}{
		{"repository_register", map[string]any{"path": root}, nil},
		{"repository_list", map[string]any{}, nil},
		{"read_file", with("path", "README.md"), nil},
		{"search", with("query", "hello"), nil},
		{"git_status", repo, nil},
		{"git_diff", repo, nil},
		{"run_command", with("argv", []string{"git", "status", "--short"}), nil},
		{"route_explain", map[string]any{"tool": "read_file"}, nil},
		{"apply_patch", with("request_id", "gate-p", "operations", patchOps("README.md", "hello", "hi")), nil},
		{"git_stage", with("request_id", "gate-s", "paths", []string{"README.md"}), nil},
		{"git_commit", with("request_id", "gate-c", "message", "gate"), nil},
		{"batch", with("steps", []any{step("read_file", map[string]any{"path": "README.md"}), step("search", map[string]any{"query": "hi"}),
			step("git_status", map[string]any{})}), []string{"batch", "read_file", "search", "git_status"}},
		{"batch_result", map[string]any{"ref": "bres_unknown"}, nil},
		{"read_lanes", with("lanes", []any{step("read_file", map[string]any{"path": "README.md"}), step("git_status", map[string]any{})}),
			[]string{"read_lanes", "read_file", "git_status"}},
		{"run_check", with("argv", []string{"true"}), nil},
		{"job_start", with("argv", []string{"true"}, "request_id", "gate-j"), nil},
		{"job_status", map[string]any{"job_id": job.JobID}, nil},
		{"job_logs", map[string]any{"job_id": job.JobID}, nil},
		{"job_cancel", map[string]any{"job_id": job.JobID}, nil},
		{"job_list", map[string]any{}, nil},
		{"job_clean", map[string]any{}, nil},
		// One crossing for the call, one step per proposal.
		{"patch_proposal_validate", with("proposals", []any{map[string]any{"id": "q", "operations": patchOps("src/a.go", "package a", "package a // q")}}),
			[]string{"patch_proposal_validate", "patch_proposal_validate"}},
		{"patch_proposal_integrate", with("request_id", "gate-i", "proposal_ids", []string{val.Proposals[0].ProposalID}), nil},
		{"repository_unregister", repo, nil},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.op] = true
		want := tt.want
		if want == nil {
			want = []string{tt.op}
		}
		_, err := call(tt.op, tt.args)
		if got := log.take(); !slices.Equal(got, want) {
			t.Errorf("%s (err %v): gate decided %q, want %q", tt.op, err, got, want)
		}
	}
	for _, o := range h.Registry().All() {
		if !covered[o.Name] {
			t.Errorf("operation %s is not in this test: add it", o.Name)
		}
	}
}

func patchOps(path, old, new string) []any {
	return []any{map[string]any{"op": "replace", "path": path, "old_text": old, "new_text": new}}
}
