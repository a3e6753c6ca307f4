package harness

import (
	"context"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops/run"
	"github.com/harnessd/harnessd/messages"
)

// The types of the run operations under the names of the embedding API.
type (
	Caller             = messages.Caller
	Client             = messages.Client
	RunState           = messages.RunState
	RunSpan            = messages.RunSpan
	RunBudget          = messages.RunBudget
	RunEvent           = messages.RunEvent
	RunStartArgs       = run.StartArgs
	RunObserveArgs     = run.ObserveArgs
	RunStageArgs       = run.StageArgs
	RunStatusArgs      = run.StatusArgs
	RunListArgs        = run.ListArgs
	RunListResult      = run.ListResult
	RunEndArgs         = run.EndArgs
	RunResumeArgs      = run.ResumeArgs
	RunStateResult     = run.StateResult
	RunShape           = messages.RunShape
	RunChild           = messages.RunChild
	RunEscalateArgs    = run.EscalateArgs
	RunAssessArgs      = run.AssessArgs
	RunAssessResult    = run.AssessResult
	RunReviewArgs      = run.ReviewArgs
	RunReviewResult    = run.ReviewResult
	RunScorecardArgs   = run.ScorecardArgs
	RunScorecardResult = run.ScorecardResult
	ClientScore        = run.ClientScore
	RunSummary         = messages.RunSummary
	RunScorecard       = messages.RunScorecard
)

// WithCaller returns a context whose calls belong to c's run (c.RunID) or,
// without one, to the implicit run of c.Session (the MCP server sets it
// for every tool call). Calls with neither belong to no run.
func WithCaller(ctx context.Context, c Caller) context.Context { return op.WithCaller(ctx, c) }

// WithRun returns a context whose calls belong to run id.
func WithRun(ctx context.Context, id string) context.Context {
	c, _ := op.CallerFrom(ctx)
	c.RunID = id
	return op.WithCaller(ctx, c)
}

// RunStart starts a run.
func (h *Harness) RunStart(ctx context.Context, a RunStartArgs) (*RunStateResult, error) {
	return call(ctx, h, h.handles.RunStart, a)
}

// RunObserve adds an observation to a run.
func (h *Harness) RunObserve(ctx context.Context, a RunObserveArgs) (*RunStateResult, error) {
	return call(ctx, h, h.handles.RunObserve, a)
}

// RunStage records a stage of a run.
func (h *Harness) RunStage(ctx context.Context, a RunStageArgs) (*RunStateResult, error) {
	return call(ctx, h, h.handles.RunStage, a)
}

// RunStatus returns a run's state (and spans with IncludeSpans).
func (h *Harness) RunStatus(ctx context.Context, a RunStatusArgs) (*RunStateResult, error) {
	return call(ctx, h, h.handles.RunStatus, a)
}

// RunList lists runs, newest first.
func (h *Harness) RunList(ctx context.Context, a RunListArgs) (*RunListResult, error) {
	return call(ctx, h, h.handles.RunList, a)
}

// RunEnd ends a run.
func (h *Harness) RunEnd(ctx context.Context, a RunEndArgs) (*RunStateResult, error) {
	return call(ctx, h, h.handles.RunEnd, a)
}

// RunResume binds a run to the caller's session.
func (h *Harness) RunResume(ctx context.Context, a RunResumeArgs) (*RunStateResult, error) {
	return call(ctx, h, h.handles.RunResume, a)
}

// RunEscalate raises a run's tier (direct < bounded_work < campaign).
func (h *Harness) RunEscalate(ctx context.Context, a RunEscalateArgs) (*RunStateResult, error) {
	return call(ctx, h, h.handles.RunEscalate, a)
}

// RunAssess assesses a run's failure (default: its latest failed call)
// and answers a recovery plan.
func (h *Harness) RunAssess(ctx context.Context, a RunAssessArgs) (*RunAssessResult, error) {
	return call(ctx, h, h.handles.RunAssess, a)
}

// RunReview records a reviewer run's (or, approved by a person, a
// person's) verdict on a stage of a run.
func (h *Harness) RunReview(ctx context.Context, a RunReviewArgs) (*RunReviewResult, error) {
	return call(ctx, h, h.handles.RunReview, a)
}

// RunScorecard sums how runs went per client.
func (h *Harness) RunScorecard(ctx context.Context, a RunScorecardArgs) (*RunScorecardResult, error) {
	return call(ctx, h, h.handles.RunScorecard, a)
}

// SessionClosed tells the runs that an MCP session went away: its run can
// be resumed (run_resume) within 24 hours, then it ends as abandoned.
func (h *Harness) SessionClosed(session string) { h.rt.Runs.SessionClosed(session) }

// SubscribeRuns calls f with every run event until the returned function
// is called. f runs on the run actor's goroutine: it must not block.
func (h *Harness) SubscribeRuns(f func(RunEvent)) (cancel func()) {
	es := h.rt.System().EventStream
	sub := es.Subscribe(func(ev any) {
		if e, ok := ev.(messages.RunEvent); ok {
			f(e)
		}
	})
	return func() { es.Unsubscribe(sub) }
}
