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
	LedgerName   = "ledger"
)

// Deps are what the tree's actors need.
type Deps struct {
	Store  *persistence.Store
	Index  *actors.RepoIndex
	Logger *zap.Logger
	// Now is the clock of leases and ledger entries; nil = time.Now.
	Now func() time.Time
	// DataDir is the daemon's data dir ("" when in memory: use a temp dir).
	DataDir string
	// System is the actor system the tree runs in.
	System *actor.ActorSystem
}

// extraChildren are children declared by other files of this package (jobs,
// checks, ...), started after the built-in ones in registration order.
var extraChildren []func(Deps) Child

// register adds a child to the tree; call it from init.
func register(f func(Deps) Child) { extraChildren = append(extraChildren, f) }

// Tree declares harnessd's root supervisor: its children in start order.
func Tree(d Deps) Spec {
	lg := d.Logger
	mw := actor.WithReceiverMiddleware(actors.Recover(lg))
	checkout := func(r messages.Repository) *actor.Props {
		return actor.PropsFromProducer(actors.NewCheckout(r, d.Store, lg, d.Now), mw)
	}
	registry := actor.PropsFromProducer(actors.NewRegistry(d.Store, d.Index, checkout, lg), mw,
		actor.WithSupervisor(actor.NewOneForOneStrategy(10, 30*time.Second, actor.DefaultDecider)))
	ledger := actor.PropsFromProducer(actors.NewLedger(d.Store, lg, actors.LedgerConfig{Now: d.Now}), mw)
	children := []Child{
		{Name: LedgerName, Props: ledger, Restart: Permanent},
		{Name: RegistryName, Props: registry, Restart: Permanent},
	}
	for _, f := range extraChildren {
		children = append(children, f(d))
	}
	return Spec{
		Children:  children,
		Intensity: 5,
		Period:    30 * time.Second,
	}
}
