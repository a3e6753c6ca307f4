package actors

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/harness/ledger"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Ledger is the request ledger: it turns a retried mutation into a replay
// of the stored result instead of a second write. Begin is
// create-if-absent and completion compare-and-set, both decided in mailbox
// order and written with sync. At start, entries left executing by a crash
// become unknown: they answer REQUEST_OUTCOME_UNKNOWN, never a silent re-run.
type Ledger struct {
	store     *persistence.Store
	lg        *zap.Logger
	now       func() time.Time
	retention time.Duration
	pruner    *ticker
}

// LedgerConfig configures NewLedger. Zero fields mean the defaults.
type LedgerConfig struct {
	Retention  time.Duration // 0 = 24h
	PruneEvery time.Duration // 0 = 10 min; < 0 = never (tests send LedgerPrune)
	Now        func() time.Time
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
		return &ledgerActor{Ledger: Ledger{store: store, lg: lg, now: cfg.Now, retention: cfg.Retention}, pruneEvery: cfg.PruneEvery}
	}
}

type ledgerActor struct {
	Ledger
	pruneEvery time.Duration
}

// Receive dispatches the ledger's messages.
func (a *ledgerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "ledger"))
		a.recover()
		a.startPruning(ctx)
	case messages.LedgerBegin:
		r, err := a.begin(m)
		reply(ctx, r, err)
	case messages.LedgerComplete:
		r, err := a.complete(m)
		reply(ctx, r, err)
	case messages.LedgerFail:
		r, err := a.fail(m)
		reply(ctx, r, err)
	case messages.LedgerGet:
		e, err := a.get(m.RequestID)
		if errors.Is(err, persistence.ErrNotFound) {
			ctx.Respond(messages.LedgerGot{})
			return
		}
		reply(ctx, messages.LedgerGot{Entry: toMsg(e), Found: err == nil}, err)
	case messages.LedgerPrune:
		n, err := a.prune(m.Now)
		reply(ctx, messages.LedgerPruned{Removed: n}, err)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		a.pruner.stop()
		a.pruner = nil
	}
}

// startPruning starts the goroutine that asks for a prune periodically.
func (a *ledgerActor) startPruning(ctx actor.Context) {
	if a.pruneEvery < 0 {
		return
	}
	now := a.now
	a.pruner = startTicker(ctx, a.pruneEvery, func() any { return messages.LedgerPrune{Now: now()} })
}

// recover marks every entry a crash left executing as unknown.
func (a *Ledger) recover() {
	var stale []ledger.Entry
	err := a.store.Scan([]byte(persistence.PrefixLedger), func(_ []byte, decode func(any) error) error {
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
		panic("ledger: recover: " + err.Error())
	}
	now := a.now()
	for _, e := range stale {
		u, _ := ledger.MarkUnknown(e, now)
		if err := a.store.PutSync(persistence.LedgerKey(u.RequestID), u); err != nil {
			panic("ledger: mark unknown: " + err.Error())
		}
	}
	if len(stale) > 0 {
		a.lg.Warn("requests were executing when harnessd stopped; their outcome is unknown", zap.Int("count", len(stale)))
	}
}

func (a *Ledger) get(id string) (ledger.Entry, error) {
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
		if err := a.store.PutSync(persistence.LedgerKey(next.RequestID), next); err != nil {
			return messages.LedgerBegun{}, errs.Wrap(errs.Internal, err, "write ledger: %v", err)
		}
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
	if err := a.store.PutSync(persistence.LedgerKey(next.RequestID), next); err != nil {
		return messages.LedgerDone{}, errs.Wrap(errs.Internal, err, "write ledger: %v", err)
	}
	return messages.LedgerDone{Entry: toMsg(next)}, nil
}

func (a *Ledger) fail(m messages.LedgerFail) (messages.LedgerDone, error) {
	e, err := a.get(m.RequestID)
	if err != nil {
		return messages.LedgerDone{}, errs.Wrap(errs.Internal, err, "ledger: fail %q: %v", m.RequestID, err)
	}
	next, err := ledger.Fail(e, m.Err, a.now())
	if err != nil {
		return messages.LedgerDone{}, err
	}
	if err := a.store.PutSync(persistence.LedgerKey(next.RequestID), next); err != nil {
		return messages.LedgerDone{}, errs.Wrap(errs.Internal, err, "write ledger: %v", err)
	}
	return messages.LedgerDone{Entry: toMsg(next)}, nil
}

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
	err = a.store.Update(false, func(tx *persistence.Txn) error {
		for _, k := range old {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	return len(old), err
}

func toMsg(e ledger.Entry) messages.LedgerEntry {
	return messages.LedgerEntry{RequestID: e.RequestID, Operation: e.Operation, InputHash: e.InputHash, State: string(e.State),
		Result: e.Result, Error: e.Error, Paths: e.Paths, Created: e.Created, Updated: e.Updated}
}
