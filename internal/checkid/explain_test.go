package checkid

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/gitx"
)

func parts(t *testing.T, dir string, def Definition, vars map[string]string) Parts {
	t.Helper()
	env := Env{Vars: vars, Tools: map[string]string{"go": "go version go1.26.8 linux/amd64"}}
	env.Digest = env.ComputeDigest()
	return Parts{Revision: contentRev(t, dir, Options{}), Definition: def, Env: env}
}

func wantReasons(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("reasons:\n got %q\nwant %q", got, want)
	}
}

func TestExplainMissFiles(t *testing.T) {
	dir := baseRepo(t)
	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 2\n") // dirty in both
	writeFile(t, dir, "gone.txt", "temporary\n")                // dirty, then removed
	def := Definition{Argv: []string{"go", "test", "./..."}, TimeoutMs: 60000}
	vars := map[string]string{"PATH": "/usr/bin"}
	prev := parts(t, dir, def, vars)
	ctx := testCtx(t)
	var g gitx.Git

	if got := ExplainMiss(ctx, &g, dir, prev, prev); len(got) != 0 {
		t.Fatalf("identical parts: got %q, want no reasons", got)
	}

	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 3\n")
	writeFile(t, dir, "src/b.go", "package src\n\nvar B = 2\n")
	writeFile(t, dir, "src/new.go", "package src\n")
	os.Remove(filepath.Join(dir, "README.md"))
	os.Remove(filepath.Join(dir, "gone.txt"))
	cur := parts(t, dir, def, vars)
	wantReasons(t, ExplainMiss(ctx, &g, dir, prev, cur), []string{
		"README.md was deleted",
		"gone.txt changed (now matches the committed version)",
		"src/a.go changed (modified since the evidence)",
		"src/b.go changed (modified since the evidence)",
		"src/new.go is new",
	})

	// Restoring a deleted file.
	wantReasons(t, ExplainMiss(ctx, &g, dir, cur, prev)[:1], []string{"README.md was restored to the committed version"})

	// More than ten files: ten named, the rest counted.
	for i := 0; i < 13; i++ {
		writeFile(t, dir, "many/f"+strconv.Itoa(i+10)+".txt", "x\n")
	}
	many := ExplainMiss(ctx, &g, dir, cur, parts(t, dir, def, vars))
	if len(many) != 11 || many[10] != "and 3 more files changed" {
		t.Fatalf("got %d reasons, last %q, want 11 ending with %q", len(many), many[len(many)-1], "and 3 more files changed")
	}
}

func TestExplainMissHeadMoved(t *testing.T) {
	dir := baseRepo(t)
	def := Definition{Argv: []string{"go", "test"}}
	prev := parts(t, dir, def, nil)
	ctx := testCtx(t)
	var g gitx.Git

	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 9\n")
	writeFile(t, dir, "src/c.go", "package src\n")
	os.Remove(filepath.Join(dir, "README.md"))
	commitAll(t, dir, "change")
	cur := parts(t, dir, def, nil)
	want := "HEAD moved from " + prev.Revision.Head[:7] + " to " + cur.Revision.Head[:7] +
		": 3 files changed: README.md, src/a.go, src/c.go"
	wantReasons(t, ExplainMiss(ctx, &g, dir, prev, cur), []string{want})

	// An empty commit moves HEAD but not the content: no reason.
	commitAll(t, dir, "empty")
	if got := ExplainMiss(ctx, &g, dir, cur, parts(t, dir, def, nil)); len(got) != 0 {
		t.Fatalf("empty commit: got %q, want no reasons", got)
	}

	// From an unborn branch.
	unborn := Parts{Revision: Revision{Dirty: map[string]string{}}, Definition: def, Env: cur.Env}
	got := ExplainMiss(ctx, &g, dir, unborn, cur)
	if len(got) != 1 || !strings.HasPrefix(got[0], "HEAD moved from (unborn) to "+cur.Revision.Head[:7]+": 4 files changed: .gitignore, ") {
		t.Fatalf("from unborn: got %q", got)
	}

	// More than ten files: the list is capped.
	for i := 0; i < 15; i++ {
		writeFile(t, dir, "gen/f"+strconv.Itoa(i+10)+".txt", "x\n")
	}
	commitAll(t, dir, "many")
	got = ExplainMiss(ctx, &g, dir, cur, parts(t, dir, def, nil))
	if len(got) != 1 || !strings.Contains(got[0], ": 15 files changed: gen/f10.txt, ") || !strings.HasSuffix(got[0], "gen/f19.txt, ...") {
		t.Fatalf("many files: got %q", got)
	}

	// A tree git no longer has: the reason stays, without a file list.
	gone := cur
	gone.Revision.Tree = strings.Repeat("ab", 20)
	gone.Revision.Digest = gone.Revision.ComputeDigest()
	got = ExplainMiss(ctx, &g, dir, gone, cur)
	if len(got) != 1 || !strings.Contains(got[0], "(changed files unknown: ") {
		t.Fatalf("unknown tree: got %q", got)
	}
}

func TestExplainMissEnvAndDefinition(t *testing.T) {
	rev := Revision{Tree: strings.Repeat("1", 40), Dirty: map[string]string{}}
	rev.Digest = rev.ComputeDigest()
	env := func(vars, tools map[string]string) Env {
		e := Env{Vars: vars, Tools: tools}
		e.Digest = e.ComputeDigest()
		return e
	}
	goTool := map[string]string{"go": "go version go1.26.8 linux/amd64"}
	base := Parts{
		Revision:   rev,
		Definition: Definition{Argv: []string{"go", "test"}, Cwd: "src", Effects: []string{"a", "b"}, TimeoutMs: 1000},
		Env:        env(map[string]string{"PATH": "/bin"}, goTool),
	}
	with := func(f func(p *Parts)) Parts {
		p := base
		f(&p)
		return p
	}
	tests := []struct {
		name string
		cur  Parts
		want []string
	}{
		{"identical", base, nil},
		{"effects reordered, cwd uncleaned", with(func(p *Parts) {
			p.Definition = Definition{Argv: []string{"go", "test"}, Cwd: "src/", Effects: []string{"b", "a", "a"}, TimeoutMs: 1000}
		}), nil},
		{"variable set", with(func(p *Parts) { p.Env = env(map[string]string{"PATH": "/bin", "GOFLAGS": "-race"}, goTool) }),
			[]string{`variable GOFLAGS changed from "" to "-race"`}},
		{"variable set empty", with(func(p *Parts) { p.Env = env(map[string]string{"PATH": "/bin", "CI": ""}, goTool) }),
			[]string{`variable CI changed from unset to ""`}},
		{"variable changed", with(func(p *Parts) { p.Env = env(map[string]string{"PATH": "/usr/bin"}, goTool) }),
			[]string{`variable PATH changed from "/bin" to "/usr/bin"`}},
		{"go version", with(func(p *Parts) { p.Env = env(base.Env.Vars, map[string]string{"go": "go version go1.27.0 linux/amd64"}) }),
			[]string{`go version changed from "go version go1.26.8 linux/amd64" to "go version go1.27.0 linux/amd64"`}},
		{"executable stamp", with(func(p *Parts) {
			p.Env = env(base.Env.Vars, map[string]string{"go": goTool["go"], "mytool": "sha256:01"})
		}), []string{"executable mytool changed (path, size or modification time)"}},
		{"argv", with(func(p *Parts) { p.Definition.Argv = []string{"go", "test", "-race"} }),
			[]string{`argv changed from ["go" "test"] to ["go" "test" "-race"]`}},
		{"cwd", with(func(p *Parts) { p.Definition.Cwd = "" }), []string{`cwd changed from "src" to ""`}},
		{"effects", with(func(p *Parts) { p.Definition.Effects = []string{"a"} }), []string{`effects changed from ["a" "b"] to ["a"]`}},
		{"timeout", with(func(p *Parts) { p.Definition.TimeoutMs = 2000 }), []string{"timeout changed from 1000 ms to 2000 ms"}},
		{"order: variables, tools, definition", with(func(p *Parts) {
			p.Definition.TimeoutMs = 5
			p.Definition.Argv = []string{"go"}
			p.Env = env(map[string]string{}, map[string]string{"go": "x"})
		}), []string{
			`variable PATH changed from "/bin" to ""`,
			`go version changed from "go version go1.26.8 linux/amd64" to "x"`,
			`argv changed from ["go" "test"] to ["go"]`,
			"timeout changed from 1000 ms to 5 ms",
		}},
		{"schema", with(func(p *Parts) { p.Revision.Digest = "sha256:from-an-older-schema" }),
			[]string{"schema changed (evidence computed differently than by schema 1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// No git call is needed: the trees are equal.
			got := ExplainMiss(testCtx(t), nil, t.TempDir(), base, tt.cur)
			wantReasons(t, got, tt.want)
		})
	}
}

func TestExplainMissWithoutGit(t *testing.T) {
	// A path appearing with content where git cannot tell whether it is
	// tracked: a hedged reason, never a panic or a dropped reason.
	prev := Parts{Revision: Revision{Tree: strings.Repeat("1", 40), Dirty: map[string]string{}}}
	cur := Parts{Revision: Revision{Tree: strings.Repeat("1", 40), Dirty: map[string]string{"x.go": sha("x")}}}
	got := ExplainMiss(testCtx(t), nil, t.TempDir(), prev, cur)
	wantReasons(t, got, []string{"x.go changed (modified or new since the evidence)"})
}
