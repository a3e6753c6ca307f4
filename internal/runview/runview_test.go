package runview

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/messages"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func TestMain(m *testing.M) {
	// Times render in time.Local; the golden files are in UTC.
	time.Local = time.UTC
	os.Exit(m.Run())
}

var t0 = time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func ms(d time.Duration) time.Duration { return d * time.Millisecond }

// endedRun is a finished run with every header field set.
func endedRun() messages.RunState {
	return messages.RunState{
		RunID:         "r-7f3a",
		Goal:          "fix the flaky TestLease in internal/lease",
		RepoID:        "repo-1",
		WorkflowClass: "bugfix",
		ParentRunID:   "r-parent",
		Status:        messages.RunEnded,
		EndReason:     "tests pass",
		Caller:        messages.Caller{RunID: "r-7f3a", Session: "sess-42", Client: messages.Client{Name: "claude-code", Version: "2.1.0"}},
		Budget:        messages.RunBudget{WallS: 600, Commands: 10, Mutations: 1},
		Counters: messages.RunCounters{Calls: 11, Reads: 4, Commands: 2, Mutations: 1, Jobs: 1, Checks: 1,
			OutputBytes: 12345, Approvals: 1, Failures: 3, Observations: 4},
		CompletedStages: []string{"plan", "edit", "test"},
		Observations: []messages.RunObservation{
			// Out of order on purpose: Tree sorts them by time.
			{At: at(30 * time.Second), Source: "agent", Kind: "result", Text: "the flake was a timer race\nfixed with a fake clock\n"},
			{At: at(ms(500)), Source: "agent", Kind: "plan", Text: "look at the lease first"},
			{At: at(ms(2003)), Source: "harnessd", Kind: "failure", Text: "search failed: PATH_OUTSIDE_ROOT", SpanID: "s4"},
			{At: at(ms(3500)), Source: "agent", Kind: "note", Text: "lanes \x1b[31mrunning\x1b[0m\tin parallel"},
		},
		Jobs:      []string{"j-1"},
		StartedAt: t0,
		UpdatedAt: at(123 * time.Second),
		Deadline:  at(10 * time.Minute),
		EndedAt:   at(123 * time.Second),
	}
}

// nestedSpans has a batch with steps, a batch with lanes holding steps, a
// step whose parent the ring dropped, the run's own span, errors and ids;
// listed out of start order, children before parents.
func nestedSpans() []messages.RunSpan {
	op := func(id, parent, name string, start time.Time, dur float64) messages.RunSpan {
		return messages.RunSpan{RunID: "r-7f3a", SpanID: id, ParentID: parent, Kind: messages.SpanOperation, Op: name,
			Outcome: "ok", Route: "fast", Start: start, DurationMs: dur}
	}
	fail := func(s messages.RunSpan, code string) messages.RunSpan {
		s.Outcome, s.ErrorCode = "error", code
		return s
	}
	with := func(s messages.RunSpan, f func(*messages.RunSpan)) messages.RunSpan { f(&s); return s }
	return []messages.RunSpan{
		{RunID: "r-7f3a", SpanID: "s0", Kind: messages.SpanRun, Op: "run", Outcome: "ok", Start: t0, DurationMs: 123000},
		op("s3", "s2", "read_file", at(ms(2001)), 0.3),
		fail(op("s4", "s2", "search", at(ms(2005)), 0.2), "PATH_OUTSIDE_ROOT"),
		op("s2", "", "batch", at(2*time.Second), 26),
		op("s1", "s0", "repository_status", at(time.Second), 0.06),
		op("s5", "", "batch", at(3*time.Second), 1400),
		op("s6", "s5", "lane", at(ms(3001)), 1200),
		with(op("s7", "s6", "run_command", at(ms(3002)), 1100), func(s *messages.RunSpan) { s.Route, s.ReceiptID = "sandbox", "rc-1" }),
		fail(op("s8", "s5", "lane", at(ms(3001)), 1390), "COMMAND_FAILED"),
		with(fail(op("s9", "s8", "check_run", at(ms(3003)), 1380), "COMMAND_FAILED"), func(s *messages.RunSpan) {
			s.Route, s.CheckID = "sandbox", "ck-1"
		}),
		op("s10", "s-gone", "read_file", at(5*time.Second), 0.04),
		with(op("s11", "", "apply_patch", at(10*time.Second), 45), func(s *messages.RunSpan) {
			s.Route, s.Decision, s.ApprovalID, s.ReceiptID = "mediated", "ask", "ap-1", "rc-2"
		}),
		with(op("s12", "", "job_start", at(20*time.Second), 8), func(s *messages.RunSpan) { s.Route, s.JobID = "durable", "j-1" }),
		fail(op("s13", "", "run_command", at(123*time.Second-ms(1)), 0), "BUDGET_EXCEEDED"),
	}
}

func activeRun() messages.RunState {
	return messages.RunState{
		RunID:           "r-9c01",
		Goal:            "add a --json flag to harness runs",
		Status:          messages.RunActive,
		Caller:          messages.Caller{Session: "sess-7", Client: messages.Client{Name: "codex"}},
		Budget:          messages.RunBudget{Commands: 3, OutputBytes: 1 << 20},
		Counters:        messages.RunCounters{Calls: 2, Commands: 3, OutputBytes: 2048, Failures: 1},
		Drawn:           messages.RunCounters{Calls: 5, Commands: 3, OutputBytes: 4096},
		CompletedStages: []string{"plan"},
		CurrentStage:    "test",
		Blocked:         true,
		BlockedReason:   "waiting for approval ap-9",
		StartedAt:       t0,
		UpdatedAt:       at(2 * time.Minute),
		DetachedAt:      at(2 * time.Minute),
	}
}

func activeSpans() []messages.RunSpan {
	return []messages.RunSpan{
		{SpanID: "a1", Kind: messages.SpanOperation, Op: "run_command", Outcome: "ok", Route: "sandbox", Start: at(time.Second), DurationMs: 61000},
		{SpanID: "a2", Kind: messages.SpanOperation, Op: "apply_patch", Outcome: "error", ErrorCode: "APPROVAL_REQUIRED",
			Decision: "ask", ApprovalID: "ap-9", Start: at(2 * time.Minute), DurationMs: 3.25},
	}
}

func TestTree(t *testing.T) {
	cycle := []messages.RunSpan{
		{SpanID: "c1", ParentID: "c2", Op: "lane", Outcome: "ok", Start: at(time.Second), DurationMs: 5},
		{SpanID: "c2", ParentID: "c1", Op: "batch", Outcome: "ok", Start: at(2 * time.Second), DurationMs: 6},
		{SpanID: "c3", ParentID: "c3", Op: "read_file", Outcome: "ok", Start: at(3 * time.Second), DurationMs: 0.5},
		{SpanID: "c4", Op: "search", Start: at(4 * time.Second), DurationMs: -1},
	}
	tests := []struct {
		name  string
		st    messages.RunState
		spans []messages.RunSpan
		o     Options
	}{
		{"nested", endedRun(), nestedSpans(), Options{Now: at(time.Hour)}},
		{"nested_color", endedRun(), nestedSpans(), Options{Color: true}},
		{"active", activeRun(), activeSpans(), Options{Now: at(123 * time.Second), DroppedSpans: 3}},
		{"empty", messages.RunState{RunID: "r-e", Status: messages.RunEnded, Implicit: true, StartedAt: t0, EndedAt: at(ms(60))}, nil, Options{}},
		{"empty_active", messages.RunState{RunID: "r-n", Status: messages.RunActive, StartedAt: t0}, nil, Options{}},
		{"observations_only", messages.RunState{RunID: "r-o", Status: messages.RunAbandoned, EndReason: "client gone",
			Observations: []messages.RunObservation{{At: t0, Source: "harnessd", Kind: "abandoned", Text: "no resume within 10m"}}}, nil, Options{}},
		{"cycle", messages.RunState{RunID: "r-c", Status: messages.RunDeadline}, cycle, Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Tree(&b, tt.st, tt.spans, tt.o); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.String())
			if !tt.o.Color && strings.Contains(b.String(), "\x1b") {
				t.Error("escape sequence in output without Color")
			}
		})
	}
}

func TestLines(t *testing.T) {
	var b strings.Builder
	for _, s := range nestedSpans() {
		b.WriteString(Line(s) + "\n")
	}
	for _, o := range endedRun().Observations {
		b.WriteString(Note(o) + "\n")
	}
	// A run followed through its stages, blocked and unblocked.
	steps := []messages.RunState{
		{UpdatedAt: at(time.Second), CurrentStage: "plan"},
		{UpdatedAt: at(2 * time.Second), CurrentStage: "edit", CompletedStages: []string{"plan"}},
		{UpdatedAt: at(3 * time.Second), CurrentStage: "edit", CompletedStages: []string{"plan"}, Counters: messages.RunCounters{Calls: 9}},
		{UpdatedAt: at(4 * time.Second), CurrentStage: "edit", CompletedStages: []string{"plan"}, Blocked: true},
		{UpdatedAt: at(5 * time.Second), CurrentStage: "edit", CompletedStages: []string{"plan"}, Blocked: true, BlockedReason: "needs a human"},
		{UpdatedAt: at(6 * time.Second), CompletedStages: []string{"plan", "edit"}},
	}
	var prev messages.RunState
	for _, st := range steps {
		for _, l := range Changes(prev, st) {
			b.WriteString(l + "\n")
		}
		prev = st
	}
	b.WriteString(Summary(endedRun(), at(time.Hour)) + "\n")
	b.WriteString(Summary(activeRun(), at(90*time.Second)) + "\n")
	b.WriteString(Summary(messages.RunState{RunID: "r-x", Status: messages.RunDeadline}, time.Time{}) + "\n")
	golden(t, "lines", b.String())
}

func TestList(t *testing.T) {
	long := endedRun()
	long.RunID, long.Status, long.EndReason = "r-long", messages.RunDeadline, "wall budget"
	long.Goal = "rewrite the whole persistence layer on top of a log-structured merge tree, with compaction"
	long.StartedAt, long.EndedAt = at(-26*time.Hour), at(-16*time.Hour)
	implicit := messages.RunState{RunID: "r-imp", Status: messages.RunAbandoned, Implicit: true, StartedAt: at(-time.Hour), EndedAt: at(-50 * time.Minute)}
	runs := []messages.RunState{activeRun(), endedRun(), long, implicit, {RunID: "r-bare", Status: messages.RunActive}}
	var b bytes.Buffer
	if err := List(&b, runs, at(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	golden(t, "list", b.String())
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		ms   float64
		want string
	}{
		{-1, "-"}, {0, "0ms"}, {0.001, "<0.01ms"}, {0.06, "0.06ms"}, {0.456, "0.46ms"}, {3.25, "3.2ms"},
		{26, "26ms"}, {999, "999ms"}, {1400, "1.4s"}, {59940, "59.9s"}, {59960, "1m00s"},
		{123000, "2m03s"}, {3599400, "59m59s"}, {3600000, "1h00m"}, {90 * 60000, "1h30m"}, {49 * 3600000, "49h00m"},
	} {
		if got := Duration(tt.ms); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain":            "plain",
		"a\x1b[2Jb":        "a?[2Jb",
		"tab\there":        "tab here",
		"new\nline":        "new?line",
		"bidi\u202eevil":   "bidi?evil",
		"unicode ↳ ok …":   "unicode ↳ ok …",
		"c1 \u009b31m ctl": "c1 ?31m ctl",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
