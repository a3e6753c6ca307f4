package mediate

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/route"
)

// A remote write always asks a person, naming the exact command and where
// it writes: a policy allow rule does not lift it, the risk does not decide
// it, an approval of exactly this input does; destructive work asks at the
// risk threshold, naming what it removes; other tools are sent to
// job_start (a git push to git_push), run_check included.
func TestDecideRemoteAndDestructive(t *testing.T) {
	allowAll := mustPolicy(t, `version: 1
rules:
  - id: publish-ok
    tools: [job_start]
    argv_prefix: [npm, publish]
    decision: allow
  - id: gh-ok
    tools: [job_start]
    argv_prefix: [gh]
    decision: allow
  - id: rm-ok
    tools: [job_start]
    argv_prefix: [rm, -rf, build]
    decision: allow
  - id: no-unpublish
    tools: [job_start]
    argv_prefix: [npm, unpublish]
    decision: deny
`)
	job := func(argv ...string) Input {
		return Input{Tool: "job_start", Kind: route.Job, Argv: argv, Confined: true}
	}
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	tests := []struct {
		name    string
		in      Input
		want    Outcome
		code    errs.Code
		rule    string
		reasons []string // substrings of the reason
	}{
		{name: "npm publish asks", in: job("npm", "publish", "--registry", "https://registry.example.com/"),
			want: Ask, code: errs.ApprovalRequired, rule: RuleRemoteWrite,
			reasons: []string{"npm publish --registry https://registry.example.com/", "writes to https://registry.example.com/", "the package in the working directory"}},
		{name: "npm publish asks under a policy allow rule", in: with(job("npm", "publish", "./pkg.tgz"), func(i *Input) { i.Policy = allowAll }),
			want: Ask, code: errs.ApprovalRequired, rule: RuleRemoteWrite, reasons: []string{"npm publish ./pkg.tgz", "the default npm registry: ./pkg.tgz"}},
		{name: "npm publish approved", in: with(job("npm", "publish"), func(i *Input) { i.ApprovalOK = true }),
			want: Allow, rule: RuleApproval, reasons: []string{"a remote write needs one"}},
		{name: "approved under an allow rule", in: with(job("npm", "publish"), func(i *Input) { i.ApprovalOK, i.Policy = true, allowAll }),
			want: Allow, rule: RuleApproval, reasons: []string{"a remote write needs one"}},
		{name: "a deny rule still blocks an approved publish", in: with(job("npm", "unpublish", "x@1.0.0"), func(i *Input) { i.ApprovalOK, i.Policy = true, allowAll }),
			want: Block, code: errs.PolicyDenied, rule: "no-unpublish"},
		{name: "gh pr merge names the repository and the pull request", in: with(job("gh", "pr", "merge", "12", "--repo", "acme/tool", "--squash"), func(i *Input) { i.Policy = allowAll }),
			want: Ask, code: errs.ApprovalRequired, rule: RuleRemoteWrite, reasons: []string{"gh pr merge 12 --repo acme/tool --squash", "writes to acme/tool: pr merge 12"}},
		{name: "cargo publish names the crate", in: job("cargo", "publish", "-p", "mycrate"),
			want: Ask, rule: RuleRemoteWrite, reasons: []string{"crates.io: mycrate"}},
		{name: "a deploy asks", in: job("vercel", "deploy", "--prod"), want: Ask, rule: RuleRemoteWrite, reasons: []string{"Vercel"}},
		{name: "a publish via run_command goes to job_start", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"npm", "publish"}},
			want: Escalate, code: errs.RouteDurableRequired, rule: RuleRouteDurable, reasons: []string{"use job_start"}},
		{name: "a publish via run_check goes to job_start", in: Input{Tool: "run_check", Kind: route.Check, Argv: []string{"npm", "publish"}, RunsDurable: true},
			want: Escalate, code: errs.RouteDurableRequired, rule: RuleRouteDurable, reasons: []string{"use job_start"}},
		{name: "rm -rf via run_check goes to job_start", in: Input{Tool: "run_check", Kind: route.Check, Argv: []string{"rm", "-rf", "pkg"}, RunsDurable: true},
			want: Escalate, code: errs.RouteDurableRequired, rule: RuleRouteDurable},
		{name: "git push via job_start goes to git_push", in: with(job("git", "push", "origin", "main"), func(i *Input) { i.ApprovalOK = true }),
			want: Escalate, code: errs.RouteDurableRequired, reasons: []string{"use git_push", "pushes main to origin"}},
		{name: "rm -rf pkg asks naming what it removes", in: job("rm", "-rf", "pkg", "build/out"),
			want: Ask, code: errs.ApprovalRequired, rule: RuleRisk, reasons: []string{"risk 100", "rm -rf pkg build/out removes pkg, build/out in the checkout"}},
		{name: "git clean -fdx asks naming what it removes", in: job("git", "clean", "-fdx"),
			want: Ask, rule: RuleRisk, reasons: []string{"removes untracked and ignored files and directories in the whole checkout"}},
		{name: "rm -rf pkg approved", in: with(job("rm", "-rf", "pkg"), func(i *Input) { i.ApprovalOK = true }),
			want: Allow, rule: RuleApproval, reasons: []string{"risk 100 needs one"}},
		{name: "a person's allow rule for one delete", in: with(job("rm", "-rf", "build"), func(i *Input) { i.Policy = allowAll }),
			want: Allow, rule: "rm-ok"},
		// Attacker rows: approval never lifts these.
		{name: "rm -rf /", in: with(job("rm", "-rf", "/"), func(i *Input) { i.ApprovalOK = true }), want: Block, code: errs.RouteRejected, rule: RuleRouteReject},
		{name: "rm -rf ../x", in: with(job("rm", "-rf", "../x"), func(i *Input) { i.ApprovalOK = true }), want: Block, code: errs.RouteRejected, reasons: []string{`"../x" leaves its directory`}},
		{name: "rm -rf /home/user", in: with(job("rm", "-rf", "/home/user"), func(i *Input) { i.ApprovalOK = true }), want: Block, code: errs.RouteRejected, reasons: []string{"absolute path"}},
		{name: "git alias push", in: with(job("git", "-c", "alias.p=push", "p", "origin"), func(i *Input) { i.ApprovalOK = true }), want: Block, code: errs.RouteRejected},
		{name: "script-hidden push", in: with(job("sh", "-c", "make && git push origin main"), func(i *Input) { i.ApprovalOK = true }), want: Block, code: errs.RouteRejected},
		{name: "mirror config", in: with(job("git", "config", "remote.origin.mirror", "true"), func(i *Input) { i.ApprovalOK = true }), want: Block, code: errs.RouteRejected},
		// Benign work is untouched.
		{name: "make job", in: job("make"), want: Allow},
		{name: "ls", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"ls", "-la"}}, want: Allow},
		{name: "rm one file", in: job("rm", "-f", "out.txt"), want: Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.in)
			if d.Outcome != tt.want || (tt.code != "" && d.Code != tt.code) || (tt.rule != "" && d.RuleID != tt.rule) {
				t.Fatalf("Decide = %s %s (rule %q: %s), want %s %s (rule %q)", d.Outcome, d.Code, d.RuleID, d.Reason, tt.want, tt.code, tt.rule)
			}
			for _, r := range tt.reasons {
				if !strings.Contains(d.Reason, r) {
					t.Errorf("reason %q, want it to contain %q", d.Reason, r)
				}
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"npm", "publish"}, "npm publish"},
		{[]string{"rm", "-rf", "my dir"}, `rm -rf "my dir"`},
		{[]string{"sh", "-c", "a;b"}, `sh -c "a;b"`},
		{[]string{"x", ""}, `x ""`},
		{[]string{"echo", "\x1b[31m"}, `echo "\x1b[31m"`},
	}
	for _, tt := range tests {
		if got := CommandLine(tt.argv); got != tt.want {
			t.Errorf("CommandLine(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}
