package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/messages"
)

// slowGo puts a fake `go` first on PATH whose `go test` prints a token of
// its run (a uuid), then takes 3 s: -run TestSlow passes, -run
// TestSlowFail exits 3, -run TestFail fails at once (exit 1).
func slowGo(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	t.Setenv("GOCACHE", t.TempDir())
	script := `#!/bin/sh
case "$1" in
version) echo "go version go1.26.0-fake linux/amd64"; exit 0 ;;
test)
  echo "run $(cat /proc/sys/kernel/random/uuid)"
  case "$*" in
  *TestFail*) echo "--- FAIL: TestFail (0.00s)"; echo FAIL; exit 1 ;;
  esac
  sleep 3
  case "$*" in
  *TestSlowFail*) echo "--- FAIL: TestSlowFail (3.00s)"; echo FAIL; exit 3 ;;
  esac
  echo "ok  	example.com/demo/pkg	3.00s"
  exit 0 ;;
esac
echo "fake go: unsupported $*" >&2
exit 2
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func openFastCap(t *testing.T, fastCap time.Duration) *harness.Harness {
	t.Helper()
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, CheckFastCap: fastCap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

// checksStarted is the checks actor's count of runs started.
func checksStarted(t *testing.T, h *harness.Harness) int {
	t.Helper()
	st, err := h.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := st.Extra["checks"].(messages.CheckStatsReply)
	if !ok {
		t.Fatalf("status has no check figures: %#v", st.Extra["checks"])
	}
	return cs.Started
}

// A focused check that reaches the Fast Path cap is handed over to a
// durable job: the answer names the job and why, a call of the same
// identity while it runs answers the same job, the job ends with the
// check's own exit code and output, its pass is evidence a later call
// reuses without a new process, and the hand-over is audited.
func TestFocusedCheckOutgrowingTheFastPathContinuesAsAJob(t *testing.T) {
	slowGo(t)
	h := openFastCap(t, 300*time.Millisecond)
	_, id := checkFixture(t, h)
	ctx := context.Background()
	argv := []string{"go", "test", "./pkg", "-run", "TestSlow"}

	r, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	if r.Escalated == nil || r.Escalated.JobID == "" || r.TimedOut || r.Passed || r.Path != "durable" || r.OriginalRun.JobID != r.Escalated.JobID {
		t.Fatalf("first call: got %+v, want escalated to a job, not timed out", r)
	}
	jobID := r.Escalated.JobID
	if want := "reached the Fast Path cap of 300ms; it continues as durable job " + jobID; !strings.Contains(r.Escalated.Reason, want) ||
		!strings.Contains(r.Escalated.Reason, "job_status") {
		t.Fatalf("reason %q, want it to contain %q and name job_status", r.Escalated.Reason, want)
	}
	if r.ExitCode != -1 {
		t.Fatalf("exit code of an escalated check %d, want -1 (none yet)", r.ExitCode)
	}

	again, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	if again.Escalated == nil || again.Escalated.JobID != jobID || !again.Joined || again.Identity != r.Identity {
		t.Fatalf("a call while the job runs: got %+v, want the same job %s, joined", again, jobID)
	}

	j := waitJob(t, h, jobID)
	if j.State != messages.JobSucceeded || j.ExitCode == nil || *j.ExitCode != 0 || j.TimedOut || j.Stdout == nil ||
		!runToken.MatchString(j.Stdout.Text) || !strings.Contains(j.Stdout.Text, "ok  \texample.com/demo/pkg") {
		t.Fatalf("job: got %+v (stdout %+v), want succeeded with exit 0 and the check's output", j, j.Stdout)
	}
	started := checksStarted(t, h)
	if started != 1 {
		t.Fatalf("check runs started %d, want 1", started)
	}

	reused := waitReused(t, h, harness.RunCheckArgs{RepoID: id, Argv: argv})
	if !reused.Passed || reused.Escalated != nil || reused.OriginalRun.JobID != jobID || reused.ExitCode != 0 ||
		runToken.FindString(reused.Stdout) != runToken.FindString(j.Stdout.Text) {
		t.Fatalf("reused: got %+v, want the job's pass (token %q)", reused, runToken.FindString(j.Stdout.Text))
	}
	if got := checksStarted(t, h); got != started {
		t.Fatalf("check runs started %d after reuse, want %d", got, started)
	}
	jobs, err := h.JobList(ctx, harness.JobListArgs{RepoID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Jobs) != 1 {
		t.Fatalf("%d jobs, want the one the check continued as", len(jobs.Jobs))
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		au, err := h.Audit(ctx, harness.AuditArgs{Kind: "check", RepoID: id})
		if err != nil {
			t.Fatal(err)
		}
		if len(au.Entries) == 1 {
			e := au.Entries[0]
			if e.Operation != "run_check" || e.Outcome != "escalated" || e.Details["identity"] != r.Identity || e.Details["job_id"] != jobID ||
				e.Details["fast_path_cap_ms"] != "300" || !strings.Contains(e.Reason, jobID) {
				t.Fatalf("audit entry %+v, want the escalation of %s to %s", e, r.Identity, jobID)
			}
			break
		}
		if len(au.Entries) > 1 || time.Now().After(deadline) {
			t.Fatalf("%d check audit entries, want 1", len(au.Entries))
		}
		runtime.Gosched() // each query is a round trip to the audit actor
	}
}

// The job of an escalated check that fails reports the check's own exit
// code, not a time-out; a check that fails within the cap is not
// escalated.
func TestEscalatedCheckFailsWithItsOwnExitCode(t *testing.T) {
	slowGo(t)
	h := openFastCap(t, 300*time.Millisecond)
	_, id := checkFixture(t, h)
	ctx := context.Background()

	fast, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: []string{"go", "test", "./pkg", "-run", "TestFail"}})
	if err != nil {
		t.Fatal(err)
	}
	if fast.Escalated != nil || fast.Path != "fast" || fast.ExitCode != 1 || fast.Passed || fast.TimedOut {
		t.Fatalf("a check failing within the cap: got %+v, want exit 1 on the fast path, not escalated", fast)
	}

	r, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: []string{"go", "test", "./pkg", "-run", "TestSlowFail"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Escalated == nil {
		t.Fatalf("got %+v, want escalated", r)
	}
	j := waitJob(t, h, r.Escalated.JobID)
	if j.State != messages.JobFailed || j.ExitCode == nil || *j.ExitCode != 3 || j.TimedOut || j.Stdout == nil || !strings.Contains(j.Stdout.Text, "--- FAIL: TestSlowFail") {
		t.Fatalf("job: got %+v (stdout %+v), want failed with exit 3 and the check's output", j, j.Stdout)
	}
	// A check whose own timeout is within the cap times out there.
	own, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: []string{"go", "test", "./pkg", "-run", "TestSlow"}, TimeoutMs: 200})
	if err != nil {
		t.Fatal(err)
	}
	if own.Escalated != nil || !own.TimedOut || own.Path != "fast" {
		t.Fatalf("a check reaching its own timeout: got %+v, want timed out on the fast path", own)
	}
}

// waitReused calls run_check until it answers reused evidence: the job's
// end reaches the check actor a moment after job_status sees it.
func waitReused(t *testing.T, h *harness.Harness, args harness.RunCheckArgs) *harness.RunCheckResult {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := h.RunCheck(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		if r.Reused {
			return r
		}
		if r.Escalated == nil || time.Now().After(deadline) {
			t.Fatalf("got %+v, want reused evidence", r)
		}
	}
}
