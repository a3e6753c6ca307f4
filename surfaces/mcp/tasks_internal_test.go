package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Every job state maps onto the task status of both revisions; a state
// the mapping does not know maps onto nothing (tasks/get answers an
// internal error rather than guess).
func TestTaskStatusOfJobStates(t *testing.T) {
	tests := []struct {
		state, ext, legacy string
	}{
		{"queued", TaskWorking, TaskWorking},
		{"running", TaskWorking, TaskWorking},
		{"succeeded", TaskCompleted, TaskCompleted},
		{"failed", TaskCompleted, TaskFailed},
		{"timed_out", TaskCompleted, TaskFailed},
		{"interrupted", TaskCompleted, TaskFailed},
		{"cancelled", TaskCancelled, TaskCancelled},
		{"paused", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := TaskStatusOf(tt.state); got != tt.ext {
			t.Errorf("TaskStatusOf(%q) = %q, want %q", tt.state, got, tt.ext)
		}
		if got := legacyStatusOf(tt.state); got != tt.legacy {
			t.Errorf("legacyStatusOf(%q) = %q, want %q", tt.state, got, tt.legacy)
		}
	}
}

func TestPollIntervalGrowsWithTheJob(t *testing.T) {
	created := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	j := jobView{JobID: "job_x", State: "running", CreatedAt: created}
	for _, tt := range []struct {
		after time.Duration
		want  time.Duration
	}{{0, pollMin}, {time.Second, pollMin}, {20 * time.Second, 2 * time.Second}, {time.Hour, pollMax}} {
		if got := pollInterval(j, created.Add(tt.after)); got != tt.want {
			t.Errorf("after %v: poll %v, want %v", tt.after, got, tt.want)
		}
	}
}

// The two revisions' task shapes: ttlMs null and pollIntervalMs (the
// extension), ttl null and pollInterval (2025-11-25), never both.
func TestTaskShapes(t *testing.T) {
	created := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	started := created.Add(time.Second)
	j := jobView{JobID: "job_abc", State: "running", Argv: []string{"go", "test", "./..."}, CreatedAt: created, StartedAt: &started}
	for _, tt := range []struct {
		legacy     bool
		want, nots []string
	}{
		{false, []string{`"ttlMs":null`, `"pollIntervalMs":500`, `"status":"working"`, `"taskId":"job_abc"`, `"lastUpdatedAt":"2026-07-28T10:00:01Z"`}, []string{`"ttl"`, `"pollInterval"`}},
		{true, []string{`"ttl":null`, `"pollInterval":500`, `"status":"working"`, `"createdAt":"2026-07-28T10:00:00Z"`}, []string{`"ttlMs"`, `"pollIntervalMs"`, `"resultType"`}},
	} {
		b, err := json.Marshal(taskOf(j, created, tt.legacy))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("legacy %v: %s is not JSON: %v", tt.legacy, b, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("legacy %v: %s lacks %s", tt.legacy, b, w)
			}
		}
		for _, n := range tt.nots {
			if strings.Contains(string(b), n) {
				t.Errorf("legacy %v: %s has %s", tt.legacy, b, n)
			}
		}
	}
}

// A job that did not succeed is a tool error (isError, with the code in
// structuredContent.error.code), not a JSON-RPC error; the job's own error
// wins over the generic code.
func TestFinalResultOfJobs(t *testing.T) {
	exit := 2
	tests := []struct {
		name    string
		raw     string
		isError bool
		code    string
	}{
		{"succeeded", `{"job_id":"job_a","state":"succeeded","exit_code":0}`, false, ""},
		{"failed", `{"job_id":"job_a","state":"failed","exit_code":2}`, true, "JOB_FAILED"},
		{"timed out", `{"job_id":"job_a","state":"timed_out"}`, true, "TIMEOUT"},
		{"cancelled", `{"job_id":"job_a","state":"cancelled"}`, true, "CANCELLED"},
		{"interrupted keeps its own", `{"job_id":"job_a","state":"interrupted","error":{"code":"UNAVAILABLE","message":"harnessd restarted"}}`, true, "UNAVAILABLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := viewOf(json.RawMessage(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			j.ExitCode = &exit
			res, err := finalResult(j, json.RawMessage(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError {
				t.Fatalf("isError %v, want %v", res.IsError, tt.isError)
			}
			var s struct {
				JobID string `json:"job_id"`
				Error *struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(res.StructuredContent.(json.RawMessage), &s); err != nil {
				t.Fatal(err)
			}
			if s.JobID != "job_a" {
				t.Errorf("structured content lost the job: %+v", s)
			}
			if got := ""; s.Error != nil {
				got = s.Error.Code
				if got != tt.code {
					t.Errorf("error code %q, want %q", got, tt.code)
				}
			} else if tt.code != "" {
				t.Errorf("no error, want %s", tt.code)
			}
		})
	}
}

// Which calls speak of tasks, and how.
func TestCallDialect(t *testing.T) {
	ext := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	tests := []struct {
		name   string
		params string
		peer   peer
		want   dialect
	}{
		{"the extension in the request", `{"name":"job_start",` + ext + `}`, peer{}, extTasks},
		{"2026 without the extension", `{"name":"job_start","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, peer{}, noTasks},
		{"2026 asking the 2025 way", `{"name":"job_start","task":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, peer{}, noTasks},
		{"2025 params.task", `{"name":"job_start","task":{"ttl":60000}}`, peer{protocol: "2025-11-25"}, legacyTasks},
		{"2025 without params.task", `{"name":"job_start"}`, peer{protocol: "2025-11-25"}, noTasks},
		{"the extension at initialize", `{"name":"job_start"}`, peer{protocol: "2025-11-25", ext: true}, extTasks},
		{"per-request meta overrides initialize", `{"name":"job_start","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, peer{ext: true}, noTasks},
	}
	for _, tt := range tests {
		var p taskParams
		if err := json.Unmarshal([]byte(tt.params), &p); err != nil {
			t.Fatal(err)
		}
		if got := callDialect(&p, tt.peer); got != tt.want {
			t.Errorf("%s: dialect %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestJobOfCall(t *testing.T) {
	tests := []struct {
		tool, structured, want string
	}{
		{"job_start", `{"job_id":"job_1","state":"queued"}`, "job_1"},
		{"run_check", `{"identity":"x","escalated":{"job_id":"job_2","reason":"the Fast Path cap"}}`, "job_2"},
		{"run_check", `{"identity":"x","original_run":{"job_id":"job_3"}}`, ""},
		{"job_status", `{"job_id":"job_4","state":"running"}`, ""},
		{"job_start", `not json`, ""},
	}
	for _, tt := range tests {
		if got := jobOfCall(tt.tool, json.RawMessage(tt.structured)); got != tt.want {
			t.Errorf("jobOfCall(%s, %s) = %q, want %q", tt.tool, tt.structured, got, tt.want)
		}
	}
}

func TestWithCapabilities(t *testing.T) {
	in := json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"extensions":{"x/y":{}}},"serverInfo":{"name":"h"}}`)
	var out struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools      map[string]any `json:"tools"`
			Extensions map[string]any `json:"extensions"`
			Tasks      *struct {
				Requests struct {
					Tools struct {
						Call map[string]any `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(withCapabilities(in, true), &out); err != nil {
		t.Fatal(err)
	}
	c := out.Capabilities
	if out.ProtocolVersion != "2025-11-25" || c.Tools == nil || c.Extensions["x/y"] == nil || c.Extensions[TasksExtension] == nil || c.Tasks == nil || c.Tasks.Requests.Tools.Call == nil {
		t.Fatalf("got %+v", out)
	}
	out.Capabilities.Tasks = nil
	if err := json.Unmarshal(withCapabilities(in, false), &out); err != nil {
		t.Fatal(err)
	}
	if out.Capabilities.Tasks != nil || out.Capabilities.Extensions[TasksExtension] == nil {
		t.Fatalf("2026: got %+v", out.Capabilities)
	}
}

// Only what can concern tasks is decoded by WithTasks and the stream
// transport; a plain call passes on untouched.
func TestMayConcernTasks(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"job_1"}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, true},
		{`{"name":"job_start","arguments":{},"task":{"ttl":1000}}`, true},
		{`{"name":"job_start","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}`, true},
		{`{"name":"read_file","arguments":{"repo_id":"r","path":"README.md"}}`, false},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, false},
	} {
		if got := mayConcernTasks([]byte(c.body)); got != c.want {
			t.Errorf("mayConcernTasks(%s) = %v, want %v", c.body, got, c.want)
		}
	}
}
