package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ticker is the small goroutine an actor owns for periodic work: it only
// sends msg() into the actor's mailbox every interval, so the work itself
// runs in Receive. The actor stops it in Stopping (stop is idempotent and
// waits for the goroutine to end). A nil *ticker is a stopped one.
type ticker struct {
	stopc chan struct{}
	donec chan struct{}
	once  sync.Once
}

// startTicker starts a ticker sending msg() to the actor of ctx.
func startTicker(ctx actor.Context, every time.Duration, msg func() any) *ticker {
	t := &ticker{stopc: make(chan struct{}), donec: make(chan struct{})}
	root, self := ctx.ActorSystem().Root, ctx.Self()
	go func() {
		defer close(t.donec)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-t.stopc:
				return
			case <-tk.C:
				root.Send(self, msg())
			}
		}
	}()
	return t
}

// stop ends the ticker and waits for its goroutine.
func (t *ticker) stop() {
	if t == nil {
		return
	}
	t.once.Do(func() { close(t.stopc) })
	<-t.donec
}
