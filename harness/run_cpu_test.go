package harness_test

import (
	"context"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// cpuScript spins until its own CPU time (user+system, in clock ticks of
// /proc/self/stat) reaches 2 s, whatever else loads the machine; at most
// 60 s of wall time.
const cpuScript = `awk 'BEGIN{srand(); t0=srand(); while (srand()-t0 < 60) { for (i=0; i<100000; i++) n++; if ((getline l < "/proc/self/stat") > 0) { close("/proc/self/stat"); split(l, f, " "); if (f[14]+f[15] >= 200) exit } } }'
`

// TestRunCPUBudget is #35's "run budgets may bound CPU seconds": a run
// with cpu_seconds 1 starts a job that burns 2 s of CPU; once it ended,
// the run's next run_command and job_start answer BUDGET_EXCEEDED naming
// cpu_seconds, while reads still run. A child run's job is charged to
// its parent's budget too. A run without the budget is unaffected by the
// same work.
func TestRunCPUBudget(t *testing.T) {
	h, root, repo := fixture(t)
	testutil.WriteFile(t, root, "cpu.sh", cpuScript)
	testutil.Git(t, root, "add", "cpu.sh")
	testutil.Git(t, root, "commit", "-q", "-m", "cpu")
	ctx := context.Background()
	run := func(args harness.RunStartArgs) string {
		t.Helper()
		r, err := h.RunStart(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		return r.RunID
	}
	limited := run(harness.RunStartArgs{Goal: "bounded cpu", Budget: harness.RunBudget{CPUSeconds: 1}})
	free := run(harness.RunStartArgs{Goal: "no cpu bound", Budget: harness.RunBudget{Commands: 10}})
	parent := run(harness.RunStartArgs{Goal: "a parent with a cpu bound", Budget: harness.RunBudget{CPUSeconds: 1}})
	child := run(harness.RunStartArgs{Goal: "its child, unbounded", ParentRunID: parent})

	burn := map[string]string{}
	for _, id := range []string{limited, free, child} {
		j, err := h.JobStart(harness.WithRun(ctx, id), harness.JobStartArgs{RepoID: repo, RequestID: "cpu-" + id, Argv: []string{"sh", "cpu.sh"}, TimeoutS: 120})
		if err != nil {
			t.Fatalf("job_start in %s: %v", id, err)
		}
		burn[id] = j.JobID
	}
	for id, job := range burn {
		j := waitJobWithin(t, h, job, 120)
		if j.State != messages.JobSucceeded || j.Resources == nil || j.Resources.CPUMs < 1900 {
			t.Fatalf("the burn job of %s: %s %+v resources %+v; want succeeded with about 2 s of CPU", id, j.State, j.Error, j.Resources)
		}
	}

	// The run that crossed its budget: commands and jobs refused, naming
	// cpu_seconds; reads still run.
	in := harness.WithRun(ctx, limited)
	_, err := h.RunCommand(in, harness.RunCommandArgs{RepoID: repo, Argv: []string{"git", "status"}})
	wantCPURefusal(t, "run_command after the burn", err, limited)
	_, err = h.JobStart(in, harness.JobStartArgs{RepoID: repo, RequestID: "cpu-after", Argv: []string{"true"}})
	wantCPURefusal(t, "job_start after the burn", err, limited)
	if _, err := h.ReadFile(in, harness.ReadFileArgs{RepoID: repo, Path: "README.md"}); err != nil {
		t.Fatalf("a read in the run past its cpu_seconds: %v", err)
	}
	if st := runOf(t, h, ctx, limited); st.Counters.CPUMs < 1900 {
		t.Fatalf("limited run counters %+v, want cpu_ms of its job", st.Counters)
	}

	// A child's job draws on its parent's cpu_seconds: the parent and the
	// child (which draws on it) are refused.
	ps := runOf(t, h, ctx, parent)
	if ps.Drawn.CPUMs < 1900 || ps.Counters.CPUMs != 0 {
		t.Fatalf("parent: counters %+v drawn %+v; want the child's cpu drawn", ps.Counters, ps.Drawn)
	}
	_, err = h.RunCommand(harness.WithRun(ctx, parent), harness.RunCommandArgs{RepoID: repo, Argv: []string{"git", "status"}})
	wantCPURefusal(t, "the parent's run_command", err, parent)
	_, err = h.RunCommand(harness.WithRun(ctx, child), harness.RunCommandArgs{RepoID: repo, Argv: []string{"git", "status"}})
	wantCPURefusal(t, "the child's run_command", err, parent)

	// The same work in a run without cpu_seconds is counted, not refused.
	fin := harness.WithRun(ctx, free)
	if _, err := h.RunCommand(fin, harness.RunCommandArgs{RepoID: repo, Argv: []string{"git", "status"}}); err != nil {
		t.Fatalf("run_command in the run without cpu_seconds: %v", err)
	}
	if _, err := h.JobStart(fin, harness.JobStartArgs{RepoID: repo, RequestID: "cpu-free-after", Argv: []string{"true"}}); err != nil {
		t.Fatalf("job_start in the run without cpu_seconds: %v", err)
	}
	if st := runOf(t, h, ctx, free); st.Counters.CPUMs < 1900 {
		t.Fatalf("free run counters %+v, want cpu_ms of its job", st.Counters)
	}
}

func wantCPURefusal(t *testing.T, what string, err error, runID string) {
	t.Helper()
	if errs.CodeOf(err) != errs.BudgetExceeded {
		t.Fatalf("%s: %v, want BUDGET_EXCEEDED", what, err)
	}
	d := errs.From(err).Details
	if d["resource"] != "cpu_seconds" || d["run_id"] != runID || d["limit"] != int64(1) {
		t.Fatalf("%s: details %v, want resource cpu_seconds of run %s, limit 1", what, d, runID)
	}
}

func waitJobWithin(t *testing.T, h *harness.Harness, id string, waitS int) *harness.JobResult {
	t.Helper()
	r, err := h.JobStatus(context.Background(), harness.JobStatusArgs{JobID: id, WaitS: waitS})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Finished() {
		t.Fatalf("job %s still %s after %ds", id, r.State, waitS)
	}
	return r
}
