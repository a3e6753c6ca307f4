package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testutil"
)

// fakeGoEnv writes a fake `go` (version for the environment probe; test
// passes after a short sleep) and returns the daemon environment that puts
// it first on PATH. The build cache is a temp dir a confined check may
// write.
func fakeGoEnv(t *testing.T) []string {
	t.Helper()
	bin := t.TempDir()
	script := `#!/bin/sh
case "$1" in
version) echo "go version go1.26.0-fake linux/amd64"; exit 0 ;;
test) sleep 0.1; echo "ok  	example.com/demo/pkg	0.01s"; exit 0 ;;
esac
echo "fake go: unsupported $*" >&2
exit 2
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "GOCACHE=" + t.TempDir()}
}

type claimE2E struct {
	Status      string `json:"status"`
	StageStatus string `json:"stage_status"`
}

type verifyE2E struct {
	Passed   bool   `json:"passed"`
	Status   string `json:"status"`
	Blockers []struct {
		Reason       string   `json:"reason"`
		Fix          string   `json:"fix"`
		ChangedFiles []string `json:"changed_files"`
	} `json:"blockers"`
}

type commitE2E struct {
	ReceiptID string `json:"receipt_id"`
	Commit    string `json:"commit"`
	Verified  []struct {
		RunID    string `json:"run_id"`
		Stage    string `json:"stage"`
		Evidence []struct {
			Kind     string `json:"kind"`
			Verified bool   `json:"verified"`
		} `json:"evidence"`
	} `json:"verified"`
}

// Through MCP: a stage claimed with check evidence is verified after
// run_check; an edit makes the evidence stale, so git_commit with
// require_verified is refused with VERIFICATION_REQUIRED naming the file
// and the fix; a fresh run_check makes the same commit pass, and its
// receipt records the verification.
func TestClaimedVsVerifiedThroughMCP(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{
		"go.mod":        "module example.com/demo\n\ngo 1.22\n",
		"pkg/a.go":      "package pkg\n\nfunc A() int { return 1 }\n",
		"pkg/a_test.go": "package pkg\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
	})
	startDaemonEnv(t, dataDir, fakeGoEnv(t))
	s := mcpSession(t, dataDir)
	var r repoResult
	if callTool(t, s, "repository_register", map[string]any{"path": repo}, &r) {
		t.Fatal("register failed")
	}
	var run runResult
	if callTool(t, s, "run_start", map[string]any{"goal": "change A", "repo_id": r.RepoID}, &run) || run.RunID == "" {
		t.Fatalf("run_start: %+v", run)
	}
	check := map[string]any{"repo_id": r.RepoID, "argv": []string{"go", "test", "./pkg", "-run", "TestX"}}
	var te toolError
	if callTool(t, s, "run_check", check, &te) {
		t.Fatalf("run_check: %+v", te)
	}
	var cl claimE2E
	if callTool(t, s, "run_claim", map[string]any{"run_id": run.RunID, "stage": "tests", "claim": "the pkg tests pass",
		"evidence": []map[string]any{{"kind": "check", "argv": check["argv"]}}}, &cl) || cl.Status != "claimed" {
		t.Fatalf("run_claim: %+v", cl)
	}
	var v verifyE2E
	if callTool(t, s, "run_verify", map[string]any{"run_id": run.RunID, "stage": "tests"}, &v) || !v.Passed || v.Status != "verified" {
		t.Fatalf("run_verify: %+v", v)
	}

	if callTool(t, s, "apply_patch", map[string]any{"repo_id": r.RepoID, "request_id": "e2e-claim-1",
		"operations": []map[string]any{{"op": "replace", "path": "pkg/a.go", "old_text": "return 1", "new_text": "return 2"}}}, &te) {
		t.Fatalf("apply_patch: %+v", te)
	}
	if callTool(t, s, "git_stage", map[string]any{"repo_id": r.RepoID, "request_id": "e2e-claim-2", "paths": []string{"pkg/a.go"}}, &te) {
		t.Fatalf("git_stage: %+v", te)
	}
	commit := map[string]any{"repo_id": r.RepoID, "request_id": "e2e-claim-3", "message": "A is 2", "require_verified": "tests"}
	te = toolError{}
	if !callTool(t, s, "git_commit", commit, &te) || te.Error.Code != "VERIFICATION_REQUIRED" {
		t.Fatalf("commit on stale evidence: %+v, want VERIFICATION_REQUIRED", te)
	}
	blockers, _ := te.Error.Details["blockers"].([]any)
	if len(blockers) != 1 || !strings.Contains(te.Error.Message, "pkg/a.go") || !strings.Contains(te.Error.Message, "run_check") || !strings.Contains(te.Error.Message, "run_verify") {
		t.Fatalf("refusal %q with blockers %v: want pkg/a.go and the fix named", te.Error.Message, blockers)
	}
	if b, _ := blockers[0].(map[string]any); b == nil || !strings.Contains(b["reason"].(string), "stale") {
		t.Fatalf("blocker %v, want a stale check", blockers[0])
	}

	if callTool(t, s, "run_check", check, &te) {
		t.Fatalf("fresh run_check: %+v", te)
	}
	var done commitE2E
	if callTool(t, s, "git_commit", commit, &done) || done.Commit == "" {
		t.Fatalf("commit after a fresh check: %+v", done)
	}
	if len(done.Verified) != 1 || done.Verified[0].RunID != run.RunID || done.Verified[0].Stage != "tests" ||
		len(done.Verified[0].Evidence) != 1 || !done.Verified[0].Evidence[0].Verified {
		t.Fatalf("the commit's receipt: %+v, want the verification it passed", done)
	}
}
