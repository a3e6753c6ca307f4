package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/messages"
)

// read_lanes limits.
const (
	maxLanes       = 16
	lanesTimeout   = 45 * time.Second
	lanesReplySlop = 2 * time.Second
)

// ReadLanesArgs are the arguments of read_lanes.
type ReadLanesArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"from repository_list"`
	Lanes                   []Step `json:"lanes" jsonschema:"1 to 16 read-only steps (run_command: read-only commands only)"`
	MaxConcurrency          int    `json:"max_concurrency,omitempty" jsonschema:"steps at once, 1 to 4 (default 4)"`
	FailFast                bool   `json:"fail_fast,omitempty" jsonschema:"cancel the rest at the first failure"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
	op.Approval
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
	op.Meta
}

func prepareLanes(ctx context.Context, c *op.Call, args ReadLanesArgs) (*op.Plan, error) {
	switch {
	case len(args.Lanes) == 0:
		return nil, errs.New(errs.InvalidArgument, "lanes is empty: nothing to run")
	case len(args.Lanes) > maxLanes:
		return nil, errs.New(errs.InvalidArgument, "%d lanes: at most %d", len(args.Lanes), maxLanes)
	case args.MaxConcurrency < 0 || args.MaxConcurrency > actors.NumLanes:
		return nil, errs.New(errs.InvalidArgument, "max_concurrency must be between 1 and %d", actors.NumLanes)
	}
	kinds := stepKinds(c)
	for i, s := range args.Lanes {
		if !contains(kinds, s.Kind) {
			return nil, stepErr(errs.New(errs.InvalidArgument, "read_lanes runs only read-only steps: %s (got %q)", strings.Join(kinds, ", "), s.Kind), i, s.Kind)
		}
	}
	steps, err := prepareSteps(ctx, c, args.Lanes, kinds)
	if err != nil {
		return nil, err
	}
	if _, err := routeSteps("read_lanes", steps); err != nil {
		return nil, err
	}
	conc := args.MaxConcurrency
	if conc == 0 {
		conc = actors.NumLanes
	}
	return &op.Plan{Gate: gateInput(args, nil, steps), Steps: steps, Breakdown: args.IncludeLatencyBreakdown,
		Run: func(ctx context.Context) (any, error) {
			out := runLanes(ctx, c, steps, conc, args.FailFast)
			c.FinishIn(op.SegReceipt)
			return out, nil
		}}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// runLanes hands the gated steps to the lanes as data (op.Pipeline.LaneStep:
// name, arguments and the gate's answer, sealed) and collects their answers
// in input order.
func runLanes(ctx context.Context, c *op.Call, steps []*op.Step, conc int, failFast bool) *ReadLanesResult {
	pipe, lanes := c.Pipeline(), c.Env.RT.Lanes
	group, first := newGroup()
	deadline := time.Now().Add(lanesTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	type answer struct {
		index int
		done  messages.LaneDone
		err   error
	}
	answers := make(chan answer, len(steps))
	wait := time.Until(deadline) + lanesReplySlop
	for i, s := range steps {
		stepEnd := deadline.Add(-lanesReplySlop / 2)
		if d := stepDeadline(ctx, s); time.Now().Add(d).Before(stepEnd) {
			stepEnd = time.Now().Add(d)
		}
		msg, err := pipe.LaneStep(c, group, s, stepEnd)
		if err != nil {
			answers <- answer{index: i, err: err}
			continue
		}
		await := lanes.Submit((first+i%conc)%actors.NumLanes, msg, wait)
		go func() {
			d, err := await()
			answers <- answer{index: i, done: d, err: err}
		}()
	}
	cancelled := false
	cancel := func(why string) {
		if !cancelled {
			cancelled = true
			lanes.Cancel(group, why)
		}
	}
	out := &ReadLanesResult{OK: true, Lanes: make([]LaneResult, len(steps))}
	for range steps {
		var a answer
		select {
		case a = <-answers:
		case <-ctx.Done():
			cancel("the caller went away")
			a = <-answers
		}
		r := laneResult(a.index, steps[a.index].Kind, a.done, a.err)
		if !r.OK {
			out.OK = false
			if failFast {
				cancel("fail_fast: step " + strconv.Itoa(r.Index) + " (" + r.Kind + ") failed")
			}
		}
		out.StepsMs += r.DurationMs
		out.Lanes[a.index] = r
	}
	c.Mark(op.SegExecution)
	out.WallMs, out.MaxOverlap = laneSpan(out.Lanes)
	out.Concurrent = out.MaxOverlap > 1
	return out
}

func laneResult(index int, kind string, m messages.LaneDone, err error) LaneResult {
	r := LaneResult{Index: index, Kind: kind}
	if err != nil {
		r.Status, r.Error = "failed", errs.From(errs.Wrap(errs.CodeOf(err), err, "lane did not answer: %v", errs.From(err).Message))
		return r
	}
	r.Lane, r.QueuedMs = m.Lane, op.Ms(m.Queued)
	if !m.StartedAt.IsZero() {
		st, fin := m.StartedAt.UTC(), m.FinishedAt.UTC()
		r.StartedAt, r.FinishedAt = &st, &fin
		r.DurationMs = op.Ms(m.FinishedAt.Sub(m.StartedAt))
	}
	switch {
	case m.Skipped:
		r.Status, r.Error = "skipped", errs.From(actors.ErrorOf(*m.Failure))
	case m.Failure != nil:
		r.Status, r.Error = "failed", errs.From(actors.ErrorOf(*m.Failure))
	default:
		r.OK, r.Status, r.Result = true, "ok", m.Result
	}
	return r
}

// newGroup returns a fresh group id and, from the same random bits, the
// lane its first step goes to: concurrent calls spread over the lanes
// without shared state.
func newGroup() (string, int) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "lanes_" + hex.EncodeToString(b[:]), int(b[0])
}

// LaneRunner returns the runner of the lanes: it runs the step a lane was
// handed, as data, through p's registry with the gate's answer it carries
// (op.Pipeline.RunLaneStep).
func LaneRunner(p *op.Pipeline) actors.LaneRunner { return p.RunLaneStep }

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
	sort.SliceStable(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta
		}
		return edges[i].at.Before(edges[j].at)
	})
	cur := 0
	for _, e := range edges {
		cur += e.delta
		maxOverlap = max(maxOverlap, cur)
	}
	return op.Ms(hi.Sub(lo)), maxOverlap
}
