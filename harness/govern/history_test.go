package govern

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/loop"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestGovernor(t *testing.T) (*Governor, *clock) {
	t.Helper()
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &clock{t: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	g, err := New(Config{Store: st, Audit: &runtime.FakeAudit{}, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return g, c
}

var testRepo = &messages.Repository{ID: "repo_1"}

func TestCommandFailed(t *testing.T) {
	tests := []struct {
		argv     []string
		exit     int
		timedOut bool
		want     bool
	}{
		{[]string{"grep", "-rn", "nope", "."}, 1, false, false}, // no match: an answer
		{[]string{"grep", "-rn", "x", "."}, 2, false, true},     // an error
		{[]string{"/usr/bin/grep", "x", "a"}, 1, false, false},
		{[]string{"rg", "x"}, 1, false, false},
		{[]string{"git", "grep", "x"}, 1, false, false},
		{[]string{"git", "-C", "sub", "grep", "x"}, 1, false, false},
		{[]string{"git", "diff", "--quiet"}, 1, false, false},
		{[]string{"diff", "a", "b"}, 1, false, false},
		{[]string{"diff", "a", "b"}, 2, false, true},
		{[]string{"git", "log", "x"}, 1, false, true},
		{[]string{"go", "test", "./..."}, 1, false, true}, // a failing test is a failure (for loops, never for risk)
		{[]string{"cat", "missing"}, 1, false, true},
		{[]string{"grep", "x"}, 0, true, true},
		{[]string{"ls"}, 0, false, false},
		{nil, 1, false, true},
	}
	for _, tt := range tests {
		if got := CommandFailed(tt.argv, tt.exit, tt.timedOut); got != tt.want {
			t.Errorf("CommandFailed(%q, %d, %v) = %v, want %v", tt.argv, tt.exit, tt.timedOut, got, tt.want)
		}
	}
}

// The corpus scenario of issue 28 at the gate: benign work (searches
// without a match, refused secret reads) never makes go vet or node
// --version ask; a command refused again and again raises its own risk,
// and its program's, for this caller only, and the raise fades.
func TestGateStableDecisions(t *testing.T) {
	g, clk := newTestGovernor(t)
	ctx := context.Background()
	sess := messages.Caller{Session: "s1"}
	tick := func() { clk.t = clk.t.Add(10 * time.Second) }
	gate := func(in Input) (Result, error) {
		t.Helper()
		tick()
		in.Caller, in.Repo = sess, testRepo
		return g.Gate(ctx, in)
	}

	// Four greps without a match: allowed, recorded as answers.
	grep := []string{"grep", "-rn", "NoSuchThing", "."}
	for i := 0; i < 4; i++ {
		res, err := gate(Input{Tool: "run_command", Kind: route.Command, Argv: grep, Args: map[string]any{"argv": grep, "i": i}, TreeRevision: "T"})
		if err != nil {
			t.Fatalf("grep %d: %v", i, err)
		}
		g.LoopRecord(loop.Observation{Scope: LoopScope(sess), Op: "run_command", InputHash: res.InputHash, TreeRevision: "T",
			Failed: CommandFailed(grep, 1, false), ResultHash: "no match"})
	}
	// A grep that exits 2 and two refused secret reads.
	g2 := []string{"grep", "-rn", "x", ".git"}
	if _, err := gate(Input{Tool: "run_command", Kind: route.Command, Argv: g2, Args: map[string]any{"argv": g2}, TreeRevision: "T"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".env", "test/sample_key.pem"} {
		if _, err := gate(Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{p}, Args: map[string]any{"path": p}}); errs.CodeOf(err) != errs.SecretPathDenied {
			t.Fatalf("read_file %s: %v, want SECRET_PATH_DENIED", p, err)
		}
	}
	for _, argv := range [][]string{{"go", "vet", "./..."}, {"node", "--version"}, {"npx", "tsc", "--noEmit"}, {"python3", "--version"}} {
		res, err := gate(Input{Tool: "job_start", Kind: route.Job, Argv: argv, Args: map[string]any{"argv": argv}})
		if err != nil {
			t.Fatalf("job_start %q after benign work: %v, want allowed", argv, err)
		}
		if res.Decision.Risk >= mediate.RiskAskThreshold {
			t.Errorf("job_start %q: risk %d (%s)", argv, res.Decision.Risk, res.Decision.Reason)
		}
	}

	// A command refused three times in a row (a secret in its argv).
	dump := []string{"python3", "tools/dump.py", ".env"}
	for i := 0; i < 3; i++ { // at one instant: decay aside
		in := Input{Tool: "job_start", Kind: route.Job, Argv: dump, Caller: sess, Repo: testRepo}
		_ = g.Refuse(in, errs.New(errs.SecretPathDenied, "argv names a secret path"))
	}
	s := g.Score(Input{Tool: "job_start", Kind: route.Job, Argv: dump, Caller: sess})
	if s.Risk != 80 || !s.Asks || !strings.Contains(s.Text, "this command refused 3.0 times") {
		t.Errorf("score of the refused command = %+v, want 80 with its history", s)
	}
	// A variant of the same program: +5 per refusal.
	variant := []string{"python3", "tools/dump.py"}
	res, err := gate(Input{Tool: "job_start", Kind: route.Job, Argv: variant, Args: map[string]any{"argv": variant}})
	if err != nil || res.Decision.Risk != 75 {
		t.Errorf("variant: risk %d, %v; want allowed at 75", res.Decision.Risk, err)
	}
	// Another session, and a new run of the same session, start clean.
	for _, c := range []messages.Caller{{Session: "s2"}, {Session: "s1", RunID: "run_new"}} {
		if s := g.Score(Input{Tool: "job_start", Kind: route.Job, Argv: dump, Caller: c}); s.Risk != 60 {
			t.Errorf("score for %+v = %d (%s), want 60: refusals are the caller's", c, s.Risk, s.Text)
		}
	}
	// A fourth refusal: the variant now asks, naming the parts.
	_ = g.Refuse(Input{Tool: "job_start", Kind: route.Job, Argv: dump, Caller: sess, Repo: testRepo}, errs.New(errs.SecretPathDenied, "argv names a secret path"))
	clk.t = clk.t.Add(-10 * time.Second) // the gate's tick: the same instant as the refusals
	_, err = gate(Input{Tool: "job_start", Kind: route.Job, Argv: variant, Args: map[string]any{"argv": variant}})
	if e := errs.From(err); err == nil || e.Code != errs.ApprovalRequired || !strings.Contains(e.Message, `other "python3" commands refused 4.0 times`) {
		t.Errorf("variant after 4 refusals: %v, want APPROVAL_REQUIRED naming the history", err)
	}
	// ... but a version query of the program never asks.
	if _, err := gate(Input{Tool: "job_start", Kind: route.Job, Argv: []string{"python3", "--version"}, Args: map[string]any{"argv": []string{"python3", "--version"}}}); err != nil {
		t.Errorf("python3 --version after refusals: %v, want allowed", err)
	}
	// History decays: ten minutes halve it, an hour all but forgets it.
	clk.t = clk.t.Add(10 * time.Minute)
	if h := g.History(sess, "job_start", dump, nil); math.Abs(h.Command-2) > 0.05 {
		t.Errorf("after 10 min: %+v, want about 2 refusals", h)
	}
	clk.t = clk.t.Add(time.Hour)
	if s := g.Score(Input{Tool: "job_start", Kind: route.Job, Argv: dump, Caller: sess}); s.Risk != 60 {
		t.Errorf("after 70 min: %d (%s), want 60", s.Risk, s.Text)
	}
}

func TestRefusalMemoryBounded(t *testing.T) {
	r := refusals{m: map[refusalKey]decayed{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < maxRefusals+500; i++ {
		r.note("s", kindCommand, strings.Repeat("x", i%7)+string(rune('a'+i%26))+time.Duration(i).String(), t0.Add(time.Duration(i)*time.Millisecond))
		if len(r.m) > maxRefusals {
			t.Fatalf("%d subjects, want at most %d", len(r.m), maxRefusals)
		}
	}
	// Faded subjects go first.
	r.note("s", kindCommand, "fresh", t0.Add(24*time.Hour))
	if len(r.m) != 1 {
		t.Errorf("%d subjects after a day, want only the fresh one", len(r.m))
	}
}
