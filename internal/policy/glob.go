package policy

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// globKind selects the cheapest correct way to evaluate a paths glob. The
// common shapes of policy globs ("go.sum", "migrations/**", "**/*.lock") are
// answered with string comparisons; everything else goes to doublestar.
type globKind uint8

const (
	globGeneral  globKind = iota // doublestar.Match
	globLiteral                  // no syntax: equality
	globAll                      // "**": everything
	globTree                     // "LIT/**": LIT itself and everything under it
	globBase                     // "**/LIT": base name equality
	globBaseSuff                 // "**/*LIT": base name suffix
	globBasePref                 // "**/LIT*": base name prefix
	globBaseSeg                  // "**/SEG": doublestar on the base name only
)

type glob struct {
	kind globKind
	pat  string // the validated pattern (globGeneral) or the single segment (globBaseSeg)
	lit  string
}

// hasGlobMeta reports whether s contains doublestar syntax.
func hasGlobMeta(s string) bool { return strings.ContainsAny(s, `*?[]{}\`) }

// compileGlob classifies a pattern that doublestar.ValidatePattern accepted.
func compileGlob(g string) glob {
	switch {
	case g == "**":
		return glob{kind: globAll}
	case !hasGlobMeta(g):
		return glob{kind: globLiteral, lit: g}
	}
	if lit, ok := strings.CutSuffix(g, "/**"); ok && lit != "" && !hasGlobMeta(lit) {
		return glob{kind: globTree, lit: lit}
	}
	if seg, ok := strings.CutPrefix(g, "**/"); ok && seg != "" && !strings.Contains(seg, "/") &&
		!strings.Contains(seg, "**") && !strings.ContainsAny(seg, `{}\`) {
		switch {
		case !hasGlobMeta(seg):
			return glob{kind: globBase, lit: seg}
		case strings.HasPrefix(seg, "*") && !hasGlobMeta(seg[1:]):
			return glob{kind: globBaseSuff, lit: seg[1:]}
		case strings.HasSuffix(seg, "*") && !hasGlobMeta(seg[:len(seg)-1]):
			return glob{kind: globBasePref, lit: seg[:len(seg)-1]}
		default:
			return glob{kind: globBaseSeg, pat: seg}
		}
	}
	return glob{kind: globGeneral, pat: g}
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// match reports whether the cleaned relative path p matches, exactly as
// doublestar.Match would.
func (g *glob) match(p string) bool {
	switch g.kind {
	case globLiteral:
		return p == g.lit
	case globAll:
		return true
	case globTree:
		return p == g.lit || len(p) > len(g.lit) && p[len(g.lit)] == '/' && strings.HasPrefix(p, g.lit)
	case globBase:
		return baseName(p) == g.lit
	case globBaseSuff:
		return strings.HasSuffix(baseName(p), g.lit)
	case globBasePref:
		return strings.HasPrefix(baseName(p), g.lit)
	case globBaseSeg:
		return doublestar.MatchUnvalidated(g.pat, baseName(p))
	default:
		return doublestar.MatchUnvalidated(g.pat, p)
	}
}
