package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/internal/testutil"
)

// Every Fast Path and mutation operation is reachable through
// `harnessd mcp` with the go-sdk client, with replay and conflict behaving
// end to end.
func TestAllOperationsThroughMCP(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"README.md": "# demo\nhello world\n", "src/app.go": "package app\n\nfunc Hello() string { return \"hi\" }\n"})
	startDaemon(t, dataDir)
	s := mcpSession(t, dataDir)

	var r repoResult
	if callTool(t, s, "repository_register", map[string]any{"path": repo}, &r) {
		t.Fatalf("register: %+v", r)
	}
	id := r.RepoID
	var got map[string]any
	ok := func(name string, args map[string]any) map[string]any {
		t.Helper()
		got = nil
		if callTool(t, s, name, args, &got) {
			b, _ := json.Marshal(got)
			t.Fatalf("%s failed: %s", name, b)
		}
		if got["route"] == nil {
			t.Fatalf("%s result has no route: %v", name, got)
		}
		return got
	}
	// read_file: the text block carries the file, the structured content
	// its metadata (content once on the wire).
	if res := ok("read_file", map[string]any{"repo_id": id, "path": "README.md", "include_latency_breakdown": true}); res["path"] != "README.md" || res["sha256"] == nil {
		t.Fatalf("read_file = %v", res)
	}
	if res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"repo_id": id, "path": "README.md"}}); err != nil || res.IsError ||
		len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hello world") {
		t.Fatalf("read_file's text block: %v %+v", err, res)
	}
	if res := ok("search", map[string]any{"repo_id": id, "query": "Hello"}); len(res["matches"].([]any)) != 1 {
		t.Fatalf("search = %v", res)
	}
	if res := ok("git_status", map[string]any{"repo_id": id}); res["branch"] != "main" || res["clean"] != true {
		t.Fatalf("git_status = %v", res)
	}
	if res := ok("run_command", map[string]any{"repo_id": id, "argv": []string{"git", "log", "--oneline"}}); !strings.Contains(res["stdout"].(map[string]any)["text"].(string), "initial") {
		t.Fatalf("run_command = %v", res)
	}
	if res := ok("route_explain", map[string]any{"tool": "run_command", "argv": []string{"git", "push", "--mirror"}}); res["decision"].(map[string]any)["mode"] != "reject" {
		t.Fatalf("route_explain = %v", res)
	}
	wantToolError(t, s, "run_command", map[string]any{"repo_id": id, "argv": []string{"rm", "-rf", "."}}, "ROUTE_REJECTED")
	wantToolError(t, s, "run_command", map[string]any{"repo_id": id, "argv": []string{"make"}}, "ROUTE_DURABLE_REQUIRED")
	wantToolError(t, s, "read_file", map[string]any{"repo_id": id, "path": "../../etc/passwd"}, "PATH_OUTSIDE_ROOT")

	patch := map[string]any{"repo_id": id, "request_id": "e2e-1", "allowed_paths": []string{"src/**"},
		"operations": []map[string]any{{"op": "replace", "path": "src/app.go", "old_text": `"hi"`, "new_text": `"hello"`}}}
	first := ok("apply_patch", patch)
	if first["replayed"] != false || first["fencing_token"].(float64) < 1 {
		t.Fatalf("apply_patch = %v", first)
	}
	again := ok("apply_patch", patch)
	if again["replayed"] != true || again["receipt_id"] != first["receipt_id"] {
		t.Fatalf("replay = %v", again)
	}
	patch["operations"] = []map[string]any{{"op": "replace", "path": "src/app.go", "old_text": `"hello"`, "new_text": `"x"`}}
	wantToolError(t, s, "apply_patch", patch, "REQUEST_CONFLICT")
	delete(patch, "request_id")
	wantToolError(t, s, "apply_patch", patch, "REQUEST_ID_REQUIRED")

	if res := ok("git_diff", map[string]any{"repo_id": id}); !strings.Contains(res["patch"].(string), `"hello"`) {
		t.Fatalf("git_diff = %v", res)
	}
	ok("git_stage", map[string]any{"repo_id": id, "request_id": "e2e-stage", "paths": []string{"src/app.go"}})
	c := ok("git_commit", map[string]any{"repo_id": id, "request_id": "e2e-commit", "message": "say hello"})
	if c["commit"] == "" || c["hooks_ran"] != false {
		t.Fatalf("git_commit = %v", c)
	}
	if res := ok("git_status", map[string]any{"repo_id": id}); res["clean"] != true {
		t.Fatalf("after commit: %v", res)
	}
}
