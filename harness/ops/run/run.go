// Package run holds the operations on runs (FlowDeck L3, L4, L6, L7):
// run_start, run_observe, run_stage, run_status, run_list, run_end,
// run_resume and run_escalate (here), run_assess (assess.go).
// A run groups an agent's calls: each call records a span in it, draws on
// its budget, and its state (stages, observations, counters, its tier,
// retry streaks and children) is stored so it survives a restart of the
// daemon.
package run

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/verify"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Ops returns the run operations.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[StartArgs]{Name: "run_start", Output: StateResult{}, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, NoRepo: true,
			Description: "Start a run when a task takes many calls and should be tracked as one: goal, stages, observations, claims, a budget, one undo (run_revert). " +
				"This session's later calls join it (not a child run). A single edit, check and commit needs none. " +
				"Example: {\"goal\":\"fix the empty-input crash\",\"budget\":{\"wall_s\":3600}}",
			Prepare: start}),
		op.Def(op.Spec[ObserveArgs]{Name: "run_observe", Output: StateResult{}, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, NoRepo: true,
			Description: "Note in a run what you found or decided, for a person or the next agent (run_status and context_assemble show it). " +
				"Progress: run_stage; what a stage achieved: run_claim. " +
				"Example: {\"run_id\":\"run_1\",\"kind\":\"decision\",\"text\":\"keep Parse; add ParseStrict\"}",
			Prepare: observe}),
		op.Def(op.Spec[StageArgs]{Name: "run_stage", Output: StateResult{}, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, NoRepo: true,
			Description: "Mark where a run stands: a stage started (it becomes current), completed, or blocked with a reason, so run_status shows progress. " +
				"A stage with claims completes only once they verify (run_verify; force needs a person's approval). Evidence: run_claim. " +
				"Example: {\"run_id\":\"run_1\",\"stage\":\"tests\",\"status\":\"completed\"}",
			Prepare: stage}),
		op.Def(op.Spec[StatusArgs]{Name: "run_status", Output: StateResult{}, ReadOnly: true, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.ReadRoles, NoRepo: true,
			Description: "See where a run stands, to pick up work you or another agent left: stages, blocked reason, observations, budget used, claimed and verified stages, child runs. " +
				"Without run_id: this session's run; a lost one: run_list. " +
				"Example: {\"run_id\":\"run_1\"}",
			Prepare: status}),
		op.Def(op.Spec[ListArgs]{Name: "run_list", Output: ListResult{}, ReadOnly: true, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.ReadRoles, NoRepo: true,
			Description: "List runs, active first, then newest first, to find a run_id you lost or see which runs are still active. " +
				"One run's stages and observations: run_status. " +
				"Example: {\"status\":\"active\",\"limit\":10}",
			Prepare: list}),
		op.Def(op.Spec[EndArgs]{Name: "run_end", Output: StateResult{}, Idempotent: true, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, NoRepo: true,
			Description: "End a run whose work is done or handed over: later calls with its run_id answer RUN_ENDED; its jobs keep running. " +
				"To go on later, leave it open (run_resume). " +
				"Example: {\"run_id\":\"run_1\",\"reason\":\"done\"}",
			Prepare: end}),
		op.Def(op.Spec[ResumeArgs]{Name: "run_resume", Output: StateResult{}, Idempotent: true, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, NoRepo: true,
			Description: "Continue a run in this session after a reconnect or a daemon restart, or take over one another client started: later calls without run_id join it. " +
				"New work: run_start; a lost run_id: run_list. " +
				"Example: {\"run_id\":\"run_1\"}",
			Prepare: resume}),
		op.Def(op.Spec[EscalateArgs]{Name: "run_escalate", Output: StateResult{}, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, NoRepo: true,
			Description: "Raise a run's tier (direct, then bounded_work, then campaign) when an error's details carry suggested_escalation: the work outgrew what run_start declared. " +
				"Give the reason (audited); a tier never goes down. " +
				"Example: {\"run_id\":\"run_1\",\"to\":\"bounded_work\",\"reason\":\"needs the full test suite\"}",
			Prepare: escalate}),
	}
}

// Limits of the inputs.
const (
	maxGoal         = runs.MaxText
	maxKind         = 64
	maxClass        = 64
	maxDeliverables = 1000
)

// validClass reports whether a workflow class is lower case letters,
// digits and . _ -, starting with a letter or digit.
func validClass(c string) bool {
	for i, r := range c {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return c != ""
}

// StartArgs are the arguments of run_start.
type StartArgs struct {
	Goal          string             `json:"goal,omitempty" jsonschema:"what the run is for, in a sentence"`
	RepoID        string             `json:"repo_id,omitempty" jsonschema:"the repository it works on, if one"`
	WorkflowClass string             `json:"workflow_class,omitempty" jsonschema:"bugfix, feature, refactor, review, ... (lower case, digits, . _ -); direct, bounded_work or campaign also set the tier"`
	ParentRunID   string             `json:"parent_run_id,omitempty" jsonschema:"a live run this one is part of; it also draws on that run's budget"`
	Budget        messages.RunBudget `json:"budget,omitzero" jsonschema:"limits (default none); a call past one answers BUDGET_EXCEEDED"`
	// Shape is the work the run declares; the route policy chooses the
	// run's tier from it.
	Shape *messages.RunShape `json:"shape,omitempty" jsonschema:"the work ahead; it sets the tier (direct, bounded_work, campaign)"`
	// MaxRetries bounds the retries of a failed call per stage (nil = 3).
	MaxRetries *int `json:"max_retries,omitempty" jsonschema:"retries of the same failed call per stage before RETRY_LIMIT (default 3, 0-100)"`
	op.Approval
}

// StateResult is a run's state.
type StateResult struct {
	messages.RunState
	// Spans are the run's spans (run_status with include_spans).
	Spans        []messages.RunSpan `json:"spans,omitempty"`
	DroppedSpans int64              `json:"dropped_spans,omitempty"`
	// ChildRuns are the run's children: state, stage and blockers
	// (run_status).
	ChildRuns []messages.RunChild `json:"child_runs,omitempty"`
	// Verification is each claimed stage's status, claimed or verified,
	// with its blockers (run_status): what was claimed beside what was
	// verified.
	Verification []StageVerification `json:"verification,omitempty"`
	// Scorecard is how the run goes, computed now from its spans and
	// stage records (run_status).
	Scorecard *messages.RunScorecard `json:"scorecard,omitempty"`
	op.Meta
}

// StageVerification is the claimed-vs-verified status of one stage.
type StageVerification struct {
	Stage      string    `json:"stage"`
	Status     string    `json:"status"` // claimed or verified
	Claims     int       `json:"claims"`
	Verified   int       `json:"verified"`
	VerifiedAt time.Time `json:"verified_at,omitzero"`
	Blockers   []string  `json:"blockers,omitempty"`
}

// stages reads the claim records of a run (run_claim, run_verify).
func stages(c *op.Call, runID string) []StageVerification {
	var out []StageVerification
	_ = c.Env.Store.Scan(persistence.ClaimRunPrefix(runID), func(_ []byte, decode func(any) error) error {
		var st verify.Stage
		if decode(&st) != nil {
			return nil
		}
		sv := StageVerification{Stage: st.Stage, Status: st.Status, Claims: len(st.Claims)}
		for _, cl := range st.Claims {
			if cl.Status == verify.StatusVerified {
				sv.Verified++
			}
		}
		if v := st.Verification; v != nil {
			sv.VerifiedAt = v.At
			for _, b := range v.Blockers {
				sv.Blockers = append(sv.Blockers, b.Reason)
			}
		}
		out = append(out, sv)
		return nil
	})
	return out
}

func caller(ctx context.Context) messages.Caller {
	c, _ := op.CallerFrom(ctx)
	return c
}

func start(_ context.Context, c *op.Call, args StartArgs) (*op.Plan, error) {
	if err := validGoal(args.Goal); err != nil {
		return nil, err
	}
	if args.WorkflowClass != "" && (len(args.WorkflowClass) > maxClass || !validClass(args.WorkflowClass)) {
		return nil, errs.New(errs.InvalidArgument, "workflow_class %q: use lower case letters, digits and . _ - (at most %d)", args.WorkflowClass, maxClass)
	}
	b := args.Budget
	for name, v := range map[string]int64{"wall_s": b.WallS, "commands": b.Commands, "mutations": b.Mutations, "jobs": b.Jobs, "output_bytes": b.OutputBytes, "approvals": b.Approvals, "cpu_seconds": b.CPUSeconds} {
		if v < 0 {
			return nil, errs.New(errs.InvalidArgument, "budget.%s is %d: limits are positive (leave it out for no limit)", name, v)
		}
	}
	if args.RepoID != "" {
		if _, err := c.Env.Repo(args.RepoID); err != nil {
			return nil, err
		}
	}
	if m := args.MaxRetries; m != nil && (*m < 0 || *m > runs.MaxMaxRetries) {
		return nil, errs.New(errs.InvalidArgument, "max_retries is %d: between 0 and %d (leave it out for %d)", *m, runs.MaxMaxRetries, runs.DefaultMaxRetries)
	}
	var shape messages.RunShape
	if args.Shape != nil {
		shape = *args.Shape
		if shape.Deliverables < 0 || shape.Deliverables > maxDeliverables {
			return nil, errs.New(errs.InvalidArgument, "shape.deliverables is %d: between 0 and %d", shape.Deliverables, maxDeliverables)
		}
	}
	tier, err := runs.ChooseTier(args.WorkflowClass, args.Shape)
	if err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_start: %v; declare the class the shape needs, or leave workflow_class out", err).
			With("tier", runs.ShapeTier(shape))
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: stateOf(c, func(ctx context.Context, rs *runtime.Runs) (messages.RunState, error) {
		who := caller(ctx)
		st, err := rs.Start(ctx, messages.RunStart{Goal: redact(ctx, c, args.Goal, args.RepoID), RepoID: args.RepoID, WorkflowClass: args.WorkflowClass,
			ParentRunID: args.ParentRunID, Budget: args.Budget, Caller: who, Tier: tier, Shape: shape, MaxRetries: args.MaxRetries})
		if err == nil && who.Session != "" && args.ParentRunID == "" {
			if bound, berr := rs.Bind(ctx, st.RunID, who); berr == nil {
				st = bound
			}
		}
		return st, err
	})}, nil
}

func validGoal(g string) error {
	if len(g) > maxGoal {
		return errs.New(errs.InvalidArgument, "goal is %d bytes; at most %d", len(g), maxGoal)
	}
	return nil
}

// ObserveArgs are the arguments of run_observe.
type ObserveArgs struct {
	RunID string `json:"run_id" jsonschema:"the run"`
	Kind  string `json:"kind" jsonschema:"finding, decision, hypothesis, result, ... (≤ 64 bytes)"`
	Text  string `json:"text" jsonschema:"the note (≤ 4096 bytes; secrets redacted)"`
	op.Approval
}

func observe(_ context.Context, c *op.Call, args ObserveArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	if err := runs.ValidText("kind", args.Kind, maxKind); err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_observe: %v", err)
	}
	if err := runs.ValidText("text", args.Text, runs.MaxText); err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_observe: %v", err)
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: stateOf(c, func(ctx context.Context, rs *runtime.Runs) (messages.RunState, error) {
		repo := runRepo(ctx, rs, args.RunID)
		return rs.Observe(ctx, args.RunID, messages.RunObservation{Source: "agent", Kind: redact(ctx, c, args.Kind, repo), Text: redact(ctx, c, args.Text, repo)})
	})}, nil
}

// StageArgs are the arguments of run_stage.
type StageArgs struct {
	RunID  string `json:"run_id" jsonschema:"the run"`
	Stage  string `json:"stage" jsonschema:"its name, e.g. tests (≤ 128 bytes)"`
	Status string `json:"status" enum:"started,completed,blocked" jsonschema:"started (now current), completed, or blocked (give reason)"`
	Reason string `json:"reason,omitempty" jsonschema:"why it is blocked (required with blocked)"`
	// Force completes a stage whose claims do not verify: a person must
	// approve the call (the agent cannot force it alone).
	Force bool `json:"force,omitempty" jsonschema:"complete although its claims do not verify; a person must approve"`
	op.Approval
}

func stage(_ context.Context, c *op.Call, args StageArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	switch args.Status {
	case messages.StageStarted, messages.StageCompleted, messages.StageBlocked:
	default:
		return nil, errs.New(errs.InvalidArgument, "status %q: one of started, completed, blocked", args.Status)
	}
	if err := runs.ValidText("stage", args.Stage, runs.MaxStage); err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_stage: %v", err)
	}
	if args.Status == messages.StageBlocked {
		if err := runs.ValidText("reason", args.Reason, runs.MaxText); err != nil {
			return nil, errs.New(errs.InvalidArgument, "run_stage: a blocked stage needs a reason: %v", err)
		}
	}
	gate := op.GateArgs(args)
	if args.Force {
		if args.Status != messages.StageCompleted {
			return nil, errs.New(errs.InvalidArgument, "run_stage: force completes a stage; it goes with status completed only")
		}
		if err := runs.ValidText("reason", args.Reason, runs.MaxText); err != nil {
			return nil, errs.New(errs.InvalidArgument, "run_stage: a forced completion needs a reason for the person who approves it: %v", err)
		}
		// A person's approval only: no policy rule or agent lets it pass.
		gate.Grant = "complete stage " + strconv.Quote(args.Stage) + " of run " + args.RunID + " although its claims may not verify (" +
			clipText(args.Reason, 300) + "): only a person may approve this"
	}
	return &op.Plan{Gate: gate, Run: stateOf(c, func(ctx context.Context, rs *runtime.Runs) (messages.RunState, error) {
		if args.Status == messages.StageCompleted && !args.Force {
			if err := completeGate(ctx, c, args.RunID, args.Stage); err != nil {
				return messages.RunState{}, err
			}
		}
		reason := args.Reason
		if reason != "" {
			reason = redact(ctx, c, reason, runRepo(ctx, rs, args.RunID))
		}
		st, err := rs.Stage(ctx, messages.RunStage{RunID: args.RunID, Stage: args.Stage, Status: args.Status, Reason: reason})
		if err == nil && args.Force {
			note(ctx, rs, args.RunID, "forced", "stage "+strconv.Quote(args.Stage)+" completed by a person's approval "+args.ApprovalID+" without verifying its claims: "+reason)
		}
		return st, err
	})}, nil
}

// StatusArgs are the arguments of run_status.
type StatusArgs struct {
	RunID        string `json:"run_id,omitempty" jsonschema:"the run; default: this session's run"`
	IncludeSpans bool   `json:"include_spans,omitempty" jsonschema:"also list every call of the run"`
	op.Approval
}

func status(_ context.Context, c *op.Call, args StatusArgs) (*op.Plan, error) {
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		rs, err := runsOf(c)
		if err != nil {
			return nil, err
		}
		id := args.RunID
		if id == "" {
			who := caller(ctx)
			e, ok, err := rs.Resolve(ctx, who)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, errs.New(errs.InvalidArgument, "run_id is required outside an MCP session (see run_list)")
			}
			id = e.ID
		}
		got, err := rs.Get(ctx, id, args.IncludeSpans)
		if err != nil {
			return nil, err
		}
		res := &StateResult{RunState: got.State, Spans: got.Spans, DroppedSpans: got.DroppedSpans, ChildRuns: rs.Children(ctx, got.State),
			Verification: stages(c, got.State.RunID)}
		var sum messages.RunSummary
		if args.IncludeSpans {
			sum = summaryOf(c.Env.Store, got.State, got.Spans)
		} else {
			sum = LiveSummary(ctx, c.Env.Store, rs, got.State)
		}
		res.Scorecard = &sum.Scorecard
		return res, nil
	}}, nil
}

// ListArgs are the arguments of run_list.
type ListArgs struct {
	Status string `json:"status,omitempty" enum:"active,stuck,ended,deadline,abandoned" jsonschema:"only runs in this state (default all; stuck: active runs whose stage stalled)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"default 100, max 1000"`
	op.Approval
}

// statusStuck is run_list's filter of the active runs whose current stage
// stalled (RunState.Stuck).
const statusStuck = "stuck"

// ListResult is the result of run_list.
type ListResult struct {
	Runs []messages.RunState `json:"runs"`
	op.Meta
}

func list(_ context.Context, c *op.Call, args ListArgs) (*op.Plan, error) {
	switch args.Status {
	case "", messages.RunActive, statusStuck, messages.RunEnded, messages.RunDeadline, messages.RunAbandoned:
	default:
		return nil, errs.New(errs.InvalidArgument, "status %q: one of active, stuck, ended, deadline, abandoned", args.Status)
	}
	if args.Limit < 0 || args.Limit > 1000 {
		return nil, errs.New(errs.InvalidArgument, "limit must be between 0 and 1000")
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		rs, err := runsOf(c)
		if err != nil {
			return nil, err
		}
		want := args.Status
		if want == statusStuck {
			want = messages.RunActive
		}
		out, err := rs.List(ctx, want, args.Limit)
		if err != nil {
			return nil, err
		}
		if args.Status == statusStuck {
			out = slices.DeleteFunc(out, func(st messages.RunState) bool { return !st.Stuck })
		}
		if out == nil {
			out = []messages.RunState{}
		}
		return &ListResult{Runs: out}, nil
	}}, nil
}

// EndArgs are the arguments of run_end.
type EndArgs struct {
	RunID  string `json:"run_id" jsonschema:"the run"`
	Reason string `json:"reason,omitempty" jsonschema:"done, gave up, handed over, ..."`
	op.Approval
}

func end(_ context.Context, c *op.Call, args EndArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	if len(args.Reason) > runs.MaxText {
		return nil, errs.New(errs.InvalidArgument, "reason is %d bytes; at most %d", len(args.Reason), runs.MaxText)
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: stateOf(c, func(ctx context.Context, rs *runtime.Runs) (messages.RunState, error) {
		reason := args.Reason
		if reason != "" {
			reason = redact(ctx, c, reason, runRepo(ctx, rs, args.RunID))
		}
		return rs.End(ctx, messages.RunEnd{RunID: args.RunID, Reason: reason})
	})}, nil
}

// ResumeArgs are the arguments of run_resume.
type ResumeArgs struct {
	RunID string `json:"run_id" jsonschema:"the run to bind to this session"`
	op.Approval
}

func resume(_ context.Context, c *op.Call, args ResumeArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: stateOf(c, func(ctx context.Context, rs *runtime.Runs) (messages.RunState, error) {
		who := caller(ctx)
		if who.Session == "" {
			return messages.RunState{}, errs.New(errs.InvalidArgument, "run_resume binds a run to an MCP session; outside one, pass run_id with each call")
		}
		return rs.Bind(ctx, args.RunID, who)
	})}, nil
}

// EscalateArgs are the arguments of run_escalate.
type EscalateArgs struct {
	RunID  string `json:"run_id" jsonschema:"the run"`
	To     string `json:"to" enum:"bounded_work,campaign" jsonschema:"the new tier, above the current one"`
	Reason string `json:"reason" jsonschema:"why (≤ 4096 bytes)"`
	op.Approval
}

func escalate(_ context.Context, c *op.Call, args EscalateArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	if !runs.IsTier(args.To) {
		return nil, errs.New(errs.InvalidArgument, "to %q: one of %s", args.To, strings.Join(runs.Tiers, ", "))
	}
	if err := runs.ValidText("reason", args.Reason, runs.MaxText); err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_escalate: %v", err)
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: stateOf(c, func(ctx context.Context, rs *runtime.Runs) (messages.RunState, error) {
		reason := redact(ctx, c, args.Reason, runRepo(ctx, rs, args.RunID))
		st, err := rs.Escalate(ctx, messages.RunEscalate{RunID: args.RunID, To: args.To, Reason: reason})
		if err != nil {
			return st, err
		}
		from := ""
		if n := len(st.Escalations); n > 0 {
			from = st.Escalations[n-1].From
		}
		who := caller(ctx)
		who.RunID = st.RunID
		e := audit.Entry{Kind: audit.KindEscalation, Operation: "run_escalate", Outcome: "escalated", Reason: reason,
			Details: map[string]string{"from": from, "to": st.Tier}}
		govern.Identify(&e, who)
		c.Env.Gov.AuditAppend(e)
		return st, nil
	})}, nil
}

// stateOf runs f with the runs client and answers the run state it returns.
func stateOf(c *op.Call, f func(ctx context.Context, rs *runtime.Runs) (messages.RunState, error)) func(context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		rs, err := runsOf(c)
		if err != nil {
			return nil, err
		}
		st, err := f(ctx, rs)
		if err != nil {
			return nil, err
		}
		return &StateResult{RunState: st}, nil
	}
}

func needRun(id string) error {
	if strings.TrimSpace(id) == "" {
		return errs.New(errs.InvalidArgument, "run_id is required (run_start returns one; run_list lists them)")
	}
	return nil
}

func runsOf(c *op.Call) (*runtime.Runs, error) {
	if c.Env.Runs == nil {
		return nil, errs.New(errs.Unavailable, "runs are off in this harness")
	}
	return c.Env.Runs, nil
}

// redact removes secrets from an agent's text (a note, a claim, a goal, a
// reason) before it is stored, as command output is redacted: the exact
// values of the secret files of the checkouts of repoIDs (the run's, a
// claim's; their base64 and hex forms too) and the redaction rules. A
// value the agent read or was told never reaches a person's screen or the
// store through a note.
func redact(ctx context.Context, c *op.Call, s string, repoIDs ...string) string {
	if s == "" {
		return s
	}
	red := c.Env.Redactor // the rules, with the first checkout's values
	seen := make(map[string]bool, len(repoIDs))
	for _, id := range repoIDs {
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		e, err := c.Env.Repo(id)
		if err != nil {
			continue
		}
		if len(seen) == 1 && red != nil {
			red = c.Env.RedactorFor(ctx, e.Repo.Root)
			continue
		}
		if k := c.Env.KnownFor(ctx, e.Repo.Root); k != nil {
			s, _ = k.String(s)
		}
	}
	if red == nil {
		return s
	}
	out, _ := red.String(s)
	return out
}

// runRepo is the repository of run runID, "" when it has none (or it
// cannot be read: the operation itself then says why).
func runRepo(ctx context.Context, rs *runtime.Runs, runID string) string {
	got, err := rs.Get(ctx, runID, false)
	if err != nil {
		return ""
	}
	return got.State.RepoID
}
