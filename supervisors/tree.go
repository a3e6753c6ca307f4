package supervisors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Names of the root supervisor's children.
const (
	RegistryName = "registry"
)

// Deps are what the tree's actors need.
type Deps struct {
	Store  *persistence.Store
	Index  *actors.RepoIndex
	Logger *zap.Logger
}

// Tree declares harnessd's root supervisor: its children in start order.
func Tree(d Deps) Spec {
	lg := d.Logger
	mw := actor.WithReceiverMiddleware(actors.Recover(lg))
	checkout := func(r messages.Repository) *actor.Props {
		return actor.PropsFromProducer(actors.NewCheckout(r, d.Store, lg), mw)
	}
	registry := actor.PropsFromProducer(actors.NewRegistry(d.Store, d.Index, checkout, lg), mw,
		actor.WithSupervisor(actor.NewOneForOneStrategy(10, 30*time.Second, actor.DefaultDecider)))
	return Spec{
		Children: []Child{
			{Name: RegistryName, Props: registry, Restart: Permanent},
		},
		Intensity: 5,
		Period:    30 * time.Second,
	}
}
