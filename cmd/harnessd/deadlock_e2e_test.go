package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/internal/testutil"
)

// Two agents on two MCP sessions (two implicit runs): each holds one
// repository through a writing job and patches the other with wait_ms. One
// patch answers DEADLOCK naming both runs within one lease wait; once its
// run cancels its job, the other patch writes.
func TestDeadlockAcrossMCPSessionsIsBroken(t *testing.T) {
	dataDir := t.TempDir()
	startDaemon(t, dataDir)
	type agent struct {
		s         *mcp.ClientSession
		own, peer string
		run, job  string
		name      string
	}
	roots := []string{testutil.Repo(t, map[string]string{"a.txt": "a\n"}), testutil.Repo(t, map[string]string{"b.txt": "b\n"})}
	var ids []string
	first := mcpSession(t, dataDir)
	for _, r := range roots {
		var rr repoResult
		if callTool(t, first, "repository_register", map[string]any{"path": r}, &rr) {
			t.Fatal("register failed")
		}
		ids = append(ids, rr.RepoID)
	}
	agents := []*agent{{s: first, own: ids[0], peer: ids[1], name: "a"}, {s: mcpSession(t, dataDir), own: ids[1], peer: ids[0], name: "b"}}
	for _, a := range agents {
		var run runResult
		callTool(t, a.s, "run_status", map[string]any{}, &run)
		a.run = run.RunID
		var j struct {
			JobID string `json:"job_id"`
		}
		if callTool(t, a.s, "job_start", map[string]any{"repo_id": a.own, "argv": []string{"sleep", "20"}, "writes": true, "request_id": "dl-job-" + a.name}, &j) {
			t.Fatalf("job_start of %s failed", a.name)
		}
		a.job = j.JobID
	}
	for _, a := range agents {
		deadline := time.Now().Add(20 * time.Second)
		for {
			var st struct {
				State   string `json:"state"`
				LeaseID string `json:"lease_id"`
			}
			callTool(t, a.s, "job_status", map[string]any{"job_id": a.job}, &st)
			if st.State == "running" && st.LeaseID != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job of %s: %+v", a.name, st)
			}
			time.Sleep(20 * time.Millisecond) // polling a subprocess, not an actor
		}
	}
	type outcome struct {
		a    *agent
		code string
		msg  string
		in   time.Duration
	}
	done := make(chan outcome, 2)
	start := time.Now()
	for _, a := range agents {
		go func() {
			var te toolError
			isErr := callToolNoFatal(a.s, "apply_patch", map[string]any{"repo_id": a.peer, "request_id": "dl-patch-" + a.name, "wait_ms": 30000,
				"operations": []map[string]any{{"op": "create", "path": "from-" + a.name + ".txt", "content": "x\n"}}}, &te)
			o := outcome{a: a, in: time.Since(start)}
			if isErr {
				o.code, o.msg = te.Error.Code, te.Error.Message
			}
			done <- o
		}()
	}
	o := <-done
	if o.code != "DEADLOCK" || o.in > 10*time.Second {
		t.Fatalf("%s's patch: %q (%s) after %s, want DEADLOCK at once", o.a.name, o.code, o.msg, o.in)
	}
	for _, a := range agents {
		if !strings.Contains(o.msg, a.run) {
			t.Fatalf("DEADLOCK message %q does not name run %s", o.msg, a.run)
		}
	}
	callTool(t, o.a.s, "job_cancel", map[string]any{"job_id": o.a.job}, nil)
	o2 := <-done
	if o2.code != "" {
		t.Fatalf("the surviving patch: %s %s", o2.code, o2.msg)
	}
}

// callToolNoFatal is callTool for other goroutines: a transport failure is
// reported as a tool error with code TRANSPORT.
func callToolNoFatal(s *mcp.ClientSession, name string, args map[string]any, out *toolError) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		out.Error.Code, out.Error.Message = "TRANSPORT", err.Error()
		return true
	}
	if b, err := json.Marshal(res.StructuredContent); err == nil {
		_ = json.Unmarshal(b, out)
	}
	return res.IsError
}
