package search

import (
	"bytes"
	"regexp/syntax"
	"unicode/utf8"
)

// byteRank approximates how often each byte occurs in source code and text
// (higher = more common). Literal search skips ahead with IndexByte on the
// literal's rarest byte instead of its first, which in code is often a
// common letter: the skip then runs at memchr speed.
var byteRank = func() (r [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 0x80:
			r[c] = 60
		case c < 0x20 && c != '\t':
			r[c] = 10
		default:
			r[c] = 100 // punctuation not listed below
		}
	}
	set := func(rank uint8, chars string) {
		for i := 0; i < len(chars); i++ {
			r[chars[i]] = rank
		}
	}
	set(130, "23456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	set(140, "kxqjzBFGHJKQUVWXYZ")
	set(150, "ETSRAINOCDLPM")
	set(170, "01\"=:;/*{}-\t")
	set(200, "pfgybwv.(),_")
	set(220, "lcduhm")
	set(235, "aoinsr")
	set(245, "t")
	set(250, "e")
	set(255, " ")
	return r
}()

// rarestByte returns the index in sep of its rarest byte by byteRank (the
// last of equals); 0 for an empty sep.
func rarestByte(sep []byte) int {
	k := 0
	for i := range sep {
		if byteRank[sep[i]] <= byteRank[sep[k]] {
			k = i
		}
	}
	return k
}

// indexRare is bytes.Index(s, sep) for k = rarestByte(sep): it skips to
// each occurrence of sep[k] with IndexByte and compares there, and hands
// over to bytes.Index when sep[k] turns out to be common in s.
func indexRare(s, sep []byte, k int) int {
	n := len(sep)
	if n < 2 || n > len(s) {
		return bytes.Index(s, sep)
	}
	c := sep[k]
	last := len(s) - n + k // the last position sep[k] can have
	fails := 0
	for i := k; i <= last; {
		j := bytes.IndexByte(s[i:last+1], c)
		if j < 0 {
			return -1
		}
		i += j
		start := i - k
		if bytes.Equal(s[start:start+n], sep) {
			return start
		}
		fails++
		i++
		if fails > 16+i>>6 { // sep[k] is not rare here
			if r := bytes.Index(s[i-k:], sep); r >= 0 {
				return i - k + r
			}
			return -1
		}
	}
	return -1
}

// indexFold is bytes.Index(lower(s), sep) for an ASCII-lowered sep, where
// lower lowers ASCII letters only, and k = rarestByte(sep): it skips to each
// occurrence of sep[k] in either case and compares there with ASCII case
// folding, so s is neither copied nor lowered.
func indexFold(s, sep []byte, k int) int {
	n := len(sep)
	if n == 0 {
		return 0
	}
	if n > len(s) {
		return -1
	}
	lo, up := sep[k], sep[k]
	if 'a' <= lo && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	last := len(s) - n + k   // the last position sep[k] can have
	nextLo, nextUp := -2, -2 // next occurrence of each at or after i; -1 = none left, -2 = not looked for
	for i := k; i <= last; {
		if nextLo != -1 && nextLo < i {
			nextLo = indexByteAt(s[:last+1], i, lo)
		}
		if nextUp != -1 && nextUp < i {
			nextUp = indexByteAt(s[:last+1], i, up)
		}
		switch {
		case nextLo == -1 && nextUp == -1:
			return -1
		case nextLo == -1 || nextUp != -1 && nextUp < nextLo:
			i = nextUp
		default:
			i = nextLo
		}
		start := i - k
		if equalFoldLower(s[start:start+n], sep) {
			return start
		}
		i++
	}
	return -1
}

// indexByteAt returns the index of c in s at or after from, or -1.
func indexByteAt(s []byte, from int, c byte) int {
	if from >= len(s) {
		return -1
	}
	if j := bytes.IndexByte(s[from:], c); j >= 0 {
		return from + j
	}
	return -1
}

// equalFoldLower reports whether a, ASCII-lowered, equals lower.
func equalFoldLower(a, lower []byte) bool {
	for i, c := range a {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// requiredLiteral returns bytes that every match of re contains (the rarest
// such literal by byteRank, the longer of equals), or nil: scan then finds
// candidate lines with indexRare and confirms each with the line regexp,
// instead of running the regexp over every byte. Case-folded literals and
// literals with U+FFFD (which matches any invalid byte) give nil.
func requiredLiteral(re *syntax.Regexp) []byte { return requiredBy(re, exactLiteral) }

// exactLiteral is the bytes of a literal node matched as written, or nil
// (a case-folded literal, or one with U+FFFD).
func exactLiteral(re *syntax.Regexp) []byte {
	if re.Flags&syntax.FoldCase != 0 {
		return nil
	}
	var b []byte
	for _, r := range re.Rune {
		if r == utf8.RuneError || !utf8.ValidRune(r) {
			return nil
		}
		b = utf8.AppendRune(b, r)
	}
	return b
}

// requiredBy walks re for a literal every match contains, as leaf reads
// a literal node: through captures, pluses and repeats of at least one,
// and, in a concatenation, the rarest of its parts' (byteRank).
func requiredBy(re *syntax.Regexp, leaf func(*syntax.Regexp) []byte) []byte {
	switch re.Op {
	case syntax.OpLiteral:
		return leaf(re)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredBy(re.Sub[0], leaf)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredBy(re.Sub[0], leaf)
		}
	case syntax.OpConcat:
		var best []byte
		for _, s := range re.Sub {
			if l := requiredBy(s, leaf); len(l) > 0 && (best == nil || rarer(l, best)) {
				best = l
			}
		}
		return best
	}
	return nil
}

// requiredFoldLiteral is requiredLiteral for the case-folding literals of
// re: an ASCII literal every match contains in some case, ASCII-lowered
// (`(?i)func\s+\w+Handler` gives "handler"), or nil. Only literals all
// of whose runes are ASCII qualify: the scan then finds candidate lines
// with indexFold, which folds ASCII letters only (k and s, whose orbits
// hold non-ASCII runes, need all-ASCII data: see matcher.foldKS).
func requiredFoldLiteral(re *syntax.Regexp) []byte { return requiredBy(re, foldLiteral) }

// foldLiteral is the ASCII-lowered bytes of a case-folding literal node
// whose runes are all ASCII, or nil.
func foldLiteral(re *syntax.Regexp) []byte {
	if re.Flags&syntax.FoldCase == 0 {
		return nil
	}
	b := make([]byte, 0, len(re.Rune))
	for _, r := range re.Rune {
		if r >= utf8.RuneSelf {
			return nil
		}
		b = append(b, foldASCII(byte(r)))
	}
	return b
}

// rarer reports whether a is a better literal to search for than b.
func rarer(a, b []byte) bool {
	ra, rb := byteRank[a[rarestByte(a)]], byteRank[b[rarestByte(b)]]
	return ra < rb || ra == rb && len(a) > len(b)
}
