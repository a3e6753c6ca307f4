package ctxasm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// fixture builds a git repository of files and returns its path checker.
func fixture(t testing.TB, files map[string]string) *pathsafe.Root {
	t.Helper()
	dir := testutil.Repo(t, files)
	root, err := pathsafe.NewRoot(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// age sets every file of the checkout back an hour, so the cache keeps
// them (a file modified within racyWindow is read again).
func age(t testing.TB, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeSymlink == 0 {
			_ = os.Chtimes(p, old, old)
		}
		return nil
	})
}

func ids(ps []Part) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func prunedIDs(ps []Pruned) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		out[p.ID] = p.Reason
	}
	return out
}

const agents = `# Agents

Read this first.

## Go style

Run gofmt on every file.

## Python tips

Use ruff.

## Testing

Run go test -race.

## Commits

Subjects look like pkg: change.
`

// The descriptors' facts of the operations the fixtures name
// (harness/op.Spec; harness/op's registry test pins them). read_file has
// none.
var (
	gitCommit  = OpFacts{Topics: []string{"commit", "style"}, ChangesCheckout: true}
	applyPatch = OpFacts{Topics: []string{"style", "test"}, ChangesCheckout: true}
	runCheck   = OpFacts{Topics: []string{"test", "build"}}
)

func TestAssembleFixtures(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		req     Request
		state   []string
		rules   []string
		docs    []string
		pruned  []string // ids that must be pruned (as not relevant or otherwise)
		absent  []string // text that must not appear anywhere
		langs   []string
		trivial bool
	}{
		{name: "bare", files: map[string]string{"main.go": "package main\n"},
			state: []string{}, rules: []string{}, docs: []string{}, langs: []string{"go"}, trivial: true},
		{name: "state files", files: map[string]string{"STATE.md": "# State\nphase 2\n", "PLAN.md": "# Plan\n1. do\n", ".planning/next.md": "# Next\nstep\n", "a.py": "x = 1\n"},
			state: []string{"state:STATE.md", "state:PLAN.md", "state:.planning/next.md"}, rules: []string{}, docs: []string{}, langs: []string{"python"}},
		{name: "agents sections without command", files: map[string]string{"AGENTS.md": agents, "main.go": "package main\n"},
			state: []string{}, docs: []string{},
			rules:  []string{"rule:AGENTS.md", "rule:AGENTS.md#Go style", "rule:AGENTS.md#Testing", "rule:AGENTS.md#Commits"},
			pruned: []string{"rule:AGENTS.md#Python tips"}, absent: []string{"Use ruff"}},
		{name: "agents sections for git_commit", files: map[string]string{"AGENTS.md": agents, "main.go": "package main\n"},
			req: Request{Command: "git_commit", Op: gitCommit}, state: []string{}, docs: []string{},
			rules:  []string{"rule:AGENTS.md", "rule:AGENTS.md#Go style", "rule:AGENTS.md#Commits"},
			pruned: []string{"rule:AGENTS.md#Python tips", "rule:AGENTS.md#Testing"}},
		{name: "agents sections for a test stage", files: map[string]string{"AGENTS.md": agents, "main.go": "package main\n"},
			req: Request{Stage: "run the tests"}, state: []string{}, docs: []string{},
			rules:  []string{"rule:AGENTS.md", "rule:AGENTS.md#Testing"},
			pruned: []string{"rule:AGENTS.md#Go style", "rule:AGENTS.md#Commits", "rule:AGENTS.md#Python tips"}},
		{name: "cursor rules by globs", files: map[string]string{
			"main.go":                 "package main\n",
			".cursor/rules/go.mdc":    "---\ndescription: Go rules\nglobs: *.go\n---\nwrap errors\n",
			".cursor/rules/py.mdc":    "---\nglobs: [\"**/*.py\"]\n---\nuse types\n",
			".cursor/rules/all.mdc":   "---\nalwaysApply: true\n---\nbe brief\n",
			".cursor/rules/man.mdc":   "no front matter here\n",
			".cursor/rules/notes.txt": "not a rule\n",
		}, state: []string{}, docs: []string{},
			rules:  []string{"rule:.cursor/rules/all.mdc", "rule:.cursor/rules/go.mdc"},
			pruned: []string{"rule:.cursor/rules/py.mdc", "rule:.cursor/rules/man.mdc"}, absent: []string{"use types", "not a rule"}},
		{name: "cursor globs by request paths", files: map[string]string{
			"main.go": "package main\n", "web/app.ts": "export const x = 1\n",
			".cursor/rules/go.mdc": "---\nglobs: *.go\n---\nwrap errors\n",
			".cursor/rules/ts.mdc": "---\nglobs:\n  - web/**/*.ts\n---\nno any\n",
		}, req: Request{Command: "apply_patch", Op: applyPatch, Paths: []string{"web/app.ts"}}, state: []string{}, docs: []string{},
			rules: []string{"rule:.cursor/rules/ts.mdc"}, pruned: []string{"rule:.cursor/rules/go.mdc"}, langs: []string{"go", "typescript"}},
		{name: "contributing for writes only", files: map[string]string{"CONTRIBUTING.md": "# Contributing\nsign off\n", ".github/copilot-instructions.md": "be kind\n"},
			req: Request{Command: "read_file"}, state: []string{}, docs: []string{},
			rules: []string{"rule:.github/copilot-instructions.md"}, pruned: []string{"rule:CONTRIBUTING.md"}},
		{name: "contributing for a patch", files: map[string]string{"CONTRIBUTING.md": "# Contributing\nsign off\n"},
			req: Request{Command: "apply_patch", Op: applyPatch}, state: []string{}, docs: []string{}, rules: []string{"rule:CONTRIBUTING.md"}},
		{name: "docs", files: map[string]string{
			"README.md": "# Proj\n" + strings.Repeat("line\n", 200), "CLAUDE.md": "# Claude\nhints\n",
			".codebase/arch.md": "# Architecture\nlayers\n", "docs/a.md": "# Alpha guide\n", "docs/b.md": "no heading\n", "docs/c.txt": "x\n",
		}, state: []string{}, rules: []string{},
			docs: []string{"doc:CLAUDE.md", "doc:README.md#head", "doc:.codebase/arch.md", "doc:docs/index"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fixture(t, tt.files)
			var c Cache
			co := Scan(root, &c, time.Now())
			res := Assemble(co, tt.req)
			if got := ids(res.State); !slices.Equal(got, tt.state) {
				t.Errorf("state = %v, want %v", got, tt.state)
			}
			if tt.rules != nil {
				if got := ids(res.Rules); !slices.Equal(got, tt.rules) {
					t.Errorf("rules = %v, want %v", got, tt.rules)
				}
			}
			if got := ids(res.Docs); !slices.Equal(got, tt.docs) {
				t.Errorf("docs = %v, want %v", got, tt.docs)
			}
			pr := prunedIDs(res.Pruned)
			for _, id := range tt.pruned {
				if pr[id] == "" {
					t.Errorf("%s not pruned; pruned = %v", id, pr)
				}
			}
			b, _ := json.Marshal(res)
			for _, s := range tt.absent {
				if strings.Contains(string(b), s) {
					t.Errorf("result holds %q", s)
				}
			}
			if tt.langs != nil && !slices.Equal(res.Languages, tt.langs) {
				t.Errorf("languages = %v, want %v", res.Languages, tt.langs)
			}
			if got := Trivial(tt.req.Command, false, tt.req); tt.req.Command == "" && tt.req.Stage == "" && got != true {
				t.Errorf("trivial = %v for a request without command", got)
			}
			if res.Budget.Used > res.Budget.Budget || res.Budget.Used+res.Budget.Remaining != res.Budget.Budget {
				t.Errorf("budget = %+v", res.Budget)
			}
		})
	}
}

func TestDocsIndexAndReadmeHead(t *testing.T) {
	root := fixture(t, map[string]string{"README.md": "# Proj\n" + strings.Repeat("line\n", 200), "docs/a.md": "# Alpha guide\n", "docs/b.md": "no heading\n"})
	res := Assemble(Scan(root, &Cache{}, time.Now()), Request{})
	var idx, readme string
	for _, p := range res.Docs {
		switch p.ID {
		case "doc:docs/index":
			idx = p.Text
		case "doc:README.md#head":
			readme = p.Text
		}
	}
	if idx != "- docs/a.md: Alpha guide\n- docs/b.md: b" {
		t.Errorf("docs index = %q", idx)
	}
	if n := strings.Count(readme, "\n") + 1; n != readmeHeadLines {
		t.Errorf("README head has %d lines, want %d", n, readmeHeadLines)
	}
}

// TestSecretsNeverRead plants secret files and symlinks to them (and out
// of the root) under every candidate name: no secret content may appear.
func TestSecretsNeverRead(t *testing.T) {
	const value = "sk-live-4f9a8b7c6d5e4f3a2b1c"
	root := fixture(t, map[string]string{".env": "API_KEY=" + value + "\n", "main.go": "package main\n",
		"README.md": "# Proj\nthe key is " + value + "\n"})
	outside := filepath.Join(t.TempDir(), "outside.md")
	if err := os.WriteFile(outside, []byte("OUTSIDE-MARKER\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ name, target string }{
		{"CLAUDE.md", ".env"}, {"STATE.md", outside}, {"AGENTS.md", "../" + filepath.Base(filepath.Dir(outside)) + "/outside.md"},
		{".cursor/rules/x.mdc", "../../.env"}, {"docs/leak.md", "../.env"}, {".planning/p.md", "../.env"},
	} {
		p := filepath.Join(root.Path(), l.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l.target, p); err != nil {
			t.Fatal(err)
		}
	}
	// A hard link is another name of the secret file itself.
	if err := os.Link(filepath.Join(root.Path(), ".env"), filepath.Join(root.Path(), "PLAN.md")); err != nil {
		t.Fatal(err)
	}
	// A directory symlink out of the root: only the path check sees it.
	outDir := filepath.Dir(outside)
	testutil.WriteFile(t, outDir, "x.md", "OUTSIDE-DIR-MARKER\n")
	testutil.WriteFile(t, outDir, "copilot-instructions.md", "OUTSIDE-DIR-MARKER\n")
	for _, name := range []string{".codebase", ".github"} {
		if err := os.Symlink(outDir, filepath.Join(root.Path(), name)); err != nil {
			t.Fatal(err)
		}
	}
	red := func(s string) string { return strings.ReplaceAll(s, value, "[REDACTED:known]") }
	res := Assemble(Scan(root, &Cache{}, time.Now()), Request{Redact: red})
	b, _ := json.Marshal(res)
	for _, bad := range []string{value, "API_KEY", "OUTSIDE-MARKER", "OUTSIDE-DIR-MARKER"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("assembled context holds %q: %s", bad, b)
		}
	}
	if !strings.Contains(string(b), "the key is [REDACTED:known]") {
		t.Errorf("README's copy of the value is not redacted: %s", b)
	}
}

func TestWarmScanReadsNothing(t *testing.T) {
	root := fixture(t, map[string]string{"AGENTS.md": agents, "STATE.md": "s\n", "docs/a.md": "# A\n", ".cursor/rules/a.mdc": "---\nalwaysApply: true\n---\nx\n", "main.go": "package main\n"})
	age(t, root.Path())
	var c Cache
	first := Assemble(Scan(root, &c, time.Now()), Request{})
	cold := c.Reads()
	if cold == 0 {
		t.Fatal("cold scan read nothing")
	}
	second := Assemble(Scan(root, &c, time.Now()), Request{})
	if warm := c.Reads() - cold; warm != 0 {
		t.Errorf("warm scan read %d files, want 0", warm)
	}
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(second)
	if string(a) != string(b) {
		t.Errorf("warm result differs:\n%s\n%s", a, b)
	}
	// A changed file is read again, and only it.
	testutil.WriteFile(t, root.Path(), "STATE.md", "changed state\n")
	old := time.Now().Add(-30 * time.Minute)
	_ = os.Chtimes(filepath.Join(root.Path(), "STATE.md"), old, old)
	before := c.Reads()
	third := Assemble(Scan(root, &c, time.Now()), Request{})
	if n := c.Reads() - before; n != 1 {
		t.Errorf("after one change the scan read %d files, want 1", n)
	}
	if len(third.State) != 1 || third.State[0].Text != "changed state\n" {
		t.Errorf("state = %+v, want the new content", third.State)
	}
}

func TestRunFailuresFirst(t *testing.T) {
	root := fixture(t, map[string]string{"STATE.md": "state\n"})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := messages.RunState{RunID: "run_1", Status: messages.RunActive, CurrentStage: "build", CompletedStages: []string{"plan"},
		Escalations: []messages.RunEscalation{{From: "direct", To: "bounded_work", Reason: "more files"}},
		Observations: []messages.RunObservation{
			{At: t0, Source: "harnessd", Kind: "loop", Text: "first loop note"},
			{At: t0.Add(time.Minute), Source: "harnessd", Kind: "loop", Text: "second loop note"},
			{At: t0.Add(2 * time.Minute), Source: "agent", Kind: "finding", Text: "STATE.md says phase 1"},
			{At: time.Now().Add(time.Hour), Source: "agent", Kind: "finding", Text: "fresh note"},
		}}
	spans := []messages.RunSpan{
		{SpanID: "s1", Op: "apply_patch", Outcome: "ok", ReceiptID: "rcpt_1", Start: t0},
		{SpanID: "s2", Op: "read_file", Outcome: "error", ErrorCode: "NOT_FOUND", Start: t0.Add(time.Second)},
		{SpanID: "s3", Op: "run_command", Outcome: "error", ErrorCode: "APPROVAL_REQUIRED", ApprovalID: "apr_1", Decision: "ask", Start: t0.Add(2 * time.Second)},
		{SpanID: "s4", Op: "read_file", Outcome: "ok", Start: t0.Add(3 * time.Second)},
	}
	res := Assemble(Scan(root, &Cache{}, time.Now()), Request{Run: &st, Spans: spans, Stage: st.CurrentStage})
	want := []string{"event:failure:s3", "event:failure:s2", "event:receipt:rcpt_1", "event:escalation:1", "event:approval:apr_1"}
	if got := ids(res.Events); !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if len(res.State) == 0 || res.State[0].Kind != KindRunState || !strings.Contains(res.State[0].Text, "current stage: build") {
		t.Errorf("state = %+v, want the run's stage state first", res.State)
	}
	pr := prunedIDs(res.Pruned)
	if !strings.Contains(pr["observation:1"], "superseded") {
		t.Errorf("the older loop note is not superseded: %v", pr)
	}
	if !strings.Contains(pr["observation:3"], "STATE.md") { // the file changed (was written) after t0
		t.Errorf("the note on STATE.md is not stale: %v", pr)
	}
	if got := ids(res.Observations); !slices.Equal(got, []string{"observation:4", "observation:2"}) {
		t.Errorf("observations = %v", got)
	}
	// The budgeted text holds no clock reading.
	for _, p := range append(res.Events, res.State...) {
		if strings.Contains(p.Text, "2026") {
			t.Errorf("part %s holds a timestamp: %q", p.ID, p.Text)
		}
	}
}

func TestCheckBudget(t *testing.T) {
	for _, b := range []int{-1, 1, 499, 200001, 1 << 30} {
		if _, err := CheckBudget(b); err == nil || !strings.Contains(err.Error(), "between 500 and 200000") {
			t.Errorf("CheckBudget(%d) = %v, want INVALID_ARGUMENT naming the range", b, err)
		}
	}
	for _, b := range []int{0, 500, 8000, 200000} {
		if _, err := CheckBudget(b); err != nil {
			t.Errorf("CheckBudget(%d) = %v", b, err)
		}
	}
}

func TestSummariseKeepsOutline(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		if i%50 == 0 {
			b.WriteString("## Section " + string(rune('A'+i/50)) + "\n")
		}
		b.WriteString("some prose line that goes on for a while\n")
	}
	s := Summarise("t", b.String(), Prose, 300)
	if !fits("t", s, Prose, 300) {
		t.Fatalf("summary of %d tokens does not fit 300", cost("t", s, Prose))
	}
	for _, h := range []string{"[outline]", "## Section A", "## Section F", "[summarised from"} {
		if !strings.Contains(s, h) {
			t.Errorf("summary lacks %q:\n%s", h, s)
		}
	}
	code := "package x\n\nfunc A() {\n" + strings.Repeat("\tx++\n", 500) + "}\n\ntype B struct{}\n\nfunc (B) C() {}\n"
	s = Summarise("x.go", code, Code, 200)
	for _, h := range []string{"func A()", "type B struct", "func (B) C()"} {
		if !strings.Contains(s, h) {
			t.Errorf("code summary lacks %q:\n%s", h, s)
		}
	}
}

func TestEstimate(t *testing.T) {
	tests := []struct {
		k    TextKind
		s    string
		want int
	}{
		{Prose, "", 0}, {Prose, "abcd", 1}, {Prose, "abcde", 2}, {Code, "abcdefg", 2}, {JSON, `{"a":1}`, 3}, {Prose, "héllo", 2},
	}
	for _, tt := range tests {
		if got := Estimate(tt.k, tt.s); got != tt.want {
			t.Errorf("Estimate(%v, %q) = %d, want %d", tt.k, tt.s, got, tt.want)
		}
	}
}

func TestParseIndexMatchesGit(t *testing.T) {
	files := map[string]string{"a.go": "a", "dir/b.py": "b", "dir/sub/c.ts": "c", "z.md": "z"}
	for _, ver := range []string{"2", "3", "4"} {
		t.Run("v"+ver, func(t *testing.T) {
			root := fixture(t, files)
			testutil.Git(t, root.Path(), "update-index", "--index-version", ver)
			b, err := os.ReadFile(filepath.Join(root.Path(), ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseIndex(b)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(testutil.Git(t, root.Path(), "ls-files"), "\n")
			if !slices.Equal(got, want) {
				t.Errorf("paths = %v, want %v", got, want)
			}
		})
	}
}

func TestParseMDC(t *testing.T) {
	tests := []struct {
		in   string
		want FrontMatter
		body string
	}{
		{"---\ndescription: Go\nglobs: *.go, **/*_test.go\nalwaysApply: false\n---\nbody\n", FrontMatter{Description: "Go", Globs: []string{"*.go", "**/*_test.go"}}, "body\n"},
		{"---\nglobs: [\"a/*.ts\", 'b/*.ts']\nalwaysApply: true\n---\n", FrontMatter{Globs: []string{"a/*.ts", "b/*.ts"}, AlwaysApply: true}, ""},
		{"---\r\nglobs:\r\n  - x/**\r\n  - \"y/*\"\r\n---\r\nb", FrontMatter{Globs: []string{"x/**", "y/*"}}, "b"},
		{"no front matter\n", FrontMatter{}, "no front matter\n"},
		{"---\nglobs: *.go\nnever closed\n", FrontMatter{}, "---\nglobs: *.go\nnever closed\n"},
	}
	for _, tt := range tests {
		fm, body := ParseMDC(tt.in)
		if fm.Description != tt.want.Description || fm.AlwaysApply != tt.want.AlwaysApply || !slices.Equal(fm.Globs, tt.want.Globs) || body != tt.body {
			t.Errorf("ParseMDC(%q) = %+v, %q; want %+v, %q", tt.in, fm, body, tt.want, tt.body)
		}
	}
}

func TestOutlineLine(t *testing.T) {
	tests := []struct {
		line string
		tk   TextKind
		want bool
	}{
		{"# Title", Prose, true}, {"### Deep", Prose, true}, {"#hashtag", Prose, false}, {"text", Prose, false},
		{"func Do() error {", Code, true}, {"type T struct {", Code, true}, {"\tx := 1", Code, false},
		{"export function f(a: string) {", Code, true}, {"class A {", Code, true}, {"interface B {", Code, true},
		{"def f(x):", Code, true}, {"    def method(self):", Code, true}, {"async def g():", Code, true}, {"        def inner():", Code, false},
	}
	for _, tt := range tests {
		if got := outlineLine(tt.line, tt.tk); got != tt.want {
			t.Errorf("outlineLine(%q, %v) = %v, want %v", tt.line, tt.tk, got, tt.want)
		}
	}
}

// The assembly reads an operation's facts, never its name: an operation it
// has never heard of gets the rules its descriptor's facts select.
func TestAssembleReadsOpFacts(t *testing.T) {
	root := fixture(t, map[string]string{"CONTRIBUTING.md": "# Contributing\nsign off\n", "AGENTS.md": agents, "main.go": "package main\n"})
	var c Cache
	co := Scan(root, &c, time.Now())
	writer := Assemble(co, Request{Command: "brand_new_write", Op: OpFacts{Topics: []string{"test"}, ChangesCheckout: true}})
	if got := ids(writer.Rules); !slices.Contains(got, "rule:CONTRIBUTING.md") || !slices.Contains(got, "rule:AGENTS.md#Testing") || slices.Contains(got, "rule:AGENTS.md#Commits") {
		t.Errorf("rules for a write with topic test = %v, want CONTRIBUTING.md and Testing, not Commits", got)
	}
	// The same name without facts: no topics, no CONTRIBUTING.md.
	bare := Assemble(co, Request{Command: "brand_new_write"})
	if got := ids(bare.Rules); slices.Contains(got, "rule:CONTRIBUTING.md") || slices.Contains(got, "rule:AGENTS.md#Testing") {
		t.Errorf("rules for an operation without facts = %v, want neither CONTRIBUTING.md nor Testing", got)
	}
	if !Trivial("brand_new_read", false, Request{Command: "brand_new_read", Op: OpFacts{NoRepo: true}}) {
		t.Error("Trivial = false for a command whose descriptor touches no repository")
	}
	if Trivial("git_status", false, Request{Command: "git_status"}) {
		t.Error("Trivial = true for a command that touches the repository")
	}
	want := []string{"build", "commit", "docs", "security", "style", "test"}
	if got := Topics(); !slices.Equal(got, want) {
		t.Errorf("Topics() = %v, want %v", got, want)
	}
}
