package actors

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A restart within the TTL of a writing job's durable lease: the checkout
// restores the lease live (its job's process outlived the killed daemon),
// and the lease expires before the restarted jobs actor has loaded and
// swept the job's leftovers, which takes longer than FenceOwnerWait. The
// lease is fenced out, not freed (its job's record says it runs under it:
// the fence waits FenceOutMax for the jobs actor, not FenceOwnerWait for
// an owner to renew); before, its keys went after FenceOwnerWait. A Fast
// Path write on the file the job appends to waits while the file grows, is
// granted only once the jobs actor killed the process, and the file never
// grows after the grant.
func TestJobLeaseExpiringWhileJobsLoadIsFenced(t *testing.T) {
	dataDir := t.TempDir()
	open := func() *persistence.Store {
		st, err := persistence.Open(persistence.Options{Dir: filepath.Join(dataDir, "store")})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	st1 := open()
	s1 := newTestSystem(t)
	co1 := spawnCheckout(t, s1, st1, clk, "co1")
	ix1 := &RepoIndex{}
	ix1.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: co1}})
	jobs1 := spawnJobsWith(t, s1, st1, JobsConfig{Index: ix1, LeaseTTL: lease.MinTTL, Grace: time.Minute, childWrap: outliving})
	f, running := startAppendingJob(t, s1, jobs1, "job_outlives")
	t.Cleanup(func() {
		_ = os.Remove(f)
		if !processGone(running.Pid) {
			_ = syscall.Kill(-running.Pid, syscall.SIGKILL)
		}
	})
	if err := s1.Root.PoisonFuture(jobs1).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := s1.Root.PoisonFuture(co1).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}

	// The restart comes within the TTL: the checkout restores the lease
	// live. Then it expires, the jobs actor not loaded yet.
	st2 := open()
	t.Cleanup(func() { _ = st2.Close() })
	s2 := newTestSystem(t)
	co2 := spawnCheckout(t, s2, st2, clk, "co2")
	leases := want[messages.LeaseList](t, request(t, s2, co2, messages.ListLeases{}))
	if len(leases.Leases) != 1 || leases.Leases[0].ID != running.LeaseID {
		t.Fatalf("leases restored: %+v, want the job's %s", leases.Leases, running.LeaseID)
	}
	clk.add(time.Hour)
	write := answerOf(s2.Root.RequestFuture(co2, messages.Acquire{Owner: "agent", Operation: "apply_patch",
		Keys: []string{pathKey("f")}, Wait: 20 * time.Second}, 30*time.Second))
	// The lease's actor sees its expiry within a tick (a tenth of the
	// TTL) and fences the lease out; its owner is unknown (nobody renewed
	// it since the restart). The jobs actor's load then takes longer than
	// FenceOwnerWait: still the write waits while the job writes.
	stillWaiting := func(when string) {
		t.Helper()
		before := fileSize(t, f)
		time.Sleep(5 * leaseTickEvery(lease.MinTTL)) // five ticks of the lease's clock
		if grew := fileSize(t, f); grew == before {
			t.Fatalf("%s: f stopped growing at %d bytes before the restarted daemon killed the job", when, grew)
		}
		select {
		case a := <-write:
			t.Fatalf("%s: the write was answered (%#v, %v) while the job it would overwrite still ran", when, a.res, a.err)
		default:
		}
	}
	stillWaiting("expired")
	clk.add(FenceOwnerWait + time.Minute)
	stillWaiting("fenced longer than FenceOwnerWait")

	ix2 := &RepoIndex{}
	ix2.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: co2}})
	jobs2 := spawnJobsWith(t, s2, st2, JobsConfig{Index: ix2, LeaseTTL: lease.MinTTL})
	a := <-write
	if a.err != nil {
		t.Fatal(a.err)
	}
	want[messages.Acquired](t, a.res)
	atGrant := fileSize(t, f)
	if !processGone(running.Pid) {
		t.Fatalf("the job's process %d still ran when the write was granted", running.Pid)
	}
	time.Sleep(300 * time.Millisecond) // six of the loop's turns: a live writer would have appended
	if after := fileSize(t, f); after != atGrant {
		t.Fatalf("f grew from %d to %d bytes after the write was granted", atGrant, after)
	}
	if j := want[messages.JobInfo](t, request(t, s2, jobs2, messages.JobGet{ID: "job_outlives"})).Job; j.State != messages.JobInterrupted {
		t.Fatalf("job after the restart: %s, want interrupted", j.State)
	}
}
