package harness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/patch"
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
