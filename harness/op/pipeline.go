package op

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Pipeline is the one path every surface (MCP, HTTP, CLI, the embedding
// facade, batch steps and lanes) runs an operation through:
//
//	decode -> resolve repository -> prepare -> gate (once) -> execute -> trace, receipt
//
// Decoding is strict (the JSON surfaces; the facade passes typed input).
// Prepare validates and plans without changing anything. The gate sees the
// plan and decides once, for the operation and each of its steps. Execution
// runs the plan's Run, or its Write through the mutation engine (request
// ledger, lease, fenced write, receipt). The trace charges every moment to
// one latency segment; a kept receipt is stored by the write, with its
// audit entry and ledger completion.
type Pipeline struct {
	reg *Registry
	env *Env

	closed   atomic.Bool
	inflight sync.WaitGroup
	enterMu  sync.Mutex // orders Enter's Add before Close's Wait (WaitGroup's rule)

	// lanes seals the steps handed to lanes (LaneStep, RunLaneStep).
	lanes *laneSealer

	ids *spanIDs

	// replays are the operations a retry of a request that succeeded is
	// answered for before they prepare (replayable).
	replays map[*Op]bool
}

// NewPipeline returns the pipeline of reg's operations over env.
func NewPipeline(reg *Registry, env *Env) *Pipeline {
	p := &Pipeline{reg: reg, env: env, lanes: newLaneSealer(), ids: newSpanIDs(), replays: map[*Op]bool{}}
	all := reg.All()
	for i := range all {
		if o := &all[i]; replayable(o) {
			p.replays[o] = true
		}
	}
	return p
}

// Registry returns the operations.
func (p *Pipeline) Registry() *Registry { return p.reg }

// Env returns the environment operations run with.
func (p *Pipeline) Env() *Env { return p.env }

// Enter marks work in flight (an operation, or a facade method that is not
// one); it fails with UNAVAILABLE once Close has begun. Call the returned
// function when the work ends.
func (p *Pipeline) Enter() (func(), error) {
	p.enterMu.Lock()
	defer p.enterMu.Unlock()
	if p.closed.Load() {
		return nil, errs.New(errs.Unavailable, "harness is shutting down")
	}
	p.inflight.Add(1)
	return p.inflight.Done, nil
}

// Close stops accepting work and waits, up to ctx, for what is in flight.
// It reports whether everything ended.
func (p *Pipeline) Close(ctx context.Context) bool {
	p.enterMu.Lock()
	p.closed.Store(true)
	p.enterMu.Unlock()
	done := make(chan struct{})
	go func() { p.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Closed reports whether Close has begun.
func (p *Pipeline) Closed() bool { return p.closed.Load() }

// Call runs the named operation with raw JSON arguments. The facade runs
// its typed input through a Handle instead (handle.go).
func (p *Pipeline) Call(ctx context.Context, name string, raw json.RawMessage) (any, error) {
	o, ok := p.reg.Lookup(name)
	if !ok {
		return nil, errs.New(errs.NotFound, "unknown operation %q (see the tool list, or harness ops)", name).With("operation", name)
	}
	in, raw, err := o.decodeCall(raw) // raw with its field aliases rewritten
	if err != nil {
		return nil, err
	}
	return p.run(ctx, o, in, raw, runIDOf(raw))
}

// run runs the pipeline; an error's message and string details pass the
// redactor (the rules and the repository's known secret values) on the
// way out, like every other output.
//
// A call in a run (run_id, or the implicit run of its MCP session) records
// a span in it once it ends, and draws on the run's budget before it
// executes.
func (p *Pipeline) run(ctx context.Context, o *Op, in any, raw json.RawMessage, runID string) (any, error) {
	tr := StartTrace()
	c := &Call{Env: p.env, Op: o, pipe: p, trace: &tr, route: "fast", final: SegExecution}
	if err := c.checkRole(ctx, o); err != nil { // the caller's role, before anything runs (role.go)
		return nil, err
	}
	if err := p.joinRun(ctx, c, runID, in, &raw); err != nil {
		if errs.CodeOf(err) == errs.RunEnded {
			// Replay before validation: a write that succeeded answers its
			// recorded result although its run has ended since.
			if out, done, _ := p.retried(c, in); done {
				return out, nil
			}
		}
		err = c.redactError(ctx, err)
		if c.run != nil { // a retry past the run's bound: the refusal is a span
			c.record(raw, nil, err, nil)
		}
		return nil, err
	}
	out, err := p.runCall(ctx, c, in)
	if err != nil {
		err = c.suggestEscalation(c.redactError(ctx, err))
	}
	if c.run != nil {
		if raw == nil {
			raw, _ = json.Marshal(in)
		}
		c.record(raw, out, err, c.lat)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// redactError returns err with secrets in its message and string details
// redacted.
func (c *Call) redactError(ctx context.Context, err error) error {
	red := c.Env.Redactor
	if c.HasRepo() {
		red = c.Env.RedactorFor(ctx, c.Repo.Repo.Root)
	}
	if red == nil {
		return err
	}
	e := errs.From(err)
	msg, n := red.String(e.Message)
	var details map[string]any
	for k, v := range e.Details {
		if sv, ok := v.(string); ok {
			if r, m := red.String(sv); m > 0 {
				if details == nil {
					details = make(map[string]any, len(e.Details))
					for k2, v2 := range e.Details {
						details[k2] = v2
					}
				}
				details[k] = r
				n += m
			}
		}
	}
	if n == 0 {
		return err
	}
	out := *e
	out.Message = msg
	if details != nil {
		out.Details = details
	}
	return &out
}

func (p *Pipeline) runCall(ctx context.Context, c *Call, in any) (any, error) {
	o := c.Op
	leave, err := p.Enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	ctx = withSecretMemo(ctx) // one revalidation of the secrets per call
	tr := c.trace
	if o.repoOf != nil {
		if err := c.resolve(o.repoOf(in)); err != nil {
			return nil, err
		}
	}
	if out, done, err := p.retried(c, in); err != nil || done {
		if done {
			lat := tr.Finish(SegSnapshot, false)
			c.lat = &lat
			if m, ok := out.(metaSetter); ok {
				m.SetMeta(Meta{Route: c.route, Latency: lat})
			}
		}
		return out, err
	}
	c.in = in
	plan, err := o.prepare(ctx, c, in)
	if err != nil {
		return nil, err
	}
	c.Mark(SegRouting)
	plan.Gate = bindInput(o, plan.Gate, in)
	gin := c.gateInput(plan.Gate)
	for _, s := range plan.Steps {
		gin.Steps = append(gin.Steps, s.GateInput())
	}
	res, gerr := p.env.Gov.Gate(ctx, gin)
	c.gated = res
	if gerr != nil {
		return nil, c.chargeApproval(ctx, gerr)
	}
	if err := admitSteps(plan.Steps, res); err != nil {
		return nil, err
	}
	if err := c.charge(ctx, plan); err != nil {
		return nil, err
	}
	c.Mark(SegPolicy)
	out, err := c.execute(ctx, plan)
	if err != nil {
		return nil, err
	}
	if v := reflect.ValueOf(out); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return nil, errs.New(errs.Internal, "%s returned no result", o.Name)
	}
	lat := tr.Finish(c.final, plan.Breakdown)
	c.lat = &lat
	if c.receipt != nil {
		// Stored by Write, in the commit of its audit entry and ledger
		// completion: the answer's latency is the whole call's.
		c.receipt.LatencyMs = lat.TotalMs
	}
	if m, ok := out.(metaSetter); ok {
		m.SetMeta(Meta{Route: c.route, Latency: lat})
	}
	return out, nil
}

// Call is one operation in flight: what the pipeline resolved for it and
// what its stages record.
type Call struct {
	Env *Env
	Op  *Op
	// Repo and Root are the resolved repository (operations with a Repo).
	Repo runtime.RepoEntry
	Root *pathsafe.Root
	// InBatch is set for a step of a batch or read_lanes: it was prepared
	// before the steps ahead of it ran.
	InBatch bool
	// Caller is who made the call (its run, session and client).
	Caller messages.Caller

	pipe    *Pipeline
	trace   *Trace
	gated   govern.Result
	route   string
	final   Segment
	receipt *Receipt
	run     *callRun
	lat     *Latency
	in      any    // the decoded input (what a queued write stores, queued.go)
	job     string // the write job this call runs ("" = none)
}

func (c *Call) resolve(repoID string) error {
	r, err := c.Env.Repo(repoID)
	if err != nil {
		return err
	}
	// The root must still be the directory registered: a moved, deleted
	// or replaced root answers REPOSITORY_MOVED before anything runs (a
	// patch would recreate a deleted root; another repository at the
	// path would be served under this repo_id).
	if err := pathsafe.CheckIdentity(r.Repo.ID, r.Repo.Root, r.Repo.Identity); err != nil {
		c.Env.Forget(r.Repo.ID)
		return err
	}
	root, err := c.Env.Root(r)
	if err != nil {
		return err
	}
	c.Repo, c.Root = r, root
	return nil
}

// HasRepo reports whether the call resolved a repository.
func (c *Call) HasRepo() bool { return c.Root != nil }

// Mark charges the time since the previous mark to s.
func (c *Call) Mark(s Segment) { c.trace.Mark(s) }

// Move charges up to d of segment from to segment to.
func (c *Call) Move(from, to Segment, d time.Duration) { c.trace.Move(from, to, d) }

// FinishIn charges the time left after the operation returns to s (default
// Execution).
func (c *Call) FinishIn(s Segment) { c.final = s }

// SetRoute sets the route the result reports (default "fast").
func (c *Call) SetRoute(route string) { c.route = route }

// Refuse audits a refusal decided in Prepare (a path check of an argv, say)
// as the gate audits its own blocks, and returns err.
func (c *Call) Refuse(in govern.Input, err error) error {
	return c.Env.Gov.Refuse(c.gateInput(in), err)
}

// Gated returns what the gate decided.
func (c *Call) Gated() govern.Result { return c.gated }

// Pipeline returns the pipeline the call runs in.
func (c *Call) Pipeline() *Pipeline { return c.pipe }

// gateInput fills in what the gate needs from the call.
func (c *Call) gateInput(g govern.Input) govern.Input {
	if g.Tool == "" {
		g.Tool = c.Op.Name
	}
	c.Op.fillGate(&g) // its route class and hash fields, from its descriptor
	g.Caller = c.Caller
	if c.HasRepo() {
		repo := c.Repo.Repo
		g.Repo = &repo
		if g.Root == nil {
			g.Root = c.Root
		}
	}
	return g
}

func (c *Call) execute(ctx context.Context, plan *Plan) (any, error) {
	switch {
	case plan.Write != nil:
		return c.Write(ctx, *plan.Write)
	case plan.Run != nil:
		return plan.Run(ctx)
	}
	return nil, errs.New(errs.Internal, "%s planned nothing to run", c.Op.Name)
}

// admitSteps gives each step its gate answer, or returns the first refusal.
func admitSteps(steps []*Step, res govern.Result) error {
	for i, s := range steps {
		if i >= len(res.Steps) {
			return errs.New(errs.Internal, "the gate did not decide step %d", i)
		}
		if err := res.Steps[len(res.Steps)-len(steps)+i].Err; err != nil {
			return StepError(err, s.Index, s.Kind)
		}
	}
	for i, s := range steps {
		s.Call.gated = res.Steps[len(res.Steps)-len(steps)+i].Result
	}
	return nil
}

// StepError adds a step's index and kind to err.
func StepError(err error, i int, kind string) error {
	e := errs.From(err)
	out := *e
	out.Message = "step " + strconv.Itoa(i) + " (" + kind + "): " + e.Message
	return out.With("step", i).With("kind", kind)
}

// Step is one prepared step of a batch or read_lanes.
type Step struct {
	Index int
	Kind  string
	Raw   json.RawMessage
	Call  *Call
	Plan  *Plan
}

// PrepareStep decodes and prepares a step of parent's composite operation:
// the named operation in parent's repository. It gates nothing: the
// parent's gate input carries the step's (GateInput).
func (p *Pipeline) PrepareStep(ctx context.Context, parent *Call, index int, kind string, raw json.RawMessage) (*Step, error) {
	o, ok := p.reg.Lookup(kind)
	if !ok || !o.Agent {
		return nil, errs.New(errs.InvalidArgument, "unknown step kind %q", kind)
	}
	in, raw, err := o.decodeStep(raw)
	if err != nil {
		return nil, err
	}
	return p.prepareStep(ctx, parent, o, index, raw, in)
}

// prepareStep prepares step index of parent, operation o with input in
// decoded from raw.
func (p *Pipeline) prepareStep(ctx context.Context, parent *Call, o *Op, index int, raw json.RawMessage, in any) (*Step, error) {
	c := &Call{Env: p.env, Op: o, pipe: p, Repo: parent.Repo, Root: parent.Root, InBatch: true, route: "fast", final: SegExecution, Caller: parent.Caller}
	if err := c.checkRoleOf(o); err != nil { // each step's own roles (role.go)
		return nil, err
	}
	tr := StartTrace()
	c.trace = &tr
	if parent.run != nil {
		c.run = &callRun{entry: parent.run.entry, spanID: p.ids.next(), parent: parent.run.spanID}
	}
	plan, err := o.prepare(ctx, c, in)
	if err != nil {
		return nil, err
	}
	if plan.Write != nil && plan.Write.OnBusy != "" {
		return nil, errs.New(errs.InvalidArgument, "%s: on_busy applies to a write on its own, not a step of a batch (the batch waits with its wait_ms); remove it", o.Name).With("field", "on_busy")
	}
	plan.Gate = bindInput(o, plan.Gate, in)
	return &Step{Index: index, Kind: o.Name, Raw: raw, Call: c, Plan: plan}, nil
}

// bindInput gives the gate the operation's input: what an approval is
// bound to (its hash), and the approval the caller holds.
func bindInput(o *Op, g govern.Input, in any) govern.Input {
	if g.Args == nil {
		g.Args = in
	}
	if g.ApprovalID == "" {
		g.ApprovalID = o.approvalOf(in)
	}
	return g
}

// GateInput is the step's input to its parent's gate.
func (s *Step) GateInput() govern.Input { return s.Call.gateInput(s.Plan.Gate) }

// Run runs a read step whose gate its parent passed, with a trace of its
// own, and returns its result.
func (s *Step) Run(ctx context.Context) (any, error) {
	if s.Plan.Run == nil {
		return nil, errs.New(errs.Internal, "step %d (%s) is not a read", s.Index, s.Kind)
	}
	tr := StartTrace()
	s.Call.trace = &tr
	if s.Call.run != nil {
		s.Call.run.start = tr.start
	}
	out, err := s.Plan.Run(ctx)
	if err != nil {
		s.Call.record(s.Raw, nil, err, nil)
		return nil, err
	}
	lat := tr.Finish(s.Call.final, s.Plan.Breakdown)
	if m, ok := out.(metaSetter); ok {
		m.SetMeta(Meta{Route: s.Call.route, Latency: lat})
	}
	s.Call.record(s.Raw, out, nil, &lat)
	return out, nil
}

// NewCall returns a call in a repository for work an operation started
// that runs outside any request (an unfocused check's job). It crosses no
// gate: the operation that started the work did.
func (p *Pipeline) NewCall(repoID string) (*Call, error) {
	tr := StartTrace()
	c := &Call{Env: p.env, pipe: p, trace: &tr, route: "fast", final: SegExecution}
	if err := c.resolve(repoID); err != nil {
		return nil, err
	}
	return c, nil
}

// replayable reports whether a retry of o is answered from its ledger
// entry before o prepares: o takes a request_id and its result is a
// write's, with a replayed flag and its receipt (embedded: MutationResult,
// a target's MutationResult; or a Receipt pointer: batch,
// target_execute_command), which is what the write stores in its ledger
// completion, as it is (Call.Write and the targets' writes store the
// result they answer). job_start stores its job id only and replays
// through its own ledger begin.
func replayable(o *Op) bool {
	if o.inType == nil || o.outType == nil || o.ReadOnly {
		return false
	}
	in, out := o.inType, o.outType
	if in.Kind() != reflect.Struct || out.Kind() != reflect.Struct {
		return false
	}
	if id, ok := in.FieldByName("RequestID"); !ok || id.Type.Kind() != reflect.String {
		return false
	}
	if flag, ok := out.FieldByName("Replayed"); !ok || flag.Type.Kind() != reflect.Bool {
		return false
	}
	return hasReceiptID(out) || func() bool {
		rec, ok := out.FieldByName("Receipt")
		return ok && rec.Type.Kind() == reflect.Pointer && rec.Type.Elem().Kind() == reflect.Struct && hasReceiptID(rec.Type.Elem())
	}()
}

// hasReceiptID reports whether struct type t has a ReceiptID string field
// (its own or promoted).
func hasReceiptID(t reflect.Type) bool {
	f, ok := t.FieldByName("ReceiptID")
	return ok && f.Type.Kind() == reflect.String
}

// retried answers a retry from its request id's durable ledger entry,
// before the operation prepares: its validation reads the world as it is
// now, which the first attempt changed (target_move's source is gone, a
// reverted receipt was pruned, run_revert finds nothing left to revert),
// so it would refuse a retry whose answer is known. The entry must be the
// same operation's with the input hash of this call's input (the same
// fields left out as the write's own hash):
//   - succeeded: its recorded result, replayed: true (done);
//   - unknown (it was executing when harnessd stopped): the ledger
//     begin's answer, REQUEST_OUTCOME_UNKNOWN;
//   - anything else (no entry, another state, another input: a
//     conflict): nothing, and the write's ledger begin decides.
func (p *Pipeline) retried(c *Call, in any) (out any, done bool, err error) {
	o := c.Op
	if !p.replays[o] {
		return nil, false, nil
	}
	id := requestIDOf(in)
	if id == "" {
		return nil, false, nil
	}
	e, ok := p.durableEntry(id)
	if !ok || e.Operation != o.Name || (e.State != ledger.StateSucceeded && e.State != ledger.StateUnknown) {
		return nil, false, nil
	}
	hash, herr := c.InputHash(o.Name, in)
	if herr != nil || hash != e.InputHash {
		return nil, false, nil
	}
	if e.State == ledger.StateUnknown {
		_, _, err = ledger.Begin(&e, id, o.Name, hash, nil, p.env.Now())
		if err != nil && c.HasRepo() {
			err = withDigests(err, c.Repo)
		}
		return nil, false, err
	}
	v := reflect.New(o.outType)
	if err := json.Unmarshal(e.Result, v.Interface()); err != nil {
		return nil, false, nil
	}
	v.Elem().FieldByName("Replayed").SetBool(true)
	return v.Interface(), true, nil
}

// durableEntry reads request id's ledger entry from the store, not through
// the ledger actor: no mailbox round trip on the write path, and only what
// is durable (a transition the ledger staged but has not written yet is
// not there; the write's own ledger begin sees it).
func (p *Pipeline) durableEntry(id string) (ledger.Entry, bool) {
	if p.env.Store == nil || ledger.ValidateRequestID(id) != nil {
		return ledger.Entry{}, false
	}
	var e ledger.Entry
	if err := p.env.Store.Get(persistence.LedgerKey(id), &e); err != nil {
		return ledger.Entry{}, false
	}
	return e, true
}
