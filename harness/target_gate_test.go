package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/errs"
)

// targetOpCalls registers two targets in h and returns a valid call of
// every target operation, in an order that works (the last unregisters
// one). everyOpCall (gate_test.go) can append it to cover the targets.
func targetOpCalls(t *testing.T, h *harness.Harness) []opCall {
	t.Helper()
	dir := targetDir(t, map[string]string{"README.md": "hello world\n"})
	other := targetDir(t, nil)
	g := addTarget(t, h, dir, "write", "")
	o := addTarget(t, h, other, "write", "")
	with := func(kv ...any) map[string]any {
		m := map[string]any{"target_id": g.TargetID}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	return []opCall{
		{"target_register", map[string]any{"path": dir, "access": "write"}, nil},
		{"target_list", map[string]any{}, nil},
		{"target_read_file", with("path", "README.md"), nil},
		{"target_list_dir", with(), nil},
		{"target_search", with("query", "hello"), nil},
		{"target_write_file", with("path", "w.txt", "content", "w\n"), nil},
		{"target_apply_patch", with("operations", patchOps("README.md", "hello", "hi")), nil},
		{"target_copy", with("from", "README.md", "to_target_id", o.TargetID, "to", "copy.md", "overwrite", true), nil},
		{"target_move", with("from", "w.txt", "to", "moved.txt", "overwrite", true), nil},
		{"target_execute_command", with("argv", []string{"ls"}), nil},
		{"target_promote", map[string]any{"target_id": o.TargetID}, nil},
		{"target_unregister", with(), nil},
	}
}

// Every target operation crosses the gate exactly once.
func TestTargetOperationsCrossTheGateOnce(t *testing.T) {
	log := &gateLog{}
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true, LoopThreshold: -1, GateObserver: log.observe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	tests := targetOpCalls(t, h)
	log.take()
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.op] = true
		_, err := callOp(h, tt.op, tt.args)
		if got := log.take(); !slices.Equal(got, []string{tt.op}) {
			t.Errorf("%s (err %v): gate decided %q, want once", tt.op, err, got)
		}
	}
	for _, o := range h.Registry().All() {
		if len(o.Name) > 7 && o.Name[:7] == "target_" && !covered[o.Name] {
			t.Errorf("target operation %s is not in this test: add it", o.Name)
		}
	}
}

// Every target operation takes the approval a person granted under a
// policy rule that asks for it.
func TestTargetOperationsTakeTheirApproval(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h, err := openWithPolicy(t, dir, "version: 1\nrules:\n  - id: none\n    tools: [no_such_tool]\n    decision: ask\n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	for _, tt := range targetOpCalls(t, h) {
		pol := "version: 1\nrules:\n  - id: ask-" + tt.op + "\n    tools: [" + tt.op + "]\n    decision: ask\n    justification: test\n"
		if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(pol), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := h.ReloadPolicy(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := callOp(h, tt.op, tt.args)
		e := errs.From(err)
		apr, _ := e.Details["approval_id"].(string)
		if e == nil || e.Code != errs.ApprovalRequired || apr == "" {
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
}
