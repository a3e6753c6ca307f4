package supervisors

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		reason any
		want   Fault
	}{
		{"a string panic", "index out of range", Crash},
		{"a plain error", errors.New("boom"), Crash},
		{"a runtime error", fmt.Errorf("handler: %w", errors.ErrUnsupported), Crash},
		{"nil", nil, Crash},
		{"store closed", persistence.ErrClosed, StoreFailed},
		{"wrapped corrupt record", fmt.Errorf("checkout: restore fencing marks: %w", persistence.ErrCorrupt), StoreFailed},
		{"unknown envelope version", fmt.Errorf("restore: %w", persistence.ErrUnknownVersion), StoreFailed},
		{"damaged store", fmt.Errorf("restore: %w", &persistence.DamageError{File: "MANIFEST", Problem: "gone"}), StoreFailed},
		{"full disk (reads work: a reload succeeds)", &persistence.FullError{Dir: "/d"}, Crash},
		{"not found (an answer, not a fault)", persistence.ErrNotFound, Crash},
	}
	for _, tt := range tests {
		if got := Classify(tt.reason); got != tt.want {
			t.Errorf("%s: Classify = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// The deciders of every declared policy, as a table: what a child's n-th
// failure within the window leads to.
func TestPolicyDeciders(t *testing.T) {
	bug := "nil map write"
	store := fmt.Errorf("restore: %w", persistence.ErrCorrupt)
	tests := []struct {
		policy   Policy
		reason   any
		failures int
		want     actor.Directive
	}{
		// checkout: reload from its fencing marks and durable leases; never
		// serve leases from a store it cannot read.
		{CheckoutPolicy(), bug, 1, actor.RestartDirective},
		{CheckoutPolicy(), bug, 5, actor.RestartDirective},
		{CheckoutPolicy(), bug, 6, actor.StopDirective},
		{CheckoutPolicy(), store, 1, actor.StopDirective},
		{CheckoutChildPolicy(), bug, 1, actor.RestartDirective},
		{CheckoutChildPolicy(), bug, 6, actor.StopDirective},
		{CheckoutChildPolicy(), store, 1, actor.StopDirective},
		// job: restored from its record, adopting its process.
		{JobPolicy(), bug, 1, actor.RestartDirective},
		{JobPolicy(), bug, 6, actor.StopDirective},
		{JobPolicy(), store, 1, actor.StopDirective},
		// run: reloaded from its snapshot.
		{RunPolicy(), bug, 1, actor.RestartDirective},
		{RunPolicy(), bug, 6, actor.StopDirective},
		{RunPolicy(), persistence.ErrClosed, 1, actor.StopDirective},
		// check: reloaded from its evidence.
		{CheckPolicy(), bug, 1, actor.RestartDirective},
		{CheckPolicy(), bug, 6, actor.StopDirective},
		// target: resumed, so its holder is not forgotten.
		{TargetPolicy(), bug, 1, actor.ResumeDirective},
		{TargetPolicy(), bug, 5, actor.ResumeDirective},
		{TargetPolicy(), bug, 6, actor.StopDirective},
		{TargetPolicy(), store, 1, actor.StopDirective},
		// a temporary child never comes back.
		{Policy{Child: "t", Restart: Temporary, Intensity: 5, Period: time.Second}, bug, 1, actor.StopDirective},
		{Policy{Child: "t", Restart: Temporary, Recovery: Resume, Intensity: 5, Period: time.Second}, bug, 1, actor.StopDirective},
	}
	for i, tt := range tests {
		got, why := tt.policy.Decide(tt.reason, tt.failures)
		if got != tt.want || why == "" {
			t.Errorf("%d: %s child, %v, failure %d: %s (%q), want %s", i, tt.policy.Child, tt.reason, tt.failures, got, why, tt.want)
		}
	}
}

// The declared policies: on-demand children are never Permanent (their
// parents stop them when their work ends), and every window is typed.
func TestDeclaredPolicies(t *testing.T) {
	for _, p := range []Policy{CheckoutPolicy(), CheckoutChildPolicy(), JobPolicy(), RunPolicy(), CheckPolicy(), TargetPolicy()} {
		if p.Child == "" || p.Restart == Permanent || p.Intensity < 1 || p.Period < time.Second {
			t.Errorf("policy %+v: want a named, non-permanent child with a window of at least 1 s", p)
		}
	}
}

func TestPolicyEnumStrings(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{Reload.String(), "reload"}, {Resume.String(), "resume"}, {Recovery(7).String(), "unknown(7)"},
		{Crash.String(), "crash"}, {StoreFailed.String(), "store failed"}, {Fault(7).String(), "unknown(7)"},
	} {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

// counter is a child that counts its work in memory and panics with the
// reason it is sent.
type counter struct {
	log *eventLog
	n   int
}

type fail struct{ reason any }

func (c *counter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.log.add("started")
	case work:
		c.n++
		c.log.add("work:" + strconv.Itoa(c.n))
	case fail:
		panic(m.reason)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		c.log.add("stopping")
	}
}

// onDemandParent spawns one child, "kid", as the registry or jobs spawn
// theirs, and supervises it with its policy.
type onDemandParent struct{ kid *actor.Props }

func (p *onDemandParent) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if _, err := ctx.SpawnNamed(p.kid, "kid"); err != nil {
			panic(err)
		}
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	}
}

func spawnSupervised(t *testing.T, s *actor.ActorSystem, p Policy, l *eventLog) *actor.PID {
	t.Helper()
	kid := actor.PropsFromProducer(func() actor.Actor { return &counter{log: l} })
	parent, err := s.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &onDemandParent{kid: kid} },
		actor.WithSupervisor(p.Strategy(zap.NewNop()))), "parent")
	if err != nil {
		t.Fatal(err)
	}
	ping(t, s, parent)
	kidPID := ChildPID(parent, "kid")
	ping(t, s, kidPID)
	return kidPID
}

// The strategy applies the decider: a reloaded child starts afresh, a
// resumed one keeps its count, a store failure stops the child at once,
// and so does one failure past the intensity.
func TestPolicyStrategy(t *testing.T) {
	bug := "nil map write"
	tests := []struct {
		name     string
		policy   Policy
		reasons  []any
		stopped  bool
		starts   int
		lastWork string // of a work sent after the failures, when not stopped
	}{
		{"reload", Policy{Child: "k", Restart: Transient, Recovery: Reload, Intensity: 3, Period: time.Minute}, []any{bug}, false, 2, "work:1"},
		{"resume", Policy{Child: "k", Restart: Transient, Recovery: Resume, Intensity: 3, Period: time.Minute}, []any{bug}, false, 1, "work:2"},
		{"store failed", Policy{Child: "k", Restart: Transient, Recovery: Reload, Intensity: 3, Period: time.Minute},
			[]any{fmt.Errorf("restore: %w", persistence.ErrCorrupt)}, true, 1, ""},
		{"past the intensity", Policy{Child: "k", Restart: Transient, Recovery: Resume, Intensity: 2, Period: time.Minute}, []any{bug, bug, bug}, true, 1, ""},
		{"temporary", Policy{Child: "k", Restart: Temporary, Intensity: 3, Period: time.Minute}, []any{bug}, true, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSystem(t)
			l := &eventLog{}
			kid := spawnSupervised(t, s, tt.policy, l)
			s.Root.Send(kid, work{})
			for _, r := range tt.reasons {
				s.Root.Send(kid, fail{r})
			}
			if tt.stopped {
				l.waitCount(t, "stopping", 1)
				if _, err := s.Root.RequestFuture(kid, messages.Ping{}, time.Second).Result(); !errors.Is(err, actor.ErrDeadLetter) && !errors.Is(err, actor.ErrTimeout) {
					t.Fatalf("the stopped child answered (err %v)", err)
				}
			} else {
				s.Root.Send(kid, work{})
				ping(t, s, kid)
				ev := l.list()
				if got := ev[len(ev)-1]; got != tt.lastWork {
					t.Fatalf("last event %q, want %q: %v", got, tt.lastWork, ev)
				}
			}
			if got := countOf(l.list(), "started"); got != tt.starts {
				t.Fatalf("started %d times, want %d: %v", got, tt.starts, l.list())
			}
		})
	}
}
