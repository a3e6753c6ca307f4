package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/internal/testutil"
)

// While an MCP client waits on a job (job_status with wait_s), harnessd
// sends progress notifications through `harnessd mcp`, so client request
// timeouts do not fire.
func TestJobWaitSendsProgress(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	startDaemon(t, dataDir)
	var notes atomic.Int32
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { notes.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := cl.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(harnessdBin, "mcp", "--data-dir", dataDir, "--log-level", "warn")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var r repoResult
	callTool(t, s, "repository_register", map[string]any{"path": repo}, &r)
	var job struct {
		JobID string `json:"job_id"`
		State string `json:"state"`
	}
	if callTool(t, s, "job_start", map[string]any{"repo_id": r.RepoID, "argv": []string{"sleep", "3"}, "request_id": "progress-1"}, &job) {
		t.Fatalf("job_start: %+v", job)
	}
	params := &mcp.CallToolParams{Name: "job_status", Arguments: map[string]any{"job_id": job.JobID, "wait_s": 20}}
	params.SetProgressToken("wait-1")
	res, err := s.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &job)
	if res.IsError || job.State != "succeeded" {
		t.Fatalf("job_status = %s", b)
	}
	if n := notes.Load(); n < 2 {
		t.Fatalf("%d progress notifications during a 3 s wait, want at least 2", n)
	}
}
