package runtime

import (
	"context"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// TargetEntry is one grant and the target actor of its root.
type TargetEntry = actors.TargetEntry

// Targets is the client of the targets actor and of the target actors of
// the granted roots.
type Targets struct {
	r     *Runtime
	pid   *actor.PID
	index *actors.TargetIndex
	seq   *atomic.Uint64
}

func newTargets(r *Runtime, pid *actor.PID) Targets {
	return Targets{r: r, pid: pid, index: &actors.TargetIndex{}, seq: &atomic.Uint64{}}
}

// Register records a grant on a canonical root.
func (c Targets) Register(ctx context.Context, m messages.TargetRegister) (messages.TargetRegistered, error) {
	return Ask[messages.TargetRegistered](ctx, c.r, c.pid, m)
}

// Unregister forgets a grant.
func (c Targets) Unregister(ctx context.Context, targetID string) (messages.TargetUnregistered, error) {
	return Ask[messages.TargetUnregistered](ctx, c.r, c.pid, messages.TargetUnregister{TargetID: targetID})
}

// Promote records the repository a target became.
func (c Targets) Promote(ctx context.Context, targetID, repoID string) (messages.TargetGrant, error) {
	r, err := Ask[messages.TargetRegistered](ctx, c.r, c.pid, messages.TargetPromote{TargetID: targetID, RepoID: repoID})
	return r.Grant, err
}

// List returns every grant.
func (c Targets) List(ctx context.Context) ([]messages.TargetGrant, error) {
	r, err := Ask[messages.TargetGrants](ctx, c.r, c.pid, messages.TargetList{})
	return r.Grants, err
}

// Lookup resolves a target_id through the published index.
func (c Targets) Lookup(targetID string) (TargetEntry, bool) { return c.index.Lookup(targetID) }

// Hold is the mutation slot of one or more roots, held until Release.
type Hold struct {
	release func()
	// Seqs are the grant numbers of the roots' slots, in acquisition order.
	Seqs []uint64
}

// Release gives every root back. Safe to call more than once.
func (h *Hold) Release() {
	if h != nil && h.release != nil {
		h.release()
		h.release = nil
	}
}

// Acquire takes the mutation slot of every root of entries (one per
// distinct root), in canonical path order so that two holders that need
// the same roots can never wait for each other in a cycle. Each root waits
// up to wait; a busy root answers MUTATION_BUSY and the roots already held
// are given back.
func (c Targets) Acquire(ctx context.Context, wait time.Duration, entries ...TargetEntry) (*Hold, error) {
	byRoot := map[string]*actor.PID{}
	for _, e := range entries {
		if e.Actor == nil {
			return nil, errs.New(errs.Unavailable, "target %s has no actor (harnessd is starting or stopping); retry", e.Grant.TargetID)
		}
		byRoot[e.Grant.Root] = e.Actor
	}
	roots := make([]string, 0, len(byRoot))
	for r := range byRoot {
		roots = append(roots, r)
	}
	sort.Strings(roots)
	holder := "hold_" + strconv.FormatUint(c.seq.Add(1), 36) + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var held []*actor.PID
	h := &Hold{}
	h.release = func() {
		for i := len(held) - 1; i >= 0; i-- {
			c.r.system.Root.Send(held[i], messages.TargetRelease{Holder: holder})
		}
	}
	for _, root := range roots {
		pid := byRoot[root]
		a, err := askWithin[messages.TargetAcquired](c.r, pid, messages.TargetAcquire{Holder: holder, Wait: wait}, wait+c.r.cfg.RequestTimeout)
		if err != nil {
			// A reply that came too late may still grant: withdraw it.
			c.r.system.Root.Send(pid, messages.TargetRelease{Holder: holder})
			h.Release()
			return nil, err
		}
		held = append(held, pid)
		h.Seqs = append(h.Seqs, a.Seq)
		if err := ctx.Err(); err != nil {
			h.Release()
			return nil, errs.Wrap(errs.Cancelled, err, "cancelled while taking the target roots; nothing was written").With(actors.DetailNothingWritten, true)
		}
	}
	return h, nil
}
