package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/testutil"
)

// TestFleetJobsAcrossNodes: two nodes of one fleet, each with a clone of
// one repository. A read-only job started on a is answered on b from
// the fleet's record; a job of a dirty checkout, or one asking for
// retry, stays on its node and says why; when a leaves the fleet while a worktree job runs, b takes
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
	aPath := clone()
	aRepo, bRepo := register(a, aPath), register(b, clone())

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

	// A dirty checkout's job stays on a, and says why.
	if err := os.WriteFile(filepath.Join(aPath, "scratch.txt"), []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirty, err := a.JobStart(ctx, harness.JobStartArgs{RepoID: aRepo, RequestID: "dirty-1", Isolation: "worktree", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if dirty.Fleet == nil || dirty.Fleet.Node != "" || !strings.Contains(dirty.Fleet.Local, "changes beyond HEAD") {
		t.Fatalf("dirty checkout's job fleet field %+v, want it kept on a with the reason", dirty.Fleet)
	}
	if _, err := b.JobStatus(ctx, harness.JobStatusArgs{JobID: dirty.JobID}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("job_status on b of a's local job = %v, want NOT_FOUND", err)
	}
	if err := os.Remove(filepath.Join(aPath, "scratch.txt")); err != nil {
		t.Fatal(err)
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
