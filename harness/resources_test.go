package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// burnScript holds 64 MiB (a string doubled 26 times) and does a fixed
// amount of work (about 3.4 s of CPU here: its CPU time does not shrink
// when a loaded machine gives it less of the wall clock); short-lived processes before it count through the
// shell's reaped children.
const burnScript = `for i in 1 2 3; do /bin/true; done
awk 'BEGIN{s="x"; for(i=0;i<26;i++) s=s s; for(i=0;i<2.5e8;i++) n+=i; print length(s)}'
`

const minPeak = 50 << 20

// TestJobResourcesWhileRunningAndAfter is #35's Must-show: a job that
// burns CPU and memory shows its figures in job_status while it runs
// (cpu_ms above 0 and rising, the peak RSS of its 64 MiB) and in its
// record after it ended.
func TestJobResourcesWhileRunningAndAfter(t *testing.T) {
	h, root, repo := fixture(t)
	testutil.WriteFile(t, root, "burn.sh", burnScript)
	testutil.Git(t, root, "add", "burn.sh")
	testutil.Git(t, root, "commit", "-q", "-m", "burn")
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: []string{"sh", "burn.sh"}})

	status := func() *harness.JobResult {
		t.Helper()
		s, err := h.JobStatus(context.Background(), harness.JobStatusArgs{JobID: r.JobID})
		if err != nil {
			t.Fatalf("job_status: %v", err)
		}
		if s.State != messages.JobQueued && s.State != messages.JobRunning {
			t.Fatalf("the job ended (%s, %+v) before its figures were seen while it ran", s.State, s.Resources)
		}
		return s
	}
	var first messages.Resources
	waitFor(t, "job_status to show cpu_ms > 0 and the 64 MiB while the job runs", func() bool {
		s := status()
		if s.Resources == nil || s.Resources.CPUMs <= 0 || s.Resources.PeakRSSBytes < minPeak {
			return false
		}
		first = *s.Resources
		return true
	})
	waitFor(t, "cpu_ms to rise while the job runs", func() bool {
		s := status()
		return s.Resources != nil && s.Resources.CPUMs > first.CPUMs
	})

	f := waitJob(t, h, r.JobID)
	if f.State != messages.JobSucceeded {
		t.Fatalf("job %s: %+v, want succeeded", f.State, f.Error)
	}
	got := f.Resources
	if got == nil {
		t.Fatal("the ended job's status has no resources")
	}
	if got.CPUMs <= first.CPUMs || got.CPUMs < 1000 {
		t.Errorf("final cpu_ms = %d, want above the running %d and at least 1000 for ~3 s of spinning", got.CPUMs, first.CPUMs)
	}
	if got.PeakRSSBytes < minPeak {
		t.Errorf("final peak_rss_bytes = %d, want at least %d", got.PeakRSSBytes, minPeak)
	}
	if got.Processes < 2 {
		t.Errorf("processes = %d, want at least the shell and awk", got.Processes)
	}
	// The record, as the jobs list keeps it, carries the same figures.
	l, err := h.JobList(context.Background(), harness.JobListArgs{RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range l.Jobs {
		if j.JobID == r.JobID && (j.Resources == nil || *j.Resources != *got) {
			t.Errorf("job_list's record resources = %+v, want %+v", j.Resources, *got)
		}
	}
}

// TestCheckResources: a check's figures come back in run_check's
// original_run, on the Fast Path (one process) as on the Durable Path
// (the job's record). The check is a go test whose "go" does about 0.7 s
// of CPU work holding 16 MiB.
func TestCheckResources(t *testing.T) {
	fakeGoScript(t, `awk 'BEGIN{s="x"; for(i=0;i<24;i++) s=s s; for(i=0;i<5e7;i++) n+=i; print length(s)}'`)
	h := openAllowing(t, "")
	_, id := checkFixture(t, h)
	for _, tc := range []struct {
		path string
		args harness.RunCheckArgs
	}{
		{"fast", harness.RunCheckArgs{RepoID: id, Argv: focusedCheck}},
		{"durable", harness.RunCheckArgs{RepoID: id, Argv: []string{"go", "test", "./..."}, TimeoutMs: 60_000}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := h.RunCheck(ctx, tc.args)
			if err != nil {
				t.Fatalf("run_check: %v", err)
			}
			if !res.Passed || res.Path != tc.path {
				t.Fatalf("run_check passed %v on %s, want passed on %s (%s)", res.Passed, res.Path, tc.path, res.Stderr)
			}
			rs := res.OriginalRun.Resources
			if rs == nil || rs.CPUMs < 200 || rs.PeakRSSBytes < 16<<20 || rs.Processes < 1 {
				t.Errorf("original_run.resources = %+v, want cpu_ms >= 200, peak >= 16 MiB, processes >= 1", rs)
			}
		})
	}
}
