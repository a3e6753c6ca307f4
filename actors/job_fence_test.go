package actors

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
)

// fileSize is the size of path, 0 when it does not exist.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return 0
		}
		t.Fatal(err)
	}
	return fi.Size()
}

// A writing job whose lease expired (a daemon stall longer than the TTL,
// here the lease's clock moved an hour on) is fenced out before anyone
// else gets its keys: a Fast Path write waiting for the file the job
// appends to is granted only once the job's processes are dead, though
// they ignore SIGTERM and the job's grace is long; after the grant the
// file never grows again.
func TestJobLosingItsLeaseIsDeadBeforeTheKeysGo(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCheckout(t, s, st, clk, "co-"+t.Name())
	ix := &RepoIndex{}
	ix.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: co}})
	// A grace far longer than the test: only a kill without one passes.
	jobs := spawnJobsWith(t, s, st, JobsConfig{Index: ix, LeaseTTL: lease.MinTTL, Grace: time.Minute})

	f, running := startAppendingJob(t, s, jobs, "job_fence")
	if running.LeaseID == "" || running.Pid == 0 {
		t.Fatalf("running job: lease %q pid %d, want both", running.LeaseID, running.Pid)
	}

	// The stall: the lease's clock jumps past its expiry and it looks.
	s.Root.Send(co, messages.LeaseTick{Now: clk.add(time.Hour)})
	res, err := s.Root.RequestFuture(co, messages.Acquire{Owner: "agent", Operation: "apply_patch",
		Keys: []string{pathKey("f")}, Wait: 20 * time.Second}, 30*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	granted := want[messages.Acquired](t, res)
	atGrant := fileSize(t, f)

	j := want[messages.JobInfo](t, request(t, s, jobs, messages.JobGet{ID: "job_fence"})).Job
	if !JobFinal(j.State) || j.Error == nil || j.Error.Code != string(errs.LeaseLost) {
		t.Fatalf("job when the keys were granted: %s %+v, want ended with LEASE_LOST", j.State, j.Error)
	}
	if err := syscall.Kill(running.Pid, 0); err != syscall.ESRCH {
		t.Fatalf("the job's process %d when the keys were granted: kill(0) = %v, want ESRCH", running.Pid, err)
	}
	time.Sleep(300 * time.Millisecond) // six of the loop's 50 ms turns: a live writer would have appended
	if after := fileSize(t, f); after != atGrant {
		t.Fatalf("f grew from %d to %d bytes after the write was granted", atGrant, after)
	}
	if granted.Lease.Tokens[pathKey("f")] == 0 {
		t.Fatalf("grant without a fencing token: %+v", granted.Lease)
	}
}

func TestFenceGivesUp(t *testing.T) {
	tests := []struct {
		name       string
		ownerKnown bool
		waited     time.Duration
		want       bool
	}{
		{"owner known, just expired", true, 0, false},
		{"owner known, past the owner wait", true, FenceOwnerWait, false},
		{"owner known, at the bound", true, FenceOutMax, true},
		{"no owner, just expired", false, 0, false},
		{"no owner, at the owner wait", false, FenceOwnerWait, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fenceGivesUp(tt.ownerKnown, tt.waited); got != tt.want {
				t.Errorf("fenceGivesUp(%v, %s) = %v, want %v", tt.ownerKnown, tt.waited, got, tt.want)
			}
		})
	}
}

// startAppendingJob submits a writing job, id, that ignores SIGTERM and
// appends to a file f every 50 ms, and waits until it runs and wrote:
// the process may write before its job actor recorded its pid.
func startAppendingJob(t *testing.T, s *actor.ActorSystem, jobs *actor.PID, id string) (f string, running messages.Job) {
	t.Helper()
	dir := t.TempDir()
	f = filepath.Join(dir, "f")
	argv := []string{"sh", "-c", "trap '' TERM; while :; do echo x >> f; sleep 0.05; done"}
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: id, RepoID: testRepo.ID,
		CheckoutID: testRepo.CheckoutID, Root: dir, Argv: argv, Writes: true, TimeoutS: 600}}))
	deadline := time.Now().Add(20 * time.Second)
	for running.Pid == 0 || fileSize(t, f) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the job never ran and wrote: %+v", running)
		}
		time.Sleep(10 * time.Millisecond) // polling a process, not an actor
		running = want[messages.JobInfo](t, request(t, s, jobs, messages.JobGet{ID: id})).Job
	}
	return f, running
}
