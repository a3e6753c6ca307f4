package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// slowReleases hands a checkout's Release on after delay (a busy
// checkout), everything else at once.
type slowReleases struct {
	to    *actor.PID
	delay time.Duration
}

func (p slowReleases) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case messages.Release:
		root, sender, to := ctx.ActorSystem().Root, ctx.Sender(), p.to
		time.AfterFunc(p.delay, func() { root.RequestWithCustomSender(to, m, sender) })
	case messages.Renew, messages.Acquire, messages.Fence:
		ctx.Forward(p.to)
	}
}

// After a restart, nobody hears of a job the load interrupted before its
// lease let its keys go: job_status waits for the start-up release (here
// answered 300 ms late), so a write right after it is granted, not
// MUTATION_BUSY. (Before, the release raced the answer: a revert right
// after job_status was refused.)
func TestJobsAnswerOnceTheirStartReleasesAre(t *testing.T) {
	st := newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	ws := string(lease.WorkspaceKey(testRepo.CheckoutID))

	// A daemon killed while a writing job ran: its durable lease and its
	// record, running under it.
	s1 := newTestSystem(t)
	co1 := spawnCheckout(t, s1, st, clk, "co1")
	d := want[messages.Acquired](t, acquire(t, s1, co1, messages.Acquire{Owner: "job_cut", Operation: JobLeaseOperation,
		Keys: []string{ws}, Visibility: "durable", TTL: lease.MinTTL}))
	if err := st.PutSync(persistence.JobKey("job_cut"), messages.Job{ID: "job_cut", RepoID: testRepo.ID, CheckoutID: testRepo.CheckoutID,
		Root: t.TempDir(), Argv: []string{"true"}, Writes: true, State: messages.JobRunning, Attempt: 1, LeaseID: d.Lease.ID,
		CreatedAt: clk.now(), StartedAt: clk.now()}); err != nil {
		t.Fatal(err)
	}
	if err := s1.Root.StopFuture(co1).Wait(); err != nil {
		t.Fatal(err)
	}

	// The restart within the lease's TTL: the checkout restores it live.
	s2 := newTestSystem(t)
	co2 := spawnCheckout(t, s2, st, clk, "co2")
	proxy := s2.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return slowReleases{to: co2, delay: 300 * time.Millisecond} }))
	t.Cleanup(func() { _ = s2.Root.StopFuture(proxy).Wait() })
	ix := &RepoIndex{}
	ix.publish(map[string]RepoEntry{testRepo.ID: {Repo: testRepo, Checkout: proxy}})
	jobs := spawnJobsWith(t, s2, st, JobsConfig{Index: ix, LeaseTTL: lease.MinTTL, Now: clk.now})
	j := want[messages.JobInfo](t, request(t, s2, jobs, messages.JobGet{ID: "job_cut"})).Job
	if j.State != messages.JobInterrupted || j.LeaseReleaseState != messages.LeaseReleaseReleased {
		t.Fatalf("job after the restart: %s, lease release %q; want interrupted, released", j.State, j.LeaseReleaseState)
	}
	want[messages.Acquired](t, acquire(t, s2, co2, messages.Acquire{Owner: "agent", Operation: "revert", Keys: []string{ws}}))
}
