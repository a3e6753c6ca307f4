package actors

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	iwatch "github.com/harnessd/harnessd/internal/watch"
	"github.com/harnessd/harnessd/messages"
)

var (
	cookieSeq   atomic.Uint64
	cookieBases sync.Map // work tree root → its test's WatchConfig.CookieBase
)

// watchRepo is a work tree with a .git directory, and a checkout of it
// whose watcher passivates after idle.
func watchRepo(t *testing.T, idle time.Duration) (*actor.ActorSystem, *actor.PID, string) {
	return watchRepoWith(t, WatchConfig{Idle: idle})
}

func watchRepoWith(t *testing.T, cfg WatchConfig) (*actor.ActorSystem, *actor.PID, string) {
	t.Helper()
	root := t.TempDir()
	if cfg.CookieBase == "" {
		cfg.CookieBase = filepath.Join(t.TempDir(), "cookies")
	}
	cookieBases.Store(root, cfg.CookieBase)
	if err := os.MkdirAll(filepath.Join(root, ".git/refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, st := newTestSystem(t), newStore(t)
	repo := messages.Repository{ID: "repo_w", CheckoutID: "co_w", Root: root}
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewCheckoutWith(repo, st, zap.NewNop(), nil, CheckoutConfig{Watch: cfg})), "co_w")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Root.StopFuture(pid).Wait() })
	return s, pid, root
}

// syncAt makes a cookie and asks the checkout's watcher.
func syncAt(t *testing.T, s *actor.ActorSystem, pid *actor.PID, root string, epoch, gen uint64) messages.WatchState {
	t.Helper()
	name := fmt.Sprintf("harnessd-cookie-test-%d", cookieSeq.Add(1))
	base, _ := cookieBases.Load(root)
	dir := iwatch.CookieDir(base.(string), root)
	if err := os.MkdirAll(dir, 0o700); err != nil { // the pump may not have made it yet
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(p)
	st := want[messages.WatchState](t, request(t, s, pid, messages.WatchSync{Cookie: name, Epoch: epoch, Gen: gen}))
	if !st.Ready && st.Reason == iwatch.ReasonStarting && epoch != 0 {
		// A new watcher is walking: as a view does, ask again from no
		// position, which waits for the watches.
		return syncAt(t, s, pid, root, 0, 0)
	}
	if !st.Ready {
		t.Fatalf("not ready: %s", st.Reason)
	}
	return st
}

func TestWatcherReportsChangesInOrder(t *testing.T) {
	s, pid, root := watchRepo(t, time.Hour)
	st := syncAt(t, s, pid, root, 0, 0)
	if st.Complete || st.CookieSeen {
		t.Fatalf("a first sync must rebuild, answered without its cookie: %+v", st)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// No wait: the cookie proves the write was seen.
	st2 := syncAt(t, s, pid, root, st.Epoch, st.Gen)
	if !st2.Complete || !st2.CookieSeen || !slices.Contains(st2.Changed, "a.txt") || st2.Epoch != st.Epoch {
		t.Fatalf("after a write: %+v", st2)
	}
	st3 := syncAt(t, s, pid, root, st2.Epoch, st2.Gen)
	if !st3.Complete || len(st3.Changed) != 0 {
		t.Fatalf("nothing changed since: %+v", st3)
	}
	ov := want[messages.WatchState](t, request(t, s, pid, messages.WatchOverflow{}))
	if st4 := syncAt(t, s, pid, root, st3.Epoch, st3.Gen); st4.Complete || st4.Epoch != ov.Epoch {
		t.Fatalf("after an overflow: %+v", st4)
	}
}

// TestWatcherPassivatesAndNeverLies: an idle watcher is stopped and a new
// one starts on the next sync, in a new epoch, so an asker of the old one
// rebuilds rather than miss a change made while nothing watched.
func TestWatcherPassivatesAndNeverLies(t *testing.T) {
	passivated := make(chan struct{}, 1)
	s, pid, root := watchRepoWith(t, WatchConfig{Idle: 5 * time.Millisecond, Passivated: func() {
		select {
		case passivated <- struct{}{}:
		default:
		}
	}})
	st := syncAt(t, s, pid, root, 0, 0)
	first := st.Epoch
	select {
	case <-passivated:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle watcher was not passivated")
	}
	// Changed while nothing watched: the next watcher cannot know.
	if err := os.WriteFile(filepath.Join(root, "b.txt"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	st = syncAt(t, s, pid, root, st.Epoch, st.Gen)
	if st.Epoch == first || st.Complete {
		t.Fatalf("a new watcher's first answer must not be complete: %+v", st)
	}
}

// TestWatcherSyncsDuringPassivationAreAnswered races syncs against a 1ms
// passivation: each one is answered, whether it reaches a watcher that
// stays, one being stopped (the checkout declines: a sync is on its way),
// or a new one still walking (TestWatcherNeverPassivatesWithASyncBeforeItsWatches
// is that last case made deterministic).
func TestWatcherSyncsDuringPassivationAreAnswered(t *testing.T) {
	s, pid, root := watchRepo(t, time.Millisecond)
	var epoch, gen uint64
	for range 200 {
		st := syncAt(t, s, pid, root, epoch, gen)
		epoch, gen = st.Epoch, st.Gen
	}
}

// idleParent stands in for a checkout: it spawns a watcher and counts the
// watchIdle (passivation requests) it hears, so a test can drive the idle
// timer's ticks itself.
type idleParent struct {
	props   *actor.Props
	watcher *actor.PID
	idles   int
}

type (
	parentWatcher struct{} // answers the watcher's PID
	parentIdles   struct{} // answers how many watchIdle arrived
)

func (p *idleParent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.watcher = ctx.Spawn(p.props)
	case parentWatcher:
		ctx.Respond(p.watcher)
	case watchIdle:
		if m.pid.Equal(p.watcher) {
			p.idles++
		}
	case parentIdles:
		ctx.Respond(p.idles)
	}
}

// TestWatcherNeverPassivatesWithASyncBeforeItsWatches: a sync that
// arrives while the pump's first walk is under way (it runs git to list
// the ignored directories: seconds on a large work tree, or on a loaded
// machine) waits for the watches; an idle tick meanwhile must not ask
// for passivation, which would stop the watcher and fail that sync. The
// test holds the walk with the Ignored hook and sends the ticks itself
// (Idle is an hour); a WatchOverflow, answered at once even before the
// watches exist, is the barrier that the tick was handled.
func TestWatcherNeverPassivatesWithASyncBeforeItsWatches(t *testing.T) {
	s := newTestSystem(t)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git/refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	cfg := WatchConfig{Idle: time.Hour, CookieBase: filepath.Join(t.TempDir(), "cookies"),
		Ignored: func(string) map[string]bool { <-release; return nil }}
	parent, err := s.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &idleParent{props: actor.PropsFromProducer(newWatcher(root, cfg, zap.NewNop()))}
	}), "idle_parent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Root.StopFuture(parent).Wait() })
	t.Cleanup(unblock) // runs first: the walk's goroutine ends before the stop
	w := want[*actor.PID](t, request(t, s, parent, parentWatcher{}))

	early := s.Root.RequestFuture(w, messages.WatchSync{Cookie: "harnessd-cookie-early"}, 10*time.Second)
	s.Root.Send(w, watchIdleTick{handled: 1}) // idle since the sync: only the sync waits
	want[messages.WatchState](t, request(t, s, w, messages.WatchOverflow{}))
	if n := want[int](t, request(t, s, parent, parentIdles{})); n != 0 {
		t.Fatalf("passivation asked %d times with a sync waiting for the watches, want 0", n)
	}

	unblock()
	res, err := early.Result()
	if err != nil {
		t.Fatalf("the early sync: %v", err)
	}
	if st := want[messages.WatchState](t, res); !st.Ready || st.Complete {
		t.Fatalf("the early sync's answer: %+v, want Ready and not Complete (a new epoch)", st)
	}
	// Not vacuous: with nothing waiting, the same tick asks.
	want[messages.WatchState](t, request(t, s, w, messages.WatchOverflow{})) // handled = 3
	s.Root.Send(w, watchIdleTick{handled: 3})
	want[messages.WatchState](t, request(t, s, w, messages.WatchOverflow{}))
	if n := want[int](t, request(t, s, parent, parentIdles{})); n != 1 {
		t.Fatalf("passivation asked %d times when idle, want 1", n)
	}
}

// TestWatcherAnswersAPositionedSyncAtOnceWhileStarting: while the first
// walk runs, a sync from a view that holds a position is answered at once,
// not ready (watch.ReasonStarting: that view runs git and warms up in the
// background), and one from no position waits for the watches.
func TestWatcherAnswersAPositionedSyncAtOnceWhileStarting(t *testing.T) {
	s := newTestSystem(t)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git/refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	cfg := WatchConfig{Idle: time.Hour, CookieBase: filepath.Join(t.TempDir(), "cookies"),
		Ignored: func(string) map[string]bool { <-release; return nil }}
	w, err := s.Root.SpawnNamed(actor.PropsFromProducer(newWatcher(root, cfg, zap.NewNop())), "starting_watcher")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Root.StopFuture(w).Wait() })
	t.Cleanup(unblock)
	waiting := s.Root.RequestFuture(w, messages.WatchSync{Cookie: "harnessd-cookie-none"}, 10*time.Second)
	st := want[messages.WatchState](t, request(t, s, w, messages.WatchSync{Cookie: "harnessd-cookie-held", Epoch: 7, Gen: 3}))
	if st.Ready || st.Reason != iwatch.ReasonStarting || st.CookieSeen {
		t.Fatalf("a positioned sync while starting: %+v, want not ready, %q", st, iwatch.ReasonStarting)
	}
	unblock()
	res, err := waiting.Result()
	if err != nil {
		t.Fatalf("the sync from no position: %v", err)
	}
	if st := want[messages.WatchState](t, res); !st.Ready || st.Complete {
		t.Fatalf("the sync from no position: %+v, want ready in a new epoch", st)
	}
}

// TestWatcherLateCookiesFallBackAtOnce: once a sync's cookie is not seen
// in time (a file system whose changes inotify does not report), later
// syncs are answered not Ready at once — the caller runs git — instead of
// each waiting for an event that may never come; the next cookie event
// ends that, and complete answers come back.
func TestWatcherLateCookiesFallBackAtOnce(t *testing.T) {
	s, pid, root := watchRepoWith(t, WatchConfig{Idle: time.Hour, SyncWait: 500 * time.Millisecond})
	st := syncAt(t, s, pid, root, 0, 0)
	st = syncAt(t, s, pid, root, st.Epoch, st.Gen)
	if !st.Complete || !st.CookieSeen {
		t.Fatalf("a normal sync: %+v", st)
	}
	// A cookie never raised: the ask fails after SyncWait.
	if err, ok := request(t, s, pid, messages.WatchSync{Cookie: "harnessd-cookie-never", Epoch: st.Epoch, Gen: st.Gen}).(error); !ok {
		t.Fatalf("an unseen cookie must fail its sync, got %v", err)
	}
	// Late: the next ask is answered at once, not Ready, even with its
	// cookie not raised yet (so it cannot have waited for it).
	late := want[messages.WatchState](t, request(t, s, pid, messages.WatchSync{Cookie: "harnessd-cookie-late", Epoch: st.Epoch, Gen: st.Gen}))
	if late.Ready || late.CookieSeen || !strings.Contains(late.Reason, "no sync cookie") {
		t.Fatalf("while cookies are late: %+v", late)
	}
	// Cookies flow again: a raised one ends it (syncAt fails the test
	// on a not-Ready answer, so ask directly until one is Ready).
	base, _ := cookieBases.Load(root)
	dir := iwatch.CookieDir(base.(string), root)
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("cookies raised again never ended the late state")
		}
		name := fmt.Sprintf("harnessd-cookie-again-%d", i)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		got := want[messages.WatchState](t, request(t, s, pid, messages.WatchSync{Cookie: name, Epoch: st.Epoch, Gen: st.Gen}))
		os.Remove(filepath.Join(dir, name))
		if got.Ready {
			if !got.CookieSeen || !got.Complete {
				t.Fatalf("after the late state: %+v", got)
			}
			return
		}
	}
}
