package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/internal/fleet"
)

// fleetJobAnswer is the part of a job_start or job_status answer the
// fleet's job tests read.
type fleetJobAnswer struct {
	JobID    string `json:"job_id"`
	State    string `json:"state"`
	Replayed bool   `json:"replayed"`
	ExitCode *int   `json:"exit_code"`
	Tail     string `json:"tail"`
	Fleet    *struct {
		Node    string `json:"node"`
		Attempt int    `json:"attempt"`
		Token   int64  `json:"token"`
		Waiting bool   `json:"waiting"`
		Local   string `json:"local"`
	} `json:"fleet"`
}

func (a fleetJobAnswer) String() string {
	if a.Fleet == nil {
		return fmt.Sprintf("%s %s (no fleet field)", a.JobID, a.State)
	}
	return fmt.Sprintf("%s %s on %s attempt %d token %d waiting %t", a.JobID, a.State, a.Fleet.Node, a.Fleet.Attempt, a.Fleet.Token, a.Fleet.Waiting)
}

// jobCall calls a job tool on n and decodes its answer.
func (n *fleetNode) jobCall(t *testing.T, tool string, args map[string]any) fleetJobAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	raw, err := n.api.Call(ctx, tool, args)
	if err != nil {
		t.Fatalf("node %s: %s: %v", n.name, tool, errorOf(err))
	}
	var a fleetJobAnswer
	if err := json.Unmarshal(raw, &a); err != nil || a.JobID == "" {
		t.Fatalf("node %s: %s answered %s (%v)", n.name, tool, raw, err)
	}
	return a
}

// jobStatus is job_status of id on n, waiting up to wait seconds.
func (n *fleetNode) jobStatus(t *testing.T, id string, wait int) fleetJobAnswer {
	t.Helper()
	return n.jobCall(t, "job_status", map[string]any{"job_id": id, "wait_s": wait})
}

// finalPuts answers the final records written to key since the start of
// etcd's history (the completions FinishJob recorded).
func finalPuts(t *testing.T, cli *clientv3.Client, key string) []map[string]any {
	t.Helper()
	// The node that ran the job answers its own record at once; its end
	// reaches etcd a moment later (FinishJob): wait for a final record.
	var cur *clientv3.GetResponse
	waitFor(t, 30*time.Second, "a final record of "+key+" in etcd", func() bool {
		gctx, gcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer gcancel()
		var err error
		cur, err = cli.Get(gctx, key)
		if err != nil || len(cur.Kvs) == 0 {
			return false
		}
		var r fleet.JobRecord
		return json.Unmarshal(cur.Kvs[0].Value, &r) == nil && fleet.JobStateFinal(r.State)
	}, func() string { return fmt.Sprint(cur) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	last := cur.Kvs[0].ModRevision
	var finals []map[string]any
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	for wr := range cli.Watch(wctx, key, clientv3.WithRev(cur.Kvs[0].CreateRevision)) {
		if err := wr.Err(); err != nil && wctx.Err() == nil {
			t.Fatalf("etcd: the history of %s: %v", key, err)
		}
		for _, ev := range wr.Events {
			var r map[string]any
			if ev.Type == clientv3.EventTypePut && json.Unmarshal(ev.Kv.Value, &r) == nil && r["state"] != "running" {
				finals = append(finals, r)
			}
			if ev.Kv.ModRevision >= last {
				wcancel()
			}
		}
	}
	return finals
}

// TestFleetJobOutlivesItsNode is the must-show 3: kill -9 of a
// worktree job's node; attempt 2 runs on another node with a larger
// token; job_status agrees on every live node; exactly one completion
// is recorded; job_start replayed by request id on another node returns
// the same job. A job that writes its checkout in place stays on its
// node and says why.
func TestFleetJobOutlivesItsNode(t *testing.T) {
	f := newFleetEnv(t, true)
	ns := f.nodes(t, "j", 3, f.etcdCached)
	a, b, c := ns[0], ns[1], ns[2]
	args := func(n *fleetNode) map[string]any {
		return map[string]any{"repo_id": n.repoID, "request_id": "fleet-job-1", "isolation": "worktree", "timeout_s": 120,
			"argv": []string{"sh", "-c", "sleep 3; echo done"}}
	}
	started := a.jobCall(t, "job_start", args(a))
	if started.Fleet == nil || started.Fleet.Node != a.name || started.Fleet.Attempt != 1 || started.Fleet.Token <= 0 || started.Fleet.Local != "" {
		t.Fatalf("job_start on %s = %s; want a fleet job, attempt 1 on %s", a.name, started, a.name)
	}
	id, token1 := started.JobID, started.Fleet.Token
	waitFor(t, 30*time.Second, "the job runs on "+a.name, func() bool { return a.jobStatus(t, id, 0).State == "running" },
		func() string { return a.jobStatus(t, id, 0).String() })

	// Every node answers the same: running on a, attempt 1.
	for _, n := range ns {
		got := n.jobStatus(t, id, 0)
		if got.State != "running" || got.Fleet == nil || got.Fleet.Node != a.name || got.Fleet.Attempt != 1 || got.Fleet.Token != token1 {
			t.Fatalf("job_status on %s = %s; want running on %s, attempt 1, token %d", n.name, got, a.name, token1)
		}
	}
	// The request replayed on another node: the same job.
	if r := b.jobCall(t, "job_start", args(b)); r.JobID != id || !r.Replayed {
		t.Fatalf("job_start replayed on %s = %s (replayed %t); want %s", b.name, r, r.Replayed, id)
	}

	// kill -9 of the job's node.
	if err := a.d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-a.d.done
	var took fleetJobAnswer
	waitFor(t, 30*time.Second, "another node takes the job over", func() bool {
		took = b.jobStatus(t, id, 0)
		return took.Fleet != nil && took.Fleet.Attempt == 2
	}, func() string { return took.String() })
	takeover := time.Since(killed)
	t.Logf("attempt 2 on %s (token %d > %d) %s after kill -9 of %s (TTL %s)", took.Fleet.Node, took.Fleet.Token, token1,
		takeover.Round(time.Millisecond), a.name, fleetTTL)
	if took.Fleet.Node == a.name || took.Fleet.Token <= token1 {
		t.Fatalf("attempt 2 = %s; want another node than %s with a token above %d", took, a.name, token1)
	}
	if takeover > 3*fleetTTL+2*time.Second {
		t.Fatalf("the takeover took %s, want within 3×TTL + 2 s", takeover)
	}

	// Both live nodes agree while it runs, and on its end.
	for _, n := range []*fleetNode{b, c} {
		got := n.jobStatus(t, id, 0)
		if got.Fleet == nil || got.Fleet.Node != took.Fleet.Node || got.Fleet.Attempt != 2 || got.Fleet.Token != took.Fleet.Token {
			t.Fatalf("job_status on %s = %s; want attempt 2 on %s", n.name, got, took.Fleet.Node)
		}
	}
	var ends []fleetJobAnswer
	for _, n := range []*fleetNode{b, c} {
		var got fleetJobAnswer
		waitFor(t, 60*time.Second, "the job's end on "+n.name, func() bool {
			got = n.jobStatus(t, id, 5)
			return got.State == "succeeded"
		}, func() string { return got.String() })
		ends = append(ends, got)
	}
	for i, got := range ends {
		if got.ExitCode == nil || *got.ExitCode != 0 || !strings.Contains(got.Tail, "done") || got.Fleet == nil ||
			got.Fleet.Node != took.Fleet.Node || got.Fleet.Attempt != 2 || got.Fleet.Token != took.Fleet.Token {
			t.Fatalf("the end on node %d = %s (exit %v, tail %q); want success of attempt 2 on %s", i, got, got.ExitCode, got.Tail, took.Fleet.Node)
		}
	}

	// Exactly one completion was recorded: attempt 2's.
	finals := finalPuts(t, f.etcd.cli, "/harnessd/jobs/"+id)
	if len(finals) != 1 || finals[0]["attempt"] != float64(2) || finals[0]["token"] != float64(took.Fleet.Token) || finals[0]["state"] != "succeeded" {
		t.Fatalf("final records %v; want exactly one, attempt 2's success with token %d", finals, took.Fleet.Token)
	}
	// The request replayed on the other live node, after the takeover:
	// still the same job.
	for _, n := range []*fleetNode{b, c} {
		if r := n.jobCall(t, "job_start", args(n)); r.JobID != id || !r.Replayed || r.State != "succeeded" {
			t.Fatalf("job_start replayed on %s = %s (replayed %t); want %s, succeeded", n.name, r, r.Replayed, id)
		}
	}

	// A job that writes its checkout in place stays on its node (a dirty
	// checkout's worktree job does not: fleet_dirty_e2e_test.go).
	local := b.jobCall(t, "job_start", map[string]any{"repo_id": b.scratchID, "request_id": "fleet-job-in-place", "isolation": "none",
		"writes": true, "argv": []string{"sh", "-c", "echo local"}})
	if local.Fleet == nil || !strings.Contains(local.Fleet.Local, "writes its checkout in place") || local.Fleet.Node != "" {
		t.Fatalf("a job writing its checkout = %+v; want it kept on %s with the reason", local.Fleet, b.name)
	}
	if keys := f.etcd.keys(t, "/harnessd/jobs/"+local.JobID); len(keys) != 0 {
		t.Fatalf("a local job has fleet keys %v", keys)
	}
}

// TestFleetJobStaleAttemptRefused: the node running a fleet job is
// paused (SIGSTOP) past its session deadline; another node takes the
// job over and records its end; the paused node, resumed, offers its
// stale attempt's end and etcd refuses it (LEASE_LOST): still exactly one
// completion, and every node answers the new attempt's.
func TestFleetJobStaleAttemptRefused(t *testing.T) {
	f := newFleetEnv(t, true)
	ns := f.nodes(t, "s", 3, f.etcdCached)
	a, b := ns[0], ns[1]
	started := a.jobCall(t, "job_start", map[string]any{"repo_id": a.repoID, "request_id": "stale-1", "isolation": "worktree",
		"timeout_s": 120, "argv": []string{"sh", "-c", "sleep 3; echo done"}})
	if started.Fleet == nil || started.Fleet.Node != a.name {
		t.Fatalf("job_start on %s = %s; want a fleet job there", a.name, started)
	}
	id := started.JobID
	waitFor(t, 30*time.Second, "the job runs on "+a.name, func() bool { return a.jobStatus(t, id, 0).State == "running" },
		func() string { return a.jobStatus(t, id, 0).String() })

	if err := a.d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var end fleetJobAnswer
	waitFor(t, 60*time.Second, "another node runs the job to its end", func() bool {
		end = b.jobStatus(t, id, 1)
		return end.State == "succeeded" && end.Fleet != nil && end.Fleet.Attempt == 2
	}, func() string { return end.String() })
	if err := a.d.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, a.name+" offers its stale attempt's end and is refused", func() bool {
		return a.logContains(id, "was not recorded", "LEASE_LOST")
	}, func() string { return tail(a.d.stderr.String(), 2048) })

	finals := finalPuts(t, f.etcd.cli, "/harnessd/jobs/"+id)
	if len(finals) != 1 || finals[0]["attempt"] != float64(2) || finals[0]["node"] != end.Fleet.Node {
		t.Fatalf("final records %v; want exactly one, attempt 2's on %s", finals, end.Fleet.Node)
	}
	// Every node agrees (the resumed one once its etcd client answers
	// again: until then it answers its own record).
	for _, n := range ns {
		var got fleetJobAnswer
		waitFor(t, 30*time.Second, "job_status on "+n.name+" names attempt 2's success", func() bool {
			got = n.jobStatus(t, id, 0)
			return got.State == "succeeded" && got.Fleet != nil && got.Fleet.Attempt == 2 && got.Fleet.Node == end.Fleet.Node && got.Fleet.Token == end.Fleet.Token
		}, func() string { return got.String() })
	}
}
