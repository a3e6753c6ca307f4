package actors

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A secret a failing store might put in its error text: the diagnostic
// must never keep it.
const releaseSecret = "ghp_0123456789abcdefABCDEF0123456789abcd"

func TestRecordRelease(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	failed := errs.New(errs.StorageUnavailable, "delete durable lease: token=%s refused", releaseSecret)
	long := errs.New(errs.Internal, "%s", strings.Repeat("é", 600))
	tests := []struct {
		name      string
		prior     *messages.LeaseReleaseDiag
		failure   error
		wantState string
		wantCount int
		wantCode  string
	}{
		{"released at the first try", nil, nil, messages.LeaseReleaseReleased, 0, ""},
		{"the first failure", nil, failed, messages.LeaseReleasePending, 1, string(errs.StorageUnavailable)},
		{"a second failure counts on", &messages.LeaseReleaseDiag{Code: "TIMEOUT", Count: 1}, failed, messages.LeaseReleasePending, 2, string(errs.StorageUnavailable)},
		{"released after failures keeps their diagnostic", &messages.LeaseReleaseDiag{Code: "TIMEOUT", Count: 3}, nil, messages.LeaseReleaseReleased, 3, "TIMEOUT"},
		{"a long message is cut on a rune", nil, long, messages.LeaseReleasePending, 1, string(errs.Internal)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := messages.Job{LeaseID: "l1", LeaseReleaseFailure: tt.prior}
			recordRelease(&j, tt.failure, at)
			if j.LeaseReleaseState != tt.wantState {
				t.Fatalf("state = %q, want %q", j.LeaseReleaseState, tt.wantState)
			}
			d := j.LeaseReleaseFailure
			if tt.wantCount == 0 {
				if d != nil {
					t.Fatalf("diagnostic %+v, want none", d)
				}
				return
			}
			if d == nil || d.Count != tt.wantCount || d.Code != tt.wantCode {
				t.Fatalf("diagnostic %+v, want count %d code %s", d, tt.wantCount, tt.wantCode)
			}
			if tt.failure == nil {
				return
			}
			if !d.AttemptedAt.Equal(at) || d.AttemptedAt.Location() != time.UTC {
				t.Errorf("attempted_at = %v, want %v in UTC", d.AttemptedAt, at)
			}
			if strings.Contains(d.Message, releaseSecret) || len(d.Message) > maxReleaseMessage+3 {
				t.Errorf("message %q (%d bytes): a secret or past the bound", d.Message, len(d.Message))
			}
			if !strings.ContainsRune(d.Message, 'é') && tt.failure == long {
				t.Errorf("message %q lost its text", d.Message)
			}
			if tt.failure == failed && !strings.Contains(d.Message, "delete durable lease") {
				t.Errorf("message %q lost what failed", d.Message)
			}
		})
	}
}

func TestReleaseDue(t *testing.T) {
	diag := &messages.LeaseReleaseDiag{Code: "TIMEOUT", Count: 2}
	tests := []struct {
		name string
		j    messages.Job
		want bool
	}{
		{"pending, final", messages.Job{State: messages.JobSucceeded, LeaseID: "l1", LeaseReleaseState: messages.LeaseReleasePending}, true},
		{"released", messages.Job{State: messages.JobSucceeded, LeaseID: "l1", LeaseReleaseState: messages.LeaseReleaseReleased, LeaseReleaseFailure: diag}, false},
		{"a diagnostic alone authorises nothing", messages.Job{State: messages.JobFailed, LeaseID: "l1", LeaseReleaseFailure: diag}, false},
		{"no lease", messages.Job{State: messages.JobFailed, LeaseReleaseState: messages.LeaseReleasePending, LeaseReleaseFailure: diag}, false},
		{"still queued", messages.Job{State: messages.JobQueued, LeaseID: "l1", LeaseReleaseState: messages.LeaseReleasePending}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := releaseDue(tt.j); got != tt.want {
				t.Errorf("releaseDue(%+v) = %v, want %v", tt.j, got, tt.want)
			}
		})
	}
}

func TestReleaseAnswer(t *testing.T) {
	tests := []struct {
		name string
		res  any
		err  error
		code errs.Code // "" = released
	}{
		{"released", messages.Released{Known: true}, nil, ""},
		{"not held any more", messages.Released{}, nil, ""},
		{"failed", messages.Failed{Code: string(errs.StorageUnavailable), Message: "disk"}, nil, errs.StorageUnavailable},
		{"no answer", nil, actor.ErrTimeout, errs.Timeout},
		{"checkout gone", nil, actor.ErrDeadLetter, errs.Unavailable},
		{"dead letter answer", &actor.DeadLetterResponse{}, nil, errs.Unavailable},
		{"something else", messages.Pong{}, nil, errs.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := releaseAnswer(tt.res, tt.err)
			if (tt.code == "") != (err == nil) || (err != nil && errs.CodeOf(err) != tt.code) {
				t.Errorf("releaseAnswer = %v, want code %q", err, tt.code)
			}
		})
	}
}

// releaseProxy stands in front of a real checkout: it answers the first
// failures Release requests itself with a failure whose text carries a
// secret (a store error as it would really come back), forwards the rest
// and everything else, and counts the Releases it saw, by lease id.
type releaseProxy struct {
	to       *actor.PID
	mu       *sync.Mutex
	failures *int
	seen     *[]string
}

func (p releaseProxy) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(messages.Release)
	if !ok {
		if _, system := ctx.Message().(actor.SystemMessage); !system {
			if _, auto := ctx.Message().(actor.AutoReceiveMessage); !auto {
				ctx.Forward(p.to)
			}
		}
		return
	}
	p.mu.Lock()
	*p.seen = append(*p.seen, m.LeaseID)
	fail := *p.failures > 0
	if fail {
		*p.failures--
	}
	p.mu.Unlock()
	if fail {
		ctx.Respond(messages.Failed{Code: string(errs.StorageUnavailable), Message: "delete durable lease: token=" + releaseSecret + " was refused: no space left on device"})
		return
	}
	ctx.Forward(p.to)
}

type proxyLog struct {
	mu       sync.Mutex
	failures int
	seen     []string
}

func (l *proxyLog) releases() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

func spawnReleaseProxy(t *testing.T, s *actor.ActorSystem, to *actor.PID, name string, log *proxyLog) *actor.PID {
	t.Helper()
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return releaseProxy{to: to, mu: &log.mu, failures: &log.failures, seen: &log.seen}
	}), name)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// storedJob reads a job's record from the store.
func storedJob(t *testing.T, st *persistence.Store, id string) messages.Job {
	t.Helper()
	var j messages.Job
	if err := st.Get(persistence.JobKey(id), &j); err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	return j
}

// A writing job whose lease release fails once (the lease's store refuses
// it, with a secret in its error text) ends with lease_release_state
// pending and one redacted diagnostic, in job_status and the store, and
// its lease is still held (nothing pretends it went). After a restart of
// harnessd (the checkout restores the durable lease, the jobs actor
// loads the record) the release is retried by the job's own lease id,
// recorded as released, and the keys are free.
func TestJobLeaseReleaseFailedOnceIsRetriedAtStart(t *testing.T) {
	st := newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	ws := string(lease.WorkspaceKey(testRepo.CheckoutID))

	s1 := newTestSystem(t)
	co1 := spawnCheckout(t, s1, st, clk, "co1")
	log1 := &proxyLog{failures: 1}
	ix1 := &RepoIndex{}
	ix1.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: spawnReleaseProxy(t, s1, co1, "proxy1", log1)}})
	jobs1 := spawnJobsWith(t, s1, st, JobsConfig{Index: ix1, LeaseTTL: lease.MinTTL, Now: clk.now})
	want[messages.JobInfo](t, request(t, s1, jobs1, messages.JobSubmit{Job: messages.Job{ID: "job_rel", RepoID: testRepo.ID,
		CheckoutID: testRepo.CheckoutID, Root: t.TempDir(), Argv: []string{"true"}, Writes: true, TimeoutS: 60}}))
	j := finalJob(t, s1, jobs1, "job_rel")
	// The job's end waits for the release's answer: once final in
	// job_status its release state is recorded.
	deadline := time.Now().Add(10 * time.Second)
	for j.LeaseReleaseFailure == nil && time.Now().Before(deadline) {
		j = want[messages.JobInfo](t, request(t, s1, jobs1, messages.JobGet{ID: "job_rel"})).Job
	}
	if j.State != messages.JobSucceeded || j.LeaseID == "" {
		t.Fatalf("job %s lease %q, want succeeded under a lease", j.State, j.LeaseID)
	}
	d := j.LeaseReleaseFailure
	if j.LeaseReleaseState != messages.LeaseReleasePending || d == nil || d.Count != 1 || d.Code != string(errs.StorageUnavailable) || d.AttemptedAt.IsZero() {
		t.Fatalf("job_status: lease_release_state %q failure %+v, want pending with one STORAGE_UNAVAILABLE", j.LeaseReleaseState, d)
	}
	if strings.Contains(d.Message, releaseSecret) || !strings.Contains(d.Message, "no space left") {
		t.Fatalf("diagnostic message %q: the secret kept, or the cause lost", d.Message)
	}
	// The record is what job_status said, and the secret is nowhere in it.
	deadline = time.Now().Add(10 * time.Second)
	stored := storedJob(t, st, "job_rel")
	for stored.LeaseReleaseFailure == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the job actor's synced write
		stored = storedJob(t, st, "job_rel")
	}
	if stored.LeaseReleaseState != messages.LeaseReleasePending || stored.LeaseReleaseFailure == nil || stored.LeaseReleaseFailure.Count != 1 {
		t.Fatalf("stored: %q %+v, want pending with count 1", stored.LeaseReleaseState, stored.LeaseReleaseFailure)
	}
	dump, err := persistence.Encode(stored)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dump), releaseSecret) {
		t.Fatal("the stored job record holds the secret of the release's error")
	}
	// The lease was not released: the workspace is still busy.
	if f := want[messages.Failed](t, acquire(t, s1, co1, messages.Acquire{Owner: "agent", Operation: "apply_patch", Keys: []string{ws}})); errs.CodeOf(ErrorOf(f)) != errs.MutationBusy {
		t.Fatalf("write beside the unreleased lease: %v, want MUTATION_BUSY", ErrorOf(f))
	}
	if got := log1.releases(); len(got) != 1 || got[0] != j.LeaseID {
		t.Fatalf("releases sent before the restart: %v, want one of %s", got, j.LeaseID)
	}

	// The restart: everything stops; a new checkout and jobs actor load.
	if err := s1.Root.PoisonFuture(jobs1).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := s1.Root.StopFuture(co1).Wait(); err != nil {
		t.Fatal(err)
	}
	s2 := newTestSystem(t)
	co2 := spawnCheckout(t, s2, st, clk, "co2")
	log2 := &proxyLog{}
	ix2 := &RepoIndex{}
	ix2.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: spawnReleaseProxy(t, s2, co2, "proxy2", log2)}})
	spawnJobsWith(t, s2, st, JobsConfig{Index: ix2, LeaseTTL: lease.MinTTL, Now: clk.now})
	deadline = time.Now().Add(10 * time.Second)
	for storedJob(t, st, "job_rel").LeaseReleaseState != messages.LeaseReleaseReleased {
		if time.Now().After(deadline) {
			t.Fatalf("the release was never retried at start-up: %+v", storedJob(t, st, "job_rel"))
		}
		time.Sleep(5 * time.Millisecond) // the load and the release run in the new actors
	}
	if got := log2.releases(); len(got) != 1 || got[0] != j.LeaseID {
		t.Fatalf("releases at start-up: %v, want one, of the job's own lease %s", got, j.LeaseID)
	}
	if after := storedJob(t, st, "job_rel").LeaseReleaseFailure; after == nil || after.Count != 1 {
		t.Fatalf("diagnostic after the release: %+v, want the one failure kept", after)
	}
	want[messages.Acquired](t, acquire(t, s2, co2, messages.Acquire{Owner: "agent", Operation: "apply_patch", Keys: []string{ws}}))
}

// The diagnostic never authorises a release: at start-up a job record
// that carries a diagnostic but whose release is not pending (released,
// or a record written before the release phase existed) sends no
// Release, though its lease id names a lease another holder has now;
// that holder keeps its keys.
func TestLeaseReleaseDiagnosticAuthorisesNothing(t *testing.T) {
	st := newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	ws := string(lease.WorkspaceKey(testRepo.CheckoutID))
	s := newTestSystem(t)
	co := spawnCheckout(t, s, st, clk, "co")
	held := want[messages.Acquired](t, acquire(t, s, co, messages.Acquire{Owner: "someone", Operation: "apply_patch", Keys: []string{ws}, TTL: time.Minute}))
	diag := &messages.LeaseReleaseDiag{Code: string(errs.Timeout), Message: "no answer", AttemptedAt: clk.now(), Count: 4}
	for _, j := range []messages.Job{
		{ID: "job_diag_released", RepoID: testRepo.ID, State: messages.JobSucceeded, LeaseID: held.Lease.ID, LeaseReleaseState: messages.LeaseReleaseReleased, LeaseReleaseFailure: diag},
		{ID: "job_diag_only", RepoID: testRepo.ID, State: messages.JobFailed, LeaseID: held.Lease.ID, LeaseReleaseFailure: diag},
	} {
		if err := st.PutSync(persistence.JobKey(j.ID), j); err != nil {
			t.Fatal(err)
		}
	}
	log := &proxyLog{}
	ix := &RepoIndex{}
	ix.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: spawnReleaseProxy(t, s, co, "proxy", log)}})
	jobs := spawnJobsWith(t, s, st, JobsConfig{Index: ix, LeaseTTL: lease.MinTTL, Now: clk.now})
	// A listing is answered after the load (requests are stashed until
	// then), and the load's releases are sent before it.
	want[messages.JobListReply](t, request(t, s, jobs, messages.JobList{}))
	if got := log.releases(); len(got) != 0 {
		t.Fatalf("releases sent at start-up: %v, want none", got)
	}
	if f := want[messages.Failed](t, acquire(t, s, co, messages.Acquire{Owner: "agent", Operation: "apply_patch", Keys: []string{ws}})); errs.CodeOf(ErrorOf(f)) != errs.MutationBusy {
		t.Fatalf("the other holder's keys: %v, want still MUTATION_BUSY", ErrorOf(f))
	}
}
