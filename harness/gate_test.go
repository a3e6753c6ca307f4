package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
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

// opCall is one call of an operation with valid arguments, and the gate
// crossings it makes (nil = one, of the operation).
type opCall struct {
	op   string
	args map[string]any
	want []string
}

// everyOpCall registers a repository in h and returns a valid call of
// every operation, in an order that works (the last unregisters it).
func everyOpCall(t *testing.T, h *harness.Harness) []opCall {
	t.Helper()
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{"README.md": "hello world\n", "src/a.go": "package a\n"})
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	repoID := reg.ID
	// git_push's remote: a local bare repository.
	bare := t.TempDir()
	testutil.Git(t, bare, "init", "-q", "--bare")
	testutil.Git(t, root, "remote", "add", "origin", bare)
	job, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: repoID, Argv: []string{"true"}, RequestID: "gate-job"})
	if err != nil {
		t.Fatal(err)
	}
	val, err := h.PatchProposalValidate(ctx, harness.PatchProposalValidateArgs{RepoID: repoID, Proposals: []harness.Proposal{
		{ID: "p", Operations: []patch.Op{{Op: "replace", Path: "src/a.go", OldText: "package a", NewText: "package a // p"}}}}})
	if err != nil || val.Proposals[0].ProposalID == "" {
		t.Fatalf("validate: %+v, %v", val, err)
	}
	run, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	rid := map[string]any{"run_id": run.RunID}
	// Writes for revert and run_revert to undo (one outside the run, one in it).
	var undoIDs [2]string
	for i, args := range []map[string]any{
		{"repo_id": repoID, "request_id": "gate-u0", "operations": []any{map[string]any{"op": "create", "path": "undo0.txt", "content": "u\n"}}},
		{"repo_id": repoID, "request_id": "gate-u1", "run_id": run.RunID, "operations": []any{map[string]any{"op": "create", "path": "undo1.txt", "content": "u\n"}}},
	} {
		out, err := callOp(h, "apply_patch", args)
		if err != nil {
			t.Fatal(err)
		}
		undoIDs[i] = out.(*harness.MutationResult).ReceiptID
	}
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
	return append([]opCall{
		{"repository_register", map[string]any{"path": root}, nil},
		{"repository_list", map[string]any{}, nil},
		{"read_file", with("path", "README.md"), nil},
		{"list_dir", with("path", "."), nil},
		{"search", with("query", "hello"), nil},
		{"git_status", repo, nil},
		{"git_diff", repo, nil},
		{"run_command", with("argv", []string{"git", "status", "--short"}), nil},
		{"route_explain", map[string]any{"tool": "read_file"}, nil},
		{"apply_patch", with("request_id", "gate-p", "operations", patchOps("README.md", "hello", "hi")), nil},
		{"git_stage", with("request_id", "gate-s", "paths", []string{"README.md"}), nil},
		{"git_commit", with("request_id", "gate-c", "message", "gate"), nil},
		{"commit_verify", with("rev", "HEAD"), nil},
		{"git_push", with("request_id", "gate-push", "remote", "origin", "refspec", "HEAD"), nil},
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
		{"receipt_list", repo, nil},
		{"revert", with("request_id", "gate-r", "receipt_id", undoIDs[0]), nil},
		{"run_revert", map[string]any{"run_id": run.RunID, "request_id": "gate-rr"}, nil},
		{"run_start", map[string]any{"goal": "g", "workflow_class": "bugfix"}, nil},
		{"run_observe", map[string]any{"run_id": run.RunID, "kind": "finding", "text": "t"}, nil},
		{"run_stage", map[string]any{"run_id": run.RunID, "stage": "s", "status": "started"}, nil},
		{"run_claim", map[string]any{"run_id": run.RunID, "stage": "s", "claim": "c", "evidence": []any{map[string]any{"kind": "file", "path": "README.md", "sha256": "sha256:" + strings.Repeat("0", 64), "repo_id": repoID}}}, nil},
		{"run_verify", map[string]any{"run_id": run.RunID, "stage": "s"}, nil},
		{"run_status", rid, nil},
		{"run_list", map[string]any{}, nil},
		{"run_resume", rid, nil},
		{"run_assess", rid, nil},
		{"run_escalate", map[string]any{"run_id": run.RunID, "to": "bounded_work", "reason": "it writes"}, nil},
		{"run_review", map[string]any{"run_id": run.RunID, "stage": "s", "verdict": "approve"}, nil},
		{"run_scorecard", map[string]any{}, nil},
		{"context_assemble", repo, nil},
		{"run_end", rid, nil},
		{"repository_unregister", repo, nil},
	}, targetOpCalls(t, h)...)
}

// callOp calls an operation by name with JSON arguments.
func callOp(h *harness.Harness, name string, args map[string]any) (any, error) {
	b, _ := json.Marshal(args)
	return h.CallOp(context.Background(), name, b)
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
	tests := everyOpCall(t, h)
	log.take()
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.op] = true
		want := tt.want
		if want == nil {
			want = []string{tt.op}
		}
		_, err := callOp(h, tt.op, tt.args)
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

// Every operation whose gate can ask takes approval_id: under a policy
// that asks for it, the call answers APPROVAL_REQUIRED with an approval
// id, and once a person approved, the same call with approval_id gets past
// the gate.
func TestEveryAskableOperationTakesItsApproval(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h, err := openWithPolicy(t, dir, "version: 1\nrules:\n  - id: none\n    tools: [no_such_tool]\n    decision: ask\n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	tests := everyOpCall(t, h)
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.op] = true
		pol := "version: 1\nrules:\n  - id: ask-" + tt.op + "\n    tools: [" + tt.op + "]\n    decision: ask\n    justification: test\n"
		if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(pol), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := h.ReloadPolicy(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := callOp(h, tt.op, tt.args)
		if err == nil {
			t.Errorf("%s under an ask rule answered without asking", tt.op)
			continue
		}
		e := errs.From(err)
		apr, _ := e.Details["approval_id"].(string)
		if e.Code != errs.ApprovalRequired || apr == "" {
			t.Errorf("%s under an ask rule: %v, want APPROVAL_REQUIRED with an approval_id", tt.op, err)
			continue
		}
		if _, err := h.DecideApproval(ctx, apr, true, "tester", "test"); err != nil {
			t.Fatalf("%s: approve: %v", tt.op, err)
		}
		args := map[string]any{"approval_id": apr}
		for k, v := range tt.args {
			args[k] = v
		}
		if _, err := callOp(h, tt.op, args); errs.CodeOf(err) == errs.ApprovalRequired {
			t.Errorf("%s with its approval: %v, want past the gate", tt.op, err)
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
