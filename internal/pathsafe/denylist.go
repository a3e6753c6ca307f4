package pathsafe

import (
	"path"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/harnessd/harnessd/contract/errs"
)

// defaultSecretPatterns is the built-in denylist. See DefaultSecretPatterns.
var defaultSecretPatterns = []string{
	// dotenv and direnv files (".envrc" is denied too: direnv files routinely
	// export secrets). Note that ".env.*" also denies ".env.example".
	".env",
	".env.*",
	".envrc",
	// Private keys and key stores.
	"*.pem",
	"*.key",
	"*.p12",
	"*.pfx",
	"*.ppk",
	"*.keystore",
	"*.jks",
	// SSH keys. These are prefix rules, so public keys ("id_rsa.pub") are
	// denied as well: simpler, and public keys are rarely needed by an agent.
	"id_rsa*",
	"id_dsa*",
	"id_ecdsa*",
	"id_ed25519*",
	".ssh/**",
	".gnupg/**",
	// Cloud, registry and tool credentials.
	".aws/credentials",
	".aws/config",
	".netrc",
	"_netrc",
	".git-credentials",
	".npmrc",
	".pypirc",
	".pgpass",
	".docker/config.json",
	"kubeconfig",
	".kube/config",
	"*.kubeconfig",
	"credentials.json",
	"secrets.yaml",
	"secrets.yml",
	".htpasswd",
	"terraform.tfstate*",
}

// DefaultSecretPatterns returns the default denylist: doublestar globs matched
// case-insensitively against the slash-separated path relative to the root and
// against every suffix of it that starts at a path component, so "a/b/.env"
// matches ".env" and "x/.ssh/id" matches ".ssh/**".
//
// The list covers dotenv and direnv files (.env, .env.*, .envrc), private keys
// and key stores (*.pem, *.key, *.p12, *.pfx, *.ppk, *.keystore, *.jks), SSH key
// files by prefix (id_rsa*, id_dsa*, id_ecdsa*, id_ed25519*; public keys such as
// id_rsa.pub are deliberately denied too), anything under .ssh/ or .gnupg/, and
// well-known credential files (.aws/credentials, .aws/config, .netrc, _netrc,
// .git-credentials, .npmrc, .pypirc, .pgpass, .docker/config.json, kubeconfig,
// .kube/config, *.kubeconfig, credentials.json, secrets.yaml, secrets.yml,
// .htpasswd, terraform.tfstate*).
//
// The returned slice is a fresh copy the caller may modify.
func DefaultSecretPatterns() []string {
	return append([]string(nil), defaultSecretPatterns...)
}

var defaultDenylist = sync.OnceValue(func() *Denylist {
	d, err := NewDenylist(defaultSecretPatterns)
	if err != nil {
		panic("pathsafe: invalid default secret pattern: " + err.Error())
	}
	return d
})

// matcherKind selects the cheapest correct way to evaluate one pattern.
type matcherKind uint8

const (
	kindLiteral matcherKind = iota // no glob syntax: string equality
	kindSuffix                     // "*LIT" on one segment: strings.HasSuffix
	kindPrefix                     // "LIT*" on one segment: strings.HasPrefix
	kindGlob                       // anything else: doublestar.Match
)

type matcher struct {
	orig     string // the pattern as given, reported to callers
	pat      string // lower-cased, normalised pattern
	lit      string // literal part for kindSuffix / kindPrefix
	kind     matcherKind
	anchored bool // leading "/": match the whole path only
	// segs is the fixed number of path segments the pattern matches, or 0 if
	// it contains "**" and can match any number.
	segs int
	// head is the literal first segment of a multi-segment pattern ("" if the
	// first segment has glob syntax); used to skip suffixes cheaply.
	head string
}

// Denylist is a compiled list of secret-path patterns. It is immutable and
// safe for concurrent use. A nil *Denylist behaves like the default list.
//
// A list bound to a root (ForRoot) decides on the canonical absolute path
// of what a root-relative path names, and knows the root's exceptions.
type Denylist struct {
	ms []matcher
	// anyMulti is true if some pattern spans several segments or is anchored,
	// so paths with directories need more than a base-name check.
	anyMulti bool
	// bound is the root the list is bound to (nil: matching stays
	// relative to whatever root the caller has in mind).
	bound *binding
}

// NewDenylist compiles patterns. Each pattern is a doublestar glob matched
// case-insensitively against a slash-separated relative path and every suffix
// of it that starts at a path component. A leading "/" anchors the pattern to
// the whole path (only the full relative path is tried) and a trailing "/"
// means "the directory and everything under it" (".ssh/" is ".ssh/**").
// An empty or malformed pattern gives errs.InvalidArgument naming it.
func NewDenylist(patterns []string) (*Denylist, error) {
	d := &Denylist{ms: make([]matcher, 0, len(patterns))}
	for _, orig := range patterns {
		m, err := compilePattern(orig)
		if err != nil {
			return nil, err
		}
		if m.anchored || m.segs != 1 {
			d.anyMulti = true
		}
		d.ms = append(d.ms, m)
	}
	return d, nil
}

func compilePattern(orig string) (matcher, error) {
	p := strings.TrimSpace(orig)
	m := matcher{orig: orig}
	if strings.HasPrefix(p, "/") {
		m.anchored = true
		p = strings.TrimLeft(p, "/")
	}
	if strings.HasSuffix(p, "/") {
		p = strings.TrimRight(p, "/") + "/**"
	}
	if p == "" || p == "/**" {
		return m, errs.New(errs.InvalidArgument, "empty secret pattern %q", orig).With("pattern", orig)
	}
	if strings.ContainsRune(p, 0) || !doublestar.ValidatePattern(p) {
		return m, errs.New(errs.InvalidArgument, "invalid secret pattern %q", orig).With("pattern", orig)
	}
	p = strings.ToLower(p)
	m.pat = p
	if !strings.Contains(p, "**") {
		m.segs = strings.Count(p, "/") + 1
	}
	if m.segs != 1 {
		first, _, _ := strings.Cut(p, "/")
		if !hasMeta(first) {
			m.head = first
		}
	}
	switch {
	case !hasMeta(p):
		m.kind = kindLiteral
	// The string shortcuts assume one segment: an anchored pattern is
	// matched against the whole path, where "*" must not cross a "/".
	case m.segs == 1 && !m.anchored && strings.HasPrefix(p, "*") && !hasMeta(p[1:]):
		m.kind, m.lit = kindSuffix, p[1:]
	case m.segs == 1 && !m.anchored && strings.HasSuffix(p, "*") && !hasMeta(p[:len(p)-1]):
		m.kind, m.lit = kindPrefix, p[:len(p)-1]
	default:
		m.kind = kindGlob
	}
	return m, nil
}

// hasMeta reports whether s contains doublestar syntax.
func hasMeta(s string) bool {
	return strings.ContainsAny(s, `*?[]{}\`)
}

// Patterns returns a copy of the patterns the list was built from.
func (d *Denylist) Patterns() []string {
	if d == nil {
		d = defaultDenylist()
	}
	out := make([]string, len(d.ms))
	for i := range d.ms {
		out[i] = d.ms[i].orig
	}
	return out
}

// Match reports whether rel, a slash-separated path relative to the root, is a
// secret path, and returns the first pattern (in list order) that matches it.
// Matching is case-insensitive. rel is cleaned first if needed; "." and paths
// that escape with ".." are matched as given.
//
// On a list bound to a root (ForRoot) the decision is the one on the
// canonical absolute path: an unanchored pattern also matches the suffixes
// that begin inside the root's own path (root /home/u/.aws: "credentials"
// matches ".aws/credentials"), "." is the root itself, and a path one of
// the root's exceptions names is no secret. Anchored patterns stay
// relative to the root.
func (d *Denylist) Match(rel string) (pattern string, ok bool) {
	if d == nil {
		d = defaultDenylist()
	}
	if len(d.ms) == 0 || rel == "" {
		return "", false
	}
	if needsClean(rel) {
		rel = strings.TrimPrefix(path.Clean(rel), "/")
	}
	if b := d.bound; b != nil && b.except != nil && b.excepted(rel) {
		return "", false // a person's exception: no pattern applies
	}
	rel = toLowerASCIIFast(rel)
	base := rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		base = rel[i+1:]
	}
	multi := d.anyMulti && len(base) != len(rel)
	for i := range d.ms {
		m := &d.ms[i]
		if m.anchored {
			if m.match(rel) {
				return m.orig, true
			}
			continue
		}
		if m.segs == 1 {
			if m.match(base) {
				return m.orig, true
			}
			continue
		}
		if !multi && m.segs > 1 {
			continue
		}
		if m.matchSuffixes(rel) {
			return m.orig, true
		}
	}
	if b := d.bound; b != nil && (len(b.cross) > 0 || rel == ".") {
		return b.miss(d, rel)
	}
	return "", false
}

func (m *matcher) match(s string) bool {
	switch m.kind {
	case kindLiteral:
		return s == m.pat
	case kindSuffix:
		return strings.HasSuffix(s, m.lit)
	case kindPrefix:
		return strings.HasPrefix(s, m.lit)
	default:
		return doublestar.MatchUnvalidated(m.pat, s)
	}
}

// matchSuffixes tries every component-aligned suffix of rel that could match a
// multi-segment (or "**") pattern.
func (m *matcher) matchSuffixes(rel string) bool {
	if m.segs > 1 {
		// Exactly segs components: only one suffix can match.
		s, ok := lastSegments(rel, m.segs)
		if !ok {
			return false
		}
		if m.head != "" && !strings.HasPrefix(s, m.head+"/") {
			return false
		}
		return m.match(s)
	}
	// "**" patterns: any suffix.
	s := rel
	for {
		if m.head == "" || hasSegmentPrefix(s, m.head) {
			if m.match(s) {
				return true
			}
		}
		i := strings.IndexByte(s, '/')
		if i < 0 {
			return false
		}
		s = s[i+1:]
	}
}

// hasSegmentPrefix reports whether s is head or starts with head + "/".
func hasSegmentPrefix(s, head string) bool {
	return strings.HasPrefix(s, head) && (len(s) == len(head) || s[len(head)] == '/')
}

// lastSegments returns the suffix of rel made of its last n components.
func lastSegments(rel string, n int) (string, bool) {
	i := len(rel)
	for k := 0; k < n; k++ {
		j := strings.LastIndexByte(rel[:i], '/')
		if j < 0 {
			if k == n-1 {
				return rel, true
			}
			return "", false
		}
		if k == n-1 {
			return rel[j+1:], true
		}
		i = j
	}
	return "", false
}

// needsClean reports whether a slash path has "//", "." or ".." components or
// a leading or trailing slash.
func needsClean(s string) bool {
	if s == "." || s == ".." {
		return false
	}
	if s[0] == '/' || s[len(s)-1] == '/' {
		return true
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '/' {
			seg := s[start:i]
			if seg == "" || seg == "." || seg == ".." {
				return true
			}
			start = i + 1
		}
	}
	return false
}

// toLowerASCIIFast lower-cases s, returning s itself when it has no upper-case
// letters (the common case) so no allocation happens.
func toLowerASCIIFast(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}
