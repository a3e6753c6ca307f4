package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

func spawnTarget(t *testing.T, s *actor.ActorSystem, root string) *actor.PID {
	t.Helper()
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewTarget(root, newStore(t), nil)), TargetActorName(root))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// The slot of a root: one holder; a second acquirer with no wait is busy
// at once, one with a wait is granted in mailbox order after the release,
// one whose wait runs out is busy; release by a non-holder changes nothing.
func TestTargetSlot(t *testing.T) {
	s := newTestSystem(t)
	pid := spawnTarget(t, s, "/t/a")
	first := want[messages.TargetAcquired](t, request(t, s, pid, messages.TargetAcquire{Holder: "h1"}))
	if first.Seq != 1 {
		t.Fatalf("first grant seq %d", first.Seq)
	}
	f := want[messages.Failed](t, request(t, s, pid, messages.TargetAcquire{Holder: "h2"}))
	if errs.Code(f.Code) != errs.MutationBusy || f.Details[DetailNothingWritten] != true {
		t.Fatalf("busy answer %+v", f)
	}
	// A waiter that runs out of time is busy; nothing else changes.
	f = want[messages.Failed](t, request(t, s, pid, messages.TargetAcquire{Holder: "h3", Wait: 20 * time.Millisecond}))
	if errs.Code(f.Code) != errs.MutationBusy {
		t.Fatalf("timed-out waiter %+v", f)
	}
	queued := s.Root.RequestFuture(pid, messages.TargetAcquire{Holder: "h4", Wait: 10 * time.Second}, 10*time.Second)
	want[messages.TargetReleased](t, request(t, s, pid, messages.TargetRelease{Holder: "not-the-holder"}))
	want[messages.TargetReleased](t, request(t, s, pid, messages.TargetRelease{Holder: "h1"}))
	res, err := queued.Result()
	if err != nil {
		t.Fatal(err)
	}
	if g := want[messages.TargetAcquired](t, res); g.Holder != "h4" || g.Seq != 2 {
		t.Fatalf("queued grant %+v", g)
	}
	// A holder that never releases loses the slot after its hold bound.
	want[messages.TargetReleased](t, request(t, s, pid, messages.TargetRelease{Holder: "h4"}))
	want[messages.TargetAcquired](t, request(t, s, pid, messages.TargetAcquire{Holder: "h5", Hold: 20 * time.Millisecond}))
	g := want[messages.TargetAcquired](t, request(t, s, pid, messages.TargetAcquire{Holder: "h6", Wait: 10 * time.Second}))
	if g.Seq != 4 {
		t.Fatalf("grant after an expired hold: %+v", g)
	}
	want[messages.TargetReleased](t, request(t, s, pid, messages.TargetRelease{Holder: "h6"}))
}

// A stopping target answers its waiters UNAVAILABLE (nothing written)
// rather than leaving them to time out.
func TestTargetStopAnswersWaiters(t *testing.T) {
	s := newTestSystem(t)
	pid := spawnTarget(t, s, "/t/b")
	want[messages.TargetAcquired](t, request(t, s, pid, messages.TargetAcquire{Holder: "h1"}))
	queued := s.Root.RequestFuture(pid, messages.TargetAcquire{Holder: "h2", Wait: 10 * time.Second}, 10*time.Second)
	want[messages.Pong](t, request(t, s, pid, messages.Ping{}))
	if err := s.Root.PoisonFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	res, err := queued.Result()
	if err != nil {
		t.Fatal(err)
	}
	if f := want[messages.Failed](t, res); errs.Code(f.Code) != errs.Unavailable || f.Details[DetailNothingWritten] != true {
		t.Fatalf("waiter answer %+v", f)
	}
}

// The targets actor persists grants, restores them after a restart, gives
// every grant on one root the same target actor, and is idempotent.
func TestTargetsGrants(t *testing.T) {
	s := newTestSystem(t)
	st := newStore(t)
	ix := &TargetIndex{}
	props := actor.PropsFromProducer(NewTargets(st, ix, nil, nil))
	pid, err := s.Root.SpawnNamed(props, "targets")
	if err != nil {
		t.Fatal(err)
	}
	id := messages.RootIdentity{Dev: 1, Ino: 2}
	r1 := want[messages.TargetRegistered](t, request(t, s, pid, messages.TargetRegister{Root: "/w", Access: "write", Identity: id}))
	r2 := want[messages.TargetRegistered](t, request(t, s, pid, messages.TargetRegister{Root: "/w", Access: "read", Identity: id}))
	again := want[messages.TargetRegistered](t, request(t, s, pid, messages.TargetRegister{Root: "/w", Access: "write", Identity: id}))
	if !r1.Created || !r2.Created || again.Created || again.Grant.TargetID != r1.Grant.TargetID {
		t.Fatalf("register: %+v %+v %+v", r1, r2, again)
	}
	swapped := want[messages.TargetRegistered](t, request(t, s, pid, messages.TargetRegister{Root: "/w", Access: "write", Identity: messages.RootIdentity{Dev: 1, Ino: 3}}))
	if swapped.Grant.TargetID == r1.Grant.TargetID || swapped.Grant.Fingerprint == r1.Grant.Fingerprint {
		t.Fatal("another inode at the same path got the same target")
	}
	e1, _ := ix.Lookup(r1.Grant.TargetID)
	e2, _ := ix.Lookup(r2.Grant.TargetID)
	if e1.Actor == nil || e1.Actor.Id != e2.Actor.Id {
		t.Fatalf("grants on one root: actors %v %v", e1.Actor, e2.Actor)
	}
	f := want[messages.Failed](t, request(t, s, pid, messages.TargetRegister{Root: "rel", Access: "write"}))
	if errs.Code(f.Code) != errs.InvalidArgument {
		t.Fatalf("relative root: %+v", f)
	}
	if err := s.Root.PoisonFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	pid, err = s.Root.SpawnNamed(props, "targets")
	if err != nil {
		t.Fatal(err)
	}
	l := want[messages.TargetGrants](t, request(t, s, pid, messages.TargetList{}))
	if len(l.Grants) != 3 {
		t.Fatalf("restored %d grants, want 3", len(l.Grants))
	}
	want[messages.TargetUnregistered](t, request(t, s, pid, messages.TargetUnregister{TargetID: r1.Grant.TargetID}))
	if _, ok := ix.Lookup(r1.Grant.TargetID); ok {
		t.Fatal("unregistered grant still published")
	}
	f = want[messages.Failed](t, request(t, s, pid, messages.TargetUnregister{TargetID: r1.Grant.TargetID}))
	if errs.Code(f.Code) != errs.NotFound {
		t.Fatalf("second unregister: %+v", f)
	}
	if err := s.Root.PoisonFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
}

// Fencing tokens of a root rise across restarts of its actor on the same
// store: the reservation is durable before a token is granted, and a new
// instance continues above it. A store that cannot take the reservation
// grants nothing.
func TestTargetFencingSurvivesRestart(t *testing.T) {
	s := newTestSystem(t)
	st := newStore(t)
	props := actor.PropsFromProducer(NewTarget("/t/f", st, nil))
	var last uint64
	for round := range 3 {
		pid, err := s.Root.SpawnNamed(props, TargetActorName("/t/f"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			h := "h" + string(rune('a'+i))
			g := want[messages.TargetAcquired](t, request(t, s, pid, messages.TargetAcquire{Holder: h}))
			if g.Seq <= last {
				t.Fatalf("round %d: token %d after %d", round, g.Seq, last)
			}
			var reserved uint64
			if err := st.Get(TargetFenceKey("/t/f"), &reserved); err != nil || reserved < g.Seq {
				t.Fatalf("round %d: token %d granted above the stored reservation %d (%v)", round, g.Seq, reserved, err)
			}
			last = g.Seq
			want[messages.TargetReleased](t, request(t, s, pid, messages.TargetRelease{Holder: h}))
		}
		if err := s.Root.PoisonFuture(pid).Wait(); err != nil {
			t.Fatal(err)
		}
	}

	broken := newStore(t)
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewTarget("/t/g", broken, nil)), TargetActorName("/t/g"))
	if err != nil {
		t.Fatal(err)
	}
	want[messages.Pong](t, request(t, s, pid, messages.Ping{}))
	if err := broken.Close(); err != nil {
		t.Fatal(err)
	}
	f := want[messages.Failed](t, request(t, s, pid, messages.TargetAcquire{Holder: "h"}))
	if f.Details[DetailNothingWritten] != true {
		t.Fatalf("acquire on a closed store: %+v", f)
	}
	// The slot stayed free: nobody holds it, so a second try fails the same way, not busy.
	f = want[messages.Failed](t, request(t, s, pid, messages.TargetAcquire{Holder: "h2"}))
	if errs.Code(f.Code) == errs.MutationBusy {
		t.Fatalf("a failed grant left the slot held: %+v", f)
	}
	// An actor that cannot read its reservation at start grants nothing
	// and says how to recover.
	pid, err = s.Root.SpawnNamed(actor.PropsFromProducer(NewTarget("/t/h", broken, nil)), TargetActorName("/t/h"))
	if err != nil {
		t.Fatal(err)
	}
	f = want[messages.Failed](t, request(t, s, pid, messages.TargetAcquire{Holder: "h"}))
	if errs.Code(f.Code) != errs.Unavailable || !strings.Contains(f.Message, "harness store verify") {
		t.Fatalf("acquire without a readable reservation: %+v", f)
	}
}
