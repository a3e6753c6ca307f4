package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"

	"github.com/harnessd/harnessd/contract/errs"
)

// Limits on a policy file. They are far above any hand-written policy and
// keep a hostile or corrupt file from costing much.
const (
	MaxBytes          = 1 << 20 // the largest policy file
	MaxRules          = 1000    // rules per policy
	MaxExamples       = 100     // match + not_match examples per rule
	MaxListLen        = 256     // entries of tools, argv_prefix, paths, an example's argv or paths
	MaxIDLen          = 128     // length of a rule id
	MaxPatternLen     = 4096    // length of argv_pattern
	MaxGlobLen        = 1024    // length of one paths glob
	MaxJustificationN = 4096    // length of a justification
	MaxStageLen       = 128     // length of a require_verified stage name
)

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)

// Option configures Parse and Load.
type Option func(*parser)

// Verified gives the vocabulary of require_verified: the operations a
// require_verified rule may name, the writes whose descriptor says a
// verified stage applies (harness/op.Spec.Verified). The policy package
// knows no operation; whoever loads a policy passes the registry's.
// Without it no rule may require verification.
func Verified(tools ...string) Option {
	return func(p *parser) { p.verified = tools }
}

// Load reads and parses the policy file at path (its Source is path). A
// missing file gives [Default], not an error; any other read error is
// returned, as are the errors of [Parse].
func Load(path string, opts ...Option) (*Policy, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "read policy %s: %v", path, err).With("source", path)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "read policy %s: %v", path, err).With("source", path)
	}
	return Parse(b, path, opts...)
}

// Parse parses and validates a policy; source names it in errors and in
// [Policy.Source]. All errors are errs.InvalidArgument with a message of the
// form "<source>:<line>: rule <id>: <problem>" and the details "source",
// "rule" (id, or "rules[i]" for a rule without one) and "line" where known.
// See the package documentation for what is checked.
func Parse(b []byte, source string, opts ...Option) (*Policy, error) {
	p := parser{source: source}
	for _, o := range opts {
		o(&p)
	}
	rules, maxRetries, err := p.parse(b)
	if err != nil {
		return nil, err
	}
	digest, err := digestOf(rulesOf(rules), maxRetries, p.roots, p.exceptions)
	if err != nil {
		return nil, err
	}
	return &Policy{source: source, digest: digest, rules: rules, maxRetries: maxRetries, roots: p.roots, exceptions: p.exceptions}, nil
}

func rulesOf(cs []compiled) []Rule {
	out := make([]Rule, len(cs))
	for i := range cs {
		out[i] = cs[i].rule
	}
	return out
}

type parser struct {
	maxRetries *int
	roots      []string
	exceptions []SecretException
	source     string
	label      string   // the rule being parsed: its id, or "rules[i]"; "" outside rules
	verified   []string // the operations require_verified may name (Verified)
}

// errorf builds the coded parse error. line 0 means unknown.
func (p *parser) errorf(line int, format string, args ...any) error {
	var b strings.Builder
	if p.source != "" {
		b.WriteString(p.source)
		if line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(line))
		}
		b.WriteString(": ")
	} else if line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(line))
		b.WriteString(": ")
	}
	if p.label != "" {
		b.WriteString("rule ")
		b.WriteString(p.label)
		b.WriteString(": ")
	}
	b.WriteString(fmt.Sprintf(format, args...))
	e := errs.New(errs.InvalidArgument, "%s", b.String())
	if p.source != "" {
		e = e.With("source", p.source)
	}
	if p.label != "" {
		e = e.With("rule", p.label)
	}
	if line > 0 {
		e = e.With("line", line)
	}
	return e
}

func (p *parser) parse(b []byte) ([]compiled, *int, error) {
	rules, err := p.parseRules(b)
	if err != nil {
		return nil, nil, err
	}
	return rules, p.maxRetries, nil
}

func (p *parser) parseRules(b []byte) ([]compiled, error) {
	if len(b) > MaxBytes {
		return nil, p.errorf(0, "policy is larger than %d bytes", MaxBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errorf(0, "policy is empty: it needs at least \"version: 1\"")
		}
		return nil, p.errorf(0, "invalid YAML: %s", yamlMessage(err))
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, p.errorf(0, "invalid YAML: %s", yamlMessage(err))
	default:
		return nil, p.errorf(extra.Line, "policy must be a single YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) != 1 {
			return nil, p.errorf(root.Line, "policy is empty: it needs at least \"version: 1\"")
		}
		root = root.Content[0]
	}
	fields, err := p.mapping(root, "the policy", "version", "rules", "max_retries", "roots", "secret_exceptions")
	if err != nil {
		return nil, err
	}
	if rn, ok := fields["roots"]; ok {
		if p.roots, err = p.absList(rn, "roots"); err != nil {
			return nil, err
		}
	}
	if en, ok := fields["secret_exceptions"]; ok {
		if p.exceptions, err = p.secretExceptions(en); err != nil {
			return nil, err
		}
	}
	if mr, ok := fields["max_retries"]; ok {
		n, err := strconv.Atoi(mr.Value)
		if mr.Kind != yaml.ScalarNode || err != nil || n < 0 || n > MaxRetriesLimit {
			return nil, p.errorf(mr.Line, "max_retries %s: want a whole number from 0 to %d (the retries of a failed call a run allows per stage)", describe(mr), MaxRetriesLimit)
		}
		p.maxRetries = &n
	}
	v, ok := fields["version"]
	if !ok {
		return nil, p.errorf(root.Line, "version is missing: want \"version: 1\"")
	}
	if !isIntOne(v) {
		return nil, p.errorf(v.Line, "version %s is not supported: want 1", describe(v))
	}
	rn, ok := fields["rules"]
	if !ok {
		return nil, nil
	}
	items, err := p.sequence(rn, "rules")
	if err != nil {
		return nil, err
	}
	if len(items) > MaxRules {
		return nil, p.errorf(rn.Line, "%d rules is more than the maximum of %d", len(items), MaxRules)
	}
	rules := make([]compiled, 0, len(items))
	seen := make(map[string]int, len(items))
	for i, it := range items {
		c, err := p.rule(i, it)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[c.rule.ID]; dup {
			return nil, p.errorf(it.Line, "duplicate id: rules[%d] already has id %q", first, c.rule.ID)
		}
		seen[c.rule.ID] = i
		rules = append(rules, c)
	}
	for i := range rules {
		if err := p.checkExamples(&rules[i], items[i]); err != nil {
			return nil, err
		}
	}
	p.label = ""
	return rules, nil
}

// isIntOne reports whether n is the YAML integer 1.
func isIntOne(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return false
	}
	var v int64
	return n.Decode(&v) == nil && v == 1
}

// yamlMessage strips the "yaml: " prefix of go-yaml errors.
func yamlMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// describe renders a node for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return strconv.Quote(v)
	case yaml.MappingNode:
		return "(a mapping)"
	case yaml.SequenceNode:
		return "(a list)"
	case yaml.AliasNode:
		return "(an alias)"
	}
	return "(empty)"
}

// mapping checks that n is a mapping whose keys are distinct plain strings
// from allowed, and returns its values by key. what names n in errors ("the
// rule" and "the policy" are implied by the error prefix and not repeated).
func (p *parser) mapping(n *yaml.Node, what string, allowed ...string) (map[string]*yaml.Node, error) {
	pre := what + ": "
	if strings.HasPrefix(what, "the ") {
		pre = ""
	}
	if n.Kind == yaml.AliasNode {
		return nil, p.errorf(n.Line, "%sYAML aliases are not supported", pre)
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n.Line, "%s must be a mapping, not %s", what, describe(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, p.errorf(k.Line, "%skeys must be plain strings, not %s", pre, describe(k))
		}
		if k.ShortTag() == "!!merge" {
			return nil, p.errorf(k.Line, "%sYAML merge keys (<<) are not supported", pre)
		}
		if !containsString(allowed, k.Value) {
			return nil, p.errorf(k.Line, "%sunknown field %q (known: %s)", pre, k.Value, strings.Join(allowed, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errorf(k.Line, "%sfield %q is given twice", pre, k.Value)
		}
		if v.Kind == yaml.AliasNode {
			return nil, p.errorf(v.Line, "%s%s: YAML aliases are not supported", pre, k.Value)
		}
		out[k.Value] = v
	}
	return out, nil
}

func (p *parser) sequence(n *yaml.Node, what string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n.Line, "%s must be a list, not %s", what, describe(n))
	}
	for _, it := range n.Content {
		if it.Kind == yaml.AliasNode {
			return nil, p.errorf(it.Line, "%s: YAML aliases are not supported", what)
		}
	}
	return n.Content, nil
}

// scalar returns the text of a string-like scalar (str, int, float, bool).
func (p *parser) scalar(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errorf(n.Line, "%s must be a string, not %s", what, describe(n))
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool":
		if strings.IndexByte(n.Value, 0) >= 0 {
			return "", p.errorf(n.Line, "%s contains a NUL byte", what)
		}
		return n.Value, nil
	case "!!null":
		return "", p.errorf(n.Line, "%s is empty (null)", what)
	}
	return "", p.errorf(n.Line, "%s must be a string, not a %s value", what, n.ShortTag())
}

// strings returns a list of scalars. A given list must not be empty.
func (p *parser) stringList(n *yaml.Node, what string) ([]string, error) {
	items, err := p.sequence(n, what)
	if err != nil {
		return nil, err
	}
	if len(items) > MaxListLen {
		return nil, p.errorf(n.Line, "%s has %d entries, more than the maximum of %d", what, len(items), MaxListLen)
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, err := p.scalar(it, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

var ruleFields = []string{"id", "tools", "argv_prefix", "argv_pattern", "paths", "decision", "require_verified", "justification", "examples"}

func (p *parser) rule(i int, n *yaml.Node) (compiled, error) {
	var c compiled
	p.label = fmt.Sprintf("rules[%d]", i)
	// Find the id first so every later error names the rule.
	if n.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, v := n.Content[j], n.Content[j+1]
			if k.Kind == yaml.ScalarNode && k.Value == "id" && v.Kind == yaml.ScalarNode && idRE.MatchString(v.Value) && len(v.Value) <= MaxIDLen {
				p.label = v.Value
				break
			}
		}
	}
	f, err := p.mapping(n, "the rule", ruleFields...)
	if err != nil {
		return c, err
	}
	r := &c.rule
	idn, ok := f["id"]
	if !ok {
		return c, p.errorf(n.Line, "id is missing")
	}
	if r.ID, err = p.scalar(idn, "id"); err != nil {
		return c, err
	}
	switch {
	case r.ID == "":
		return c, p.errorf(idn.Line, "id is empty")
	case len(r.ID) > MaxIDLen:
		return c, p.errorf(idn.Line, "id is longer than %d characters", MaxIDLen)
	case !idRE.MatchString(r.ID):
		return c, p.errorf(idn.Line, "id %q must start with a letter or digit and contain only letters, digits and . _ : / -", r.ID)
	}

	dn, hasDecision := f["decision"]
	rn, hasRequire := f["require_verified"]
	switch {
	case hasDecision && hasRequire:
		return c, p.errorf(dn.Line, "a rule has either a decision or require_verified, not both (write two rules)")
	case hasRequire:
		if r.RequireVerified, err = p.scalar(rn, "require_verified"); err != nil {
			return c, err
		}
		switch {
		case strings.TrimSpace(r.RequireVerified) == "":
			return c, p.errorf(rn.Line, "require_verified is empty: name the stage of the run that must be verified (run_verify)")
		case len(r.RequireVerified) > MaxStageLen:
			return c, p.errorf(rn.Line, "require_verified is longer than %d bytes (a stage name)", MaxStageLen)
		}
	case !hasDecision:
		return c, p.errorf(n.Line, "decision is missing: want allow, ask or deny (or require_verified: <stage>)")
	default:
		d, err := p.scalar(dn, "decision")
		if err != nil {
			return c, err
		}
		r.Decision = Decision(d)
		if !r.Decision.Valid() {
			return c, p.errorf(dn.Line, "decision %q is not allow, ask or deny", d)
		}
	}

	if jn, ok := f["justification"]; ok {
		if r.Justification, err = p.scalar(jn, "justification"); err != nil {
			return c, err
		}
		if len(r.Justification) > MaxJustificationN {
			return c, p.errorf(jn.Line, "justification is longer than %d bytes", MaxJustificationN)
		}
	}

	if tn, ok := f["tools"]; ok {
		if r.Tools, err = p.stringList(tn, "tools"); err != nil {
			return c, err
		}
		if len(r.Tools) == 0 {
			return c, p.errorf(tn.Line, "tools is an empty list: remove it to match every tool")
		}
		for j, t := range r.Tools {
			if t == "" {
				return c, p.errorf(tn.Line, "tools[%d] is empty", j)
			}
		}
		c.tools = r.Tools
	}

	if an, ok := f["argv_prefix"]; ok {
		if r.ArgvPrefix, err = p.stringList(an, "argv_prefix"); err != nil {
			return c, err
		}
		if len(r.ArgvPrefix) == 0 {
			return c, p.errorf(an.Line, "argv_prefix is an empty list")
		}
	}

	if pn, ok := f["argv_pattern"]; ok {
		if r.ArgvPattern, err = p.scalar(pn, "argv_pattern"); err != nil {
			return c, err
		}
		switch {
		case r.ArgvPattern == "":
			return c, p.errorf(pn.Line, "argv_pattern is empty")
		case len(r.ArgvPattern) > MaxPatternLen:
			return c, p.errorf(pn.Line, "argv_pattern is longer than %d bytes", MaxPatternLen)
		}
		re, err := regexp.Compile(r.ArgvPattern)
		if err != nil {
			return c, p.errorf(pn.Line, "argv_pattern %q is not a valid RE2 expression: %s", r.ArgvPattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		c.re = re
	}

	if gn, ok := f["paths"]; ok {
		if r.Paths, err = p.stringList(gn, "paths"); err != nil {
			return c, err
		}
		if len(r.Paths) == 0 {
			return c, p.errorf(gn.Line, "paths is an empty list")
		}
		for j, g := range r.Paths {
			if msg := globProblem(g); msg != "" {
				return c, p.errorf(gn.Line, "paths[%d] %q %s", j, g, msg)
			}
			c.globs = append(c.globs, compileGlob(g))
		}
	}

	if r.Tools == nil && r.ArgvPrefix == nil && r.ArgvPattern == "" && r.Paths == nil {
		return c, p.errorf(n.Line, "has no matcher: give at least one of tools, argv_prefix, argv_pattern, paths")
	}
	if hasRequire {
		// The writes that check, right after the gate, that their run has
		// the stage verified (harness/ops/run.Enforce): the registry's
		// vocabulary (Verified).
		if len(p.verified) == 0 {
			return c, p.errorf(rn.Line, "require_verified is not available: no operation of this harnessd checks a verified stage")
		}
		if r.Tools == nil {
			return c, p.errorf(rn.Line, "require_verified needs tools: one or more of %s", strings.Join(p.verified, ", "))
		}
		for j, t := range r.Tools {
			if !containsString(p.verified, t) {
				return c, p.errorf(rn.Line, "tools[%d] %q: require_verified applies to %s only", j, t, strings.Join(p.verified, ", "))
			}
		}
		if r.ArgvPrefix != nil || r.ArgvPattern != "" {
			return c, p.errorf(rn.Line, "require_verified rules match tools and paths; argv_prefix and argv_pattern never match a write")
		}
	}

	if en, ok := f["examples"]; ok {
		if r.Examples, err = p.examples(en); err != nil {
			return c, err
		}
	}
	return c, nil
}

// globProblem returns why g is not a usable paths glob, or "".
func globProblem(g string) string {
	switch {
	case g == "":
		return "is empty"
	case len(g) > MaxGlobLen:
		return fmt.Sprintf("is longer than %d bytes", MaxGlobLen)
	case strings.HasPrefix(g, "/"):
		return "is absolute: globs match paths relative to the repository root"
	case g == "." || strings.HasPrefix(g, "./"):
		return "starts with \"./\": write it relative to the root without it"
	case g == ".." || strings.HasPrefix(g, "../") || strings.Contains(g, "/../") || strings.HasSuffix(g, "/.."):
		return "contains \"..\": globs cannot leave the repository root"
	case !doublestar.ValidatePattern(g):
		return "is not a valid glob"
	}
	return ""
}

func (p *parser) examples(n *yaml.Node) (Examples, error) {
	var ex Examples
	f, err := p.mapping(n, "examples", "match", "not_match")
	if err != nil {
		return ex, err
	}
	total := 0
	for _, key := range []string{"match", "not_match"} {
		ln, ok := f[key]
		if !ok {
			continue
		}
		items, err := p.sequence(ln, "examples."+key)
		if err != nil {
			return ex, err
		}
		total += len(items)
		if total > MaxExamples {
			return ex, p.errorf(ln.Line, "more than %d examples", MaxExamples)
		}
		acts := make([]Action, len(items))
		for i, it := range items {
			if acts[i], err = p.action(it, fmt.Sprintf("example %s[%d]", key, i)); err != nil {
				return ex, err
			}
		}
		if key == "match" {
			ex.Match = acts
		} else {
			ex.NotMatch = acts
		}
	}
	return ex, nil
}

func (p *parser) action(n *yaml.Node, what string) (Action, error) {
	var a Action
	f, err := p.mapping(n, what, "tool", "argv", "paths")
	if err != nil {
		return a, err
	}
	tn, ok := f["tool"]
	if !ok {
		return a, p.errorf(n.Line, "%s: tool is missing", what)
	}
	if a.Tool, err = p.scalar(tn, what+": tool"); err != nil {
		return a, err
	}
	if a.Tool == "" {
		return a, p.errorf(tn.Line, "%s: tool is empty", what)
	}
	if an, ok := f["argv"]; ok {
		if a.Argv, err = p.stringList(an, what+": argv"); err != nil {
			return a, err
		}
	}
	if pn, ok := f["paths"]; ok {
		if a.Paths, err = p.stringList(pn, what+": paths"); err != nil {
			return a, err
		}
	}
	return a, nil
}

// checkExamples verifies that the rule matches each of its match examples and
// none of its not_match examples.
func (p *parser) checkExamples(c *compiled, n *yaml.Node) error {
	p.label = c.rule.ID
	for i := range c.rule.Examples.Match {
		a := &c.rule.Examples.Match[i]
		if !c.matches(newSubject(a)) {
			return p.errorf(n.Line, "example match[%d] %s does not match", i, a)
		}
	}
	for i := range c.rule.Examples.NotMatch {
		a := &c.rule.Examples.NotMatch[i]
		if c.matches(newSubject(a)) {
			return p.errorf(n.Line, "example not_match[%d] %s matches", i, a)
		}
	}
	return nil
}

// absList parses a list of absolute, clean paths.
func (p *parser) absList(n *yaml.Node, what string) ([]string, error) {
	l, err := p.stringList(n, what)
	if err != nil {
		return nil, err
	}
	for i, d := range l {
		if !strings.HasPrefix(d, "/") || len(d) > MaxGlobLen {
			return nil, p.errorf(n.Content[i].Line, "%s[%d] %s: want an absolute path", what, i, describe(n.Content[i]))
		}
		l[i] = cleanAbs(d)
	}
	return l, nil
}

// cleanAbs cleans an absolute slash path.
func cleanAbs(d string) string {
	for strings.Contains(d, "//") {
		d = strings.ReplaceAll(d, "//", "/")
	}
	if len(d) > 1 {
		d = strings.TrimSuffix(d, "/")
	}
	return d
}

var exceptionFields = []string{"repo", "paths", "justification"}

// secretExceptions parses secret_exceptions: per repository root, globs of
// paths a person takes off the secret denylist.
func (p *parser) secretExceptions(n *yaml.Node) ([]SecretException, error) {
	items, err := p.sequence(n, "secret_exceptions")
	if err != nil {
		return nil, err
	}
	if len(items) > MaxRules {
		return nil, p.errorf(n.Line, "secret_exceptions has %d entries, more than the maximum of %d", len(items), MaxRules)
	}
	var out []SecretException
	for i, it := range items {
		what := fmt.Sprintf("secret_exceptions[%d]", i)
		f, err := p.mapping(it, what, exceptionFields...)
		if err != nil {
			return nil, err
		}
		var e SecretException
		rn, ok := f["repo"]
		if !ok {
			return nil, p.errorf(it.Line, "%s: repo is missing: the absolute path of the repository's work tree", what)
		}
		if e.Repo, err = p.scalar(rn, what+".repo"); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(e.Repo, "/") {
			return nil, p.errorf(rn.Line, "%s.repo %s: want the absolute path of the work tree", what, describe(rn))
		}
		e.Repo = cleanAbs(e.Repo)
		pn, ok := f["paths"]
		if !ok {
			return nil, p.errorf(it.Line, "%s: paths is missing: the globs (relative to the work tree) of the files to allow, e.g. [\"test/*.pem\"]", what)
		}
		if e.Paths, err = p.stringList(pn, what+".paths"); err != nil {
			return nil, err
		}
		if len(e.Paths) == 0 {
			return nil, p.errorf(pn.Line, "%s.paths is empty", what)
		}
		for j, g := range e.Paths {
			if g == "" || strings.HasPrefix(g, "/") || strings.Contains(g, "..") || len(g) > MaxGlobLen || !doublestar.ValidatePattern(g) {
				return nil, p.errorf(pn.Content[j].Line, "%s.paths[%d] %s: want a glob relative to the work tree, without \"..\"", what, j, describe(pn.Content[j]))
			}
			if broad(g) {
				return nil, p.errorf(pn.Content[j].Line, "%s.paths[%d] %q would allow every secret of the repository: name the fixtures", what, j, g)
			}
		}
		if jn, ok := f["justification"]; ok {
			if e.Justification, err = p.scalar(jn, what+".justification"); err != nil {
				return nil, err
			}
			if len(e.Justification) > MaxJustificationN {
				return nil, p.errorf(jn.Line, "%s.justification is longer than %d bytes", what, MaxJustificationN)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// broad reports whether an exception glob would take any secret off the
// denylist (it matches both a dotenv file at the top and a key file deep
// down): exceptions name fixtures, not everything.
func broad(g string) bool {
	a, _ := doublestar.Match(g, ".env")
	b, _ := doublestar.Match(g, "a/b/id_rsa")
	return a && b
}
