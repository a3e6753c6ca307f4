package actors

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// One test per actor type: panic it mid-flight (a crash message, handled
// by the real actor wrapped in crashOn), check that the requester got an
// error reply rather than a timeout, and that the actor's state after the
// supervisor restarted it is its stored state. (The registry and the audit
// writer have theirs in registry_test.go and audit_test.go.)

// crashable wraps a producer so that its actors panic on crash{}.
func crashable(p actor.Producer) actor.Producer {
	return func() actor.Actor { return crashOn{p()} }
}

// spawnCrashable spawns the actor of p under the root, wrapped in crashOn
// and the Recover middleware, as the supervisors spawn theirs.
func spawnCrashable(t *testing.T, s *actor.ActorSystem, name string, p actor.Producer) *actor.PID {
	t.Helper()
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(crashable(p), actor.WithReceiverMiddleware(Recover(zap.NewNop()))), name)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// crashNow makes pid panic and checks the reply: INTERNAL, at once.
func crashNow(t *testing.T, s *actor.ActorSystem, pid *actor.PID) {
	t.Helper()
	start := time.Now()
	f := want[messages.Failed](t, request(t, s, pid, crash{}))
	if errs.CodeOf(ErrorOf(f)) != errs.Internal {
		t.Fatalf("crash reply = %v, want INTERNAL", ErrorOf(f))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("crash reply took %s: the requester waited for a timeout", d)
	}
	// The restart is over once the fresh instance answers.
	want[messages.Pong](t, request(t, s, pid, messages.Ping{}))
}

// failedWith waits for a future and checks it answered Failed with code.
func failedWith(t *testing.T, f *actor.Future, code errs.Code) {
	t.Helper()
	v, err := f.Result()
	if err != nil {
		t.Fatalf("waiting requester: %v, want a Failed reply", err)
	}
	if fl, ok := v.(messages.Failed); !ok || errs.CodeOf(ErrorOf(fl)) != code {
		t.Fatalf("waiting requester got %#v, want Failed %s", v, code)
	}
}

func TestCheckoutRestartAfterPanic(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co := spawnCrashable(t, s, "co-crash", NewCheckout(testRepo, st, zap.NewNop(), clk.now))
	ws := string(lease.WorkspaceKey(testRepo.CheckoutID))
	durable := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "job", Operation: "job_start", Keys: []string{ws}, Visibility: "durable"}))
	waiter := s.Root.RequestFuture(co, messages.Acquire{Owner: "w", Operation: "apply_patch", Keys: []string{pathKey("f")}, Wait: 10 * time.Second}, 10*time.Second)
	want[messages.Pong](t, request(t, s, co, messages.Ping{})) // the waiter is queued
	crashNow(t, s, co)
	failedWith(t, waiter, errs.Unavailable)
	// The durable lease came back from the store; the fencing marks too.
	f := want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "x", Operation: "apply_patch", Keys: []string{pathKey("f")}}))
	if errs.CodeOf(ErrorOf(f)) != errs.MutationBusy {
		t.Fatalf("write under the restored durable lease: %v, want MUTATION_BUSY", ErrorOf(f))
	}
	want[messages.Released](t, request(t, s, co, messages.Release{LeaseID: durable.Lease.ID}))
	again := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "job", Operation: "job_start", Keys: []string{ws}}))
	if again.Lease.Tokens[ws] <= durable.Lease.Tokens[ws] {
		t.Fatalf("token after restart %d, want above %d", again.Lease.Tokens[ws], durable.Lease.Tokens[ws])
	}
}

func TestLeaseRestartKeepsTheRenewedExpiry(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	co, err := s.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		a := NewCheckout(testRepo, st, zap.NewNop(), clk.now)().(*Checkout)
		a.leaseWrap = crashable
		return a
	}), "co-lease")
	if err != nil {
		t.Fatal(err)
	}
	a := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("f")}, TTL: 3 * time.Second}))
	leasePID := actor.NewPID(co.Address, co.Id+"/lease-"+a.Lease.ID)
	clk.add(2 * time.Second)
	r := want[messages.Renewed](t, request(t, s, co, messages.Renew{LeaseID: a.Lease.ID}))
	if !r.Expires.After(a.Lease.Expires) {
		t.Fatalf("renewed until %v, want after %v", r.Expires, a.Lease.Expires)
	}
	crashNow(t, s, leasePID)
	// The fresh instance asked its checkout for the expiry on Started.
	want[messages.Pong](t, request(t, s, co, messages.Ping{}))
	want[messages.Pong](t, request(t, s, leasePID, messages.Ping{}))
	// Past the grant's expiry, before the renewed one: still held.
	s.Root.Send(leasePID, messages.LeaseTick{Now: a.Lease.Expires.Add(time.Second)})
	want[messages.Pong](t, request(t, s, leasePID, messages.Ping{}))
	want[messages.Fenced](t, request(t, s, co, messages.Fence{LeaseID: a.Lease.ID}))
	// Past the renewed expiry: lost.
	clk.add(10 * time.Second)
	s.Root.Send(leasePID, messages.LeaseTick{Now: r.Expires.Add(time.Second)})
	// The lease actor reports the loss and its checkout stops it; a Ping
	// to it may find it stopped (the stop, a system message, goes before
	// a queued Ping), so ask the checkout, one round trip at a time, until
	// it answers that the lease is lost.
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, ok := request(t, s, co, messages.Fence{LeaseID: a.Lease.ID}).(messages.Failed)
		if ok && errs.CodeOf(ErrorOf(f)) == errs.LeaseLost {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease did not expire after the renewed expiry")
		}
	}
}

func TestLedgerRestartAfterPanicKeepsRequestsRunning(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid := spawnCrashable(t, s, "ledger-crash", NewLedger(st, zap.NewNop(), LedgerConfig{PruneEvery: -1}))
	want[messages.LedgerBegun](t, request(t, s, pid, messages.LedgerBegin{RequestID: "r1", Operation: "apply_patch", InputHash: "sha256:1"}))
	crashNow(t, s, pid)
	// A restart of the actor is not a restart of harnessd: the request of
	// this process is still executing, not of unknown outcome.
	g := want[messages.LedgerGot](t, request(t, s, pid, messages.LedgerGet{RequestID: "r1"}))
	if !g.Found || g.Entry.State != "executing" {
		t.Fatalf("after restart r1 = %+v, want executing", g)
	}
	want[messages.LedgerDone](t, request(t, s, pid, messages.LedgerComplete{RequestID: "r1", Result: []byte(`{"ok":true}`)}))
	b := want[messages.LedgerBegun](t, request(t, s, pid, messages.LedgerBegin{RequestID: "r1", Operation: "apply_patch", InputHash: "sha256:1"}))
	if !b.Replay {
		t.Fatalf("retry after completion = %+v, want a replay", b)
	}
}

func TestLaneRestartAnswersItsLostSteps(t *testing.T) {
	s := newTestSystem(t)
	r := &laneRunner{release: make(chan struct{}), running: make(chan int, 2)}
	pid := spawnCrashable(t, s, "lane-crash", NewLane(LaneConfig{Name: "lane-crash", Runner: r.run, Logger: zap.NewNop()}))
	lost := s.Root.RequestFuture(pid, messages.LaneRun{Group: "g", Index: 0, Kind: "test"}, 10*time.Second)
	<-r.running
	crashNow(t, s, pid)
	failedWith(t, lost, errs.Unavailable)
	close(r.release)
	d := want[messages.LaneDone](t, request(t, s, pid, messages.LaneRun{Group: "g2", Index: 1, Kind: "test"}))
	if d.Failure != nil || string(d.Result) != "10" {
		t.Fatalf("step after the restart = %+v", d)
	}
}

func TestChecksRestartAfterPanicReusesStoredEvidence(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{}
	pid := spawnCrashable(t, s, "checks-crash", NewChecks(st, zap.NewNop(), ChecksConfig{Runner: f.run, PruneEvery: -1}))
	want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:a1")))
	f.release, f.started = make(chan struct{}), make(chan struct{}, 1)
	inflight := s.Root.RequestFuture(pid, checkRun("repo_a", "sha256:b2"), 10*time.Second)
	<-f.started
	crashNow(t, s, pid)
	failedWith(t, inflight, errs.Unavailable)
	close(f.release)
	r := want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:a1")))
	if !r.Reused || r.Outcome.Pid != 1001 {
		t.Fatalf("after restart = %+v, want the stored evidence of pid 1001", r)
	}
}

func TestCheckActorRestartAfterPanic(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{release: make(chan struct{}), started: make(chan struct{}, 2)}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run, childWrap: crashable})
	run := checkRun("repo_a", "sha256:c3")
	inflight := s.Root.RequestFuture(pid, run, 10*time.Second)
	<-f.started
	child := actor.NewPID(pid.Address, pid.Id+"/"+CheckActorName(run.Key))
	crashNow(t, s, child)
	failedWith(t, inflight, errs.Unavailable)
	close(f.release)
	first := want[messages.CheckResult](t, request(t, s, pid, run))
	if first.Reused || !first.Outcome.Passed {
		t.Fatalf("run after the restart = %+v, want a new passing run", first)
	}
	if r := want[messages.CheckResult](t, request(t, s, pid, run)); !r.Reused {
		t.Fatalf("second run = %+v, want its evidence reused", r)
	}
}

// jobsUnderTest spawns a jobs actor whose children panic on crash{}.
func jobsUnderTest(t *testing.T, s *actor.ActorSystem, st *persistence.Store, concurrency int, wrapJobs bool) *actor.PID {
	t.Helper()
	tasks := &Tasks{}
	t.Cleanup(func() {
		if !tasks.Wait(20 * time.Second) {
			t.Error("job goroutines still running")
		}
	})
	cfg := JobsConfig{Store: st, Index: &RepoIndex{}, Logger: zap.NewNop(), DataDir: t.TempDir(), Tasks: tasks,
		Concurrency: concurrency, Grace: 200 * time.Millisecond, childWrap: crashable}
	prod := NewJobs(cfg)
	var pid *actor.PID
	if wrapJobs {
		pid = spawnCrashable(t, s, "jobs-"+t.Name(), prod)
	} else {
		var err error
		if pid, err = s.Root.SpawnNamed(actor.PropsFromProducer(prod, actor.WithReceiverMiddleware(Recover(zap.NewNop()))), "jobs-"+t.Name()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = s.Root.PoisonFuture(pid).Wait() })
	return pid
}

// gateScript is a job that marks that it started, waits for a file named
// go in dir, and exits 3.
func gateScript(dir string) []string {
	return []string{"sh", "-c", "touch started; while [ ! -f go ]; do sleep 0.01; done; exit 3"}
}

// waitFile polls for a file a process creates (polling a process, not an actor).
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond) // polling another process
	}
}

// jobState probes the jobs actor (a mailbox round trip each time) until the
// job is in a final state.
func finalJob(t *testing.T, s *actor.ActorSystem, jobs *actor.PID, id string) messages.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j := want[messages.JobInfo](t, request(t, s, jobs, messages.JobGet{ID: id})).Job
		if JobFinal(j.State) {
			return j
		}
		if j.State != messages.JobRunning && j.State != messages.JobQueued {
			t.Fatalf("job in state %q", j.State)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, j.State)
		}
		runtime.Gosched()
	}
}

// A job actor that panics while its process runs adopts the process and
// ends as the process did: failed with exit code 3, never queued.
func TestJobRestartWhileRunningEndsAsTheProcess(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	jobs := jobsUnderTest(t, s, st, 2, false)
	dir := t.TempDir()
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: "job_t1", RepoID: "repo_x", Root: dir, Argv: gateScript(dir), TimeoutS: 60}}))
	waitFile(t, filepath.Join(dir, "started"))
	crashNow(t, s, actor.NewPID(jobs.Address, jobs.Id+"/job-job_t1"))
	if j := want[messages.JobInfo](t, request(t, s, jobs, messages.JobGet{ID: "job_t1"})).Job; j.State != messages.JobRunning {
		t.Fatalf("after the restart the job is %s, want running", j.State)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j := finalJob(t, s, jobs, "job_t1")
	if j.State != messages.JobFailed || j.ExitCode == nil || *j.ExitCode != 3 {
		t.Fatalf("final job = %s exit %v, want failed with exit code 3", j.State, j.ExitCode)
	}
	var stored messages.Job
	if err := st.Get(persistence.JobKey("job_t1"), &stored); err != nil || stored.State != messages.JobFailed {
		t.Fatalf("stored job = %s, %v; want failed", stored.State, err)
	}
}

// A queued job actor that panics keeps its place: it runs once a slot
// frees, and a dispatched one that panics before starting gets its slot
// again.
func TestJobRestartWhileQueuedStillRuns(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	jobs := jobsUnderTest(t, s, st, 1, false)
	dir := t.TempDir()
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: "job_a", RepoID: "repo_x", Root: dir, Argv: gateScript(dir), TimeoutS: 60}}))
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: "job_b", RepoID: "repo_x", Root: dir, Argv: []string{"true"}, TimeoutS: 60}}))
	waitFile(t, filepath.Join(dir, "started"))
	crashNow(t, s, actor.NewPID(jobs.Address, jobs.Id+"/job-job_b"))
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if j := finalJob(t, s, jobs, "job_a"); j.State != messages.JobFailed {
		t.Fatalf("job_a = %s, want failed (exit 3)", j.State)
	}
	if j := finalJob(t, s, jobs, "job_b"); j.State != messages.JobSucceeded {
		t.Fatalf("job_b after its restart = %s, want succeeded", j.State)
	}
	st2 := want[messages.JobStatsReply](t, request(t, s, jobs, messages.JobStats{}))
	if st2.Running != 0 || st2.Queued != 0 {
		t.Fatalf("stats = %+v, want no job holding a slot", st2)
	}
}

// The jobs supervisor comes back from the store after a panic: finished
// jobs are listed, queued ones run.
func TestJobsRestartAfterPanicReloadsFromStore(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	jobs := jobsUnderTest(t, s, st, 2, true)
	dir := t.TempDir()
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: "job_done", RepoID: "repo_x", Root: dir, Argv: []string{"true"}, TimeoutS: 60}}))
	if j := finalJob(t, s, jobs, "job_done"); j.State != messages.JobSucceeded {
		t.Fatalf("job_done = %s", j.State)
	}
	crashNow(t, s, jobs)
	l := want[messages.JobListReply](t, request(t, s, jobs, messages.JobList{}))
	if len(l.Jobs) != 1 || l.Jobs[0].ID != "job_done" || l.Jobs[0].State != messages.JobSucceeded {
		t.Fatalf("after restart list = %+v, want job_done succeeded", l.Jobs)
	}
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: "job_next", RepoID: "repo_x", Root: dir, Argv: []string{"true"}, TimeoutS: 60}}))
	if j := finalJob(t, s, jobs, "job_next"); j.State != messages.JobSucceeded {
		t.Fatalf("job after the restart = %s, want succeeded", j.State)
	}
}
