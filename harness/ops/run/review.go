package run

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/verify"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// ReviewOps returns run_review (FlowDeck L5: a person's or another run's
// verdict on a stage, the evidence of kind review) and run_scorecard
// (L8: how each client's runs went).
func ReviewOps() []op.Op {
	return []op.Op{
		op.Def(op.Spec[ReviewArgs]{Name: "run_review", Output: ReviewResult{}, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, NoRepo: true,
			Description: "Give a reviewer's verdict (approve or reject) on a stage of another run, from your own run, so that run's review evidence verifies; " +
				"as_person records a person's verdict once a person approves the call. A run cannot review itself. " +
				"Example: {\"run_id\":\"run_1\",\"stage\":\"impl\",\"verdict\":\"approve\",\"comment\":\"diff reads well\"}",
			Prepare: review}),
		op.Def(op.Spec[ScorecardArgs]{Name: "run_scorecard", Output: ScorecardResult{}, ReadOnly: true, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.ReadRoles, NoRepo: true,
			Description: "See how runs went, per client: commits tested before they were made, verified stages, approvals, reverts, retries, policy denials. " +
				"One run's: run_status. " +
				"Example: {\"client\":\"claude-code\",\"limit\":50}",
			Prepare: scorecard}),
	}
}

// ReviewArgs are the arguments of run_review.
type ReviewArgs struct {
	RunID    string `json:"run_id" jsonschema:"the run reviewed"`
	Stage    string `json:"stage" jsonschema:"its stage reviewed"`
	Verdict  string `json:"verdict" enum:"approve,reject" jsonschema:"approve or reject"`
	Comment  string `json:"comment,omitempty" jsonschema:"why (≤ 4096 bytes; secrets redacted)"`
	AsPerson bool   `json:"as_person,omitempty" jsonschema:"a person's verdict: the call waits for a person's approval"`
	op.Approval
}

// ReviewResult is the stored review and the stage's reviews.
type ReviewResult struct {
	verify.Review
	RunID   string `json:"run_id"`
	Stage   string `json:"stage"`
	Reviews int    `json:"reviews"`
	op.Meta
}

func review(_ context.Context, c *op.Call, args ReviewArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	if err := runs.ValidText("stage", args.Stage, runs.MaxStage); err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_review: %v", err)
	}
	switch args.Verdict {
	case verify.VerdictApprove, verify.VerdictReject:
	default:
		return nil, errs.New(errs.InvalidArgument, "verdict %q: approve or reject", args.Verdict)
	}
	if len(args.Comment) > runs.MaxText {
		return nil, errs.New(errs.InvalidArgument, "comment is %d bytes; at most %d", len(args.Comment), runs.MaxText)
	}
	gate := op.GateArgs(args)
	if args.AsPerson {
		// Only a person's approval lets it through: an agent cannot say
		// a person reviewed its work.
		gate.Grant = args.Verdict + " stage " + strconv.Quote(args.Stage) + " of run " + args.RunID + " as a person's review" +
			reviewComment(args.Comment) + ": only a person may approve this"
	}
	return &op.Plan{Gate: gate, Run: func(ctx context.Context) (any, error) {
		rs, err := runsOf(c)
		if err != nil {
			return nil, err
		}
		got, err := rs.Get(ctx, args.RunID, false)
		if err != nil {
			return nil, err
		}
		reviewer := verify.ReviewerPerson
		if !args.AsPerson {
			// The reviewer is the caller's run: its explicit run, else its
			// session's (run_review itself joins no run).
			who := caller(ctx)
			reviewer = who.RunID
			if reviewer == "" && who.Session != "" {
				if e, ok, err := rs.Resolve(ctx, who); err == nil && ok {
					reviewer = e.ID
				}
			}
			switch {
			case who.Session != "" && who.Session == got.State.Caller.Session:
				return nil, errs.New(errs.InvalidArgument, "run %s belongs to this session, so its review would be its own: review it from another session's run, or give as_person so a person approves it", args.RunID).
					With("run_id", args.RunID)
			case reviewer == "":
				return nil, errs.New(errs.InvalidArgument, "run_review needs a reviewer: call it from a reviewer run (run_start, or an MCP session's run) or give as_person so a person approves it")
			case reviewer == args.RunID:
				return nil, errs.New(errs.InvalidArgument, "run %s cannot review itself: start a reviewer run in another session (run_start), or give as_person so a person approves it", args.RunID).
					With("run_id", args.RunID)
			}
		}
		rv := verify.Review{Reviewer: reviewer, Verdict: args.Verdict, Comment: redact(ctx, c, args.Comment, got.State.RepoID), At: c.Env.Now().UTC()}
		if args.AsPerson {
			rv.ApprovalID = args.ApprovalID
		}
		key := persistence.ClaimKey(args.RunID, args.Stage)
		var rec verify.Stage
		err = c.Env.Store.Update(true, func(tx *persistence.Txn) error {
			rec = verify.Stage{}
			switch err := tx.Get(key, &rec); {
			case errors.Is(err, persistence.ErrNotFound):
				rec = verify.Stage{RunID: args.RunID, Stage: args.Stage, Status: verify.StatusClaimed}
			case err != nil:
				return err
			}
			verify.AddReview(&rec, rv)
			rec.UpdatedAt = rv.At
			return tx.Put(key, rec)
		})
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "store the review: %v", err)
		}
		note(ctx, rs, args.RunID, "review", args.Stage+": "+args.Verdict+" by "+reviewer+reviewComment(rv.Comment))
		return &ReviewResult{Review: rv, RunID: args.RunID, Stage: args.Stage, Reviews: len(rec.Reviews)}, nil
	}}, nil
}

func reviewComment(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:197], "") + "..."
	}
	return " (" + s + ")"
}

// completeGate is run_stage's check before a stage is completed: a stage
// with claims (review evidence included) completes only while they verify
// now. A stage nobody claimed anything of completes as before.
func completeGate(ctx context.Context, c *op.Call, runID, stage string) error {
	has, err := c.Env.Store.Has(persistence.ClaimKey(runID, stage))
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "read the claims of stage %q: %v", stage, err)
	}
	if !has {
		return nil
	}
	res, err := Verify(ctx, c.Env, runID, stage)
	if err != nil {
		return err
	}
	if res.Passed {
		return nil
	}
	var unverified []string
	for i, cl := range res.Claims {
		if cl.Status != verify.StatusVerified {
			unverified = append(unverified, strconv.Itoa(i)+" "+strconv.Quote(clipText(cl.Claim, 120)))
		}
	}
	reason, fix := "no claim", "run_claim with evidence, then run_verify"
	if len(res.Blockers) > 0 {
		reason, fix = res.Blockers[0].Reason, res.Blockers[0].Fix
	}
	what := "it has no claim"
	if len(unverified) > 0 {
		what = "claims " + strings.Join(unverified, ", ") + " do not verify"
	}
	return errs.New(errs.VerificationRequired, "stage %q of run %s cannot be completed: %s (%s). Fix: %s; then run_stage again, or ask a person to complete it anyway (run_stage with force: true, which a person approves)",
		stage, runID, what, reason, fix).
		With("run_id", runID).With("stage", stage).With("stages", []string{stage}).With("blockers", res.Blockers)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-3], "") + "..."
}

// ScorecardArgs are the arguments of run_scorecard.
type ScorecardArgs struct {
	Client string `json:"client,omitempty" jsonschema:"only runs of this client (its name, e.g. claude-code)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"the newest runs looked at (default 100, max 1000)"`
	op.Approval
}

// ClientScore is one client's runs and their scorecard summed.
type ClientScore struct {
	Client string `json:"client"`
	Runs   int    `json:"runs"`
	// Succeeded are its runs that ended (run_end or their session) with
	// nothing open: no blocked or stuck stage, no unverified claim.
	Succeeded int                   `json:"succeeded"`
	Active    int                   `json:"active"`
	Failed    int                   `json:"failed"` // deadline, abandoned, or ended with work open
	Stuck     int                   `json:"stuck"`
	Scorecard messages.RunScorecard `json:"scorecard"`
}

// ScorecardResult is the result of run_scorecard.
type ScorecardResult struct {
	Clients []ClientScore `json:"clients"`
	// Runs counts the runs looked at.
	Runs int `json:"runs"`
	op.Meta
}

func scorecard(_ context.Context, c *op.Call, args ScorecardArgs) (*op.Plan, error) {
	if args.Limit < 0 || args.Limit > 1000 {
		return nil, errs.New(errs.InvalidArgument, "limit must be between 0 and 1000")
	}
	if len(args.Client) > 256 {
		return nil, errs.New(errs.InvalidArgument, "client is %d bytes; at most 256", len(args.Client))
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		rs, err := runsOf(c)
		if err != nil {
			return nil, err
		}
		limit := args.Limit
		if limit == 0 {
			limit = 100
		}
		states, err := rs.List(ctx, "", limit)
		if err != nil {
			return nil, err
		}
		return Scorecards(ctx, c.Env.Store, rs, states, args.Client), nil
	}}, nil
}

// Scorecards sums the scorecards of states per client (only client's
// when set): an ended run's from its stored summary, a live one's computed
// now from its spans and stage records.
func Scorecards(ctx context.Context, store *persistence.Store, rs *runtime.Runs, states []messages.RunState, client string) *ScorecardResult {
	by := map[string]*ClientScore{}
	out := &ScorecardResult{Clients: []ClientScore{}}
	for _, st := range states {
		name := st.Caller.Client.Name
		if name == "" {
			name = "(unknown)"
		}
		if client != "" && name != client {
			continue
		}
		out.Runs++
		cs := by[name]
		if cs == nil {
			cs = &ClientScore{Client: name}
			by[name] = cs
		}
		cs.Runs++
		var sum messages.RunSummary
		if st.Summary != nil && st.Status != messages.RunActive {
			sum = *st.Summary
		} else {
			sum = LiveSummary(ctx, store, rs, st)
		}
		runs.AddScore(&cs.Scorecard, sum.Scorecard)
		switch {
		case st.Status == messages.RunActive:
			cs.Active++
			if st.Stuck {
				cs.Stuck++
			}
		case st.Status == messages.RunEnded && len(sum.Blockers) == 0:
			cs.Succeeded++
		default:
			cs.Failed++
		}
	}
	for _, cs := range by {
		out.Clients = append(out.Clients, *cs)
	}
	slices.SortFunc(out.Clients, func(a, b ClientScore) int { return strings.Compare(a.Client, b.Client) })
	return out
}

// LiveSummary computes a run's summary now, from its spans (in memory
// and stored) and its stage records; its jobs are not looked up.
func LiveSummary(ctx context.Context, store *persistence.Store, rs *runtime.Runs, st messages.RunState) messages.RunSummary {
	var spans []messages.RunSpan
	if got, err := rs.Get(ctx, st.RunID, true); err == nil {
		st, spans = got.State, got.Spans
	}
	return summaryOf(store, st, spans)
}

// summaryOf computes the summary of st with its spans now.
func summaryOf(store *persistence.Store, st messages.RunState, spans []messages.RunSpan) messages.RunSummary {
	trigger := runs.SummaryIdle
	if st.Status != messages.RunActive {
		trigger = runs.SummaryEnded
	}
	return runs.Summarize(runs.SummaryFacts{State: st, Spans: spans, Stages: StageFactsOf(store, st.RunID), Trigger: trigger, Now: st.UpdatedAt})
}

// StageFactsOf reads the stage records of a run as the summary reads
// them.
func StageFactsOf(store *persistence.Store, runID string) []runs.StageFacts {
	var out []runs.StageFacts
	_ = store.Scan(persistence.ClaimRunPrefix(runID), func(_ []byte, decode func(any) error) error {
		var st verify.Stage
		if decode(&st) != nil {
			return nil
		}
		out = append(out, runs.FactsOfStage(st))
		return nil
	})
	return out
}
