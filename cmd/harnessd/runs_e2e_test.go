package main

import (
	"encoding/hex"
	"strings"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/harnessd/harnessd/internal/telemetry"
	"github.com/harnessd/harnessd/internal/telemetry/otlptest"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

type runResult struct {
	messages.RunState
	Spans []messages.RunSpan `json:"spans"`
}

// A run started through MCP survives kill -9 of the daemon: after the
// restart it is active, detached from its gone session, and a new session
// resumes it with its stored spans (the mutation) and its stages.
func TestRunSurvivesKill9AndResumes(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"a.txt": "one\n"})
	d := startDaemon(t, dataDir)
	s := mcpSession(t, dataDir)
	var r repoResult
	if callTool(t, s, "repository_register", map[string]any{"path": repo}, &r) {
		t.Fatal("register failed")
	}
	var run runResult
	if callTool(t, s, "run_start", map[string]any{"goal": "edit a.txt", "workflow_class": "feature", "repo_id": r.RepoID,
		"budget": map[string]any{"mutations": 5}}, &run) || run.RunID == "" {
		t.Fatalf("run_start: %+v", run)
	}
	// Without run_id the session's calls join the run it started.
	if callTool(t, s, "apply_patch", map[string]any{"repo_id": r.RepoID, "request_id": "e2e-run-1",
		"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "one", "new_text": "two"}}}, nil) {
		t.Fatal("apply_patch failed")
	}
	if callTool(t, s, "run_stage", map[string]any{"run_id": run.RunID, "stage": "edit", "status": "completed"}, nil) {
		t.Fatal("run_stage failed")
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.wait(t, 10*time.Second)
	startDaemon(t, dataDir)

	s2 := mcpSession(t, dataDir)
	var st runResult
	if callTool(t, s2, "run_status", map[string]any{"run_id": run.RunID, "include_spans": true}, &st) {
		t.Fatalf("run_status after restart: %+v", st)
	}
	if st.Status != messages.RunActive || st.DetachedAt.IsZero() || len(st.CompletedStages) != 1 || st.Counters.Mutations != 1 {
		t.Fatalf("after kill -9: %+v", st.RunState)
	}
	if len(st.Spans) != 1 || st.Spans[0].Op != "apply_patch" || st.Spans[0].ReceiptID == "" {
		t.Fatalf("stored spans after kill -9: %+v", st.Spans)
	}
	var resumed runResult
	if callTool(t, s2, "run_resume", map[string]any{"run_id": run.RunID}, &resumed) || !resumed.DetachedAt.IsZero() {
		t.Fatalf("run_resume: %+v", resumed.RunState)
	}
	if callTool(t, s2, "read_file", map[string]any{"repo_id": r.RepoID, "path": "a.txt"}, nil) {
		t.Fatal("read_file failed")
	}
	var after runResult
	callTool(t, s2, "run_status", map[string]any{"include_spans": true}, &after)
	if after.RunID != run.RunID || len(after.Spans) != 2 || after.Spans[1].Op != "read_file" {
		t.Fatalf("the resumed session's calls: run %s spans %+v", after.RunID, after.Spans)
	}
}

// With --otlp-endpoint the daemon exports each call of a run as a span to
// an OTLP/HTTP collector: names, parents and the GenAI/MCP attributes.
func TestRunSpansExportedOverOTLP(t *testing.T) {
	rcv := otlptest.New(t)
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"a.txt": "hello\n"})
	startDaemon(t, dataDir, "--otlp-endpoint", rcv.URL())
	s := mcpSession(t, dataDir)
	var r repoResult
	callTool(t, s, "repository_register", map[string]any{"path": repo}, &r)
	var run runResult
	callTool(t, s, "run_start", map[string]any{"goal": "otlp"}, &run)
	callTool(t, s, "batch", map[string]any{"repo_id": r.RepoID, "steps": []map[string]any{
		{"kind": "read_file", "args": map[string]any{"path": "a.txt"}},
		{"kind": "git_status", "args": map[string]any{}},
	}}, nil)
	callTool(t, s, "run_end", map[string]any{"run_id": run.RunID, "reason": "done"}, nil)

	// batch, its two steps and the run's root span.
	want := map[string]*tracepb.Span{}
	deadline := time.After(30 * time.Second)
	for len(want) < 4 {
		select {
		case sp := <-rcv.Spans():
			if hex.EncodeToString(sp.TraceId) == hex.EncodeToString(traceOf(run.RunID)) {
				want[sp.Name] = sp
			}
		case <-deadline:
			t.Fatalf("got spans %v", keys(want))
		}
	}
	root, batch := want[telemetry.RootSpanName], want["tools/call batch"]
	read, status := want["tools/call read_file"], want["tools/call git_status"]
	if root == nil || batch == nil || read == nil || status == nil {
		t.Fatalf("span names: %v", keys(want))
	}
	if string(batch.ParentSpanId) != string(root.SpanId) || string(read.ParentSpanId) != string(batch.SpanId) || string(status.ParentSpanId) != string(batch.SpanId) {
		t.Fatal("parents: the batch is not under the run, or its steps not under the batch")
	}
	attrs := map[string]string{}
	for _, kv := range read.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["gen_ai.tool.name"] != "read_file" || attrs["mcp.method.name"] != "tools/call" || !strings.HasPrefix(attrs["mcp.session.id"], "mcp-") || attrs["harnessd.run_id"] != run.RunID {
		t.Fatalf("attributes: %v", attrs)
	}
}

func traceOf(runID string) []byte {
	id := telemetry.TraceID(runID)
	return id[:]
}

func keys(m map[string]*tracepb.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
