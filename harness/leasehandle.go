package harness

import (
	"context"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
)

// maxWait bounds how long a mutation waits for a busy resource.
const maxWait = 30 * time.Second

// heldLease is the owner's side of a granted lease: it renews every TTL/3
// while the operation runs and cancels the operation's context with
// LEASE_LOST when a renewal is refused.
type heldLease struct {
	h        *Harness
	checkout *actor.PID
	info     messages.LeaseInfo
	cancel   context.CancelCauseFunc
	stopc    chan struct{}
	donec    chan struct{}
	once     sync.Once
}

// acquireLease asks the checkout for a lease over keys and returns it with
// a context that is cancelled when the lease is lost.
func (h *Harness) acquireLease(ctx context.Context, checkout *actor.PID, owner, op string, keys []string, wait time.Duration, visibility string, ttl time.Duration) (*heldLease, context.Context, error) {
	if wait < 0 || wait > maxWait {
		return nil, nil, errs.New(errs.InvalidArgument, "wait_ms must be between 0 and %d", maxWait.Milliseconds())
	}
	rctx, cancel := context.WithTimeout(ctx, wait+h.cfg.RequestTimeout)
	defer cancel()
	acq, err := request[messages.Acquired](rctx, h, checkout, messages.Acquire{
		Owner: owner, Operation: op, Keys: keys, Wait: wait, Visibility: visibility, TTL: ttl,
	})
	if err != nil {
		return nil, nil, err
	}
	lctx, lcancel := context.WithCancelCause(ctx)
	l := &heldLease{h: h, checkout: checkout, info: acq.Lease, cancel: lcancel, stopc: make(chan struct{}), donec: make(chan struct{})}
	go l.renewLoop()
	return l, lctx, nil
}

func (l *heldLease) renewLoop() {
	defer close(l.donec)
	every := l.info.TTL / 3
	if every <= 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stopc:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every)
			_, err := request[messages.Renewed](ctx, l.h, l.checkout, messages.Renew{LeaseID: l.info.ID})
			cancel()
			if errs.CodeOf(err) == errs.LeaseLost {
				l.h.lg.Warn("lease lost while the operation ran")
				l.h.auditAppend(audit.Entry{Kind: audit.KindLeaseLost, Operation: l.info.Operation, Outcome: "lost",
					Reason: errs.From(err).Message, Actor: "daemon", Details: map[string]string{"lease_id": l.info.ID, "owner": l.info.Owner}})
				l.cancel(err)
				return
			}
		}
	}
}

// fence checks that the lease still holds the newest tokens: every write
// site calls it immediately before writing.
func (l *heldLease) fence() error {
	ctx, cancel := context.WithTimeout(context.Background(), l.h.cfg.RequestTimeout)
	defer cancel()
	_, err := request[messages.Fenced](ctx, l.h, l.checkout, messages.Fence{LeaseID: l.info.ID})
	return err
}

// release stops renewing and gives the lease back.
func (l *heldLease) release() {
	l.once.Do(func() {
		close(l.stopc)
		<-l.donec
		ctx, cancel := context.WithTimeout(context.Background(), l.h.cfg.RequestTimeout)
		defer cancel()
		if _, err := request[messages.Released](ctx, l.h, l.checkout, messages.Release{LeaseID: l.info.ID}); err != nil {
			l.h.lg.Warn("release lease: it will expire on its own")
		}
		l.cancel(context.Canceled)
	})
}

// maxToken returns the highest fencing token of the lease.
func (l *heldLease) maxToken() uint64 {
	var m uint64
	for _, t := range l.info.Tokens {
		if t > m {
			m = t
		}
	}
	return m
}
