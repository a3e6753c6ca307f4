package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

type e2eJob struct {
	JobID   string `json:"job_id"`
	State   string `json:"state"`
	Attempt int    `json:"attempt"`
	Pid     int    `json:"pid"`
}

func jobCall(t *testing.T, c *client.Client, op string, args map[string]any, out any) {
	t.Helper()
	raw, err := c.Call(context.Background(), op, args)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: decode: %v", op, err)
		}
	}
}

func jobState(t *testing.T, c *client.Client, id string) e2eJob {
	t.Helper()
	var j e2eJob
	jobCall(t, c, "job_status", map[string]any{"job_id": id}, &j)
	return j
}

// alive reports whether pid runs (zombies count as gone).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// eventually polls cond (a subprocess's state) until it holds or 20 s passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling a subprocess, not an actor
	}
}

// Jobs survive kill -9 of the daemon: a running job is interrupted and its
// whole process tree (including a grandchild that ignores SIGTERM and
// outlives the daemon) is killed at boot; a job with retry.max 1 runs again
// as attempt 2; nothing is left running without a live process.
func TestJobsSurviveKill9(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{
		"README.md": "jobs\n",
		// The job runs in a pid namespace: the grandchild is found by a
		// marker on its command line, not by the pid it sees.
		"ignore_term.sh": "trap '' TERM\nm=0.$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')\nsleep 300 $m &\necho \"grandchild $m\"\nwait\n",
	})
	d := startDaemon(t, dataDir)
	c := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c.Close()
	var reg repoResult
	jobCall(t, c, "repository_register", map[string]any{"path": repo}, &reg)

	var plain, retried e2eJob
	jobCall(t, c, "job_start", map[string]any{"repo_id": reg.RepoID, "argv": []string{"sh", "ignore_term.sh"}, "request_id": "plain"}, &plain)
	jobCall(t, c, "job_start", map[string]any{"repo_id": reg.RepoID, "argv": []string{"sleep", "300"}, "request_id": "retried", "retry": map[string]any{"max": 1}}, &retried)
	var grandchild int
	eventually(t, "both jobs running and the grandchild pid logged", func() bool {
		plain, retried = jobState(t, c, plain.JobID), jobState(t, c, retried.JobID)
		var logs struct {
			Data string `json:"data"`
		}
		jobCall(t, c, "job_logs", map[string]any{"job_id": plain.JobID}, &logs)
		if m, ok := strings.CutPrefix(strings.TrimSpace(logs.Data), "grandchild "); ok && m != "" {
			grandchild = testutil.PidByCmdline("sleep\x00300\x00" + m + "\x00")
		}
		return plain.Pid > 0 && retried.Pid > 0 && grandchild > 0
	})
	if !alive(grandchild) || !alive(plain.Pid) || !alive(retried.Pid) {
		t.Fatalf("processes not running before the kill: grandchild %d, jobs %d, %d", grandchild, plain.Pid, retried.Pid)
	}

	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.done
	c.Close()

	startDaemon(t, dataDir)
	c2 := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c2.Close()
	p := jobState(t, c2, plain.JobID)
	if p.State != "interrupted" {
		t.Fatalf("got plain job %s, want interrupted", p.State)
	}
	eventually(t, "the interrupted job's process tree to be gone", func() bool {
		return !alive(grandchild) && !alive(plain.Pid)
	})
	var r e2eJob
	eventually(t, "the retried job to run as attempt 2", func() bool {
		r = jobState(t, c2, retried.JobID)
		return r.State == "running" && r.Attempt == 2 && r.Pid > 0
	})
	if r.Pid == retried.Pid || !alive(r.Pid) || alive(retried.Pid) {
		t.Fatalf("got attempt 2 pid %d (alive %v), first attempt pid %d (alive %v); want a new live process and the old one gone",
			r.Pid, alive(r.Pid), retried.Pid, alive(retried.Pid))
	}
	var list struct {
		Jobs []e2eJob `json:"jobs"`
	}
	jobCall(t, c2, "job_list", map[string]any{"state": "running"}, &list)
	for _, j := range list.Jobs {
		if !alive(j.Pid) {
			t.Errorf("job %s is running without a live process (pid %d)", j.JobID, j.Pid)
		}
	}
	var cancelled e2eJob
	jobCall(t, c2, "job_cancel", map[string]any{"job_id": retried.JobID}, &cancelled)
	if cancelled.State != "cancelled" || alive(r.Pid) {
		t.Fatalf("got %s, pid %d alive %v; want cancelled and gone", cancelled.State, r.Pid, alive(r.Pid))
	}
}
