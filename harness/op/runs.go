package op

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/messages"
)

type callerKey struct{}

// WithCaller returns ctx carrying who makes the calls made with it: the
// run (explicit run_id), the MCP session and its client. A call with a
// session but no run belongs to the session's implicit run.
func WithCaller(ctx context.Context, c messages.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries.
func CallerFrom(ctx context.Context) (messages.Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(messages.Caller)
	return c, ok
}

// SpanNoter is a result that adds what it knows to its span: the job or
// check it started, how many bytes of output it returned.
type SpanNoter interface{ NoteSpan(s *messages.RunSpan) }

// runIDOf returns the run_id field of raw arguments, reading them only when
// the key appears.
func runIDOf(raw json.RawMessage) string {
	if !mayHaveRunID(raw) {
		return ""
	}
	var probe struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(raw, &probe)
	return probe.RunID
}

// mayHaveRunID is the cheap test before parsing: the key spelled plainly,
// or any escape (JSON may spell the key with \u escapes).
func mayHaveRunID(raw json.RawMessage) bool {
	return bytes.Contains(raw, []byte(`"run_id"`)) || bytes.Contains(raw, []byte(`\u`))
}

// stripRunID removes the run_id every operation accepts from raw before the
// strict decode of an input type that has no such field.
func stripRunID(raw json.RawMessage) json.RawMessage {
	if !mayHaveRunID(raw) {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m["run_id"]; !ok {
		return raw
	}
	delete(m, "run_id")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// spanIDs makes span ids cheaply: a random prefix per process and a
// counter (a span id must be unique, not secret).
type spanIDs struct {
	prefix string
	n      atomic.Uint64
}

func newSpanIDs() *spanIDs {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &spanIDs{prefix: "sp_" + hex.EncodeToString(b[:])}
}

func (g *spanIDs) next() string {
	return g.prefix + strconv.FormatUint(g.n.Add(1), 36)
}

// callRun is the run a call belongs to and the span it records.
type callRun struct {
	entry  runtime.RunEntry
	spanID string
	parent string
	start  time.Time
	drawn  runs.Draw
}

// joinRun resolves the run of the call from ctx (run_id of the arguments
// first) and opens its span. A call outside any run records nothing.
//
// While the run has an open retry streak (or a failed call on its way to
// it), the run is asked whether this call is a retry past its bound
// (RETRY_LIMIT, recorded as the call's span); else a call pays nothing
// for the retry rule but two atomic loads. raw is the call's arguments,
// marshalled from in when the check needs them (and kept for the span).
func (p *Pipeline) joinRun(ctx context.Context, c *Call, runID string, in any, raw *json.RawMessage) error {
	if p.env.Runs == nil || c.Op.noRun {
		return nil
	}
	who, ok := CallerFrom(ctx)
	if runID != "" {
		who.RunID, ok = runID, true
	}
	if !ok {
		return nil
	}
	e, ok, err := p.env.Runs.Resolve(ctx, who)
	if err != nil || !ok {
		return err
	}
	who.RunID = e.ID
	c.Caller = who
	run := &callRun{entry: e, spanID: p.ids.next(), start: c.trace.start}
	if watch := e.RetryWatch(); watch || e.OutputSpent() {
		name, input := "", json.RawMessage(nil)
		if watch {
			if *raw == nil {
				*raw, _ = json.Marshal(in)
			}
			name, input = c.Op.Name, *raw
		}
		if err := p.env.Runs.CheckRetry(ctx, e, name, input); err != nil {
			if errs.CodeOf(err) != errs.RetryLimit {
				return err
			}
			c.run = run
			if !p.ledgerAnswers(c.Op, in) {
				return err
			}
		}
	}
	c.run = run
	return nil
}

// ledgerAnswers reports whether the request ledger, not a new attempt,
// answers the call: its request_id is executing (REQUEST_IN_PROGRESS),
// succeeded (a replay) or of unknown outcome for the same operation. A
// retry past the run's bound is let through then, as it runs nothing
// again: a client polling its own write is never refused RETRY_LIMIT,
// and finds the result once the write lands. A request_id whose attempt
// failed runs again, so the bound holds for it.
func (p *Pipeline) ledgerAnswers(o *Op, in any) bool {
	id := requestIDOf(in)
	if id == "" {
		return false
	}
	e, ok := p.durableEntry(id)
	return ok && e.Operation == o.Name && e.State != ledger.StateFailed
}

// requestIDOf returns the request_id of an operation's input: its
// RequestID string field, "" without one.
func requestIDOf(in any) string {
	v := reflect.ValueOf(in)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName("RequestID")
	if !f.IsValid() || f.Kind() != reflect.String {
		return ""
	}
	return f.String()
}

// suggestEscalation adds suggested_escalation to the error of a call whose
// route needs a higher tier than its run is declared for: the
// run_escalate that would say so. The code stays.
func (c *Call) suggestEscalation(err error) error {
	if c.run == nil {
		return err
	}
	from := c.run.entry.Tier()
	need := runs.EscalationNeeded(from, c.tier(err))
	if need == "" {
		return err
	}
	e := errs.From(err)
	if _, ok := e.Details["suggested_escalation"]; ok {
		return err
	}
	return e.With("suggested_escalation", runs.Suggestion(c.run.entry.ID, from, need, c.Op.Name))
}

// tier is the route policy's tier of the call: the gate's decision, or
// the route decision a refusal before the gate carries (a batch's).
func (c *Call) tier(err error) string {
	if t := c.gated.Decision.Tier; t != "" {
		return string(t)
	}
	if err == nil {
		return ""
	}
	d := errs.From(err).Details
	for _, k := range [...]string{"batch_decision", "decision"} {
		if rd, ok := d[k].(route.Decision); ok {
			return string(rd.Tier)
		}
	}
	return ""
}

// draw is what the call takes from its run's budget before it executes.
func (c *Call) draw(plan *Plan) runs.Draw {
	d := c.Op.draw
	if plan.Write != nil && d.Mutations == 0 {
		d.Mutations = 1
	}
	for _, s := range plan.Steps {
		sd := s.Call.draw(s.Plan)
		d.Commands += sd.Commands
		d.Mutations += sd.Mutations
		d.Jobs += sd.Jobs
	}
	return d
}

// charge draws the call's budget from its run.
func (c *Call) charge(ctx context.Context, plan *Plan) error {
	if c.run == nil {
		return nil
	}
	d := c.draw(plan)
	if d.Zero() {
		return nil
	}
	if err := c.Env.Runs.Charge(ctx, c.run.entry, d); err != nil {
		return err
	}
	c.run.drawn = d
	return nil
}

// chargeApproval counts an approval request against the run's budget; past
// the limit the request is denied at once and the call answers
// BUDGET_EXCEEDED instead of APPROVAL_REQUIRED.
func (c *Call) chargeApproval(ctx context.Context, gerr error) error {
	if c.run == nil || errs.CodeOf(gerr) != errs.ApprovalRequired {
		return gerr
	}
	err := c.Env.Runs.Charge(ctx, c.run.entry, runs.Draw{Approvals: 1})
	if err == nil {
		return gerr
	}
	if id, _ := errs.From(gerr).Details["approval_id"].(string); id != "" {
		_, _ = c.Env.Gov.DecideApproval(id, false, "harnessd", "the run's approval budget is used up")
	}
	return err
}

// record sends the call's span to its run.
func (c *Call) record(raw json.RawMessage, out any, err error, lat *Latency) {
	r := c.run
	if r == nil {
		return
	}
	s := messages.RunSpan{
		SpanID: r.spanID, ParentID: r.parent, Kind: messages.SpanOperation, Op: c.Op.Name, Input: raw,
		Route: c.route, Tier: c.tier(err), Decision: string(c.gated.Decision.Outcome), Outcome: "ok", Start: r.start,
		ReadOnly: c.Op.ReadOnly && c.receipt == nil, Session: c.Caller.Session, Client: c.Caller.Client,
	}
	if lat != nil {
		s.DurationMs = lat.TotalMs
		s.Segments = lat.segments()
	} else {
		s.DurationMs = Ms(time.Since(r.start))
	}
	if s.Segments == nil && !s.ReadOnly {
		s.Segments = c.trace.segments()
	}
	if c.receipt != nil {
		s.ReceiptID = c.receipt.ReceiptID
	}
	s.RepoID = c.Repo.Repo.ID
	if err != nil {
		e := errs.From(err)
		s.Outcome, s.ErrorCode = "error", string(e.Code)
		if id, ok := e.Details["approval_id"].(string); ok {
			s.ApprovalID = id
		}
		if s.Decision == "" && e.Code == errs.ApprovalRequired {
			s.Decision = "ask"
		}
	} else if n, ok := out.(SpanNoter); ok {
		n.NoteSpan(&s)
	}
	c.Env.Runs.Record(r.entry, s)
}

// segments returns the time charged to each segment so far, in ms.
func (t *Trace) segments() map[string]float64 {
	m := make(map[string]float64, numSegments)
	for i, d := range t.segs {
		if d > 0 {
			m[Segment(i).String()] = Ms(d)
		}
	}
	return m
}

// segments returns the latency breakdown as a map (nil without one).
func (l Latency) segments() map[string]float64 {
	if l.ExecutionMs == nil {
		return nil
	}
	m := make(map[string]float64, int(numSegments))
	for i, v := range [numSegments]*float64{l.RoutingMs, l.PolicyMs, l.SnapshotMs, l.ExecutionMs, l.ReceiptMs, l.SandboxMs} {
		if v != nil && *v > 0 {
			m[Segment(i).String()] = *v
		}
	}
	return m
}
