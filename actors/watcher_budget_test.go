package actors

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	iwatch "github.com/harnessd/harnessd/internal/watch"
	"github.com/harnessd/harnessd/messages"
)

// waitUntil polls cond (a counter the actors set, not an actor's state)
// until it holds, or fails after the deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling counters, not waiting on an actor
	}
}

// With a budget of 2 watchers and 3 checkouts in use, starting the third
// watcher passivates the least recently used one; that checkout is then
// answered not ready (its caller runs git, as with the index off) and is
// watched again on its next use, which passivates the next least recently
// used. Never more than 2 watchers stay running.
func TestWatchBudgetPassivatesTheLeastRecentlyUsed(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	budget := NewWatchBudget(2)
	if budget.Cap() != 2 {
		t.Fatalf("cap %d, want 2", budget.Cap())
	}
	var passivated [3]atomic.Int32
	pids := make([]*actor.PID, 3)
	roots := make([]string, 3)
	for i := range 3 {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, ".git/refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		base := filepath.Join(t.TempDir(), "cookies")
		cookieBases.Store(root, base)
		cfg := WatchConfig{Idle: time.Hour, CookieBase: base, Budget: budget, Passivated: func() { passivated[i].Add(1) }}
		repo := messages.Repository{ID: "repo_b" + string(rune('0'+i)), CheckoutID: "co_b" + string(rune('0'+i)), Root: root}
		pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewCheckoutWith(repo, st, zap.NewNop(), nil, CheckoutConfig{Watch: cfg})), repo.CheckoutID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Root.StopFuture(pid).Wait() })
		pids[i], roots[i] = pid, root
	}
	pos := make([]messages.WatchState, 3)
	pos[0] = syncAt(t, s, pids[0], roots[0], 0, 0)
	pos[1] = syncAt(t, s, pids[1], roots[1], 0, 0)
	if n := budget.running(); n != 2 {
		t.Fatalf("%d watchers running, want 2", n)
	}
	pos[1] = syncAt(t, s, pids[1], roots[1], pos[1].Epoch, pos[1].Gen) // checkout 0 is now the least recently used

	pos[2] = syncAt(t, s, pids[2], roots[2], 0, 0)
	waitUntil(t, "checkout 0's watcher passivated", func() bool { return passivated[0].Load() == 1 })
	waitUntil(t, "2 watchers running", func() bool { return budget.running() == 2 })
	if passivated[1].Load() != 0 || passivated[2].Load() != 0 {
		t.Fatalf("passivated %d, %d, %d; want only checkout 0", passivated[0].Load(), passivated[1].Load(), passivated[2].Load())
	}

	// Checkout 0 asked from its old position: not ready (git answers), and
	// a watcher starts again, making room by passivating checkout 1.
	st0 := want[messages.WatchState](t, request(t, s, pids[0], messages.WatchSync{Cookie: "c-none", Epoch: pos[0].Epoch, Gen: pos[0].Gen}))
	if st0.Ready || st0.Reason != iwatch.ReasonStarting {
		t.Fatalf("passivated checkout answered %+v, want not ready (starting): its caller runs git", st0)
	}
	waitUntil(t, "checkout 1's watcher passivated", func() bool { return passivated[1].Load() == 1 })
	waitUntil(t, "2 watchers running", func() bool { return budget.running() == 2 })
	if got := syncAt(t, s, pids[0], roots[0], 0, 0); !got.Ready {
		t.Fatalf("reactivated checkout 0: %+v", got)
	}
	if passivated[2].Load() != 0 {
		t.Fatal("checkout 2, the most recently used, was passivated")
	}
}

// A negative limit is no budget: nothing is counted, nothing evicted.
func TestWatchBudgetOff(t *testing.T) {
	b := NewWatchBudget(-1)
	if b != nil || b.Cap() != 0 || b.admit(actor.NewPID("x", "y")) != nil || b.running() != 0 {
		t.Fatalf("NewWatchBudget(-1) = %+v, want no budget", b)
	}
	if d := NewWatchBudget(0); d.Cap() < 1 {
		t.Fatalf("default budget cap %d, want at least 1", d.Cap())
	}
}
