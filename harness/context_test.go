package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// assembled is the part of context_assemble's answer the tests read.
type assembled struct {
	RunID string `json:"run_id"`
	State struct {
		Run *struct {
			CurrentStage string `json:"current_stage"`
		} `json:"run"`
		Parts []struct{ ID, Text string } `json:"parts"`
	} `json:"state"`
	Route *struct {
		Decision json.RawMessage `json:"decision"`
	} `json:"command_route"`
	Meta          string                      `json:"route"`
	RelevantRules []struct{ ID, Text string } `json:"relevant_rules"`
	RecentEvents  []struct{ ID, Text string } `json:"recent_events"`
	TokenBudget   struct {
		Budget, Used, Remaining int
	} `json:"token_budget"`
	IsTrivialChat bool `json:"is_trivial_chat"`
}

func call(t *testing.T, h *harness.Harness, name string, args any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.CallOp(context.Background(), name, raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assemble(t *testing.T, h *harness.Harness, args map[string]any) (assembled, string) {
	t.Helper()
	b := call(t, h, "context_assemble", args)
	var a assembled
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return a, string(b)
}

func register(t *testing.T, h *harness.Harness, root string) string {
	t.Helper()
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// TestContextRunFailuresFirst: a run with a receipt, then a failure, gets
// the failure as its first event, its stage in state, and run_status
// reports the snapshot of the token budget.
func TestContextRunFailuresFirst(t *testing.T) {
	h := open(t)
	root := testutil.Repo(t, map[string]string{"main.go": "package main\n", "STATE.md": "# State\nphase 1\n"})
	id := register(t, h, root)
	var run struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(call(t, h, "run_start", map[string]any{"repo_id": id, "goal": "fix"}), &run)
	call(t, h, "run_stage", map[string]any{"run_id": run.RunID, "stage": "build", "status": "started"})
	call(t, h, "apply_patch", map[string]any{"repo_id": id, "run_id": run.RunID, "request_id": "r1",
		"operations": []map[string]any{{"op": "create", "path": "new.go", "content": "package main\n"}}})
	_, err := h.CallOp(context.Background(), "read_file", json.RawMessage(`{"repo_id":"`+id+`","run_id":"`+run.RunID+`","path":"missing.go"}`))
	if errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("read_file missing = %v, want NOT_FOUND", err)
	}
	a, _ := assemble(t, h, map[string]any{"repo_id": id, "run_id": run.RunID, "token_budget": 1000})
	if len(a.RecentEvents) < 2 || !strings.HasPrefix(a.RecentEvents[0].ID, "event:failure:") || !strings.Contains(a.RecentEvents[0].Text, "read_file failed with NOT_FOUND") {
		t.Fatalf("recent_events = %+v, want the failure first", a.RecentEvents)
	}
	if !strings.HasPrefix(a.RecentEvents[1].ID, "event:receipt:") {
		t.Errorf("recent_events[1] = %+v, want the receipt", a.RecentEvents[1])
	}
	if a.State.Run == nil || a.State.Run.CurrentStage != "build" {
		t.Errorf("state.run = %+v, want stage build", a.State.Run)
	}
	if a.TokenBudget.Budget != 1000 || a.TokenBudget.Used > 1000 || a.TokenBudget.Used+a.TokenBudget.Remaining != 1000 {
		t.Errorf("token_budget = %+v", a.TokenBudget)
	}
	var st struct {
		TokenBudget *struct{ Budget, Used, Remaining int } `json:"token_budget"`
	}
	_ = json.Unmarshal(call(t, h, "run_status", map[string]any{"run_id": run.RunID}), &st)
	if st.TokenBudget == nil || st.TokenBudget.Budget != 1000 || st.TokenBudget.Used != a.TokenBudget.Used {
		t.Errorf("run_status token_budget = %+v, want the snapshot %+v", st.TokenBudget, a.TokenBudget)
	}
}

// TestContextSecretNeverAppears: an attacker's checkout with a .env
// (tracked), a CLAUDE.md symlink and a STATE.md hard link to it, and its
// value copied into the README and AGENTS.md: neither the file nor the
// value comes back.
func TestContextSecretNeverAppears(t *testing.T) {
	const value = "Zebra0rchid7741QuartzMoon" // no redaction rule matches it: only the known value does
	h := open(t)
	root := testutil.Repo(t, map[string]string{".env": "SERVICE_PASS=" + value + "\nMARKER_SECRET_FILE=1\n", "main.go": "package main\n",
		"README.md": "# Proj\ncopied: " + value + "\n", "AGENTS.md": "# Agents\nsee " + value + "\n\n## Deploy with " + value + "\nsteps\n"})
	if err := os.Symlink(".env", filepath.Join(root, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, ".env"), filepath.Join(root, "STATE.md")); err != nil {
		t.Fatal(err)
	}
	id := register(t, h, root)
	for _, args := range []map[string]any{{"repo_id": id}, {"repo_id": id, "command": "apply_patch", "args": map[string]any{"path": ".env"}}} {
		_, out := assemble(t, h, args)
		for _, bad := range []string{value, "MARKER_SECRET_FILE", "SERVICE_PASS"} {
			if strings.Contains(out, bad) {
				t.Errorf("context_assemble %v holds %q: %s", args, bad, out)
			}
		}
		if !strings.Contains(out, "copied: [REDACTED") {
			t.Errorf("the README's copy of the value is not redacted: %s", out)
		}
	}
}

func TestContextBudgetRangeRouteAndTrivial(t *testing.T) {
	h := open(t)
	root := testutil.Repo(t, map[string]string{"main.go": "package main\n"})
	id := register(t, h, root)
	for _, b := range []int{1, 499, 200001} {
		_, err := h.CallOp(context.Background(), "context_assemble", json.RawMessage(`{"repo_id":"`+id+`","token_budget":`+itoa(b)+`}`))
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.InvalidArgument || !strings.Contains(e.Message, "between 500 and 200000") {
			t.Errorf("token_budget %d = %v, want INVALID_ARGUMENT naming the range", b, err)
		}
	}
	argv := []string{"go", "test", "./..."}
	a, _ := assemble(t, h, map[string]any{"repo_id": id, "command": "run_command", "args": map[string]any{"argv": argv}})
	var explain struct {
		Decision json.RawMessage `json:"decision"`
	}
	_ = json.Unmarshal(call(t, h, "route_explain", map[string]any{"tool": "run_command", "argv": argv}), &explain)
	if a.Route == nil || string(a.Route.Decision) != string(explain.Decision) {
		t.Errorf("route = %s, want route_explain's %s", a.Route.Decision, explain.Decision)
	}
	if a.IsTrivialChat {
		t.Error("run_command is not trivial chat")
	}
	if a.Meta != "fast" {
		t.Errorf("route = %q, want the call's own route fast", a.Meta)
	}
	for _, tt := range []struct {
		args    string
		code    errs.Code // "" = ok
		trivial bool
	}{
		{args: `{"repo_id":"` + id + `"}`, trivial: true},
		{args: `{"repo_id":"` + id + `","command":"route_explain"}`, trivial: true},
		{args: `{"repo_id":"` + id + `","command":"git_commit"}`},
		{args: `{"repo_id":"` + id + `","command":"BAD;rm"}`, code: errs.InvalidArgument},
		{args: `{"repo_id":"` + id + `","args":{"argv":["ls"]}}`, code: errs.InvalidArgument},
		{args: `{"repo_id":"` + id + `","command":"read_file","x":1}`, code: errs.InvalidArgument},
		{args: `{"repo_id":"nope"}`, code: errs.RepositoryNotRegistered},
	} {
		out, err := h.CallOp(context.Background(), "context_assemble", json.RawMessage(tt.args))
		if errs.CodeOf(err) != tt.code {
			t.Errorf("%s = %v, want code %q", tt.args, err, tt.code)
			continue
		}
		if err != nil {
			continue
		}
		b, _ := json.Marshal(out)
		var got assembled
		_ = json.Unmarshal(b, &got)
		if got.IsTrivialChat != tt.trivial {
			t.Errorf("%s: is_trivial_chat = %v, want %v", tt.args, got.IsTrivialChat, tt.trivial)
		}
	}
}

// TestContextRepoEventsWithoutRun: without a run, the repository's recent
// receipts are the events.
func TestContextRepoEventsWithoutRun(t *testing.T) {
	h := open(t)
	root := testutil.Repo(t, map[string]string{"main.go": "package main\n"})
	id := register(t, h, root)
	call(t, h, "apply_patch", map[string]any{"repo_id": id, "request_id": "r1",
		"operations": []map[string]any{{"op": "create", "path": "a.go", "content": "package main\n"}}})
	a, _ := assemble(t, h, map[string]any{"repo_id": id})
	// The facade answers the same.
	typed, err := h.ContextAssemble(context.Background(), harness.ContextArgs{RepoID: id})
	if err != nil || len(typed.RecentEvents) != len(a.RecentEvents) || typed.TokenBudget.Used != a.TokenBudget.Used {
		t.Errorf("ContextAssemble = %+v, %v; want what context_assemble answers", typed, err)
	}
	if a.RunID != "" || len(a.RecentEvents) != 1 || !strings.HasPrefix(a.RecentEvents[0].ID, "event:receipt:") || !strings.Contains(a.RecentEvents[0].Text, "a.go") {
		t.Errorf("run_id %q, recent_events = %+v, want the receipt of a.go", a.RunID, a.RecentEvents)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
