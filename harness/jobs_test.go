package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/supervisors"
)

// ignoreTermScript starts a grandchild that ignores SIGTERM, prints a
// marker only its command line carries, and waits. (The job runs in its own
// pid namespace, so the pid it could print means nothing outside.)
const ignoreTermScript = "trap '' TERM\nm=0.$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')\nsleep 300 $m &\necho \"grandchild $m\"\nwait\n"

func jobFixture(t *testing.T) (*harness.Harness, string, string) {
	t.Helper()
	h, root, id := fixture(t)
	testutil.WriteFile(t, root, "ignore_term.sh", ignoreTermScript)
	testutil.WriteFile(t, root, "edit.sh", "echo x > new.txt\necho changed >> README.md\nrm conf/app.ini\n")
	testutil.WriteFile(t, root, "fail.sh", "echo 'starting'\necho 'error: something broke' >&2\nexit 3\n")
	testutil.Git(t, root, "add", "ignore_term.sh", "edit.sh", "fail.sh")
	testutil.Git(t, root, "commit", "-q", "-m", "scripts")
	return h, root, id
}

var reqSeq struct {
	sync.Mutex
	n int
}

func reqID(t *testing.T) string {
	reqSeq.Lock()
	defer reqSeq.Unlock()
	reqSeq.n++
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), reqSeq.n)
}

func startJob(t *testing.T, h *harness.Harness, args harness.JobStartArgs) *harness.JobResult {
	t.Helper()
	if args.RequestID == "" {
		args.RequestID = reqID(t)
	}
	r, err := h.JobStart(context.Background(), args)
	if err != nil {
		t.Fatalf("job_start %v: %v", args.Argv, err)
	}
	return r
}

func waitJob(t *testing.T, h *harness.Harness, id string) *harness.JobResult {
	t.Helper()
	r, err := h.JobStatus(context.Background(), harness.JobStatusArgs{JobID: id, WaitS: 30})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Finished() {
		t.Fatalf("job %s still %s after 30s", id, r.State)
	}
	return r
}

// waitFor polls cond until it holds or 20 s passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func logs(t *testing.T, h *harness.Harness, id, stream string) string {
	t.Helper()
	r, err := h.JobLogs(context.Background(), harness.JobLogsArgs{JobID: id, Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	return r.Data
}

func pidAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie waiting for its reaper is dead for our purposes.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func grandchildPid(t *testing.T, h *harness.Harness, id string) int {
	t.Helper()
	var marker string
	waitFor(t, "the grandchild marker in the job log", func() bool {
		for _, line := range strings.Split(logs(t, h, id, "stdout"), "\n") {
			if m, ok := strings.CutPrefix(line, "grandchild "); ok && m != "" {
				marker = m
				return true
			}
		}
		return false
	})
	var pid int
	waitFor(t, "the grandchild process", func() bool {
		pid = testutil.PidByCmdline("sleep\x00300\x00" + marker + "\x00")
		return pid > 0
	})
	return pid
}

func TestJobSucceedsWithLogs(t *testing.T) {
	h, _, repo := jobFixture(t)
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"cat", "README.md"}})
	if r.State != messages.JobQueued && r.State != messages.JobRunning {
		t.Fatalf("state after start = %s, want queued or running", r.State)
	}
	if r.Route != "durable" || r.Attempt != 1 || r.TimeoutS != 600 || r.Isolation != "none" {
		t.Fatalf("start result = %+v", r)
	}
	f := waitJob(t, h, r.JobID)
	if f.State != messages.JobSucceeded || f.ExitCode == nil || *f.ExitCode != 0 {
		t.Fatalf("got state %s exit %v, want succeeded 0 (%+v)", f.State, f.ExitCode, f.Error)
	}
	if f.StdoutBytes != int64(len("# demo\nhello world\n")) || !strings.Contains(f.Tail, "hello world") {
		t.Fatalf("got stdout_bytes %d tail %q", f.StdoutBytes, f.Tail)
	}
	if got := logs(t, h, r.JobID, "stdout"); got != "# demo\nhello world\n" {
		t.Fatalf("got log %q", got)
	}
	lr, err := h.JobLogs(context.Background(), harness.JobLogsArgs{JobID: r.JobID, Offset: 7})
	if err != nil || lr.Data != "hello world\n" || !lr.EOF || lr.NextOffset != lr.Total {
		t.Fatalf("got logs %+v, %v; want the rest from offset 7 and eof", lr, err)
	}
}

func TestJobFailureSummary(t *testing.T) {
	h, _, repo := jobFixture(t)
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"sh", "fail.sh"}})
	f := waitJob(t, h, r.JobID)
	if f.State != messages.JobFailed || f.ExitCode == nil || *f.ExitCode != 3 {
		t.Fatalf("got %s exit %v, want failed 3", f.State, f.ExitCode)
	}
	if f.Error == nil || len(f.Summary) == 0 || !strings.Contains(strings.Join(f.Summary, "\n"), "something broke") {
		t.Fatalf("got error %+v summary %q", f.Error, f.Summary)
	}
	if f.Error.Code != "JOB_FAILED" || !strings.Contains(f.Error.Message, "status 3") {
		t.Errorf("a job exiting 3 has error %+v, want JOB_FAILED naming the status", f.Error)
	}
	if got := logs(t, h, r.JobID, "stderr"); got != "error: something broke\n" {
		t.Fatalf("got stderr %q", got)
	}
}

func TestJobStartErrors(t *testing.T) {
	h, _, repo := jobFixture(t)
	tests := []struct {
		name string
		args harness.JobStartArgs
		want errs.Code
	}{
		{"no request id", harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, RequestID: "-"}, errs.RequestIDRequired},
		{"empty argv", harness.JobStartArgs{RepoID: repo, RequestID: "x"}, errs.InvalidArgument},
		{"bad isolation", harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, Isolation: "vm", RequestID: "x"}, errs.InvalidArgument},
		{"timeout too long", harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, TimeoutS: 86401, RequestID: "x"}, errs.InvalidArgument},
		{"negative timeout", harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, TimeoutS: -1, RequestID: "x"}, errs.InvalidArgument},
		{"too many retries", harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, Retry: &harness.RetryPolicy{Max: 6}, RequestID: "x"}, errs.InvalidArgument},
		{"cwd outside", harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, Cwd: "../..", RequestID: "x"}, errs.PathOutsideRoot},
		{"cwd not a dir", harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, Cwd: "README.md", RequestID: "x"}, errs.InvalidArgument},
		{"destructive", harness.JobStartArgs{RepoID: repo, Argv: []string{"rm", "-rf", "/"}, RequestID: "x"}, errs.RouteRejected},
		{"remote", harness.JobStartArgs{RepoID: repo, Argv: []string{"curl", "-d", "x", "http://h"}, RequestID: "x"}, errs.RouteRejected},
		{"git push goes to git_push", harness.JobStartArgs{RepoID: repo, Argv: []string{"git", "push"}, RequestID: "x"}, errs.RouteDurableRequired},
		{"implicit push", harness.JobStartArgs{RepoID: repo, Argv: []string{"git", "-c", "alias.p=push", "p"}, RequestID: "x"}, errs.RouteRejected},
		{"unknown repo", harness.JobStartArgs{RepoID: "repo_nope", Argv: []string{"true"}, RequestID: "x"}, errs.RepositoryNotRegistered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.args.RequestID == "-" {
				tt.args.RequestID = ""
			}
			_, err := h.JobStart(context.Background(), tt.args)
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("got %s (%v), want %s", got, err, tt.want)
			}
		})
	}
	for _, id := range []string{"", "job_", "nope", "job_../x", "job_ABC"} {
		if _, err := h.JobStatus(context.Background(), harness.JobStatusArgs{JobID: id}); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("job_status %q: got %v, want INVALID_ARGUMENT", id, err)
		}
	}
	if _, err := h.JobStatus(context.Background(), harness.JobStatusArgs{JobID: "job_0123"}); errs.CodeOf(err) != errs.NotFound {
		t.Errorf("job_status of an unknown job: got %v, want NOT_FOUND", err)
	}
}

func TestJobStartIdempotent(t *testing.T) {
	h, _, repo := jobFixture(t)
	args := harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, RequestID: "same"}
	a := startJob(t, h, args)
	b := startJob(t, h, args)
	if a.JobID != b.JobID || !b.Replayed {
		t.Fatalf("got jobs %s and %s (replayed %v), want the same job replayed", a.JobID, b.JobID, b.Replayed)
	}
	args.Argv = []string{"false"}
	if _, err := h.JobStart(context.Background(), args); errs.CodeOf(err) != errs.RequestConflict {
		t.Fatalf("got %v, want REQUEST_CONFLICT", err)
	}
}

func TestJobCancelKillsTree(t *testing.T) {
	h, _, repo := jobFixture(t)
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"sh", "ignore_term.sh"}})
	gc := grandchildPid(t, h, r.JobID)
	if !pidAlive(gc) {
		t.Fatalf("grandchild %d is not running", gc)
	}
	c, err := h.JobCancel(context.Background(), harness.JobCancelArgs{JobID: r.JobID})
	if err != nil {
		t.Fatal(err)
	}
	if c.State != messages.JobCancelled || c.Error == nil || c.Error.Code != string(errs.Cancelled) {
		t.Fatalf("got %s %+v, want cancelled", c.State, c.Error)
	}
	if pidAlive(gc) {
		t.Fatalf("grandchild %d survived the cancel", gc)
	}
	again, err := h.JobCancel(context.Background(), harness.JobCancelArgs{JobID: r.JobID})
	if err != nil || again.State != messages.JobCancelled {
		t.Fatalf("second cancel: got %v %v, want cancelled again", again, err)
	}
}

func TestJobTimeoutKillsTree(t *testing.T) {
	h, _, repo := jobFixture(t)
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"sh", "ignore_term.sh"}, TimeoutS: 1})
	gc := grandchildPid(t, h, r.JobID)
	f := waitJob(t, h, r.JobID)
	if f.State != messages.JobTimedOut || !f.TimedOut || f.Error == nil || f.Error.Code != string(errs.Timeout) {
		t.Fatalf("got %s timed_out=%v %+v, want timed_out", f.State, f.TimedOut, f.Error)
	}
	if pidAlive(gc) {
		t.Fatalf("grandchild %d survived the timeout", gc)
	}
}

func TestJobWorktreeIsolation(t *testing.T) {
	h, root, repo := jobFixture(t)
	testutil.WriteFile(t, root, "dirty.txt", "untracked\n")
	before := testutil.Git(t, root, "status", "--porcelain")
	readme, _ := os.ReadFile(filepath.Join(root, "README.md"))
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"sh", "edit.sh"}, Isolation: "worktree", Writes: true})
	f := waitJob(t, h, r.JobID)
	if f.State != messages.JobSucceeded {
		t.Fatalf("got %s %+v, want succeeded; stderr:\n%s", f.State, f.Error, logs(t, h, r.JobID, "stderr"))
	}
	if f.Worktree == "" || f.WorktreeKept || f.LeaseID != "" {
		t.Fatalf("got worktree %q kept=%v lease %q, want a removed worktree and no lease", f.Worktree, f.WorktreeKept, f.LeaseID)
	}
	if _, err := os.Stat(f.Worktree); !os.IsNotExist(err) {
		t.Fatalf("worktree %s still exists after success: %v", f.Worktree, err)
	}
	if after := testutil.Git(t, root, "status", "--porcelain"); after != before {
		t.Fatalf("main checkout status changed:\n got %q\nwant %q", after, before)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "README.md")); string(got) != string(readme) {
		t.Fatalf("README.md changed in the main checkout: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt appeared in the main checkout")
	}
	if _, err := os.Stat(filepath.Join(root, "conf/app.ini")); err != nil {
		t.Fatalf("conf/app.ini removed from the main checkout: %v", err)
	}

	// A failing job keeps its worktree for inspection until job_clean.
	r = startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"sh", "fail.sh"}, Isolation: "worktree"})
	f = waitJob(t, h, r.JobID)
	if f.State != messages.JobFailed || !f.WorktreeKept {
		t.Fatalf("got %s kept=%v, want failed with its worktree kept", f.State, f.WorktreeKept)
	}
	if _, err := os.Stat(filepath.Join(f.Worktree, "dirty.txt")); err != nil {
		t.Fatalf("the dirty state was not carried into the worktree: %v", err)
	}
	c, err := h.JobClean(context.Background(), harness.JobCleanArgs{})
	if err != nil || len(c.Removed) != 1 || c.Removed[0] != f.Worktree {
		t.Fatalf("got clean %+v, %v; want %s removed", c, err, f.Worktree)
	}
	if _, err := os.Stat(f.Worktree); !os.IsNotExist(err) {
		t.Fatalf("kept worktree still exists after job_clean")
	}
}

func TestJobWritesHoldsDurableLease(t *testing.T) {
	h, root, repo := jobFixture(t)
	ctx := context.Background()
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"sleep", "300"}, Writes: true})
	waitFor(t, "the writing job to run", func() bool {
		s, err := h.JobStatus(ctx, harness.JobStatusArgs{JobID: r.JobID})
		return err == nil && s.State == messages.JobRunning && s.Pid > 0
	})
	patch := harness.ApplyPatchArgs{RepoID: repo, RequestID: reqID(t), Operations: nil}
	patch.Operations = writeOp("README.md", "patched\n")
	if _, err := h.ApplyPatch(ctx, patch); errs.CodeOf(err) != errs.MutationBusy {
		t.Fatalf("apply_patch during a writing job: got %v, want MUTATION_BUSY", err)
	}
	st, err := h.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ls, _ := st.Extra["durable_leases"].([]harness.DurableLease); len(ls) != 1 || ls[0].Owner != r.JobID {
		t.Fatalf("got durable leases %+v, want the job's", st.Extra["durable_leases"])
	}
	if _, err := h.JobCancel(ctx, harness.JobCancelArgs{JobID: r.JobID}); err != nil {
		t.Fatal(err)
	}
	patch.RequestID = reqID(t)
	var perr error
	waitFor(t, "the lease to be released", func() bool {
		_, perr = h.ApplyPatch(ctx, patch)
		return errs.CodeOf(perr) != errs.MutationBusy
	})
	if perr != nil {
		t.Fatalf("apply_patch after the job: %v", perr)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "README.md")); string(b) != "patched\n" {
		t.Fatalf("got README %q", b)
	}
}

func TestJobThroughputRespectsConcurrency(t *testing.T) {
	const limit, n = 3, 200
	t.Setenv(supervisors.EnvJobsConcurrency, strconv.Itoa(limit))
	h, _, repo := jobFixture(t)
	ctx := context.Background()
	start := time.Now()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}}).JobID
	}
	for _, id := range ids {
		if f := waitJob(t, h, id); f.State != messages.JobSucceeded {
			t.Fatalf("job %s: got %s %+v, want succeeded", id, f.State, f.Error)
		}
	}
	el := time.Since(start)
	st, err := h.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, ok := st.Extra["jobs"].(messages.JobStatsReply)
	if !ok {
		t.Fatalf("status has no jobs section: %+v", st.Extra)
	}
	if js.MaxObserved > limit || js.MaxObserved < 1 || js.Concurrency != limit {
		t.Fatalf("got max running %d (limit %d), want 1..%d", js.MaxObserved, js.Concurrency, limit)
	}
	t.Logf("%d jobs in %v: %.0f jobs/s, max %d running at once (limit %d)", n, el.Round(time.Millisecond), float64(n)/el.Seconds(), js.MaxObserved, limit)
	l, err := h.JobList(ctx, harness.JobListArgs{RepoID: repo, Limit: 10})
	if err != nil || len(l.Jobs) != 10 || l.Jobs[0].JobID != ids[n-1] {
		t.Fatalf("job_list: got %d jobs, %v; want the 10 newest first", len(l.Jobs), err)
	}
}

func TestJobsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	root := testutil.Repo(t, map[string]string{"README.md": "x\n"})
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	plain := startJob(t, h, harness.JobStartArgs{RepoID: reg.ID, Argv: []string{"sleep", "300"}})
	retried := startJob(t, h, harness.JobStartArgs{RepoID: reg.ID, Argv: []string{"sleep", "300"}, Retry: &harness.RetryPolicy{Max: 1}})
	var pid int
	waitFor(t, "both jobs to run", func() bool {
		a, _ := h.JobStatus(ctx, harness.JobStatusArgs{JobID: plain.JobID})
		b, _ := h.JobStatus(ctx, harness.JobStatusArgs{JobID: retried.JobID})
		pid = a.Pid
		return a.Pid > 0 && b.Pid > 0
	})
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h, err = harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	a, err := h.JobStatus(ctx, harness.JobStatusArgs{JobID: plain.JobID})
	if err != nil || a.State != messages.JobInterrupted {
		t.Fatalf("got %+v %v, want interrupted", a, err)
	}
	if pidAlive(pid) {
		t.Fatalf("process %d of the interrupted job is alive", pid)
	}
	waitFor(t, "the retried job to run again", func() bool {
		b, _ := h.JobStatus(ctx, harness.JobStatusArgs{JobID: retried.JobID})
		return b.State == messages.JobRunning && b.Attempt == 2 && b.Pid > 0 && pidAlive(b.Pid)
	})
	if _, err := h.JobCancel(ctx, harness.JobCancelArgs{JobID: retried.JobID}); err != nil {
		t.Fatal(err)
	}
}

func writeOp(path, content string) []patch.Op {
	return []patch.Op{{Op: "write", Path: path, Content: content}}
}

// Every job's start and end is in the audit log, with its exit code.
func TestJobStartAndEndAreAudited(t *testing.T) {
	h, _, repo := jobFixture(t)
	ok := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}})
	bad := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"sh", "fail.sh"}})
	waitJob(t, h, ok.JobID)
	waitJob(t, h, bad.JobID)
	want := map[string][]string{ok.JobID: {"started", messages.JobSucceeded}, bad.JobID: {"started", messages.JobFailed}}
	got := map[string][]string{}
	exit := map[string]string{}
	waitFor(t, "the job audit entries", func() bool {
		a, err := h.Audit(context.Background(), harness.AuditArgs{Kind: "job", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		got = map[string][]string{}
		for _, e := range a.Entries {
			id := e.Details["job_id"]
			got[id] = append(got[id], e.Outcome)
			if c, ok := e.Details["exit_code"]; ok {
				exit[id] = c
			}
		}
		return len(got[ok.JobID]) == 2 && len(got[bad.JobID]) == 2
	})
	for id, w := range want {
		if strings.Join(got[id], ",") != strings.Join(w, ",") {
			t.Errorf("job %s audited as %v, want %v", id, got[id], w)
		}
	}
	if exit[ok.JobID] != "0" || exit[bad.JobID] != "3" {
		t.Errorf("audited exit codes %v, want 0 and 3", exit)
	}
}
