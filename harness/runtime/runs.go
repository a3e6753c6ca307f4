package runtime

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// RunEntry is a live run as the pipeline holds it during a call.
type RunEntry = actors.RunEntry

// Runs is the client of the runs supervisor and of the run actors. The
// pipeline's per-call work (Resolve, Record) reads the published index and
// sends without waiting; only budget draws wait for an answer.
type Runs struct {
	r     *Runtime
	pid   *actor.PID
	index *actors.RunIndex
	// maxRetries is the default retry bound of new runs (the policy's
	// max_retries); nil or a nil answer = internal/runs' default.
	maxRetries func() *int
}

// SetMaxRetries sets where new runs take their default retry bound from.
// Call it before the runtime starts.
func (c *Runs) SetMaxRetries(f func() *int) { c.maxRetries = f }

// Start starts a run and returns it once it is stored.
func (c Runs) Start(ctx context.Context, m messages.RunStart) (messages.RunState, error) {
	if m.MaxRetries == nil && c.maxRetries != nil {
		m.MaxRetries = c.maxRetries()
	}
	got, err := Ask[messages.RunGot](ctx, c.r, c.pid, m)
	return got.State, err
}

// Resolve returns the run a call belongs to: caller.RunID when set (an
// ended or unknown run is an error), else the run of caller.Session,
// started on the session's first call. ok is false when the call has
// neither (an in-process call outside any run).
func (c Runs) Resolve(ctx context.Context, caller messages.Caller) (e RunEntry, ok bool, err error) {
	if caller.RunID != "" {
		e, ok := c.index.Lookup(caller.RunID)
		if !ok {
			_, err := c.Get(ctx, caller.RunID, false)
			if err == nil {
				err = errs.New(errs.RunEnded, "run %s has ended; start a new run (run_start) or leave run_id out", caller.RunID).With("run_id", caller.RunID)
			}
			return RunEntry{}, false, err
		}
		if e.Ended() {
			return RunEntry{}, false, errs.New(errs.RunEnded, "run %s has ended; start a new run (run_start) or leave run_id out", caller.RunID).With("run_id", caller.RunID)
		}
		return e, true, nil
	}
	if caller.Session == "" {
		return RunEntry{}, false, nil
	}
	if e, ok := c.index.Session(caller.Session); ok && !e.Ended() {
		return e, true, nil
	}
	st, err := c.Start(ctx, messages.RunStart{Implicit: true, Caller: caller})
	if err != nil {
		return RunEntry{}, false, err
	}
	e, ok = c.index.Lookup(st.RunID)
	if !ok {
		return RunEntry{}, false, errs.New(errs.Unavailable, "the implicit run of session %s did not start", caller.Session)
	}
	return e, true, nil
}

// Lookup returns a live run from the published index.
func (c Runs) Lookup(id string) (RunEntry, bool) { return c.index.Lookup(id) }

// Active counts the live runs that have not ended.
func (c Runs) Active() int { return c.index.Len() }

// Charge draws d on e's budget and on every ancestor's (a child run draws
// on its parent's budget). It refunds what it took when one refuses.
func (c Runs) Charge(ctx context.Context, e RunEntry, d runs.Draw) error {
	if d.Zero() {
		if e.OutputSpent() {
			return c.ask(ctx, e.PID, messages.RunCharge{RunID: e.ID})
		}
		return nil
	}
	chain := c.chain(e)
	for i, r := range chain {
		m := messages.RunCharge{RunID: r.ID, Commands: d.Commands, Mutations: d.Mutations, Jobs: d.Jobs, Approvals: d.Approvals}
		if i > 0 {
			m.Child = e.ID
		}
		if err := c.ask(ctx, r.PID, m); err != nil {
			for j := range i {
				c.Refund(chain[j], d, j > 0, e.ID)
			}
			return err
		}
	}
	return nil
}

// chain returns e and its live ancestors, nearest first.
func (c Runs) chain(e RunEntry) []RunEntry {
	chain := []RunEntry{e}
	for p := e.Parent; p != ""; {
		pe, ok := c.index.Lookup(p)
		if !ok || len(chain) > 64 {
			break
		}
		chain = append(chain, pe)
		p = pe.Parent
	}
	return chain
}

// Use charges cpuMs of CPU time, used by a process of run id after its
// call answered (a job that ended), to the run and to each ancestor
// (their budgets bound their children's CPU too), without waiting. Each
// run's mailbox has it before anyone can see the job ended, so the run's
// next call is refused once its cpu_seconds are used. A run that is gone
// or ended is charged nothing.
func (c Runs) Use(id string, cpuMs int64) {
	e, ok := c.index.Lookup(id)
	if !ok || cpuMs <= 0 {
		return
	}
	c.r.system.Root.Send(e.PID, messages.RunUsage{RunID: e.ID, CPUMs: cpuMs})
	c.useAncestors(e, cpuMs)
}

// useAncestors charges e's cpuMs to its ancestors' budgets.
func (c Runs) useAncestors(e RunEntry, cpuMs int64) {
	for _, a := range c.chain(e)[1:] {
		c.r.system.Root.Send(a.PID, messages.RunUsage{RunID: a.ID, Child: e.ID, CPUMs: cpuMs})
	}
}

func (c Runs) ask(ctx context.Context, pid *actor.PID, m messages.RunCharge) error {
	_, err := Ask[messages.RunCharged](ctx, c.r, pid, m)
	return err
}

// Refund returns a draw a call did not use.
func (c Runs) Refund(e RunEntry, d runs.Draw, asChild bool, child string) {
	m := messages.RunRefund{RunID: e.ID, Commands: d.Commands, Mutations: d.Mutations, Jobs: d.Jobs, Approvals: d.Approvals}
	if asChild {
		m.Child = child
	}
	c.r.system.Root.Send(e.PID, m)
}

// Record sends a finished span to its run without waiting. A failed call
// is counted in flight first, so the next call's retry check (RetryWatch)
// asks the run even before it has recorded the failure.
func (c Runs) Record(e RunEntry, s messages.RunSpan) {
	if runs.PendingFailure(s) {
		e.NotePending()
	}
	c.r.system.Root.Send(e.PID, s)
	if s.CPUMs > 0 && e.Parent != "" {
		c.useAncestors(e, s.CPUMs) // the run counts its own with the span
	}
}

// NoteContext records the token budget snapshot of a live run's last
// context_assemble, without waiting (a later RunGet sees it: the run's
// mailbox orders them). It reports whether the run is live.
func (c Runs) NoteContext(id string, b messages.RunTokenBudget) bool {
	e, ok := c.index.Lookup(id)
	if !ok || e.Ended() {
		return false
	}
	c.r.system.Root.Send(e.PID, messages.RunNoteContext{RunID: id, Budget: b})
	return true
}

// CheckRetry asks e whether a call of op with input is a retry past the
// run's bound (RETRY_LIMIT) and whether its output budget is spent
// (BUDGET_EXCEEDED). The request is ordered after the spans sent before
// it, so the run has recorded every earlier failure when it answers.
func (c Runs) CheckRetry(ctx context.Context, e RunEntry, op string, input json.RawMessage) error {
	return c.ask(ctx, e.PID, messages.RunCharge{RunID: e.ID, Op: op, Input: input})
}

// Escalate raises a run's tier (run_escalate).
func (c Runs) Escalate(ctx context.Context, m messages.RunEscalate) (messages.RunState, error) {
	got, err := Ask[messages.RunGot](ctx, c.r, c.pid, m)
	return got.State, err
}

// Children returns the summaries of st's child runs: the ones it
// recorded and any live run naming it as parent, in start order. A child
// that cannot be read is left out.
func (c Runs) Children(ctx context.Context, st messages.RunState) []messages.RunChild {
	ids := slices.Clone(st.Children)
	for _, e := range c.index.Children(st.RunID) {
		if !slices.Contains(ids, e.ID) {
			ids = append(ids, e.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	const maxChildren = 100
	if len(ids) > maxChildren {
		ids = ids[len(ids)-maxChildren:]
	}
	var states []messages.RunState
	for _, id := range ids {
		g, err := c.Get(ctx, id, false)
		if err != nil {
			continue
		}
		states = append(states, g.State)
	}
	slices.SortStableFunc(states, func(a, b messages.RunState) int { return a.StartedAt.Compare(b.StartedAt) })
	out := make([]messages.RunChild, 0, len(states))
	for _, s := range states {
		out = append(out, runs.ChildOf(s))
	}
	return out
}

// Observe appends an observation and returns the run's state.
func (c Runs) Observe(ctx context.Context, id string, o messages.RunObservation) (messages.RunState, error) {
	got, err := Ask[messages.RunObserved](ctx, c.r, c.pid, messages.RunObserve{RunID: id, Observation: o})
	return got.State, err
}

// Stage records a stage of a run.
func (c Runs) Stage(ctx context.Context, m messages.RunStage) (messages.RunState, error) {
	got, err := Ask[messages.RunGot](ctx, c.r, c.pid, m)
	return got.State, err
}

// End ends a run (ending an ended run answers its state).
func (c Runs) End(ctx context.Context, m messages.RunEnd) (messages.RunState, error) {
	got, err := Ask[messages.RunGot](ctx, c.r, c.pid, m)
	if errs.CodeOf(err) == errs.RunEnded {
		g, gerr := c.Get(ctx, m.RunID, false)
		if gerr == nil {
			return g.State, nil
		}
	}
	return got.State, err
}

// Get returns a run, with its spans when spans is set.
func (c Runs) Get(ctx context.Context, id string, spans bool) (messages.RunGot, error) {
	return Ask[messages.RunGot](ctx, c.r, c.pid, messages.RunGet{RunID: id, Spans: spans})
}

// Bind binds a run to the caller's session (run_resume).
func (c Runs) Bind(ctx context.Context, id string, caller messages.Caller) (messages.RunState, error) {
	got, err := Ask[messages.RunBound](ctx, c.r, c.pid, messages.RunBind{RunID: id, Caller: caller})
	return got.State, err
}

// SessionClosed detaches the runs of a session that went away.
func (c Runs) SessionClosed(session string) {
	if session != "" {
		c.r.system.Root.Send(c.pid, messages.RunSessionClosed{Session: session})
	}
}

// Sweep ends the runs due at now and waits for the supervisor to hand the
// sweep to every run (tests; the supervisor sweeps on its own timer).
func (c Runs) Sweep(ctx context.Context, now time.Time) error {
	_, err := Ask[messages.RunSwept](ctx, c.r, c.pid, messages.RunSweep{Now: now})
	return err
}

// List returns the runs, active first, then newest first (runs.ListOrder):
// the live ones from their actors, the others from the store. status ""
// lists all; limit 0 = 100.
func (c Runs) List(ctx context.Context, status string, limit int) ([]messages.RunState, error) {
	if limit <= 0 {
		limit = 100
	}
	live := c.index.Live()
	futures := make([]*actor.Future, len(live))
	timeout := c.r.cfg.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	for i, e := range live {
		futures[i] = c.r.system.Root.RequestFuture(e.PID, messages.RunGet{RunID: e.ID}, timeout)
	}
	seen := map[string]bool{}
	var out []messages.RunState
	for _, f := range futures {
		res, err := f.Result()
		if got, ok := res.(messages.RunGot); ok && err == nil {
			seen[got.State.RunID] = true
			out = append(out, got.State)
		}
	}
	err := c.r.cfg.Store.Scan([]byte(persistence.PrefixRun), func(_ []byte, decode func(any) error) error {
		var st messages.RunState
		if decode(&st) == nil && !seen[st.RunID] {
			out = append(out, st)
		}
		return nil
	})
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "list runs: %v", err)
	}
	out = slices.DeleteFunc(out, func(st messages.RunState) bool { return status != "" && st.Status != status })
	slices.SortFunc(out, runs.ListOrder)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
