package supervisors

import (
	"errors"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/persistence"
)

// Recovery says how a crashed child comes back (when its Restart lets it).
type Recovery int

const (
	// Reload replaces the crashed child with a fresh instance from its
	// producer, which restores its state from the store on Started: the
	// store is the truth, the crashed instance's memory is not trusted.
	Reload Recovery = iota
	// Resume keeps the crashed instance and its state, minus the message
	// that panicked (actors.Recover answered its sender): for a child whose
	// state lives in memory only, where forgetting it would be worse than a
	// handler's partial update.
	Resume
)

func (r Recovery) String() string {
	switch r {
	case Reload:
		return "reload"
	case Resume:
		return "resume"
	default:
		return "unknown(" + strconv.Itoa(int(r)) + ")"
	}
}

// Fault is the kind of failure a panic reason is.
type Fault int

const (
	// Crash is a bug met handling one message: the store is sound, so the
	// child may come back.
	Crash Fault = iota
	// StoreFailed is a store that could not be read or decoded (closed,
	// damaged, a corrupt or unknown record): a fresh instance would fail
	// the same way on Started, and a resumed one could not persist.
	StoreFailed
)

func (f Fault) String() string {
	switch f {
	case Crash:
		return "crash"
	case StoreFailed:
		return "store failed"
	default:
		return "unknown(" + strconv.Itoa(int(f)) + ")"
	}
}

// Classify says what kind of failure a panic reason is: a store failure
// when it is an error whose chain holds the store's closed, corrupt,
// unknown-version or damaged error, a crash otherwise. A full disk is a
// crash: reads keep working, so a reload succeeds, and writes resume once
// space is freed.
func Classify(reason any) Fault {
	err, ok := reason.(error)
	if !ok {
		return Crash
	}
	var damaged *persistence.DamageError
	switch {
	case errors.Is(err, persistence.ErrClosed), errors.Is(err, persistence.ErrCorrupt),
		errors.Is(err, persistence.ErrUnknownVersion), errors.As(err, &damaged):
		return StoreFailed
	}
	return Crash
}

// Policy declares how a parent supervises the children it spawns on
// demand (checkout/<id> under the registry, job/<id> under jobs, ...): in
// ergo's vocabulary, Restart says whether a child comes back at all,
// Recovery how, and at most Intensity failures within Period are borne
// before the child is stopped for good. The parents stop these children
// themselves when their work ends, so a normal stop is final: they are
// Transient or Temporary, never Permanent.
type Policy struct {
	Child     string // what the children are, for logs
	Restart   Restart
	Recovery  Recovery
	Intensity int
	Period    time.Duration
}

// Decide returns the directive for a child that failed with reason, its
// failures-th failure within Period (this one included), and why. Every
// failure counts, resumed or reloaded: a child that keeps failing is
// stopped rather than brought back in a loop.
func (p Policy) Decide(reason any, failures int) (actor.Directive, string) {
	switch {
	case p.Restart == Temporary:
		return actor.StopDirective, "a temporary child never comes back"
	case Classify(reason) == StoreFailed:
		return actor.StopDirective, "its store failed: a fresh instance would fail the same way"
	case failures > p.Intensity:
		return actor.StopDirective, "it failed " + strconv.Itoa(failures) + " times within " + p.Period.String()
	case p.Recovery == Resume:
		return actor.ResumeDirective, "it resumes with its state, without the message that panicked"
	default:
		return actor.RestartDirective, "a fresh instance reloads its state from the store"
	}
}

// Strategy returns p as the supervisor strategy of the parent's props: one
// for one, each failure logged with the child, the reason and the
// directive.
func (p Policy) Strategy(lg *zap.Logger) actor.SupervisorStrategy {
	if lg == nil {
		lg = zap.NewNop()
	}
	return &policyStrategy{p: p, lg: lg}
}

type policyStrategy struct {
	p  Policy
	lg *zap.Logger
}

func (s *policyStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, _ any) {
	rs.Fail()
	d, why := s.p.Decide(reason, rs.NumberOfFailures(s.p.Period))
	fields := []zap.Field{zap.String("child", child.Id), zap.String("kind", s.p.Child), zap.Stringer("fault", Classify(reason)),
		zap.Any("reason", reason), zap.Stringer("directive", d), zap.String("why", why)}
	switch d {
	case actor.ResumeDirective:
		s.lg.Warn("child crashed; resuming it", fields...)
		sup.ResumeChildren(child)
	case actor.RestartDirective:
		s.lg.Warn("child crashed; restarting it from its snapshot", fields...)
		sup.RestartChildren(child)
	default:
		rs.Reset()
		s.lg.Error("child crashed; stopping it", fields...)
		sup.StopChildren(child)
	}
}

// The policies of the children spawned on demand (supervisors/doc.go says
// why each is what it is).

// CheckoutPolicy is how the registry supervises checkout/<id>.
func CheckoutPolicy() Policy {
	return Policy{Child: "checkout", Restart: Transient, Recovery: Reload, Intensity: 5, Period: 30 * time.Second}
}

// CheckoutChildPolicy is how a checkout supervises its lease-<id> actors
// and its watcher.
func CheckoutChildPolicy() Policy {
	return Policy{Child: "lease or watcher", Restart: Transient, Recovery: Reload, Intensity: 5, Period: 30 * time.Second}
}

// CheckPolicy is how the checks supervisor supervises check/<identity>.
func CheckPolicy() Policy {
	return Policy{Child: "check", Restart: Transient, Recovery: Reload, Intensity: 5, Period: 30 * time.Second}
}

// JobPolicy is how the jobs supervisor supervises job/<id>.
func JobPolicy() Policy {
	return Policy{Child: "job", Restart: Transient, Recovery: Reload, Intensity: 5, Period: 30 * time.Second}
}

// RunPolicy is how the runs supervisor supervises run/<id>.
func RunPolicy() Policy {
	return Policy{Child: "run", Restart: Transient, Recovery: Reload, Intensity: 5, Period: 30 * time.Second}
}

// TargetPolicy is how the targets actor supervises target/<root>.
func TargetPolicy() Policy {
	return Policy{Child: "target", Restart: Transient, Recovery: Resume, Intensity: 5, Period: 30 * time.Second}
}
