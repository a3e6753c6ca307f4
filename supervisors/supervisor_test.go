package supervisors

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/messages"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newTestSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	s := actor.NewActorSystemWithConfig(actor.Configure(actor.WithDeadLetterThrottleInterval(time.Millisecond),
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) })))
	t.Cleanup(s.Shutdown)
	return s
}

// recorder is a child that records the messages it handles and its stops.
type recorder struct {
	name string
	log  *eventLog
}

type eventLog struct {
	mu      sync.Mutex // protects events and changed
	events  []string
	changed chan struct{} // closed and replaced by every add
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.mu.Unlock()
}

// waitCount waits until e was logged n times.
func (l *eventLog) waitCount(t *testing.T, e string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		c := countOf(l.events, e)
		if c >= n {
			l.mu.Unlock()
			return
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%q logged %d times, want %d: %v", e, c, n, l.list())
		}
	}
}

func (l *eventLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

type work struct{ n int }
type boom struct{}
type stopSelf struct{}

func (r *recorder) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.log.add(r.name + ":started")
	case work:
		r.log.add(r.name + ":work")
		_ = m
	case boom:
		panic("boom")
	case stopSelf:
		ctx.Stop(ctx.Self())
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		r.log.add(r.name + ":stopping")
	}
}

func childProps(name string, l *eventLog) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &recorder{name: name, log: l} })
}

func ping(t *testing.T, s *actor.ActorSystem, pid *actor.PID) {
	t.Helper()
	if _, err := s.Root.RequestFuture(pid, messages.Ping{}, 10*time.Second).Result(); err != nil {
		t.Fatalf("ping %s: %v", pid.Id, err)
	}
}

func TestDrainInReverseOrderAfterQueuedWork(t *testing.T) {
	s := newTestSystem(t)
	l := &eventLog{}
	spec := Spec{Children: []Child{
		{Name: "a", Props: childProps("a", l), Restart: Permanent},
		{Name: "b", Props: childProps("b", l), Restart: Permanent},
	}}
	sup, err := s.Root.SpawnNamed(Props(spec, zap.NewNop()), "sup")
	if err != nil {
		t.Fatal(err)
	}
	ping(t, s, sup)
	a, b := ChildPID(sup, "a"), ChildPID(sup, "b")
	for i := 0; i < 10; i++ {
		s.Root.Send(a, work{i})
		s.Root.Send(b, work{i})
	}
	if err := s.Root.PoisonFuture(sup).Wait(); err != nil {
		t.Fatal(err)
	}
	ev := l.list()
	var aWork, bWork, bStop, aStop int
	for i, e := range ev {
		switch e {
		case "a:work":
			aWork++
		case "b:work":
			bWork++
		case "a:stopping":
			aStop = i
		case "b:stopping":
			bStop = i
		}
	}
	if aWork != 10 || bWork != 10 {
		t.Fatalf("work done a=%d b=%d, want 10 each (queued messages lost): %v", aWork, bWork, ev)
	}
	if !(bStop < aStop) {
		t.Fatalf("stop order %v: want b before a", ev)
	}
}

func TestPermanentChildRestartsAfterStopTemporaryDoesNot(t *testing.T) {
	s := newTestSystem(t)
	l := &eventLog{}
	spec := Spec{Children: []Child{
		{Name: "perm", Props: childProps("perm", l), Restart: Permanent},
		{Name: "temp", Props: childProps("temp", l), Restart: Temporary},
	}}
	sup, err := s.Root.SpawnNamed(Props(spec, zap.NewNop()), "sup")
	if err != nil {
		t.Fatal(err)
	}
	ping(t, s, sup)
	perm := ChildPID(sup, "perm")
	if err := s.Root.StopFuture(perm).Wait(); err != nil {
		t.Fatal(err)
	}
	// The stop future completes before the supervisor handles Terminated:
	// wait for the respawn itself.
	l.waitCount(t, "perm:started", 2)
	ping(t, s, perm)

	temp := ChildPID(sup, "temp")
	if err := s.Root.StopFuture(temp).Wait(); err != nil {
		t.Fatal(err)
	}
	// Stop perm once more: once it is back, the supervisor has handled the
	// temporary child's Terminated, sent before.
	if err := s.Root.StopFuture(perm).Wait(); err != nil {
		t.Fatal(err)
	}
	l.waitCount(t, "perm:started", 3)
	if _, err := s.Root.RequestFuture(temp, messages.Ping{}, 200*time.Millisecond).Result(); err == nil {
		t.Fatal("temporary child came back after a stop")
	}
	if n := countOf(l.list(), "temp:started"); n != 1 {
		t.Fatalf("temp started %d times, want 1", n)
	}
}

func countOf(events []string, e string) int {
	n := 0
	for _, x := range events {
		if x == e {
			n++
		}
	}
	return n
}

func TestCrashRestartsWithinIntensity(t *testing.T) {
	s := newTestSystem(t)
	l := &eventLog{}
	spec := Spec{Children: []Child{{Name: "c", Props: childProps("c", l), Restart: Transient}}, Intensity: 3, Period: time.Minute}
	sup, err := s.Root.SpawnNamed(Props(spec, zap.NewNop()), "sup")
	if err != nil {
		t.Fatal(err)
	}
	ping(t, s, sup)
	c := ChildPID(sup, "c")
	for i := 0; i < 3; i++ {
		s.Root.Send(c, boom{})
		ping(t, s, c)
	}
	starts := 0
	for _, e := range l.list() {
		if e == "c:started" {
			starts++
		}
	}
	if starts != 4 {
		t.Fatalf("starts = %d, want 4 (1 + 3 restarts)", starts)
	}
}

func TestRestartString(t *testing.T) {
	tests := []struct {
		r    Restart
		want string
	}{{Permanent, "permanent"}, {Transient, "transient"}, {Temporary, "temporary"}, {Restart(9), "unknown(9)"}}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
