package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
)

func init() {
	registerOps(func() []Op {
		return []Op{
			def("batch", "Run up to 20 typed steps (read_file, search, git_status, git_diff, apply_patch, run_command, run_check, git_stage, git_commit) as one call. The whole batch is routed and checked before any step runs: if one step would be rejected or needs the Durable Path, nothing runs. Mutating steps share one lease and one request_id (required). Large step results come back as result_ref, fetched with batch_result.", false, (*Harness).Batch),
			def("batch_result", "Fetch a large step result of a recent batch by its result_ref (kept in memory for 10 minutes).", true, (*Harness).BatchResultGet),
		}
	})
	onClose(func(h *Harness) { batchCaches.Delete(h) })
}

// Batch limits.
const (
	batchTimeout       = 45 * time.Second
	batchStepTimeout   = 15 * time.Second
	batchStepGrace     = 2 * time.Second // beyond a command's own timeout, so it can report
	batchInlineMax     = 64 << 10        // larger step results are returned by reference
	batchCacheTTL      = 10 * time.Minute
	batchCacheCap      = 64 << 20 // total bytes of referenced results kept
	batchCacheEntryMax = 16 << 20 // a bigger single result is not kept
)

// BatchStep is one step of a batch or one lane of read_lanes.
type BatchStep struct {
	Kind string         `json:"kind" jsonschema:"operation of the step: read_file, search, git_status, git_diff, apply_patch, run_command, run_check, git_stage or git_commit"`
	Args map[string]any `json:"args,omitempty" jsonschema:"the step operation's own arguments, without repo_id (and without request_id: the batch's covers every step)"`
}

// BatchArgs are the arguments of batch.
type BatchArgs struct {
	RepoID                  string      `json:"repo_id" jsonschema:"repository id from repository_register"`
	Steps                   []BatchStep `json:"steps" jsonschema:"1 to 20 steps, run in order"`
	StopOnError             *bool       `json:"stop_on_error,omitempty" jsonschema:"stop at the first failed step; later steps are skipped (default true)"`
	Mode                    string      `json:"mode,omitempty" jsonschema:"auto (default), fast or durable; batches run on the Fast Path only: a durable step or mode durable answers ROUTE_DURABLE_REQUIRED"`
	RequestID               string      `json:"request_id,omitempty" jsonschema:"required when a step writes: unique id of this batch; a retry with it replays the stored result"`
	WaitMs                  int         `json:"wait_ms,omitempty" jsonschema:"wait up to this long for busy files instead of failing with MUTATION_BUSY (max 30000)"`
	IncludeLatencyBreakdown bool        `json:"include_latency_breakdown,omitempty"`
}

// BatchStepResult is the outcome of one step.
type BatchStepResult struct {
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

// BatchResult is the result of batch.
type BatchResult struct {
	BatchID string            `json:"batch_id"`
	OK      bool              `json:"ok" jsonschema:"every step ran and succeeded"`
	Steps   []BatchStepResult `json:"steps"`
	// StoppedAt is the index of the failed step that stopped the batch.
	StoppedAt *int `json:"stopped_at,omitempty"`
	// Mutating is true when a step writes; Receipt then records the writes.
	Mutating bool `json:"mutating"`
	// NonAtomic is true when the batch commits: a commit is never undone,
	// so a later failure leaves the earlier steps' effects in place.
	NonAtomic bool           `json:"non_atomic"`
	Decision  route.Decision `json:"decision"`
	Receipt   *Receipt       `json:"receipt,omitempty"`
	// StepsMs is the sum of the steps' durations; Latency.TotalMs the wall time.
	StepsMs  float64  `json:"steps_ms"`
	Replayed bool     `json:"replayed"`
	Warnings []string `json:"warnings,omitempty"`
	Meta
}

// preparedStep is a validated step: its route request, gate input and how
// to run it.
type preparedStep struct {
	index    int
	kind     string
	req      route.Request
	gate     gateInput
	ownMs    int // the step's own timeout (commands), 0 = none
	mutating bool
	plan     mutStep                                // mutating steps
	run      func(ctx context.Context) (any, error) // read steps
}

// stepErr adds the step's index and kind to err.
func stepErr(err error, i int, kind string) error {
	e := errs.From(err)
	out := *e
	out.Message = "step " + strconv.Itoa(i) + " (" + kind + "): " + e.Message
	return out.With("step", i).With("kind", kind)
}

// decodeStep strictly decodes a step's args (plus repo_id) into T after
// checking them against the operation's schema.
func decodeStep[T any](op string, raw json.RawMessage) (T, error) {
	var v T
	if o, ok := LookupOp(op); ok {
		if err := o.Validate(raw); err != nil {
			return v, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, errs.New(errs.InvalidArgument, "%s: %v", op, cleanJSONErr(err))
	}
	return v, nil
}

// readKinds are the step kinds read_lanes accepts (a batch accepts every
// kind prepareStep knows).
var readKinds = map[string]bool{"read_file": true, "search": true, "git_status": true, "git_diff": true, "run_command": true}

// prepareStep validates one step against the repository without running it.
func (h *Harness) prepareStep(ctx context.Context, e actors.RepoEntry, root *pathsafe.Root, i int, s BatchStep) (preparedStep, error) {
	args := make(map[string]any, len(s.Args)+1)
	for k, v := range s.Args {
		args[k] = v
	}
	if id, ok := args["repo_id"]; ok && id != e.Repo.ID {
		return preparedStep{}, errs.New(errs.InvalidArgument, "args.repo_id: leave it out, the step runs in the batch's repository")
	}
	if _, ok := args["request_id"]; ok {
		return preparedStep{}, errs.New(errs.InvalidArgument, "args.request_id: leave it out, the batch's request_id covers every step")
	}
	args["repo_id"] = e.Repo.ID
	raw, err := json.Marshal(args)
	if err != nil {
		return preparedStep{}, errs.New(errs.InvalidArgument, "args cannot be encoded: %v", err)
	}
	p := preparedStep{index: i, kind: s.Kind, req: route.Request{Tool: s.Kind}}
	p.gate = gateInput{Tool: s.Kind, Repo: &e, Root: root, Args: args}
	switch s.Kind {
	case "read_file":
		a, err := decodeStep[ReadFileArgs](s.Kind, raw)
		if err != nil {
			return p, err
		}
		p.gate.Paths = []string{a.Path}
		p.run = func(ctx context.Context) (any, error) { return h.ReadFile(ctx, a) }
	case "search":
		a, err := decodeStep[SearchArgs](s.Kind, raw)
		if err != nil {
			return p, err
		}
		p.run = func(ctx context.Context) (any, error) { return h.Search(ctx, a) }
	case "git_status":
		a, err := decodeStep[GitStatusArgs](s.Kind, raw)
		if err != nil {
			return p, err
		}
		p.run = func(ctx context.Context) (any, error) { return h.GitStatus(ctx, a) }
	case "git_diff":
		a, err := decodeStep[GitDiffArgs](s.Kind, raw)
		if err != nil {
			return p, err
		}
		p.gate.Paths = a.Paths
		p.run = func(ctx context.Context) (any, error) { return h.GitDiff(ctx, a) }
	case "run_command":
		a, err := decodeStep[RunCommandArgs](s.Kind, raw)
		if err != nil {
			return p, err
		}
		if len(a.Argv) == 0 || a.Argv[0] == "" {
			return p, errs.New(errs.InvalidArgument, "argv is required: a program and its arguments")
		}
		p.req.Argv, p.req.TimeoutMs = a.Argv, a.TimeoutMs
		p.gate.Argv, p.gate.TimeoutMs = a.Argv, a.TimeoutMs
		p.ownMs = a.TimeoutMs
		if p.ownMs == 0 {
			p.ownMs = int(fastTimeoutDefault / time.Millisecond)
		}
		p.run = func(ctx context.Context) (any, error) { return h.RunCommand(ctx, a) }
	case "run_check":
		o, ok := LookupOp("run_check")
		if !ok {
			return p, errs.New(errs.InvalidArgument, "run_check is not available in this harnessd")
		}
		if err := o.Validate(raw); err != nil {
			return p, err
		}
		var c struct {
			Argv      []string `json:"argv"`
			TimeoutMs int      `json:"timeout_ms"`
		}
		_ = json.Unmarshal(raw, &c)
		p.req.Argv, p.req.TimeoutMs = c.Argv, c.TimeoutMs
		p.gate.Argv, p.gate.TimeoutMs = c.Argv, c.TimeoutMs
		p.ownMs = c.TimeoutMs
		p.run = func(ctx context.Context) (any, error) { return o.Call(ctx, h, raw) }
	case "apply_patch":
		a, err := decodeStep[ApplyPatchArgs](s.Kind, raw)
		if err != nil {
			return p, err
		}
		if p.plan, err = h.planApplyPatch(e, a); err != nil {
			return p, err
		}
	case "git_stage":
		a, err := decodeStep[GitStageArgs](s.Kind, raw)
		if err != nil {
			return p, err
		}
		if p.plan, err = h.planGitStage(e, a); err != nil {
			return p, err
		}
	case "git_commit":
		a, err := decodeStep[GitCommitArgs](s.Kind, raw)
		if err != nil {
			return p, err
		}
		if p.plan, err = h.planGitCommit(ctx, e, a); err != nil {
			return p, err
		}
	case "":
		return p, errs.New(errs.InvalidArgument, "kind is required")
	default:
		return p, errs.New(errs.InvalidArgument, "unknown step kind %q (one of read_file, search, git_status, git_diff, apply_patch, run_command, run_check, git_stage, git_commit)", s.Kind)
	}
	if p.plan.run != nil {
		p.mutating = true
		p.req.Writes = true
		p.gate.Paths, p.gate.Writes = p.plan.paths, true
	}
	return p, nil
}

// routeSteps routes the steps as one batch. A non-fast decision becomes
// the coded error of its first offending step.
func routeSteps(tool string, steps []preparedStep) (route.Decision, error) {
	req := route.Request{Tool: "batch"}
	for _, s := range steps {
		req.Steps = append(req.Steps, s.req)
	}
	d := route.Decide(req)
	if d.Mode == route.Fast {
		return d, nil
	}
	for _, s := range steps {
		sd := route.Decide(s.req)
		if sd.Mode == d.Mode {
			return d, stepErr(errs.From(routeError(sd)).With("batch_decision", d), s.index, s.kind)
		}
	}
	return d, errs.From(routeError(d)).With("operation", tool)
}

// stepDeadline returns the timeout of one step: its own (plus a grace
// for commands to report their timeout) capped at 15 s and the time left.
func stepDeadline(ctx context.Context, ownMs int) time.Duration {
	t := batchStepTimeout
	if ownMs > 0 {
		t = min(t, time.Duration(ownMs)*time.Millisecond+batchStepGrace)
	}
	if dl, ok := ctx.Deadline(); ok {
		t = min(t, time.Until(dl))
	}
	return t
}

// Batch runs typed steps as one call, routed and checked as a whole first.
func (h *Harness) Batch(ctx context.Context, args BatchArgs) (*BatchResult, error) {
	e, tr, done, err := h.begin(args.RepoID)
	if err != nil {
		return nil, err
	}
	defer done()
	switch {
	case len(args.Steps) == 0:
		return nil, errs.New(errs.InvalidArgument, "steps is empty: nothing to run")
	case len(args.Steps) > route.MaxBatchSteps:
		return nil, errs.New(errs.InvalidArgument, "%d steps: at most %d in one batch", len(args.Steps), route.MaxBatchSteps)
	case args.WaitMs < 0 || time.Duration(args.WaitMs)*time.Millisecond > maxWait:
		return nil, errs.New(errs.InvalidArgument, "wait_ms must be between 0 and %d", maxWait.Milliseconds())
	}
	mode := args.Mode
	switch mode {
	case "", "auto", "fast":
	case "durable":
		return nil, errs.New(errs.RouteDurableRequired, "batches run on the Fast Path only; run durable work with job_start").
			With("suggested_operation", route.SuggestJobStart)
	default:
		return nil, errs.New(errs.InvalidArgument, "mode %q: one of auto, fast, durable", mode)
	}
	root, err := h.fast.root(e)
	if err != nil {
		return nil, err
	}
	steps := make([]preparedStep, len(args.Steps))
	for i, s := range args.Steps {
		if steps[i], err = h.prepareStep(ctx, e, root, i, s); err != nil {
			return nil, stepErr(err, i, s.Kind)
		}
	}
	dec, err := routeSteps("batch", steps)
	if err != nil {
		return nil, err
	}
	tr.mark(segRouting)
	// The mediator sees every step before any runs. (The batch as a whole
	// is routed above: gateInput cannot carry steps, so it is not gated
	// as one "batch" tool.)
	var mutating []preparedStep
	for _, s := range steps {
		if _, err := h.gate(ctx, s.gate); err != nil {
			return nil, stepErr(err, s.index, s.kind)
		}
		if s.mutating {
			mutating = append(mutating, s)
		}
	}
	tr.mark(segPolicy)
	stop := args.StopOnError == nil || *args.StopOnError
	out := &BatchResult{BatchID: newBatchID(), Decision: dec, Mutating: len(mutating) > 0}
	for _, s := range steps {
		if s.kind == "git_commit" {
			out.NonAtomic = true
		}
	}
	if len(mutating) == 0 {
		bctx, cancel := context.WithTimeout(ctx, batchTimeout)
		defer cancel()
		h.runSteps(bctx, steps, stop, nil, nil, out)
		out.Meta = Meta{Route: "fast", Latency: tr.finish(segExecution, args.IncludeLatencyBreakdown)}
		return out, nil
	}
	return h.runMutatingBatch(ctx, &tr, e, args, steps, mutating, stop, out)
}

// runSteps runs the steps in order under ctx (the batch deadline).
// Mutating steps run under l and record into rec.
func (h *Harness) runSteps(ctx context.Context, steps []preparedStep, stop bool, l *heldLease, rec *Receipt, out *BatchResult) {
	out.Steps = make([]BatchStepResult, len(steps))
	out.OK = true
	stopped := false
	for i, s := range steps {
		r := BatchStepResult{Index: i, Kind: s.kind}
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
		sctx, cancel := context.WithTimeout(ctx, stepDeadline(ctx, s.ownMs))
		start := time.Now()
		var res any
		var err error
		if s.mutating {
			before := len(rec.Changes)
			headBefore := rec.HeadAfter
			err = s.plan.run(sctx, l, rec)
			if err == nil {
				sr := MutationStepResult{Changes: append([]patch.Change{}, rec.Changes[before:]...)}
				if rec.HeadAfter != headBefore {
					sr.Commit, sr.HeadAfter = rec.Commit, rec.HeadAfter
				}
				res = sr
			}
		} else {
			res, err = s.run(sctx)
		}
		cancel()
		r.DurationMs = ms(time.Since(start))
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
			h.setStepResult(&r, res, &out.Warnings)
		}
		out.Steps[i] = r
	}
}

// MutationStepResult is the result of a mutating step inside a batch: what
// it changed (the batch's receipt covers all steps).
type MutationStepResult struct {
	Changes   []patch.Change `json:"changes"`
	Commit    string         `json:"commit,omitempty"`
	HeadAfter string         `json:"head_after,omitempty"`
}

// setStepResult inlines a result up to 64 KiB and keeps larger ones by
// reference.
func (h *Harness) setStepResult(r *BatchStepResult, res any, warnings *[]string) {
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
	ref, ok := cacheOf(h).put(b, h.cfg.Now())
	if !ok {
		*warnings = append(*warnings, "step "+strconv.Itoa(r.Index)+": result of "+strconv.Itoa(len(b))+" bytes is too large to keep; ask for less")
		return
	}
	r.ResultRef = ref
}

// runMutatingBatch runs a batch with writes under one ledger entry and one
// lease over the union of the mutating steps' keys (the pattern of mutate).
func (h *Harness) runMutatingBatch(ctx context.Context, tr *trace, e actors.RepoEntry, args BatchArgs, steps, mutating []preparedStep, stop bool, out *BatchResult) (*BatchResult, error) {
	if args.RequestID == "" {
		return nil, errs.New(errs.RequestIDRequired, "a batch with writing steps needs a request_id (any unique string up to 255 characters) so a retry replays instead of writing twice")
	}
	if err := ledger.ValidateRequestID(args.RequestID); err != nil {
		return nil, err
	}
	hashed := args
	hashed.RequestID, hashed.WaitMs, hashed.IncludeLatencyBreakdown = "", 0, false
	hash, err := ledger.InputHash("batch", hashed)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	var keys, paths []string
	seenK, seenP := map[string]bool{}, map[string]bool{}
	for _, s := range mutating {
		for _, k := range s.plan.keys {
			if !seenK[k] {
				seenK[k] = true
				keys = append(keys, k)
			}
		}
		for _, p := range s.plan.paths {
			if !seenP[p] {
				seenP[p] = true
				paths = append(paths, p)
			}
		}
	}
	begun, err := request[messages.LedgerBegun](ctx, h, h.ledger, messages.LedgerBegin{RequestID: args.RequestID, Operation: "batch", InputHash: hash, Paths: paths})
	if err != nil {
		if errs.CodeOf(err) == errs.RequestOutcomeUnknown {
			return nil, h.withDigests(err, e)
		}
		return nil, err
	}
	if begun.Replay {
		var stored BatchResult
		if err := json.Unmarshal(begun.Entry.Result, &stored); err != nil {
			return nil, errs.Wrap(errs.Internal, err, "decode stored result of %q: %v", args.RequestID, err)
		}
		stored.Replayed = true
		stored.Meta = Meta{Route: "fast", Latency: tr.finish(segSnapshot, args.IncludeLatencyBreakdown)}
		return &stored, nil
	}
	fail := func(cause error) {
		if _, ferr := request[messages.LedgerDone](context.Background(), h, h.ledger, messages.LedgerFail{RequestID: args.RequestID, Err: cause}); ferr != nil {
			h.lg.Warn("ledger: record batch failure")
		}
	}
	l, lctx, err := h.acquireLease(ctx, e.Checkout, args.RequestID, "batch", keys, time.Duration(args.WaitMs)*time.Millisecond, "ephemeral", 0)
	if err != nil {
		fail(err)
		return nil, err
	}
	tr.mark(segPolicy)
	rec := Receipt{
		RequestID: args.RequestID, Operation: "batch", RepoID: e.Repo.ID, CheckoutID: e.Repo.CheckoutID,
		LeaseID: l.info.ID, FencingToken: l.maxToken(), FencingTokens: l.info.Tokens,
	}
	bctx, cancel := context.WithTimeout(lctx, batchTimeout)
	h.runSteps(bctx, steps, stop, l, &rec, out)
	cancel()
	if lctx.Err() != nil && errs.CodeOf(context.Cause(lctx)) == errs.LeaseLost {
		out.Warnings = append(out.Warnings, "the lease was lost while the batch ran: "+context.Cause(lctx).Error())
	}
	l.release()
	tr.mark(segExecution)

	wrote := false
	for _, s := range mutating {
		if out.Steps[s.index].OK {
			wrote = true
		}
	}
	now := h.cfg.Now()
	rec.At = now.UTC()
	rec.ReceiptID = "rcpt_" + strconv.FormatInt(now.UnixNano(), 36) + "_" + strconv.FormatUint(rec.FencingToken, 10)
	if rec.Changes == nil {
		rec.Changes = []patch.Change{}
	}
	out.Receipt = &rec
	if !wrote {
		// Nothing was written: the request may be retried as it is.
		fail(errs.New(errs.Internal, "no writing step of batch %s succeeded", out.BatchID))
		out.Meta = Meta{Route: "fast", Latency: tr.finish(segReceipt, args.IncludeLatencyBreakdown)}
		rec.LatencyMs = out.Latency.TotalMs
		return out, nil
	}
	stored, _ := json.Marshal(out)
	if _, err := request[messages.LedgerDone](context.Background(), h, h.ledger, messages.LedgerComplete{RequestID: args.RequestID, Result: stored}); err != nil {
		out.Warnings = append(out.Warnings, "the batch wrote but the ledger could not record it: "+errs.From(err).Message)
	}
	lat := tr.finish(segReceipt, args.IncludeLatencyBreakdown)
	rec.LatencyMs = lat.TotalMs
	if err := h.persistReceipt(rec); err != nil {
		out.Warnings = append(out.Warnings, "the batch wrote but its receipt could not be stored: "+err.Error())
	}
	out.Meta = Meta{Route: "fast", Latency: lat}
	return out, nil
}

func newBatchID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "batch_" + hex.EncodeToString(b[:])
}

// BatchResultArgs are the arguments of batch_result.
type BatchResultArgs struct {
	Ref string `json:"ref" jsonschema:"a result_ref from a batch step"`
}

// BatchResultResult is the result of batch_result.
type BatchResultResult struct {
	Ref    string          `json:"ref"`
	Result json.RawMessage `json:"result"`
	Bytes  int             `json:"bytes"`
	Meta
}

// BatchResultGet returns a step result a batch kept by reference. It
// executes nothing: it serves the stored output of a step the mediator
// already allowed, so it does not cross the gate (the router does not know
// the name "batch_result").
func (h *Harness) BatchResultGet(ctx context.Context, args BatchResultArgs) (*BatchResultResult, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	tr := startTrace()
	if args.Ref == "" {
		return nil, errs.New(errs.InvalidArgument, "ref is required")
	}
	b, ok := cacheOf(h).get(args.Ref, h.cfg.Now())
	if !ok {
		return nil, errs.New(errs.NotFound, "batch result %q is unknown or expired (results are kept %s)", args.Ref, batchCacheTTL).With("ref", args.Ref)
	}
	return &BatchResultResult{Ref: args.Ref, Result: b, Bytes: len(b), Meta: Meta{Route: "fast", Latency: tr.finish(segExecution, false)}}, nil
}

// resultCache keeps large step results in memory with a TTL and a total
// byte cap; the oldest entries go first.
type resultCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	order   []string // insertion order
	bytes   int
}

type cacheEntry struct {
	data    []byte
	expires time.Time
}

var batchCaches sync.Map // *Harness -> *resultCache

func cacheOf(h *Harness) *resultCache {
	if c, ok := batchCaches.Load(h); ok {
		return c.(*resultCache)
	}
	c, _ := batchCaches.LoadOrStore(h, &resultCache{entries: map[string]cacheEntry{}})
	return c.(*resultCache)
}

func (c *resultCache) put(b []byte, now time.Time) (string, bool) {
	if len(b) > batchCacheEntryMax {
		return "", false
	}
	var r [12]byte
	_, _ = rand.Read(r[:])
	ref := "bres_" + hex.EncodeToString(r[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evict(now, len(b))
	c.entries[ref] = cacheEntry{data: b, expires: now.Add(batchCacheTTL)}
	c.order = append(c.order, ref)
	c.bytes += len(b)
	return ref, true
}

// evict drops expired entries and, oldest first, enough others for need
// more bytes to fit under the cap.
func (c *resultCache) evict(now time.Time, need int) {
	n := 0
	for _, ref := range c.order {
		e, ok := c.entries[ref]
		if ok && now.Before(e.expires) && c.bytes+need <= batchCacheCap {
			break
		}
		if ok {
			c.bytes -= len(e.data)
			delete(c.entries, ref)
		}
		n++
	}
	c.order = c.order[n:]
}

func (c *resultCache) get(ref string, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[ref]
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return e.data, true
}
