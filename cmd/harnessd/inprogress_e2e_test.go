package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// Through `harnessd mcp`: a patch waiting for a writing job's workspace
// lease is in progress, so its retry answers REQUEST_IN_PROGRESS; once the
// job ends the patch completes and a retry replays it.
func TestRequestInProgressThroughMCP(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"a.txt": "old\n"})
	startDaemon(t, dataDir)
	s := mcpSession(t, dataDir)
	var r repoResult
	callTool(t, s, "repository_register", map[string]any{"path": repo}, &r)
	var job struct {
		JobID string `json:"job_id"`
		State string `json:"state"`
	}
	if callTool(t, s, "job_start", map[string]any{"repo_id": r.RepoID, "argv": []string{"sleep", "60"}, "writes": true, "request_id": "writer"}, &job) {
		t.Fatalf("job_start: %+v", job)
	}
	// Wait until the job runs (and so holds the workspace lease).
	deadline := time.Now().Add(20 * time.Second)
	for job.State != "running" {
		if time.Now().After(deadline) {
			t.Fatalf("job never ran: %+v", job)
		}
		callTool(t, s, "job_status", map[string]any{"job_id": job.JobID}, &job)
	}
	patch := map[string]any{"repo_id": r.RepoID, "request_id": "waits", "wait_ms": 30000,
		"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "old", "new_text": "new"}}}
	first := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "apply_patch", Arguments: patch})
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	// Wait until the first call is recorded as executing in the ledger.
	tok, err := daemon.ReadToken(daemon.PathsOf(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	c := client.Unix(daemon.PathsOf(dataDir).Socket).WithToken(tok) // the store dump is for people
	defer c.Close()
	for {
		if time.Now().After(deadline) {
			t.Fatal("the waiting patch never reached the ledger")
		}
		dump, err := c.GetRaw(context.Background(), "/v1/store/dump?prefix=ledger/waits")
		if err == nil && strings.Contains(string(dump), `"state":"executing"`) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the daemon for the other call's progress
	}
	var te toolError
	if !callTool(t, s, "apply_patch", patch, &te) || te.Error.Code != "REQUEST_IN_PROGRESS" {
		t.Fatalf("retry while the first waits: %+v, want REQUEST_IN_PROGRESS", te)
	}
	callTool(t, s, "job_cancel", map[string]any{"job_id": job.JobID}, &job)
	res := <-first
	if res == nil || res.IsError {
		t.Fatalf("the waiting patch failed after the job ended: %+v", res)
	}
	var again map[string]any
	if callTool(t, s, "apply_patch", patch, &again) || again["replayed"] != true {
		t.Fatalf("retry after success = %v, want replayed", again)
	}
}
