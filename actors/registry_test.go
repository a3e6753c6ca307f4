package actors

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newTestSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	s := actor.NewActorSystemWithConfig(actor.Configure(actor.WithDeadLetterThrottleInterval(time.Millisecond), quietLogs))
	t.Cleanup(s.Shutdown)
	return s
}

func newStore(t *testing.T) *persistence.Store {
	t.Helper()
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// request sends msg and returns the reply, failing the test on timeout.
func request(t *testing.T, s *actor.ActorSystem, pid *actor.PID, msg any) any {
	t.Helper()
	res, err := s.Root.RequestFuture(pid, msg, 10*time.Second).Result()
	if err != nil {
		t.Fatalf("request %T: %v", msg, err)
	}
	return res
}

func want[T any](t *testing.T, v any) T {
	t.Helper()
	got, ok := v.(T)
	if !ok {
		t.Fatalf("reply %T (%v), want %T", v, v, *new(T))
	}
	return got
}

// crashOn wraps an actor so that a crash message makes it panic: the real
// registry code is exercised, restarted by its supervisor.
type crash struct{}

type crashOn struct{ actor.Actor }

func (c crashOn) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(crash); ok {
		panic("test crash")
	}
	c.Actor.Receive(ctx)
}

func spawnRegistry(t *testing.T, s *actor.ActorSystem, st *persistence.Store, ix *RepoIndex) *actor.PID {
	t.Helper()
	lg := zap.NewNop()
	co := func(r messages.Repository) *actor.Props {
		return actor.PropsFromProducer(NewCheckout(r, st, lg, nil), actor.WithReceiverMiddleware(Recover(lg)))
	}
	prod := NewRegistry(st, ix, co, lg)
	props := actor.PropsFromProducer(func() actor.Actor { return crashOn{prod()} }, actor.WithReceiverMiddleware(Recover(lg)))
	pid, err := s.Root.SpawnNamed(props, "registry")
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestRegistryRegisterIsIdempotentAndPersisted(t *testing.T) {
	s, st, ix := newTestSystem(t), newStore(t), &RepoIndex{}
	pid := spawnRegistry(t, s, st, ix)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	r1 := want[messages.Registered](t, request(t, s, pid, messages.Register{Root: "/src/a", CommonDir: "/src/a/.git", Now: now}))
	if !r1.Created || r1.Repo.ID != RepoID("/src/a") || r1.Repo.CheckoutID != CheckoutID("/src/a") {
		t.Fatalf("first register = %+v", r1)
	}
	r2 := want[messages.Registered](t, request(t, s, pid, messages.Register{Root: "/src/a", Now: now.Add(time.Hour)}))
	if r2.Created || r2.Repo != r1.Repo {
		t.Fatalf("second register = %+v, want the same repository, Created false", r2)
	}
	e, ok := ix.Lookup(r1.Repo.ID)
	if !ok || e.Checkout == nil || e.Repo != r1.Repo {
		t.Fatalf("index lookup = %+v, %v", e, ok)
	}
	var stored messages.Repository
	if err := st.Get(persistence.RepoKey(r1.Repo.ID), &stored); err != nil || stored != r1.Repo {
		t.Fatalf("stored = %+v, %v", stored, err)
	}
	// The checkout actor answers.
	want[messages.Pong](t, request(t, s, e.Checkout, messages.Ping{}))
}

func TestRegistryUnregister(t *testing.T) {
	s, st, ix := newTestSystem(t), newStore(t), &RepoIndex{}
	pid := spawnRegistry(t, s, st, ix)
	r := want[messages.Registered](t, request(t, s, pid, messages.Register{Root: "/src/b"}))

	f := want[messages.Failed](t, request(t, s, pid, messages.Unregister{RepoID: "repo_nope"}))
	if errs.CodeOf(ErrorOf(f)) != errs.RepositoryNotRegistered {
		t.Fatalf("unregister unknown: %v, want REPOSITORY_NOT_REGISTERED", ErrorOf(f))
	}
	u := want[messages.Unregistered](t, request(t, s, pid, messages.Unregister{RepoID: r.Repo.ID}))
	if u.Repo.ID != r.Repo.ID {
		t.Fatalf("unregistered %+v", u)
	}
	if _, ok := ix.Lookup(r.Repo.ID); ok {
		t.Fatal("index still has the repository")
	}
	if err := st.Get(persistence.RepoKey(r.Repo.ID), new(messages.Repository)); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("store still has it: %v", err)
	}
	if l := want[messages.Repos](t, request(t, s, pid, messages.ListRepos{})); len(l.Repos) != 0 {
		t.Fatalf("list = %+v, want empty", l.Repos)
	}
}

// A panic answers the requester with Failed (not a timeout) and the
// restarted registry comes back from its snapshot.
func TestRegistryRestartRestoresFromSnapshot(t *testing.T) {
	s, st, ix := newTestSystem(t), newStore(t), &RepoIndex{}
	pid := spawnRegistry(t, s, st, ix)
	for _, root := range []string{"/src/z", "/src/a", "/src/m"} {
		want[messages.Registered](t, request(t, s, pid, messages.Register{Root: root}))
	}
	start := time.Now()
	f := want[messages.Failed](t, request(t, s, pid, crash{}))
	if errs.CodeOf(ErrorOf(f)) != errs.Internal {
		t.Fatalf("crash reply = %v, want INTERNAL", ErrorOf(f))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("crash reply took %s: the requester waited for a timeout", d)
	}
	l := want[messages.Repos](t, request(t, s, pid, messages.ListRepos{}))
	if len(l.Repos) != 3 || l.Repos[0].Root != "/src/a" || l.Repos[2].Root != "/src/z" {
		t.Fatalf("after restart list = %+v, want 3 sorted repositories", l.Repos)
	}
	if ix.Len() != 3 {
		t.Fatalf("index has %d entries after restart, want 3", ix.Len())
	}
	c := want[messages.CountsReply](t, request(t, s, pid, messages.Counts{}))
	if c.ByKind["checkout"] != 3 {
		t.Fatalf("checkouts after restart = %d, want 3", c.ByKind["checkout"])
	}
}

func TestRegistryRejectsEmptyRoot(t *testing.T) {
	s, st, ix := newTestSystem(t), newStore(t), &RepoIndex{}
	pid := spawnRegistry(t, s, st, ix)
	f := want[messages.Failed](t, request(t, s, pid, messages.Register{}))
	if errs.CodeOf(ErrorOf(f)) != errs.InvalidArgument {
		t.Fatalf("got %v, want INVALID_ARGUMENT", ErrorOf(f))
	}
}

func TestIDsAreStable(t *testing.T) {
	a1, a2 := RepoID("/a"), RepoID(string([]byte("/a")))
	if a1 != a2 || a1 == RepoID("/b") || a1 == CheckoutID("/a") {
		t.Fatal("ids are not stable and distinct")
	}
	if want := "repo_" + shortHash("repo\x00/a"); a1 != want {
		t.Fatalf("RepoID = %s, want %s", a1, want)
	}
}
