package actors

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/waitfor"
	"github.com/harnessd/harnessd/messages"
)

// Deadlocks is the deadlock detector: one wait-for graph of runs
// (internal/waitfor) over the waits of every checkout, so a cycle may span
// repositories. The checkouts report the waits of their runs' requests
// (messages.DeadlockWaits, a full report per checkout that replaces the
// previous one); when a wait closes a cycle, the detector removes the
// youngest waiter of the cycle from the graph and tells that waiter's
// checkout to fail it with DEADLOCK (messages.DeadlockBreak), which lets the
// other runs of the cycle proceed once the failed run gives up what it holds.
//
// Its state is in memory only: a restarted detector starts empty and asks
// every registered checkout to report its waits again; nothing durable is
// lost.
type Deadlocks struct {
	cfg DeadlocksConfig
	lg  *zap.Logger

	g          *waitfor.Graph
	byCheckout map[string][]string   // checkout id -> the wait ids of its last report
	checkouts  map[string]*actor.PID // checkout id -> its actor (the sender of its reports)
	victims    map[string]bool       // waits told to fail, until their checkout reports without them
	broken     uint64
}

// DeadlocksConfig configures the detector.
type DeadlocksConfig struct {
	// Index names the checkouts a restarted detector asks for their waits;
	// nil = none.
	Index  *RepoIndex
	Logger *zap.Logger
}

// NewDeadlocks returns the producer of the deadlock detector.
func NewDeadlocks(cfg DeadlocksConfig) actor.Producer {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return func() actor.Actor { return &Deadlocks{cfg: cfg, lg: cfg.Logger.With(zap.String("actor", "deadlocks"))} }
}

// Receive dispatches the detector's messages.
func (a *Deadlocks) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.g = waitfor.New()
		a.byCheckout = map[string][]string{}
		a.checkouts = map[string]*actor.PID{}
		a.victims = map[string]bool{}
		// Rebuild from the live waits (nothing at boot: the registry
		// starts after the detector).
		if a.cfg.Index != nil {
			for _, e := range a.cfg.Index.All() {
				if e.Checkout != nil {
					ctx.Send(e.Checkout, messages.DeadlockResync{})
				}
			}
		}
	case messages.DeadlockWaits:
		a.report(ctx, m)
	case messages.DeadlockStats:
		ctx.Respond(messages.DeadlockStatsReply{Waits: a.g.Len(), Broken: a.broken})
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	}
}

// report replaces what a checkout reported before and breaks every cycle the
// new edges close.
func (a *Deadlocks) report(ctx actor.Context, m messages.DeadlockWaits) {
	if s := ctx.Sender(); s != nil {
		a.checkouts[m.CheckoutID] = s
	}
	ids := make([]string, 0, len(m.Waits))
	for _, w := range m.Waits {
		ids = append(ids, w.ID)
	}
	for _, id := range a.byCheckout[m.CheckoutID] {
		if !slices.Contains(ids, id) {
			a.g.Unwait(id)
			delete(a.victims, id)
		}
	}
	if len(ids) == 0 {
		delete(a.byCheckout, m.CheckoutID)
		return
	}
	a.byCheckout[m.CheckoutID] = ids
	for _, w := range m.Waits {
		if a.victims[w.ID] {
			continue // told to fail; its checkout has not handled that yet
		}
		holders := make([]waitfor.Holder, len(w.Holders))
		for i, h := range w.Holders {
			holders[i] = waitfor.Holder{Run: h.RunID, Keys: h.Keys}
		}
		waiter := waitfor.Waiter{ID: w.ID, Run: w.RunID, Owner: w.Owner, Checkout: w.CheckoutID, Operation: w.Operation, Keys: w.Keys, Since: w.Since}
		for _, b := range a.g.WaitBreaking(waiter, holders) {
			a.breakCycle(ctx, b)
		}
	}
}

// breakCycle tells the victim's checkout to fail it.
func (a *Deadlocks) breakCycle(ctx actor.Context, b waitfor.Broken) {
	a.broken++
	a.victims[b.Victim.ID] = true
	// The cycle as the victim sees it: its own wait first.
	cycle := b.Cycle
	if i := slices.IndexFunc(cycle, func(e waitfor.Edge) bool { return e.Waiter.ID == b.Victim.ID }); i > 0 {
		cycle = slices.Concat(cycle[i:], cycle[:i])
	}
	edges := make([]messages.DeadlockEdge, len(cycle))
	for i, e := range cycle {
		edges[i] = messages.DeadlockEdge{RunID: e.Waiter.Run, Owner: e.Waiter.Owner, Operation: e.Waiter.Operation, CheckoutID: e.Waiter.Checkout,
			WaitsFor: e.Waiter.Keys, Since: e.Waiter.Since, HolderRunID: e.Holder.Run, HolderKeys: e.Holder.Keys}
	}
	a.lg.Warn("deadlock across runs: failing the youngest waiter",
		zap.String("cycle", waitfor.Describe(cycle)), zap.String("run_id", b.Victim.Run), zap.String("owner", b.Victim.Owner))
	pid := a.checkouts[b.Victim.Checkout]
	if pid == nil {
		a.lg.Error("deadlock: the checkout of the youngest waiter is unknown", zap.String("checkout_id", b.Victim.Checkout))
		return
	}
	ctx.Send(pid, messages.DeadlockBreak{WaitID: b.Victim.ID, Cycle: edges})
}

// DeadlockError is the DEADLOCK answer of the first waiter of cycle (the
// youngest): the message names the runs and keys of the cycle, and details
// carry "cycle", one entry per run: run_id, holds (the keys the previous run
// of the cycle waits for), waits_for (the keys it asked for), waits_on (the
// run holding them), operation, owner and checkout_id of its waiting request.
func DeadlockError(cycle []messages.DeadlockEdge) *errs.Error {
	entries := make([]map[string]any, len(cycle))
	var b strings.Builder
	for i, e := range cycle {
		holds := slices.Clone(cycle[(i+len(cycle)-1)%len(cycle)].HolderKeys)
		entries[i] = map[string]any{
			"run_id": e.RunID, "holds": holds, "waits_for": slices.Clone(e.WaitsFor), "waits_on": e.HolderRunID,
			"operation": e.Operation, "owner": e.Owner, "checkout_id": e.CheckoutID,
			"waiting_since": e.Since.UTC().Format(time.RFC3339Nano),
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("run " + e.RunID)
		if e.Operation != "" {
			b.WriteString(" (" + e.Operation + ")")
		}
		b.WriteString(" waits for " + strings.Join(e.WaitsFor, ", ") + " held by run " + e.HolderRunID + " (" + strings.Join(e.HolderKeys, ", ") + ")")
	}
	victim, op := "", "request"
	if len(cycle) > 0 {
		victim = cycle[0].RunID
		if cycle[0].Operation != "" {
			op = cycle[0].Operation
		}
	}
	return errs.New(errs.Deadlock, "deadlock across %d runs: %s. This %s of run %s waited last and is failed so the others can proceed: let run %s give up what it holds (finish or cancel its job) before retrying",
		len(cycle), b.String(), op, victim, victim).With("cycle", entries)
}

// waitID is the detector's id of a checkout's waiter.
func (a *Checkout) waitID(seq uint64) string {
	return a.repo.CheckoutID + "/" + strconv.FormatUint(seq, 10)
}

// reportWaits sends the detector the checkout's waits that belong to a run
// and are blocked by another run, when there are any or when it holds
// earlier ones: a checkout without waiters of runs sends nothing.
func (a *Checkout) reportWaits(ctx actor.Context) {
	if a.deadlocks == nil || (a.waiters.size() == 0 && !a.reported) {
		return
	}
	ws := a.waitReport()
	if len(ws) == 0 && !a.reported {
		return
	}
	a.reported = len(ws) > 0
	ctx.Request(a.deadlocks, messages.DeadlockWaits{CheckoutID: a.repo.CheckoutID, Waits: ws})
}

// waitReport lists the waiters of runs with the runs that block them. A
// waiter is blocked by the held leases that overlap its keys and, since it
// may not overtake them, by whatever blocks the waiters queued ahead of it
// that overlap it. Leases without a run, and those of the waiter's own run,
// are no holders.
func (a *Checkout) waitReport() []messages.DeadlockWait {
	queue := a.waiters.items()
	if !slices.ContainsFunc(queue, func(w *waiter[leaseWait]) bool { return w.req.run != "" }) {
		return nil
	}
	var held []lease.Lease
	for _, l := range a.table.Leases() {
		if a.runs[l.ID] != "" {
			held = append(held, l)
		}
	}
	blockers := make([]map[string][]string, len(queue)) // per waiter: run -> held keys
	var out []messages.DeadlockWait
	for i, lw := range queue {
		w := lw.req
		b := map[string][]string{}
		for _, l := range held {
			for _, hk := range l.Keys {
				if slices.ContainsFunc(w.want.Keys, func(k lease.Key) bool { return lease.Overlaps(hk, k) }) {
					b[a.runs[l.ID]] = append(b[a.runs[l.ID]], string(hk))
				}
			}
		}
		for j := range i {
			if overlapAny(w.want.Keys, queue[j].req.want.Keys) {
				for run, keys := range blockers[j] {
					b[run] = append(b[run], keys...)
				}
			}
		}
		blockers[i] = b
		if w.run == "" {
			continue
		}
		var hs []messages.DeadlockHolder
		for _, run := range slices.Sorted(maps.Keys(b)) {
			if run == w.run {
				continue
			}
			keys := slices.Clone(b[run])
			slices.Sort(keys)
			hs = append(hs, messages.DeadlockHolder{RunID: run, Keys: slices.Compact(keys)})
		}
		if len(hs) == 0 {
			continue
		}
		keys := make([]string, len(w.want.Keys))
		for k, key := range w.want.Keys {
			keys[k] = string(key)
		}
		out = append(out, messages.DeadlockWait{ID: a.waitID(lw.id), RunID: w.run, Owner: w.want.Owner, Operation: w.want.Operation,
			CheckoutID: a.repo.CheckoutID, Keys: keys, Since: w.since, Holders: hs})
	}
	return out
}

// breakWait fails the waiter the detector chose with DEADLOCK.
func (a *Checkout) breakWait(ctx actor.Context, m messages.DeadlockBreak) {
	for _, w := range a.waiters.items() {
		if a.waitID(w.id) != m.WaitID {
			continue
		}
		a.waiters.answer(ctx, w, Failure(DeadlockError(m.Cycle)))
		// Waiters queued behind it may go now; the report withdraws it.
		a.serveWaiters(ctx)
		return
	}
}
