package mediate

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/loop"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/internal/route"
)

// Outcome is what the caller does with an operation.
type Outcome string

// The outcomes.
const (
	Allow    Outcome = "allow"    // run it
	Block    Outcome = "block"    // answer Code, never run it
	Ask      Outcome = "ask"      // answer APPROVAL_REQUIRED until a person approves exactly this input
	Escalate Outcome = "escalate" // answer ROUTE_DURABLE_REQUIRED: run it as a durable job (job_start)
)

// Built-in rule ids of decisions not made by a policy rule.
const (
	RuleScope        = "scope"
	RuleSecretPath   = "secret-path"
	RuleRouteReject  = "route.reject"
	RuleRouteDurable = "route.durable"
	RuleLoop         = "loop"
	RuleRisk         = "risk"
	RuleApproval     = "approval"
	RuleMediator     = "mediator"
	RuleNetwork      = "network"
	// RuleRemoteWrite asks a person to approve a remote write (npm
	// publish, gh pr merge, a deploy, a git push): always, whatever the
	// policy allows and whatever the risk.
	RuleRemoteWrite = "remote-write"
	// RuleGrant asks a person to grant agents a root (a repository or a
	// target) outside the allowed areas.
	RuleGrant = "grant"
	// RuleRequireVerified is the rule id of a verification the operation's
	// own require_verified argument asks for.
	RuleRequireVerified = "require_verified"
)

// Input is everything Decide looks at.
type Input struct {
	Tool string
	// Kind is the operation's route class (its descriptor's): the router
	// decides by it when Route is nil.
	Kind      route.Kind
	Argv      []string
	Paths     []string // paths the operation touches, relative to the root
	TimeoutMs int
	Writes    bool
	Route     *route.Decision    // nil = computed with route.Decide from the fields above
	Policy    *policy.Policy     // nil = policy.Default()
	Deny      *pathsafe.Denylist // secret paths (the root's own list, bound to it); nil = the pathsafe default list
	// ScopeCheck checks one path (like pathsafe.Root.Resolve); an error blocks
	// with that error's code. nil = a lexical check only.
	ScopeCheck func(path string) error
	Loop       *loop.Verdict // the detector's verdict, computed by the caller (nil = none)
	ApprovalOK bool          // the caller holds a valid approval for exactly this input
	History    History       // the caller's recent refusals of this operation, for the risk score
	// Confined says the Durable Path confines its commands (routing
	// accepts shell scripts there).
	Confined bool
	// Network says the operation asks for network access (a job or a
	// check): it needs a policy rule that allows it or a person's approval.
	Network bool
	// RunsDurable says the operation runs the durable path itself when the
	// route requires it (run_check): the route then does not escalate, and
	// the policy, network and risk checks decide as for any call.
	RunsDurable bool
	// RequireVerified are stages of the caller's run the operation itself
	// asks to have verified (git_commit's require_verified).
	RequireVerified []string
	// Grant, when set, says the operation grants agents a root outside
	// the allowed areas a person configured (which one, for the person):
	// only a person's approval of exactly this input lets it run.
	Grant string
}

// History is what the caller's own recent refusals say about this
// operation, for the risk score. The counts are refusals (blocks: scope,
// secret path, route rejection, policy deny, loop) of the same caller
// (its run, else its MCP session), each decayed with a half-life of
// HistoryHalfLife: a refusal counts 1 at once, 0.5 ten minutes later. A
// command that ran and exited non-zero is no refusal and is not counted.
type History struct {
	// Command counts refusals of exactly this command (see [Subject]).
	Command float64 `json:"command,omitempty"`
	// Program counts refusals of other commands of the same program and
	// subcommand (ProgramName, e.g. "go vet").
	Program     float64 `json:"program,omitempty"`
	ProgramName string  `json:"program_name,omitempty"`
}

// Decision is the mediator's answer.
type Decision struct {
	Outcome Outcome        `json:"outcome"`
	Reason  string         `json:"reason"`
	RuleID  string         `json:"rule_id,omitempty"` // the policy rule, or a built-in id (Rule* constants)
	Risk    int            `json:"risk"`              // 0-100
	Code    errs.Code      `json:"code,omitempty"`    // the error code to answer with when not allow
	Tier    route.Tier     `json:"tier"`
	Route   route.Decision `json:"route"`
	// RequireVerified are the stages of the caller's run that must be
	// verified for an allowed operation to run: its own require_verified
	// argument first (rule "require_verified"), then every matching
	// require_verified policy rule, one per stage. The operation enforces
	// them right after the gate, re-verifying each stage at that moment.
	RequireVerified []policy.Requirement `json:"require_verified,omitempty"`
}

// Err returns nil for allow and otherwise the coded error to answer with: the
// decision's code and reason, with the details "outcome", "rule_id" and
// "risk" (and "suggested_operation" for an escalation).
func (d Decision) Err() error {
	if d.Outcome == Allow {
		return nil
	}
	code := d.Code
	if code == "" {
		code = errs.Internal
	}
	e := errs.New(code, "%s", d.Reason).With("outcome", string(d.Outcome)).With("risk", d.Risk)
	if d.RuleID != "" {
		e = e.With("rule_id", d.RuleID)
	}
	if d.Outcome == Escalate && d.Route.SuggestedOperation != "" {
		e = e.With("suggested_operation", d.Route.SuggestedOperation)
	}
	return e
}

// Decide mediates one operation (the order is in the package documentation).
// It never panics: a panic becomes a block (fail closed).
func Decide(in Input) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = Decision{Outcome: Block, Reason: fmt.Sprintf("mediator error: %v", r), RuleID: RuleMediator,
				Risk: 100, Code: errs.Internal, Tier: d.Tier, Route: d.Route}
		}
	}()
	if in.Route != nil {
		d.Route = *in.Route
	} else {
		d.Route = route.Decide(route.Request{Tool: in.Tool, Kind: in.Kind, Argv: in.Argv, TimeoutMs: in.TimeoutMs, Writes: in.Writes, Confined: in.Confined})
	}
	d.Tier = d.Route.Tier
	parts := computeRisk(&in, &d.Route)
	d.Risk = parts.total()

	// 1, 2: scope and secrets, path by path.
	for i, p := range in.Paths {
		if ok, r := checkPath(&in, i, p); !ok {
			return r.into(d)
		}
	}

	// 3: route.
	var escalate *verdict
	switch d.Route.Mode {
	case route.Fast:
	case route.Reject:
		return block(RuleRouteReject, errs.RouteRejected, "route rejected: "+reasons(d.Route)).into(d)
	case route.Durable:
		op := d.Route.SuggestedOperation
		if op == "" {
			op = route.SuggestJobStart
		}
		// job_start is itself the durable path; run_check runs its own,
		// but never work whose effect a person must approve.
		if in.Tool != op && (!in.RunsDurable || d.Route.Effect != nil) {
			escalate = &verdict{outcome: Escalate, rule: RuleRouteDurable, code: errs.RouteDurableRequired,
				reason: "durable path required (use " + op + "): " + reasons(d.Route)}
		}
	default:
		return block(RuleMediator, errs.Internal, "mediator error: route decision has unknown mode "+strconv.Quote(string(d.Route.Mode))).into(d)
	}

	// 4: policy.
	pol := in.Policy
	if pol == nil {
		pol = policy.Default()
	}
	var ask *verdict
	var approvedRule, allowedBy string
	if m, ok := pol.Evaluate(policy.Action{Tool: in.Tool, Argv: in.Argv, Paths: in.Paths}); ok {
		switch m.Decision {
		case policy.Allow:
			allowedBy = m.RuleID
		case policy.Ask:
			if in.ApprovalOK {
				approvedRule = m.RuleID
			} else {
				ask = &verdict{outcome: Ask, rule: m.RuleID, code: errs.ApprovalRequired,
					reason: "policy rule " + strconv.Quote(m.RuleID) + " requires approval" + because(m.Justification)}
			}
		default: // deny, or anything unexpected: fail closed
			return block(m.RuleID, errs.PolicyDenied, "policy rule "+strconv.Quote(m.RuleID)+" denies this"+because(m.Justification)).into(d)
		}
	}

	// 5: loop.
	if in.Loop != nil && in.Loop.Loop {
		reason := "loop detected"
		if in.Loop.Reason != "" {
			reason += ": " + in.Loop.Reason
		}
		if in.Loop.Hint != "" {
			reason += " (" + in.Loop.Hint + ")"
		}
		return block(RuleLoop, errs.LoopDetected, reason).into(d)
	}

	if escalate != nil {
		return escalate.into(d)
	}
	if ask != nil {
		return ask.into(d)
	}
	// 5a: a remote write always asks a person, whatever a policy allow
	// rule or the risk says; the reason names the exact command and
	// where it writes.
	if e := d.Route.Effect; e != nil && (e.Kind == classify.RemoteWrite || e.Kind == classify.GitPush) {
		if !in.ApprovalOK {
			return verdict{outcome: Ask, rule: RuleRemoteWrite, code: errs.ApprovalRequired,
				reason: "a remote write always needs a person's approval: " + CommandLine(in.Argv) + " " + e.Describe()}.into(d)
		}
		if approvedRule == "" {
			approvedRule = RuleRemoteWrite
		}
	}

	// 5b: network access is never silent: a policy rule allows it or a
	// person approves it.
	if in.Network && allowedBy == "" {
		if !in.ApprovalOK {
			return verdict{outcome: Ask, rule: RuleNetwork, code: errs.ApprovalRequired,
				reason: "network access needs a policy rule that allows it or a person's approval"}.into(d)
		}
		if approvedRule == "" {
			approvedRule = RuleNetwork
		}
	}

	// 5c: a root outside the allowed areas is granted by a person, never
	// by a policy rule or the agent itself.
	if in.Grant != "" {
		if !in.ApprovalOK {
			return verdict{outcome: Ask, rule: RuleGrant, code: errs.ApprovalRequired, reason: in.Grant}.into(d)
		}
		if approvedRule == "" {
			approvedRule = RuleGrant
		}
	}

	// 6: risk. Read-only operations and version queries are exempt: only
	// a policy ask rule makes them ask.
	if d.Risk >= RiskAskThreshold && allowedBy == "" && parts.exempt == "" {
		if !in.ApprovalOK {
			return verdict{outcome: Ask, rule: RuleRisk, code: errs.ApprovalRequired,
				reason: "risk " + strconv.Itoa(d.Risk) + " is at or above " + strconv.Itoa(RiskAskThreshold) + " and needs approval: " + parts.String() + removes(in.Argv, d.Route.Effect)}.into(d)
		}
		if approvedRule == "" {
			approvedRule = RuleRisk
		}
	}

	// 7: allow, with the verified stages the operation needs.
	d.Outcome = Allow
	d.RequireVerified = requirements(in.RequireVerified, pol.Requirements(policy.Action{Tool: in.Tool, Argv: in.Argv, Paths: in.Paths}))
	switch {
	case approvedRule == RuleRisk:
		d.RuleID, d.Reason = RuleApproval, "allowed with a valid approval: risk "+strconv.Itoa(d.Risk)+" needs one"
	case approvedRule == RuleRemoteWrite:
		d.RuleID, d.Reason = RuleApproval, "allowed with a valid approval: a remote write needs one"
	case approvedRule == RuleNetwork:
		d.RuleID, d.Reason = RuleApproval, "allowed with a valid approval: network access needs one"
	case approvedRule == RuleGrant:
		d.RuleID, d.Reason = RuleApproval, "allowed with a valid approval: a person granted this root"
	case approvedRule != "":
		d.RuleID, d.Reason = RuleApproval, "allowed with a valid approval: policy rule "+strconv.Quote(approvedRule)+" asks for one"
	case allowedBy != "":
		d.RuleID, d.Reason = allowedBy, "allowed by policy rule "+strconv.Quote(allowedBy)
	default:
		d.Reason = "allowed: " + string(d.Route.Mode) + " route, no rule objects, risk " + strconv.Itoa(d.Risk)
	}
	return d
}

// requirements lists the operation's own stages, then the policy's, one
// requirement per stage (the first to name it).
func requirements(own []string, rules []policy.Requirement) []policy.Requirement {
	if len(own) == 0 && len(rules) == 0 {
		return nil
	}
	out := make([]policy.Requirement, 0, len(own)+len(rules))
	seen := make(map[string]bool, len(own)+len(rules))
	for _, s := range own {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, policy.Requirement{RuleID: RuleRequireVerified, Stage: s})
		}
	}
	for _, r := range rules {
		if !seen[r.Stage] {
			seen[r.Stage] = true
			out = append(out, r)
		}
	}
	return out
}

// verdict is a non-allow outcome before it is folded into a Decision.
type verdict struct {
	outcome Outcome
	rule    string
	code    errs.Code
	reason  string
}

func block(rule string, code errs.Code, reason string) verdict {
	return verdict{outcome: Block, rule: rule, code: code, reason: reason}
}

func (v verdict) into(d Decision) Decision {
	d.Outcome, d.RuleID, d.Code, d.Reason = v.outcome, v.rule, v.code, v.reason
	return d
}

func reasons(r route.Decision) string {
	if len(r.Reasons) == 0 {
		return "no reason given"
	}
	return strings.Join(r.Reasons, "; ")
}

func because(justification string) string {
	if justification == "" {
		return ""
	}
	return ": " + justification
}

// checkPath runs the scope and secret checks on the i-th path.
func checkPath(in *Input, i int, p string) (bool, verdict) {
	switch {
	case p == "":
		return false, block(RuleScope, errs.InvalidArgument, "path "+strconv.Itoa(i)+" is empty")
	case strings.IndexByte(p, 0) >= 0:
		return false, block(RuleScope, errs.InvalidArgument, "path "+strconv.Itoa(i)+" contains a NUL byte")
	}
	if in.ScopeCheck != nil {
		if err := in.ScopeCheck(p); err != nil {
			e := errs.From(err)
			code, rule := e.Code, RuleScope
			if code == "" {
				code = errs.Internal
			}
			if code == errs.SecretPathDenied {
				rule = RuleSecretPath
			}
			return false, block(rule, code, "path "+strconv.Quote(p)+" is not allowed: "+e.Message)
		}
	} else {
		if strings.HasPrefix(p, "/") {
			return false, block(RuleScope, errs.PathOutsideRoot, "absolute path "+strconv.Quote(p)+" cannot be checked without a scope check")
		}
		if strings.Contains(p, "..") && escapes(p) {
			return false, block(RuleScope, errs.PathOutsideRoot, "path "+strconv.Quote(p)+" escapes the repository root")
		}
	}
	if pat, ok := in.Deny.Match(p); ok {
		reason := "path " + strconv.Quote(p) + " matches the secret pattern " + strconv.Quote(pat)
		if fix := in.Deny.Fix(path.Clean(p)); fix != "" {
			reason += "; " + fix
		}
		return false, block(RuleSecretPath, errs.SecretPathDenied, reason)
	}
	return true, verdict{}
}

// escapes reports whether the relative path p leaves its root lexically.
func escapes(p string) bool {
	c := path.Clean(p)
	return c == ".." || strings.HasPrefix(c, "../")
}

// removes names, for the person asked, what destructive work removes.
func removes(argv []string, e *classify.Effect) string {
	if e == nil || e.Kind != classify.WorkspaceDelete {
		return ""
	}
	return "; " + CommandLine(argv) + " " + e.Describe() + " in the checkout"
}

// CommandLine writes argv as a person reads it: words with spaces, quotes
// or shell characters quoted, control characters escaped.
func CommandLine(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == "" || strings.ContainsFunc(a, func(r rune) bool {
			return r <= ' ' || r == 0x7f || strings.ContainsRune("\"'`$&|;<>(){}*?[]#~!", r) || r > 0x7e
		}) {
			a = strconv.Quote(a)
		}
		b.WriteString(a)
	}
	return b.String()
}
