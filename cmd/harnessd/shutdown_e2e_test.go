package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// SIGTERM while a writing job holds the checkout and patches wait for it
// (wait_ms 30 s, --shutdown-wait 20 s): the waiters are answered
// UNAVAILABLE with nothing_written at once, the daemon exits without
// waiting out --shutdown-wait, and after a restart the same request ids
// with the same input run normally: not REQUEST_OUTCOME_UNKNOWN (their
// ledger entries were closed as never begun, not left executing).
func TestShutdownAnswersLeaseWaitersE2E(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"README.md": "hi\n"})
	const shutdownWait = 20 * time.Second
	d := startDaemon(t, dataDir, "--shutdown-wait", shutdownWait.String())
	ctx := context.Background()
	c := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c.Close()
	call := func(c *client.Client, op string, args map[string]any, out any) {
		t.Helper()
		raw, err := c.Call(ctx, op, args)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatalf("decode %s: %v", op, err)
			}
		}
	}
	var r repoResult
	call(c, "repository_register", map[string]any{"path": repo}, &r)
	var job struct {
		JobID string `json:"job_id"`
		State string `json:"state"`
	}
	call(c, "job_start", map[string]any{"repo_id": r.RepoID, "argv": []string{"sleep", "60"}, "writes": true, "request_id": "writer"}, &job)
	deadline := time.Now().Add(20 * time.Second)
	for job.State != "running" {
		if time.Now().After(deadline) {
			t.Fatalf("job never ran: %+v", job)
		}
		call(c, "job_status", map[string]any{"job_id": job.JobID}, &job)
	}

	const n = 3
	patch := func(i int) map[string]any {
		return map[string]any{"repo_id": r.RepoID, "request_id": fmt.Sprintf("waiter-%d", i), "wait_ms": 30000,
			"operations": []map[string]any{{"op": "write", "path": fmt.Sprintf("w%d.txt", i), "content": "written\n"}}}
	}
	type outcome struct {
		err error
		at  time.Time
	}
	done := make(chan outcome, n)
	for i := range n {
		go func() { _, err := c.Call(ctx, "apply_patch", patch(i)); done <- outcome{err, time.Now()} }()
	}
	tok, err := daemon.ReadToken(daemon.PathsOf(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	people := client.Unix(daemon.PathsOf(dataDir).Socket).WithToken(tok) // the store dump is for people
	defer people.Close()
	for i := range n {
		for {
			if time.Now().After(deadline) {
				t.Fatalf("waiter-%d never reached the ledger", i)
			}
			dump, err := people.GetRaw(ctx, fmt.Sprintf("/v1/store/dump?prefix=ledger/waiter-%d", i))
			if err == nil && strings.Contains(string(dump), `"state":"executing"`) {
				break
			}
			time.Sleep(20 * time.Millisecond) // polling the daemon for the other calls' progress
		}
	}

	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range n {
		o := <-done
		ce := errs.From(o.err)
		if ce == nil || ce.Code != errs.Unavailable || ce.Details["nothing_written"] != true {
			t.Fatalf("waiter: %v, want UNAVAILABLE with nothing_written", o.err)
		}
		if took := o.at.Sub(start); took > shutdownWait/4 {
			t.Fatalf("a waiter was answered %s after SIGTERM", took)
		}
	}
	if err := d.wait(t, shutdownWait+10*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.stderr.String())
	}
	if took := time.Since(start); took > shutdownWait/4 {
		t.Fatalf("shutdown took %s: it waited for the lease waiters", took)
	}
	if log := d.stderr.String(); strings.Contains(log, "ledger: record failure") || strings.Contains(log, "never begun") {
		t.Fatalf("the waiters' ledger entries were not closed:\n%s", log)
	}

	startDaemon(t, dataDir)
	c2 := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c2.Close()
	// The restart interrupted the writing job: it holds the checkout no more.
	call(c2, "job_status", map[string]any{"job_id": job.JobID}, &job)
	if job.State == "running" {
		t.Fatalf("the writing job still runs after the restart: %+v", job)
	}
	for i := range n {
		var res struct {
			Replayed bool `json:"replayed"`
		}
		raw, err := c2.Call(ctx, "apply_patch", patch(i))
		if err != nil {
			t.Fatalf("waiter-%d after the restart: %v, want it to run", i, err)
		}
		if err := json.Unmarshal(raw, &res); err != nil || res.Replayed {
			t.Fatalf("waiter-%d after the restart: %s, want a fresh run", i, raw)
		}
	}
}
