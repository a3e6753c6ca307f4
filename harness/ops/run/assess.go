package run

import (
	"context"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/recovery"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/messages"
)

// AssessOps returns the recovery operations (FlowDeck L6): run_assess.
func AssessOps() []op.Op {
	return []op.Op{
		op.Def(op.Spec[AssessArgs]{Name: "run_assess", Output: AssessResult{}, ReadOnly: true, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.ReadRoles, NoRepo: true,
			Description: "When a run's call failed and the cause is unclear or keeps coming back: its type (loop, deadlock, transient, contract, budget, unknown) with the evidence, " +
				"and what to do next (retry, retry_after, escalate_durable, ask_human, abort). Default: the latest failed call. " +
				"Example: {\"run_id\":\"run_1\"}",
			Prepare: assess}),
	}
}

// AssessArgs are the arguments of run_assess.
type AssessArgs struct {
	RunID  string `json:"run_id" jsonschema:"the run"`
	SpanID string `json:"span_id,omitempty" jsonschema:"the failed call (run_status include_spans); default the latest"`
	op.Approval
}

// AssessResult is the answer of run_assess.
type AssessResult struct {
	recovery.Report
	op.Meta
}

func assess(_ context.Context, c *op.Call, args AssessArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		rs, err := runsOf(c)
		if err != nil {
			return nil, err
		}
		got, err := rs.Get(ctx, args.RunID, true)
		if err != nil {
			return nil, err
		}
		rep, err := Assess(got.State, got.Spans, args.SpanID)
		if err != nil {
			return nil, err
		}
		rep.Children = rs.Children(ctx, got.State)
		return &AssessResult{Report: rep}, nil
	}}, nil
}

// Assess builds the run_assess report of st from its spans: of the span
// spanID, or of the run's latest failed call ("").
func Assess(st messages.RunState, spans []messages.RunSpan, spanID string) (recovery.Report, error) {
	bound := runs.RetryBound(st)
	rep := recovery.Report{RunID: st.RunID, MaxRetries: bound, RetriesLeft: bound}
	var span messages.RunSpan
	found := false
	if spanID != "" {
		for _, s := range spans {
			if s.SpanID == spanID {
				span, found = s, true
				break
			}
		}
		if !found {
			return rep, errs.New(errs.NotFound, "run %s has no span %s (run_status with include_spans lists them)", st.RunID, spanID).
				With("run_id", st.RunID).With("span_id", spanID)
		}
		if span.Outcome == "ok" {
			return rep, errs.New(errs.InvalidArgument, "span %s of run %s succeeded: there is no failure to assess", spanID, st.RunID).
				With("run_id", st.RunID).With("span_id", spanID)
		}
	} else {
		span, found = runs.LatestFailure(spans)
		if lf := st.LastFailure; lf != nil && (!found || lf.At.After(span.Start)) {
			// The ring dropped it: what the state remembers.
			span = messages.RunSpan{RunID: st.RunID, SpanID: lf.SpanID, Kind: messages.SpanOperation, Op: lf.Op,
				Outcome: "error", ErrorCode: lf.ErrorCode, Stage: lf.Stage, Start: lf.At}
			found = true
		}
		if !found {
			return rep, nil
		}
	}
	rep.Span = &span
	rep.Attempts = runs.AttemptsOf(spans, span)
	a := recovery.Assess(recovery.Facts{Span: span, Attempts: rep.Attempts, State: st})
	p := recovery.Plan(a, a.Attempts, bound)
	rep.Assessment, rep.Plan = &a, &p
	rep.RetriesLeft = max(bound-(a.Attempts-1), 0)
	return rep, nil
}
