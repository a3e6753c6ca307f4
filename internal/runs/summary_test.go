package runs

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/messages"
)

func TestStalled(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	base := messages.RunState{RunID: "r", Status: messages.RunActive, CurrentStage: "tests", StartedAt: t0, StageProgressAt: t0}
	with := func(f func(*messages.RunState)) messages.RunState {
		st := base
		f(&st)
		return st
	}
	after := 15 * time.Minute
	tests := []struct {
		name  string
		st    messages.RunState
		now   time.Time
		after time.Duration
		want  bool
	}{
		{"no progress for the window", base, t0.Add(after), after, true},
		{"just under the window", base, t0.Add(after - time.Second), after, false},
		{"progress since", with(func(s *messages.RunState) { s.StageProgressAt = t0.Add(10 * time.Minute) }), t0.Add(after), after, false},
		{"no current stage", with(func(s *messages.RunState) { s.CurrentStage = "" }), t0.Add(time.Hour), after, false},
		{"a blocked stage says what it waits for", with(func(s *messages.RunState) { s.Blocked = true }), t0.Add(time.Hour), after, false},
		{"already stuck", with(func(s *messages.RunState) { s.Stuck = true }), t0.Add(time.Hour), after, false},
		{"ended", with(func(s *messages.RunState) { s.Status = messages.RunEnded }), t0.Add(time.Hour), after, false},
		{"detection off", base, t0.Add(time.Hour), 0, false},
		{"no progress recorded: its last update", with(func(s *messages.RunState) { s.StageProgressAt = time.Time{}; s.UpdatedAt = t0.Add(time.Minute) }), t0.Add(after), after, false},
		{"no progress nor update: its start", with(func(s *messages.RunState) { s.StageProgressAt = time.Time{} }), t0.Add(after), after, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Stalled(tt.st, tt.now, tt.after); got != tt.want {
				t.Fatalf("Stalled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestProgressClearsStuck(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	st := messages.RunState{Stuck: true, StuckSince: t0, StageProgressAt: t0.Add(-time.Hour)}
	if !Progress(&st, t0.Add(time.Minute)) {
		t.Fatal("Progress of a stuck run = false, want true (it cleared the flag)")
	}
	if st.Stuck || !st.StuckSince.IsZero() || !st.StageProgressAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after progress: %+v", st)
	}
	if Progress(&st, t0) {
		t.Fatal("Progress of a run not stuck = true")
	}
	if !st.StageProgressAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("an older progress moved StageProgressAt back to %v", st.StageProgressAt)
	}
}

func span(op string, at int, f func(*messages.RunSpan)) messages.RunSpan {
	s := messages.RunSpan{SpanID: "s" + strconv.Itoa(at), Op: op, Outcome: "ok", Start: time.Date(2025, 1, 1, 12, 0, at, 0, time.UTC)}
	if f != nil {
		f(&s)
	}
	return s
}

func TestScore(t *testing.T) {
	pass := func(s *messages.RunSpan) { s.CheckID, s.Verdict = "chk_1", "pass" }
	fail := func(s *messages.RunSpan) { s.CheckID, s.Verdict = "chk_1", "fail" }
	write := func(s *messages.RunSpan) { s.ReceiptID = "rcpt_" + s.SpanID }
	failed := func(code string) func(*messages.RunSpan) {
		return func(s *messages.RunSpan) { s.Outcome, s.ErrorCode, s.InputHash = "error", code, "h1" }
	}
	tests := []struct {
		name  string
		spans []messages.RunSpan
		want  messages.RunScorecard
	}{
		{"a commit after a write and a passing check is tested", []messages.RunSpan{
			span("apply_patch", 1, write), span("run_check", 2, pass), span("git_commit", 3, write),
		}, messages.RunScorecard{Commits: 1, CommitsTested: 1, ChecksPassed: 1, Calls: 3}},
		{"a write after the check makes the commit untested", []messages.RunSpan{
			span("run_check", 1, pass), span("apply_patch", 2, write), span("git_commit", 3, write),
		}, messages.RunScorecard{Commits: 1, ChecksPassed: 1, Calls: 3}},
		{"a failing check does not test", []messages.RunSpan{
			span("apply_patch", 1, write), span("run_check", 2, fail), span("git_commit", 3, write),
		}, messages.RunScorecard{Commits: 1, ChecksFailed: 1, Calls: 3}},
		{"order comes from the spans' start, not the slice", []messages.RunSpan{
			span("git_commit", 3, write), span("run_check", 2, pass), span("apply_patch", 1, write),
		}, messages.RunScorecard{Commits: 1, CommitsTested: 1, ChecksPassed: 1, Calls: 3}},
		{"retries repeat a failed call; a success ends the streak", []messages.RunSpan{
			span("run_command", 1, failed("TIMEOUT")), span("run_command", 2, failed("TIMEOUT")),
			span("run_command", 3, func(s *messages.RunSpan) { s.InputHash = "h1" }), span("run_command", 4, func(s *messages.RunSpan) { s.InputHash = "h1" }),
		}, messages.RunScorecard{Retries: 2, Failures: 2, Calls: 4}},
		{"denials, approvals once per id, reverts", []messages.RunSpan{
			span("apply_patch", 1, failed("POLICY_DENIED")), span("job_start", 2, func(s *messages.RunSpan) {
				s.Outcome, s.ErrorCode, s.ApprovalID = "error", "APPROVAL_REQUIRED", "apr_1"
			}),
			span("job_start", 3, func(s *messages.RunSpan) { s.ApprovalID = "apr_1" }), span("run_command", 4, func(s *messages.RunSpan) { s.Outcome, s.ErrorCode = "error", "ROUTE_REJECTED" }),
			span("revert", 5, write), span("read_file", 6, func(s *messages.RunSpan) { s.Outcome, s.ErrorCode = "error", "ROLE_DENIED" }),
		}, messages.RunScorecard{Denials: 3, Approvals: 1, Reverts: 1, Failures: 4, Calls: 6}},
		{"batch steps are not calls", []messages.RunSpan{
			span("batch", 1, nil), span("apply_patch", 2, func(s *messages.RunSpan) { s.ParentID = "s1" }),
		}, messages.RunScorecard{Calls: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Score(tt.spans, nil); got != tt.want {
				t.Fatalf("Score =\n %+v, want\n %+v", got, tt.want)
			}
		})
	}
	sc := Score(nil, []StageFacts{{Stage: "a", Status: "verified", Claims: 1}, {Stage: "b", Status: "claimed", Claims: 2}, {Stage: "c", Status: "claimed"}})
	if sc.StagesClaimed != 2 || sc.StagesVerified != 1 {
		t.Fatalf("stages claimed/verified = %d/%d, want 2/1", sc.StagesClaimed, sc.StagesVerified)
	}
	var total messages.RunScorecard
	AddScore(&total, sc)
	AddScore(&total, sc)
	if total.StagesClaimed != 4 || total.StagesVerified != 2 {
		t.Fatalf("AddScore twice: %+v", total)
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	st := messages.RunState{RunID: "run_1", Goal: "fix the parser", RepoID: "repo_a", Status: messages.RunEnded, EndReason: "done",
		Caller: messages.Caller{Client: messages.Client{Name: "claude-code", Version: "1.0"}}, CompletedStages: []string{"edit"},
		CurrentStage: "tests", Blocked: true, BlockedReason: "waits for the API",
		Escalations: []messages.RunEscalation{{At: t0, From: "direct", To: "bounded_work", Reason: "full suite"}}}
	spans := []messages.RunSpan{
		span("apply_patch", 1, func(s *messages.RunSpan) { s.ReceiptID, s.RepoID = "rcpt_1", "repo_a" }),
		span("run_check", 2, func(s *messages.RunSpan) { s.CheckID, s.Verdict = "chk_x", "fail" }),
		span("run_check", 3, func(s *messages.RunSpan) { s.CheckID, s.Verdict = "chk_x", "pass" }),
		span("job_start", 4, func(s *messages.RunSpan) {
			s.Outcome, s.ErrorCode, s.ApprovalID, s.RepoID = "error", "APPROVAL_REQUIRED", "apr_1", "repo_b"
		}),
		span("apply_patch", 5, func(s *messages.RunSpan) { s.Outcome, s.ErrorCode, s.ReceiptID = "error", "PATCH_CONFLICT", "" }),
	}
	stages := []StageFacts{{Stage: "edit", Status: "verified", Claims: 1}, {Stage: "tests", Status: "claimed", Claims: 1, Blockers: []string{"stale: x.go changed"}}}
	sum := Summarize(SummaryFacts{State: st, Spans: spans, Stages: stages, LiveJobs: []string{"job_9"}, Trigger: SummaryEnded, Now: t0.Add(time.Minute)})
	if len(sum.Changes) != 1 || sum.Changes[0].ReceiptID != "rcpt_1" {
		t.Fatalf("changes = %+v, want the one receipt", sum.Changes)
	}
	if len(sum.Checks) != 1 || sum.Checks[0].Verdict != "pass" || sum.Checks[0].Runs != 2 {
		t.Fatalf("checks = %+v, want chk_x pass after 2 runs", sum.Checks)
	}
	if len(sum.Approvals) != 1 || sum.Approvals[0].ID != "apr_1" {
		t.Fatalf("approvals = %+v", sum.Approvals)
	}
	if strings.Join(sum.Repos, ",") != "repo_a,repo_b" {
		t.Fatalf("repos = %v, want repo_a,repo_b", sum.Repos)
	}
	if len(sum.Stages) != 2 || sum.Stages[0].Verification != "verified" || sum.Stages[1].Status != "blocked" {
		t.Fatalf("stages = %+v", sum.Stages)
	}
	wantBlockers := []string{`stage "tests" is blocked: waits for the API`, `stage "tests" has claims that are not verified: stale: x.go changed`, "job job_9 is not finished"}
	if strings.Join(sum.Blockers, "|") != strings.Join(wantBlockers, "|") {
		t.Fatalf("blockers =\n %q, want\n %q", sum.Blockers, wantBlockers)
	}
	for _, want := range []string{"Run run_1", "claude-code 1.0", "apply_patch rcpt_1", "chk_x pass", "edit completed (verified)", "apr_1 (job_start)", "Escalated to bounded_work", "Open: "} {
		if !strings.Contains(sum.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, sum.Text)
		}
	}
	if sum.Scorecard.ChecksPassed != 1 || sum.Scorecard.ChecksFailed != 1 || sum.Scorecard.StagesVerified != 1 {
		t.Fatalf("scorecard = %+v", sum.Scorecard)
	}
}

func TestSummarizeIsBounded(t *testing.T) {
	st := messages.RunState{RunID: "run_big", Goal: strings.Repeat("g", 4000), Status: messages.RunActive, BlockedReason: strings.Repeat("é", 3000), Blocked: true, CurrentStage: "s"}
	var spans []messages.RunSpan
	for i := range 500 {
		spans = append(spans, span("apply_patch", i, func(s *messages.RunSpan) {
			s.ReceiptID, s.CheckID, s.Verdict, s.ApprovalID = "rcpt_"+strconv.Itoa(i), "chk_"+strconv.Itoa(i), "pass", "apr_"+strconv.Itoa(i)
		}))
	}
	var stages []StageFacts
	for i := range 100 {
		stages = append(stages, StageFacts{Stage: "stage" + strconv.Itoa(i), Status: "claimed", Claims: 1, Blockers: []string{"a", "b", "c", "d", "e"}})
	}
	sum := Summarize(SummaryFacts{State: st, Spans: spans, Stages: stages, Trigger: SummaryIdle})
	for name, n := range map[string]int{"changes": len(sum.Changes), "checks": len(sum.Checks), "approvals": len(sum.Approvals), "stages": len(sum.Stages), "blockers": len(sum.Blockers)} {
		if n > MaxSummaryItems {
			t.Errorf("%s: %d entries, want at most %d", name, n, MaxSummaryItems)
		}
	}
	if sum.Changes[len(sum.Changes)-1].ReceiptID != "rcpt_499" {
		t.Errorf("the newest change is not kept: %v", sum.Changes[len(sum.Changes)-1])
	}
	if sum.Omitted == 0 {
		t.Error("Omitted = 0 with lists cut")
	}
	if len(sum.Text) > MaxSummaryText {
		t.Errorf("text is %d bytes, want at most %d", len(sum.Text), MaxSummaryText)
	}
	for _, b := range sum.Blockers {
		if len(b) > 300 || !utf8Valid(b) {
			t.Errorf("blocker %d bytes or cut inside a rune", len(b))
		}
	}
	if sum.Scorecard.ChecksPassed != 500 {
		t.Errorf("the scorecard counts every span, not the kept ones: %d", sum.Scorecard.ChecksPassed)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
