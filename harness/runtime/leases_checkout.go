package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// DrainLeaseWaits tells every checkout that harnessd is shutting down
// (messages.LeaseDrain): the requests queued for a lease they do not hold
// yet are answered UNAVAILABLE at once, and so is every later request that
// would have to wait; holders finish. Their errors carry nothing_written
// (NothingWritten), and the mutation engine closes their ledger entries as
// never begun, so the same requests run normally after the restart.
//
// It returns how many queued requests were answered, once every checkout
// has answered (or the deadline of ctx, else RequestTimeout, has passed).
// Call it first thing in shutdown, while the ledger still runs.
func (r *Runtime) DrainLeaseWaits(ctx context.Context) (int, error) {
	timeout := r.cfg.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return 0, errs.New(errs.Timeout, "deadline passed before the lease waiters were drained")
	}
	type pending struct {
		pid *actor.PID
		f   *actor.Future
	}
	var all []pending
	for _, e := range r.index.All() {
		all = append(all, pending{pid: e.Checkout, f: r.system.Root.RequestFuture(e.Checkout, messages.LeaseDrain{}, timeout)})
	}
	n := 0
	var errList []error
	for _, p := range all {
		res, err := p.f.Result()
		d, err := replyAs[messages.LeaseDrained](p.pid, messages.LeaseDrain{}, res, err, timeout)
		if err != nil {
			errList = append(errList, err)
			continue
		}
		n += d.Refused
	}
	return n, errors.Join(errList...)
}

// NothingWritten reports whether err answered a lease request before it
// held its lease, so that nothing of the request was written (harnessd
// began shutting down, or the checkout stopped, while it waited).
func NothingWritten(err error) bool {
	e := errs.From(err)
	return e != nil && e.Details[actors.DetailNothingWritten] == true
}

// LeaseHistory asks the checkout of repo for every lease held at some
// moment since since: the live ones and those that ended since then
// (messages.LeaseHistory). A reader uses it to tell who else wrote while
// it ran.
func (r *Runtime) LeaseHistory(ctx context.Context, repo RepoEntry, since time.Time) (messages.LeaseHeld, error) {
	return Ask[messages.LeaseHeld](ctx, r, repo.Checkout, messages.LeaseHistory{Since: since})
}
