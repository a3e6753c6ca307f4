package runs

import (
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/messages"
)

func call(id, stage, op, hash, code string) messages.RunSpan {
	s := messages.RunSpan{SpanID: id, Kind: messages.SpanOperation, Op: op, InputHash: hash, Stage: stage, Outcome: "ok", Start: t0}
	if code != "" {
		s.Outcome, s.ErrorCode = "error", code
	}
	return s
}

var t0 = time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)

func intp(n int) *int { return &n }

// TestRetryRule plays calls into a run and asks, before each, whether the
// call is refused as a retry past the bound.
func TestRetryRule(t *testing.T) {
	type step struct {
		stage   string // run_stage started before the call ("" = unchanged)
		span    messages.RunSpan
		refused bool // the retry check before span refuses it
	}
	fail := func(id, code string) messages.RunSpan { return call(id, "", "read_file", "h1", code) }
	cases := []struct {
		name  string
		bound *int
		steps []step
	}{
		{"the default bound allows three retries", nil, []step{
			{"", fail("1", "NOT_FOUND"), false}, {"", fail("2", "NOT_FOUND"), false}, {"", fail("3", "NOT_FOUND"), false},
			{"", fail("4", "NOT_FOUND"), false}, {"", fail("5", "RETRY_LIMIT"), true}, {"", fail("6", "RETRY_LIMIT"), true}}},
		{"a bound of one", intp(1), []step{
			{"", fail("1", "TIMEOUT"), false}, {"", fail("2", "TIMEOUT"), false}, {"", fail("3", "RETRY_LIMIT"), true}}},
		{"no retries", intp(0), []step{
			{"", fail("1", "TIMEOUT"), false}, {"", fail("2", "RETRY_LIMIT"), true}}},
		{"a success closes the streak", intp(2), []step{
			{"", fail("1", "TIMEOUT"), false}, {"", fail("2", "TIMEOUT"), false}, {"", call("3", "", "read_file", "h1", ""), false},
			{"", fail("4", "TIMEOUT"), false}, {"", fail("5", "TIMEOUT"), false}, {"", fail("6", "TIMEOUT"), false}, {"", fail("7", "RETRY_LIMIT"), true}}},
		{"another input is another call", intp(0), []step{
			{"", fail("1", "TIMEOUT"), false}, {"", call("2", "", "read_file", "h2", "TIMEOUT"), false}, {"", call("3", "", "search", "h1", "TIMEOUT"), false}}},
		{"a new stage starts afresh", intp(1), []step{
			{"", fail("1", "TIMEOUT"), false}, {"", fail("2", "TIMEOUT"), false},
			{"fix", call("3", "fix", "read_file", "h1", "TIMEOUT"), false}, {"", call("4", "fix", "read_file", "h1", "TIMEOUT"), false},
			{"", call("5", "fix", "read_file", "h1", "RETRY_LIMIT"), true}}},
		{"approvals, ended runs and the limit itself are not attempts", intp(0), []step{
			{"", fail("1", "APPROVAL_REQUIRED"), false}, {"", fail("2", "APPROVAL_REQUIRED"), false}, {"", fail("3", "RUN_ENDED"), false}}},
		{"polling an own write in flight is no attempt", intp(1), []step{
			{"", fail("1", "CANCELLED"), false}, {"", fail("2", "REQUEST_IN_PROGRESS"), false}, {"", fail("3", "REQUEST_IN_PROGRESS"), false},
			{"", fail("4", "REQUEST_IN_PROGRESS"), false}, {"", fail("5", "REQUEST_IN_PROGRESS"), false}, {"", fail("6", "REQUEST_IN_PROGRESS"), false},
			{"", fail("7", "REQUEST_OUTCOME_UNKNOWN"), false}, {"", call("8", "", "read_file", "h1", ""), false}}},
		{"answers about an attempt do not hide real failures", intp(1), []step{
			{"", fail("1", "TIMEOUT"), false}, {"", fail("2", "REQUEST_IN_PROGRESS"), false}, {"", fail("3", "TIMEOUT"), false},
			{"", fail("4", "CANCELLED"), true}}},
		{"a batch's steps are not calls of the run", intp(0), []step{
			{"", func() messages.RunSpan { s := fail("1", "TIMEOUT"); s.ParentID = "b"; return s }(), false}, {"", fail("2", "TIMEOUT"), false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := messages.RunState{RunID: "run_t", Status: messages.RunActive, MaxRetries: c.bound}
			for i, s := range c.steps {
				if s.stage != "" {
					if err := Stage(&st, s.stage, messages.StageStarted, "", t0); err != nil {
						t.Fatal(err)
					}
					ResetRetries(&st)
				}
				r, refused := RetryRefused(st, s.span.Op, s.span.InputHash)
				if refused != s.refused {
					t.Fatalf("step %d (%s %s): refused %v, want %v (streak %+v)", i, s.span.Op, s.span.ErrorCode, refused, s.refused, r)
				}
				if refused && (r.Failures != RetryBound(st)+1 || len(r.Attempts) != r.Failures) {
					t.Fatalf("step %d: the refused streak %+v", i, r)
				}
				RecordAttempt(&st, s.span)
			}
		})
	}
}

func TestRetryMemoryIsBounded(t *testing.T) {
	st := messages.RunState{Status: messages.RunActive}
	for i := range MaxAttemptsKept + 5 {
		RecordAttempt(&st, call(strings.Repeat("x", i+1), "", "read_file", "h", "TIMEOUT"))
	}
	if len(st.Retries) != 1 || st.Retries[0].Failures != MaxAttemptsKept+5 || len(st.Retries[0].Attempts) != MaxAttemptsKept {
		t.Fatalf("streak %d attempts kept of %d", len(st.Retries[0].Attempts), st.Retries[0].Failures)
	}
	if got := st.Retries[0].Attempts[MaxAttemptsKept-1].SpanID; len(got) != MaxAttemptsKept+5 {
		t.Fatalf("the newest attempt is not last: %q", got)
	}
	for i := range MaxRetryKeys + 3 {
		RecordAttempt(&st, call("s", "", "read_file", strings.Repeat("k", i+1), "TIMEOUT"))
	}
	if len(st.Retries) != MaxRetryKeys || st.Retries[MaxRetryKeys-1].InputHash != strings.Repeat("k", MaxRetryKeys+3) {
		t.Fatalf("%d streaks kept", len(st.Retries))
	}
	if RetryBound(messages.RunState{MaxRetries: intp(-4)}) != 0 {
		t.Fatal("a negative bound allows retries")
	}
}

func TestAttemptsOfAndLatestFailure(t *testing.T) {
	spans := []messages.RunSpan{
		call("1", "", "read_file", "h", "NOT_FOUND"),
		call("2", "", "read_file", "h", ""), // a success resets
		call("3", "", "read_file", "h", "NOT_FOUND"),
		call("4", "", "search", "h", "TIMEOUT"),
		call("5", "", "read_file", "h", "APPROVAL_REQUIRED"),
		call("6", "", "read_file", "h", "NOT_FOUND"),
		call("7", "other", "read_file", "h", "NOT_FOUND"),
		call("8", "", "read_file", "h", "NOT_FOUND"),
	}
	got := AttemptsOf(spans, spans[5])
	if len(got) != 2 || got[0].SpanID != "3" || got[1].SpanID != "6" {
		t.Fatalf("attempts of 6: %+v", got)
	}
	if got := AttemptsOf(spans, spans[4]); len(got) != 2 || got[1].SpanID != "5" {
		t.Fatalf("an uncounted failure still lists itself: %+v", got)
	}
	if got := AttemptsOf(spans, spans[6]); len(got) != 1 || got[0].SpanID != "7" {
		t.Fatalf("attempts in another stage: %+v", got)
	}
	if s, ok := LatestFailure(spans); !ok || s.SpanID != "8" {
		t.Fatalf("latest failure %+v %v", s, ok)
	}
	step := call("9", "", "read_file", "h", "NOT_FOUND")
	step.ParentID = "b"
	if s, ok := LatestFailure([]messages.RunSpan{call("b", "", "batch", "x", ""), step}); !ok || s.SpanID != "9" {
		t.Fatalf("a failed step: %+v %v", s, ok)
	}
	if _, ok := LatestFailure(spans[1:2]); ok {
		t.Fatal("a run without failures has a latest failure")
	}
}

func TestChooseTier(t *testing.T) {
	shape := func(d int, w, j bool) *messages.RunShape {
		return &messages.RunShape{Deliverables: d, Writes: w, Durable: j}
	}
	cases := []struct {
		name  string
		class string
		shape *messages.RunShape
		want  string
		err   string
	}{
		{"nothing declared", "", nil, "", ""},
		{"a free-form class declares no tier", "bugfix", nil, "", ""},
		{"an empty shape is direct", "", shape(0, false, false), "direct", ""},
		{"one deliverable is direct", "bugfix", shape(1, false, false), "direct", ""},
		{"small writes are direct (the seed: Fast Path edits)", "", shape(1, true, false), "direct", ""},
		{"durable jobs are bounded work", "", shape(0, false, true), "bounded_work", ""},
		{"two deliverables are a campaign", "", shape(2, true, true), "campaign", ""},
		{"a class names the tier", "bounded_work", nil, "bounded_work", ""},
		{"a class may ask for more than the shape", "campaign", shape(0, true, false), "campaign", ""},
		{"a class below the shape is refused", "direct", shape(0, false, true), "", "below the tier bounded_work"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ChooseTier(c.class, c.shape)
			if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("ChooseTier(%q, %+v) = %q, %v; want %q, %q", c.class, c.shape, got, err, c.want, c.err)
			}
		})
	}
}

func TestEscalate(t *testing.T) {
	st := messages.RunState{RunID: "run_t", Status: messages.RunActive, Tier: "direct", WorkflowClass: "direct"}
	if _, err := Escalate(&st, "direct", "same", t0); err == nil {
		t.Fatal("an escalation to the same tier")
	}
	if _, err := Escalate(&st, "huge", "why", t0); err == nil {
		t.Fatal("an unknown tier")
	}
	if _, err := Escalate(&st, "campaign", " ", t0); err == nil {
		t.Fatal("no reason")
	}
	e, err := Escalate(&st, "bounded_work", "it writes", t0)
	if err != nil || e.From != "direct" || e.To != "bounded_work" || st.Tier != "bounded_work" || st.WorkflowClass != "bounded_work" || len(st.Escalations) != 1 {
		t.Fatalf("escalate: %+v %v, state %+v", e, err, st)
	}
	if _, err := Escalate(&st, "direct", "back", t0); err == nil {
		t.Fatal("an escalation down")
	}
	free := messages.RunState{RunID: "run_u", Status: messages.RunActive, WorkflowClass: "bugfix"}
	if _, err := Escalate(&free, "campaign", "many parts", t0); err != nil || free.Tier != "campaign" || free.WorkflowClass != "bugfix" {
		t.Fatalf("an undeclared run: %+v %v", free, err)
	}
	for _, c := range []struct{ run, call, want string }{
		{"", "campaign", ""}, {"direct", "direct", ""}, {"direct", "bounded_work", "bounded_work"}, {"bounded_work", "campaign", "campaign"}, {"campaign", "bounded_work", ""}, {"direct", "", ""},
	} {
		if got := EscalationNeeded(c.run, c.call); got != c.want {
			t.Errorf("EscalationNeeded(%q, %q) = %q, want %q", c.run, c.call, got, c.want)
		}
	}
}

func TestChildNotes(t *testing.T) {
	if _, ok := ChildNote("c", call("1", "", "read_file", "h", "")); ok {
		t.Fatal("a success is no note")
	}
	o, ok := ChildNote("run_c", call("1", "", "apply_patch", "h", "PATCH_CONFLICT"))
	if !ok || o.Kind != "child_failure" || o.Text != "child run run_c: apply_patch failed: PATCH_CONFLICT" || o.Source != "harnessd" {
		t.Fatalf("note %+v", o)
	}
	if _, ok := ChildEndNote("c", messages.RunEnded, "done", t0); ok {
		t.Fatal("a plain end is no note")
	}
	if o, ok := ChildEndNote("run_c", messages.RunDeadline, "its wall-clock budget ran out", t0); !ok || o.Kind != "child_deadline" {
		t.Fatalf("deadline note %+v", o)
	}
	st := messages.RunState{}
	if !AddChild(&st, "a") || AddChild(&st, "a") || len(st.Children) != 1 {
		t.Fatalf("children %v", st.Children)
	}
}
