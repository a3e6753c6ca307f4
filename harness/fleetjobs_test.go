package harness_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/testutil"
)

// TestFleetJobsAcrossNodes: two nodes of one fleet, each with a clone of
// one repository. A read-only job started on a is answered on b from
// the fleet's record; a job asking for retry stays on its node and says
// why; when a leaves the fleet while a worktree job runs, b takes
// it over (attempt 2, a higher token) and runs it to its end; the
// request replayed on b answers the same job.
func TestFleetJobsAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	etcd, err := fleet.StartEmbedded(ctx, fleet.EmbedConfig{Name: "e1", Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	src := testutil.Repo(t, map[string]string{"README.md": "fleet jobs\n"})
	clone := func() string {
		dst := filepath.Join(t.TempDir(), "repo")
		testutil.Git(t, filepath.Dir(dst), "clone", "-q", src, dst)
		return dst
	}
	a, b := fleetNode(t, etcd.ClientURL(), "a"), fleetNode(t, etcd.ClientURL(), "b")
	register := func(h *harness.Harness, path string) string {
		r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	aRepo, bRepo := register(a, clone()), register(b, clone())

	// A read-only job in place: a fleet job, answered on b from etcd.
	ro, err := a.JobStart(ctx, harness.JobStartArgs{RepoID: aRepo, RequestID: "ro-1", Argv: []string{"sh", "-c", "echo read-only"}})
	if err != nil {
		t.Fatal(err)
	}
	if ro.Fleet == nil || ro.Fleet.Node != "a" || ro.Fleet.Attempt != 1 || ro.Fleet.Token <= 0 {
		t.Fatalf("read-only job's fleet field %+v, want attempt 1 on a", ro.Fleet)
	}
	got, err := b.JobStatus(ctx, harness.JobStatusArgs{JobID: ro.JobID, WaitS: 30})
	if err != nil {
		t.Fatalf("job_status on b: %v", err)
	}
	if got.State != "succeeded" || !strings.Contains(got.Tail, "read-only") || got.Fleet == nil || got.Fleet.Node != "a" || got.Fleet.Token != ro.Fleet.Token {
		t.Fatalf("job_status on b = %s tail %q fleet %+v; want a's success", got.State, got.Tail, got.Fleet)
	}
	if _, err := b.JobStatus(ctx, harness.JobStatusArgs{JobID: "job_nosuchjob"}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("job_status of an unknown job on b = %v, want NOT_FOUND", err)
	}

	// A job that asks for retry after a restart: its node retries it, so
	// it stays there (a takeover as well would run it twice).
	retried, err := a.JobStart(ctx, harness.JobStartArgs{RepoID: aRepo, RequestID: "retry-1", Isolation: "worktree", Argv: []string{"true"},
		Retry: &harness.RetryPolicy{Max: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if retried.Fleet == nil || retried.Fleet.Node != "" || !strings.Contains(retried.Fleet.Local, "retry") {
		t.Fatalf("a job with retry: fleet field %+v, want it kept on a with the reason", retried.Fleet)
	}

	// A worktree job whose node leaves: b takes it over.
	wt, err := a.JobStart(ctx, harness.JobStartArgs{RepoID: aRepo, RequestID: "wt-1", Isolation: "worktree", Argv: []string{"sh", "-c", "sleep 2; echo taken"}})
	if err != nil {
		t.Fatal(err)
	}
	if wt.Fleet == nil || wt.Fleet.Node != "a" {
		t.Fatalf("worktree job's fleet field %+v, want a", wt.Fleet)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatalf("close a: %v", err)
	}
	left := time.Now()
	var st *harness.JobResult
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err = b.JobStatus(ctx, harness.JobStatusArgs{JobID: wt.JobID, WaitS: 1})
		if err == nil && st.Fleet != nil && st.Fleet.Attempt == 2 && st.State == "succeeded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job_status on b = %+v / %+v, %v: want attempt 2's success on b", st, st.Fleet, err)
		}
	}
	t.Logf("a's job ran to its end on b %s after a left", time.Since(left).Round(time.Millisecond))
	if st.Fleet.Node != "b" || st.Fleet.Token <= wt.Fleet.Token || !strings.Contains(st.Tail, "taken") || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("after the takeover: %s on %+v tail %q; want b's success with a token above %d", st.State, st.Fleet, st.Tail, wt.Fleet.Token)
	}
	re, err := b.JobStart(ctx, harness.JobStartArgs{RepoID: bRepo, RequestID: "wt-1", Isolation: "worktree", Argv: []string{"sh", "-c", "sleep 2; echo taken"}})
	if err != nil || re.JobID != wt.JobID || !re.Replayed || re.Fleet == nil || re.Fleet.Attempt != 2 {
		t.Fatalf("job_start replayed on b = %+v, %v; want job %s, replayed, attempt 2", re, err, wt.JobID)
	}
	// Other arguments under the same request id: a conflict, on any node.
	if _, err := b.JobStart(ctx, harness.JobStartArgs{RepoID: bRepo, RequestID: "wt-1", Isolation: "worktree", Argv: []string{"true"}}); errs.CodeOf(err) != errs.RequestConflict {
		t.Fatalf("job_start with other arguments under request wt-1 = %v, want REQUEST_CONFLICT", err)
	}
}

// TestFleetJobShippedState: a's checkout is dirty (a changed tracked
// file, an untracked file, an untracked secret file). Its worktree job
// and its read-only job are fleet jobs whose record carries the state's
// digest and tree; when a leaves, b rebuilds their inputs from the
// shipped blob and both see the uncommitted change, not the secret. Two
// more jobs are attacked before a leaves: one's blob is substituted
// under its key (right digest in the record, wrong content), the other's
// blob and digest are replaced by another valid state (its tree differs
// from the record's). b refuses both: they end failed (UNAVAILABLE,
// saying why) and never run.
func TestFleetJobShippedState(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	etcd, err := fleet.StartEmbedded(ctx, fleet.EmbedConfig{Name: "e1", Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.ClientURL()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	src := testutil.Repo(t, map[string]string{"README.md": "fleet jobs\n"})
	clone := func() string {
		dst := filepath.Join(t.TempDir(), "repo")
		testutil.Git(t, filepath.Dir(dst), "clone", "-q", src, dst)
		return dst
	}
	a, b := fleetNode(t, etcd.ClientURL(), "a"), fleetNode(t, etcd.ClientURL(), "b")
	aPath := clone()
	ar, err := a.RegisterRepository(ctx, harness.RegisterArgs{Path: aPath})
	if err != nil {
		t.Fatal(err)
	}
	bPath := clone()
	if _, err := b.RegisterRepository(ctx, harness.RegisterArgs{Path: bPath}); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, aPath, "README.md", "fleet jobs\nuncommitted line\n")
	testutil.WriteFile(t, aPath, "notes/new.txt", "shipped untracked\n")
	testutil.WriteFile(t, aPath, ".env", "SECRET=hunter2\n")

	start := func(rid, iso, script string) *harness.JobResult {
		t.Helper()
		r, err := a.JobStart(ctx, harness.JobStartArgs{RepoID: ar.ID, RequestID: rid, Isolation: iso, Argv: []string{"sh", "-c", script}})
		if err != nil {
			t.Fatalf("job_start %s: %v", rid, err)
		}
		if r.Fleet == nil || r.Fleet.Node != "a" || r.Fleet.Local != "" {
			t.Fatalf("job_start %s on a dirty checkout: fleet field %+v; want a fleet job on a", rid, r.Fleet)
		}
		return r
	}
	// (The secret file is not named: the gate refuses an argument that
	// names one.)
	const read = "sleep 3; cat README.md notes/new.txt; echo \"e-dotfiles=$(ls -A | grep -c '^[.]e')\"; echo end"
	wt := start("shipped-wt", "worktree", read)
	ro := start("shipped-ro", "", read)
	bad := start("shipped-bad", "worktree", "sleep 3; echo RAN")
	other := start("shipped-other", "worktree", "sleep 3; echo RAN")

	record := func(id string) fleet.JobRecord {
		t.Helper()
		resp, err := cli.Get(ctx, "/harnessd/jobs/"+id)
		if err != nil || len(resp.Kvs) == 0 {
			t.Fatalf("the record of %s: %v", id, err)
		}
		var rec fleet.JobRecord
		if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	for _, j := range []*harness.JobResult{wt, ro} {
		if rec := record(j.JobID); rec.StateBlob.Size == 0 || len(rec.StateTree) != 40 {
			t.Fatalf("the record of %s carries no state: %+v", j.JobID, rec)
		}
	}
	// The attacks, while a still runs the jobs.
	if _, err := cli.Put(ctx, "/harnessd/jobstate/"+bad.JobID+"/0000", "not the state"); err != nil {
		t.Fatal(err)
	}
	forged, err := fleet.EncodeState(fleet.State{Files: []fleet.StateFile{{Name: "evil.sh", Mode: 0o755, Data: []byte("echo evil\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := record(other.JobID)
	rec.StateBlob = fleet.DigestOf(forged)
	rb, _ := json.Marshal(rec)
	if _, err := cli.Delete(ctx, "/harnessd/jobstate/"+other.JobID+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Txn(ctx).Then(clientv3.OpPut("/harnessd/jobstate/"+other.JobID+"/0000", string(forged)),
		clientv3.OpPut("/harnessd/jobs/"+other.JobID, string(rb))).Commit(); err != nil {
		t.Fatal(err)
	}

	if err := a.Close(ctx); err != nil {
		t.Fatalf("close a: %v", err)
	}
	end := func(id string) *harness.JobResult {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			st, err := b.JobStatus(ctx, harness.JobStatusArgs{JobID: id, WaitS: 1})
			if err == nil && st.Fleet != nil && st.Fleet.Attempt == 2 && st.State != "running" && st.State != "queued" {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("job_status of %s on b = %+v, %v: want attempt 2's end", id, st, err)
			}
		}
	}
	for _, j := range []*harness.JobResult{wt, ro} {
		st := end(j.JobID)
		if st.State != "succeeded" || st.Fleet.Node != "b" || !strings.Contains(st.Tail, "uncommitted line") || !strings.Contains(st.Tail, "shipped untracked") ||
			!strings.Contains(st.Tail, "e-dotfiles=0") || !strings.Contains(st.Tail, "end") {
			t.Fatalf("%s (isolation %q) on b: %s %+v tail %q error %+v; want success on the shipped state, without the secret file", j.JobID, j.Isolation, st.State, st.Fleet, st.Tail, st.Error)
		}
		if st.Isolation != j.Isolation {
			t.Errorf("%s: b answers isolation %q, job_start had %q", j.JobID, st.Isolation, j.Isolation)
		}
	}
	for _, tc := range []struct {
		j    *harness.JobResult
		want string
	}{{bad, "does not match its digest"}, {other, "not " + rec.StateTree}} {
		st := end(tc.j.JobID)
		if st.State != "failed" || st.Error == nil || st.Error.Code != string(errs.Unavailable) || !strings.Contains(st.Error.Message, tc.want) ||
			strings.Contains(st.Tail, "RAN") || st.ExitCode != nil {
			t.Fatalf("attacked %s on b: %s tail %q exit %v error %+v; want failed, UNAVAILABLE with %q, never run", tc.j.JobID, st.State, st.Tail, st.ExitCode, st.Error, tc.want)
		}
	}
	// The state leaves etcd with the jobs' ends (recorded a moment after
	// b's own record of them ends), and the rebuilt inputs and the jobs'
	// worktrees go.
	var left int
	var wts string
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(20 * time.Second); ; <-tick.C {
		resp, err := cli.Get(ctx, "/harnessd/jobstate/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		left, wts = len(resp.Kvs), testutil.Git(t, bPath, "worktree", "list", "--porcelain")
		if left == 0 && strings.Count(wts, "worktree ") == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the jobs ended: %d state keys left; b's worktrees:\n%s", left, wts)
		}
	}
}
