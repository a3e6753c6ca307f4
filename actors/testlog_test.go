package actors

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// quietLogs keeps protoactor's own log lines out of test output.
var quietLogs = actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) })
