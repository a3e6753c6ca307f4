package supervisors

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/messages"
)

// Restart says when a child is restarted.
type Restart int

const (
	// Permanent children are always restarted: after a crash and after they stop.
	Permanent Restart = iota
	// Transient children are restarted only after a crash.
	Transient
	// Temporary children are never restarted.
	Temporary
)

func (r Restart) String() string {
	switch r {
	case Permanent:
		return "permanent"
	case Transient:
		return "transient"
	case Temporary:
		return "temporary"
	default:
		return "unknown(" + strconv.Itoa(int(r)) + ")"
	}
}

// Child declares one supervised child.
type Child struct {
	Name    string
	Props   *actor.Props
	Restart Restart
}

// Spec declares a supervisor: its children in start order, and at most
// Intensity restarts within Period before it gives up and escalates.
type Spec struct {
	Children  []Child
	Intensity int
	Period    time.Duration
}

func (s Spec) withDefaults() Spec {
	if s.Intensity <= 0 {
		s.Intensity = 5
	}
	if s.Period <= 0 {
		s.Period = 30 * time.Second
	}
	return s
}

// Props returns the props of a supervisor actor for spec.
func Props(spec Spec, lg *zap.Logger) *actor.Props {
	spec = spec.withDefaults()
	st := &strategy{spec: spec, lg: lg}
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{spec: spec, lg: lg}
	}, actor.WithSupervisor(st), actor.WithReceiverMiddleware(actors.Recover(lg)))
}

// ChildPID returns the PID a supervisor with PID parent gives its child name.
func ChildPID(parent *actor.PID, name string) *actor.PID {
	return actor.NewPID(parent.Address, parent.Id+"/"+name)
}

type supervisor struct {
	spec     Spec
	lg       *zap.Logger
	pids     map[string]*actor.PID
	stopping bool
}

func (s *supervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *actor.Terminated:
		s.terminated(ctx, m)
	case messages.Counts:
		s.counts(ctx)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		s.drain(ctx)
	}
}

func (s *supervisor) start(ctx actor.Context) {
	s.pids = make(map[string]*actor.PID, len(s.spec.Children))
	for _, c := range s.spec.Children {
		s.spawn(ctx, c)
	}
}

func (s *supervisor) spawn(ctx actor.Context, c Child) {
	pid, err := ctx.SpawnNamed(c.Props, c.Name)
	if err != nil {
		// Only a name clash can fail here, and it means a broken tree.
		panic(fmt.Sprintf("supervisor %s: spawn %s: %v", ctx.Self().Id, c.Name, err))
	}
	// No Watch: a parent is told of its children's Terminated anyway, and a
	// second notice would look like the stop of the respawned child.
	s.pids[c.Name] = pid
}

// terminated restarts a Permanent child that stopped on its own. Crashes are
// handled by the strategy; a stop is not a crash.
func (s *supervisor) terminated(ctx actor.Context, m *actor.Terminated) {
	if s.stopping {
		return
	}
	for _, c := range s.spec.Children {
		if pid := s.pids[c.Name]; pid != nil && pid.Equal(m.Who) {
			delete(s.pids, c.Name)
			if c.Restart == Permanent {
				s.lg.Warn("permanent child stopped; starting it again", zap.String("child", c.Name))
				s.spawn(ctx, c)
			}
			return
		}
	}
}

// drain stops the children in reverse start order, each after the messages
// already queued for it: PoisonFuture completes through system messages, so
// waiting here cannot deadlock.
func (s *supervisor) drain(ctx actor.Context) {
	s.stopping = true
	for i := len(s.spec.Children) - 1; i >= 0; i-- {
		if pid := s.pids[s.spec.Children[i].Name]; pid != nil {
			if err := ctx.PoisonFuture(pid).Wait(); err != nil {
				s.lg.Warn("child did not stop in time", zap.String("child", s.spec.Children[i].Name), zap.Error(err))
			}
		}
	}
}

func (s *supervisor) counts(ctx actor.Context) {
	byKind := map[string]int{"supervisor": 1}
	for name := range s.pids {
		byKind[name]++
	}
	ctx.Respond(messages.CountsReply{ByKind: byKind})
}

// strategy applies each child's Restart policy with a typed window.
type strategy struct {
	spec Spec
	lg   *zap.Logger
}

func (st *strategy) restartOf(child *actor.PID) Restart {
	name := child.Id[strings.LastIndexByte(child.Id, '/')+1:]
	for _, c := range st.spec.Children {
		if c.Name == name {
			return c.Restart
		}
	}
	return Temporary
}

func (st *strategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, message any) {
	switch st.restartOf(child) {
	case Temporary:
		st.lg.Warn("temporary child crashed; not restarting", zap.String("child", child.Id), zap.Any("reason", reason))
		sup.StopChildren(child)
		return
	}
	rs.Fail()
	if rs.NumberOfFailures(st.spec.Period) > st.spec.Intensity {
		st.lg.Error("child crashed too often; escalating",
			zap.String("child", child.Id), zap.Int("intensity", st.spec.Intensity), zap.Duration("period", st.spec.Period))
		rs.Reset()
		sup.EscalateFailure(reason, message)
		return
	}
	st.lg.Warn("child crashed; restarting from its snapshot", zap.String("child", child.Id), zap.Any("reason", reason))
	sup.RestartChildren(child)
}
