package actors

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// runActor owns one run: its state, the ring of its recent spans, its
// budget, and its record in the store. Its mailbox orders everything the
// run's calls report, so counters and budget draws need no lock.
//
// What it stores: the state snapshot and the spans that are not read-only
// Fast Path work (runs.Persisted). An implicit run stores nothing until it
// has something to store, so a session that only reads writes nothing.
type runActor struct {
	cfg      RunsConfig
	lg       *zap.Logger
	st       messages.RunState
	ring     runs.Ring
	flags    *atomic.Uint32
	restored bool
	stored   bool   // the snapshot exists in the store
	dirty    bool   // the snapshot is older than st
	seq      uint64 // the last stored span's sequence number
	events   uint64
}

func (a *runActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.started()
	case *actor.Stopping:
		// Counters of reads since the last stored change are saved on a
		// clean stop (a crash loses only those).
		if a.stored && a.dirty {
			a.save(false)
		}
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case messages.RunSpan:
		a.span(ctx, m)
	case messages.RunCharge:
		a.charge(ctx, m)
	case messages.RunRefund:
		d := runs.Draw{Commands: m.Commands, Mutations: m.Mutations, Jobs: m.Jobs, Approvals: m.Approvals}
		if m.Child != "" {
			runs.Apply(&a.st.Drawn, d, -1)
		} else {
			runs.Apply(&a.st.Counters, d, -1)
		}
		a.dirty = true
	case messages.RunObserve:
		a.observe(ctx, m)
	case messages.RunStage:
		a.stage(ctx, m)
	case messages.RunEnd:
		a.end(ctx, m.Status, m.Reason, m.Now)
		ctx.Respond(messages.RunGot{State: a.snapshot()})
	case messages.RunGet:
		a.get(ctx, m)
	case messages.RunBind:
		a.bind(ctx, m)
	case runDetach:
		if a.st.Status != messages.RunActive {
			return
		}
		a.st.DetachedAt = m.at
		a.st.Caller.Session = ""
		a.changed(ctx, a.stored)
	case messages.RunSweep:
		if status, reason, due := runs.Due(a.st, m.Now, a.cfg.ResumeWindow); due {
			a.end(ctx, status, reason, m.Now)
		}
	}
}

func (a *runActor) started() {
	// A restarted actor (after a panic) starts from its stored snapshot,
	// not from the state it was first spawned with.
	var st messages.RunState
	if err := a.cfg.Store.Get(persistence.RunKey(a.st.RunID), &st); err == nil {
		if st.UpdatedAt.After(a.st.UpdatedAt) {
			a.st = st
		}
		a.restored = true
	}
	if a.restored {
		a.stored = true
		n, err := a.cfg.Store.Count(persistence.RunSpanPrefix(a.st.RunID))
		if err != nil {
			a.lg.Warn("count stored spans", zap.Error(err))
		}
		a.seq = uint64(n)
		return
	}
	if !a.st.Implicit {
		a.save(true)
	}
}

// save writes the snapshot (fsynced when sync: run_start, stages, the end).
func (a *runActor) save(sync bool) {
	var err error
	if sync {
		err = a.cfg.Store.PutSync(persistence.RunKey(a.st.RunID), a.st)
	} else {
		err = a.cfg.Store.Put(persistence.RunKey(a.st.RunID), a.st)
	}
	if err != nil {
		a.lg.Warn("store the run", zap.Error(err))
		return
	}
	a.stored, a.dirty = true, false
}

// changed publishes the new state and stores it when persist is set.
func (a *runActor) changed(ctx actor.Context, persist bool) {
	a.dirty = true
	if persist {
		a.save(true)
	}
	st := a.snapshot()
	a.emit(ctx, messages.RunEvent{Type: "state", State: &st})
}

func (a *runActor) emit(ctx actor.Context, ev messages.RunEvent) {
	a.events++
	ev.RunID, ev.Seq = a.st.RunID, a.events
	ctx.ActorSystem().EventStream.Publish(ev)
	if a.cfg.OnEvent != nil {
		a.cfg.OnEvent(ev)
	}
}

func (a *runActor) snapshot() messages.RunState {
	st := a.st
	st.CompletedStages = append([]string{}, a.st.CompletedStages...)
	st.Observations = append([]messages.RunObservation{}, a.st.Observations...)
	st.Jobs = append([]string(nil), a.st.Jobs...)
	return st
}

func (a *runActor) span(ctx actor.Context, s messages.RunSpan) {
	s.RunID = a.st.RunID
	if s.InputHash == "" && len(s.Input) > 0 {
		if h, err := ledger.InputHash(s.Op, s.Input); err == nil {
			s.InputHash = h
		}
	}
	s.Input = nil
	s.Persist = runs.Persisted(s)
	runs.Count(&a.st.Counters, s)
	if s.JobID != "" {
		a.st.Jobs = append(a.st.Jobs, s.JobID)
	}
	a.st.UpdatedAt = s.Start.Add(time.Duration(s.DurationMs * float64(time.Millisecond)))
	a.ring.Push(s)
	a.dirty = true
	if runs.OutputSpent(a.st) {
		a.flags.Or(runFlagOutputSpent)
	}
	notes := runs.Notes(s)
	for _, n := range notes {
		runs.Observe(&a.st, n)
	}
	if s.Persist {
		a.storeSpan(s)
	}
	a.emit(ctx, messages.RunEvent{Type: "span", Span: &s})
	for i := range notes {
		a.emit(ctx, messages.RunEvent{Type: "observation", Observation: &notes[i]})
	}
	if s.Persist {
		a.save(false)
	}
}

// storeSpan writes a span that is not read-only Fast Path work, with the
// snapshot. It is not fsynced: the write reaches the kernel before the
// actor moves on, so it outlives a crash of the daemon (kill -9); only a
// power loss can take it, and the mutation's own receipt is fsynced.
func (a *runActor) storeSpan(s messages.RunSpan) {
	a.seq++
	err := a.cfg.Store.Update(false, func(tx *persistence.Txn) error {
		if err := tx.Put(persistence.RunSpanKey(a.st.RunID, a.seq), s); err != nil {
			return err
		}
		return tx.Put(persistence.RunKey(a.st.RunID), a.st)
	})
	if err != nil {
		a.lg.Warn("store a span", zap.String("operation", s.Op), zap.Error(err))
		return
	}
	a.stored, a.dirty = true, false
}

func (a *runActor) charge(ctx actor.Context, m messages.RunCharge) {
	if a.st.Status != messages.RunActive {
		reply(ctx, nil, a.endedErr())
		return
	}
	d := runs.Draw{Commands: m.Commands, Mutations: m.Mutations, Jobs: m.Jobs, Approvals: m.Approvals}
	if ex := runs.Check(a.st, d); ex != nil {
		reply(ctx, nil, errs.New(errs.BudgetExceeded, "%s; start a child run with its own budget, or ask a person to raise it", ex.Error()).
			With("run_id", ex.RunID).With("resource", ex.Resource).With("limit", ex.Limit).With("used", ex.Used).With("want", ex.Want))
		return
	}
	if m.Child != "" {
		runs.Apply(&a.st.Drawn, d, 1)
	} else {
		runs.Apply(&a.st.Counters, d, 1)
	}
	a.dirty = true
	ctx.Respond(messages.RunCharged{})
}

func (a *runActor) endedErr() error {
	return errs.New(errs.RunEnded, "run %s is %s (%s); start a new run (run_start) or leave run_id out", a.st.RunID, a.st.Status, a.st.EndReason).
		With("run_id", a.st.RunID).With("status", a.st.Status)
}

func (a *runActor) observe(ctx actor.Context, m messages.RunObserve) {
	if a.st.Status != messages.RunActive {
		reply(ctx, nil, a.endedErr())
		return
	}
	o := m.Observation
	if o.At.IsZero() {
		o.At = a.cfg.Now()
	}
	runs.Observe(&a.st, o)
	a.st.UpdatedAt = o.At
	a.emit(ctx, messages.RunEvent{Type: "observation", Observation: &o})
	a.changed(ctx, true)
	ctx.Respond(messages.RunObserved{State: a.snapshot()})
}

func (a *runActor) stage(ctx actor.Context, m messages.RunStage) {
	if a.st.Status != messages.RunActive {
		reply(ctx, nil, a.endedErr())
		return
	}
	now := m.Now
	if now.IsZero() {
		now = a.cfg.Now()
	}
	if err := runs.Stage(&a.st, m.Stage, m.Status, m.Reason, now); err != nil {
		reply(ctx, nil, errs.New(errs.InvalidArgument, "run_stage: %v", err))
		return
	}
	a.changed(ctx, true)
	ctx.Respond(messages.RunGot{State: a.snapshot()})
}

// end ends the run once: it is stored, its jobs are cancelled, the
// supervisor drops its sessions.
func (a *runActor) end(ctx actor.Context, status, reason string, now time.Time) {
	if a.st.Status != messages.RunActive {
		return
	}
	if status == "" {
		status = messages.RunEnded
	}
	if now.IsZero() {
		now = a.cfg.Now()
	}
	runs.End(&a.st, status, reason, now)
	a.flags.Or(runFlagEnded)
	if status != messages.RunEnded && a.cfg.Jobs != nil {
		for _, id := range a.st.Jobs {
			ctx.Send(a.cfg.Jobs, messages.JobCancel{ID: id})
		}
	}
	if status != messages.RunEnded || len(a.st.Jobs) > 0 {
		o := messages.RunObservation{At: now, Source: "harnessd", Kind: status, Text: "run " + status + ": " + reason}
		runs.Observe(&a.st, o)
		a.emit(ctx, messages.RunEvent{Type: "observation", Observation: &o})
	}
	a.changed(ctx, a.stored || !a.st.Implicit)
	st := a.snapshot()
	a.emit(ctx, messages.RunEvent{Type: "end", State: &st}) // once per run: the exporter closes its root span
	ctx.Send(ctx.Parent(), runEnded{id: a.st.RunID, at: now})
}

func (a *runActor) get(ctx actor.Context, m messages.RunGet) {
	got := messages.RunGot{State: a.snapshot(), DroppedSpans: a.ring.Dropped()}
	if m.Spans {
		var stored []messages.RunSpan
		if a.stored && (a.ring.Dropped() > 0 || a.restored) {
			var err error
			if stored, err = storedSpans(a.cfg.Store, a.st.RunID); err != nil {
				a.lg.Warn("read stored spans", zap.Error(err))
			}
		}
		got.Spans = runs.Merge(a.ring.Spans(), stored)
	}
	ctx.Respond(got)
}

func (a *runActor) bind(ctx actor.Context, m messages.RunBind) {
	if a.st.Status != messages.RunActive {
		reply(ctx, nil, a.endedErr())
		return
	}
	c := m.Caller
	c.RunID = a.st.RunID
	a.st.Caller, a.st.DetachedAt = c, time.Time{}
	now := m.Now
	if now.IsZero() {
		now = a.cfg.Now()
	}
	a.st.UpdatedAt = now
	o := messages.RunObservation{At: now, Source: "harnessd", Kind: "resume", Text: "resumed by session " + c.Session + " (" + c.Client.Name + ")"}
	runs.Observe(&a.st, o)
	a.changed(ctx, true)
	ctx.Respond(messages.RunBound{State: a.snapshot()})
}
