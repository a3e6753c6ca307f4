// Package suggest finds the name a mistyped one most likely meant, for
// "did you mean ...?" in error messages (unknown fields, operations,
// commands).
package suggest

import (
	"slices"
	"strings"
)

// Distance is the Levenshtein distance of a and b (bytes).
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Field returns the member of fields that the unknown field k most likely
// means, or "" for none. The tool's own fields are the only candidates,
// tried in this order:
//
//  1. k in another case (Path for path);
//  2. a synonym: synonyms maps a name agents guess to the fields it may
//     mean (first listed first), and each pair also counts the other way
//     round (state for status when synonyms says status -> state): a
//     meaning beats a spelling, so run_stage {state} is status, not stage;
//  3. the field fewest edits away, if within max(1, len(k)/3) edits (ties:
//     the first in fields);
//  4. a field that contains k, or is contained in it (k of 3 bytes or
//     more).
func Field(k string, fields []string, synonyms map[string][]string) string {
	lk := strings.ToLower(k)
	for _, f := range fields {
		if strings.ToLower(f) == lk {
			return f
		}
	}
	for _, s := range synonyms[lk] {
		if slices.Contains(fields, s) {
			return s
		}
	}
	for _, f := range fields {
		if slices.Contains(synonyms[f], lk) {
			return f
		}
	}
	best, bestD := "", 0
	for _, f := range fields {
		if d := Distance(lk, f); best == "" || d < bestD {
			best, bestD = f, d
		}
	}
	if best != "" && bestD <= max(1, len(lk)/3) {
		return best
	}
	if len(lk) >= 3 {
		for _, f := range fields {
			if strings.Contains(f, lk) || strings.Contains(lk, f) {
				return f
			}
		}
	}
	return ""
}

// Nearest returns up to n of names that name (unknown) most likely means,
// nearest first; none when nothing is close. A name is close when it is a
// small edit away (at most max(2, len(name)/3) edits), when one of the two
// contains the other (name of 3 bytes or more), or when they share a word
// of 3 bytes or more (words split at _ - . and spaces: run_shell and
// run_command share run). Name itself is left out; the same name in
// another case is 0 edits away. Edits rank first (fewest first), then
// containment, then shared words; ties go by the names' order. Case is
// ignored.
func Nearest(name string, names []string, n int) []string {
	if n <= 0 {
		return nil
	}
	ln := strings.ToLower(strings.TrimSpace(name))
	type cand struct {
		name        string
		class, dist int
	}
	var cs []cand
	for _, c := range names {
		if c == name {
			continue // name itself is not a suggestion
		}
		lc := strings.ToLower(c)
		d := Distance(ln, lc)
		switch {
		case d <= max(2, len(ln)/3):
			cs = append(cs, cand{c, 0, d})
		case len(ln) >= 3 && (strings.Contains(lc, ln) || strings.Contains(ln, lc)):
			cs = append(cs, cand{c, 1, d})
		case shareWord(ln, lc):
			cs = append(cs, cand{c, 2, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.class != b.class {
			return a.class - b.class
		}
		return a.dist - b.dist
	})
	out := make([]string, 0, min(n, len(cs)))
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// shareWord reports whether a and b have a word of 3 bytes or more in
// common.
func shareWord(a, b string) bool {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' })
	}
	bw := split(b)
	for _, w := range split(a) {
		if len(w) >= 3 && slices.Contains(bw, w) {
			return true
		}
	}
	return false
}
