package actors

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// outlived is a job actor of a daemon killed with -9: when its system goes
// away its timers go too, but nothing stops its process, which lives on.
type outlived struct{ *jobActor }

func (o outlived) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Stopping); ok {
		o.stopTimers()
		return
	}
	o.jobActor.Receive(ctx)
}

func outliving(p actor.Producer) actor.Producer {
	return func() actor.Actor { return outlived{p().(*jobActor)} }
}

// processGone reports whether pid has exited (gone, or a zombie not reaped
// yet: it runs no more).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// After a restart, a writing job's durable lease that expired while the
// daemon was down is fenced out, not dropped: the job's process outlived
// the killed daemon (it ignores SIGTERM and appends to f every 50 ms), so
// a Fast Path write on f waits, while f keeps growing, until the restarted
// jobs actor has killed the process and released the lease; f never grows
// after the grant.
func TestExpiredJobLeaseFencedAcrossRestart(t *testing.T) {
	dataDir := t.TempDir()
	open := func() *persistence.Store {
		st, err := persistence.Open(persistence.Options{Dir: filepath.Join(dataDir, "store")})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}

	// The first daemon starts the job.
	st1 := open()
	s1 := newTestSystem(t)
	co1 := spawnCheckout(t, s1, st1, clk, "co1")
	ix1 := &RepoIndex{}
	ix1.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: co1}})
	jobs1 := spawnJobsWith(t, s1, st1, JobsConfig{Index: ix1, LeaseTTL: lease.MinTTL, Grace: time.Minute, childWrap: outliving})
	f, running := startAppendingJob(t, s1, jobs1, "job_outlives")
	if running.LeaseID == "" || running.RunID == "" {
		t.Fatalf("running job: lease %q run marker %q, want both", running.LeaseID, running.RunID)
	}
	t.Cleanup(func() { // whatever happens, the writer does not outlive the test
		_ = os.Remove(f)
		if !processGone(running.Pid) {
			_ = syscall.Kill(-running.Pid, syscall.SIGKILL)
		}
	})

	// kill -9: the daemon is gone, the job's process is not.
	if err := s1.Root.PoisonFuture(jobs1).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := s1.Root.PoisonFuture(co1).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}
	if processGone(running.Pid) {
		t.Fatal("the job's process died with the daemon; the test needs it alive")
	}

	// The restart, an hour later (by the lease's clock): the lease expired
	// while the daemon was down. The checkout loads before the jobs actor
	// has swept the job's leftovers.
	st2 := open()
	t.Cleanup(func() { _ = st2.Close() })
	s2 := newTestSystem(t)
	clk.add(time.Hour)
	co2 := spawnCheckout(t, s2, st2, clk, "co2")
	write := answerOf(s2.Root.RequestFuture(co2, messages.Acquire{Owner: "agent", Operation: "apply_patch",
		Keys: []string{pathKey("f")}, Wait: 20 * time.Second}, 30*time.Second))
	before := fileSize(t, f)
	time.Sleep(400 * time.Millisecond) // eight of the loop's turns: the job still writes, the write still waits
	if grew := fileSize(t, f); grew == before {
		t.Fatalf("f stopped growing at %d bytes before the restarted daemon killed the job", grew)
	}
	select {
	case a := <-write:
		t.Fatalf("the write was answered (%#v, %v) while the job it would overwrite still ran", a.res, a.err)
	default:
	}

	// The jobs actor of the restarted daemon kills the leftovers and
	// releases the lease.
	ix2 := &RepoIndex{}
	ix2.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: co2}})
	jobs2 := spawnJobsWith(t, s2, st2, JobsConfig{Index: ix2, LeaseTTL: lease.MinTTL})
	a := <-write
	if a.err != nil {
		t.Fatal(a.err)
	}
	granted := want[messages.Acquired](t, a.res)
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
	if err := st2.Get(persistence.LeaseKey(testRepo.CheckoutID, running.LeaseID), &messages.LeaseInfo{}); err != persistence.ErrNotFound {
		t.Fatalf("record of the fenced lease after its release: %v, want it deleted", err)
	}
	if granted.Lease.Tokens[pathKey("f")] == 0 {
		t.Fatalf("grant without a fencing token: %+v", granted.Lease)
	}
}

// futureAnswer is what a future answered.
type futureAnswer struct {
	res any
	err error
}

// answerOf delivers f's answer on the channel it returns (one waiter on
// f: its Result wakes only one).
func answerOf(f *actor.Future) <-chan futureAnswer {
	c := make(chan futureAnswer, 1)
	go func() {
		res, err := f.Result()
		c <- futureAnswer{res, err}
	}()
	return c
}

func TestLeaseAtLoad(t *testing.T) {
	tests := []struct {
		name   string
		live   bool
		holder holderState
		want   loadFate
	}{
		{"live, holder gone", true, holderGone, restoreAtLoad},
		{"live, job running", true, holderMayRun, restoreAtLoad},
		{"expired, holder gone", false, holderGone, dropAtLoad},
		{"expired, job running under it", false, holderMayRun, fenceAtLoad},
		{"expired, job record unreadable", false, holderUnknown, fenceAtLoad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := leaseAtLoad(tt.live, tt.holder); got != tt.want {
				t.Errorf("leaseAtLoad(%v, %v) = %v, want %v", tt.live, tt.holder, got, tt.want)
			}
		})
	}
}

// What the checkout does at load with a durable lease that expired while
// harnessd was down, by what the store says of its job: fenced out (its
// keys busy, its record kept) only while the job's record says it runs
// under that lease; dropped otherwise, as before. A fenced lease goes
// when its holder's Release confirms that its processes are dead.
func TestExpiredDurableLeaseAtLoad(t *testing.T) {
	tests := []struct {
		name   string
		op     string
		job    *messages.Job // the record of the lease's owner; nil = none
		fenced bool
	}{
		{"a job running under it", JobLeaseOperation, &messages.Job{ID: "job_a", State: messages.JobRunning, LeaseID: "=self"}, true},
		{"a job finished", JobLeaseOperation, &messages.Job{ID: "job_a", State: messages.JobFailed, LeaseID: "=self"}, false},
		{"a job interrupted", JobLeaseOperation, &messages.Job{ID: "job_a", State: messages.JobInterrupted, LeaseID: "=self"}, false},
		{"a job running under another lease", JobLeaseOperation, &messages.Job{ID: "job_a", State: messages.JobRunning, LeaseID: "other"}, false},
		{"a job unknown", JobLeaseOperation, nil, false},
		{"not a job's", "other_op", &messages.Job{ID: "job_a", State: messages.JobRunning, LeaseID: "=self"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := newTestSystem(t), newStore(t)
			clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			co := spawnCheckout(t, s, st, clk, "co1")
			ws := string(lease.WorkspaceKey(testRepo.CheckoutID))
			d := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "job_a", Operation: tt.op, Keys: []string{ws}, Visibility: "durable", TTL: lease.MinTTL}))
			if tt.job != nil {
				j := *tt.job
				if j.LeaseID == "=self" {
					j.LeaseID = d.Lease.ID
				}
				if err := st.PutSync(persistence.JobKey(j.ID), j); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Root.StopFuture(co).Wait(); err != nil {
				t.Fatal(err)
			}
			clk.add(time.Hour)
			co2 := spawnCheckout(t, s, st, clk, "co2")
			res := acquire(t, s, co2, messages.Acquire{Owner: "agent", Operation: "apply_patch", Keys: []string{pathKey("f")}})
			kept := st.Get(persistence.LeaseKey(testRepo.CheckoutID, d.Lease.ID), &messages.LeaseInfo{}) != persistence.ErrNotFound
			if !tt.fenced {
				want[messages.Acquired](t, res)
				if kept {
					t.Fatal("the dropped lease's record is still stored")
				}
				return
			}
			if f := want[messages.Failed](t, res); errs.CodeOf(ErrorOf(f)) != errs.MutationBusy {
				t.Fatalf("write beside a fenced lease = %v, want MUTATION_BUSY", ErrorOf(f))
			}
			if !kept {
				t.Fatal("the fenced lease's record was deleted at load")
			}
			// Its renewal is LEASE_LOST (the job hears it, and is killed).
			if f := want[messages.Failed](t, request(t, s, co2, messages.Renew{LeaseID: d.Lease.ID, NotifyLost: true})); errs.CodeOf(ErrorOf(f)) != errs.LeaseLost {
				t.Fatalf("renewal of a fenced lease = %v, want LEASE_LOST", ErrorOf(f))
			}
			// Its holder confirms: the keys go.
			if r := want[messages.Released](t, request(t, s, co2, messages.Release{LeaseID: d.Lease.ID})); !r.Known {
				t.Fatal("release of the fenced lease: not known")
			}
			want[messages.Acquired](t, acquire(t, s, co2, messages.Acquire{Owner: "agent", Operation: "apply_patch", Keys: []string{pathKey("f")}}))
		})
	}
}
