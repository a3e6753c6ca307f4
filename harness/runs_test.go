package harness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/recovery"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

func session(id string) context.Context {
	return harness.WithCaller(context.Background(), harness.Caller{Session: id, Client: harness.Client{Name: "test-agent", Version: "1.0"}})
}

// runOf returns a run with its spans. It goes through the run's mailbox
// after the spans its calls sent, so it sees every finished call.
func runOf(t *testing.T, h *harness.Harness, ctx context.Context, id string) *harness.RunStateResult {
	t.Helper()
	st, err := h.RunStatus(ctx, harness.RunStatusArgs{RunID: id, IncludeSpans: true})
	if err != nil {
		t.Fatalf("run_status %s: %v", id, err)
	}
	return st
}

func TestImplicitRunPerSession(t *testing.T) {
	h, _, repo := fixture(t)
	a, b := session("sess-a"), session("sess-b")
	for range 3 {
		if _, err := h.ReadFile(a, harness.ReadFileArgs{RepoID: repo, Path: "README.md"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.GitStatus(b, harness.GitStatusArgs{RepoID: repo}); err != nil {
		t.Fatal(err)
	}
	// A call outside a session belongs to no run.
	if _, err := h.ReadFile(context.Background(), harness.ReadFileArgs{RepoID: repo, Path: "README.md"}); err != nil {
		t.Fatal(err)
	}
	ra, err := h.RunStatus(a, harness.RunStatusArgs{IncludeSpans: true})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := h.RunStatus(b, harness.RunStatusArgs{IncludeSpans: true})
	if err != nil {
		t.Fatal(err)
	}
	if ra.RunID == rb.RunID || !ra.Implicit || !rb.Implicit {
		t.Fatalf("sessions share a run or runs are not implicit: %s %s", ra.RunID, rb.RunID)
	}
	if ra.Caller.Session != "sess-a" || ra.Caller.Client.Name != "test-agent" || ra.Caller.Client.Version != "1.0" {
		t.Fatalf("identity of the implicit run: %+v", ra.Caller)
	}
	if len(ra.Spans) != 3 || ra.Counters.Calls != 3 || ra.Counters.Reads != 3 || len(rb.Spans) != 1 {
		t.Fatalf("spans a=%d (calls %d) b=%d", len(ra.Spans), ra.Counters.Calls, len(rb.Spans))
	}
	s := ra.Spans[0]
	if s.Op != "read_file" || s.Outcome != "ok" || s.InputHash == "" || s.OutputBytes == 0 || s.Persist || s.Session != "sess-a" {
		t.Fatalf("span: %+v", s)
	}
	list, err := h.RunList(context.Background(), harness.RunListArgs{})
	if err != nil || len(list.Runs) != 2 {
		t.Fatalf("run_list: %v %d", err, len(list.Runs))
	}
}

// The seed's rule: read-only work creates no persisted record, in a run
// too.
func TestReadOnlyCallInARunWritesNothing(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := session("reader")
	if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: repo, Path: "README.md"}); err != nil {
		t.Fatal(err)
	}
	runOf(t, h, ctx, "") // the implicit run exists and took the span
	before := h.Store().Writes()
	for range 5 {
		if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: repo, Path: "src/main.go"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Search(ctx, harness.SearchArgs{RepoID: repo, Query: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	st := runOf(t, h, ctx, "")
	if st.Counters.Calls != 11 {
		t.Fatalf("calls = %d, want 11", st.Counters.Calls)
	}
	if after := h.Store().Writes(); after != before {
		t.Fatalf("read-only calls wrote %d transactions to the store", after-before)
	}
}

func TestSpansNestForBatchAndLanes(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := session("nest")
	_, err := h.Batch(ctx, harness.BatchArgs{RepoID: repo, Steps: []harness.BatchStep{
		step("read_file", map[string]any{"path": "README.md"}),
		step("search", map[string]any{"query": "hello"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.ReadLanes(ctx, harness.ReadLanesArgs{RepoID: repo, Lanes: []harness.BatchStep{
		step("read_file", map[string]any{"path": "README.md"}),
		step("git_status", map[string]any{}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := runOf(t, h, ctx, "")
	byID := map[string]messages.RunSpan{}
	for _, s := range st.Spans {
		byID[s.SpanID] = s
	}
	children := map[string][]string{}
	for _, s := range st.Spans {
		if s.ParentID != "" {
			p, ok := byID[s.ParentID]
			if !ok {
				t.Fatalf("span %s (%s) has an unknown parent %s", s.SpanID, s.Op, s.ParentID)
			}
			children[p.Op] = append(children[p.Op], s.Op)
		}
	}
	if len(children["batch"]) != 2 || len(children["read_lanes"]) != 2 {
		t.Fatalf("children: %v (spans %d)", children, len(st.Spans))
	}
}

func TestBudgetsStopTheCallThatCrossesThem(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := session("budget")
	r, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "try the budget", RepoID: repo, Budget: harness.RunBudget{Commands: 2, Mutations: 1}})
	if err != nil {
		t.Fatal(err)
	}
	in := harness.WithRun(ctx, r.RunID)
	for i := range 2 {
		if _, err := h.RunCommand(in, harness.RunCommandArgs{RepoID: repo, Argv: []string{"git", "status"}}); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
	}
	_, err = h.RunCommand(in, harness.RunCommandArgs{RepoID: repo, Argv: []string{"git", "status"}})
	if errs.CodeOf(err) != errs.BudgetExceeded {
		t.Fatalf("third command: %v, want BUDGET_EXCEEDED", err)
	}
	e := errs.From(err)
	if e.Details["resource"] != "commands" || e.Details["limit"] != int64(2) {
		t.Fatalf("details: %v", e.Details)
	}
	// Reads draw nothing and still run.
	if _, err := h.ReadFile(in, harness.ReadFileArgs{RepoID: repo, Path: "README.md"}); err != nil {
		t.Fatal(err)
	}
	// A child run draws on its parent's budget: the parent has one
	// mutation; the child's second is refused though its own budget is open.
	c, err := h.RunStart(ctx, harness.RunStartArgs{ParentRunID: r.RunID})
	if err != nil {
		t.Fatal(err)
	}
	child := harness.WithRun(ctx, c.RunID)
	if _, err := h.ApplyPatch(child, harness.ApplyPatchArgs{RepoID: repo, RequestID: "b1", Operations: []patch.Op{{Op: "replace", Path: "README.md", OldText: "hello", NewText: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = h.ApplyPatch(child, harness.ApplyPatchArgs{RepoID: repo, RequestID: "b2", Operations: []patch.Op{{Op: "replace", Path: "README.md", OldText: "hi", NewText: "hey"}}})
	if errs.CodeOf(err) != errs.BudgetExceeded || errs.From(err).Details["run_id"] != r.RunID {
		t.Fatalf("child's second mutation: %v, want BUDGET_EXCEEDED of the parent", err)
	}
	cs := runOf(t, h, ctx, c.RunID)
	if cs.Counters.Mutations != 1 || len(cs.Spans) != 2 || cs.Spans[0].ReceiptID == "" || !cs.Spans[0].Persist {
		t.Fatalf("child: counters %+v spans %+v", cs.Counters, cs.Spans)
	}
	ps := runOf(t, h, ctx, r.RunID)
	if ps.Drawn.Mutations != 1 || ps.Counters.Commands != 2 {
		t.Fatalf("parent: counters %+v drawn %+v", ps.Counters, ps.Drawn)
	}
}

func TestOutputBudgetRefusesTheNextCall(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := context.Background()
	r, err := h.RunStart(ctx, harness.RunStartArgs{Budget: harness.RunBudget{OutputBytes: 10}})
	if err != nil {
		t.Fatal(err)
	}
	in := harness.WithRun(ctx, r.RunID)
	if _, err := h.ReadFile(in, harness.ReadFileArgs{RepoID: repo, Path: "README.md"}); err != nil {
		t.Fatalf("the call that crosses the limit completes: %v", err)
	}
	runOf(t, h, ctx, r.RunID) // the span is counted
	_, err = h.ReadFile(in, harness.ReadFileArgs{RepoID: repo, Path: "README.md"})
	if errs.CodeOf(err) != errs.BudgetExceeded || errs.From(err).Details["resource"] != "output_bytes" {
		t.Fatalf("next call: %v, want BUDGET_EXCEEDED output_bytes", err)
	}
}

func TestRunDeadlineEndsTheRun(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := context.Background()
	r, err := h.RunStart(ctx, harness.RunStartArgs{Budget: harness.RunBudget{WallS: 60}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Runtime().Runs.Sweep(ctx, time.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	st := runOf(t, h, ctx, r.RunID)
	if st.Status != messages.RunDeadline || st.EndReason == "" {
		t.Fatalf("status %s (%s), want deadline", st.Status, st.EndReason)
	}
	_, err = h.ReadFile(harness.WithRun(ctx, r.RunID), harness.ReadFileArgs{RepoID: repo, Path: "README.md"})
	if errs.CodeOf(err) != errs.RunEnded {
		t.Fatalf("call in an ended run: %v, want RUN_ENDED", err)
	}
}

func TestRunStagesObservationsAndEnd(t *testing.T) {
	h, _, _ := fixture(t)
	ctx := session("stages")
	r, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "fix the bug", WorkflowClass: "bugfix"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.RunID
	steps := []struct{ stage, status, reason string }{
		{"reproduce", "started", ""}, {"reproduce", "completed", ""}, {"fix", "started", ""}, {"fix", "blocked", "needs a decision on the API"},
	}
	for _, s := range steps {
		if _, err := h.RunStage(ctx, harness.RunStageArgs{RunID: id, Stage: s.stage, Status: s.status, Reason: s.reason}); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
	}
	if _, err := h.RunObserve(ctx, harness.RunObserveArgs{RunID: id, Kind: "finding", Text: "the token is sk_live_51Habcdefghijklmnopqrstuvwx"}); err != nil {
		t.Fatal(err)
	}
	st := runOf(t, h, ctx, id)
	if st.CurrentStage != "fix" || !st.Blocked || st.BlockedReason == "" || len(st.CompletedStages) != 1 {
		t.Fatalf("state: %+v", st.RunState)
	}
	last := st.Observations[len(st.Observations)-1]
	if last.Source != "agent" || last.Kind != "finding" || last.Text == "" || strings.Contains(last.Text, "sk_live_51H") {
		t.Fatalf("observation (secrets must be redacted): %+v", last)
	}
	bad := []harness.RunStageArgs{{RunID: id, Stage: "x", Status: "done"}, {RunID: id, Stage: "", Status: "started"}, {RunID: id, Stage: "x", Status: "blocked"}, {Stage: "x", Status: "started"}}
	for _, b := range bad {
		if _, err := h.RunStage(ctx, b); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("run_stage %+v: %v, want INVALID_ARGUMENT", b, err)
		}
	}
	if _, err := h.RunEnd(ctx, harness.RunEndArgs{RunID: id, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.RunEnd(ctx, harness.RunEndArgs{RunID: id}); err != nil {
		t.Fatalf("ending an ended run answers its state: %v", err)
	}
	if _, err := h.RunObserve(ctx, harness.RunObserveArgs{RunID: id, Kind: "x", Text: "late"}); errs.CodeOf(err) != errs.RunEnded {
		t.Fatalf("observe an ended run: %v, want RUN_ENDED", err)
	}
	if _, err := h.RunStatus(ctx, harness.RunStatusArgs{RunID: "run_nope"}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("unknown run: %v, want NOT_FOUND", err)
	}
	for _, a := range []harness.RunStartArgs{{WorkflowClass: "Bug Fix"}, {Budget: harness.RunBudget{Commands: -1}}, {ParentRunID: "run_nope"}, {RepoID: "repo_nope"}} {
		if _, err := h.RunStart(ctx, a); err == nil {
			t.Errorf("run_start %+v was accepted", a)
		}
	}
}

// A run past its deadline is ended and the jobs it started are cancelled;
// a job counts against the jobs budget.
func TestRunDeadlineCancelsItsJobs(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := context.Background()
	r, err := h.RunStart(ctx, harness.RunStartArgs{Budget: harness.RunBudget{WallS: 60, Jobs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	in := harness.WithRun(ctx, r.RunID)
	j, err := h.JobStart(in, harness.JobStartArgs{RepoID: repo, Argv: []string{"sleep", "60"}, RequestID: "deadline-job"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.JobStart(in, harness.JobStartArgs{RepoID: repo, Argv: []string{"true"}, RequestID: "deadline-job-2"}); errs.CodeOf(err) != errs.BudgetExceeded {
		t.Fatalf("second job: %v, want BUDGET_EXCEEDED", err)
	}
	st := runOf(t, h, ctx, r.RunID)
	if len(st.Jobs) != 1 || st.Jobs[0] != j.JobID {
		t.Fatalf("the run's jobs: %v", st.Jobs)
	}
	if err := h.Runtime().Runs.Sweep(ctx, time.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	done := waitJob(t, h, j.JobID)
	if done.State != "cancelled" {
		t.Fatalf("the run's job after its deadline: %s, want cancelled", done.State)
	}
	if st := runOf(t, h, ctx, r.RunID); st.Status != messages.RunDeadline {
		t.Fatalf("run: %s", st.Status)
	}
}

// A call that repeats a failed call (same operation and input, same
// stage) is a retry; past the run's bound (3 by default) it answers
// RETRY_LIMIT with the history and the plan; a new stage starts afresh.
func TestRetryLimitAfterFailingCallsAndResetOnANewStage(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := session("retry")
	r, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "find the missing file"})
	if err != nil {
		t.Fatal(err)
	}
	in := harness.WithRun(ctx, r.RunID)
	missing := harness.ReadFileArgs{RepoID: repo, Path: "missing.txt"}
	var ids []string
	for i := range 4 { // the call and its three retries run
		if _, err := h.ReadFile(in, missing); errs.CodeOf(err) != errs.NotFound {
			t.Fatalf("attempt %d: %v, want NOT_FOUND", i+1, err)
		}
	}
	_, err = h.ReadFile(in, missing)
	if errs.CodeOf(err) != errs.RetryLimit {
		t.Fatalf("the fourth retry: %v, want RETRY_LIMIT", err)
	}
	d := errs.From(err).Details
	atts, _ := d["attempts"].([]messages.RunAttempt)
	plan, _ := d["plan"].(recovery.RecoveryPlan)
	as, _ := d["assessment"].(recovery.Assessment)
	if len(atts) != 4 || d["max_retries"] != 3 || d["operation"] != "read_file" || d["run_id"] != r.RunID || plan.Action != recovery.Abort || as.Type != recovery.Contract {
		t.Fatalf("details: %+v", d)
	}
	for _, a := range atts {
		if a.SpanID == "" || a.ErrorCode != "NOT_FOUND" || a.At.IsZero() {
			t.Fatalf("attempt %+v", a)
		}
		ids = append(ids, a.SpanID)
	}
	// Another input, and a read that works, still run.
	if _, err := h.ReadFile(in, harness.ReadFileArgs{RepoID: repo, Path: "other.txt"}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("another input: %v", err)
	}
	if _, err := h.ReadFile(in, harness.ReadFileArgs{RepoID: repo, Path: "README.md"}); err != nil {
		t.Fatal(err)
	}
	st := runOf(t, h, ctx, r.RunID)
	if n := len(st.Spans); n != 7 || st.Spans[4].ErrorCode != "RETRY_LIMIT" || !st.Spans[4].Persist {
		t.Fatalf("%d spans; the refusal: %+v", n, st.Spans[min(4, n-1)])
	}
	if st.LastFailure == nil || st.LastFailure.ErrorCode != "NOT_FOUND" || len(st.Retries) != 2 || st.Retries[0].Failures != 4 {
		t.Fatalf("last failure %+v, retries %+v", st.LastFailure, st.Retries)
	}
	if last := st.Observations[len(st.Observations)-2]; last.Kind != "retry" {
		t.Fatalf("no retry note: %+v", st.Observations)
	}
	// run_assess answers the same assessment for the latest failed call.
	rep, err := h.RunAssess(ctx, harness.RunAssessArgs{RunID: r.RunID, SpanID: ids[3]})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Assessment == nil || rep.Assessment.Type != recovery.Contract || rep.Assessment.Attempts != 4 || rep.Plan.Action != recovery.Abort || rep.RetriesLeft != 0 {
		t.Fatalf("run_assess: %+v %+v", rep.Assessment, rep.Plan)
	}
	// A new stage starts the retries afresh.
	if _, err := h.RunStage(ctx, harness.RunStageArgs{RunID: r.RunID, Stage: "look elsewhere", Status: "started"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadFile(in, missing); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("the same call in a new stage: %v, want NOT_FOUND", err)
	}
	if st := runOf(t, h, ctx, r.RunID); len(st.Retries) != 1 || st.Retries[0].Stage != "look elsewhere" || st.Retries[0].Failures != 1 {
		t.Fatalf("retries in the new stage: %+v", st.Retries)
	}

	// max_retries bounds it per run; 0 allows no retry at all.
	zero := 0
	r0, err := h.RunStart(ctx, harness.RunStartArgs{MaxRetries: &zero})
	if err != nil {
		t.Fatal(err)
	}
	in0 := harness.WithRun(ctx, r0.RunID)
	if _, err := h.ReadFile(in0, missing); errs.CodeOf(err) != errs.NotFound {
		t.Fatal(err)
	}
	if _, err := h.ReadFile(in0, missing); errs.CodeOf(err) != errs.RetryLimit {
		t.Fatalf("a retry with max_retries 0: %v, want RETRY_LIMIT", err)
	}
	bad := 101
	if _, err := h.RunStart(ctx, harness.RunStartArgs{MaxRetries: &bad}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("max_retries 101: %v", err)
	}
}

// A run's tier is chosen from its declared shape; a call that needs more
// answers suggested_escalation (the code stays); run_escalate raises it,
// audited and observed, never lowers it.
func TestRunTierAndEscalation(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := session("tier")
	for _, c := range []struct {
		args        harness.RunStartArgs
		tier, class string
	}{
		{harness.RunStartArgs{}, "", ""},
		{harness.RunStartArgs{WorkflowClass: "bugfix"}, "", "bugfix"},
		{harness.RunStartArgs{WorkflowClass: "bugfix", Shape: &harness.RunShape{Writes: true}}, "direct", "bugfix"},
		{harness.RunStartArgs{WorkflowClass: "bugfix", Shape: &harness.RunShape{Writes: true, Durable: true}}, "bounded_work", "bugfix"},
		{harness.RunStartArgs{Shape: &harness.RunShape{Deliverables: 3}}, "campaign", ""},
		{harness.RunStartArgs{WorkflowClass: "bounded_work"}, "bounded_work", "bounded_work"},
	} {
		st, err := h.RunStart(ctx, c.args)
		if err != nil || st.Tier != c.tier || st.WorkflowClass != c.class {
			t.Errorf("run_start %+v: tier %q class %q, %v; want %q %q", c.args, st.Tier, st.WorkflowClass, err, c.tier, c.class)
		}
	}
	if _, err := h.RunStart(ctx, harness.RunStartArgs{WorkflowClass: "direct", Shape: &harness.RunShape{Durable: true}}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("a class below its shape: %v, want INVALID_ARGUMENT", err)
	}

	r, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "read around", Shape: &harness.RunShape{}})
	if err != nil || r.Tier != "direct" {
		t.Fatalf("an empty shape: %+v %v", r, err)
	}
	in := harness.WithRun(ctx, r.RunID)
	long := harness.RunCommandArgs{RepoID: repo, Argv: []string{"git", "status"}, TimeoutMs: 60_000}
	_, err = h.RunCommand(in, long)
	if errs.CodeOf(err) != errs.RouteDurableRequired {
		t.Fatalf("a long command: %v, want ROUTE_DURABLE_REQUIRED", err)
	}
	sug, _ := errs.From(err).Details["suggested_escalation"].(map[string]any)
	if sug["to"] != "bounded_work" || sug["from"] != "direct" || sug["operation"] != "run_escalate" || sug["run_id"] != r.RunID {
		t.Fatalf("suggested_escalation: %+v (details %v)", sug, errs.From(err).Details)
	}
	// A batch with a durable step, refused before the gate, says so too.
	_, err = h.Batch(in, harness.BatchArgs{RepoID: repo, Steps: []harness.BatchStep{
		step("run_command", map[string]any{"argv": []string{"git", "status"}, "timeout_ms": 60_000}),
	}})
	if sug, _ := errs.From(err).Details["suggested_escalation"].(map[string]any); errs.CodeOf(err) != errs.RouteDurableRequired || sug["to"] != "bounded_work" {
		t.Fatalf("a durable batch in a direct run: %v (details %v)", err, errs.From(err).Details)
	}
	// A small write is direct work (the seed's tiers): no note.
	if _, err := h.ApplyPatch(in, harness.ApplyPatchArgs{RepoID: repo, RequestID: "tier-1", Operations: []patch.Op{{Op: "replace", Path: "README.md", OldText: "hello", NewText: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	// A bounded_work call that succeeds in a direct run (a Fast Path
	// batch) is noted, not refused.
	if _, err := h.Batch(in, harness.BatchArgs{RepoID: repo, Steps: []harness.BatchStep{
		step("read_file", map[string]any{"path": "README.md"}),
	}}); err != nil {
		t.Fatal(err)
	}
	st := runOf(t, h, ctx, r.RunID)
	var tierNotes int
	for _, o := range st.Observations {
		if o.Kind == "tier" {
			tierNotes++
		}
	}
	if st.Tier != "direct" || tierNotes != 1 {
		t.Fatalf("tier %s after the calls (it never changes on its own), %d tier notes: %+v", st.Tier, tierNotes, st.Observations)
	}

	up, err := h.RunEscalate(ctx, harness.RunEscalateArgs{RunID: r.RunID, To: "bounded_work", Reason: "the fix needs a long check"})
	if err != nil {
		t.Fatal(err)
	}
	last := up.Observations[len(up.Observations)-1]
	if up.Tier != "bounded_work" || len(up.Escalations) != 1 || up.Escalations[0].From != "direct" || last.Kind != "escalation" || !strings.Contains(last.Text, "direct to bounded_work") {
		t.Fatalf("escalated: tier %s escalations %+v last note %+v", up.Tier, up.Escalations, last)
	}
	if _, err := h.RunCommand(in, long); errs.CodeOf(err) != errs.RouteDurableRequired || errs.From(err).Details["suggested_escalation"] != nil {
		t.Fatalf("after the escalation: %v (details %v)", err, errs.From(err).Details)
	}
	if _, err := h.RunEscalate(ctx, harness.RunEscalateArgs{RunID: r.RunID, To: "direct", Reason: "back"}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("an escalation down: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := h.RunEscalate(ctx, harness.RunEscalateArgs{RunID: r.RunID, To: "campaign"}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("an escalation without a reason: %v, want INVALID_ARGUMENT", err)
	}
	au, err := h.Audit(context.Background(), harness.AuditArgs{Kind: "escalation", RunID: r.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if len(au.Entries) != 1 {
		t.Fatalf("%d escalation audit entries, want 1", len(au.Entries))
	}
	e := au.Entries[0]
	if e.Operation != "run_escalate" || e.Details["from"] != "direct" || e.Details["to"] != "bounded_work" || e.Session != "tier" || e.Reason == "" {
		t.Fatalf("audit entry %+v", e)
	}
}

// A parent's status shows its children's states, stages and blockers; a
// child's failed call and its end at its deadline are observations on
// the parent.
func TestParentSeesItsChildren(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := session("family")
	p, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "ship the feature"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "write the tests", ParentRunID: p.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadFile(harness.WithRun(ctx, c.RunID), harness.ReadFileArgs{RepoID: repo, Path: "missing_test.go"}); errs.CodeOf(err) != errs.NotFound {
		t.Fatal(err)
	}
	if _, err := h.RunStage(ctx, harness.RunStageArgs{RunID: c.RunID, Stage: "tests", Status: "blocked", Reason: "waits for the API"}); err != nil {
		t.Fatal(err)
	}
	c2, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "benchmark it", ParentRunID: p.RunID, Budget: harness.RunBudget{WallS: 60}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Runtime().Runs.Sweep(ctx, time.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// The children first: what they sent their parent is on its way
	// before they answer.
	runOf(t, h, ctx, c.RunID)
	if st := runOf(t, h, ctx, c2.RunID); st.Status != messages.RunDeadline {
		t.Fatalf("second child: %s", st.Status)
	}
	st := runOf(t, h, ctx, p.RunID)
	if len(st.Children) != 2 {
		t.Fatalf("children of the parent: %v", st.Children)
	}
	if len(st.ChildRuns) != 2 {
		t.Fatalf("child runs: %+v", st.ChildRuns)
	}
	ch := st.ChildRuns[0]
	if ch.RunID != c.RunID || !ch.Blocked || ch.BlockedReason != "waits for the API" || ch.CurrentStage != "tests" || ch.Failures != 1 ||
		ch.LastFailure == nil || ch.LastFailure.ErrorCode != "NOT_FOUND" || ch.LastFailure.Op != "read_file" {
		t.Fatalf("first child: %+v", ch)
	}
	if st.ChildRuns[1].Status != messages.RunDeadline {
		t.Fatalf("second child: %+v", st.ChildRuns[1])
	}
	var kinds []string
	for _, o := range st.Observations {
		if o.Source == "harnessd" && strings.HasPrefix(o.Kind, "child_") {
			kinds = append(kinds, o.Kind)
			if !strings.Contains(o.Text, "child run run_") {
				t.Errorf("note %q does not name the child", o.Text)
			}
		}
	}
	if strings.Join(kinds, ",") != "child_failure,child_deadline" {
		t.Fatalf("the parent's notes of its children: %v (%+v)", kinds, st.Observations)
	}
	rep, err := h.RunAssess(ctx, harness.RunAssessArgs{RunID: p.RunID})
	if err != nil || rep.Span != nil || len(rep.Children) != 2 {
		t.Fatalf("run_assess of the parent: %+v %v", rep, err)
	}
}

// A run's tier, its escalations and its open retry streaks survive a
// restart of the daemon: the bound still holds for the restored run.
func TestRetriesAndTierSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n"})
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	r, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "survive", MaxRetries: &one, Shape: &harness.RunShape{Writes: true, Durable: true}})
	if err != nil || r.Tier != "bounded_work" {
		t.Fatalf("run_start: %+v %v", r, err)
	}
	in := harness.WithRun(ctx, r.RunID)
	missing := harness.ReadFileArgs{RepoID: repo.ID, Path: "missing.txt"}
	for range 2 {
		if _, err := h.ReadFile(in, missing); errs.CodeOf(err) != errs.NotFound {
			t.Fatal(err)
		}
	}
	if _, err := h.RunEscalate(ctx, harness.RunEscalateArgs{RunID: r.RunID, To: "campaign", Reason: "three parts now"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h, err = harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if _, err := h.ReadFile(in, missing); errs.CodeOf(err) != errs.RetryLimit {
		t.Fatalf("the retry after the restart: %v, want RETRY_LIMIT", err)
	}
	st := runOf(t, h, ctx, r.RunID)
	if st.Tier != "campaign" || len(st.Escalations) != 1 || len(st.Retries) != 1 || st.Retries[0].Failures != 2 || st.MaxRetries == nil || *st.MaxRetries != 1 {
		t.Fatalf("after the restart: tier %s escalations %+v retries %+v", st.Tier, st.Escalations, st.Retries)
	}
}
