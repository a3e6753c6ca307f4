package search

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Trigrams. A file is indexed by the set of its trigrams (three
// consecutive bytes, exactly as they are: "Res" and "res" are two
// trigrams), and a query becomes a boolean expression of trigrams every
// matching file's set satisfies (the plan): the index narrows the files
// to read, the matcher then decides. A plan may let through files that do
// not match, never the other way round. A case-sensitive query asks for
// its trigrams as written, so `Resolve\w+Index` does not pick every file
// that mentions a resolver and an index; a query that folds case asks
// for any case variant of each (the OR of up to eight trigrams), which
// picks the files a case-folded index would.

// trigram is three bytes, big-endian, in the low 24 bits.
type trigram = uint32

func foldASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func makeTrigram(a, b, c byte) trigram {
	return uint32(a)<<16 | uint32(b)<<8 | uint32(c)
}

// caseVariants appends to out every trigram that equals t but for the
// case of its ASCII letters (t itself included): up to eight.
func caseVariants(t trigram, out []trigram) []trigram {
	start := len(out)
	out = append(out, t)
	for shift := 0; shift < 24; shift += 8 {
		c := byte(t >> shift)
		var other byte
		switch {
		case 'a' <= c && c <= 'z':
			other = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			other = c - 'A' + 'a'
		default:
			continue
		}
		for _, v := range out[start:] {
			out = append(out, v&^(0xff<<shift)|uint32(other)<<shift)
		}
	}
	return out
}

// trigramSet collects the distinct trigrams of files, one at a time, in
// an open-addressing table sized to the file (reused across files).
type trigramSet struct {
	table []uint32 // noTrigram marks a free slot
	out   []trigram
}

// noTrigram is no folded trigram (they use 24 bits).
const noTrigram = ^uint32(0)

// of returns the distinct trigrams of data, in no order; the slice is
// reused by the next call.
func (s *trigramSet) of(data []byte) []trigram {
	s.out = s.out[:0]
	if len(data) < 3 {
		return s.out
	}
	size := 64
	for size < 2*(len(data)-2) && size < 1<<22 {
		size <<= 1
	}
	if len(s.table) < size {
		s.table = make([]uint32, size)
		for i := range s.table {
			s.table[i] = noTrigram
		}
	}
	table := s.table[:size]
	mask := uint32(size - 1)
	t := uint32(data[0])<<8 | uint32(data[1])
	for _, c := range data[2:] {
		t = (t<<8 | uint32(c)) & 0xffffff
		for h := (t * 0x9E3779B1) >> 8 & mask; ; h = (h + 1) & mask {
			if table[h] == t {
				break
			}
			if table[h] == noTrigram {
				if len(s.out) >= size/2 {
					// The table is half full (a file of 2^22 bytes or
					// more): finish by sorting.
					return s.slow(data)
				}
				table[h] = t
				s.out = append(s.out, t)
				break
			}
		}
	}
	for _, t := range s.out {
		for h := (t * 0x9E3779B1) >> 8 & mask; ; h = (h + 1) & mask {
			if table[h] == noTrigram {
				break
			}
			table[h] = noTrigram
		}
	}
	if cap(s.table) > 1<<16 && len(data) < 1<<14 {
		s.table = nil // do not keep a large table for small files
	}
	return s.out
}

// slow collects the distinct trigrams of a very large file by sorting.
func (s *trigramSet) slow(data []byte) []trigram {
	for i := range s.table {
		s.table[i] = noTrigram
	}
	s.out = s.out[:0]
	t := uint32(data[0])<<8 | uint32(data[1])
	for _, c := range data[2:] {
		t = (t<<8 | uint32(c)) & 0xffffff
		s.out = append(s.out, t)
	}
	slices.Sort(s.out)
	s.out = slices.Compact(s.out)
	return s.out
}

// qop is the operator of a plan node.
type qop uint8

const (
	qAll  qop = iota // every file
	qNone            // no file
	qAnd             // every trigram and every sub
	qOr              // some trigram or some sub
)

// tquery is a plan: a boolean expression over trigrams.
type tquery struct {
	op   qop
	tris []trigram // sorted, distinct
	sub  []*tquery
}

var (
	allQuery  = &tquery{op: qAll}
	noneQuery = &tquery{op: qNone}
)

// maxPlanTrigrams bounds a plan's trigram lookups: a larger plan is
// replaced by "every file" where it grows past it.
const maxPlanTrigrams = 512

func (q *tquery) size() int {
	n := len(q.tris)
	for _, s := range q.sub {
		n += s.size()
	}
	return n
}

// and returns q AND r.
func (q *tquery) and(r *tquery) *tquery { return combine(qAnd, q, r) }

// or returns q OR r.
func (q *tquery) or(r *tquery) *tquery { return combine(qOr, q, r) }

// combine builds q op r, flattening nested nodes of the same operator and
// absorbing qAll and qNone. It never modifies q or r.
func combine(op qop, q, r *tquery) *tquery {
	unit, zero := qAll, qNone // AND: All is the unit, None absorbs
	if op == qOr {
		unit, zero = qNone, qAll
	}
	switch {
	case q.op == zero || r.op == zero:
		return &tquery{op: zero}
	case q.op == unit:
		return r
	case r.op == unit:
		return q
	}
	out := &tquery{op: op}
	for _, x := range []*tquery{q, r} {
		if x.op == op || len(x.tris)+len(x.sub) == 1 && len(x.sub) == 0 {
			out.tris = append(out.tris, x.tris...)
			out.sub = append(out.sub, x.sub...)
		} else {
			out.sub = append(out.sub, x)
		}
	}
	slices.Sort(out.tris)
	out.tris = slices.Compact(out.tris)
	if out.size() > maxPlanTrigrams {
		if op == qAnd {
			// Any part of an AND is a weaker plan that still holds.
			return q
		}
		return allQuery
	}
	return out
}

// eval reports whether a file with the trigram set has (has(t) is
// membership) satisfies q.
func (q *tquery) eval(has func(trigram) bool) bool {
	switch q.op {
	case qAll:
		return true
	case qNone:
		return false
	case qAnd:
		for _, t := range q.tris {
			if !has(t) {
				return false
			}
		}
		for _, s := range q.sub {
			if !s.eval(has) {
				return false
			}
		}
		return true
	default:
		for _, t := range q.tris {
			if has(t) {
				return true
			}
		}
		for _, s := range q.sub {
			if s.eval(has) {
				return true
			}
		}
		return false
	}
}

func (q *tquery) String() string {
	switch q.op {
	case qAll:
		return "+"
	case qNone:
		return "-"
	}
	var parts []string
	for _, t := range q.tris {
		parts = append(parts, strings.ReplaceAll(string([]byte{byte(t >> 16), byte(t >> 8), byte(t)}), "\n", `\n`))
	}
	for _, s := range q.sub {
		parts = append(parts, "("+s.String()+")")
	}
	sep := " "
	if q.op == qOr {
		sep = "|"
	}
	return strings.Join(parts, sep)
}

// literalPlan is the plan of a literal: all its trigrams (every file when
// it is shorter than three bytes).
func literalPlan(lit []byte) *tquery {
	return trigramsOf([]string{string(lit)})
}

// trigramsOf is the plan "the file contains one of these strings": the OR
// over the strings of the AND of their trigrams; every file when one of
// them is shorter than three bytes (nothing can be required). Trigrams
// every string has are asked once, beside the OR (A∧B ∨ A∧C = A∧(B∨C)):
// the strings a class makes ("aHandler", "bHandler", …) share all their
// trigrams but one, and the plan stays small enough to be kept whole.
func trigramsOf(set []string) *tquery {
	if len(set) == 0 {
		return noneQuery
	}
	each := make([][]trigram, len(set))
	for k, s := range set {
		if len(s) < 3 {
			return allQuery
		}
		var tris []trigram
		for i := 0; i+3 <= len(s); i++ {
			tris = append(tris, makeTrigram(s[i], s[i+1], s[i+2]))
		}
		slices.Sort(tris)
		each[k] = slices.Compact(tris)
	}
	common := slices.Clone(each[0])
	for _, tris := range each[1:] {
		common = slices.DeleteFunc(common, func(t trigram) bool {
			_, found := slices.BinarySearch(tris, t)
			return !found
		})
	}
	or := noneQuery
	for _, tris := range each {
		rest := slices.DeleteFunc(tris, func(t trigram) bool {
			_, found := slices.BinarySearch(common, t)
			return found
		})
		if len(rest) == 0 {
			or = allQuery // this string needs only the common trigrams
			break
		}
		or = or.or(&tquery{op: qAnd, tris: rest})
	}
	if len(common) == 0 {
		return or
	}
	return (&tquery{op: qAnd, tris: common}).and(or)
}

// regexpPlan returns the plan of a regular expression as the matcher
// runs it (line by line, on raw bytes where an invalid byte reads as
// U+FFFD). The analysis follows Russ Cox's "Regular Expression Matching
// with a Trigram Index": for each subexpression, the exact set of strings
// it matches when small, else sets of prefixes and suffixes of its
// matches, and a plan its matches satisfy. An expression with more than
// a few case-folding letters is analyzed over ASCII-lowered strings, each
// trigram of its plan then standing for all its case variants (see
// foldedPlan); any other over its exact bytes.
func regexpPlan(re *syntax.Regexp) *tquery {
	if foldedLetters(re) > maxFoldedLetters {
		return foldedPlan(analyzedPlan(re, true))
	}
	return analyzedPlan(re, false)
}

// maxFoldedLetters is how many case-folding letters an expression may
// have and still be analyzed over exact bytes, each such letter then
// being the set of its cases: `[Rr]esolve` (which the parser makes a
// folding "r") keeps an exact plan, while (?i) on a word, whose case
// variants would multiply past the analysis' set bounds, is analyzed
// lowered.
const maxFoldedLetters = 2

// foldedLetters counts the runes of re's case-folding literals that have
// other cases.
func foldedLetters(re *syntax.Regexp) int {
	n := 0
	if re.Flags&syntax.FoldCase != 0 && re.Op == syntax.OpLiteral {
		for _, r := range re.Rune {
			if unicode.SimpleFold(r) != r {
				n++
			}
		}
	}
	for _, s := range re.Sub {
		n += foldedLetters(s)
	}
	return n
}

// analyzedPlan is the plan of re from its analysis; with fold, its
// trigrams are ASCII-lowered.
func analyzedPlan(re *syntax.Regexp, fold bool) *tquery {
	info := analyze(re, fold)
	info.simplify(true)
	q := info.match
	if info.exact != nil {
		return q.and(trigramsOf(info.exact))
	}
	return q.and(trigramsOf(info.prefix)).and(trigramsOf(info.suffix))
}

// foldedPlan turns a plan over ASCII-lowered trigrams into one over the
// index's exact trigrams: each trigram holding a letter becomes the OR of
// its case variants. It is built directly rather than through combine,
// whose size bound would drop parts of the plan (the variants multiply
// it by at most eight).
func foldedPlan(q *tquery) *tquery {
	if q.op != qAnd && q.op != qOr {
		return q
	}
	out := &tquery{op: q.op}
	var vars []trigram
	for _, t := range q.tris {
		vars = caseVariants(t, vars[:0])
		switch {
		case len(vars) == 1 || q.op == qOr:
			out.tris = append(out.tris, vars...)
		default:
			out.sub = append(out.sub, &tquery{op: qOr, tris: slices.Sorted(slices.Values(vars))})
		}
	}
	slices.Sort(out.tris)
	out.tris = slices.Compact(out.tris)
	for _, s := range q.sub {
		out.sub = append(out.sub, foldedPlan(s))
	}
	return out
}

// Limits of the analysis: exact sets of at most maxExact strings,
// prefix and suffix sets of at most maxSet (maxClassSet single runes),
// classes of at most maxClass runes expanded (a larger one is "any
// character").
const (
	maxExact    = 7
	maxSet      = 20
	maxClassSet = 64
	maxClass    = 100
)

// reInfo summarizes a subexpression. Strings are byte strings, with ASCII
// letters folded to lower case when the expression folds case.
type reInfo struct {
	canEmpty bool
	// exact, when not nil, is the set of every string the
	// subexpression matches.
	exact []string
	// Otherwise every match starts with a string of prefix and ends
	// with one of suffix ("" = no knowledge).
	prefix, suffix []string
	match          *tquery // a plan every match satisfies
}

func anyMatchInfo() reInfo {
	return reInfo{canEmpty: true, prefix: []string{""}, suffix: []string{""}, match: allQuery}
}

func anyCharInfo() reInfo {
	return reInfo{prefix: []string{""}, suffix: []string{""}, match: allQuery}
}

func emptyInfo() reInfo {
	return reInfo{canEmpty: true, exact: []string{""}, match: allQuery}
}

func noMatchInfo() reInfo { return reInfo{match: noneQuery} }

// foldString lowers the ASCII letters of s.
func foldString(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = foldASCII(c)
	}
	return string(b)
}

// runeSet returns the exact info of a set of runes: each rune's UTF-8
// encoding (ASCII-lowered when fold is set). A set holding U+FFFD, which
// stands for any invalid byte, or too many runes is any character.
func runeSet(ranges []rune, fold bool) reInfo {
	n := 0
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo <= utf8.RuneError && utf8.RuneError <= hi || hi > unicode.MaxRune {
			return anyCharInfo()
		}
		n += int(hi-lo) + 1
		if n > maxClass {
			return anyCharInfo()
		}
	}
	if n == 0 {
		return noMatchInfo()
	}
	var set []string
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1]; r++ {
			if fold {
				set = append(set, foldString(string(r)))
			} else {
				set = append(set, string(r))
			}
		}
	}
	slices.Sort(set)
	return reInfo{exact: slices.Compact(set), match: allQuery}
}

// foldOrbit returns r and every rune that case-folds to it, as ranges.
func foldOrbit(r rune) []rune {
	rs := []rune{r, r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		rs = append(rs, f, f)
	}
	return rs
}

// analyze summarizes re; fold: strings are ASCII-lowered (see regexpPlan).
func analyze(re *syntax.Regexp, fold bool) reInfo {
	var info reInfo
	switch re.Op {
	case syntax.OpNoMatch:
		return noMatchInfo()
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return emptyInfo()
	case syntax.OpLiteral:
		info = emptyInfo()
		for _, r := range re.Rune {
			var ri reInfo
			switch {
			case r == utf8.RuneError || !utf8.ValidRune(r):
				ri = anyCharInfo() // U+FFFD matches any invalid byte
			case re.Flags&syntax.FoldCase != 0:
				ri = runeSet(foldOrbit(r), fold)
			case fold:
				ri = reInfo{exact: []string{foldString(string(r))}, match: allQuery}
			default:
				ri = reInfo{exact: []string{string(r)}, match: allQuery}
			}
			info = concat(info, ri)
		}
		return info
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return anyCharInfo()
	case syntax.OpCapture:
		return analyze(re.Sub[0], fold)
	case syntax.OpConcat:
		info = emptyInfo()
		for _, s := range re.Sub {
			info = concat(info, analyze(s, fold))
		}
		return info
	case syntax.OpAlternate:
		info = noMatchInfo()
		for i, s := range re.Sub {
			if i == 0 {
				info = analyze(s, fold)
				continue
			}
			info = alternate(info, analyze(s, fold))
		}
		return info
	case syntax.OpQuest:
		return alternate(analyze(re.Sub[0], fold), emptyInfo())
	case syntax.OpStar:
		return anyMatchInfo()
	case syntax.OpRepeat:
		if re.Min == 0 {
			return anyMatchInfo()
		}
		fallthrough
	case syntax.OpPlus:
		// At least one match of the subexpression: its prefixes,
		// suffixes and plan hold, its exact set no longer does.
		info = analyze(re.Sub[0], fold)
		if info.exact != nil {
			info.match = info.match.and(trigramsOf(info.exact))
			info.prefix, info.suffix = info.exact, slices.Clone(info.exact)
			info.exact = nil
		}
		info.simplify(false)
		return info
	case syntax.OpCharClass:
		return runeSet(re.Rune, fold)
	}
	return anyMatchInfo() // an operator this analysis does not know: no knowledge
}

// cross returns every concatenation of a string of x with one of y.
func cross(x, y []string) []string {
	var out []string
	for _, a := range x {
		for _, b := range y {
			out = append(out, a+b)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func union(x, y []string) []string {
	out := append(slices.Clone(x), y...)
	slices.Sort(out)
	return slices.Compact(out)
}

// singleRunes reports whether every string of set is at most one rune.
func singleRunes(set []string) bool {
	for _, s := range set {
		if utf8.RuneCountInString(s) > 1 {
			return false
		}
	}
	return true
}

func minLen(set []string) int {
	if len(set) == 0 {
		return 0
	}
	m := len(set[0])
	for _, s := range set[1:] {
		m = min(m, len(s))
	}
	return m
}

func concat(x, y reInfo) reInfo {
	xy := reInfo{match: x.match.and(y.match), canEmpty: x.canEmpty && y.canEmpty}
	if x.exact != nil && y.exact != nil {
		xy.exact = cross(x.exact, y.exact)
	} else {
		if x.exact != nil {
			xy.prefix = cross(x.exact, y.prefix)
		} else {
			xy.prefix = x.prefix
			if x.canEmpty {
				xy.prefix = union(xy.prefix, y.prefix)
			}
		}
		if y.exact != nil {
			xy.suffix = cross(x.suffix, y.exact)
		} else {
			xy.suffix = y.suffix
			if y.canEmpty {
				xy.suffix = union(xy.suffix, x.suffix)
			}
		}
		// A match of xy holds a suffix of x's match followed by a
		// prefix of y's: one of those strings is in the file (at most
		// maxSet² of them: a class of 63 bytes before a literal's prefix
		// is 63).
		if x.exact == nil && y.exact == nil && len(x.suffix)*len(y.prefix) <= maxSet*maxSet &&
			minLen(x.suffix)+minLen(y.prefix) >= 3 {
			xy.match = xy.match.and(trigramsOf(cross(x.suffix, y.prefix)))
		}
	}
	xy.simplify(false)
	return xy
}

func alternate(x, y reInfo) reInfo {
	var xy reInfo
	switch {
	case x.exact != nil && y.exact != nil:
		xy.exact = union(x.exact, y.exact)
	case x.exact != nil:
		xy.prefix, xy.suffix = union(x.exact, y.prefix), union(x.exact, y.suffix)
		x.match = x.match.and(trigramsOf(x.exact))
	case y.exact != nil:
		xy.prefix, xy.suffix = union(x.prefix, y.exact), union(x.suffix, y.exact)
		y.match = y.match.and(trigramsOf(y.exact))
	default:
		xy.prefix, xy.suffix = union(x.prefix, y.prefix), union(x.suffix, y.suffix)
	}
	xy.canEmpty = x.canEmpty || y.canEmpty
	xy.match = x.match.or(y.match)
	xy.simplify(false)
	return xy
}

// simplify keeps the sets small: an exact set that grew too large, or
// whose strings are long enough to give trigrams, moves into the plan and
// leaves its ends as prefixes and suffixes; prefix and suffix sets that
// grew too large move into the plan and are cut shorter.
func (info *reInfo) simplify(force bool) {
	if info.exact != nil {
		if len(info.exact) > maxExact || minLen(info.exact) >= 4 || force && minLen(info.exact) >= 3 {
			info.match = info.match.and(trigramsOf(info.exact))
			var pre, suf []string
			for _, s := range info.exact {
				if len(s) < 3 {
					pre, suf = append(pre, s), append(suf, s)
				} else {
					pre, suf = append(pre, s[:2]), append(suf, s[len(s)-2:])
				}
			}
			info.prefix, info.suffix = union(pre, nil), union(suf, nil)
			info.exact = nil
		}
	}
	if info.exact == nil {
		info.prefix = info.simplifySet(info.prefix, false)
		info.suffix = info.simplifySet(info.suffix, true)
	}
}

// simplifySet returns set cut to at most maxSet strings: the plan first
// takes what the full set says, then the strings are shortened (keeping
// their ends for a suffix set, their starts for a prefix set). A set of
// single characters (a class such as \w: 63 of them, 39 once case is
// folded, ſ and the Kelvin sign included) is kept up to maxClassSet: no shorter strings could stand for it, and
// crossed with a literal next to it (`\w+Handler`) it gives the trigrams
// across the junction ("rHa", "_ha"…), which common words alone lack.
func (info *reInfo) simplifySet(set []string, suffix bool) []string {
	if len(set) <= maxSet || len(set) <= maxClassSet && singleRunes(set) {
		return set
	}
	info.match = info.match.and(trigramsOf(set))
	for n := 2; n >= 0 && len(set) > maxSet; n-- {
		var cut []string
		for _, s := range set {
			if len(s) > n {
				if suffix {
					s = s[len(s)-n:]
				} else {
					s = s[:n]
				}
			}
			cut = append(cut, s)
		}
		set = union(cut, nil)
	}
	return set
}

// plan returns the trigram plan of the matcher's query.
func (m *matcher) plan() *tquery {
	if m.lit != nil {
		return literalPlan(m.lit)
	}
	return regexpPlan(m.tree)
}
