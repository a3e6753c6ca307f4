package harness_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/verify"
)

// personOK answers an APPROVAL_REQUIRED error as a person would: it
// returns the approval id after a person approved it.
func personOK(t *testing.T, h *harness.Harness, err error) string {
	t.Helper()
	e := errs.From(err)
	apr, _ := e.Details["approval_id"].(string)
	if e.Code != errs.ApprovalRequired || apr == "" {
		t.Fatalf("%v, want APPROVAL_REQUIRED with an approval_id", err)
	}
	if _, err := h.DecideApproval(context.Background(), apr, true, "tester", "looked at it"); err != nil {
		t.Fatalf("approve %s: %v", apr, err)
	}
	return apr
}

func stage(h *harness.Harness, run, name, status string) error {
	_, err := h.RunStage(context.Background(), harness.RunStageArgs{RunID: run, Stage: name, Status: status})
	return err
}

// A stage with claims completes only once they verify; a stage nobody
// claimed anything of completes as before; force needs a person.
func TestStageCompletionNeedsVerifiedClaims(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := context.Background()
	run := claimRun(t, h, repo)

	if err := stage(h, run, "plan", "completed"); err != nil {
		t.Fatalf("completing a stage without claims: %v", err)
	}

	claimStage(t, h, run, "tests", "README says hi", harness.Evidence{Kind: "file", Path: "README.md", SHA256: strings.Repeat("0", 64)})
	err := stage(h, run, "tests", "completed")
	e := errs.From(err)
	if e.Code != errs.VerificationRequired || !strings.Contains(e.Message, `claims 0 "README says hi" do not verify`) || !strings.Contains(e.Message, "force") {
		t.Fatalf("completing a stage whose claim does not verify: %v, want VERIFICATION_REQUIRED naming the claim and the fix", err)
	}
	if bs, _ := e.Details["blockers"].([]verify.Blocker); len(bs) == 0 || bs[0].Fix == "" {
		t.Fatalf("blockers %#v, want the blocker with its fix", e.Details["blockers"])
	}
	st, _ := h.RunStatus(ctx, harness.RunStatusArgs{RunID: run})
	if strings.Contains(strings.Join(st.CompletedStages, ","), "tests") {
		t.Fatalf("a refused completion recorded the stage: %v", st.CompletedStages)
	}

	// The agent cannot force it alone: the call waits for a person.
	force := harness.RunStageArgs{RunID: run, Stage: "tests", Status: "completed", Force: true, Reason: "the fixture digest is a placeholder"}
	if _, err := h.RunStage(ctx, harness.RunStageArgs{RunID: run, Stage: "tests", Status: "completed", Force: true}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("force without a reason: %v, want INVALID_ARGUMENT", err)
	}
	_, err = h.RunStage(ctx, force)
	apr := personOK(t, h, err)
	force.ApprovalID = apr
	got, err := h.RunStage(ctx, force)
	if err != nil {
		t.Fatalf("a forced completion a person approved: %v", err)
	}
	if !strings.Contains(strings.Join(got.CompletedStages, ","), "tests") {
		t.Fatalf("completed stages %v, want tests", got.CompletedStages)
	}
	st, _ = h.RunStatus(ctx, harness.RunStatusArgs{RunID: run})
	found := false
	for _, o := range st.Observations {
		found = found || (o.Kind == "forced" && strings.Contains(o.Text, apr))
	}
	if !found {
		t.Fatalf("no observation names the forced completion and its approval: %+v", st.Observations)
	}
	if _, err := h.RunStage(ctx, harness.RunStageArgs{RunID: run, Stage: "x", Status: "started", Force: true, Reason: "r"}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("force on a started stage: %v, want INVALID_ARGUMENT", err)
	}

	// A claim that verifies lets the stage complete.
	r, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: repo, Path: "README.md"})
	if err != nil {
		t.Fatal(err)
	}
	claimStage(t, h, run, "docs", "README is as read", harness.Evidence{Kind: "file", Path: "README.md", SHA256: r.SHA256})
	if err := stage(h, run, "docs", "completed"); err != nil {
		t.Fatalf("completing a stage whose claim verifies: %v", err)
	}
}

// Review evidence verifies only with an approving review by a person
// (through an approval) or by another run; a run cannot review itself.
func TestReviewEvidence(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := context.Background()
	run := claimRun(t, h, repo)
	claimStage(t, h, run, "impl", "the parser change is reviewed", harness.Evidence{Kind: "review"})

	if v := verifyStage(t, h, run, "impl"); v.Passed || len(v.Blockers) != 1 || !strings.Contains(v.Blockers[0].Reason, "no review") || !strings.Contains(v.Blockers[0].Fix, "run_review") {
		t.Fatalf("a review claim without a review: %+v", v)
	}
	if err := stage(h, run, "impl", "completed"); errs.CodeOf(err) != errs.VerificationRequired {
		t.Fatalf("completing a stage that needs review, unreviewed: %v", err)
	}
	if _, err := h.RunClaim(ctx, harness.RunClaimArgs{RunID: run, Stage: "impl", Claim: "self", Evidence: []harness.Evidence{{Kind: "review", Reviewer: run}}}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("a claim naming its own run as reviewer: %v, want INVALID_ARGUMENT", err)
	}

	// The run reviewing itself: refused, and nothing verifies.
	self := harness.WithRun(ctx, run)
	if _, err := h.RunReview(self, harness.RunReviewArgs{RunID: run, Stage: "impl", Verdict: "approve"}); errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "cannot review itself") {
		t.Fatalf("a run reviewing itself: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := h.RunReview(ctx, harness.RunReviewArgs{RunID: run, Stage: "impl", Verdict: "approve"}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("a review from no run and not as a person: %v, want INVALID_ARGUMENT", err)
	}
	if v := verifyStage(t, h, run, "impl"); v.Passed {
		t.Fatalf("verified after refused reviews: %+v", v)
	}

	// A second run of the same session is the same agent.
	sess := harness.WithCaller(ctx, harness.Caller{Session: "s-own", Client: harness.Client{Name: "agent"}})
	own, err := h.RunStart(sess, harness.RunStartArgs{Goal: "own", RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.RunStart(sess, harness.RunStartArgs{Goal: "a reviewer of my own", RepoID: repo}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.RunReview(sess, harness.RunReviewArgs{RunID: own.RunID, Stage: "impl", Verdict: "approve"}); errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "its own") {
		t.Fatalf("a run of the same session reviewing: %v, want INVALID_ARGUMENT", err)
	}

	// Another run rejects, then approves.
	reviewer := claimRun(t, h, repo)
	as := harness.WithRun(ctx, reviewer)
	if _, err := h.RunReview(as, harness.RunReviewArgs{RunID: run, Stage: "impl", Verdict: "reject", Comment: "missing a test"}); err != nil {
		t.Fatal(err)
	}
	if v := verifyStage(t, h, run, "impl"); v.Passed || !strings.Contains(v.Blockers[0].Reason, "missing a test") {
		t.Fatalf("after a reject: %+v", v)
	}
	rv, err := h.RunReview(as, harness.RunReviewArgs{RunID: run, Stage: "impl", Verdict: "approve"})
	if err != nil || rv.Reviewer != reviewer || rv.Reviews != 2 {
		t.Fatalf("review: %+v, %v", rv, err)
	}
	if v := verifyStage(t, h, run, "impl"); !v.Passed {
		t.Fatalf("after another run approved: %+v", v)
	}
	if err := stage(h, run, "impl", "completed"); err != nil {
		t.Fatalf("completing the reviewed stage: %v", err)
	}

	// A person's review: the agent's call waits for a person's approval.
	claimStage(t, h, run, "design", "a person read the design", harness.Evidence{Kind: "review", Reviewer: "person"})
	if _, err := h.RunReview(as, harness.RunReviewArgs{RunID: run, Stage: "design", Verdict: "approve"}); err != nil {
		t.Fatal(err)
	}
	if v := verifyStage(t, h, run, "design"); v.Passed {
		t.Fatalf("a run's review verified a claim that names a person: %+v", v)
	}
	args := harness.RunReviewArgs{RunID: run, Stage: "design", Verdict: "approve", AsPerson: true}
	_, err = h.RunReview(ctx, args)
	args.ApprovalID = personOK(t, h, err)
	pr, err := h.RunReview(ctx, args)
	if err != nil || pr.Reviewer != "person" || pr.ApprovalID != args.ApprovalID {
		t.Fatalf("a person's review: %+v, %v", pr, err)
	}
	if v := verifyStage(t, h, run, "design"); !v.Passed || !strings.Contains(v.Evidence[0].Reason, "approved by person") {
		t.Fatalf("after a person's review: %+v", v)
	}
}

// A run that ends leaves a summary with its receipts, checks, stages and
// open blockers: run_status returns it, the next session's
// context_assemble in the repository reads it, and run_scorecard sums the
// client's runs from it.
func TestRunSummaryAndScorecard(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := harness.WithCaller(context.Background(), harness.Caller{Session: "s-sum", Client: harness.Client{Name: "agent-a", Version: "1"}})
	st, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "say hi", RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	run := st.RunID
	w, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo, RequestID: "sum-p1", Operations: []patch.Op{{Op: "replace", Path: "README.md", OldText: "hello", NewText: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	claimStage(t, h, run, "tests", "a claim left open")
	if _, err := h.RunEnd(ctx, harness.RunEndArgs{RunID: run, Reason: "done for now"}); err != nil {
		t.Fatal(err)
	}
	var sum *harness.RunSummary
	waitFor(t, "the run's summary", func() bool {
		s, err := h.RunStatus(ctx, harness.RunStatusArgs{RunID: run})
		if err == nil && s.Summary != nil {
			sum = s.Summary
		}
		return sum != nil
	})
	if sum.Trigger != "ended" || sum.Goal != "say hi" || sum.Client != "agent-a 1" || len(sum.Changes) != 1 || sum.Changes[0].ReceiptID != w.ReceiptID {
		t.Fatalf("summary: %+v, want the ended run with receipt %s", sum, w.ReceiptID)
	}
	if len(sum.Blockers) != 1 || !strings.Contains(sum.Blockers[0], `stage "tests" has claims that are not verified`) {
		t.Fatalf("blockers %q, want the unverified claim", sum.Blockers)
	}
	if !strings.Contains(sum.Text, w.ReceiptID) || len(sum.Text) > 2048 {
		t.Fatalf("text %q", sum.Text)
	}

	// The next session in the repository sees it.
	next := harness.WithCaller(context.Background(), harness.Caller{Session: "s-next", Client: harness.Client{Name: "agent-b"}})
	c, err := h.ContextAssemble(next, harness.ContextArgs{RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	if c.PreviousRun == nil || c.PreviousRun.RunID != run || !strings.Contains(c.PreviousRun.Text, w.ReceiptID) {
		t.Fatalf("context_assemble's previous run: %+v, want run %s's summary", c.PreviousRun, run)
	}

	// The scorecard: one run of agent-a, ended with work open.
	sc, err := h.RunScorecard(context.Background(), harness.RunScorecardArgs{Client: "agent-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Clients) != 1 || sc.Clients[0].Runs != 1 || sc.Clients[0].Failed != 1 || sc.Clients[0].Succeeded != 0 || sc.Clients[0].Scorecard.StagesClaimed != 1 {
		t.Fatalf("scorecard: %+v", sc)
	}
	all, err := h.RunScorecard(context.Background(), harness.RunScorecardArgs{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, cs := range all.Clients {
		names = append(names, cs.Client)
	}
	if !strings.Contains(strings.Join(names, ","), "agent-a") || !strings.Contains(strings.Join(names, ","), "agent-b") {
		t.Fatalf("clients %v, want agent-a and agent-b", names)
	}
	live, err := h.RunStatus(next, harness.RunStatusArgs{})
	if err != nil || live.Scorecard == nil || live.Scorecard.Calls == 0 {
		t.Fatalf("run_status of a live run: scorecard %+v, %v", live.Scorecard, err)
	}
}
