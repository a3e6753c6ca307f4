package runs

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/messages"
)

func active(b messages.RunBudget) messages.RunState {
	return messages.RunState{RunID: "run_t", Status: messages.RunActive, Budget: b}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name     string
		budget   messages.RunBudget
		counters messages.RunCounters
		drawn    messages.RunCounters
		draw     Draw
		want     string // resource refused, "" = allowed
	}{
		{"no budget allows anything", messages.RunBudget{}, messages.RunCounters{Commands: 1e6}, messages.RunCounters{}, Draw{Commands: 5}, ""},
		{"last command fits", messages.RunBudget{Commands: 3}, messages.RunCounters{Commands: 2}, messages.RunCounters{}, Draw{Commands: 1}, ""},
		{"one command too many", messages.RunBudget{Commands: 3}, messages.RunCounters{Commands: 3}, messages.RunCounters{}, Draw{Commands: 1}, "commands"},
		{"children's draws count", messages.RunBudget{Mutations: 2}, messages.RunCounters{Mutations: 1}, messages.RunCounters{Mutations: 1}, Draw{Mutations: 1}, "mutations"},
		{"a read draws nothing and passes a full command budget", messages.RunBudget{Commands: 1}, messages.RunCounters{Commands: 1}, messages.RunCounters{}, Draw{}, ""},
		{"jobs", messages.RunBudget{Jobs: 1}, messages.RunCounters{Jobs: 1}, messages.RunCounters{}, Draw{Jobs: 1}, "jobs"},
		{"approvals", messages.RunBudget{Approvals: 1}, messages.RunCounters{Approvals: 1}, messages.RunCounters{}, Draw{Approvals: 1}, "approvals"},
		{"output spent refuses even reads", messages.RunBudget{OutputBytes: 100}, messages.RunCounters{OutputBytes: 100}, messages.RunCounters{}, Draw{}, "output_bytes"},
		{"output below the limit", messages.RunBudget{OutputBytes: 100}, messages.RunCounters{OutputBytes: 99}, messages.RunCounters{}, Draw{}, ""},
		{"child output counts", messages.RunBudget{OutputBytes: 100}, messages.RunCounters{OutputBytes: 50}, messages.RunCounters{OutputBytes: 60}, Draw{}, "output_bytes"},
		{"cpu below the limit allows a command", messages.RunBudget{CPUSeconds: 1}, messages.RunCounters{CPUMs: 999}, messages.RunCounters{}, Draw{Commands: 1}, ""},
		{"cpu at the limit refuses a command", messages.RunBudget{CPUSeconds: 1}, messages.RunCounters{CPUMs: 1000}, messages.RunCounters{}, Draw{Commands: 1}, "cpu_seconds"},
		{"cpu over the limit refuses a job", messages.RunBudget{CPUSeconds: 1}, messages.RunCounters{CPUMs: 2150}, messages.RunCounters{}, Draw{Jobs: 1}, "cpu_seconds"},
		{"cpu spent still allows reads", messages.RunBudget{CPUSeconds: 1}, messages.RunCounters{CPUMs: 5000}, messages.RunCounters{}, Draw{}, ""},
		{"cpu spent still allows a write (it starts no process)", messages.RunBudget{CPUSeconds: 1}, messages.RunCounters{CPUMs: 5000}, messages.RunCounters{}, Draw{Mutations: 1}, ""},
		{"cpu spent refuses an approval-raising command too", messages.RunBudget{CPUSeconds: 2}, messages.RunCounters{CPUMs: 2000}, messages.RunCounters{}, Draw{Commands: 1, Approvals: 1}, "cpu_seconds"},
		{"children's cpu counts", messages.RunBudget{CPUSeconds: 1}, messages.RunCounters{CPUMs: 400}, messages.RunCounters{CPUMs: 700}, Draw{Jobs: 1}, "cpu_seconds"},
		{"no cpu budget: any cpu", messages.RunBudget{Commands: 10}, messages.RunCounters{CPUMs: 1e9}, messages.RunCounters{}, Draw{Commands: 1}, ""},
		{"a commands limit is named before cpu", messages.RunBudget{Commands: 1, CPUSeconds: 1}, messages.RunCounters{Commands: 1, CPUMs: 1000}, messages.RunCounters{}, Draw{Commands: 1}, "commands"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := active(c.budget)
			st.Counters, st.Drawn = c.counters, c.drawn
			got := Check(st, c.draw)
			switch {
			case c.want == "" && got != nil:
				t.Fatalf("refused: %v", got)
			case c.want != "" && got == nil:
				t.Fatalf("allowed, want %s refused", c.want)
			case c.want != "" && got.Resource != c.want:
				t.Fatalf("refused %s, want %s", got.Resource, c.want)
			case got != nil && !strings.Contains(got.Error(), got.Resource):
				t.Fatalf("message %q does not name %s", got.Error(), got.Resource)
			}
		})
	}
}

// TestCPUCounted: a span counts the CPU of what the call ran; the
// refusal reports whole seconds used against the limit.
func TestCPUCounted(t *testing.T) {
	var c messages.RunCounters
	Count(&c, messages.RunSpan{Outcome: "ok", CPUMs: 1200})
	Count(&c, messages.RunSpan{Outcome: "ok", CPUMs: -5}) // never lowers it
	Count(&c, messages.RunSpan{Outcome: "ok"})
	if c.CPUMs != 1200 || c.Calls != 3 {
		t.Fatalf("counters = %+v, want cpu_ms 1200 over 3 calls", c)
	}
	st := active(messages.RunBudget{CPUSeconds: 1})
	st.Counters = c
	ex := Check(st, Draw{Commands: 1})
	if ex == nil || ex.Resource != "cpu_seconds" || ex.Used != 1 || ex.Limit != 1 {
		t.Fatalf("Check = %+v, want cpu_seconds used 1 of 1", ex)
	}
}

func TestStage(t *testing.T) {
	now := time.Unix(1000, 0)
	st := active(messages.RunBudget{})
	steps := []struct {
		stage, status, reason string
		ok                    bool
		current               string
		completed             int
		blocked               bool
	}{
		{"plan", messages.StageStarted, "", true, "plan", 0, false},
		{"plan", messages.StageBlocked, "", false, "plan", 0, false},
		{"plan", messages.StageBlocked, "waiting for review", true, "plan", 0, true},
		{"plan", messages.StageCompleted, "", true, "", 1, false},
		{"plan", messages.StageCompleted, "", true, "", 1, false},
		{"build", "finished", "", false, "", 1, false},
		{"", messages.StageStarted, "", false, "", 1, false},
		{"build", messages.StageStarted, "", true, "build", 1, false},
	}
	for i, s := range steps {
		err := Stage(&st, s.stage, s.status, s.reason, now)
		if (err == nil) != s.ok {
			t.Fatalf("step %d: err %v, want ok=%v", i, err, s.ok)
		}
		if st.CurrentStage != s.current || len(st.CompletedStages) != s.completed || st.Blocked != s.blocked {
			t.Fatalf("step %d: state %+v", i, st)
		}
	}
	End(&st, messages.RunEnded, "done", now)
	if err := Stage(&st, "x", messages.StageStarted, "", now); err == nil {
		t.Fatal("an ended run took a stage")
	}
}

func TestDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name   string
		st     messages.RunState
		now    time.Time
		status string
	}{
		{"no deadline, attached", messages.RunState{Status: messages.RunActive}, t0.Add(1000 * time.Hour), ""},
		{"before the deadline", messages.RunState{Status: messages.RunActive, Deadline: t0.Add(time.Minute)}, t0, ""},
		{"at the deadline", messages.RunState{Status: messages.RunActive, Deadline: t0}, t0, messages.RunDeadline},
		{"detached within the window", messages.RunState{Status: messages.RunActive, DetachedAt: t0}, t0.Add(ResumeWindow - time.Second), ""},
		{"detached past the window", messages.RunState{Status: messages.RunActive, DetachedAt: t0}, t0.Add(ResumeWindow), messages.RunAbandoned},
		{"ended runs are not due", messages.RunState{Status: messages.RunEnded, Deadline: t0}, t0.Add(time.Hour), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, reason, due := Due(c.st, c.now, ResumeWindow)
			if status != c.status || due != (c.status != "") || (due && reason == "") {
				t.Fatalf("Due = %q %q %v, want %q", status, reason, due, c.status)
			}
		})
	}
}

func TestPersisted(t *testing.T) {
	cases := []struct {
		span messages.RunSpan
		want bool
	}{
		{messages.RunSpan{Op: "read_file", ReadOnly: true, Outcome: "ok"}, false},
		{messages.RunSpan{Op: "read_file", ReadOnly: true, Outcome: "error", ErrorCode: "SECRET_PATH_DENIED"}, false},
		{messages.RunSpan{Op: "apply_patch", Outcome: "ok", ReceiptID: "r1"}, true},
		{messages.RunSpan{Op: "apply_patch", Outcome: "error", ErrorCode: "PATCH_CONFLICT"}, true},
		{messages.RunSpan{Op: "run_command", ReadOnly: true, Outcome: "error", ErrorCode: "APPROVAL_REQUIRED", ApprovalID: "apr_1"}, true},
		{messages.RunSpan{Op: "check_run", ReadOnly: true, Outcome: "ok", CheckID: "chk"}, true},
		{messages.RunSpan{Op: "search", ReadOnly: true, Outcome: "error", ErrorCode: "LOOP_DETECTED"}, true},
	}
	for _, c := range cases {
		if got := Persisted(c.span); got != c.want {
			t.Errorf("Persisted(%+v) = %v, want %v", c.span, got, c.want)
		}
	}
}

// The ring keeps exactly the newest RingSize spans, oldest first, and
// counts what it dropped.
func TestRingProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 3*RingSize).Draw(t, "n")
		var r Ring
		var model []messages.RunSpan
		for i := range n {
			s := messages.RunSpan{SpanID: string(rune('a' + i%26)), DurationMs: float64(i)}
			r.Push(s)
			model = append(model, s)
		}
		if len(model) > RingSize {
			model = model[len(model)-RingSize:]
		}
		got := r.Spans()
		if len(got) != len(model) {
			t.Fatalf("ring holds %d, want %d", len(got), len(model))
		}
		for i := range got {
			if got[i].DurationMs != model[i].DurationMs {
				t.Fatalf("span %d is %v, want %v", i, got[i].DurationMs, model[i].DurationMs)
			}
		}
		if want := int64(max(0, n-RingSize)); r.Dropped() != want {
			t.Fatalf("dropped %d, want %d", r.Dropped(), want)
		}
	})
}

// Granting only what Check allows never takes a counter past its limit,
// whatever the order of draws and refunds.
func TestBudgetNeverOverdrawn(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := messages.RunBudget{
			Commands:  rapid.Int64Range(0, 5).Draw(t, "commands"),
			Mutations: rapid.Int64Range(0, 5).Draw(t, "mutations"),
			Jobs:      rapid.Int64Range(0, 5).Draw(t, "jobs"),
		}
		st := active(b)
		var granted []Draw
		for range rapid.IntRange(0, 60).Draw(t, "steps") {
			if len(granted) > 0 && rapid.Bool().Draw(t, "refund") {
				i := rapid.IntRange(0, len(granted)-1).Draw(t, "which")
				Apply(&st.Counters, granted[i], -1)
				granted = append(granted[:i], granted[i+1:]...)
				continue
			}
			d := Draw{
				Commands:  rapid.Int64Range(0, 2).Draw(t, "c"),
				Mutations: rapid.Int64Range(0, 2).Draw(t, "m"),
				Jobs:      rapid.Int64Range(0, 2).Draw(t, "j"),
			}
			if Check(st, d) == nil {
				Apply(&st.Counters, d, 1)
				granted = append(granted, d)
			}
			c := st.Counters
			if (b.Commands > 0 && c.Commands > b.Commands) || (b.Mutations > 0 && c.Mutations > b.Mutations) || (b.Jobs > 0 && c.Jobs > b.Jobs) {
				t.Fatalf("overdrawn: %+v over %+v", c, b)
			}
			if c.Commands < 0 || c.Mutations < 0 || c.Jobs < 0 {
				t.Fatalf("negative counters %+v", c)
			}
		}
	})
}

func TestMergeDedupsAndOrders(t *testing.T) {
	t0 := time.Unix(0, 0)
	ring := []messages.RunSpan{{SpanID: "b", Start: t0.Add(2)}, {SpanID: "c", Start: t0.Add(3)}}
	stored := []messages.RunSpan{{SpanID: "a", Start: t0.Add(1)}, {SpanID: "b", Start: t0.Add(2)}}
	got := Merge(ring, stored)
	if len(got) != 3 || got[0].SpanID != "a" || got[1].SpanID != "b" || got[2].SpanID != "c" {
		t.Fatalf("merge = %+v", got)
	}
}
