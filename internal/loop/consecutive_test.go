package loop

import (
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// ev is one event of a scope: a call that crossed the gate (touch) or a
// finished, recorded call.
type ev struct {
	scope  string
	touch  bool   // a call noted at the gate (Touch), not recorded
	input  string // the call's input ("" for an op never recorded)
	op     string // "" = run_command
	result string
	failed bool
	tree   string
}

func (e ev) opName() string {
	if e.op == "" {
		return "run_command"
	}
	return e.op
}

// A loop is the same call repeated with nothing changed in between: N
// consecutive identical calls of one scope on one tree, no other call of
// that scope between them.
func TestConsecutiveCalls(t *testing.T) {
	grep := func(scope string) []ev { // a no-match grep: a result, not a failure
		return []ev{{scope: scope, touch: true, input: "grep"}, {scope: scope, input: "grep", result: "exit 1, no output", tree: "T"}}
	}
	failing := func(scope string) []ev { // go test ./pkg failing
		return []ev{{scope: scope, touch: true, input: "test"}, {scope: scope, input: "test", result: "FAIL", failed: true, tree: "T"}}
	}
	read := func(scope string) []ev { return []ev{{scope: scope, touch: true, op: "read_file"}} }
	patch := func(scope string, failed bool) []ev {
		return []ev{{scope: scope, touch: true, op: "apply_patch", input: "p"}, {scope: scope, op: "apply_patch", input: "p", result: "PATCH_CONFLICT", failed: failed, tree: "T"}}
	}
	cat := func(parts ...[]ev) []ev {
		var out []ev
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name     string
		evs      []ev
		scope    string
		op       string // "" = run_command
		input    string
		wantLoop bool
	}{
		{name: "the third no-match grep of a session with reads between is no loop",
			evs: cat(grep("s"), read("s"), grep("s"), read("s")), scope: "s", input: "grep"},
		{name: "three no-match greps back to back: the third runs",
			evs: cat(grep("s"), grep("s")), scope: "s", input: "grep"},
		{name: "three no-match greps back to back: the fourth is a loop",
			evs: cat(grep("s"), grep("s"), grep("s")), scope: "s", input: "grep", wantLoop: true},
		{name: "the same failing command hammered back to back is a loop",
			evs: cat(failing("s"), failing("s")), scope: "s", input: "test", wantLoop: true},
		{name: "a read between two failures ends the streak",
			evs: cat(failing("s"), read("s"), failing("s")), scope: "s", input: "test"},
		{name: "the blocked retry does not end its own streak",
			evs: cat(failing("s"), failing("s"), []ev{{scope: "s", touch: true, input: "test"}}), scope: "s", input: "test", wantLoop: true},
		{name: "another session's calls do not end the streak",
			evs: cat(failing("s"), read("other"), grep("other"), failing("s")), scope: "s", input: "test", wantLoop: true},
		{name: "the same failing patch back to back is a loop",
			evs: cat(patch("s", true), patch("s", true)), scope: "s", op: "apply_patch", input: "p", wantLoop: true},
		{name: "the same failing patch with a read between is not",
			evs: cat(patch("s", true), read("s"), patch("s", true)), scope: "s", op: "apply_patch", input: "p"},
		{name: "a call noted at the gate but not yet recorded ends the streak too",
			evs: cat(failing("s"), failing("s"), []ev{{scope: "s", touch: true, input: "other"}}), scope: "s", input: "test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Config{})
			for i, e := range tt.evs {
				now := at(float64(i) / 10)
				if e.touch {
					d.Touch(e.scope, e.opName(), e.input, now)
					continue
				}
				d.Record(Observation{Scope: e.scope, Op: e.opName(), InputHash: e.input, ResultHash: e.result, Failed: e.failed, TreeRevision: e.tree,
					ReceiptID: "r" + strconv.Itoa(i), At: now})
			}
			op := tt.op
			if op == "" {
				op = "run_command"
			}
			v := d.Check(tt.scope, op, tt.input, "T", at(float64(len(tt.evs))/10))
			if v.Loop != tt.wantLoop {
				t.Fatalf("Check = %+v, want loop %v", v, tt.wantLoop)
			}
		})
	}
}

// model is the definition of a loop, computed from every event kept in
// full: Check must agree with it on every sequence.
type model struct {
	threshold int
	window    time.Duration
	events    map[string][]modelEv // scope -> its events, in order
}

type modelEv struct {
	ev
	at time.Time
}

func (m *model) loop(scope, op, input, tree string, now time.Time) bool {
	evs := m.events[scope]
	// The trailing run of calls of exactly this (op, input): no other
	// call of the scope in between.
	i := len(evs)
	for i > 0 && evs[i-1].opName() == op && evs[i-1].input == input {
		i--
	}
	var recs []modelEv
	for _, e := range evs[i:] {
		if !e.touch {
			recs = append(recs, e)
		}
	}
	if len(recs) == 0 {
		return false
	}
	last := recs[len(recs)-1]
	since := now.Add(-m.window)
	// Rule 2: the last max(T-1, 1) calls failed on this very tree.
	if tree != "" && last.failed && last.tree == tree {
		n := 0
		for j := len(recs) - 1; j >= 0 && recs[j].failed && recs[j].tree == tree; j-- {
			if !recs[j].at.Before(since) {
				n++
			}
		}
		if n >= max(m.threshold-1, 1) {
			return true
		}
	}
	// Rule 1: the last T calls returned the same result on this tree.
	if last.tree != tree {
		return false
	}
	n := 0
	for j := len(recs) - 1; j >= 0 && recs[j].result == last.result && recs[j].tree == last.tree; j-- {
		if !recs[j].at.Before(since) {
			n++
		}
	}
	return n >= m.threshold
}

// The detector against the model, over random interleavings of scopes,
// inputs, results, failures, trees, gate notes and time.
func TestDetectorMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		threshold := rapid.IntRange(2, 4).Draw(t, "threshold")
		window := time.Duration(rapid.IntRange(1, 10).Draw(t, "window_min")) * time.Minute
		d := New(Config{Threshold: threshold, Window: window})
		m := &model{threshold: threshold, window: window, events: map[string][]modelEv{}}
		now := t0
		scopes := []string{"", "run:a", "session:b"}
		inputs := []string{"grep", "test", "ls"}
		trees := []string{"", "T1", "T2"}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			now = now.Add(time.Duration(rapid.IntRange(0, 240).Draw(t, "dt_s")) * time.Second)
			scope := rapid.SampledFrom(scopes).Draw(t, "scope")
			input := rapid.SampledFrom(inputs).Draw(t, "input")
			tree := rapid.SampledFrom(trees).Draw(t, "tree")
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0: // a call of another operation (a read): noted, never recorded
				d.Touch(scope, "read_file", "", now)
				m.events[scope] = append(m.events[scope], modelEv{ev{scope: scope, touch: true, op: "read_file"}, now})
			case 1: // a call noted at the gate
				d.Touch(scope, "run_command", input, now)
				m.events[scope] = append(m.events[scope], modelEv{ev{scope: scope, touch: true, input: input}, now})
			default: // a finished call
				e := ev{scope: scope, input: input, result: rapid.SampledFrom([]string{"r1", "r2"}).Draw(t, "result"),
					failed: rapid.Bool().Draw(t, "failed"), tree: tree}
				d.Record(Observation{Scope: scope, Op: "run_command", InputHash: input, ResultHash: e.result, Failed: e.failed, TreeRevision: tree,
					ReceiptID: "r" + strconv.Itoa(i), At: now})
				m.events[scope] = append(m.events[scope], modelEv{e, now})
			}
			// Check every key of every scope against the model.
			for _, s := range scopes {
				for _, in := range inputs {
					for _, tr := range trees {
						got := d.Check(s, "run_command", in, tr, now).Loop
						if want := m.loop(s, "run_command", in, tr, now); got != want {
							t.Fatalf("step %d: Check(%q, %q, tree %q) loop = %v, model says %v; events of the scope: %+v", i, s, in, tr, got, want, m.events[s])
						}
					}
				}
			}
		}
	})
}
