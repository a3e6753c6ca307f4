package supervisors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/actors"
)

// ChecksName is the name of the checks supervisor, the parent of one check
// actor per semantic identity.
const ChecksName = "checks"

func init() {
	register(func(d Deps) Child {
		props := actor.PropsFromProducer(actors.NewChecks(d.Store, d.Logger, actors.ChecksConfig{Now: d.Now}),
			actor.WithReceiverMiddleware(actors.Recover(d.Logger)))
		return Child{Name: ChecksName, Props: props, Restart: Permanent}
	})
}
