package redact

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/harnessd/harnessd/contract/errs"
)

// Marker is the format of the replacement text: "[REDACTED:<rule-id>]".
const Marker = "[REDACTED:%s]"

// markerPrefix starts every replacement. A candidate secret that starts with
// it is a previous redaction and is left alone, which makes redaction
// idempotent.
const markerPrefix = "[REDACTED:"

// Rule is one kind of secret: an ID used in the replacement marker, a
// description, the keywords that must occur for the rule to be tried, and a
// compiled matcher. The built-in rules come from [Default]; [NewRule] builds a
// rule from a regular expression. The zero Rule has no matcher and is ignored
// by [New].
type Rule struct {
	// ID names the rule in the marker, for example "aws-access-key-id".
	ID string
	// Description says what the rule finds, for humans.
	Description string

	keywords []string  // prefilter: the rule runs only where one occurs
	match    matchFunc // built-in matcher, run at each keyword occurrence
	pem      bool      // match is the multi-line PEM matcher

	re          *regexp.Regexp // NewRule: run on the line of each keyword occurrence
	secretGroup int            // submatch to redact (0: the whole match)
}

// matchFunc reports the secret found at the keyword occurrence s[at:at+kwLen]:
// the byte range [lo, hi) to replace.
type matchFunc func(c *scanCtx, at, kwLen int) (lo, hi int, ok bool)

// Keywords returns the rule's prefilter keywords (matched case-insensitively).
// A rule without keywords runs on the whole input.
func (r Rule) Keywords() []string { return slices.Clone(r.keywords) }

var ruleIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// NewRule builds a rule from a regular expression (RE2 syntax).
//
// If pattern has a submatch named "secret", only that submatch is redacted;
// otherwise the whole match is. Each keyword (at least two bytes, no newline,
// matched case-insensitively) must occur in every match; the pattern then
// runs only on the lines holding a keyword, and matches never span lines.
// Without keywords the pattern runs on the whole input, which is slow: give
// keywords. The ID may hold letters, digits, '.', '_' and '-'.
func NewRule(id, description, pattern string, keywords ...string) (Rule, error) {
	if !ruleIDPattern.MatchString(id) {
		return Rule{}, errs.New(errs.InvalidArgument, "redact rule id %q must be 1-64 letters, digits, '.', '_' or '-'", id)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return Rule{}, errs.Wrap(errs.InvalidArgument, err, "redact rule %q: invalid pattern: %v", id, err)
	}
	if re.MatchString("") {
		return Rule{}, errs.New(errs.InvalidArgument, "redact rule %q: pattern %q matches the empty string", id, pattern)
	}
	for _, k := range keywords {
		if len(k) < 2 || strings.ContainsAny(k, "\r\n") {
			return Rule{}, errs.New(errs.InvalidArgument, "redact rule %q: keyword %q must be at least 2 bytes without line breaks", id, k)
		}
	}
	g := re.SubexpIndex("secret")
	if g < 0 {
		g = 0
	}
	return Rule{ID: id, Description: description, keywords: slices.Clone(keywords), re: re, secretGroup: g}, nil
}

// Redactor applies a fixed set of rules. It is immutable and safe for
// concurrent use.
type Redactor struct {
	rules   []Rule
	markers []string // markers[i] is the replacement for rules[i]
	idx     *kwIndex
	always  []int // rules without keywords
	pemRule int   // index of the PEM rule, or -1

	known     *Known // WithKnown: values replaced after the rules, or nil
	knownRule int    // markers[knownRule] is the known-value marker
}

var defaultRedactor = sync.OnceValue(func() *Redactor { return New(builtinRules()) })

// Default returns the redactor with the built-in rules. It is built once.
func Default() *Redactor { return defaultRedactor() }

// New returns a redactor applying rules. When matches of several rules
// overlap, they are merged into one redaction named after the rule that
// starts first (on a tie, the one listed first). Rules without a matcher
// (the zero Rule) are skipped.
func New(rules []Rule) *Redactor {
	r := &Redactor{pemRule: -1}
	for _, rule := range rules {
		if rule.match == nil && rule.re == nil {
			continue
		}
		rule.keywords = slices.Clone(rule.keywords)
		if rule.pem && r.pemRule < 0 {
			r.pemRule = len(r.rules)
		}
		if len(rule.keywords) == 0 {
			if rule.re == nil {
				continue // built-in matchers need a keyword position
			}
			r.always = append(r.always, len(r.rules))
		}
		r.rules = append(r.rules, rule)
		r.markers = append(r.markers, fmt.Sprintf(Marker, rule.ID))
	}
	r.idx = newKwIndex(r.rules)
	return r
}

// Rules returns a copy of the redactor's rules, in priority order.
func (r *Redactor) Rules() []Rule {
	out := make([]Rule, len(r.rules))
	for i, rule := range r.rules {
		rule.keywords = slices.Clone(rule.keywords)
		out[i] = rule
	}
	return out
}

// String returns s with every secret replaced by its marker, and the number
// of redactions made. It returns s itself when nothing matched.
func (r *Redactor) String(s string) (out string, n int) {
	return r.string(s, false)
}

// StringIn is String for text taken from the file at path, such as a
// search match: where path is a test file or test data (foo_test.go,
// test_foo.py, x.spec.ts, anything under test/, testdata/, __tests__/,
// fixtures/), a JSON Web Token is a fixture and is kept, as it is on a
// grep -n line that names such a file. Every other rule applies as in
// String.
func (r *Redactor) StringIn(path, s string) (out string, n int) {
	return r.string(s, isTestPath(path))
}

func (r *Redactor) string(s string, testFile bool) (out string, n int) {
	var buf [8]span
	res := r.findIn(s, true, false, testFile, buf[:0])
	if len(res.spans) == 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, sp := range res.spans {
		b.WriteString(s[prev:sp.lo])
		b.WriteString(r.markers[sp.rule])
		prev = sp.hi
	}
	b.WriteString(s[prev:])
	return b.String(), len(res.spans)
}

// Bytes is String for byte slices. It returns b itself, not a copy, when
// nothing matched; otherwise a new slice, leaving b unchanged.
func (r *Redactor) Bytes(b []byte) (out []byte, n int) {
	var buf [8]span
	res := r.find(bytesView(b), true, false, buf[:0])
	if len(res.spans) == 0 {
		return b, 0
	}
	return r.appendRedacted(make([]byte, 0, len(b)), b, res.spans), len(res.spans)
}

// appendRedacted appends b with spans replaced by their markers to dst.
func (r *Redactor) appendRedacted(dst, b []byte, spans []span) []byte {
	prev := 0
	for _, sp := range spans {
		dst = append(dst, b[prev:sp.lo]...)
		dst = append(dst, r.markers[sp.rule]...)
		prev = sp.hi
	}
	return append(dst, b[prev:]...)
}

// bytesView returns b as a string without copying. The string must not be
// used after b is modified; the redactor only reads it during one call.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// span is a byte range [lo, hi) to replace with the marker of rules[rule].
type span struct{ lo, hi, rule int }

// scanCtx is the state shared by the matchers of one find call.
type scanCtx struct {
	s     string
	final bool // s ends the stream: an open PEM block is decided now
	// hold is where output must stop when !final: the start of the line of a
	// PEM block that runs to the end of s and may continue in the next chunk.
	hold int
	// pemOpen reports that s ends inside a PEM block (only when final).
	pemOpen bool
	// testFile: s comes from a test file (StringIn).
	testFile bool
	// Memos of forward searches, so that many keyword hits on one huge line
	// cost linear time: s[from:at] holds no match and s[at:] starts with one
	// (or at == len(s)).
	nl, end memo
}

type memo struct{ from, at int }

// nextByte returns the index of the first b at or after p, or len(s).
func (c *scanCtx) nextByte(p int, b byte, m *memo) int {
	if p >= m.from && p <= m.at {
		return m.at
	}
	at := len(c.s)
	if i := strings.IndexByte(c.s[p:], b); i >= 0 {
		at = p + i
	}
	*m = memo{p, at}
	return at
}

// nextEnd returns the index of the first "-----END " at or after p, or
// len(s).
func (c *scanCtx) nextEnd(p int) int {
	if p >= c.end.from && p <= c.end.at {
		return c.end.at
	}
	at := len(c.s)
	if i := strings.Index(c.s[p:], "-----END "); i >= 0 {
		at = p + i
	}
	c.end = memo{p, at}
	return at
}

// findResult is the outcome of find: merged, sorted spans below hold.
type findResult struct {
	spans   []span
	hold    int
	pemOpen bool
	// knownHold: hold was lowered for the tail that may begin a known form,
	// not for a PEM block, so the held part is not a PEM body.
	knownHold bool
}

// find returns the redactions of s. final says s ends the input; inPEM says s
// starts inside the body of a PEM private key block (streaming only).
func (r *Redactor) find(s string, final, inPEM bool, spans []span) findResult {
	return r.findIn(s, final, inPEM, false, spans)
}

// findIn is find for text from a test file when testFile is set.
func (r *Redactor) findIn(s string, final, inPEM, testFile bool, spans []span) findResult {
	c := scanCtx{s: s, final: final, hold: len(s), nl: memo{-1, -1}, end: memo{-1, -1}, testFile: testFile}
	if inPEM && r.pemRule >= 0 {
		end, st, body := pemWalk(s, 0)
		switch {
		case st == pemEOF && !final:
			return findResult{spans: spans, hold: 0, pemOpen: true}
		case st == pemEOF:
			c.pemOpen = true
		}
		if end > 0 && (body > 0 || st == pemEnded) {
			spans = append(spans, span{0, end, r.pemRule})
		}
	}
	var covered []int // covered[i]: rule i already matched up to here
	r.idx.scan(s, func(e *kwEntry, at int) {
		if at >= c.hold {
			return
		}
		if covered == nil {
			covered = make([]int, len(r.rules))
			if len(spans) > 0 && r.pemRule >= 0 {
				covered[r.pemRule] = spans[0].hi
			}
		}
		for _, ri := range e.rules {
			if at < covered[ri] {
				continue
			}
			rule := &r.rules[ri]
			if rule.re != nil {
				ls, le := lineStart(s, at), lineEnd(s, at)
				spans = appendRegexp(spans, rule, ri, s[ls:le], ls)
				covered[ri] = le + 1
				continue
			}
			lo, hi, ok := rule.match(&c, at, len(e.kw))
			if ok && hi > lo {
				spans = append(spans, span{lo, hi, ri})
				covered[ri] = max(hi, at+1)
			}
		}
	})
	for _, ri := range r.always {
		spans = appendRegexp(spans, &r.rules[ri], ri, s, 0)
	}
	exempt, knownHold := -1, false
	if r.known != nil {
		exempt = r.knownRule
		spans = r.known.appendSpans(s, spans, r.knownRule)
		if !final {
			// More input could complete a form that starts in the tail.
			if p := r.known.pendingFrom(s); p < c.hold {
				c.hold, knownHold = p, true
			}
		}
	}
	spans = mergeSpans(s, spans, &c.hold, exempt)
	// Unless s is a piece of an over-long line, hold from a line start, so
	// that the rules see the held line whole when it is redacted.
	for knownHold && len(s) > 0 && s[len(s)-1] == '\n' {
		ls := lineStart(s, c.hold)
		if ls == c.hold {
			break
		}
		c.hold = ls
		spans = mergeSpans(s, spans, &c.hold, exempt)
	}
	return findResult{spans: spans, hold: c.hold, pemOpen: c.pemOpen && c.hold == len(s), knownHold: knownHold}
}

// appendRegexp appends the matches of a NewRule rule in text, which starts
// at offset base of the input.
func appendRegexp(spans []span, rule *Rule, ri int, text string, base int) []span {
	for _, m := range rule.re.FindAllStringSubmatchIndex(text, -1) {
		lo, hi := m[2*rule.secretGroup], m[2*rule.secretGroup+1]
		if lo >= 0 && hi > lo {
			spans = append(spans, span{base + lo, base + hi, ri})
		}
	}
	return spans
}

// mergeSpans drops empty spans and previous redactions (except spans of the
// rule index exempt: a known value is replaced wherever it occurs), sorts
// the rest, merges overlapping ones, and cuts the result at *hold (lowering
// *hold so that no span crosses it).
func mergeSpans(s string, spans []span, hold *int, exempt int) []span {
	if len(spans) == 0 {
		return spans
	}
	keep := spans[:0]
	for _, sp := range spans {
		if sp.hi > sp.lo && (sp.rule == exempt || !strings.HasPrefix(s[sp.lo:], markerPrefix)) {
			keep = append(keep, sp)
		}
	}
	spans = keep
	if !slices.IsSortedFunc(spans, cmpSpan) {
		slices.SortStableFunc(spans, cmpSpan)
	}
	out := spans[:0]
	for _, sp := range spans {
		if n := len(out); n > 0 && sp.lo < out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, sp.hi)
			continue
		}
		out = append(out, sp)
	}
	for i, sp := range out {
		if sp.hi > *hold {
			if sp.lo < *hold {
				*hold = sp.lo
			}
			return out[:i]
		}
	}
	return out
}

func cmpSpan(a, b span) int {
	if a.lo != b.lo {
		return a.lo - b.lo
	}
	return a.rule - b.rule
}

// lineStart returns the index of the first byte of the line holding s[i].
func lineStart(s string, i int) int { return strings.LastIndexByte(s[:i], '\n') + 1 }

// lineEnd returns the index of the newline ending the line holding s[i], or
// len(s).
func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}
