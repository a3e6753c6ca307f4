package actors

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// quietLogs keeps protoactor's own log lines out of test output.
var quietLogs = actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) })

// watcher closes done when the watched actor terminates.
type watcher struct {
	target *actor.PID
	done   chan struct{}
}

func (w *watcher) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		ctx.Watch(w.target)
	case *actor.Terminated:
		close(w.done)
		ctx.Stop(ctx.Self())
	}
}

// watch returns a channel closed when pid terminates: a probe for tests
// that wait for an actor to stop, with no polling.
func watch(t *testing.T, s *actor.ActorSystem, pid *actor.PID) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	if _, err := s.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &watcher{target: pid, done: done} }), "watch-"+strings.ReplaceAll(pid.Id, "/", "_")); err != nil {
		t.Fatal(err)
	}
	return done
}
