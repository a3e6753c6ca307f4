package pathsafe

import (
	"fmt"
	"github.com/harnessd/harnessd/internal/authority"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/harnessd/harnessd/contract/errs"
)

// binding is what a list bound to one root knows of it (ForRoot).
type binding struct {
	base *Denylist // the list it was bound from
	root string    // canonical absolute root
	// self is the pattern that matches the root itself ("" = none): the
	// answer for ".".
	self string
	// cross are the unanchored multi-segment patterns that can match a
	// suffix beginning inside the root's own path, with those beginnings.
	cross []crossing
	// except are the exceptions' globs, relative to the root, matched
	// case-sensitively (the narrower reading of a person's words).
	except []exception
}

// crossing is one pattern (an index of Denylist.ms) with the suffixes of
// the root's path a match may begin with.
type crossing struct {
	i        int
	prefixes []rootSuffix
}

// rootSuffix is the lower-cased end of the root's path from one component
// on (".aws", "u/.aws"), and its number of components.
type rootSuffix struct {
	s    string
	segs int
}

// ForRoot returns the list bound to root, a directory's absolute path
// (made canonical here: symlinks resolved where it exists), with the
// exceptions a person made for it: globs relative to the root (doublestar,
// case-sensitive) whose paths are not secrets, however a pattern names
// them. Match on the result decides on the canonical absolute path; see
// Match. An exception that is empty, absolute, escapes with "..", or is
// not a valid glob is errs.InvalidArgument.
//
// Binding costs one pass over the root's components; a root with no
// component a multi-segment pattern begins with (.ssh, .aws, .kube, ...)
// gets no crossing patterns, and its Match costs what the unbound one does.
func (d *Denylist) ForRoot(root string, exceptions []string) (*Denylist, error) {
	if d == nil {
		d = defaultDenylist()
	}
	if d.bound != nil {
		d = d.bound.base
	}
	canon := CanonicalDir(root)
	if canon == "" {
		return nil, errs.New(errs.InvalidArgument, "bind the secret denylist: root %q is not an absolute path", root)
	}
	b := &binding{base: d, root: canon}
	for _, g := range exceptions {
		if g == "" || strings.HasPrefix(g, "/") || strings.ContainsRune(g, 0) || g == ".." || strings.HasPrefix(g, "../") ||
			strings.Contains(g, "/../") || strings.HasSuffix(g, "/..") || !doublestar.ValidatePattern(g) {
			return nil, errs.New(errs.InvalidArgument, "secret exception %q: want a glob relative to the root, without \"..\"", g).With("pattern", g)
		}
		b.except = append(b.except, newException(g))
	}
	var comps []string
	if canon != "/" {
		comps = strings.Split(strings.ToLower(canon[1:]), "/")
	}
	for i := range d.ms {
		m := &d.ms[i]
		if m.anchored || m.segs == 1 {
			continue
		}
		var pres []rootSuffix
		for k := range comps {
			n := len(comps) - k
			if m.head != "" && comps[k] != m.head {
				continue
			}
			if m.segs > 0 && n >= m.segs {
				continue // the match must take at least one component of rel
			}
			pres = append(pres, rootSuffix{s: strings.Join(comps[k:], "/"), segs: n})
		}
		if len(pres) > 0 {
			b.cross = append(b.cross, crossing{i: i, prefixes: pres})
		}
	}
	b.self = selfMatch(d, comps)
	return &Denylist{ms: d.ms, anyMulti: d.anyMulti, bound: b}, nil
}

// selfMatch returns the first pattern that matches the root itself
// through its path's component-aligned suffixes ("" = none): a root inside
// .ssh is a secret directory. Single-segment patterns name files by their
// base name, never the root (a repository called "kubeconfig" is no
// secret directory).
func selfMatch(d *Denylist, comps []string) string {
	if pat, ok := d.Match("."); ok { // d is unbound: what "." always was
		return pat
	}
	for i := range d.ms {
		m := &d.ms[i]
		if m.anchored || m.segs == 1 {
			continue
		}
		for k := range comps {
			n := len(comps) - k
			if m.segs > 0 && n != m.segs {
				continue
			}
			if m.match(strings.Join(comps[k:], "/")) {
				return m.orig
			}
		}
	}
	return ""
}

// CanonicalDir returns the canonical form of the absolute path dir: clean,
// with symlinks resolved as far as it exists ("" for a relative path):
// authority.Canonical, the one canonicaliser of roots.
func CanonicalDir(dir string) string { return authority.Canonical(dir) }

// miss is Match on a bound list when no pattern matched the clean,
// lower-cased lrel below the root (and no exception names it): "." is the
// root itself, and the crossing patterns try the suffixes that begin
// inside the root's path.
func (b *binding) miss(d *Denylist, lrel string) (string, bool) {
	if lrel == "." {
		return b.self, b.self != ""
	}
	if len(b.cross) == 0 || lrel == ".." || strings.HasPrefix(lrel, "../") {
		return "", false
	}
	segs := strings.Count(lrel, "/") + 1
	for _, c := range b.cross {
		m := &d.ms[c.i]
		for _, p := range c.prefixes {
			if m.segs > 0 && p.segs+segs != m.segs {
				continue
			}
			if m.kind == kindLiteral {
				// pat == p.s + "/" + lrel, without building the string.
				if len(m.pat) == len(p.s)+1+len(lrel) && strings.HasPrefix(m.pat, p.s) && m.pat[len(p.s)] == '/' && strings.HasSuffix(m.pat, lrel) {
					return m.orig, true
				}
				continue
			}
			if m.match(p.s + "/" + lrel) {
				return m.orig, true
			}
		}
	}
	return "", false
}

// excepted reports whether an exception names the clean rel (never the
// root itself, nothing outside it).
func (b *binding) excepted(rel string) bool {
	for i := range b.except {
		if e := &b.except[i]; strings.HasPrefix(rel, e.prefix) && e.names(rel) {
			return true
		}
	}
	return false
}

// names reports whether the exception names the clean rel (never the root
// itself, nothing outside it).
func (e *exception) names(rel string) bool {
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	return doublestar.MatchUnvalidated(e.glob, rel)
}

// exception is one exception glob with its literal prefix (the text before
// its first glob character), a cheap first test.
type exception struct {
	glob, prefix string
}

func newException(g string) exception {
	i := strings.IndexAny(g, `*?[]{}\`)
	if i < 0 {
		i = len(g)
	}
	// "a/**" also names "a" itself: the prefix ends before the slash.
	return exception{glob: g, prefix: strings.TrimRight(g[:i], "/")}
}

// Root returns the canonical root the list is bound to ("" = not bound).
func (d *Denylist) Root() string {
	if d == nil || d.bound == nil {
		return ""
	}
	return d.bound.root
}

// Exceptions returns the exceptions of the root the list is bound to.
func (d *Denylist) Exceptions() []string {
	if d == nil || d.bound == nil {
		return nil
	}
	out := make([]string, len(d.bound.except))
	for i, e := range d.bound.except {
		out[i] = e.glob
	}
	return out
}

// Crosses reports whether some pattern can match a path of the bound root
// through a suffix that begins inside the root's own path (the root lies
// in a .ssh, .aws, ... directory): a name-based search below the root
// (git pathspecs) cannot see those matches.
func (d *Denylist) Crosses() bool {
	return d != nil && d.bound != nil && (len(d.bound.cross) > 0 || d.bound.self != "")
}

// Fix says how a person takes rel, a secret path of the bound root, off
// the denylist: a policy secret exception for exactly that path. "" for an
// unbound list.
func (d *Denylist) Fix(rel string) string {
	if d == nil || d.bound == nil {
		return ""
	}
	return fmt.Sprintf("a person can take it off the denylist for this repository: policy secret_exceptions {repo: %s, paths: [%s]}", d.bound.root, rel)
}

// SecretError is the SECRET_PATH_DENIED refusal of what (an agent's
// words, such as `path "x"` or `argument "x"`) naming rel, which matches
// pattern pat of d: it names the pattern and, for a bound list, the fix.
func (d *Denylist) SecretError(what, p, rel, pat string) error {
	msg := what + " matches the secret pattern " + fmt.Sprintf("%q", pat)
	if fix := d.Fix(rel); fix != "" {
		msg += "; " + fix
	}
	return errs.New(errs.SecretPathDenied, "%s", msg).With("pattern", pat).With("path", p)
}
