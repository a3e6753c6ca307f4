package actors

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A job that ends while the store refuses writes (a full disk) is not
// left running: job_status answers its outcome (succeeded, exit 0) from
// memory, and the job actor stores it once the disk takes writes again.
func TestJobEndStoredOnceTheDiskTakesWrites(t *testing.T) {
	faults := &persistence.Faults{}
	st, err := persistence.Open(persistence.Options{InMemory: true, Faults: faults, RetryWritesAfter: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := newTestSystem(t)
	jobs := jobsUnderTest(t, s, st, 2, false)
	dir := t.TempDir()
	argv := []string{"sh", "-c", "touch started; while [ ! -f go ]; do sleep 0.01; done; exit 0"}
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: "job_full", RepoID: "repo_x", Root: dir, Argv: argv, TimeoutS: 60}}))
	waitFile(t, filepath.Join(dir, "started"))

	faults.FailWrites(syscall.ENOSPC)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j := finalJob(t, s, jobs, "job_full")
	if j.State != messages.JobSucceeded || j.ExitCode == nil || *j.ExitCode != 0 {
		t.Fatalf("job_status while the disk is full = %s exit %v, want succeeded with exit 0", j.State, j.ExitCode)
	}
	var stored messages.Job
	if err := st.Get(persistence.JobKey("job_full"), &stored); err != nil || stored.State != messages.JobRunning {
		t.Fatalf("stored while the disk is full = %s, %v; want still running (the write was refused)", stored.State, err)
	}

	faults.FailWrites(nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := st.Get(persistence.JobKey("job_full"), &stored); err == nil && stored.State == messages.JobSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the final state was never stored: stored %s", stored.State)
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond) // the job actor's backoff timer
	}
	if stored.ExitCode == nil || *stored.ExitCode != 0 {
		t.Fatalf("stored exit code = %v, want 0", stored.ExitCode)
	}
	if j := want[messages.JobInfo](t, request(t, s, jobs, messages.JobGet{ID: "job_full"})).Job; j.State != messages.JobSucceeded {
		t.Fatalf("job_status after the store = %s", j.State)
	}
}

func TestNextFinalRetry(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, finalRetryFirst},
		{finalRetryFirst, 2 * finalRetryFirst},
		{20 * time.Second, finalRetryMax},
		{finalRetryMax, finalRetryMax},
	} {
		if got := nextFinalRetry(tc.in); got != tc.want {
			t.Errorf("nextFinalRetry(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
