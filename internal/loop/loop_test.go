package loop

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type rec struct {
	min     float64 // minutes after t0
	result  string
	failed  bool
	tree    string
	receipt string
	input   string // "" = "in"
}

func at(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

func TestCheck(t *testing.T) {
	same := func(n int, tree string) []rec {
		out := make([]rec, n)
		for i := range out {
			out[i] = rec{min: float64(i), result: "r", tree: tree, receipt: "rcpt_" + strconv.Itoa(i+1)}
		}
		return out
	}
	fails := func(n int, tree string) []rec {
		out := make([]rec, n)
		for i := range out {
			out[i] = rec{min: float64(i), result: "out" + strconv.Itoa(i), failed: true, tree: tree, receipt: "f" + strconv.Itoa(i+1)}
		}
		return out
	}
	tests := []struct {
		name        string
		cfg         Config
		recs        []rec
		checkMin    float64
		checkTree   string
		checkInput  string // "" = "in"
		wantLoop    bool
		wantCount   int
		wantEarlier string
		wantReason  string // substring
	}{
		{name: "nothing recorded", checkMin: 1},
		{name: "below threshold", recs: same(2, "T"), checkMin: 3, checkTree: "T", wantCount: 2},
		{name: "at threshold", recs: same(3, "T"), checkMin: 3, checkTree: "T", wantLoop: true, wantCount: 3, wantEarlier: "rcpt_1", wantReason: "returned the same result 3 times"},
		{name: "above threshold counts all", recs: same(5, "T"), checkMin: 5, checkTree: "T", wantLoop: true, wantCount: 5, wantEarlier: "rcpt_1"},
		{name: "threshold 2", cfg: Config{Threshold: 2}, recs: same(2, ""), checkMin: 3, wantLoop: true, wantCount: 2, wantEarlier: "rcpt_1"},
		{name: "threshold 1 is raised to 2", cfg: Config{Threshold: 1}, recs: same(1, ""), checkMin: 3, wantCount: 1},
		{name: "threshold 4", cfg: Config{Threshold: 4}, recs: same(3, ""), checkMin: 3, wantCount: 3},
		{name: "no tree revision at all", recs: same(3, ""), checkMin: 3, wantLoop: true, wantCount: 3, wantEarlier: "rcpt_1"},
		{name: "other input", recs: same(3, "T"), checkMin: 3, checkTree: "T", checkInput: "other"},
		{name: "window expiry of the whole streak", recs: same(3, "T"), checkMin: 13, checkTree: "T", wantCount: 0},
		{name: "window expiry of the first", recs: same(3, "T"), checkMin: 10.5, checkTree: "T", wantCount: 2},
		{name: "window expiry keeps the later repeats", recs: append(same(1, "T"), rec{min: 20, result: "r", tree: "T", receipt: "b"}, rec{min: 21, result: "r", tree: "T", receipt: "c"}, rec{min: 22, result: "r", tree: "T", receipt: "d"}),
			checkMin: 23, checkTree: "T", wantLoop: true, wantCount: 3, wantEarlier: "b"},
		{name: "short window", cfg: Config{Window: 90 * time.Second}, recs: same(3, "T"), checkMin: 2.5, checkTree: "T", wantCount: 2},
		{name: "different result resets", recs: []rec{{0, "a", false, "T", "1", ""}, {1, "a", false, "T", "2", ""}, {2, "b", false, "T", "3", ""}, {3, "a", false, "T", "4", ""}, {4, "a", false, "T", "5", ""}},
			checkMin: 5, checkTree: "T", wantCount: 2},
		{name: "same result again after reset", recs: []rec{{0, "b", false, "T", "1", ""}, {1, "a", false, "T", "2", ""}, {2, "a", false, "T", "3", ""}, {3, "a", false, "T", "4", ""}},
			checkMin: 5, checkTree: "T", wantLoop: true, wantCount: 3, wantEarlier: "2"},
		// Another call of the same scope in between ends the streak (it
		// used to be skipped over: three identical calls spread over a
		// session with other work between them were a loop).
		{name: "another call in between ends the streak", recs: []rec{{0, "a", false, "T", "1", ""}, {1, "z", false, "T", "x", "other"}, {2, "a", false, "T", "2", ""}, {3, "a", false, "T", "3", ""}},
			checkMin: 5, checkTree: "T", wantCount: 2},
		{name: "another call in between ends a failing streak", recs: []rec{{0, "x", true, "T", "1", ""}, {1, "z", false, "T", "x", "other"}, {2, "x", true, "T", "2", ""}},
			checkMin: 3, checkTree: "T", wantCount: 1},
		{name: "another call after the streak ends it", recs: append(same(3, "T"), rec{min: 3, result: "z", tree: "T", receipt: "x", input: "other"}),
			checkMin: 4, checkTree: "T"},
		{name: "tree changed before check", recs: same(3, "T1"), checkMin: 3, checkTree: "T2"},
		{name: "tree changed within streak", recs: []rec{{0, "a", false, "T1", "1", ""}, {1, "a", false, "T2", "2", ""}, {2, "a", false, "T2", "3", ""}},
			checkMin: 3, checkTree: "T2", wantCount: 2},
		{name: "failing twice on unchanged tree", recs: fails(2, "T"), checkMin: 2, checkTree: "T", wantLoop: true, wantCount: 2, wantEarlier: "f1", wantReason: "failed 2 times on tree revision T"},
		{name: "failing once", recs: fails(1, "T"), checkMin: 2, checkTree: "T", wantCount: 1},
		{name: "failing on changed tree", recs: fails(2, "T1"), checkMin: 2, checkTree: "T2"},
		{name: "failures on different trees", recs: []rec{{0, "x", true, "T1", "1", ""}, {1, "x", true, "T2", "2", ""}}, checkMin: 2, checkTree: "T2", wantCount: 1},
		{name: "failure after success", recs: []rec{{0, "x", true, "T", "1", ""}, {1, "ok", false, "T", "2", ""}, {2, "x", true, "T", "3", ""}}, checkMin: 3, checkTree: "T", wantCount: 1},
		{name: "failures without tree revision", recs: fails(5, ""), checkMin: 5, checkTree: "", wantCount: 1},
		{name: "failures expire", recs: fails(2, "T"), checkMin: 10.5, checkTree: "T", wantCount: 1},
		{name: "threshold 2 fails once", cfg: Config{Threshold: 2}, recs: fails(1, "T"), checkMin: 2, checkTree: "T", wantLoop: true, wantCount: 1, wantEarlier: "f1", wantReason: "failed once"},
		{name: "threshold 5 fails 3", cfg: Config{Threshold: 5}, recs: fails(3, "T"), checkMin: 3, checkTree: "T", wantCount: 1},
		{name: "threshold 5 fails 4", cfg: Config{Threshold: 5}, recs: fails(4, "T"), checkMin: 4, checkTree: "T", wantLoop: true, wantCount: 4, wantEarlier: "f1"},
		{name: "failure rule wins over same result", recs: []rec{{0, "x", true, "T", "1", ""}, {1, "x", true, "T", "2", ""}, {2, "x", true, "T", "3", ""}},
			checkMin: 3, checkTree: "T", wantLoop: true, wantCount: 3, wantEarlier: "1", wantReason: "failed 3 times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(tt.cfg)
			for _, r := range tt.recs {
				in := r.input
				if in == "" {
					in = "in"
				}
				d.Record(Observation{Op: "run_command", InputHash: in, ResultHash: r.result, Failed: r.failed, TreeRevision: r.tree, ReceiptID: r.receipt, At: at(r.min)})
			}
			in := tt.checkInput
			if in == "" {
				in = "in"
			}
			v := d.Check("", "run_command", in, tt.checkTree, at(tt.checkMin))
			if v.Loop != tt.wantLoop || v.Count != tt.wantCount || v.Earlier != tt.wantEarlier {
				t.Errorf("Check = %+v, want loop %v count %d earlier %q", v, tt.wantLoop, tt.wantCount, tt.wantEarlier)
			}
			if tt.wantReason != "" && !strings.Contains(v.Reason, tt.wantReason) {
				t.Errorf("Reason = %q, want it to contain %q", v.Reason, tt.wantReason)
			}
			if v.Loop && (v.Hint == "" || !strings.HasPrefix(v.Hint, "nothing changed since receipt "+v.Earlier+": ")) {
				t.Errorf("Hint = %q, want it to start with %q", v.Hint, "nothing changed since receipt "+v.Earlier+": ")
			}
			if !v.Loop && (v.Reason != "" || v.Hint != "") {
				t.Errorf("no loop but Reason %q Hint %q, want both empty", v.Reason, v.Hint)
			}
		})
	}
}

func TestHintText(t *testing.T) {
	d := New(Config{})
	for i := 1; i <= 3; i++ {
		d.Record(Observation{Op: "read_file", InputHash: "h", ResultHash: "r", ReceiptID: "rcpt_" + strconv.Itoa(i), At: at(float64(i))})
	}
	v := d.Check("", "read_file", "h", "", at(4))
	if want := "nothing changed since receipt rcpt_1: the same input returned the same result 3 times"; !strings.HasPrefix(v.Hint, want) {
		t.Errorf("Hint = %q, want prefix %q", v.Hint, want)
	}
}

func TestCheckDoesNotRecord(t *testing.T) {
	d := New(Config{})
	for i := 0; i < 10; i++ {
		if v := d.Check("", "op", "in", "T", at(float64(i))); v.Loop || v.Count != 0 {
			t.Fatalf("Check on an empty detector = %+v, want no loop", v)
		}
	}
	if d.Len() != 0 {
		t.Errorf("Len() = %d after Check only, want 0", d.Len())
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{Threshold: 3, Window: 10 * time.Minute, MaxEntries: 10000}},
		{"negative", Config{Threshold: -1, Window: -time.Second, MaxEntries: -5}, Config{Threshold: 3, Window: 10 * time.Minute, MaxEntries: 10000}},
		{"one", Config{Threshold: 1}, Config{Threshold: 2, Window: 10 * time.Minute, MaxEntries: 10000}},
		{"given", Config{Threshold: 7, Window: time.Hour, MaxEntries: 5}, Config{Threshold: 7, Window: time.Hour, MaxEntries: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.in).Config(); got != tt.want {
				t.Errorf("Config() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMaxEntriesEvictsOldest(t *testing.T) {
	// One scope per key: a scope's other calls would end the streaks.
	d := New(Config{MaxEntries: 3})
	rec := func(i int, min float64) {
		d.Record(Observation{Scope: "s" + strconv.Itoa(i), Op: "op", InputHash: strconv.Itoa(i), ResultHash: "r", At: at(min)})
	}
	for i := 0; i < 3; i++ {
		rec(i, float64(i)/10)
	}
	// Record key 0 again so key 1 becomes the least recently recorded.
	rec(0, 0.5)
	rec(3, 0.6)
	if got, want := d.Len(), 3; got != want {
		t.Fatalf("Len() = %d, want %d", got, want)
	}
	if v := d.Check("s1", "op", "1", "", at(1)); v.Count != 0 {
		t.Errorf("evicted key 1 still counted: %+v", v)
	}
	if v := d.Check("s0", "op", "0", "", at(1)); v.Count != 2 {
		t.Errorf("key 0 count = %d, want 2", v.Count)
	}
}

func TestStaleKeysDropped(t *testing.T) {
	d := New(Config{Window: time.Minute})
	for i := 0; i < 100; i++ {
		d.Record(Observation{Op: "op", InputHash: strconv.Itoa(i), ResultHash: "r", At: at(0)})
	}
	d.Record(Observation{Op: "op", InputHash: "new", ResultHash: "r", At: at(5)})
	if got, want := d.Len(), 1; got != want {
		t.Errorf("Len() = %d after the window passed, want %d", got, want)
	}
}

func TestLenBounded(t *testing.T) {
	d := New(Config{MaxEntries: 50, Threshold: 3})
	for i := 0; i < 10_000; i++ {
		d.Record(Observation{Op: "op", InputHash: strconv.Itoa(i % 97), ResultHash: strconv.Itoa(i % 3), Failed: i%2 == 0, TreeRevision: "T", ReceiptID: strconv.Itoa(i), At: at(float64(i) / 1000)})
		if d.Len() > 50 {
			t.Fatalf("Len() = %d, want at most 50", d.Len())
		}
	}
	for _, el := range d.keys {
		e := el.Value.(*entry)
		if len(e.same.recent) > 3 || len(e.fail.recent) > 2 {
			t.Fatalf("key %v keeps %d/%d marks, want at most 3/2", e.k, len(e.same.recent), len(e.fail.recent))
		}
	}
}

func BenchmarkLoopCheck(b *testing.B) {
	d := New(Config{})
	for i := 0; i < 10_000; i++ {
		d.Record(Observation{Op: "run_command", InputHash: "sha256:" + strconv.Itoa(i), ResultHash: "r", TreeRevision: "T", ReceiptID: "rcpt", At: at(float64(i) / 10_000)})
	}
	for i := 0; i < 3; i++ {
		d.Record(Observation{Op: "run_command", InputHash: "hot", ResultHash: "r", TreeRevision: "T", ReceiptID: "rcpt_" + strconv.Itoa(i), At: at(1)})
	}
	now := at(2)
	b.ReportAllocs()
	for b.Loop() {
		if v := d.Check("", "run_command", "sha256:42", "T", now); v.Loop {
			b.Fatal("unexpected loop")
		}
	}
}

func BenchmarkLoopRecord(b *testing.B) {
	d := New(Config{})
	now := t0
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		now = now.Add(time.Millisecond)
		d.Record(Observation{Op: "run_command", InputHash: strconv.Itoa(i % 20_000), ResultHash: "r", TreeRevision: "T", At: now})
	}
}

// Loops are per scope: two runs repeating the same call do not trip each
// other, while one run repeating itself still does.
func TestCheckPerScope(t *testing.T) {
	type call struct {
		scope  string
		result string
		failed bool
	}
	ok := func(scope string) call { return call{scope: scope, result: "same"} }
	fail := func(scope string) call { return call{scope: scope, result: "err", failed: true} }
	tests := []struct {
		name      string
		calls     []call
		scope     string // the scope checked
		wantLoop  bool
		wantCount int
	}{
		{name: "two runs twice each", calls: []call{ok("run:a"), ok("run:a"), ok("run:b"), ok("run:b")}, scope: "run:b", wantCount: 2},
		{name: "interleaved runs", calls: []call{ok("run:a"), ok("run:b"), ok("run:a"), ok("run:b"), ok("run:a")}, scope: "run:b", wantCount: 2},
		{name: "one run three times", calls: []call{ok("run:a"), ok("run:b"), ok("run:a"), ok("run:a")}, scope: "run:a", wantLoop: true, wantCount: 3},
		{name: "another run's failures", calls: []call{fail("run:a"), fail("run:a")}, scope: "run:b"},
		{name: "one run's failures", calls: []call{fail("run:a"), fail("run:b"), fail("run:a")}, scope: "run:a", wantLoop: true, wantCount: 2},
		{name: "sessions are scopes too", calls: []call{ok("session:s1"), ok("session:s1"), ok("session:s2")}, scope: "session:s2", wantCount: 1},
		{name: "the global scope is its own", calls: []call{ok("run:a"), ok("run:a"), ok("run:a")}, scope: "", wantCount: 0},
		{name: "global repeats still loop", calls: []call{ok(""), ok(""), ok("")}, scope: "", wantLoop: true, wantCount: 3},
		{name: "a run is not charged with global repeats", calls: []call{ok(""), ok(""), ok("")}, scope: "run:a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Config{})
			for i, c := range tt.calls {
				d.Record(Observation{Scope: c.scope, Op: "run_command", InputHash: "ls pkg", ResultHash: c.result, Failed: c.failed,
					TreeRevision: "T", ReceiptID: "r" + strconv.Itoa(i), At: at(float64(i) / 10)})
			}
			v := d.Check(tt.scope, "run_command", "ls pkg", "T", at(1))
			if v.Loop != tt.wantLoop || v.Count != tt.wantCount {
				t.Fatalf("Check(%q) = %+v, want loop %v count %d", tt.scope, v, tt.wantLoop, tt.wantCount)
			}
		})
	}
}
