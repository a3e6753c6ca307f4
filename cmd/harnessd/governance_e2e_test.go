package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testutil"
)

// An approval request survives kill -9; a person approves it with the CLI;
// the agent's retry with approval_id runs once, and only once.
func TestApprovalSurvivesKill9(t *testing.T) {
	dataDir := t.TempDir()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	pol := "version: 1\nrules:\n  - id: ask-ls-tree\n    argv_prefix: [git, ls-tree]\n    decision: ask\n    justification: look first\n"
	if err := os.WriteFile(filepath.Join(dataDir, "policy.yaml"), []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, dataDir)
	s := mcpSession(t, dataDir)
	var r repoResult
	callTool(t, s, "repository_register", map[string]any{"path": repo}, &r)
	args := map[string]any{"repo_id": r.RepoID, "argv": []string{"git", "ls-tree", "HEAD"}}
	var te toolError
	if !callTool(t, s, "run_command", args, &te) || te.Error.Code != "APPROVAL_REQUIRED" {
		t.Fatalf("want APPROVAL_REQUIRED, got %+v", te)
	}
	apr, _ := te.Error.Details["approval_id"].(string)
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.wait(t, 10*time.Second)
	startDaemon(t, dataDir)

	out, err := exec.Command(harnessBin, "--data-dir", dataDir, "approvals").CombinedOutput()
	if err != nil || !strings.Contains(string(out), apr) {
		t.Fatalf("harness approvals: %v\n%s", err, out)
	}
	out, err = exec.Command(harnessBin, "--data-dir", dataDir, "approve", apr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "approved") {
		t.Fatalf("harness approve: %v\n%s", err, out)
	}
	s2 := mcpSession(t, dataDir)
	args["approval_id"] = apr
	var res map[string]any
	if callTool(t, s2, "run_command", args, &res) {
		t.Fatalf("approved retry failed: %v", res)
	}
	if !callTool(t, s2, "run_command", args, &te) || te.Error.Code != "APPROVAL_REQUIRED" {
		t.Fatalf("second use of the approval: %+v, want APPROVAL_REQUIRED", te)
	}
	// approvals are not MCP tools
	tools, _ := s2.ListTools(t.Context(), nil)
	for _, tl := range tools.Tools {
		if strings.Contains(tl.Name, "approv") || strings.Contains(tl.Name, "policy") {
			t.Fatalf("agent-facing tool %q can approve or change policy", tl.Name)
		}
	}
	out, err = exec.Command(harnessBin, "--data-dir", dataDir, "audit", "verify").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "intact") {
		t.Fatalf("harness audit verify: %v\n%s", err, out)
	}
}
