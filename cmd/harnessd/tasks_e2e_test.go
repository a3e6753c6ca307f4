package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// tasksMeta declares the MCP Tasks extension on a request, as a
// 2026-07-28 client does.
const tasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

type e2eTask struct {
	ResultType     string `json:"resultType"`
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage"`
	PollIntervalMs int64  `json:"pollIntervalMs"`
	Result         *struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			State   string `json:"state"`
			Attempt int    `json:"attempt"`
			Stdout  struct {
				Text string `json:"text"`
			} `json:"stdout"`
		} `json:"structuredContent"`
	} `json:"result"`
}

// initRaw opens an MCP session over `harnessd mcp` with raw frames.
func initRaw(t *testing.T, dataDir string) *rawMCP {
	t.Helper()
	c := startRawMCP(t, dataDir)
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tasks-e2e","version":"v0"}}}`)
	if m := c.await(`"init"`)[`"init"`]; m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func rawTask(t *testing.T, c *rawMCP, id int, method, params string) e2eTask {
	t.Helper()
	n := strconv.Itoa(id)
	c.send(`{"jsonrpc":"2.0","id":` + n + `,"method":"` + method + `","params":` + params + `}`)
	m := c.await(n)[n]
	var w e2eTask
	if m.Error != nil || json.Unmarshal(m.Result, &w) != nil {
		t.Fatalf("%s: %+v %s", method, m.Error, m.Result)
	}
	return w
}

// A task followed to its result across kill -9 of the daemon: job_start
// answers a task (the extension declared), the daemon is killed while the
// job runs, and after a restart tasks/get of the same taskId, over a new
// session, follows the job (re-run by its retry policy) to completed with
// its output. The client polls as pollIntervalMs says, within a deadline.
func TestTaskSurvivesKill9(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"README.md": "tasks\n"})
	d := startDaemon(t, dataDir)
	api := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer api.Close()
	var reg repoResult
	jobCall(t, api, "repository_register", map[string]any{"path": repo}, &reg)

	c := initRaw(t, dataDir)
	args, _ := json.Marshal(map[string]any{"repo_id": reg.RepoID, "argv": []string{"sh", "-c", "sleep 3 && echo done"},
		"request_id": "task-kill9", "retry": map[string]any{"max": 1}})
	w := rawTask(t, c, 1, "tools/call", `{"name":"job_start","arguments":`+string(args)+`,`+tasksMeta+`}`)
	if w.ResultType != "task" || !strings.HasPrefix(w.TaskID, "job_") || w.Status != "working" {
		t.Fatalf("job_start: got %+v, want a working task", w)
	}
	eventually(t, "the job to run", func() bool { return jobState(t, api, w.TaskID).Pid > 0 })

	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.done
	api.Close()

	startDaemon(t, dataDir)
	c2 := initRaw(t, dataDir)
	deadline := time.Now().Add(60 * time.Second)
	for i := 1; ; i++ {
		got := rawTask(t, c2, i, "tasks/get", `{"taskId":"`+w.TaskID+`",`+tasksMeta+`}`)
		if got.TaskID != w.TaskID || got.ResultType != "complete" {
			t.Fatalf("tasks/get: %+v", got)
		}
		if got.Status != "working" {
			r := got.Result
			if got.Status != "completed" || r == nil || r.IsError || r.StructuredContent.State != "succeeded" ||
				r.StructuredContent.Attempt != 2 || strings.TrimSpace(r.StructuredContent.Stdout.Text) != "done" {
				t.Fatalf("got %s (%s) %+v, want completed by attempt 2 with the output done", got.Status, got.StatusMessage, r)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still working after 60 s: %s", w.TaskID, got.StatusMessage)
		}
		if got.PollIntervalMs <= 0 || got.PollIntervalMs > 5000 {
			t.Fatalf("pollIntervalMs %d", got.PollIntervalMs)
		}
		time.Sleep(time.Duration(got.PollIntervalMs) * time.Millisecond) // the server's hint, within the deadline
	}
}
