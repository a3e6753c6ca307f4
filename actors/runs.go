package actors

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Flags a run actor publishes on its index entry, read without a round
// trip by the pipeline before every call of the run.
const (
	runFlagEnded uint32 = 1 << iota
	runFlagOutputSpent
	// runFlagRetryWatch: the run has an open retry streak in its stage,
	// so a call may be a retry past its bound (the pipeline asks).
	runFlagRetryWatch
)

// The run's tier (runs.TierRank) is kept in the flags' bits 8 and 9.
const (
	runTierShift        = 8
	runTierMask  uint32 = 3 << runTierShift
)

// RunEntry is one live run in the published RunIndex.
type RunEntry struct {
	ID     string
	PID    *actor.PID
	Parent string
	flags  *atomic.Uint32
	// pending counts the run's failed calls sent to its actor and not
	// recorded yet (runs.PendingFailure).
	pending *atomic.Int64
}

// Ended reports whether the run has ended.
func (e RunEntry) Ended() bool { return e.flags != nil && e.flags.Load()&runFlagEnded != 0 }

// OutputSpent reports whether the run's output budget is used up.
func (e RunEntry) OutputSpent() bool {
	return e.flags != nil && e.flags.Load()&runFlagOutputSpent != 0
}

// RetryWatch reports whether a call of the run may be a retry past its
// bound: the run has an open retry streak, or a failed call of it is on
// its way to the actor. Reads cost two atomic loads while it is false.
func (e RunEntry) RetryWatch() bool {
	if e.flags == nil {
		return false
	}
	return e.flags.Load()&runFlagRetryWatch != 0 || (e.pending != nil && e.pending.Load() > 0)
}

// NotePending counts a failed call sent to the run's actor
// (runs.PendingFailure); the actor uncounts it once recorded.
func (e RunEntry) NotePending() {
	if e.pending != nil {
		e.pending.Add(1)
	}
}

// Tier is the run's declared tier ("" = none).
func (e RunEntry) Tier() string {
	if e.flags == nil {
		return ""
	}
	return runs.TierAt(int(e.flags.Load()&runTierMask) >> runTierShift)
}

// setFlag sets or clears bit f.
func setFlag(flags *atomic.Uint32, f uint32, on bool) {
	if on {
		flags.Or(f)
	} else {
		flags.And(^f)
	}
}

// setTier stores tier in flags.
func setTier(flags *atomic.Uint32, tier string) {
	v := uint32(runs.TierRank(tier)) << runTierShift & runTierMask
	for {
		old := flags.Load()
		if flags.CompareAndSwap(old, old&^runTierMask|v) {
			return
		}
	}
}

type runIndexData struct {
	runs     map[string]RunEntry
	sessions map[string]string // session -> the run its calls belong to
}

// RunIndex is the runs supervisor's published, immutable view of the live
// runs and of which run each session's calls belong to: the supervisor is
// its only writer and replaces it whole after every change.
type RunIndex struct {
	p atomic.Pointer[runIndexData]
}

// Lookup returns the live run id.
func (ix *RunIndex) Lookup(id string) (RunEntry, bool) {
	d := ix.p.Load()
	if d == nil {
		return RunEntry{}, false
	}
	e, ok := d.runs[id]
	return e, ok
}

// Session returns the run a session's calls belong to.
func (ix *RunIndex) Session(session string) (RunEntry, bool) {
	d := ix.p.Load()
	if d == nil || session == "" {
		return RunEntry{}, false
	}
	id, ok := d.sessions[session]
	if !ok {
		return RunEntry{}, false
	}
	e, ok := d.runs[id]
	return e, ok
}

// Live returns the live runs, sorted by id.
func (ix *RunIndex) Live() []RunEntry {
	d := ix.p.Load()
	if d == nil {
		return nil
	}
	out := make([]RunEntry, 0, len(d.runs))
	for _, e := range d.runs {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Children returns the live runs whose parent is id, sorted by id.
func (ix *RunIndex) Children(id string) []RunEntry {
	var out []RunEntry
	for _, e := range ix.Live() {
		if e.Parent == id && id != "" {
			out = append(out, e)
		}
	}
	return out
}

// Len counts the live runs that have not ended.
func (ix *RunIndex) Len() (active int) {
	d := ix.p.Load()
	if d == nil {
		return 0
	}
	for _, e := range d.runs {
		if !e.Ended() {
			active++
		}
	}
	return active
}

// RunsConfig configures the runs supervisor. Zero fields mean "use the
// default".
type RunsConfig struct {
	Store  *persistence.Store
	Index  *RunIndex
	Logger *zap.Logger
	Now    func() time.Time
	// Jobs is the jobs supervisor: a run past its deadline cancels its jobs.
	Jobs *actor.PID
	// SweepEvery is the period of the deadline and abandonment sweep; 0 = 1 s.
	SweepEvery time.Duration
	// ResumeWindow is how long a detached run stays resumable; 0 =
	// runs.ResumeWindow.
	ResumeWindow time.Duration
	// Linger is how long an ended run's actor (and its in-memory read
	// spans) stays before only its stored record remains; 0 = 1 h.
	Linger time.Duration
	// MaxLingering bounds the ended runs whose actors linger: past it the
	// oldest ended go first, so memory follows the live runs, not the
	// runs of the last hour; 0 = DefaultMaxLingering.
	MaxLingering int
	// StallAfter is how long a run's current stage may make no progress
	// before the run is marked stuck; 0 = runs.DefaultStallAfter, < 0 =
	// never.
	StallAfter time.Duration
	// Tasks runs the walks of a run's stored spans; nil = untracked
	// goroutines.
	Tasks *Tasks
	// OnEvent receives every run event (the OTLP exporter); nil = none.
	// It must not block.
	OnEvent func(messages.RunEvent)

	// childWrap wraps the producer of run actors (tests inject faults).
	childWrap func(actor.Producer) actor.Producer
}

func (c RunsConfig) withDefaults() RunsConfig {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Index == nil {
		c.Index = &RunIndex{}
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = time.Second
	}
	if c.ResumeWindow <= 0 {
		c.ResumeWindow = runs.ResumeWindow
	}
	if c.Linger <= 0 {
		c.Linger = time.Hour
	}
	if c.MaxLingering <= 0 {
		c.MaxLingering = DefaultMaxLingering
	}
	if c.StallAfter == 0 {
		c.StallAfter = runs.DefaultStallAfter
	}
	return c
}

// DefaultMaxLingering is RunsConfig.MaxLingering's default.
const DefaultMaxLingering = 256

// lingerOverflow returns the ended runs (id -> end) past max, oldest end
// first (ties by id): the actors a sweep stops before their Linger.
func lingerOverflow(ended map[string]time.Time, max int) []string {
	if len(ended) <= max {
		return nil
	}
	ids := slices.Collect(maps.Keys(ended))
	slices.SortFunc(ids, func(a, b string) int {
		if c := ended[a].Compare(ended[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return ids[:len(ids)-max]
}

// runEnded tells the supervisor a child's run ended.
type runEnded struct {
	id string
	at time.Time
}

// runDetach tells a run its session went away.
type runDetach struct{ at time.Time }

// runChild tells a parent run a child started under it.
type runChild struct{ id string }

// runStarted tells the supervisor a child run was stored at its start,
// so its parent may list it.
type runStarted struct{ id, parent string }

// runChildNote carries an observation of a child run (a failed call, an
// end at its deadline) to its parent, through the supervisor.
type runChildNote struct {
	parent string
	o      messages.RunObservation
}

type runRec struct {
	pid     *actor.PID
	parent  string
	flags   *atomic.Uint32
	pending *atomic.Int64
	endedAt time.Time // zero while active
}

// runsActor supervises one run actor per live run, restores the active
// runs at start, keeps the session bindings and publishes the RunIndex.
type runsActor struct {
	cfg      RunsConfig
	lg       *zap.Logger
	runs     map[string]*runRec
	sessions map[string]string
	tick     *ticker
}

// NewRuns returns the producer of the runs supervisor.
func NewRuns(cfg RunsConfig) actor.Producer {
	cfg = cfg.withDefaults()
	return func() actor.Actor {
		return &runsActor{cfg: cfg, lg: cfg.Logger.Named("runs")}
	}
}

func (a *runsActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.restore(ctx)
		a.tick = startTicker(ctx, a.cfg.SweepEvery, func() any { return messages.RunSweep{} })
	case *actor.Stopping:
		a.tick.stop()
	case *actor.Restarting:
		a.tick.stop()
	case *actor.Terminated:
		for id, r := range a.runs {
			if r.pid.Equal(m.Who) {
				delete(a.runs, id)
				a.dropSessions(id)
			}
		}
		a.publish()
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case messages.RunStart:
		a.start(ctx, m)
	case messages.RunBind:
		a.bind(ctx, m)
	case messages.RunSessionClosed:
		a.sessionClosed(ctx, m)
	case messages.RunSweep:
		a.sweep(ctx, m)
	case runEnded:
		if r := a.runs[m.id]; r != nil {
			r.endedAt = m.at
		}
		a.dropSessions(m.id)
		a.publish()
	case messages.RunGet:
		if r := a.runs[m.RunID]; r != nil {
			ctx.Forward(r.pid)
			return
		}
		a.getStored(ctx, m)
	case messages.RunObserve:
		a.forward(ctx, m.RunID)
	case messages.RunStage:
		a.forward(ctx, m.RunID)
	case messages.RunEnd:
		a.forward(ctx, m.RunID)
	case messages.RunCharge:
		a.forward(ctx, m.RunID)
	case messages.RunEscalate:
		a.forward(ctx, m.RunID)
	case runChildNote:
		if r := a.runs[m.parent]; r != nil && r.endedAt.IsZero() {
			ctx.Send(r.pid, m)
		}
	case runStarted:
		if p := a.runs[m.parent]; p != nil {
			ctx.Send(p.pid, runChild{id: m.id})
		}
	}
}

// restore spawns an actor for every active run in the store (their
// sessions are gone: they wait to be resumed) and deletes ended runs past
// their retention.
func (a *runsActor) restore(ctx actor.Context) {
	a.runs, a.sessions = map[string]*runRec{}, map[string]string{}
	now := a.cfg.Now()
	var live []messages.RunState
	var expired []string
	err := a.cfg.Store.Scan([]byte(persistence.PrefixRun), func(_ []byte, decode func(any) error) error {
		var st messages.RunState
		if err := decode(&st); err != nil {
			a.lg.Warn("skip an unreadable run record", zap.Error(err))
			return nil
		}
		switch {
		case st.Status == messages.RunActive:
			live = append(live, st)
		case now.Sub(st.EndedAt) > runs.Retention:
			expired = append(expired, st.RunID)
		}
		return nil
	})
	if err != nil {
		a.lg.Error("restore runs", zap.Error(err))
	}
	for _, id := range expired {
		a.deleteStored(id)
	}
	for _, st := range live {
		if st.DetachedAt.IsZero() {
			st.DetachedAt = now
		}
		st.Caller.Session = ""
		a.spawn(ctx, st, true)
	}
	a.publish()
	if len(live) > 0 {
		a.lg.Info("restored runs", zap.Int("active", len(live)))
	}
}

func (a *runsActor) deleteStored(id string) {
	var keys [][]byte
	_ = a.cfg.Store.ScanRaw(persistence.RunSpanPrefix(id), func(k, _ []byte) error {
		keys = append(keys, k)
		return nil
	})
	err := a.cfg.Store.Update(false, func(tx *persistence.Txn) error {
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return tx.Delete(persistence.RunKey(id))
	})
	if err != nil {
		a.lg.Warn("delete an expired run", zap.String("run_id", id), zap.Error(err))
	}
}

func (a *runsActor) spawn(ctx actor.Context, st messages.RunState, restored bool) *runRec {
	flags, pending := &atomic.Uint32{}, &atomic.Int64{}
	setTier(flags, st.Tier)
	setFlag(flags, runFlagRetryWatch, len(st.Retries) > 0)
	var prod actor.Producer = func() actor.Actor {
		return &runActor{cfg: a.cfg, lg: a.lg.With(zap.String("run_id", st.RunID)), st: st, restored: restored, flags: flags, pending: pending}
	}
	if a.cfg.childWrap != nil {
		prod = a.cfg.childWrap(prod)
	}
	props := actor.PropsFromProducer(prod, actor.WithReceiverMiddleware(Recover(a.lg)))
	pid, err := ctx.SpawnNamed(props, st.RunID)
	if err != nil {
		a.lg.Error("spawn run", zap.String("run_id", st.RunID), zap.Error(err))
		return nil
	}
	r := &runRec{pid: pid, parent: st.ParentRunID, flags: flags, pending: pending}
	a.runs[st.RunID] = r
	return r
}

func (a *runsActor) start(ctx actor.Context, m messages.RunStart) {
	now := m.Now
	if now.IsZero() {
		now = a.cfg.Now()
	}
	if m.Implicit {
		if id, ok := a.sessions[m.Caller.Session]; ok && m.Caller.Session != "" {
			if r := a.runs[id]; r != nil && r.endedAt.IsZero() {
				ctx.RequestWithCustomSender(r.pid, messages.RunGet{RunID: id}, ctx.Sender())
				return
			}
		}
	}
	if m.ParentRunID != "" {
		p := a.runs[m.ParentRunID]
		switch {
		case p == nil && a.storedExists(m.ParentRunID):
			reply(ctx, nil, errs.New(errs.RunEnded, "parent run %s has ended; start the child without parent_run_id or under a live run", m.ParentRunID))
			return
		case p == nil:
			reply(ctx, nil, errs.New(errs.NotFound, "parent run %s does not exist (see run_list)", m.ParentRunID).With("parent_run_id", m.ParentRunID))
			return
		case !p.endedAt.IsZero():
			reply(ctx, nil, errs.New(errs.RunEnded, "parent run %s has ended", m.ParentRunID))
			return
		}
	}
	st := messages.RunState{
		RunID: runs.NewID("run_"), Goal: m.Goal, RepoID: m.RepoID, WorkflowClass: m.WorkflowClass,
		ParentRunID: m.ParentRunID, Status: messages.RunActive, Implicit: m.Implicit, Caller: m.Caller,
		Budget: m.Budget, CompletedStages: []string{}, Observations: []messages.RunObservation{},
		StartedAt: now, UpdatedAt: now, Tier: m.Tier, Shape: m.Shape, MaxRetries: m.MaxRetries,
	}
	st.Caller.RunID = st.RunID
	if m.Budget.WallS > 0 {
		st.Deadline = now.Add(time.Duration(m.Budget.WallS) * time.Second)
	}
	r := a.spawn(ctx, st, false)
	if r == nil {
		reply(ctx, nil, errs.New(errs.Internal, "could not start the run actor"))
		return
	}
	if m.Implicit && m.Caller.Session != "" {
		a.sessions[m.Caller.Session] = st.RunID
	}
	a.publish()
	// The child answers once it has stored the run (explicit runs), so
	// run_start returns only a run that survives a crash; a run the store
	// refused answers the refusal and stops (its parent never lists it:
	// the child announces itself, runStarted, only once stored).
	ctx.RequestWithCustomSender(r.pid, messages.RunGet{RunID: st.RunID}, ctx.Sender())
}

func (a *runsActor) storedExists(id string) bool {
	ok, _ := a.cfg.Store.Has(persistence.RunKey(id))
	return ok
}

func (a *runsActor) bind(ctx actor.Context, m messages.RunBind) {
	r := a.runs[m.RunID]
	if r == nil || !r.endedAt.IsZero() {
		a.notLive(ctx, m.RunID)
		return
	}
	if s := m.Caller.Session; s != "" {
		a.sessions[s] = m.RunID
	}
	a.publish()
	ctx.Forward(r.pid)
}

func (a *runsActor) sessionClosed(ctx actor.Context, m messages.RunSessionClosed) {
	now := m.Now
	if now.IsZero() {
		now = a.cfg.Now()
	}
	if id, ok := a.sessions[m.Session]; ok {
		delete(a.sessions, m.Session)
		if r := a.runs[id]; r != nil {
			ctx.Send(r.pid, runDetach{at: now})
		}
		a.publish()
	}
}

// sweep ends the runs due (each child decides) and stops the actors of
// runs ended longer than Linger ago.
func (a *runsActor) sweep(ctx actor.Context, m messages.RunSweep) {
	if m.Now.IsZero() {
		m.Now = a.cfg.Now()
	}
	stopped := false
	ended := map[string]time.Time{}
	for id, r := range a.runs {
		if r.endedAt.IsZero() {
			ctx.Send(r.pid, m)
			continue
		}
		if m.Now.Sub(r.endedAt) >= a.cfg.Linger {
			ctx.Stop(r.pid)
			delete(a.runs, id)
			stopped = true
			continue
		}
		ended[id] = r.endedAt
	}
	for _, id := range lingerOverflow(ended, a.cfg.MaxLingering) {
		ctx.Stop(a.runs[id].pid)
		delete(a.runs, id)
		stopped = true
	}
	if stopped {
		a.publish()
	}
	if ctx.Sender() != nil {
		// A request (tests): a RunGet sent after the answer reaches the
		// child after the sweep, so it sees the sweep's outcome.
		ctx.Respond(messages.RunSwept{})
	}
}

func (a *runsActor) forward(ctx actor.Context, id string) {
	r := a.runs[id]
	if r == nil {
		a.notLive(ctx, id)
		return
	}
	ctx.Forward(r.pid)
}

func (a *runsActor) notLive(ctx actor.Context, id string) {
	if a.storedExists(id) {
		reply(ctx, nil, errs.New(errs.RunEnded, "run %s has ended; start a new run (run_start) or leave run_id out", id).With("run_id", id))
		return
	}
	reply(ctx, nil, errs.New(errs.NotFound, "run %s does not exist (see run_list)", id).With("run_id", id))
}

func (a *runsActor) getStored(ctx actor.Context, m messages.RunGet) {
	var st messages.RunState
	if err := a.cfg.Store.Get(persistence.RunKey(m.RunID), &st); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			reply(ctx, nil, errs.New(errs.NotFound, "run %s does not exist (see run_list)", m.RunID).With("run_id", m.RunID))
			return
		}
		reply(ctx, nil, errs.Wrap(errs.Unavailable, err, "read run %s: %v", m.RunID, err))
		return
	}
	got := messages.RunGot{State: st}
	if !m.Spans {
		ctx.Respond(got)
		return
	}
	withStored(ctx, a.cfg.Tasks, a.cfg.Store, got, nil)
}

// withStored answers the current request with got and the run's stored
// spans merged with ring (the spans held in memory). The walk of the
// store runs in a tracked task, never in Receive; the answer goes to the
// requester from there.
func withStored(ctx actor.Context, tasks *Tasks, store *persistence.Store, got messages.RunGot, ring []messages.RunSpan) {
	sender, root := ctx.Sender(), ctx.ActorSystem().Root
	if sender == nil {
		return
	}
	tasks.Go(func() {
		stored, err := storedSpans(store, got.State.RunID)
		if err != nil {
			root.Send(sender, Failure(errs.Wrap(errs.Unavailable, err, "read the spans of run %s: %v", got.State.RunID, err)))
			return
		}
		got.Spans = runs.Merge(ring, stored)
		root.Send(sender, got)
	})
}

func (a *runsActor) dropSessions(id string) {
	for s, rid := range a.sessions {
		if rid == id {
			delete(a.sessions, s)
		}
	}
}

func (a *runsActor) publish() {
	d := &runIndexData{runs: make(map[string]RunEntry, len(a.runs)), sessions: make(map[string]string, len(a.sessions))}
	for id, r := range a.runs {
		d.runs[id] = RunEntry{ID: id, PID: r.pid, Parent: r.parent, flags: r.flags, pending: r.pending}
	}
	for s, id := range a.sessions {
		d.sessions[s] = id
	}
	a.cfg.Index.p.Store(d)
}

func storedSpans(store *persistence.Store, id string) ([]messages.RunSpan, error) {
	var out []messages.RunSpan
	err := store.Scan(persistence.RunSpanPrefix(id), func(_ []byte, decode func(any) error) error {
		var s messages.RunSpan
		if err := decode(&s); err != nil {
			return nil // an unreadable span is skipped, not fatal
		}
		out = append(out, s)
		return nil
	})
	return out, err
}
