package actors

import (
	"fmt"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// Recover returns a receiver middleware that catches a panic in Receive,
// logs it at Error with the stack, answers the requester with Failed (so it
// gets an error reply rather than a timeout), and panics again so the
// supervisor restarts the actor from its snapshot.
func Recover(lg *zap.Logger) actor.ReceiverMiddleware {
	if lg == nil {
		lg = zap.NewNop()
	}
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			defer func() {
				r := recover()
				if r == nil {
					return
				}
				lg.Error("actor panicked",
					zap.String("pid", c.Self().String()),
					zap.String("message", fmt.Sprintf("%T", env.Message)),
					zap.Any("panic", r),
					zap.ByteString("stack", debug.Stack()))
				if env.Sender != nil {
					c.ActorSystem().Root.Send(env.Sender, Failure(errs.New(errs.Internal,
						"actor %s failed handling %T and restarts from its snapshot", c.Self().Id, env.Message)))
				}
				panic(r)
			}()
			next(c, env)
		}
	}
}

// Failure turns err into the Failed message that carries it as data.
func Failure(err error) messages.Failed {
	e := errs.From(err)
	if e == nil {
		return messages.Failed{Code: string(errs.Internal), Message: "failed without an error"}
	}
	return messages.Failed{Code: string(e.Code), Message: e.Message, Details: e.Details}
}

// ErrorOf turns a Failed message back into its coded error.
func ErrorOf(f messages.Failed) error {
	code := errs.Code(f.Code)
	if code == "" {
		code = errs.Internal
	}
	return &errs.Error{Code: code, Message: f.Message, Details: f.Details}
}

// reply answers the current request with v, or with Failed when err != nil.
func reply(ctx actor.Context, v any, err error) {
	if ctx.Sender() == nil {
		return
	}
	if err != nil {
		ctx.Respond(Failure(err))
		return
	}
	ctx.Respond(v)
}
