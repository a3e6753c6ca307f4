package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"regexp"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// Decision is what a rule says about the operations it matches.
type Decision string

// The decisions, from the most permissive to the strictest.
const (
	Allow Decision = "allow"
	Ask   Decision = "ask"
	Deny  Decision = "deny"
)

// Valid reports whether d is allow, ask or deny.
func (d Decision) Valid() bool { return d == Allow || d == Ask || d == Deny }

// Rank orders decisions by strictness: allow 0, ask 1, deny 2. Invalid
// decisions rank as deny (fail closed).
func (d Decision) Rank() int {
	switch d {
	case Allow:
		return 0
	case Ask:
		return 1
	default:
		return 2
	}
}

// Rule is one rule of the policy file.
type Rule struct {
	ID            string   `json:"id"`
	Justification string   `json:"justification"`
	Tools         []string `json:"tools"`
	ArgvPrefix    []string `json:"argv_prefix"`
	ArgvPattern   string   `json:"argv_pattern"`
	Paths         []string `json:"paths"`
	Decision      Decision `json:"decision"`
	// RequireVerified names a stage of the caller's run that must be
	// verified (run_verify) for the matched operations to run; such a rule
	// has no decision and never takes part in Evaluate (see Requirements).
	RequireVerified string   `json:"require_verified,omitempty"`
	Examples        Examples `json:"examples"`
}

// Examples are actions a rule must match (Match) and must not match
// (NotMatch). They are checked when the policy is parsed.
type Examples struct {
	Match    []Action `json:"match"`
	NotMatch []Action `json:"not_match"`
}

// Action is an operation as the policy sees it.
type Action struct {
	Tool  string   `yaml:"tool" json:"tool"`
	Argv  []string `yaml:"argv" json:"argv,omitempty"`
	Paths []string `yaml:"paths" json:"paths,omitempty"`
}

// String formats a as "{tool [argv words]}", followed by " paths [...]"
// inside the braces when it has paths.
func (a Action) String() string {
	var b strings.Builder
	b.WriteByte('{')
	b.WriteString(a.Tool)
	b.WriteString(" [")
	b.WriteString(strings.Join(a.Argv, " "))
	b.WriteByte(']')
	if len(a.Paths) > 0 {
		b.WriteString(" paths [")
		b.WriteString(strings.Join(a.Paths, " "))
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String()
}

// Match is the rule that decided an action.
type Match struct {
	RuleID        string   `json:"rule_id"`
	Decision      Decision `json:"decision"`
	Justification string   `json:"justification,omitempty"`
}

// DefaultSource is the Source of the default (empty) policy.
const DefaultSource = "default"

// DefaultDigest is the Digest of the empty policy: the SHA-256 of
// {"version":1,"rules":[]}.
const DefaultDigest = "sha256:6be6bac38f2d35217ca3cd98e36322f9e8fb6638564f5a87ff660589f6302103"

// Policy is a parsed, validated policy. It is immutable and safe for
// concurrent use. A nil *Policy behaves like [Default].
type Policy struct {
	source string
	digest string
	rules  []compiled
	// maxRetries is the policy's max_retries: the retries of a failed call
	// a run allows per stage (nil = the runs' default).
	maxRetries *int
	// roots are the allowed areas of the policy (absolute, clean).
	roots []string
	// exceptions take named paths of one repository off the denylist.
	exceptions []SecretException
}

// SecretException is a person's exception to the secret denylist: paths
// (doublestar globs relative to the work tree) of one repository (its
// work tree's absolute path) that are not secrets, e.g. test fixture keys.
type SecretException struct {
	Repo          string   `json:"repo"`
	Paths         []string `json:"paths"`
	Justification string   `json:"justification,omitempty"`
}

// Roots returns the policy's allowed areas: directories inside which
// agents may register repositories and targets without asking a person.
func (p *Policy) Roots() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.roots...)
}

// SecretExceptions returns the policy's exceptions to the secret denylist.
func (p *Policy) SecretExceptions() []SecretException {
	if p == nil {
		return nil
	}
	return append([]SecretException(nil), p.exceptions...)
}

// MaxRetriesLimit bounds max_retries.
const MaxRetriesLimit = 100

// MaxRetries returns the policy's max_retries, nil when it sets none.
func (p *Policy) MaxRetries() *int {
	if p == nil || p.maxRetries == nil {
		return nil
	}
	n := *p.maxRetries
	return &n
}

type compiled struct {
	rule  Rule
	re    *regexp.Regexp // nil without argv_pattern
	tools []string       // nil: every tool
	globs []glob         // compiled Paths
}

var defaultPolicy = &Policy{source: DefaultSource, digest: DefaultDigest}

// Default returns the empty policy: no rules, so Evaluate never matches.
func Default() *Policy { return defaultPolicy }

// Source returns the name the policy was parsed from (a file path for
// [Load]), or [DefaultSource] for the default policy.
func (p *Policy) Source() string {
	if p == nil {
		return DefaultSource
	}
	return p.source
}

// Digest returns "sha256:<hex>" of the canonical form of the policy (see the
// package documentation).
func (p *Policy) Digest() string {
	if p == nil {
		return DefaultDigest
	}
	return p.digest
}

// Len returns the number of rules.
func (p *Policy) Len() int {
	if p == nil {
		return 0
	}
	return len(p.rules)
}

// Rules returns a deep copy of the rules in file order.
func (p *Policy) Rules() []Rule {
	if p == nil {
		return nil
	}
	out := make([]Rule, len(p.rules))
	for i := range p.rules {
		out[i] = cloneRule(p.rules[i].rule)
	}
	return out
}

func cloneRule(r Rule) Rule {
	r.Tools = cloneStrings(r.Tools)
	r.ArgvPrefix = cloneStrings(r.ArgvPrefix)
	r.Paths = cloneStrings(r.Paths)
	r.Examples.Match = cloneActions(r.Examples.Match)
	r.Examples.NotMatch = cloneActions(r.Examples.NotMatch)
	return r
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func cloneActions(as []Action) []Action {
	if as == nil {
		return nil
	}
	out := make([]Action, len(as))
	for i, a := range as {
		out[i] = Action{Tool: a.Tool, Argv: cloneStrings(a.Argv), Paths: cloneStrings(a.Paths)}
	}
	return out
}

// Evaluate returns the strictest rule matching a (deny > ask > allow; the
// first in file order among equals), or false if no rule matches.
func (p *Policy) Evaluate(a Action) (Match, bool) {
	if p == nil || len(p.rules) == 0 {
		return Match{}, false
	}
	in := newSubject(&a)
	best := -1
	for i := range p.rules {
		c := &p.rules[i]
		if c.rule.RequireVerified != "" {
			continue // an obligation, not a decision: see Requirements
		}
		if best >= 0 && c.rule.Decision.Rank() <= p.rules[best].rule.Decision.Rank() {
			continue // cannot beat the current match
		}
		if !c.matches(in) {
			continue
		}
		best = i
		if c.rule.Decision == Deny {
			break // nothing is stricter, and earlier wins ties
		}
	}
	if best < 0 {
		return Match{}, false
	}
	r := &p.rules[best].rule
	return Match{RuleID: r.ID, Decision: r.Decision, Justification: r.Justification}, true
}

// Requirement is a require_verified rule that matched an action: the
// stage of the caller's run that must be verified.
type Requirement struct {
	RuleID string `json:"rule_id"`
	Stage  string `json:"stage"`
}

// Requirements returns every require_verified rule matching a, in file
// order (all of them apply, unlike decisions, where the strictest wins).
func (p *Policy) Requirements(a Action) []Requirement {
	if p == nil || len(p.rules) == 0 {
		return nil
	}
	var in *subject
	var out []Requirement
	for i := range p.rules {
		c := &p.rules[i]
		if c.rule.RequireVerified == "" {
			continue
		}
		if in == nil {
			in = newSubject(&a)
		}
		if c.matches(in) {
			out = append(out, Requirement{RuleID: c.rule.ID, Stage: c.rule.RequireVerified})
		}
	}
	return out
}

// subject is an Action with lazily computed derived forms, shared by all rules
// of one evaluation.
type subject struct {
	a *Action

	joined, baseJoined string // argv joined; the same with argv[0] by base name ("" if argv[0] has no slash)
	haveJoined         bool

	paths      []string
	havePaths  bool
	pathsClean bool
}

func newSubject(a *Action) *subject { return &subject{a: a} }

func (s *subject) joins() (string, string) {
	if !s.haveJoined {
		s.haveJoined = true
		s.joined = strings.Join(s.a.Argv, " ")
		if len(s.a.Argv) > 0 && strings.IndexByte(s.a.Argv[0], '/') >= 0 {
			s.baseJoined = path.Base(s.a.Argv[0]) + s.joined[len(s.a.Argv[0]):]
		}
	}
	return s.joined, s.baseJoined
}

func (s *subject) cleanPaths() []string {
	if !s.havePaths {
		s.havePaths = true
		s.paths = s.a.Paths
		for i, p := range s.a.Paths {
			if c := cleanPath(p); c != p {
				if !s.pathsClean {
					s.paths = append([]string(nil), s.a.Paths...)
					s.pathsClean = true
				}
				s.paths[i] = c
			}
		}
	}
	return s.paths
}

// cleanPath normalises an action path for glob matching: slash-cleaned and
// without a leading "./".
func cleanPath(p string) string {
	if p == "" {
		return p
	}
	c := path.Clean(p)
	if c == "." {
		return c
	}
	return strings.TrimPrefix(c, "./")
}

func (c *compiled) matches(s *subject) bool {
	a := s.a
	if c.tools != nil && !containsString(c.tools, a.Tool) {
		return false
	}
	if len(c.rule.ArgvPrefix) > 0 && !hasArgvPrefix(a.Argv, c.rule.ArgvPrefix) {
		return false
	}
	if len(c.globs) > 0 {
		if len(a.Paths) == 0 || !anyPathMatches(c.globs, s.cleanPaths()) {
			return false
		}
	}
	if c.re != nil {
		if len(a.Argv) == 0 {
			return false
		}
		j, bj := s.joins()
		if !c.re.MatchString(j) && (bj == "" || !c.re.MatchString(bj)) {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hasArgvPrefix reports whether argv starts with prefix; the first word also
// matches argv[0]'s base name when the prefix word has no slash.
func hasArgvPrefix(argv, prefix []string) bool {
	if len(argv) < len(prefix) {
		return false
	}
	for i, w := range prefix {
		if argv[i] == w {
			continue
		}
		if i == 0 && strings.IndexByte(w, '/') < 0 && strings.IndexByte(argv[0], '/') >= 0 && path.Base(argv[0]) == w {
			continue
		}
		return false
	}
	return true
}

func anyPathMatches(globs []glob, paths []string) bool {
	for _, p := range paths {
		for i := range globs {
			if globs[i].match(p) {
				return true
			}
		}
	}
	return false
}

// canonical is the form the digest is computed over.
type canonical struct {
	Version          int               `json:"version"`
	Rules            []Rule            `json:"rules"`
	MaxRetries       *int              `json:"max_retries,omitempty"`
	Roots            []string          `json:"roots,omitempty"`
	SecretExceptions []SecretException `json:"secret_exceptions,omitempty"`
}

func digestOf(rules []Rule, maxRetries *int, roots []string, exceptions []SecretException) (string, error) {
	c := canonical{Version: 1, Rules: rules, MaxRetries: maxRetries, Roots: roots, SecretExceptions: exceptions}
	if c.Rules == nil {
		c.Rules = []Rule{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", errs.Wrap(errs.Internal, err, "encode the canonical policy: %v", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
