package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// nodeTaskStart is what task.mjs prints in its start phase.
type nodeTaskStart struct {
	TaskID    string          `json:"task_id"`
	Reference json.RawMessage `json:"reference"`
}

// nodeTaskFollow is what task.mjs prints in its follow phase: the task's
// terminal outcome as ext-tasks settled it.
type nodeTaskFollow struct {
	TaskID   string   `json:"task_id"`
	Status   string   `json:"status"`
	Observed []string `json:"observed"`
	Result   *struct {
		ResultType        string `json:"resultType"`
		IsError           bool   `json:"isError"`
		StructuredContent struct {
			JobID   string `json:"job_id"`
			State   string `json:"state"`
			Attempt int    `json:"attempt"`
			Stdout  struct {
				Text string `json:"text"`
			} `json:"stdout"`
		} `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Message string          `json:"message"`
		Code    *int            `json:"code"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// runNodeTask runs task.mjs (in dir) with env added to the test's
// environment and decodes the JSON line it prints into out.
func runNodeTask(t *testing.T, dir string, env []string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "task.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node task.mjs %v: %v\n%s", env, err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node task.mjs printed %q: %v\n%s", stdout, err, stderr.String())
	}
}

// The official TypeScript client with the official Tasks extension package
// (@modelcontextprotocol/client 2.x and @modelcontextprotocol/ext-tasks,
// pinned to 2026-07-28), over stdio and streamable HTTP, follows a job as
// an MCP task across kill -9 of the daemon: one process calls job_start
// (ext-tasks declares the extension; the task is required, not merely
// allowed) and hands the task off as ext-tasks' serialized reference; the
// daemon is killed while the job runs and restarted on the same data dir
// (and, for HTTP, the same address); a second process resumes the task
// from that reference and lets ext-tasks poll it to its end: completed,
// by the job's second attempt (retry.max re-ran it), with its output.
func TestNodeTaskSurvivesKill9(t *testing.T) {
	dir := nodeClientDir(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			dataDir := t.TempDir()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			d := startDaemon(t, dataDir, "--listen", addr)
			repoID := registerRepo(t, dataDir)
			env := func(phase string) []string {
				token, err := daemon.ReadToken(daemon.PathsOf(dataDir))
				if err != nil {
					t.Fatal(err)
				}
				return []string{
					"HARNESSD_MCP_TRANSPORT=" + transport,
					"HARNESSD_BIN=" + harnessdBin,
					"HARNESSD_DATA_DIR=" + dataDir,
					"HARNESSD_MCP_URL=http://" + addr + "/mcp",
					"HARNESSD_TOKEN=" + token,
					"HARNESSD_REPO_ID=" + repoID,
					"HARNESSD_PROTOCOL=" + pin20260728,
					"HARNESSD_TASK_PHASE=" + phase,
				}
			}

			var started nodeTaskStart
			runNodeTask(t, dir, env("start"), &started)
			if !strings.HasPrefix(started.TaskID, "job_") || len(started.Reference) == 0 {
				t.Fatalf("start: task %q, reference %s; want a job's task and its reference", started.TaskID, started.Reference)
			}
			api := client.Unix(daemon.PathsOf(dataDir).Socket)
			eventually(t, "the job to run", func() bool { return jobState(t, api, started.TaskID).Pid > 0 })
			api.Close()

			if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-d.done
			startDaemon(t, dataDir, "--listen", addr)

			var followed nodeTaskFollow
			runNodeTask(t, dir, append(env("follow"), "HARNESSD_TASK_REF="+string(started.Reference)), &followed)
			t.Logf("over %s ext-tasks observed %v", transport, followed.Observed)
			if followed.TaskID != started.TaskID || followed.Status != "completed" || followed.Result == nil {
				t.Fatalf("follow: task %s %s (error %+v), want %s completed with a result", followed.TaskID, followed.Status, followed.Error, started.TaskID)
			}
			r := followed.Result
			if r.ResultType != "complete" || r.IsError || r.StructuredContent.JobID != started.TaskID || r.StructuredContent.State != "succeeded" ||
				r.StructuredContent.Attempt != 2 || strings.TrimSpace(r.StructuredContent.Stdout.Text) != "done" {
				t.Fatalf("follow: result %+v, want the job succeeded by attempt 2 with the output done", *r)
			}
			if !slices.Contains(followed.Observed, "completed") {
				t.Errorf("ext-tasks observed %v, want the task completed among them", followed.Observed)
			}
		})
	}
}
