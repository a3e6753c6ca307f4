package harness

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/supervisors"
)

func init() {
	registerOps(func() []Op {
		return []Op{
			def("read_lanes", "Run up to 16 read-only steps (search, read_file, git_status, git_diff, readonly run_command) at once on up to 4 lanes. Every step is checked before any runs; results come back in input order with each lane's start and finish, and whether they overlapped.", true, (*Harness).ReadLanes),
		}
	})
	onOpen(func(ctx context.Context, h *Harness) error {
		// The lanes supervisor spawns its lanes in Started: once each lane
		// answers, steps can be sent to it without racing its spawn.
		if _, err := request[messages.Pong](ctx, h, h.child(supervisors.LanesName), messages.Ping{}); err != nil {
			return err
		}
		for i := range actors.NumLanes {
			if _, err := request[messages.Pong](ctx, h, supervisors.LanePID(h.root, i), messages.Ping{}); err != nil {
				return err
			}
		}
		return nil
	})
	onStatus(func(ctx context.Context, h *Harness, st *StatusResult) {
		lanes := make([]messages.LaneStatusReply, 0, actors.NumLanes)
		for i := range actors.NumLanes {
			r, err := request[messages.LaneStatusReply](ctx, h, supervisors.LanePID(h.root, i), messages.LaneStatus{})
			if err != nil {
				r = messages.LaneStatusReply{Lane: actors.LaneName(i)}
			}
			lanes = append(lanes, r)
		}
		if st.Extra == nil {
			st.Extra = map[string]any{}
		}
		st.Extra["lanes"] = lanes
	})
}

// read_lanes limits.
const (
	maxLanes       = 16
	lanesTimeout   = 45 * time.Second
	lanesReplySlop = 2 * time.Second
)

// laneRR spreads the lanes of concurrent read_lanes calls over the lanes.
var laneRR atomic.Uint32

// ReadLanesArgs are the arguments of read_lanes.
type ReadLanesArgs struct {
	RepoID                  string      `json:"repo_id" jsonschema:"repository id from repository_register"`
	Lanes                   []BatchStep `json:"lanes" jsonschema:"1 to 16 read-only steps: search, read_file, git_status, git_diff, run_command (readonly commands only)"`
	MaxConcurrency          int         `json:"max_concurrency,omitempty" jsonschema:"steps running at once, 1 to 4 (default 4)"`
	FailFast                bool        `json:"fail_fast,omitempty" jsonschema:"cancel the remaining steps at the first failure"`
	IncludeLatencyBreakdown bool        `json:"include_latency_breakdown,omitempty"`
}

// LaneResult is the outcome of one step of read_lanes.
type LaneResult struct {
	Index      int             `json:"index"`
	Kind       string          `json:"kind"`
	Lane       string          `json:"lane,omitempty"`
	OK         bool            `json:"ok"`
	Status     string          `json:"status" jsonschema:"ok, failed or skipped"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *errs.Error     `json:"error,omitempty"`
	StartedAt  *time.Time      `json:"started_at,omitempty"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	QueuedMs   float64         `json:"queued_ms"`
	DurationMs float64         `json:"duration_ms"`
}

// ReadLanesResult is the result of read_lanes.
type ReadLanesResult struct {
	OK    bool         `json:"ok"`
	Lanes []LaneResult `json:"lanes"`
	// Concurrent is true when at least two steps ran at the same time;
	// MaxOverlap is the most that did.
	Concurrent bool `json:"concurrent"`
	MaxOverlap int  `json:"max_overlap"`
	// WallMs is the time from the first start to the last finish; StepsMs
	// the sum of the steps' durations (StepsMs > WallMs when they overlapped).
	WallMs  float64 `json:"wall_ms"`
	StepsMs float64 `json:"steps_ms"`
	Meta
}

// ReadLanes runs read-only steps concurrently on the lane actors.
func (h *Harness) ReadLanes(ctx context.Context, args ReadLanesArgs) (*ReadLanesResult, error) {
	e, tr, done, err := h.begin(args.RepoID)
	if err != nil {
		return nil, err
	}
	defer done()
	switch {
	case len(args.Lanes) == 0:
		return nil, errs.New(errs.InvalidArgument, "lanes is empty: nothing to run")
	case len(args.Lanes) > maxLanes:
		return nil, errs.New(errs.InvalidArgument, "%d lanes: at most %d", len(args.Lanes), maxLanes)
	case args.MaxConcurrency < 0 || args.MaxConcurrency > actors.NumLanes:
		return nil, errs.New(errs.InvalidArgument, "max_concurrency must be between 1 and %d", actors.NumLanes)
	}
	conc := args.MaxConcurrency
	if conc == 0 {
		conc = actors.NumLanes
	}
	root, err := h.fast.root(e)
	if err != nil {
		return nil, err
	}
	steps := make([]preparedStep, len(args.Lanes))
	for i, s := range args.Lanes {
		if !readKinds[s.Kind] {
			return nil, stepErr(errs.New(errs.InvalidArgument, "read_lanes runs only read-only steps: search, read_file, git_status, git_diff, run_command (got %q)", s.Kind), i, s.Kind)
		}
		if steps[i], err = h.prepareStep(ctx, e, root, i, s); err != nil {
			return nil, stepErr(err, i, s.Kind)
		}
	}
	if _, err := routeSteps("read_lanes", steps); err != nil {
		return nil, err
	}
	tr.mark(segRouting)
	if _, err := h.gate(ctx, gateInput{Tool: "read_lanes", Repo: &e, Root: root, Args: args}); err != nil {
		return nil, err
	}
	for _, s := range steps {
		if _, err := h.gate(ctx, s.gate); err != nil {
			return nil, stepErr(err, s.index, s.kind)
		}
	}
	tr.mark(segPolicy)

	lctx, cancel := context.WithTimeoutCause(ctx, lanesTimeout, errs.New(errs.Timeout, "read_lanes ran out of time (%s)", lanesTimeout))
	defer cancel()
	fctx, failFast := context.WithCancelCause(lctx)
	defer failFast(nil)
	type answer struct {
		index int
		reply any
		err   error
	}
	answers := make(chan answer, len(steps))
	first := int(laneRR.Add(1))
	wait := lanesTimeout + lanesReplySlop
	for i, s := range steps {
		pid := supervisors.LanePID(h.root, (first+i%conc)%actors.NumLanes)
		run, own := s.run, s.ownMs
		msg := messages.LaneRun{Ctx: fctx, Index: i, Kind: s.kind, Run: func(ctx context.Context) (any, error) {
			sctx, cancel := context.WithTimeout(ctx, stepDeadline(ctx, own))
			defer cancel()
			return run(sctx)
		}}
		f := h.system.Root.RequestFuture(pid, msg, wait)
		go func() {
			r, err := f.Result()
			answers <- answer{index: i, reply: r, err: err}
		}()
	}
	out := &ReadLanesResult{OK: true, Lanes: make([]LaneResult, len(steps))}
	for range steps {
		a := <-answers
		r := LaneResult{Index: a.index, Kind: steps[a.index].kind}
		switch m := a.reply.(type) {
		case messages.LaneDone:
			r.Lane, r.QueuedMs = m.Lane, ms(m.Queued)
			if !m.StartedAt.IsZero() {
				st, fin := m.StartedAt.UTC(), m.FinishedAt.UTC()
				r.StartedAt, r.FinishedAt = &st, &fin
				r.DurationMs = ms(m.FinishedAt.Sub(m.StartedAt))
			}
			switch {
			case m.Skipped:
				r.Status, r.Error = "skipped", errs.From(m.Err)
			case m.Err != nil:
				r.Status, r.Error = "failed", errs.From(m.Err)
			default:
				b, err := json.Marshal(m.Result)
				if err != nil {
					r.Status, r.Error = "failed", errs.New(errs.Internal, "encode step result: %v", err)
				} else {
					r.OK, r.Status, r.Result = true, "ok", b
				}
			}
		case messages.Failed:
			r.Status, r.Error = "failed", errs.From(m.Err)
		default:
			err := a.err
			if err == nil {
				err = errs.New(errs.Internal, "lane answered %T", a.reply)
			}
			r.Status, r.Error = "failed", errs.From(errs.Wrap(errs.Unavailable, err, "lane did not answer: %v", err))
		}
		if !r.OK {
			out.OK = false
			if args.FailFast {
				failFast(errs.New(errs.Cancelled, "fail_fast: step %d (%s) failed", r.Index, r.Kind))
			}
		}
		out.StepsMs += r.DurationMs
		out.Lanes[a.index] = r
	}
	tr.mark(segExecution)
	out.WallMs, out.MaxOverlap = laneSpan(out.Lanes)
	out.Concurrent = out.MaxOverlap > 1
	out.Meta = Meta{Route: "fast", Latency: tr.finish(segReceipt, args.IncludeLatencyBreakdown)}
	return out, nil
}

// laneSpan returns the time from the first start to the last finish and
// the largest number of steps running at one instant.
func laneSpan(lanes []LaneResult) (wallMs float64, maxOverlap int) {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	var lo, hi time.Time
	for _, l := range lanes {
		if l.StartedAt == nil || l.FinishedAt == nil {
			continue
		}
		edges = append(edges, edge{*l.StartedAt, 1}, edge{*l.FinishedAt, -1})
		if lo.IsZero() || l.StartedAt.Before(lo) {
			lo = *l.StartedAt
		}
		if l.FinishedAt.After(hi) {
			hi = *l.FinishedAt
		}
	}
	if len(edges) == 0 {
		return 0, 0
	}
	// Ends sort before starts at the same instant: touching is not overlap.
	sortEdges := func(a, b edge) bool {
		if a.at.Equal(b.at) {
			return a.delta < b.delta
		}
		return a.at.Before(b.at)
	}
	for i := 1; i < len(edges); i++ {
		for j := i; j > 0 && sortEdges(edges[j], edges[j-1]); j-- {
			edges[j], edges[j-1] = edges[j-1], edges[j]
		}
	}
	cur := 0
	for _, e := range edges {
		cur += e.delta
		maxOverlap = max(maxOverlap, cur)
	}
	return ms(hi.Sub(lo)), maxOverlap
}
