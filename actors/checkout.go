package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Checkout owns the mutation side of one checkout: it is the lease arbiter
// for the checkout's resource keys (see lease.go in this package).
type Checkout struct {
	repo  messages.Repository
	store *persistence.Store
	lg    *zap.Logger
}

// NewCheckout returns the producer of a checkout actor.
func NewCheckout(repo messages.Repository, store *persistence.Store, lg *zap.Logger) actor.Producer {
	return func() actor.Actor {
		return &Checkout{repo: repo, store: store, lg: lg}
	}
}

// Receive dispatches the checkout's messages.
func (a *Checkout) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "checkout"), zap.String("checkout_id", a.repo.CheckoutID))
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	}
}
