package supervisors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/actors"
)

// AuditName is the root supervisor's audit child.
const AuditName = "audit"

func init() {
	register(func(d Deps) Child {
		props := actor.PropsFromProducer(actors.NewAudit(d.Store, d.Logger, actors.AuditConfig{Now: d.Now}),
			actor.WithReceiverMiddleware(actors.Recover(d.Logger)))
		return Child{Name: AuditName, Props: props, Restart: Permanent}
	})
}
