package job_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// crashEnv names the data dir and repository of the crashing helper.
const crashEnv = "HARNESSD_JOB_CRASH_DIR"

// TestJobStartCrashHelper is the process killed by TestJobStartKilledAfterItsRecord:
// it starts a job and is killed (SIGKILL, by itself: the failpoint
// HARNESSD_FAILPOINT=after-job-record) as soon as the jobs actor has
// stored the job, before job_start answers.
func TestJobStartCrashHelper(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("the helper of TestJobStartKilledAfterItsRecord")
	}
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: filepath.Join(dir, "repo")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.JobStart(ctx, crashArgs(reg.ID))
	t.Fatalf("job_start answered (%v) though the process was to be killed before", err)
}

func crashArgs(repo string) harness.JobStartArgs {
	return harness.JobStartArgs{RepoID: repo, RequestID: "crash-1", Argv: []string{"true"}}
}

// A kill -9 once the job's record is stored but before job_start answers:
// after the restart, the retry of the same request_id replays that job
// (the record and the request's completion are one transaction). Before,
// the record was stored and the completion not: the retry answered
// REQUEST_OUTCOME_UNKNOWN while the job itself ran after the restart.
func TestJobStartKilledAfterItsRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	if err := os.Symlink(repo, filepath.Join(dir, "repo")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestJobStartCrashHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir, "HARNESSD_FAILPOINT=after-job-record")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(ee.String(), "killed") {
		t.Fatalf("the helper was not killed: %v\n%s", err, out)
	}

	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close(ctx) }()
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: filepath.Join(dir, "repo")})
	if err != nil {
		t.Fatal(err)
	}
	list, err := h.JobList(ctx, harness.JobListArgs{})
	if err != nil || len(list.Jobs) != 1 {
		t.Fatalf("jobs after the kill: %+v, %v; want the one stored", list, err)
	}
	r, err := h.JobStart(ctx, crashArgs(reg.ID))
	if err != nil {
		t.Fatalf("the retry after the kill: %v; want the stored job replayed", err)
	}
	if !r.Replayed || r.JobID != list.Jobs[0].JobID {
		t.Fatalf("the retry answered job %s (replayed %v); want %s replayed", r.JobID, r.Replayed, list.Jobs[0].JobID)
	}
}
