package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// extMeta declares the Tasks extension in a request's _meta, as a
// 2026-07-28 client does on every request.
const extMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// wireTask is a task as the client reads it.
type wireTask struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Task           *wireTask       `json:"task"` // 2025-11-25 CreateTaskResult
}

type taskClient struct {
	*rawClient
	n int
}

// rpc sends method with params and returns its answer.
func (c *taskClient) rpc(method, params string) wireMsg {
	c.t.Helper()
	c.n++
	id := strconv.Itoa(c.n)
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	return c.await(id)[id]
}

func (c *taskClient) task(method, params string) wireTask {
	c.t.Helper()
	m := c.rpc(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s %s: error %d %s", method, params, m.Error.Code, m.Error.Message)
	}
	var w wireTask
	if err := json.Unmarshal(m.Result, &w); err != nil {
		c.t.Fatalf("%s: %s: %v", method, m.Result, err)
	}
	return w
}

// follow polls tasks/get, honouring pollIntervalMs, until the task ends
// or 30 s passed.
func (c *taskClient) follow(id string) wireTask {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w := c.task("tasks/get", `{"taskId":"`+id+`",`+extMeta+`}`)
		if w.ResultType != "complete" || w.TaskID != id {
			c.t.Fatalf("tasks/get: resultType %q, taskId %q; want complete, %s", w.ResultType, w.TaskID, id)
		}
		if w.Status != "working" {
			return w
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s still working after 30 s: %s", id, w.StatusMessage)
		}
		if w.PollIntervalMs <= 0 || w.PollIntervalMs > 5000 {
			c.t.Fatalf("pollIntervalMs %d", w.PollIntervalMs)
		}
		time.Sleep(time.Duration(w.PollIntervalMs) * time.Millisecond) // the server's own hint, bounded by the deadline
	}
}

// Over the stdio transport (raw frames): a client that declares the
// extension gets a task for job_start and follows it to the job's output;
// one that does not gets job_start's own result; tasks/cancel cancels the
// job; an unknown task, a request without the extension and tasks/update
// get the spec's errors; the 2025-11-25 form (params.task, tasks/result)
// works too.
func TestTasksOverTheStreamTransport(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"README.md": "tasks\n"})
	ex := mcpserver.Local(h)
	c := &taskClient{rawClient: serveRaw(t, mcpserver.New(ex, "test"), mcpserver.StreamTransport{Tasks: mcpserver.NewTasks(ex)}, false)}

	// Registered through the backend: repository_register is in a set
	// this session has not enabled.
	out, err := ex.Exec(context.Background(), "repository_register", json.RawMessage(`{"path":"`+root+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var reg struct {
		RepoID string `json:"repo_id"`
	}
	if err := json.Unmarshal(b, &reg); err != nil || reg.RepoID == "" {
		t.Fatalf("register: %s %v", b, err)
	}
	repo := reg.RepoID
	start := func(req, script, meta string) wireMsg {
		return c.rpc("tools/call", `{"name":"job_start","arguments":{"repo_id":"`+repo+`","argv":["sh","-c","`+script+`"],"request_id":"`+req+`"}`+meta+`}`)
	}

	// With the extension: a task, followed to completed with the output.
	var w wireTask
	if m := start("done", "sleep 1; echo done", ","+extMeta); m.Error != nil || json.Unmarshal(m.Result, &w) != nil {
		t.Fatalf("job_start as a task: %+v %s", m.Error, m.Result)
	}
	if w.ResultType != "task" || !strings.HasPrefix(w.TaskID, "job_") || w.Status != "working" || w.TTLMs != nil || w.CreatedAt == "" {
		t.Fatalf("got %+v, want a working task named by its job", w)
	}
	end := c.follow(w.TaskID)
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			State  string `json:"state"`
			Stdout struct {
				Text string `json:"text"`
			} `json:"stdout"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(end.Result, &res); err != nil {
		t.Fatalf("result %s: %v", end.Result, err)
	}
	if end.Status != "completed" || res.IsError || res.StructuredContent.State != "succeeded" || strings.TrimSpace(res.StructuredContent.Stdout.Text) != "done" {
		t.Fatalf("got %s %s, want completed with the job's output", end.Status, end.Result)
	}

	// Without it: job_start's own result.
	var plain struct {
		ResultType        string `json:"resultType"`
		StructuredContent struct {
			JobID string `json:"job_id"`
		} `json:"structuredContent"`
	}
	if m := start("plain", "echo plain", ""); m.Error != nil || json.Unmarshal(m.Result, &plain) != nil {
		t.Fatalf("plain job_start: %+v", m.Error)
	}
	if plain.ResultType == "task" || !strings.HasPrefix(plain.StructuredContent.JobID, "job_") {
		t.Fatalf("a client without the extension got %+v", plain)
	}

	// tasks/cancel: an acknowledgement, then the task is cancelled.
	if m := start("long", "sleep 30", ","+extMeta); m.Error != nil || json.Unmarshal(m.Result, &w) != nil || w.ResultType != "task" {
		t.Fatalf("job_start long: %+v %s", m.Error, m.Result)
	}
	if ack := c.task("tasks/cancel", `{"taskId":"`+w.TaskID+`",`+extMeta+`}`); ack.ResultType != "complete" {
		t.Fatalf("tasks/cancel: %+v", ack)
	}
	if got := c.follow(w.TaskID); got.Status != "cancelled" || len(got.Result) != 0 {
		t.Fatalf("after tasks/cancel: %+v", got)
	}

	// The errors.
	for _, tt := range []struct {
		method, params string
		code           int64
		say            string
	}{
		{"tasks/get", `{"taskId":"job_0000nothere",` + extMeta + `}`, -32602, "Task not found"},
		{"tasks/get", `{"taskId":"not-a-job",` + extMeta + `}`, -32602, "Task not found"},
		{"tasks/get", `{` + extMeta + `}`, -32602, "params.taskId"},
		{"tasks/get", `{"taskId":"` + w.TaskID + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, -32021, "Missing required client capability"},
		{"tasks/update", `{"taskId":"` + w.TaskID + `","inputResponses":{"harnessd_approval":{"action":"accept","content":{"approve":true}}},` + extMeta + `}`, -32602, "decided by a person"},
		{"tasks/list", `{` + extMeta + `}`, -32601, "not part of"},
	} {
		m := c.rpc(tt.method, tt.params)
		if m.Error == nil || m.Error.Code != tt.code || !strings.Contains(m.Error.Message, tt.say) {
			t.Errorf("%s %s: got %+v %s, want %d (%s)", tt.method, tt.params, m.Error, m.Result, tt.code, tt.say)
		}
	}

	// 2025-11-25: params.task, tasks/result, tasks/list, tasks/cancel of an ended task.
	var created wireTask
	if m := c.rpc("tools/call", `{"name":"job_start","arguments":{"repo_id":"`+repo+`","argv":["sh","-c","echo legacy"],"request_id":"legacy"},"task":{"ttl":60000}}`); m.Error != nil || json.Unmarshal(m.Result, &created) != nil || created.Task == nil {
		t.Fatalf("params.task: %+v %s", m.Error, m.Result)
	}
	id := created.Task.TaskID
	var result struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Stdout struct {
				Text string `json:"text"`
			} `json:"stdout"`
		} `json:"structuredContent"`
		Meta map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	if m := c.rpc("tasks/result", `{"taskId":"`+id+`"}`); m.Error != nil || json.Unmarshal(m.Result, &result) != nil {
		t.Fatalf("tasks/result: %+v %s", m.Error, m.Result)
	}
	if result.IsError || strings.TrimSpace(result.StructuredContent.Stdout.Text) != "legacy" || result.Meta["io.modelcontextprotocol/related-task"].TaskID != id {
		t.Fatalf("tasks/result: %+v", result)
	}
	var list struct {
		Tasks []struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"tasks"`
	}
	if m := c.rpc("tasks/list", `{}`); m.Error != nil || json.Unmarshal(m.Result, &list) != nil {
		t.Fatalf("tasks/list: %+v", m.Error)
	}
	statuses := map[string]string{}
	for _, l := range list.Tasks {
		statuses[l.TaskID] = l.Status
	}
	if statuses[id] != "completed" || statuses[w.TaskID] != "cancelled" || len(statuses) != 4 {
		t.Fatalf("tasks/list: %v", statuses)
	}
	if m := c.rpc("tasks/cancel", `{"taskId":"`+id+`"}`); m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, "terminal status 'completed'") {
		t.Fatalf("tasks/cancel of a completed 2025 task: %+v", m.Error)
	}
}

// Over streamable HTTP (stateless, 2026-07-28): WithTasks turns
// job_start's answer into a task and answers tasks/get itself.
func TestTasksOverHTTP(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"README.md": "tasks\n"})
	ex := mcpserver.Local(h)
	srv := mcpserver.New(ex, "test")
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(mcpserver.WithTasks(inner, mcpserver.NewTasks(ex)))
	defer ts.Close()
	out, err := ex.Exec(context.Background(), "repository_register", json.RawMessage(`{"path":"`+root+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var reg struct {
		RepoID string `json:"repo_id"`
	}
	_ = json.Unmarshal(b, &reg)
	post := func(method, name, params string) wireMsg {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+params+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/event-stream") {
			for _, line := range strings.Split(string(body), "\n") {
				if d, ok := strings.CutPrefix(line, "data:"); ok && strings.Contains(d, `"id":7`) {
					body = []byte(strings.TrimSpace(d))
				}
			}
		}
		var m wireMsg
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: %d %s: %v", method, resp.StatusCode, body, err)
		}
		return m
	}
	m := post("tools/call", "job_start", `{"name":"job_start","arguments":{"repo_id":"`+reg.RepoID+`","argv":["sh","-c","echo http"],"request_id":"http"},`+extMeta+`}`)
	var w wireTask
	if m.Error != nil || json.Unmarshal(m.Result, &w) != nil || w.ResultType != "task" || !strings.HasPrefix(w.TaskID, "job_") {
		t.Fatalf("job_start over HTTP: %+v %s", m.Error, m.Result)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		m = post("tasks/get", w.TaskID, `{"taskId":"`+w.TaskID+`",`+extMeta+`}`)
		var got wireTask
		if m.Error != nil || json.Unmarshal(m.Result, &got) != nil {
			t.Fatalf("tasks/get over HTTP: %+v %s", m.Error, m.Result)
		}
		if got.Status == "completed" {
			if !strings.Contains(string(got.Result), `"text":"http\n"`) {
				t.Fatalf("result %s", got.Result)
			}
			return
		}
		if got.Status != "working" || time.Now().After(deadline) {
			t.Fatalf("got %+v", got)
		}
		time.Sleep(time.Duration(got.PollIntervalMs) * time.Millisecond) // the server's hint, within the deadline
	}
}

// A task acts with its session's role: a reader may follow a job's task
// but not cancel it (job_cancel is an editor's), and the job runs on.
func TestTasksActWithTheSessionsRole(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"README.md": "tasks\n"})
	ex := mcpserver.Local(h)
	reader := mcpserver.Options{Role: op.Reader}
	c := &taskClient{rawClient: serveRaw(t, mcpserver.New(ex, "test", reader), mcpserver.StreamTransport{Tasks: mcpserver.NewTasks(ex), Role: reader.RoleName()}, false)}
	ctx := context.Background()
	out, err := ex.Exec(ctx, "repository_register", json.RawMessage(`{"path":"`+root+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var reg struct {
		RepoID string `json:"repo_id"`
	}
	if err := json.Unmarshal(b, &reg); err != nil {
		t.Fatal(err)
	}
	out, err = ex.Exec(ctx, "job_start", json.RawMessage(`{"repo_id":"`+reg.RepoID+`","argv":["sh","-c","sleep 1; echo done"],"request_id":"r1"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(out)
	var job struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(b, &job); err != nil || job.JobID == "" {
		t.Fatalf("job_start: %s %v", b, err)
	}
	m := c.rpc("tasks/cancel", `{"taskId":"`+job.JobID+`",`+extMeta+`}`)
	t.Logf("a reader's tasks/cancel: %+v", m.Error)
	if m.Error == nil || !strings.HasPrefix(m.Error.Message, "ROLE_DENIED") {
		t.Fatalf("a reader's tasks/cancel = %+v %s, want ROLE_DENIED", m.Error, m.Result)
	}
	if end := c.follow(job.JobID); end.Status != "completed" {
		t.Fatalf("the job after a refused cancel: %+v, want completed", end)
	}
}
