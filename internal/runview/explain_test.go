package runview

import (
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/recovery"
	"github.com/harnessd/harnessd/messages"
)

// blockedRun is an active run, blocked, with a budget partly used, an
// escalation, two children and a failure retried twice.
func blockedRun() (messages.RunState, *recovery.Report) {
	st := messages.RunState{
		RunID: "r-7f3a", Goal: "fix the flaky TestLease in internal/lease", WorkflowClass: "bugfix", Tier: "bounded_work",
		Status: messages.RunActive, CompletedStages: []string{"plan"}, CurrentStage: "test",
		Blocked: true, BlockedReason: "the check keeps timing out",
		Budget:   messages.RunBudget{WallS: 600, Commands: 10, Mutations: 2, OutputBytes: 1 << 20},
		Counters: messages.RunCounters{Calls: 9, Commands: 7, Mutations: 2, OutputBytes: 300 << 10, Failures: 3},
		Drawn:    messages.RunCounters{Commands: 1},
		Escalations: []messages.RunEscalation{
			{At: at(ms(1500)), From: "direct", To: "bounded_work", Reason: "the fix needs a long check"},
		},
		Children:  []string{"r-c1", "r-c2"},
		StartedAt: t0, UpdatedAt: at(4 * time.Second), Deadline: at(10 * time.Minute),
	}
	fail := messages.RunSpan{RunID: "r-7f3a", SpanID: "s9", Kind: messages.SpanOperation, Op: "run_check", Outcome: "error",
		ErrorCode: "TIMEOUT", Stage: "test", Start: at(ms(3002)), DurationMs: 15000}
	atts := []messages.RunAttempt{
		{SpanID: "s5", ErrorCode: "TIMEOUT", At: at(ms(2001)), DurationMs: 15000},
		{SpanID: "s9", ErrorCode: "TIMEOUT", At: at(ms(3002)), DurationMs: 15000},
	}
	a := recovery.Assess(recovery.Facts{Span: fail, Attempts: atts, State: st})
	p := recovery.Plan(a, a.Attempts, 3)
	rep := &recovery.Report{RunID: st.RunID, Span: &fail, Attempts: atts, MaxRetries: 3, RetriesLeft: 2, Assessment: &a, Plan: &p,
		Children: []messages.RunChild{
			{RunID: "r-c1", Goal: "write the regression test", Status: messages.RunActive, CurrentStage: "tests", Blocked: true,
				BlockedReason: "waits for the \x1b[31mAPI\x1b[0m", Failures: 1,
				LastFailure: &messages.RunFailure{SpanID: "c5", Op: "apply_patch", ErrorCode: "PATCH_CONFLICT", At: at(ms(2500))}},
			{RunID: "r-c2", Status: messages.RunDeadline, EndReason: "its wall-clock budget of 60s ran out"},
		}}
	return st, rep
}

func TestExplain(t *testing.T) {
	st, rep := blockedRun()
	ended := endedRun()
	ended.Escalations = nil
	retry := messages.RunState{RunID: "r-9", Status: messages.RunActive, StartedAt: t0, CompletedStages: []string{}}
	rspan := messages.RunSpan{SpanID: "s4", Op: "read_file", Outcome: "error", ErrorCode: "NOT_FOUND", Start: at(ms(4000))}
	ratts := []messages.RunAttempt{
		{SpanID: "s1", ErrorCode: "NOT_FOUND", At: at(ms(1000))}, {SpanID: "s2", ErrorCode: "NOT_FOUND", At: at(ms(2000))},
		{SpanID: "s3", ErrorCode: "NOT_FOUND", At: at(ms(3000))}, {SpanID: "s4", ErrorCode: "NOT_FOUND", At: at(ms(4000))},
	}
	ra := recovery.Assess(recovery.Facts{Span: rspan, Attempts: ratts, State: retry})
	rp := recovery.Plan(ra, ra.Attempts, 3)
	for _, tt := range []struct {
		name string
		st   messages.RunState
		rep  *recovery.Report
	}{
		{"explain_blocked", st, rep},
		{"explain_ended", ended, &recovery.Report{RunID: ended.RunID, MaxRetries: 3, RetriesLeft: 3}},
		{"explain_retries", retry, &recovery.Report{RunID: "r-9", Span: &rspan, Attempts: ratts, MaxRetries: 3, Assessment: &ra, Plan: &rp}},
		{"explain_no_report", retry, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := Explain(&b, tt.st, tt.rep, Options{Now: at(2 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "\x1b") {
				t.Fatal("an agent's escape sequence reached the output")
			}
			golden(t, tt.name, b.String())
		})
	}
}

func TestOrdinalAndAction(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
	for _, c := range []struct {
		p    recovery.RecoveryPlan
		want string
	}{
		{recovery.RecoveryPlan{Action: recovery.Retry, MaxAttempts: 1}, "retry, at most 1 more attempt"},
		{recovery.RecoveryPlan{Action: recovery.RetryAfter, MaxAttempts: 2, AfterMs: 1500}, "retry after 1.5s, at most 2 more attempts"},
		{recovery.RecoveryPlan{Action: recovery.EscalateDurable, MaxAttempts: 1}, "move the work to the Durable Path"},
		{recovery.RecoveryPlan{Action: "later"}, "later"},
	} {
		if got := action(c.p); got != c.want {
			t.Errorf("action(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
