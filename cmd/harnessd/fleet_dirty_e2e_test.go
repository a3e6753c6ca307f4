package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/fleet"
)

// TestFleetDirtyJobOutlivesItsNode extends must-show 3 to a dirty
// checkout: the killed node's checkout has a changed tracked file and an
// untracked file, not committed. job_start ships that state (its digest
// and tree in the job's record, the blob in etcd); after kill -9 of the
// node, attempt 2 runs on another node with a larger token on the
// inputs rebuilt from the blob, and its output shows the uncommitted
// change. job_status agrees on every live node, exactly one completion
// is recorded, the state leaves etcd with it, and job_start replayed by
// request id returns the same job. With and without the fleet key (the
// record, its state's digest and tree included, is then sealed).
func TestFleetDirtyJobOutlivesItsNode(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "etcd secret", true: "fleet key"}[sealed], func(t *testing.T) { fleetDirtyJob(t, sealed) })
	}
}

func fleetDirtyJob(t *testing.T, sealed bool) {
	f := newFleetEnv(t, true)
	if sealed {
		f.key = []byte(hex.EncodeToString([]byte(newSecret(t))))
	}
	ns := f.nodes(t, "d", 3, f.etcdCached)
	a, b, c := ns[0], ns[1], ns[2]
	// a's checkout: a tracked change and an untracked file, uncommitted.
	if err := os.WriteFile(filepath.Join(a.repo, "README.md"), []byte("the fleet's fixture\nan uncommitted line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(a.repo, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.repo, "notes", "dirty.txt"), []byte("an untracked note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(n *fleetNode) map[string]any {
		return map[string]any{"repo_id": n.repoID, "request_id": "fleet-dirty-1", "isolation": "worktree", "timeout_s": 120,
			"argv": []string{"sh", "-c", "sleep 3; cat README.md notes/dirty.txt; echo done"}}
	}
	started := a.jobCall(t, "job_start", args(a))
	if started.Fleet == nil || started.Fleet.Node != a.name || started.Fleet.Attempt != 1 || started.Fleet.Local != "" {
		t.Fatalf("job_start on %s's dirty checkout = %s (local %q); want a fleet job, attempt 1 on %s", a.name, started, fleetLocal(started), a.name)
	}
	id, token1 := started.JobID, started.Fleet.Token
	raw, _ := f.etcd.get(t, fleetPrefix+"jobs/"+id)
	var rec fleet.JobRecord
	if err := json.Unmarshal(raw, &rec); err != nil || rec.StateBlob.Size == 0 || len(rec.StateTree) != 40 || (sealed && rec.Seal == "") {
		t.Fatalf("the job's record %s (%v); want its state's digest and tree%s", raw, err, map[bool]string{true: ", sealed"}[sealed])
	}
	if keys := f.etcd.keys(t, fleetPrefix+"jobstate/"+id+"/"); len(keys) == 0 {
		t.Fatal("the job's state blob is not in etcd")
	}
	t.Logf("shipped state: %d bytes (blob %s), tree %s", rec.StateBlob.Size, rec.StateBlob.Hash[:12], rec.StateTree[:12])
	waitFor(t, 30*time.Second, "the job runs on "+a.name, func() bool { return a.jobStatus(t, id, 0).State == "running" },
		func() string { return a.jobStatus(t, id, 0).String() })

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
	t.Logf("attempt 2 on %s (token %d > %d) %s after kill -9 of %s", took.Fleet.Node, took.Fleet.Token, token1,
		time.Since(killed).Round(time.Millisecond), a.name)
	if took.Fleet.Node == a.name || took.Fleet.Token <= token1 {
		t.Fatalf("attempt 2 = %s; want another node than %s with a token above %d", took, a.name, token1)
	}
	for _, n := range []*fleetNode{b, c} {
		var got fleetJobAnswer
		waitFor(t, 60*time.Second, "the job's end on "+n.name, func() bool {
			got = n.jobStatus(t, id, 5)
			return got.State != "running" && got.State != "queued"
		}, func() string { return got.String() })
		if got.State != "succeeded" || got.Fleet == nil || got.Fleet.Node != took.Fleet.Node || got.Fleet.Attempt != 2 ||
			got.Fleet.Token != took.Fleet.Token || !strings.Contains(got.Tail, "an uncommitted line") || !strings.Contains(got.Tail, "an untracked note") {
			t.Fatalf("the end on %s = %s tail %q; want attempt 2's success on %s, showing the uncommitted change", n.name, got, got.Tail, took.Fleet.Node)
		}
	}
	finals := finalPuts(t, f.etcd.cli, fleetPrefix+"jobs/"+id)
	if len(finals) != 1 || finals[0]["attempt"] != float64(2) || finals[0]["state"] != "succeeded" {
		t.Fatalf("final records %v; want exactly one, attempt 2's success", finals)
	}
	if keys := f.etcd.keys(t, fleetPrefix+"jobstate/"+id+"/"); len(keys) != 0 {
		t.Fatalf("the job's state is still in etcd after its end: %v", keys)
	}
	for _, n := range []*fleetNode{b, c} {
		if r := n.jobCall(t, "job_start", args(n)); r.JobID != id || !r.Replayed || r.State != "succeeded" {
			t.Fatalf("job_start replayed on %s = %s (replayed %t); want %s, succeeded", n.name, r, r.Replayed, id)
		}
	}
}

// fleetLocal is the reason a job stays home, if it does.
func fleetLocal(a fleetJobAnswer) string {
	if a.Fleet == nil {
		return ""
	}
	return a.Fleet.Local
}
