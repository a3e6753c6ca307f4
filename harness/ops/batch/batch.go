// Package batch holds batch (typed steps routed and gated as one call,
// writes under one lease and one request_id), batch_result and read_lanes
// (read-only steps on the lane actors at once), with the runner the lanes
// run admitted steps with.
//
// Steps are operations of the registry: a step is prepared by the
// operation's own Prepare (op.Pipeline.PrepareStep) and gated as a step of
// the batch, never on its own; no step kind is dispatched by hand.
package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops/command"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/route"
)

// Ops returns batch, batch_result and read_lanes.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[BatchArgs]{Name: "batch", Output: Result{}, Destructive: true,
			Route: route.Batch, Toolset: op.Git, Roles: op.WriteRoles, Topics: []string{"style", "test"}, ChangesCheckout: true, Composite: op.Composite{Field: "steps"}, HashIgnore: []string{"wait_ms"},
			Description: "Run up to 20 quick steps (read_file, search, git_status, git_diff, apply_patch, run_command, run_check, git_stage, git_commit) in order in one call when you know them all up front; " +
				"a step needing an earlier answer: separate calls. Nothing runs if a step would be refused. " +
				"Example: {\"request_id\":\"b1\",\"steps\":[{\"kind\":\"git_status\"},{\"kind\":\"git_diff\"}]}",
			Repo: func(a BatchArgs) string { return a.RepoID }, Prepare: prepareBatch}),
		op.Def(op.Spec[ResultArgs]{Name: "batch_result", Output: ResultResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Git, Roles: op.ReadRoles, NoRepo: true,
			Description: "Fetch a batch step's result given as result_ref because it was too large to inline; kept 10 minutes. " +
				"Small results are already in the batch's answer. " +
				"Example: {\"ref\":\"bres_1\"}",
			Prepare: batchResult}),
		op.Def(op.Spec[ReadLanesArgs]{Name: "read_lanes", Output: ReadLanesResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Git, Roles: op.ReadRoles, Composite: op.Composite{Field: "lanes", Lanes: true},
			Description: "Run up to 16 independent reads at once (search, read_file, git_status, git_diff, read-only run_command) when their answers don't depend on each other; results in input order. " +
				"Writes: batch. " +
				"Example: {\"lanes\":[{\"kind\":\"git_status\"},{\"kind\":\"read_file\",\"args\":{\"path\":\"go.mod\"}}]}",
			Repo: func(a ReadLanesArgs) string { return a.RepoID }, Prepare: prepareLanes}),
	}
}

// Batch limits.
const (
	batchTimeout     = 45 * time.Second
	batchStepTimeout = 15 * time.Second
	batchStepGrace   = 2 * time.Second // beyond a command's own timeout, so it can report
	batchInlineMax   = 64 << 10        // larger step results are returned by reference
)

// stepKinds are the operations the composite operation of c (batch, or
// read_lanes) runs as steps: those whose descriptor says BatchStep (or
// Lane), from the registry, which also gives the steps' kind its enum.
func stepKinds(c *op.Call) []string { return c.Pipeline().Registry().StepKinds(c.Op) }

// Step is one step of a batch or one lane of read_lanes.
type Step struct {
	Kind string         `json:"kind" jsonschema:"the tool to run"`
	Args map[string]any `json:"args,omitempty" jsonschema:"its own arguments, without repo_id and request_id"`
}

// BatchArgs are the arguments of batch.
type BatchArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"from repository_list"`
	Steps                   []Step `json:"steps" jsonschema:"1 to 20, run in order"`
	StopOnError             *bool  `json:"stop_on_error,omitempty" jsonschema:"skip the steps after a failed one (default true)"`
	Mode                    string `json:"mode,omitempty" enum:"auto,fast,durable" jsonschema:"auto (default) or fast; durable answers ROUTE_DURABLE_REQUIRED"`
	RequestID               string `json:"request_id,omitempty" jsonschema:"required when a step writes: unique per batch; a retry with it replays"`
	WaitMs                  int    `json:"wait_ms,omitempty" jsonschema:"wait up to this long for busy files instead of failing with MUTATION_BUSY (max 30000)"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// StepResult is the outcome of one step.
type StepResult struct {
	Index  int    `json:"index"`
	Kind   string `json:"kind"`
	OK     bool   `json:"ok"`
	Status string `json:"status" jsonschema:"ok, failed or skipped"`
	// Result is the step operation's result, unless it is larger than
	// 64 KiB: then ResultRef names it for batch_result.
	Result      json.RawMessage `json:"result,omitempty"`
	ResultRef   string          `json:"result_ref,omitempty"`
	ResultBytes int             `json:"result_bytes,omitempty"`
	Error       *errs.Error     `json:"error,omitempty"`
	DurationMs  float64         `json:"duration_ms"`
}

// Result is the result of batch.
type Result struct {
	BatchID string       `json:"batch_id"`
	OK      bool         `json:"ok" jsonschema:"every step ran and succeeded"`
	Steps   []StepResult `json:"steps"`
	// StoppedAt is the index of the failed step that stopped the batch.
	StoppedAt *int `json:"stopped_at,omitempty"`
	// Mutating is true when a step writes; Receipt then records the writes.
	Mutating bool `json:"mutating"`
	// NonAtomic is true when the batch commits: a commit is never undone,
	// so a later failure leaves the earlier steps' effects in place.
	NonAtomic bool           `json:"non_atomic"`
	Decision  route.Decision `json:"decision"`
	Receipt   *op.Receipt    `json:"receipt,omitempty"`
	// StepsMs is the sum of the steps' durations; Latency.TotalMs the wall time.
	StepsMs  float64  `json:"steps_ms"`
	Replayed bool     `json:"replayed"`
	Warnings []string `json:"warnings,omitempty"`
	op.Meta
}

// Warn adds a warning to the result.
func (r *Result) Warn(w string) { r.Warnings = append(r.Warnings, w) }

// MutationStepResult is the result of a mutating step inside a batch: what
// it changed (the batch's receipt covers all steps).
type MutationStepResult struct {
	Changes   []patch.Change `json:"changes"`
	Commit    string         `json:"commit,omitempty"`
	HeadAfter string         `json:"head_after,omitempty"`
}

func stepErr(err error, i int, kind string) error { return op.StepError(err, i, kind) }

// prepareSteps prepares each step in the call's repository: its args get
// the repository's repo_id and must not name another, nor a request_id.
func prepareSteps(ctx context.Context, c *op.Call, in []Step, kinds []string) ([]*op.Step, error) {
	steps := make([]*op.Step, len(in))
	for i, s := range in {
		if s.Kind == "" {
			return nil, stepErr(errs.New(errs.InvalidArgument, "kind is required"), i, s.Kind)
		}
		if !slices.Contains(kinds, s.Kind) {
			return nil, stepErr(errs.New(errs.InvalidArgument, "unknown step kind %q (one of %s)", s.Kind, strings.Join(kinds, ", ")), i, s.Kind)
		}
		args := make(map[string]any, len(s.Args)+1)
		for k, v := range s.Args {
			args[k] = v
		}
		if id, ok := args["repo_id"]; ok && id != c.Repo.Repo.ID {
			return nil, stepErr(errs.New(errs.InvalidArgument, "args.repo_id: leave it out, the step runs in the batch's repository"), i, s.Kind)
		}
		if _, ok := args["request_id"]; ok {
			return nil, stepErr(errs.New(errs.InvalidArgument, "args.request_id: leave it out, the batch's request_id covers every step"), i, s.Kind)
		}
		args["repo_id"] = c.Repo.Repo.ID
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, stepErr(errs.New(errs.InvalidArgument, "args cannot be encoded: %v", err), i, s.Kind)
		}
		st, err := c.Pipeline().PrepareStep(ctx, c, i, s.Kind, raw)
		if err != nil {
			return nil, stepErr(err, i, s.Kind)
		}
		steps[i] = st
	}
	return steps, nil
}

// routeOf is a step as the router sees it: its operation's route class.
func routeOf(s *op.Step) route.Request {
	g := s.Plan.Gate
	return route.Request{Tool: s.Kind, Kind: s.Call.Op.Route, Argv: g.Argv, TimeoutMs: g.TimeoutMs, Writes: s.Plan.Write != nil}
}

// routeSteps routes the steps as one batch. A non-fast decision becomes
// the coded error of its first offending step.
func routeSteps(tool string, steps []*op.Step) (route.Decision, error) {
	req := route.Request{Tool: "batch", Kind: route.Batch}
	for _, s := range steps {
		req.Steps = append(req.Steps, routeOf(s))
	}
	d := route.Decide(req)
	if d.Mode == route.Fast {
		return d, nil
	}
	for _, s := range steps {
		sd := route.Decide(routeOf(s))
		if sd.Mode == d.Mode {
			return d, stepErr(errs.From(op.RouteError(sd)).With("batch_decision", d), s.Index, s.Kind)
		}
	}
	return d, errs.From(op.RouteError(d)).With("operation", tool)
}

// gateInput is the gate input of a composite operation (its steps are the
// plan's Steps): a write when a step writes.
func gateInput(args any, dec *route.Decision, steps []*op.Step) govern.Input {
	in := govern.Input{Args: args, Route: dec}
	for _, s := range steps {
		if s.Plan.Write != nil {
			in.Writes = true
		}
	}
	return in
}

// stepDeadline returns the timeout of one step: its own (plus a grace for
// commands to report their timeout) capped at 15 s and the time left.
func stepDeadline(ctx context.Context, s *op.Step) time.Duration {
	t := batchStepTimeout
	own := s.Plan.Gate.TimeoutMs
	if s.Kind == "run_command" && own == 0 {
		own = int(command.FastTimeoutDefault / time.Millisecond)
	}
	if own > 0 {
		t = min(t, time.Duration(own)*time.Millisecond+batchStepGrace)
	}
	if dl, ok := ctx.Deadline(); ok {
		t = min(t, time.Until(dl))
	}
	return t
}

func prepareBatch(ctx context.Context, c *op.Call, args BatchArgs) (*op.Plan, error) {
	switch {
	case len(args.Steps) == 0:
		return nil, errs.New(errs.InvalidArgument, "steps is empty: nothing to run")
	case len(args.Steps) > route.MaxBatchSteps:
		return nil, errs.New(errs.InvalidArgument, "%d steps: at most %d in one batch", len(args.Steps), route.MaxBatchSteps)
	case args.WaitMs < 0 || time.Duration(args.WaitMs)*time.Millisecond > runtime.MaxLeaseWait:
		return nil, errs.New(errs.InvalidArgument, "wait_ms must be between 0 and %d", runtime.MaxLeaseWait.Milliseconds())
	}
	switch args.Mode {
	case "", "auto", "fast":
	case "durable":
		return nil, errs.New(errs.RouteDurableRequired, "batches run on the Fast Path only; run durable work with job_start").
			With("suggested_operation", route.SuggestJobStart)
	default:
		return nil, errs.New(errs.InvalidArgument, "mode %q: one of auto, fast, durable", args.Mode)
	}
	steps, err := prepareSteps(ctx, c, args.Steps, stepKinds(c))
	if err != nil {
		return nil, err
	}
	dec, err := routeSteps("batch", steps)
	if err != nil {
		return nil, err
	}
	stop := args.StopOnError == nil || *args.StopOnError
	out := &Result{BatchID: newBatchID(), Decision: dec}
	var writes []*op.Step
	for _, s := range steps {
		if s.Plan.Write != nil {
			writes = append(writes, s)
		}
		if s.Kind == "git_commit" {
			out.NonAtomic = true
		}
	}
	out.Mutating = len(writes) > 0
	hashed := args
	hashed.RequestID, hashed.WaitMs, hashed.IncludeLatencyBreakdown = "", 0, false
	plan := &op.Plan{Gate: gateInput(hashed, &dec, steps), Steps: steps, Breakdown: args.IncludeLatencyBreakdown}
	if len(writes) == 0 {
		plan.Run = func(ctx context.Context) (any, error) {
			bctx, cancel := context.WithTimeout(ctx, batchTimeout)
			defer cancel()
			runSteps(bctx, c.Env, steps, stop, nil, nil, out)
			return out, nil
		}
		return plan, nil
	}
	var keys, paths []string
	for _, s := range writes {
		keys = appendNew(keys, s.Plan.Write.Keys...)
		paths = appendNew(paths, s.Plan.Write.Paths...)
	}
	plan.Write = &op.Txn{
		Op: "batch", RequestID: args.RequestID, Hashed: hashed, Paths: paths, Keys: keys,
		Wait: time.Duration(args.WaitMs) * time.Millisecond,
		Run: func(lctx context.Context, l runtime.Lease, rec *op.Receipt) error {
			bctx, cancel := context.WithTimeout(lctx, batchTimeout)
			runSteps(bctx, c.Env, steps, stop, l, rec, out)
			cancel()
			if lctx.Err() != nil && errs.CodeOf(context.Cause(lctx)) == errs.LeaseLost {
				out.Warn("the lease was lost while the batch ran: " + context.Cause(lctx).Error())
			}
			return nil
		},
		Result: func(rec *op.Receipt) (any, *op.Receipt, bool) {
			out.Receipt = rec
			for _, s := range writes {
				if out.Steps[s.Index].OK {
					return out, rec, true
				}
			}
			return out, rec, false
		},
		Replay: func(stored json.RawMessage) (any, error) {
			var r Result
			if err := json.Unmarshal(stored, &r); err != nil {
				return nil, err
			}
			r.Replayed = true
			return &r, nil
		},
	}
	return plan, nil
}

func appendNew(to []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(to, v) {
			to = append(to, v)
		}
	}
	return to
}

// runSteps runs the steps in order under ctx (the batch deadline). Writing
// steps run under l and record into rec.
func runSteps(ctx context.Context, env *op.Env, steps []*op.Step, stop bool, l runtime.Lease, rec *op.Receipt, out *Result) {
	out.Steps = make([]StepResult, len(steps))
	out.OK = true
	stopped := false
	for i, s := range steps {
		r := StepResult{Index: i, Kind: s.Kind}
		if stopped {
			r.Status = "skipped"
			out.Steps[i] = r
			out.OK = false
			continue
		}
		if err := ctx.Err(); err != nil {
			r.Status, r.Error = "skipped", errs.From(errs.Wrap(errs.CodeOf(err), err, "the batch ran out of time (%s) before this step", batchTimeout))
			out.Steps[i] = r
			out.OK = false
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, stepDeadline(ctx, s))
		start := time.Now()
		var res any
		var err error
		if w := s.Plan.Write; w != nil {
			before := len(rec.Changes)
			headBefore := rec.HeadAfter
			err = s.Call.Apply(sctx, *w, l, rec) // the step's own verification gate, then its write
			if err == nil {
				sr := MutationStepResult{Changes: append([]patch.Change{}, rec.Changes[before:]...)}
				if rec.HeadAfter != headBefore {
					sr.Commit, sr.HeadAfter = rec.Commit, rec.HeadAfter
				}
				res = sr
			}
		} else {
			res, err = s.Run(sctx)
		}
		cancel()
		r.DurationMs = op.Ms(time.Since(start))
		out.StepsMs += r.DurationMs
		if err != nil {
			r.Status, r.Error = "failed", errs.From(err)
			out.OK = false
			if stop {
				stopped = true
				idx := i
				out.StoppedAt = &idx
			}
		} else {
			r.OK, r.Status = true, "ok"
			setStepResult(env, &r, res, out)
		}
		out.Steps[i] = r
	}
}

// setStepResult inlines a result up to 64 KiB and keeps larger ones by
// reference.
func setStepResult(env *op.Env, r *StepResult, res any, out *Result) {
	b, err := json.Marshal(res)
	if err != nil {
		r.OK, r.Status = false, "failed"
		r.Error = errs.New(errs.Internal, "encode step result: %v", err)
		return
	}
	if len(b) <= batchInlineMax {
		r.Result = b
		return
	}
	r.ResultBytes = len(b)
	ref, ok := env.Results.Put(b, env.Now())
	if !ok {
		out.Warn(route.StepLabel(r.Index, r.Kind) + ": result of " + strconv.Itoa(len(b)) + " bytes is too large to keep; ask for less")
		return
	}
	r.ResultRef = ref
}

func newBatchID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "batch_" + hex.EncodeToString(b[:])
}

// ResultArgs are the arguments of batch_result.
type ResultArgs struct {
	Ref string `json:"ref" jsonschema:"a step's result_ref"`
	op.Approval
}

// ResultResult is the result of batch_result.
type ResultResult struct {
	Ref    string          `json:"ref"`
	Result json.RawMessage `json:"result"`
	Bytes  int             `json:"bytes"`
	op.Meta
}

// batchResult serves a step result a batch kept by reference: the stored
// output of a step the gate already allowed.
func batchResult(_ context.Context, c *op.Call, args ResultArgs) (*op.Plan, error) {
	if args.Ref == "" {
		return nil, errs.New(errs.InvalidArgument, "ref is required")
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(context.Context) (any, error) {
		b, ok := c.Env.Results.Get(args.Ref, c.Env.Now())
		if !ok {
			return nil, errs.New(errs.NotFound, "batch result %q is unknown or expired (results are kept 10 minutes)", args.Ref).With("ref", args.Ref)
		}
		return &ResultResult{Ref: args.Ref, Result: b, Bytes: len(b)}, nil
	}}, nil
}
