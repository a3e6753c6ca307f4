package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

const examplePolicy = `version: 1
rules:
  - id: no-force-push
    tools: [run_command, job_start]        # optional; empty = every tool
    argv_prefix: ["git", "push"]           # optional: argv starts with these words
    argv_pattern: "--force|-f\\b"          # optional: RE2 over the argv joined with single spaces
    decision: deny
    justification: "force pushes rewrite shared history"
    examples:
      match:     [{tool: run_command, argv: [git, push, --force, origin, main]}]
      not_match: [{tool: run_command, argv: [git, push, origin, main]}]
  - id: lockfiles
    paths: ["**/*.lock", "migrations/**"]
    decision: ask
    justification: "lockfiles and migrations need a human"
    examples:
      match: [{tool: apply_patch, paths: [web/yarn.lock]}, {tool: apply_patch, paths: [./migrations/001.sql]}]
      not_match: [{tool: apply_patch, paths: [src/main.go]}, {tool: read_file}]
  - id: go-test-ok
    tools: [run_command]
    argv_prefix: [go, test]
    decision: allow
`

// testVerified is the require_verified vocabulary the registry gives
// (harness/op.Spec.Verified; harness/op's registry test pins it).
var testVerified = Verified("apply_patch", "git_stage", "git_commit", "patch_proposal_integrate")

func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Parse([]byte(src), "policy.yaml", testVerified)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func TestParseExample(t *testing.T) {
	p := mustParse(t, examplePolicy)
	if got, want := p.Len(), 3; got != want {
		t.Fatalf("Len() = %d, want %d", got, want)
	}
	if got, want := p.Source(), "policy.yaml"; got != want {
		t.Errorf("Source() = %q, want %q", got, want)
	}
	r := p.Rules()[0]
	if r.ID != "no-force-push" || r.Decision != Deny || r.ArgvPattern != `--force|-f\b` ||
		strings.Join(r.Tools, ",") != "run_command,job_start" || strings.Join(r.ArgvPrefix, " ") != "git push" ||
		r.Justification != "force pushes rewrite shared history" || len(r.Examples.Match) != 1 || len(r.Examples.NotMatch) != 1 {
		t.Errorf("rule 0 = %+v, not as written", r)
	}
	if got := p.Rules()[1].Examples.Match[1].Paths[0]; got != "./migrations/001.sql" {
		t.Errorf("example path = %q, want it kept as written", got)
	}
}

func TestParseErrors(t *testing.T) {
	rule := func(body string) string {
		return "version: 1\nrules:\n  - " + strings.ReplaceAll(body, "\n", "\n    ") + "\n"
	}
	tests := []struct {
		name     string
		src      string
		wantRule string // the "rule" detail; "" for errors outside rules
		want     string // substring of the message
	}{
		{"empty file", "", "", "policy is empty"},
		{"comments only", "# nothing\n", "", "policy is empty"},
		{"syntax error", "version: [1\n", "", "invalid YAML"},
		{"not a mapping", "- 1\n", "", "must be a mapping"},
		{"missing version", "rules: []\n", "", "version is missing"},
		{"version 2", "version: 2\n", "", `version "2" is not supported`},
		{"version string", "version: \"1\"\n", "", `version "1" is not supported`},
		{"version float", "version: 1.0\n", "", "is not supported"},
		{"unknown top field", "version: 1\nrulez: []\n", "", `unknown field "rulez"`},
		{"two documents", "version: 1\n---\nversion: 1\n", "", "single YAML document"},
		{"duplicate top key", "version: 1\nversion: 1\n", "", "version"},
		{"rules not a list", "version: 1\nrules: {}\n", "", "rules must be a list"},
		{"rule not a mapping", "version: 1\nrules: [deny]\n", "rules[0]", "must be a mapping"},
		{"missing id", rule("decision: deny\ntools: [x]"), "rules[0]", "id is missing"},
		{"empty id", rule("id: ''\ndecision: deny\ntools: [x]"), "rules[0]", "id is empty"},
		{"bad id", rule("id: 'has space'\ndecision: deny\ntools: [x]"), "rules[0]", "must start with a letter or digit"},
		{"id is a list", rule("id: [a]\ndecision: deny\ntools: [x]"), "rules[0]", "id must be a string"},
		{"duplicate id", "version: 1\nrules:\n  - {id: a, decision: deny, tools: [x]}\n  - {id: a, decision: ask, tools: [y]}\n", "a", "duplicate id: rules[0] already has id \"a\""},
		{"unknown rule field", rule("id: r1\ndecsion: deny\ntools: [x]"), "r1", `unknown field "decsion"`},
		{"unknown field before id", rule("bogus: 1\nid: r1\ndecision: deny\ntools: [x]"), "r1", `unknown field "bogus"`},
		{"duplicate rule field", rule("id: r1\ndecision: deny\ndecision: ask\ntools: [x]"), "r1", `field "decision" is given twice`},
		{"missing decision", rule("id: r1\ntools: [x]"), "r1", "decision is missing"},
		{"bad decision", rule("id: r1\ndecision: block\ntools: [x]"), "r1", `decision "block" is not allow, ask or deny`},
		{"null decision", rule("id: r1\ndecision:\ntools: [x]"), "r1", "decision is empty"},
		{"bad regex", rule("id: r1\ndecision: deny\nargv_pattern: 'a(b'"), "r1", "not a valid RE2 expression"},
		{"perl regex", rule("id: r1\ndecision: deny\nargv_pattern: '(?=x)'"), "r1", "not a valid RE2 expression"},
		{"empty regex", rule("id: r1\ndecision: deny\nargv_pattern: ''"), "r1", "argv_pattern is empty"},
		{"bad glob", rule("id: r1\ndecision: deny\npaths: ['a/[b']"), "r1", "is not a valid glob"},
		{"absolute glob", rule("id: r1\ndecision: deny\npaths: ['/etc/**']"), "r1", "is absolute"},
		{"dotdot glob", rule("id: r1\ndecision: deny\npaths: ['../x']"), "r1", "cannot leave the repository root"},
		{"dot slash glob", rule("id: r1\ndecision: deny\npaths: ['./x']"), "r1", `starts with "./"`},
		{"empty glob", rule("id: r1\ndecision: deny\npaths: ['']"), "r1", "is empty"},
		{"no matcher", rule("id: r1\ndecision: deny\njustification: why"), "r1", "has no matcher"},
		{"empty tools list", rule("id: r1\ndecision: deny\ntools: []"), "r1", "tools is an empty list"},
		{"empty tool name", rule("id: r1\ndecision: deny\ntools: ['']"), "r1", "tools[0] is empty"},
		{"empty argv_prefix", rule("id: r1\ndecision: deny\nargv_prefix: []"), "r1", "argv_prefix is an empty list"},
		{"argv_prefix not a list", rule("id: r1\ndecision: deny\nargv_prefix: git"), "r1", "argv_prefix must be a list"},
		{"nested list word", rule("id: r1\ndecision: deny\nargv_prefix: [[git]]"), "r1", "argv_prefix[0] must be a string"},
		{"alias", "version: 1\nx: &a [1]\n", "", `unknown field "x"`},
		{"alias in rule", "version: 1\nrules:\n  - id: r1\n    decision: deny\n    tools: &t [a]\n  - id: r2\n    decision: deny\n    tools: *t\n", "r2", "aliases are not supported"},
		{"merge key", "version: 1\nrules:\n  - id: r1\n    decision: deny\n    tools: [a]\n    <<: {paths: [x]}\n", "r1", "merge keys"},
		{"unknown example field", rule("id: r1\ndecision: deny\ntools: [x]\nexamples: {matches: []}"), "r1", `examples: unknown field "matches"`},
		{"example without tool", rule("id: r1\ndecision: deny\ntools: [x]\nexamples: {match: [{argv: [a]}]}"), "r1", "example match[0]: tool is missing"},
		{"example unknown field", rule("id: r1\ndecision: deny\ntools: [x]\nexamples: {match: [{tool: x, args: [a]}]}"), "r1", `example match[0]: unknown field "args"`},
		{"binary tag", rule("id: r1\ndecision: deny\ntools: [!!binary aGk=]"), "r1", "must be a string, not a !!binary value"},
		{"too large", "version: 1\n" + strings.Repeat("#", MaxBytes), "", "larger than"},
		{"decision and require_verified", rule("id: r1\ndecision: deny\nrequire_verified: tests\ntools: [git_commit]"), "r1", "either a decision or require_verified"},
		{"empty require_verified", rule("id: r1\nrequire_verified: ' '\ntools: [git_commit]"), "r1", "require_verified is empty"},
		{"long require_verified", rule("id: r1\nrequire_verified: " + strings.Repeat("s", MaxStageLen+1) + "\ntools: [git_commit]"), "r1", "longer than 128 bytes"},
		{"require_verified without tools", rule("id: r1\nrequire_verified: tests\npaths: ['src/**']"), "r1", "require_verified needs tools"},
		{"require_verified on a read", rule("id: r1\nrequire_verified: tests\ntools: [git_commit, run_command]"), "r1", `tools[1] "run_command": require_verified applies to`},
		{"require_verified with argv", rule("id: r1\nrequire_verified: tests\ntools: [git_commit]\nargv_prefix: [git]"), "r1", "argv_prefix and argv_pattern never match a write"},
		{"require_verified bad example", rule("id: r1\nrequire_verified: tests\ntools: [git_commit]\nexamples: {match: [{tool: apply_patch}]}"), "r1", "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.src), "policy.yaml", testVerified)
			if err == nil {
				t.Fatalf("Parse = %v, nil; want an error containing %q", p, tt.want)
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.InvalidArgument {
				t.Fatalf("error %v: got code %v, want %s", err, errs.CodeOf(err), errs.InvalidArgument)
			}
			if !strings.Contains(e.Message, tt.want) {
				t.Errorf("message %q, want it to contain %q", e.Message, tt.want)
			}
			if !strings.HasPrefix(e.Message, "policy.yaml") {
				t.Errorf("message %q, want it to start with the source", e.Message)
			}
			got, _ := e.Details["rule"].(string)
			if got != tt.wantRule {
				t.Errorf("rule detail = %q, want %q (message %q)", got, tt.wantRule, e.Message)
			}
			if tt.wantRule != "" && !strings.Contains(e.Message, "rule "+tt.wantRule+": ") {
				t.Errorf("message %q, want it to name rule %q", e.Message, tt.wantRule)
			}
		})
	}
}

func TestParseErrorWithoutSource(t *testing.T) {
	_, err := Parse([]byte("version: 1\nrules:\n  - id: r\n    decision: nope\n    tools: [x]\n"), "")
	if err == nil {
		t.Fatal("Parse: got nil error, want one")
	}
	if got, want := err.Error(), `INVALID_ARGUMENT: line 4: rule r: decision "nope" is not allow, ask or deny`; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

func TestExampleFailureStopsLoad(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "match example does not match",
			src: `version: 1
rules:
  - id: no-force-push
    tools: [run_command]
    argv_prefix: [git, push]
    argv_pattern: "--force"
    decision: deny
    examples:
      match: [{tool: run_command, argv: [git, push, --force, origin, main]}, {tool: run_command, argv: [git, push, origin, main]}]
`,
			want: "rule no-force-push: example match[1] {run_command [git push origin main]} does not match",
		},
		{
			name: "not_match example matches",
			src: `version: 1
rules:
  - id: lock
    paths: ["**/*.lock"]
    decision: ask
    examples:
      not_match: [{tool: apply_patch, paths: [a.go]}, {tool: apply_patch, paths: [sub/Cargo.lock]}]
`,
			want: "rule lock: example not_match[1] {apply_patch [] paths [sub/Cargo.lock]} matches",
		},
		{
			name: "tool mismatch",
			src: `version: 1
rules:
  - id: jobs
    tools: [job_start]
    decision: ask
    examples:
      match: [{tool: run_command, argv: [make]}]
`,
			want: "rule jobs: example match[0] {run_command [make]} does not match",
		},
		{
			name: "second rule's example fails",
			src: `version: 1
rules:
  - {id: ok, tools: [a], decision: allow, examples: {match: [{tool: a}]}}
  - {id: bad, tools: [b], decision: allow, examples: {match: [{tool: a}]}}
`,
			want: "rule bad: example match[0] {a []} does not match",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "p.yaml")
			if err == nil {
				t.Fatalf("Parse: got nil error, want %q", tt.want)
			}
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Errorf("code = %s, want %s", errs.CodeOf(err), errs.InvalidArgument)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	p := mustParse(t, `version: 1
rules:
  - id: allow-git
    argv_prefix: [git]
    decision: allow
  - id: ask-push
    argv_prefix: [git, push]
    decision: ask
    justification: pushes need a human
  - id: ask-push-2
    argv_prefix: [git, push]
    decision: ask
  - id: deny-force
    argv_pattern: "(^| )(--force|-f)( |$)"
    decision: deny
    justification: no force
  - id: deny-force-2
    argv_pattern: "--force"
    decision: deny
  - id: lockfiles
    tools: [apply_patch, git_stage]
    paths: ["**/*.lock", "go.sum"]
    decision: ask
  - id: job-writes
    tools: [job_start]
    decision: allow
  - id: rm
    tools: [run_command]
    argv_prefix: [rm]
    decision: deny
`)
	tests := []struct {
		name     string
		a        Action
		wantID   string // "" = no match
		wantDec  Decision
		wantJust string
	}{
		{"allow only", Action{Tool: "run_command", Argv: []string{"git", "status"}}, "allow-git", Allow, ""},
		{"ask beats allow", Action{Tool: "run_command", Argv: []string{"git", "push", "origin"}}, "ask-push", Ask, "pushes need a human"},
		{"deny beats ask", Action{Tool: "run_command", Argv: []string{"git", "push", "--force"}}, "deny-force", Deny, "no force"},
		{"short flag", Action{Tool: "job_start", Argv: []string{"git", "push", "-f", "origin"}}, "deny-force", Deny, "no force"},
		{"first of equal deny", Action{Tool: "run_command", Argv: []string{"x", "--force"}}, "deny-force", Deny, "no force"},
		{"pattern only second", Action{Tool: "run_command", Argv: []string{"x", "--force-with-lease"}}, "deny-force-2", Deny, ""},
		{"base name prefix", Action{Tool: "run_command", Argv: []string{"/usr/bin/git", "push"}}, "ask-push", Ask, "pushes need a human"},
		{"base name pattern", Action{Tool: "run_command", Argv: []string{"/usr/bin/git", "--force"}}, "deny-force", Deny, "no force"},
		{"prefix word must be whole", Action{Tool: "run_command", Argv: []string{"gitx", "push"}}, "", "", ""},
		{"prefix longer than argv", Action{Tool: "run_command", Argv: []string{"rm"}}, "rm", Deny, ""},
		{"no argv never matches argv rules", Action{Tool: "read_file", Paths: []string{"a.go"}}, "", "", ""},
		{"lockfile path", Action{Tool: "apply_patch", Paths: []string{"src/a.go", "web/yarn.lock"}}, "lockfiles", Ask, ""},
		{"path cleaned", Action{Tool: "git_stage", Paths: []string{"./go.sum"}}, "lockfiles", Ask, ""},
		{"path cleaned dots", Action{Tool: "git_stage", Paths: []string{"x/../go.sum"}}, "lockfiles", Ask, ""},
		{"path rule needs tool", Action{Tool: "read_file", Paths: []string{"go.sum"}}, "", "", ""},
		{"path rule needs paths", Action{Tool: "apply_patch"}, "", "", ""},
		{"tools only", Action{Tool: "job_start", Argv: []string{"make"}}, "job-writes", Allow, ""},
		{"tool mismatch", Action{Tool: "job_start", Argv: []string{"rm", "x"}}, "job-writes", Allow, ""},
		{"tool match deny", Action{Tool: "run_command", Argv: []string{"rm", "x"}}, "rm", Deny, ""},
		{"empty action", Action{}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := p.Evaluate(tt.a)
			if ok != (tt.wantID != "") {
				t.Fatalf("Evaluate(%s) matched = %v (%+v), want %v", tt.a, ok, m, tt.wantID != "")
			}
			if m.RuleID != tt.wantID || m.Decision != tt.wantDec || m.Justification != tt.wantJust {
				t.Errorf("Evaluate(%s) = %+v, want {%s %s %q}", tt.a, m, tt.wantID, tt.wantDec, tt.wantJust)
			}
		})
	}
}

func TestEvaluateDoesNotModifyAction(t *testing.T) {
	p := mustParse(t, "version: 1\nrules: [{id: r, paths: ['a/**'], decision: ask}]\n")
	a := Action{Tool: "x", Paths: []string{"./a/b", "a//c"}}
	if _, ok := p.Evaluate(a); !ok {
		t.Fatal("Evaluate: got no match, want rule r")
	}
	if a.Paths[0] != "./a/b" || a.Paths[1] != "a//c" {
		t.Errorf("paths = %q, want them unchanged", a.Paths)
	}
}

func TestDefault(t *testing.T) {
	d := Default()
	if _, ok := d.Evaluate(Action{Tool: "run_command", Argv: []string{"rm", "-rf", "/"}}); ok {
		t.Error("Default().Evaluate matched, want no match")
	}
	if got, want := d.Digest(), DefaultDigest; got != want {
		t.Errorf("Default().Digest() = %s, want %s", got, want)
	}
	if got, err := digestOf(nil, nil, nil, nil); err != nil || got != DefaultDigest {
		t.Errorf("digestOf(nil) = %s, %v; want %s (update DefaultDigest)", got, err, DefaultDigest)
	}
	if got := d.Source(); got != DefaultSource {
		t.Errorf("Default().Source() = %q, want %q", got, DefaultSource)
	}
	if d.Len() != 0 || len(d.Rules()) != 0 {
		t.Errorf("Default() has %d rules, want 0", d.Len())
	}
	var nilP *Policy
	if _, ok := nilP.Evaluate(Action{Tool: "x"}); ok || nilP.Digest() != DefaultDigest || nilP.Source() != DefaultSource {
		t.Error("nil *Policy does not behave like Default()")
	}
	if got := mustParse(t, "version: 1\n").Digest(); got != DefaultDigest {
		t.Errorf("digest of a policy without rules = %s, want %s", got, DefaultDigest)
	}
}

func TestDigest(t *testing.T) {
	base := mustParse(t, examplePolicy).Digest()
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Fatalf("Digest() = %q, want sha256:<64 hex>", base)
	}
	if again := mustParse(t, examplePolicy).Digest(); again != base {
		t.Errorf("digest not stable: %s then %s", base, again)
	}
	reformatted := strings.ReplaceAll(examplePolicy, "  # optional", "# a different comment")
	reformatted = strings.Replace(reformatted, `tools: [run_command, job_start]`, "tools:\n      - run_command\n      - \"job_start\"", 1)
	if got := mustParse(t, reformatted).Digest(); got != base {
		t.Errorf("digest changed with formatting only: %s, want %s", got, base)
	}
	changes := []struct{ old, new string }{
		{"decision: deny", "decision: ask"},
		{"force pushes rewrite shared history", "force pushes rewrite history"},
		{"argv_prefix: [go, test]", "argv_prefix: [go, vet]"},
		{"id: go-test-ok", "id: go-test-okay"},
		{"tools: [run_command, job_start]", "tools: [job_start, run_command]"},
	}
	for _, c := range changes {
		t.Run(c.new, func(t *testing.T) {
			src := strings.Replace(examplePolicy, c.old, c.new, 1)
			if src == examplePolicy {
				t.Fatalf("replacement %q not found", c.old)
			}
			if got := mustParse(t, src).Digest(); got == base {
				t.Errorf("digest did not change after %q -> %q", c.old, c.new)
			}
		})
	}
	if mustParse(t, examplePolicy).Source() == "" {
		t.Error("Source() is empty, want the source name")
	}
}

func TestRulesIsACopy(t *testing.T) {
	p := mustParse(t, examplePolicy)
	rs := p.Rules()
	rs[0].ID = "changed"
	rs[0].Tools[0] = "changed"
	rs[0].Examples.Match[0].Argv[0] = "changed"
	again := p.Rules()
	if again[0].ID != "no-force-push" || again[0].Tools[0] != "run_command" || again[0].Examples.Match[0].Argv[0] != "git" {
		t.Errorf("modifying Rules() changed the policy: %+v", again[0])
	}
	if m, _ := p.Evaluate(Action{Tool: "run_command", Argv: []string{"git", "push", "--force"}}); m.RuleID != "no-force-push" {
		t.Errorf("Evaluate after modifying Rules() = %+v, want no-force-push", m)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing file", func(t *testing.T) {
		p, err := Load(filepath.Join(dir, "nope", "policy.yaml"))
		if err != nil {
			t.Fatalf("Load: %v, want nil", err)
		}
		if p != Default() {
			t.Errorf("Load(missing) = %+v, want Default()", p)
		}
	})
	t.Run("file", func(t *testing.T) {
		path := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(path, []byte(examplePolicy), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := Load(path)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if p.Source() != path || p.Len() != 3 || p.Digest() != mustParse(t, examplePolicy).Digest() {
			t.Errorf("Load = source %q, %d rules, digest %s; want %q, 3, the parsed digest", p.Source(), p.Len(), p.Digest(), path)
		}
	})
	t.Run("invalid file", func(t *testing.T) {
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte("version: 2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), path+":1:") {
			t.Errorf("Load = %v, want INVALID_ARGUMENT naming %s:1", err, path)
		}
	})
	t.Run("directory", func(t *testing.T) {
		_, err := Load(dir)
		if err == nil {
			t.Fatal("Load(directory): got nil error, want a read error")
		}
		if errs.CodeOf(err) != errs.Internal {
			t.Errorf("code = %s, want %s", errs.CodeOf(err), errs.Internal)
		}
	})
	t.Run("too large", func(t *testing.T) {
		path := filepath.Join(dir, "big.yaml")
		if err := os.WriteFile(path, []byte("version: 1\n"+strings.Repeat("#", MaxBytes+10)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("Load(big) = %v, want a size error", err)
		}
	})
}

func TestActionString(t *testing.T) {
	tests := []struct {
		name string
		a    Action
		want string
	}{
		{"argv", Action{Tool: "run_command", Argv: []string{"git", "push"}}, "{run_command [git push]}"},
		{"paths", Action{Tool: "apply_patch", Paths: []string{"a", "b"}}, "{apply_patch [] paths [a b]}"},
		{"empty", Action{}, "{ []}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEvaluateConcurrent(t *testing.T) {
	p := mustParse(t, examplePolicy)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if m, _ := p.Evaluate(Action{Tool: "run_command", Argv: []string{"git", "push", "-f"}}); m.RuleID != "no-force-push" {
					t.Errorf("Evaluate = %+v, want no-force-push", m)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// benchPolicy returns a policy of n command rules, none matching "go test".
func benchPolicy(tb testing.TB, n int) *Policy {
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n")
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "  - {id: r%d, tools: [run_command, job_start], argv_prefix: [tool%d, sub], decision: deny}\n", i, i)
		case 1:
			fmt.Fprintf(&b, "  - {id: r%d, argv_pattern: '--flag%d\\b', decision: ask}\n", i, i)
		case 2:
			fmt.Fprintf(&b, "  - {id: r%d, paths: ['**/*.ext%d', 'dir%d/**'], decision: ask}\n", i, i, i)
		default:
			fmt.Fprintf(&b, "  - {id: r%d, tools: [git_commit], decision: allow}\n", i)
		}
	}
	return mustParse(tb, b.String())
}

func BenchmarkEvaluate20Rules(b *testing.B) {
	p := benchPolicy(b, 20)
	a := Action{Tool: "run_command", Argv: []string{"go", "test", "./harness/policy", "-run", "TestX"}, Paths: []string{"harness/policy/policy.go"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := p.Evaluate(a); ok {
			b.Fatal("unexpected match")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	src := []byte(examplePolicy)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src, "p"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRequirements(t *testing.T) {
	p := mustParse(t, `version: 1
rules:
  - id: tests-before-commit
    tools: [git_commit, patch_proposal_integrate]
    require_verified: tests
    justification: commits need passing tests
    examples:
      match: [{tool: git_commit}, {tool: patch_proposal_integrate, paths: [a.go]}]
      not_match: [{tool: apply_patch}]
  - id: review-migrations
    tools: [apply_patch, git_commit]
    paths: ["migrations/**"]
    require_verified: review
  - id: deny-lock
    paths: ["**/*.lock"]
    decision: deny
`)
	tests := []struct {
		name string
		a    Action
		want []Requirement
	}{
		{"commit", Action{Tool: "git_commit"}, []Requirement{{RuleID: "tests-before-commit", Stage: "tests"}}},
		{"commit of a migration: both, in file order", Action{Tool: "git_commit", Paths: []string{"migrations/001.sql"}},
			[]Requirement{{RuleID: "tests-before-commit", Stage: "tests"}, {RuleID: "review-migrations", Stage: "review"}}},
		{"patch of a migration", Action{Tool: "apply_patch", Paths: []string{"migrations/001.sql"}}, []Requirement{{RuleID: "review-migrations", Stage: "review"}}},
		{"patch elsewhere", Action{Tool: "apply_patch", Paths: []string{"src/a.go"}}, nil},
		{"a read", Action{Tool: "read_file", Paths: []string{"migrations/001.sql"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.Requirements(tt.a)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Requirements(%s) = %+v, want %+v", tt.a, got, tt.want)
			}
		})
	}
	// A requirement is not a decision: Evaluate never answers one.
	if m, ok := p.Evaluate(Action{Tool: "git_commit"}); ok {
		t.Errorf("Evaluate(git_commit) = %+v, want no decision", m)
	}
	if m, ok := p.Evaluate(Action{Tool: "git_commit", Paths: []string{"x.lock"}}); !ok || m.RuleID != "deny-lock" {
		t.Errorf("Evaluate(lockfile commit) = %+v, %v; want deny-lock", m, ok)
	}
	if r := p.Rules()[0]; r.RequireVerified != "tests" || r.Decision != "" {
		t.Errorf("rule 0 = %+v, want require_verified tests and no decision", r)
	}
	var nilPolicy *Policy
	if got := nilPolicy.Requirements(Action{Tool: "git_commit"}); got != nil {
		t.Errorf("nil policy: %v", got)
	}
}

// A require_verified rule changes the digest; the field is left out of the
// canonical form of other rules, so their digests did not change.
func TestRequireVerifiedDigest(t *testing.T) {
	a := mustParse(t, "version: 1\nrules:\n  - {id: r, tools: [git_commit], require_verified: tests}\n").Digest()
	b := mustParse(t, "version: 1\nrules:\n  - {id: r, tools: [git_commit], require_verified: review}\n").Digest()
	if a == b {
		t.Error("digest did not change with the stage")
	}
	c := mustParse(t, "version: 1\nrules:\n  - {id: r, tools: [git_commit], decision: deny}\n").Digest()
	want, err := digestOf([]Rule{{ID: "r", Tools: []string{"git_commit"}, Decision: Deny}}, nil, nil, nil)
	if err != nil || c != want {
		t.Errorf("digest of a decision rule = %s, want %s (%v)", c, want, err)
	}
}

func TestMaxRetries(t *testing.T) {
	cases := []struct {
		src  string
		want int // -1 = unset
		ok   bool
	}{
		{"version: 1\n", -1, true},
		{"version: 1\nmax_retries: 5\n", 5, true},
		{"version: 1\nmax_retries: 0\n", 0, true},
		{"version: 1\nmax_retries: 101\n", 0, false},
		{"version: 1\nmax_retries: -1\n", 0, false},
		{"version: 1\nmax_retries: many\n", 0, false},
		{"version: 1\nmax_retries: [1]\n", 0, false},
	}
	for _, c := range cases {
		p, err := Parse([]byte(c.src), "t.yaml")
		if (err == nil) != c.ok {
			t.Fatalf("%q: err %v, want ok=%v", c.src, err, c.ok)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "max_retries") {
				t.Fatalf("%q: error %v does not name max_retries", c.src, err)
			}
			continue
		}
		got := p.MaxRetries()
		if (got == nil) != (c.want < 0) || (got != nil && *got != c.want) {
			t.Fatalf("%q: MaxRetries = %v, want %d", c.src, got, c.want)
		}
	}
	// The default digest stays that of the empty policy; a setting changes it.
	a, _ := Parse([]byte("version: 1\n"), "a")
	b, _ := Parse([]byte("version: 1\nmax_retries: 2\n"), "b")
	if a.Digest() != DefaultDigest || a.Digest() == b.Digest() {
		t.Fatalf("digests %s %s", a.Digest(), b.Digest())
	}
}

// The require_verified vocabulary is the caller's (the registry's): a
// rule may name only the operations given, and without any none at all.
func TestRequireVerifiedVocabulary(t *testing.T) {
	src := []byte("version: 1\nrules:\n  - {id: r, tools: [git_commit], require_verified: tests}\n")
	_, err := Parse(src, "p.yaml")
	if err == nil || !strings.Contains(errs.From(err).Message, "require_verified is not available") {
		t.Errorf("Parse without a vocabulary = %v, want require_verified not available", err)
	}
	_, err = Parse(src, "p.yaml", Verified("apply_patch", "other_write"))
	if err == nil || !strings.Contains(errs.From(err).Message, `tools[0] "git_commit": require_verified applies to apply_patch, other_write only`) {
		t.Errorf("Parse with another vocabulary = %v, want git_commit refused naming the vocabulary", err)
	}
	if _, err := Parse(src, "p.yaml", Verified("git_commit")); err != nil {
		t.Errorf("Parse with git_commit in the vocabulary = %v, want nil", err)
	}
	_, err = Parse([]byte("version: 1\nrules:\n  - {id: r, paths: [a], require_verified: tests}\n"), "p.yaml", Verified("apply_patch", "git_commit"))
	if err == nil || !strings.Contains(errs.From(err).Message, "require_verified needs tools: one or more of apply_patch, git_commit") {
		t.Errorf("Parse without tools = %v, want the vocabulary named", err)
	}
}
