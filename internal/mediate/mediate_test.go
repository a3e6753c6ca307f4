package mediate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/loop"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/internal/route"
)

const testPolicy = `version: 1
rules:
  - id: no-force
    tools: [run_command, job_start]
    argv_pattern: "(^| )--force( |$)"
    decision: deny
    justification: force rewrites history
  - id: lockfiles
    tools: [apply_patch, git_stage]
    paths: ["**/*.lock", "go.sum"]
    decision: ask
    justification: dependency changes need a human
  - id: no-migrations
    tools: [apply_patch]
    paths: ["migrations/**"]
    decision: deny
  - id: deploy
    tools: [job_start]
    argv_prefix: [./deploy.sh]
    decision: ask
  - id: trusted-installer
    tools: [job_start]
    argv_prefix: [./install.sh]
    decision: allow
  - id: read-docs
    tools: [read_file]
    paths: ["docs/**"]
    decision: allow
  - id: make-ok
    tools: [run_command]
    argv_prefix: [make]
    decision: allow
`

func mustPolicy(t testing.TB, src string) *policy.Policy {
	t.Helper()
	// The require_verified vocabulary the registry gives (harness/op.Spec.Verified).
	p, err := policy.Parse([]byte(src), "test-policy.yaml", policy.Verified("apply_patch", "git_stage", "git_commit", "patch_proposal_integrate"))
	if err != nil {
		t.Fatalf("policy.Parse: %v", err)
	}
	return p
}

// scopeUnder is a lexical stand-in for pathsafe.Root.Resolve.
func scopeUnder(p string) error {
	switch {
	case strings.HasPrefix(p, "/repo/"):
		return nil
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "../"), strings.Contains(p, "/../"):
		return errs.New(errs.PathOutsideRoot, "path %q escapes the repository root", p)
	case strings.HasPrefix(p, ".git/"):
		return errs.New(errs.PathNotAllowed, "path %q is inside .git", p)
	case strings.HasPrefix(p, "link-to-secret"):
		return errs.New(errs.SecretPathDenied, "path %q resolves to a secret", p)
	case strings.HasPrefix(p, "plain-error"):
		return errors.New("disk on fire")
	}
	return nil
}

func TestDecide(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	customDeny, err := pathsafe.NewDenylist([]string{"*.secret", "private/"})
	if err != nil {
		t.Fatal(err)
	}
	loopYes := &loop.Verdict{Loop: true, Count: 3, Reason: "the same input returned the same result 3 times", Earlier: "rcpt_1", Hint: "nothing changed since receipt rcpt_1"}
	loopNo := &loop.Verdict{Count: 2}
	fastRoute := &route.Decision{Mode: route.Fast, Reasons: []string{"caller says fast"}, Tier: route.Direct}
	rejectRoute := &route.Decision{Mode: route.Reject, Reasons: []string{"caller says no"}, Tier: route.Direct}
	badRoute := &route.Decision{Mode: "sideways"}
	hot := History{Command: 2} // +20

	tests := []struct {
		name       string
		in         Input
		want       Outcome
		wantCode   errs.Code
		wantRule   string
		wantReason string // substring
		wantRisk   int    // -1 = do not check
	}{
		// allow
		{name: "read_file", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"README.md"}}, want: Allow, wantReason: "allowed: fast route", wantRisk: 5},
		{name: "search no paths", in: Input{Tool: "search", Kind: route.Readonly}, want: Allow, wantRisk: 5},
		{name: "git_status", in: Input{Tool: "git_status", Kind: route.Readonly}, want: Allow, wantRisk: 5},
		{name: "readonly command", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"git", "status"}}, want: Allow, wantRisk: 5},
		{name: "readonly command on lockfile", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"cat", "yarn.lock"}, Paths: []string{"yarn.lock"}}, want: Allow, wantRisk: 15},
		{name: "apply_patch plain", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"src/a.go"}, Policy: pol}, want: Allow, wantRisk: 45},
		{name: "policy allow names rule", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"docs/x.md"}, Policy: pol}, want: Allow, wantRule: "read-docs", wantReason: `allowed by policy rule "read-docs"`, wantRisk: 5},
		{name: "policy ask approved", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"web/yarn.lock"}, Policy: pol, ApprovalOK: true}, want: Allow, wantRule: "approval", wantReason: `policy rule "lockfiles" asks for one`, wantRisk: 55},
		{name: "job_start is not escalated", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"make"}}, want: Allow, wantRisk: 45},
		{name: "job_start trusted by policy despite risk", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./install.sh"}, Paths: []string{"go.sum", "Dockerfile"}, Policy: pol, History: hot}, want: Allow, wantRule: "trusted-installer", wantRisk: 100},
		{name: "high risk approved", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./build.sh"}, History: hot, ApprovalOK: true}, want: Allow, wantRule: "approval", wantReason: "risk 80 needs one", wantRisk: 80},
		{name: "loop verdict without loop", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"a"}, Loop: loopNo}, want: Allow, wantRisk: 5},
		{name: "caller route fast", in: Input{Tool: "anything", Route: fastRoute}, want: Allow, wantRisk: 5},
		{name: "scope check passes absolute inside root", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"/repo/a.go"}, ScopeCheck: scopeUnder}, want: Allow, wantRisk: 5},
		{name: "dotdot staying inside", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"a/../b.go"}}, want: Allow, wantRisk: 5},
		{name: "custom denylist lets .env through", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{".env"}, Deny: customDeny}, want: Allow, wantRisk: 5},
		{name: "risk 75 does not ask", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./build.sh"}, History: History{Command: 1, Program: 1}}, want: Allow, wantRisk: 75},

		// block: scope and secrets
		{name: "secret .env", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{".env"}}, want: Block, wantCode: errs.SecretPathDenied, wantRule: "secret-path", wantReason: `matches the secret pattern ".env"`, wantRisk: 5},
		{name: "secret nested key", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"a.go", "deploy/certs/server.key"}}, want: Block, wantCode: errs.SecretPathDenied, wantRule: "secret-path", wantReason: "server.key"},
		{name: "secret ssh dir", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"home/.ssh/config"}, Policy: pol}, want: Block, wantCode: errs.SecretPathDenied, wantRule: "secret-path"},
		{name: "custom denylist", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"private/x"}, Deny: customDeny}, want: Block, wantCode: errs.SecretPathDenied, wantRule: "secret-path"},
		{name: "secret beats policy allow", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"docs/.env"}, Policy: pol}, want: Block, wantCode: errs.SecretPathDenied, wantRule: "secret-path"},
		{name: "secret beats approval", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"id_rsa"}, ApprovalOK: true}, want: Block, wantCode: errs.SecretPathDenied},
		{name: "dotdot escape", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"../etc/passwd"}}, want: Block, wantCode: errs.PathOutsideRoot, wantRule: "scope", wantReason: "escapes the repository root"},
		{name: "absolute without scope check", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"/etc/passwd"}}, want: Block, wantCode: errs.PathOutsideRoot, wantRule: "scope", wantReason: "cannot be checked"},
		{name: "empty path", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{""}}, want: Block, wantCode: errs.InvalidArgument, wantRule: "scope"},
		{name: "NUL in path", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"a\x00b"}}, want: Block, wantCode: errs.InvalidArgument, wantRule: "scope"},
		{name: "scope check outside", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"/etc/passwd"}, ScopeCheck: scopeUnder}, want: Block, wantCode: errs.PathOutsideRoot, wantRule: "scope", wantReason: "escapes the repository root"},
		{name: "scope check other code", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{".git/config"}, ScopeCheck: scopeUnder}, want: Block, wantCode: errs.PathNotAllowed, wantRule: "scope"},
		{name: "scope check secret code", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"link-to-secret"}, ScopeCheck: scopeUnder}, want: Block, wantCode: errs.SecretPathDenied, wantRule: "secret-path"},
		{name: "scope check uncoded error", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"plain-error"}, ScopeCheck: scopeUnder}, want: Block, wantCode: errs.Internal, wantRule: "scope", wantReason: "disk on fire"},
		{name: "scope check panics", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"a"}, ScopeCheck: func(string) error { panic("boom") }}, want: Block, wantCode: errs.Internal, wantRule: "mediator", wantReason: "mediator error: boom", wantRisk: 100},
		{name: "scope beats route reject", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"rm", "-rf", "x"}, Paths: []string{"../x"}}, want: Block, wantCode: errs.PathOutsideRoot, wantRule: "scope"},

		// block: route
		{name: "destructive command", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"rm", "-rf", "/"}}, want: Block, wantCode: errs.RouteRejected, wantRule: "route.reject", wantReason: "route rejected: destructive command rejected", wantRisk: 100},
		{name: "remote command", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"curl", "-d", "x", "http://h"}}, want: Block, wantCode: errs.RouteRejected, wantRule: "route.reject", wantRisk: 90},
		{name: "git push goes to git_push", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"git", "push"}}, want: Escalate, wantCode: errs.RouteDurableRequired, wantRule: "route.durable", wantReason: "use git_push", wantRisk: 90},
		{name: "unknown tool", in: Input{Tool: "format_disk"}, want: Block, wantCode: errs.RouteRejected, wantRule: "route.reject", wantReason: "unknown operation", wantRisk: 45},
		{name: "empty argv", in: Input{Tool: "run_command", Kind: route.Command}, want: Block, wantCode: errs.RouteRejected, wantRule: "route.reject"},
		{name: "caller route reject", in: Input{Tool: "read_file", Kind: route.Readonly, Route: rejectRoute}, want: Block, wantCode: errs.RouteRejected, wantReason: "caller says no"},
		{name: "route reject beats approval", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"git", "push", "--mirror"}, Policy: pol, ApprovalOK: true}, want: Block, wantCode: errs.RouteRejected, wantRule: "route.reject"},
		{name: "unknown route mode", in: Input{Tool: "read_file", Kind: route.Readonly, Route: badRoute}, want: Block, wantCode: errs.Internal, wantRule: "mediator", wantReason: "unknown mode"},

		// block: policy
		{name: "policy deny", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"make", "--force"}, Policy: pol}, want: Block, wantCode: errs.PolicyDenied, wantRule: "no-force", wantReason: `policy rule "no-force" denies this: force rewrites history`},
		{name: "policy deny beats escalate", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"make", "--force"}, Policy: pol}, want: Block, wantCode: errs.PolicyDenied, wantRule: "no-force"},
		{name: "policy deny beats approval", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"migrations/001.sql"}, Policy: pol, ApprovalOK: true}, want: Block, wantCode: errs.PolicyDenied, wantRule: "no-migrations"},
		{name: "policy deny over ask on other path", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"go.sum", "migrations/1.sql"}, Policy: pol}, want: Block, wantCode: errs.PolicyDenied, wantRule: "no-migrations"},

		// block: loop
		{name: "loop", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"a.go"}, Loop: loopYes}, want: Block, wantCode: errs.LoopDetected, wantRule: "loop", wantReason: "nothing changed since receipt rcpt_1"},
		{name: "loop beats escalate", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"go", "test", "./..."}, Loop: loopYes}, want: Block, wantCode: errs.LoopDetected, wantRule: "loop"},
		{name: "loop beats approval", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"x.lock"}, Policy: pol, Loop: loopYes, ApprovalOK: true}, want: Block, wantCode: errs.LoopDetected, wantRule: "loop"},
		{name: "loop beats policy ask", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"x.lock"}, Policy: pol, Loop: loopYes}, want: Block, wantCode: errs.LoopDetected},
		{name: "policy deny beats loop", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"make", "--force"}, Policy: pol, Loop: loopYes}, want: Block, wantCode: errs.PolicyDenied},

		// escalate
		{name: "writing command", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"touch", "x"}}, want: Escalate, wantCode: errs.RouteDurableRequired, wantRule: "route.durable", wantReason: "use job_start", wantRisk: 45},
		{name: "test command", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"go", "test", "./..."}}, want: Escalate, wantCode: errs.RouteDurableRequired, wantRule: "route.durable", wantReason: "use run_check"},
		{name: "long readonly command", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"git", "log"}, TimeoutMs: 60_000}, want: Escalate, wantCode: errs.RouteDurableRequired, wantRule: "route.durable", wantReason: "above the Fast Path maximum"},
		{name: "unknown command", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"./deploy.sh"}}, want: Escalate, wantCode: errs.RouteDurableRequired, wantRisk: 60},
		{name: "escalate beats policy ask", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"git", "add", "go.sum"}, Paths: []string{"go.sum"}, Policy: pol}, want: Escalate, wantCode: errs.RouteDurableRequired},
		{name: "escalate beats risk ask", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"./x.sh"}, History: hot}, want: Escalate, wantCode: errs.RouteDurableRequired, wantRisk: 80},
		{name: "escalate despite approval", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"make"}, Policy: pol, ApprovalOK: true}, want: Escalate, wantCode: errs.RouteDurableRequired},

		// ask
		{name: "policy ask", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"web/yarn.lock"}, Policy: pol}, want: Ask, wantCode: errs.ApprovalRequired, wantRule: "lockfiles", wantReason: `policy rule "lockfiles" requires approval: dependency changes need a human`, wantRisk: 55},
		{name: "policy ask on git_stage", in: Input{Tool: "git_stage", Kind: route.IndexMutation, Paths: []string{"go.sum"}, Policy: pol}, want: Ask, wantCode: errs.ApprovalRequired, wantRule: "lockfiles"},
		{name: "policy ask job_start", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./deploy.sh", "prod"}, Policy: pol}, want: Ask, wantCode: errs.ApprovalRequired, wantRule: "deploy"},
		{name: "risk ask", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./build.sh"}, History: hot}, want: Ask, wantCode: errs.ApprovalRequired, wantRule: "risk", wantReason: "risk 80 is at or above 80", wantRisk: 80},
		{name: "risk ask from sensitive paths", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./build.sh"}, Paths: []string{"Dockerfile", ".github/workflows/ci.yml"}}, want: Ask, wantCode: errs.ApprovalRequired, wantRule: "risk", wantReason: "container path 10", wantRisk: 80},
		{name: "policy ask wins over risk ask", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./deploy.sh"}, Policy: pol, History: hot}, want: Ask, wantRule: "deploy", wantCode: errs.ApprovalRequired},

		// an operation that runs its durable path itself (run_check)
		{name: "runs durable: allowed on a durable route", in: Input{Tool: "run_check", Kind: route.Check, Argv: []string{"go", "test", "./..."}, RunsDurable: true}, want: Allow},
		{name: "runs durable: policy ask still asks", in: Input{Tool: "run_check", Kind: route.Check, Argv: []string{"go", "test", "./..."}, RunsDurable: true, Policy: mustPolicy(t, "version: 1\nrules:\n  - id: ask-checks\n    tools: [run_check]\n    decision: ask\n")}, want: Ask, wantCode: errs.ApprovalRequired, wantRule: "ask-checks"},
		{name: "runs durable: policy deny still denies", in: Input{Tool: "run_check", Kind: route.Check, Argv: []string{"make", "--force"}, RunsDurable: true, Policy: mustPolicy(t, "version: 1\nrules:\n  - id: no-force\n    tools: [run_check]\n    argv_pattern: force\n    decision: deny\n")}, want: Block, wantCode: errs.PolicyDenied},
		{name: "runs durable: risk still asks", in: Input{Tool: "run_check", Kind: route.Check, Argv: []string{"./x.sh"}, RunsDurable: true, History: hot, Paths: []string{"Dockerfile", ".github/workflows/ci.yml"}}, want: Ask, wantCode: errs.ApprovalRequired, wantRule: "risk"},
		{name: "runs durable: a rejected route still blocks", in: Input{Tool: "run_check", Kind: route.Check, Argv: []string{"rm", "-rf", "/"}, RunsDurable: true}, want: Block, wantCode: errs.RouteRejected},

		// confinement and network
		{name: "shell job unconfined is rejected", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"sh", "-c", "trap '' TERM; sleep 1"}}, want: Block, wantCode: errs.RouteRejected},
		{name: "shell job confined is accepted", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"sh", "-c", "trap '' TERM; sleep 1"}, Confined: true}, want: Allow},
		{name: "writing shell run_command confined escalates", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"sh", "-c", "echo hi > f"}, Confined: true}, want: Escalate, wantCode: errs.RouteDurableRequired},
		{name: "destructive job confined is still rejected", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"rm", "-rf", "/"}, Confined: true}, want: Block, wantCode: errs.RouteRejected},
		{name: "remote job confined is still rejected", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"git", "-c", "alias.p=push", "p", "origin", "main"}, Confined: true}, want: Block, wantCode: errs.RouteRejected},
		{name: "git push job goes to git_push", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"git", "push", "origin", "main"}, Confined: true}, want: Escalate, wantCode: errs.RouteDurableRequired, wantReason: "use git_push"},
		{name: "network asks", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"make"}, Network: true}, want: Ask, wantCode: errs.ApprovalRequired, wantRule: RuleNetwork},
		{name: "network approved", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"make"}, Network: true, ApprovalOK: true}, want: Allow, wantRule: "approval", wantReason: "network access needs one"},
		{name: "network allowed by a rule", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./install.sh"}, Network: true, Policy: pol}, want: Allow, wantRule: "trusted-installer"},
	}
	if len(tests) < 45 {
		t.Fatalf("%d cases, want at least 45", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.in)
			if d.Outcome != tt.want || d.Code != tt.wantCode {
				t.Fatalf("Decide = %s %s (rule %q: %s), want %s %s", d.Outcome, d.Code, d.RuleID, d.Reason, tt.want, tt.wantCode)
			}
			if tt.wantRule != "" && d.RuleID != tt.wantRule {
				t.Errorf("RuleID = %q, want %q (reason %s)", d.RuleID, tt.wantRule, d.Reason)
			}
			if tt.wantReason != "" && !strings.Contains(d.Reason, tt.wantReason) {
				t.Errorf("Reason = %q, want it to contain %q", d.Reason, tt.wantReason)
			}
			if d.Reason == "" {
				t.Error("Reason is empty, want it to name what decided")
			}
			if tt.wantRisk != 0 && d.Risk != tt.wantRisk {
				t.Errorf("Risk = %d, want %d", d.Risk, tt.wantRisk)
			}
			if d.Risk < 0 || d.Risk > 100 {
				t.Errorf("Risk = %d, want 0..100", d.Risk)
			}
			if d.Outcome == Allow && d.Code != "" {
				t.Errorf("allow with code %s, want none", d.Code)
			}
			if d.Outcome != Allow && d.Code == "" {
				t.Errorf("%s without a code", d.Outcome)
			}
			if d.Tier != d.Route.Tier {
				t.Errorf("Tier = %q, want the route's %q", d.Tier, d.Route.Tier)
			}
			if d.Route.Mode == "" && tt.in.Route == nil && d.RuleID != RuleMediator {
				t.Errorf("Route not filled in: %+v", d.Route)
			}
		})
	}
}

func TestDecideUsesGivenRoute(t *testing.T) {
	r := route.Decision{Mode: route.Fast, Reasons: []string{"given"}, Tier: route.BoundedWork, CommandClass: "readonly"}
	d := Decide(Input{Tool: "run_command", Kind: route.Command, Argv: []string{"rm", "-rf", "/"}, Route: &r})
	if d.Outcome != Allow || d.Tier != route.BoundedWork || d.Route.Reasons[0] != "given" {
		t.Errorf("Decide with a given route = %+v, want allow with the given route", d)
	}
}

func TestDecisionErr(t *testing.T) {
	if err := Decide(Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"a"}}).Err(); err != nil {
		t.Errorf("allow Err() = %v, want nil", err)
	}
	err := Decide(Input{Tool: "run_command", Kind: route.Command, Argv: []string{"go", "build"}}).Err()
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.RouteDurableRequired || e.Details["suggested_operation"] != "job_start" || e.Details["rule_id"] != RuleRouteDurable {
		t.Errorf("escalate Err() = %#v, want ROUTE_DURABLE_REQUIRED with suggested_operation job_start", err)
	}
	if err := (Decision{Outcome: Block, Reason: "x"}).Err(); errs.CodeOf(err) != errs.Internal {
		t.Errorf("codeless block Err() code = %s, want %s", errs.CodeOf(err), errs.Internal)
	}
}

func TestDecisionJSON(t *testing.T) {
	b, err := json.Marshal(Decide(Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{".env"}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"outcome":"block"`, `"rule_id":"secret-path"`, `"code":"SECRET_PATH_DENIED"`, `"tier":"direct"`, `"route":{"mode":"fast"`, `"risk":5`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s, want it to contain %s", b, want)
		}
	}
}

func TestRisk(t *testing.T) {
	cmd := func(class string, mut bool) route.Decision {
		return route.Decision{Mode: route.Durable, CommandClass: class, Mutation: mut}
	}
	tests := []struct {
		name string
		in   Input
		r    route.Decision
		want int
	}{
		{"readonly", Input{}, cmd("readonly", false), 5},
		{"workspace_write", Input{}, cmd("workspace_write", false), 30},
		{"unknown", Input{}, cmd("unknown", false), 45},
		{"shell", Input{}, cmd("shell", false), 60},
		{"remote", Input{}, cmd("remote", false), 75},
		{"destructive", Input{}, cmd("destructive", false), 95},
		{"invalid class counts as unknown", Input{}, cmd("weird", false), 45},
		{"mutation", Input{}, cmd("workspace_write", true), 45},
		{"writes declared", Input{Writes: true}, cmd("readonly", false), 20},
		{"readonly op", Input{}, route.Decision{Mode: route.Fast}, 5},
		{"mutating op", Input{}, route.Decision{Mode: route.Fast, Mutation: true}, 45},
		{"rejected op", Input{}, route.Decision{Mode: route.Reject}, 45},
		{"lockfile", Input{Paths: []string{"a/Cargo.lock"}}, cmd("readonly", false), 15},
		{"two lockfiles count once", Input{Paths: []string{"go.sum", "yarn.lock"}}, cmd("readonly", false), 15},
		{"all four kinds", Input{Paths: []string{"go.sum", "db/migrations/1.sql", ".github/workflows/ci.yml", "Dockerfile"}}, cmd("readonly", false), 45},
		{"plain paths", Input{Paths: []string{"src/a.go", "README.md"}}, cmd("readonly", false), 5},
		{"one refusal of this command", Input{History: History{Command: 1}}, cmd("readonly", false), 15},
		{"one refusal of the program", Input{History: History{Program: 1}}, cmd("readonly", false), 10},
		{"a refusal ten minutes old", Input{History: History{Command: 0.5}}, cmd("readonly", false), 10},
		{"a faded refusal rounds away", Input{History: History{Command: 0.04}}, cmd("readonly", false), 5},
		{"both", Input{History: History{Command: 1, Program: 1}}, cmd("readonly", false), 20},
		{"history capped", Input{History: History{Command: 10, Program: 10}}, cmd("readonly", false), 25},
		{"history huge", Input{History: History{Command: 1e300, Program: math.Inf(1)}}, cmd("readonly", false), 25},
		{"history negative", Input{History: History{Command: -5, Program: -9}}, cmd("readonly", false), 5},
		{"history NaN", Input{History: History{Command: math.NaN(), Program: math.NaN()}}, cmd("readonly", false), 5},
		{"clamped", Input{Writes: true, Paths: []string{"go.sum", "migrations/1.sql", "Jenkinsfile", "Dockerfile"}, History: History{Command: 9}}, cmd("destructive", true), 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Risk(tt.in, tt.r); got != tt.want {
				t.Errorf("Risk = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSensitiveKind(t *testing.T) {
	tests := []struct {
		path, want string
	}{
		{"yarn.lock", KindLockfile},
		{"web/package-lock.json", KindLockfile},
		{"./go.sum", KindLockfile},
		{"Cargo.LOCK", KindLockfile},
		{"pnpm-lock.yaml", KindLockfile},
		{"lock", ""},
		{"migrations/001_init.sql", KindMigration},
		{"db/migrate/2024_add.rb", KindMigration},
		{"app/Migrations/x.php", KindMigration},
		{"migrations", ""},
		{"src/migration.go", ""},
		{".github/workflows/ci.yml", KindCI},
		{"sub/.github/workflows/ci.yml", KindCI},
		{".github/CODEOWNERS", ""},
		{".gitlab-ci.yml", KindCI},
		{"Jenkinsfile", KindCI},
		{".circleci/config.yml", KindCI},
		{"Dockerfile", KindContainer},
		{"build/Dockerfile.dev", KindContainer},
		{"api.dockerfile", KindContainer},
		{"Containerfile", KindContainer},
		{"docker-compose.override.yml", KindContainer},
		{"compose.yaml", KindContainer},
		{"dockerfiles.md", ""},
		{"src/main.go", ""},
		{"", ""},
		{"dir/", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := SensitiveKind(tt.path); got != tt.want {
				t.Errorf("SensitiveKind(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

// TestDecideNeverPanics feeds odd inputs; Decide must answer, never panic.
func TestDecideNeverPanics(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	inputs := []Input{
		{},
		{Tool: "run_command", Kind: route.Command, Argv: []string{""}},
		{Tool: "run_command", Kind: route.Command, Argv: []string{"\x00"}},
		{Tool: "batch", Kind: route.Batch},
		{Tool: "read_file", Kind: route.Readonly, Paths: []string{"/", ".", "..", "a//b"}, Policy: pol},
		{Tool: "run_check", Kind: route.Check, Argv: []string{"go", "test"}, TimeoutMs: -1},
		{Tool: "job_start", Kind: route.Job, Argv: []string{"sh", "-c", "echo $(rm -rf /)"}, Policy: pol},
		{Tool: "read_file", Kind: route.Readonly, Route: &route.Decision{}},
		{Tool: "read_file", Kind: route.Readonly, Loop: &loop.Verdict{Loop: true}},
		{Tool: "read_file", Kind: route.Readonly, ScopeCheck: func(string) error { panic(fmt.Errorf("wrapped %w", errs.E(errs.NotFound))) }, Paths: []string{"x"}},
	}
	for i, in := range inputs {
		d := Decide(in)
		if d.Outcome == "" || d.Reason == "" {
			t.Errorf("input %d: Decide = %+v, want an outcome and a reason", i, d)
		}
	}
}

func benchDenylist(b *testing.B) *pathsafe.Denylist {
	d, err := pathsafe.NewDenylist(pathsafe.DefaultSecretPatterns())
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func BenchmarkDecideReadOnly(b *testing.B) {
	in := Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"harness/mediate/mediate.go"}, Policy: policy.Default(), Deny: benchDenylist(b)}
	b.ReportAllocs()
	for b.Loop() {
		if d := Decide(in); d.Outcome != Allow {
			b.Fatalf("Decide = %+v", d)
		}
	}
}

func BenchmarkDecideCommandWithPolicy(b *testing.B) {
	var src strings.Builder
	src.WriteString("version: 1\nrules:\n")
	for i := 0; i < 20; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&src, "  - {id: r%d, tools: [run_command, job_start], argv_prefix: [tool%d, sub], decision: deny}\n", i, i)
		case 1:
			fmt.Fprintf(&src, "  - {id: r%d, argv_pattern: '--flag%d\\b', decision: ask}\n", i, i)
		case 2:
			fmt.Fprintf(&src, "  - {id: r%d, paths: ['**/*.ext%d', 'dir%d/**'], decision: ask}\n", i, i, i)
		default:
			fmt.Fprintf(&src, "  - {id: r%d, tools: [git_commit], decision: allow}\n", i)
		}
	}
	pol := mustPolicy(b, src.String())
	in := Input{Tool: "run_command", Kind: route.Command, Argv: []string{"git", "log", "--oneline", "-20", "--", "harness/mediate"},
		Paths: []string{"harness/mediate"}, TimeoutMs: 5000, Policy: pol, Deny: benchDenylist(b),
		Loop: &loop.Verdict{Count: 1}, History: History{Program: 1}}
	b.ReportAllocs()
	for b.Loop() {
		if d := Decide(in); d.Outcome != Allow {
			b.Fatalf("Decide = %+v", d)
		}
	}
}

// An allowed write carries the verified stages it needs: its own argument
// first, then the matching require_verified rules, one per stage; a
// block carries none, and require_verified rules never decide.
func TestDecideRequireVerified(t *testing.T) {
	pol := mustPolicy(t, `version: 1
rules:
  - id: tests-before-commit
    tools: [git_commit, patch_proposal_integrate]
    require_verified: tests
  - id: review-migrations
    tools: [git_commit, apply_patch]
    paths: ["migrations/**"]
    require_verified: review
  - id: also-tests
    tools: [git_commit]
    require_verified: tests
  - id: no-lock
    paths: ["**/*.lock"]
    decision: deny
`)
	req := func(kv ...string) []policy.Requirement {
		var out []policy.Requirement
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, policy.Requirement{RuleID: kv[i], Stage: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name    string
		in      Input
		outcome Outcome
		want    []policy.Requirement
	}{
		{"nothing required", Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"src/a.go"}, Writes: true}, Allow, nil},
		{"argument only", Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"src/a.go"}, Writes: true, RequireVerified: []string{"lint"}}, Allow,
			req(RuleRequireVerified, "lint")},
		{"policy only", Input{Tool: "git_commit", Kind: route.Mutation, Writes: true}, Allow, req("tests-before-commit", "tests")},
		{"argument first, one per stage", Input{Tool: "git_commit", Kind: route.Mutation, Paths: []string{"migrations/1.sql"}, Writes: true, RequireVerified: []string{"tests"}}, Allow,
			req(RuleRequireVerified, "tests", "review-migrations", "review")},
		{"integrate", Input{Tool: "patch_proposal_integrate", Kind: route.Mutation, Paths: []string{"a.go"}, Writes: true}, Allow, req("tests-before-commit", "tests")},
		{"a block carries none", Input{Tool: "git_commit", Kind: route.Mutation, Paths: []string{"x.lock"}, Writes: true, RequireVerified: []string{"tests"}}, Block, nil},
		{"a read needs nothing", Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"migrations/1.sql"}}, Allow, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(Input{Tool: tt.in.Tool, Kind: tt.in.Kind, Paths: tt.in.Paths, Writes: tt.in.Writes, RequireVerified: tt.in.RequireVerified, Policy: pol})
			if d.Outcome != tt.outcome {
				t.Fatalf("outcome %s (%s), want %s", d.Outcome, d.Reason, tt.outcome)
			}
			if fmt.Sprint(d.RequireVerified) != fmt.Sprint(tt.want) {
				t.Errorf("RequireVerified = %+v, want %+v", d.RequireVerified, tt.want)
			}
		})
	}
}
