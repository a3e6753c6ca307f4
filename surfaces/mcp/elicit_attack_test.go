package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/internal/textsafe"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// Attacks through MCP on what a person reads: the elicitation question an
// MCP client shows its person, and the pile of approval requests a person
// works through.

func askingServer(t *testing.T) (*harness.Harness, *mcp.Server, string) {
	t.Helper()
	dir := t.TempDir()
	pol := "version: 1\nrules:\n  - id: ask-ls-tree\n    tools: [run_command]\n    argv_prefix: [git, ls-tree]\n    decision: ask\n    justification: \"someone should look first\"\n"
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	h, err := harness.Open(context.Background(), harness.Config{DataDir: dir, AllowRoots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return h, mcpserver.New(mcpserver.Local(h), "test", everySet), r.ID
}

// TestElicitationEscapesAgentText: the question lists the operation on
// one line and the exact input indented under its heading; an agent's
// line break, carriage return, escape sequence or bidi override can
// neither add a line of its own nor hide or reorder a part of the
// operation.
func TestElicitationEscapesAgentText(t *testing.T) {
	_, srv, repo := askingServer(t)
	var asked []string
	person, _ := connectWith(t, srv, &mcp.Implementation{Name: "inspector\x1b]0;harnessd (trusted)\x07", Version: "1"},
		&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "cancel"}, nil // no decision: the request stays pending
		}})
	attacks := []struct {
		name string
		argv []any
		want string // the Operation line
	}{
		{"fake lines", []any{"git", "ls-tree", "HEAD\nOperation: run_command git ls-tree HEAD\nExact input:"},
			`Operation: run_command git ls-tree HEAD\nOperation: run_command git ls-tree HEAD\nExact input:`},
		{"a carriage return", []any{"git", "ls-tree", "HEAD; rm -rf ~ #\rHEAD"}, `Operation: run_command git ls-tree HEAD; rm -rf ~ #\rHEAD`},
		{"an escape sequence", []any{"git", "ls-tree", "\x1b[8m; rm -rf ~\x1b[0m", "HEAD"}, `Operation: run_command git ls-tree \x1b[8m; rm -rf ~\x1b[0m HEAD`},
		{"a bidi override", []any{"git", "ls-tree", "\u202eDAEH ;~ fr- mr"}, `Operation: run_command git ls-tree \u202eDAEH ;~ fr- mr`},
		{"the plain request", []any{"git", "ls-tree", "HEAD"}, "Operation: run_command git ls-tree HEAD"},
	}
	for i, a := range attacks {
		e := errorOf(t, call(t, person, "run_command", map[string]any{"repo_id": repo, "argv": a.argv}))
		if e.Code != "APPROVAL_REQUIRED" || len(asked) != i+1 {
			t.Fatalf("%s: %s, %d questions; want APPROVAL_REQUIRED after a question", a.name, e.Code, len(asked))
		}
		msg := asked[i]
		for _, r := range msg {
			if r != '\n' && textsafe.Unsafe(r) {
				t.Errorf("%s: the question holds %U:\n%q", a.name, r, msg)
				break
			}
		}
		checkQuestion(t, a.name, msg, a.want)
	}
}

// checkQuestion checks the question's lines: harnessd's own, in order, the
// exact input indented between "Exact input:" and the closing line.
func checkQuestion(t *testing.T, name, msg, operation string) {
	t.Helper()
	lines := strings.Split(msg, "\n")
	var own []string
	input := false
	for i, l := range lines {
		switch {
		case l == "Exact input:":
			input = true
			own = append(own, l)
		case input && i < len(lines)-1:
			if !strings.HasPrefix(l, "  ") {
				t.Errorf("%s: the exact input's line %q is not indented:\n%s", name, l, msg)
			}
		default:
			own = append(own, l)
		}
	}
	prefixes := []string{"harnessd: an agent asks to run run_command on repo_", "Why approval is needed: ", `Asked by: inspector\x1b]0;harnessd (trusted)\x07 1`,
		"Operation: ", "Exact input:", "Approving allows exactly this input once"}
	if len(own) != len(prefixes) {
		t.Fatalf("%s: %d lines of harnessd's own, want %d:\n%s", name, len(own), len(prefixes), msg)
	}
	for i, p := range prefixes {
		if !strings.HasPrefix(own[i], p) {
			t.Errorf("%s: line %d is %q, want it to start with %q", name, i, own[i], p)
		}
	}
	if own[3] != operation {
		t.Errorf("%s: %q, want %q", name, own[3], operation)
	}
	// The exact input is JSON with JSON's escapes: it reads back as the
	// arguments.
	start := strings.Index(msg, "\nExact input:\n") + len("\nExact input:\n")
	end := strings.LastIndex(msg, "\nApproving")
	var args map[string]any
	if err := json.Unmarshal([]byte(msg[start:end]), &args); err != nil {
		t.Errorf("%s: the exact input is not JSON: %v\n%s", name, err, msg[start:end])
	}
}

// TestApprovalFloodOverMCP: one MCP session files approval requests until
// the limit, then gets BUDGET_EXCEEDED naming the way out; another
// session is not held back.
func TestApprovalFloodOverMCP(t *testing.T) {
	h, srv, repo := askingServer(t)
	flood := connect(t, srv, nil)
	for i := range govern.MaxPendingApprovals {
		e := errorOf(t, call(t, flood, "run_command", map[string]any{"repo_id": repo, "argv": []any{"git", "ls-tree", "HEAD", fmt.Sprintf("f%d", i)}}))
		if e.Code != "APPROVAL_REQUIRED" {
			t.Fatalf("ask %d: %s %s", i, e.Code, e.Message)
		}
	}
	for i := range 10 {
		e := errorOf(t, call(t, flood, "run_command", map[string]any{"repo_id": repo, "argv": []any{"git", "ls-tree", "HEAD", fmt.Sprintf("over%d", i)}}))
		if e.Code != "BUDGET_EXCEEDED" || e.Details["resource"] != "pending_approvals" || !strings.Contains(e.Message, "harness approvals") {
			t.Fatalf("ask %d past the limit: %s %v %s", i, e.Code, e.Details, e.Message)
		}
	}
	l, err := h.Approvals(context.Background(), "")
	if err != nil || len(l.Approvals) != govern.MaxPendingApprovals {
		t.Fatalf("%d pending approvals (%v), want %d", len(l.Approvals), err, govern.MaxPendingApprovals)
	}
	calm := connect(t, srv, nil)
	if e := errorOf(t, call(t, calm, "run_command", map[string]any{"repo_id": repo, "argv": []any{"git", "ls-tree", "HEAD"}})); e.Code != "APPROVAL_REQUIRED" {
		t.Fatalf("another session's ask: %s %s", e.Code, e.Message)
	}
}
