package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Ledger is the request ledger: it turns a retried mutation into a replay
// of the stored result instead of a second write. Begin is
// create-if-absent and completion compare-and-set, both decided in mailbox
// order and written with sync (a Deferred completion is decided here and
// written by the caller in its own synced transaction: a mutation's rides
// the audit's group commit with its entry and receipt). A request that gave up before writing
// anything (shutdown began while it waited for its lease) is abandoned:
// its entry is deleted, so it runs normally after the restart. At start, entries left executing by a crash
// become unknown (RecoverLedger, run once at boot before the actor starts):
// they answer REQUEST_OUTCOME_UNKNOWN, never a silent re-run.
//
// The store is the truth: a restarted instance starts with nothing staged
// and reads through to the store. The old instance hands over on
// Restarting by flushing what it staged and answering what it held.
type Ledger struct {
	store     *persistence.Store
	lg        *zap.Logger
	now       func() time.Time
	retention time.Duration
	pruner    *ticker
	tasks     *Tasks

	// Group commit: transitions decided while a flush is pending are
	// staged here (and read through by later decisions) and written in
	// one synced transaction; their answers are held until then. A staged
	// entry without a state is a deletion (an abandoned request).
	staged map[string]ledger.Entry
	held   []heldReply
	kicked bool
}

// LedgerConfig configures NewLedger. Zero fields mean the defaults.
type LedgerConfig struct {
	Retention  time.Duration // 0 = 24h
	PruneEvery time.Duration // 0 = 10 min; < 0 = never (tests send LedgerPrune)
	Now        func() time.Time
	Tasks      *Tasks // runs the pruning walks; nil = untracked goroutines
}

// NewLedger returns the ledger's producer.
func NewLedger(store *persistence.Store, lg *zap.Logger, cfg LedgerConfig) actor.Producer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Retention <= 0 {
		cfg.Retention = ledger.DefaultRetention
	}
	if cfg.PruneEvery == 0 {
		cfg.PruneEvery = 10 * time.Minute
	}
	return func() actor.Actor {
		return &ledgerActor{Ledger: Ledger{store: store, lg: lg, now: cfg.Now, retention: cfg.Retention, tasks: cfg.Tasks}, pruneEvery: cfg.PruneEvery}
	}
}

type ledgerActor struct {
	Ledger
	pruneEvery time.Duration
}

// ledgerFlush makes the ledger write its staged entries (group commit).
type ledgerFlush struct{}

// heldReply is an answer held until the entries it depends on are durable.
type heldReply struct {
	to  *actor.PID
	msg any
}

// Receive dispatches the ledger's messages.
func (a *ledgerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "ledger"))
		a.staged, a.held, a.kicked = nil, nil, false
		a.startPruning(ctx)
	case messages.LedgerBegin:
		r, err := a.begin(m)
		a.answer(ctx, r, err)
	case messages.LedgerComplete:
		if m.Deferred {
			r, err := a.completion(m)
			a.answer(ctx, r, err)
			return
		}
		r, err := a.complete(m)
		a.answer(ctx, r, err)
	case messages.LedgerFail:
		r, err := a.fail(m)
		a.answer(ctx, r, err)
	case messages.LedgerAbandon:
		r, err := a.abandon(m)
		a.answer(ctx, r, err)
	case ledgerFlush:
		a.flush(ctx)
	case messages.LedgerGet:
		e, err := a.get(m.RequestID)
		if errors.Is(err, persistence.ErrNotFound) {
			ctx.Respond(messages.LedgerGot{})
			return
		}
		reply(ctx, messages.LedgerGot{Entry: toMsg(e), Found: err == nil}, err)
	case messages.LedgerPrune:
		a.startPrune(ctx, m.Now)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping, *actor.Restarting:
		// Restarting: the old instance hands over what it staged and held;
		// the fresh one reads through to the store.
		a.flush(ctx)
		a.pruner.stop()
		a.pruner = nil
	}
}

// answer replies at once when nothing is staged, else holds the reply
// until the staged entries are durable (so no answer ever rests on state
// a crash could lose), and makes sure a flush is coming.
func (a *ledgerActor) answer(ctx actor.Context, v any, err error) {
	if ctx.Sender() == nil {
		return
	}
	msg := v
	if err != nil {
		msg = Failure(err)
	}
	if len(a.staged) == 0 {
		ctx.Respond(msg)
		return
	}
	a.held = append(a.held, heldReply{to: ctx.Sender(), msg: msg})
	if !a.kicked {
		a.kicked = true
		ctx.Send(ctx.Self(), ledgerFlush{})
	}
}

// flush writes every staged entry in one synced transaction, then sends
// the held answers; if the write fails, every held answer becomes the
// error and the staged entries are dropped (the store keeps the old state).
func (a *ledgerActor) flush(ctx actor.Context) {
	a.kicked = false
	if len(a.staged) == 0 && len(a.held) == 0 {
		return
	}
	err := a.store.Update(true, func(tx *persistence.Txn) error {
		for id, e := range a.staged {
			var err error
			if e.State == "" {
				err = tx.Delete(persistence.LedgerKey(id))
			} else {
				err = tx.Put(persistence.LedgerKey(id), e)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	for _, h := range a.held {
		msg := h.msg
		if err != nil {
			msg = Failure(errs.Wrap(errs.Internal, err, "write ledger: %v", err))
		}
		ctx.Send(h.to, msg)
	}
	if err != nil {
		a.lg.Error("ledger write failed", zap.Int("entries", len(a.staged)), zap.Error(err))
	}
	a.staged, a.held = nil, nil
}

// startPruning starts the goroutine that asks for a prune periodically.
func (a *ledgerActor) startPruning(ctx actor.Context) {
	if a.pruneEvery < 0 {
		return
	}
	now := a.now
	a.pruner = startTicker(ctx, a.pruneEvery, func() any { return messages.LedgerPrune{Now: now()} })
}

// RecoverLedger marks every entry a crash left executing as unknown. It
// runs once at boot, before the ledger actor starts: an actor restarted
// after a panic must not do it, since the requests of this process are
// still running.
func RecoverLedger(store *persistence.Store, lg *zap.Logger, now time.Time) error {
	var stale []ledger.Entry
	err := store.Scan([]byte(persistence.PrefixLedger), func(_ []byte, decode func(any) error) error {
		var e ledger.Entry
		if err := decode(&e); err != nil {
			return err
		}
		if e.State == ledger.StateExecuting {
			stale = append(stale, e)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledger: recover: %w", err)
	}
	if len(stale) == 0 {
		return nil
	}
	err = store.Update(true, func(tx *persistence.Txn) error {
		for _, e := range stale {
			u, _ := ledger.MarkUnknown(e, now)
			if err := tx.Put(persistence.LedgerKey(u.RequestID), u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledger: mark unknown: %w", err)
	}
	if lg != nil {
		lg.Warn("requests were executing when harnessd stopped; their outcome is unknown", zap.Int("count", len(stale)))
	}
	return nil
}

func (a *Ledger) get(id string) (ledger.Entry, error) {
	if e, ok := a.staged[id]; ok {
		if e.State == "" {
			return ledger.Entry{}, persistence.ErrNotFound // deleted, not yet flushed
		}
		return e, nil
	}
	var e ledger.Entry
	err := a.store.Get(persistence.LedgerKey(id), &e)
	return e, err
}

func (a *Ledger) begin(m messages.LedgerBegin) (messages.LedgerBegun, error) {
	var existing *ledger.Entry
	e, err := a.get(m.RequestID)
	switch {
	case err == nil:
		existing = &e
	case !errors.Is(err, persistence.ErrNotFound):
		return messages.LedgerBegun{}, errs.Wrap(errs.Internal, err, "read ledger: %v", err)
	}
	next, d, err := ledger.Begin(existing, m.RequestID, m.Operation, m.InputHash, m.Paths, a.now())
	if err != nil {
		return messages.LedgerBegun{Entry: toMsg(next)}, err
	}
	switch d {
	case ledger.Replay:
		return messages.LedgerBegun{Entry: toMsg(next), Replay: true}, nil
	case ledger.Proceed:
		a.stage(next)
		return messages.LedgerBegun{Entry: toMsg(next)}, nil
	}
	return messages.LedgerBegun{}, errs.New(errs.Internal, "ledger: unexpected decision %s", d)
}

func (a *Ledger) complete(m messages.LedgerComplete) (messages.LedgerDone, error) {
	e, err := a.get(m.RequestID)
	if err != nil {
		return messages.LedgerDone{}, errs.Wrap(errs.Internal, err, "ledger: complete %q: %v", m.RequestID, err)
	}
	next, err := ledger.Complete(e, m.Result, a.now())
	if err != nil {
		return messages.LedgerDone{}, err
	}
	a.stage(next)
	return messages.LedgerDone{Entry: toMsg(next)}, nil
}

// completion decides a completion as complete does (compare-and-set from
// executing) without staging it: the answer carries the entry encoded, for
// the caller to write in its own synced transaction (Call.Write: the
// audit's group commit, with the mutation's entry and receipt). Until that
// commit the store still says executing, the truth: a retry meanwhile is
// in progress, and a crash before it leaves the outcome unknown. Nothing
// else moves an executing entry of a request whose write is running (its
// retries answer in progress; only its own write fails or abandons it).
func (a *Ledger) completion(m messages.LedgerComplete) (messages.LedgerDone, error) {
	e, err := a.get(m.RequestID)
	if err != nil {
		return messages.LedgerDone{}, errs.Wrap(errs.Internal, err, "ledger: complete %q: %v", m.RequestID, err)
	}
	next, err := ledger.Complete(e, m.Result, a.now())
	if err != nil {
		return messages.LedgerDone{}, err
	}
	b, err := persistence.Encode(next)
	if err != nil {
		return messages.LedgerDone{}, errs.Wrap(errs.Internal, err, "ledger: encode %q: %v", m.RequestID, err)
	}
	return messages.LedgerDone{Entry: toMsg(next), Record: messages.StoreRecord{Key: persistence.LedgerKey(m.RequestID), Value: b}}, nil
}

func (a *Ledger) fail(m messages.LedgerFail) (messages.LedgerDone, error) {
	e, err := a.get(m.RequestID)
	if err != nil {
		return messages.LedgerDone{}, errs.Wrap(errs.Internal, err, "ledger: fail %q: %v", m.RequestID, err)
	}
	next, err := ledger.Fail(e, ErrorOf(messages.Failed{Code: m.Code, Message: m.Message}), a.now())
	if err != nil {
		return messages.LedgerDone{}, err
	}
	a.stage(next)
	return messages.LedgerDone{Entry: toMsg(next)}, nil
}

// abandon deletes an executing entry whose request gave up before it wrote
// anything (compare-and-delete: ledger.Abandon).
func (a *Ledger) abandon(m messages.LedgerAbandon) (messages.LedgerDone, error) {
	e, err := a.get(m.RequestID)
	if err != nil {
		return messages.LedgerDone{}, errs.Wrap(errs.Internal, err, "ledger: abandon %q: %v", m.RequestID, err)
	}
	if err := ledger.Abandon(e, m.InputHash); err != nil {
		return messages.LedgerDone{}, err
	}
	a.stage(ledger.Entry{RequestID: m.RequestID}) // no state: a deletion
	return messages.LedgerDone{Entry: toMsg(e)}, nil
}

// stage records a transition for the next group commit.
func (a *Ledger) stage(e ledger.Entry) {
	if a.staged == nil {
		a.staged = map[string]ledger.Entry{}
	}
	a.staged[e.RequestID] = e
}

// startPrune walks the ledger in a goroutine (not on the mailbox every
// mutation crosses) and answers the requester, if any, from there.
func (a *ledgerActor) startPrune(ctx actor.Context, now time.Time) {
	sender, root := ctx.Sender(), ctx.ActorSystem().Root
	a.tasks.Go(func() {
		n, err := a.Ledger.prune(now)
		if err != nil {
			a.lg.Warn("prune ledger", zap.Error(err))
		}
		if sender == nil {
			return
		}
		if err != nil {
			root.Send(sender, Failure(errs.Wrap(errs.Internal, err, "prune ledger: %v", err)))
			return
		}
		root.Send(sender, messages.LedgerPruned{Removed: n})
	})
}

// prune deletes the entries past retention. It runs outside the actor: each
// key is deleted in a transaction that reads it again (and Update reruns it
// on a conflict), so an entry the actor rewrote meanwhile, such as a retry
// of a failed request, is kept.
func (a *Ledger) prune(now time.Time) (int, error) {
	var old [][]byte
	err := a.store.Scan([]byte(persistence.PrefixLedger), func(key []byte, decode func(any) error) error {
		var e ledger.Entry
		if err := decode(&e); err != nil {
			return nil // an undecodable entry is left for `harness store dump`
		}
		if ledger.Expired(e, now, a.retention) {
			old = append(old, key)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(old) == 0 {
		return 0, nil
	}
	removed := 0
	for _, k := range old {
		err := a.store.Update(false, func(tx *persistence.Txn) error {
			var e ledger.Entry
			if err := tx.Get(k, &e); err != nil || !ledger.Expired(e, now, a.retention) {
				return err
			}
			return tx.Delete(k)
		})
		switch {
		case err == nil:
			removed++
		case errors.Is(err, persistence.ErrNotFound):
		default:
			return removed, err
		}
	}
	return removed, nil
}

func toMsg(e ledger.Entry) messages.LedgerEntry {
	return messages.LedgerEntry{RequestID: e.RequestID, Operation: e.Operation, InputHash: e.InputHash, State: string(e.State),
		Result: e.Result, Error: e.Error, Paths: e.Paths, Created: e.Created, Updated: e.Updated}
}
