package actors

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/recovery"
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
	cfg     RunsConfig
	lg      *zap.Logger
	st      messages.RunState
	ring    runs.Ring
	flags   *atomic.Uint32
	pending *atomic.Int64
	// tierNoted are the tiers above the run's that a call needed and an
	// observation already said so (once per tier).
	tierNoted map[string]bool
	restored  bool
	stored    bool   // the snapshot exists in the store
	dirty     bool   // the snapshot is older than st
	seq       uint64 // the last stored span's sequence number
	events    uint64
	// startErr is why an explicit run could not be stored at its start:
	// run_start answers it and the actor stops, so no run is acknowledged
	// that a restart would not find.
	startErr error
	// endFailing is set while ending the run at its deadline fails to
	// store (warned once; the next sweep tries again).
	endFailing bool
	// idle is the look at the open work of a run whose session went
	// away (run_idle.go).
	idle idleState
}

func (a *runActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.started(ctx)
	case *actor.Stopping:
		// Counters of reads since the last stored change are saved on a
		// clean stop (a crash loses only those).
		if a.stored && a.dirty {
			a.saveOrWarn(false)
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
	case messages.RunUsage:
		a.usage(ctx, m)
	case messages.RunObserve:
		a.observe(ctx, m)
	case messages.RunStage:
		a.stage(ctx, m)
	case messages.RunEscalate:
		a.escalate(ctx, m)
	case messages.RunNoteContext:
		b := m.Budget
		a.st.TokenBudget = &b
		a.dirty = true
	case runChild:
		if runs.AddChild(&a.st, m.id) {
			a.changed(ctx, a.stored || !a.st.Implicit)
		}
	case runChildNote:
		a.childNote(ctx, m.o)
	case messages.RunEnd:
		if err := a.end(ctx, m.Status, m.Reason, m.Now); err != nil {
			reply(ctx, nil, err)
			return
		}
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
		a.sessionGone(ctx, m.at)
	case runOpenWork:
		a.openWork(ctx, m, a.cfg.Now())
	case runSummarized:
		a.summarized(ctx, m.sum)
	case messages.RunSweep:
		if status, reason, due := runs.Due(a.st, m.Now, a.cfg.ResumeWindow); due {
			a.sweepEnd(ctx, status, reason, m.Now)
		} else {
			a.idleSweep(ctx, m.Now)
			a.stallSweep(ctx, m.Now)
		}
	}
}

func (a *runActor) started(ctx actor.Context) {
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
		if err := a.save(true); err != nil {
			a.startErr = err
			return
		}
	}
	if a.st.ParentRunID != "" {
		ctx.Send(ctx.Parent(), runStarted{id: a.st.RunID, parent: a.st.ParentRunID})
	}
}

// save writes the snapshot (fsynced when sync: run_start, stages, the
// end). Its error is coded: STORAGE_FULL or STORAGE_UNAVAILABLE when the
// disk refused, UNAVAILABLE while the daemon shuts down.
func (a *runActor) save(sync bool) error {
	var err error
	if sync {
		err = a.cfg.Store.PutSync(persistence.RunKey(a.st.RunID), a.st)
	} else {
		err = a.cfg.Store.Put(persistence.RunKey(a.st.RunID), a.st)
	}
	if err != nil {
		return storeRunErr(a.st.RunID, err)
	}
	a.stored, a.dirty = true, false
	return nil
}

// storeRunErr codes a failed write of run id's record.
func storeRunErr(id string, err error) error {
	code := errs.Internal
	if errors.Is(err, persistence.ErrClosed) {
		code = errs.Unavailable
	}
	return errs.Wrap(code, err, "run %s: its state could not be stored, so nothing was changed: %v", id, err).With("run_id", id)
}

// saveOrWarn saves what no caller waits for (counters, notes): a failure
// is logged, the state stays dirty and the next save carries it.
func (a *runActor) saveOrWarn(sync bool) {
	if err := a.save(sync); err != nil {
		a.lg.Warn("store the run", zap.Error(err))
	}
}

// changed publishes the new state and stores it when persist is set.
func (a *runActor) changed(ctx actor.Context, persist bool) {
	a.dirty = true
	if persist {
		a.saveOrWarn(true)
	}
	st := a.snapshot()
	a.emit(ctx, messages.RunEvent{Type: "state", State: &st})
}

// commit stores a change a caller waits for, then publishes events and
// the new state. When the store refuses, the run goes back to prev (its
// flags too) and the error is the caller's answer: nothing is
// acknowledged that is not stored, and the same call can be made again.
func (a *runActor) commit(ctx actor.Context, prev messages.RunState, persist bool, events ...messages.RunEvent) error {
	a.dirty = true
	if persist {
		if err := a.save(true); err != nil {
			a.st = prev
			setTier(a.flags, a.st.Tier)
			setFlag(a.flags, runFlagRetryWatch, len(a.st.Retries) > 0)
			setFlag(a.flags, runFlagEnded, a.st.Status != messages.RunActive)
			return err
		}
	}
	for _, ev := range events {
		a.emit(ctx, ev)
	}
	st := a.snapshot()
	a.emit(ctx, messages.RunEvent{Type: "state", State: &st})
	return nil
}

// cloneRunState copies st deeply enough that changing the copy (appends,
// in-place edits of its slices' elements) leaves st as it was.
func cloneRunState(st messages.RunState) messages.RunState {
	c := st
	c.CompletedStages = slices.Clone(st.CompletedStages)
	c.Observations = slices.Clone(st.Observations)
	c.Jobs = slices.Clone(st.Jobs)
	c.Escalations = slices.Clone(st.Escalations)
	c.Children = slices.Clone(st.Children)
	c.Retries = slices.Clone(st.Retries)
	for i := range c.Retries {
		c.Retries[i].Attempts = slices.Clone(c.Retries[i].Attempts)
	}
	if st.MaxRetries != nil {
		n := *st.MaxRetries
		c.MaxRetries = &n
	}
	if st.LastFailure != nil {
		f := *st.LastFailure
		c.LastFailure = &f
	}
	if st.TokenBudget != nil {
		b := *st.TokenBudget
		c.TokenBudget = &b
	}
	return c
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
	s.Stage = a.st.CurrentStage
	s.Persist = runs.Persisted(s)
	// The canonical input hash costs more than the rest of a span; a plain
	// successful read needs it only when someone looks (RunGet hashes the
	// ring's spans then), unless a retry streak is open.
	if s.Outcome != "ok" || s.Persist || len(a.st.Retries) > 0 {
		hashInput(&s)
	}
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
	if runs.RecordAttempt(&a.st, s) {
		setFlag(a.flags, runFlagRetryWatch, len(a.st.Retries) > 0)
	}
	if runs.PendingFailure(s) {
		a.unpend() // after the streak is open: the watch never lapses
	}
	notes := runs.Notes(s)
	unstuck := false
	if runs.SpanProgress(s) {
		if o := a.progress(a.st.UpdatedAt); o != nil {
			o.SpanID, unstuck = s.SpanID, true
			notes = append(notes, *o)
		}
	}
	if runs.NoteFailure(&a.st, s) && a.st.ParentRunID != "" {
		if o, ok := runs.ChildNote(a.st.RunID, s); ok {
			ctx.Send(ctx.Parent(), runChildNote{parent: a.st.ParentRunID, o: o})
		}
	}
	if need := runs.EscalationNeeded(a.st.Tier, s.Tier); need != "" && !a.tierNoted[need] && s.ParentID == "" {
		if a.tierNoted == nil {
			a.tierNoted = map[string]bool{}
		}
		a.tierNoted[need] = true
		notes = append(notes, messages.RunObservation{At: a.st.UpdatedAt, Source: "harnessd", Kind: "tier", SpanID: s.SpanID,
			Text: s.Op + " routes as " + need + " work but the run is declared " + a.st.Tier + "; run_escalate says so (the tier never changes on its own)"})
	}
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
	if s.Persist || (unstuck && a.stored) {
		a.saveOrWarn(false)
	}
}

// unpend uncounts a failed call the pipeline counted in flight (never
// below zero: a span sent around the pipeline was never counted).
func (a *runActor) unpend() {
	if a.pending == nil {
		return
	}
	for {
		n := a.pending.Load()
		if n <= 0 || a.pending.CompareAndSwap(n, n-1) {
			return
		}
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
	if m.Op != "" && len(a.st.Retries) > 0 {
		if err := a.retryCheck(m.Op, m.Input); err != nil {
			reply(ctx, nil, err)
			return
		}
	}
	if m.Child != "" {
		runs.Apply(&a.st.Drawn, d, 1)
	} else {
		runs.Apply(&a.st.Counters, d, 1)
	}
	a.dirty = true
	ctx.Respond(messages.RunCharged{})
}

// usage charges CPU time the run's processes used after their call
// answered (a job that ended): the run's own, or a child run's on this
// run's budget (Drawn). A later call that would start processes is
// refused once the run's cpu_seconds are used (runs.Check).
func (a *runActor) usage(ctx actor.Context, m messages.RunUsage) {
	if m.CPUMs <= 0 || a.st.Status != messages.RunActive {
		return
	}
	if m.Child != "" {
		a.st.Drawn.CPUMs += m.CPUMs
	} else {
		a.st.Counters.CPUMs += m.CPUMs
	}
	a.changed(ctx, a.stored)
}

// retryCheck answers RETRY_LIMIT, with the history and the recovery
// plan, when a call of op with input would be a retry past the run's
// bound in its current stage.
func (a *runActor) retryCheck(op string, input json.RawMessage) error {
	h, err := ledger.InputHash(op, input)
	if err != nil {
		return nil // the span will not hash either: no streak to match
	}
	r, refused := runs.RetryRefused(a.st, op, h)
	if !refused {
		return nil
	}
	bound := runs.RetryBound(a.st)
	last := r.Attempts[len(r.Attempts)-1]
	assessment := recovery.Assess(recovery.Facts{
		Span:     messages.RunSpan{SpanID: last.SpanID, Op: op, InputHash: h, Stage: r.Stage, Outcome: "error", ErrorCode: last.ErrorCode, Start: last.At, DurationMs: last.DurationMs},
		Attempts: r.Attempts, State: a.st,
	})
	plan := recovery.Plan(assessment, r.Failures, bound)
	where := "outside any stage"
	if r.Stage != "" {
		where = "in stage " + strconv.Quote(r.Stage)
	}
	return errs.New(errs.RetryLimit, "run %s: %s with this input failed %d times %s (last %s), and the run allows %d retries of a failed call per stage; %s",
		a.st.RunID, op, r.Failures, where, last.ErrorCode, bound, plan.Reason).
		With("run_id", a.st.RunID).With("operation", op).With("input_hash", h).With("stage", r.Stage).
		With("max_retries", bound).With("failures", r.Failures).With("attempts", r.Attempts).
		With("assessment", assessment).With("plan", plan)
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
	prev := cloneRunState(a.st)
	runs.Observe(&a.st, o)
	a.st.UpdatedAt = o.At
	events := []messages.RunEvent{{Type: "observation", Observation: &o}}
	if u := a.progress(o.At); u != nil {
		runs.Observe(&a.st, *u)
		events = append(events, messages.RunEvent{Type: "observation", Observation: u})
	}
	if err := a.commit(ctx, prev, true, events...); err != nil {
		reply(ctx, nil, err)
		return
	}
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
	prev := cloneRunState(a.st)
	if err := runs.Stage(&a.st, m.Stage, m.Status, m.Reason, now); err != nil {
		a.st = prev
		reply(ctx, nil, errs.New(errs.InvalidArgument, "run_stage: %v", err))
		return
	}
	runs.Progress(&a.st, now) // a stage change is progress (and says so itself)
	if runs.ResetRetries(&a.st) {
		setFlag(a.flags, runFlagRetryWatch, len(a.st.Retries) > 0)
	}
	if err := a.commit(ctx, prev, true); err != nil {
		reply(ctx, nil, err)
		return
	}
	ctx.Respond(messages.RunGot{State: a.snapshot()})
}

// escalate raises the run's tier (run_escalate): stored, observed.
func (a *runActor) escalate(ctx actor.Context, m messages.RunEscalate) {
	if a.st.Status != messages.RunActive {
		reply(ctx, nil, a.endedErr())
		return
	}
	now := m.Now
	if now.IsZero() {
		now = a.cfg.Now()
	}
	prev := cloneRunState(a.st)
	e, err := runs.Escalate(&a.st, m.To, m.Reason, now)
	if err != nil {
		a.st = prev
		reply(ctx, nil, errs.New(errs.InvalidArgument, "run_escalate: %v", err).With("run_id", a.st.RunID).With("tier", a.st.Tier))
		return
	}
	setTier(a.flags, a.st.Tier)
	from := e.From
	if from == "" {
		from = "undeclared"
	}
	o := messages.RunObservation{At: now, Source: "agent", Kind: "escalation", Text: "escalated from " + from + " to " + e.To + ": " + e.Reason}
	runs.Observe(&a.st, o)
	if err := a.commit(ctx, prev, true, messages.RunEvent{Type: "observation", Observation: &o}); err != nil {
		reply(ctx, nil, err)
		return
	}
	ctx.Respond(messages.RunGot{State: a.snapshot()})
}

// childNote records what a child run reports (a failed call, its end at
// a deadline): an observation, stored without a sync like a span.
func (a *runActor) childNote(ctx actor.Context, o messages.RunObservation) {
	if a.st.Status != messages.RunActive {
		return
	}
	if o.At.IsZero() {
		o.At = a.cfg.Now()
	}
	runs.Observe(&a.st, o)
	a.st.UpdatedAt = o.At
	a.dirty = true
	a.emit(ctx, messages.RunEvent{Type: "observation", Observation: &o})
	if a.stored || !a.st.Implicit {
		a.saveOrWarn(false)
	}
}

// end ends the run once: it is stored, its jobs are cancelled, the
// supervisor drops its sessions. When the store refuses the end, the run
// stays active and the error says why.
func (a *runActor) end(ctx actor.Context, status, reason string, now time.Time) error {
	if a.st.Status != messages.RunActive {
		return nil
	}
	if status == "" {
		status = messages.RunEnded
	}
	if now.IsZero() {
		now = a.cfg.Now()
	}
	prev := cloneRunState(a.st)
	runs.End(&a.st, status, reason, now)
	var events []messages.RunEvent
	if status != messages.RunEnded || len(a.st.Jobs) > 0 {
		o := messages.RunObservation{At: now, Source: "harnessd", Kind: status, Text: "run " + status + ": " + reason}
		runs.Observe(&a.st, o)
		events = append(events, messages.RunEvent{Type: "observation", Observation: &o})
	}
	if err := a.commit(ctx, prev, a.stored || !a.st.Implicit, events...); err != nil {
		return err
	}
	a.flags.Or(runFlagEnded)
	setFlag(a.flags, runFlagRetryWatch, false)
	if status != messages.RunEnded && a.cfg.Jobs != nil {
		for _, id := range a.st.Jobs {
			ctx.Send(a.cfg.Jobs, messages.JobCancel{ID: id})
		}
	}
	if o, ok := runs.ChildEndNote(a.st.RunID, status, reason, now); ok && a.st.ParentRunID != "" {
		ctx.Send(ctx.Parent(), runChildNote{parent: a.st.ParentRunID, o: o})
	}
	st := a.snapshot()
	a.emit(ctx, messages.RunEvent{Type: "end", State: &st}) // once per run: the exporter closes its root span
	ctx.Send(ctx.Parent(), runEnded{id: a.st.RunID, at: now})
	a.summarize(ctx, runs.SummaryEnded, now)
	return nil
}

// sweepEnd ends the run the sweep found due (deadline, abandonment); a
// store that refuses is warned about once, and the next sweep tries again.
func (a *runActor) sweepEnd(ctx actor.Context, status, reason string, now time.Time) {
	err := a.end(ctx, status, reason, now)
	if err != nil && !a.endFailing {
		a.lg.Warn("the run is due to end but its end could not be stored; tried again at every sweep", zap.String("status", status), zap.Error(err))
	}
	a.endFailing = err != nil
}

// hashInput sets the span's input hash from its input and drops the input.
func hashInput(s *messages.RunSpan) {
	if s.InputHash == "" && len(s.Input) > 0 {
		if h, err := ledger.InputHash(s.Op, s.Input); err == nil {
			s.InputHash = h
		}
	}
	s.Input = nil
}

func (a *runActor) get(ctx actor.Context, m messages.RunGet) {
	if a.startErr != nil {
		// run_start's own question: the run was never stored, so it
		// never was; the supervisor forgets it when this actor stops.
		reply(ctx, nil, a.startErr)
		ctx.Stop(ctx.Self())
		return
	}
	got := messages.RunGot{State: a.snapshot(), DroppedSpans: a.ring.Dropped()}
	if !m.Spans {
		ctx.Respond(got)
		return
	}
	a.ring.Each(hashInput)
	if a.stored && (a.ring.Dropped() > 0 || a.restored) {
		// The stored spans are a walk of the store: off the mailbox.
		withStored(ctx, a.cfg.Tasks, a.cfg.Store, got, a.ring.Spans())
		return
	}
	got.Spans = a.ring.Spans()
	ctx.Respond(got)
}

func (a *runActor) bind(ctx actor.Context, m messages.RunBind) {
	if a.st.Status != messages.RunActive {
		reply(ctx, nil, a.endedErr())
		return
	}
	c := m.Caller
	c.RunID = a.st.RunID
	prev := cloneRunState(a.st)
	a.st.Caller, a.st.DetachedAt = c, time.Time{}
	now := m.Now
	if now.IsZero() {
		now = a.cfg.Now()
	}
	a.st.UpdatedAt = now
	o := messages.RunObservation{At: now, Source: "harnessd", Kind: "resume", Text: "resumed by session " + c.Session + " (" + c.Client.Name + ")"}
	runs.Observe(&a.st, o)
	if err := a.commit(ctx, prev, true); err != nil {
		reply(ctx, nil, err)
		return
	}
	ctx.Respond(messages.RunBound{State: a.snapshot()})
}
