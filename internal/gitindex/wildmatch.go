package gitindex

// A glob pattern as git matches .gitattributes (and .gitignore) patterns
// against paths: `?`, `*`, `**` as a whole path component, bracket
// expressions with ranges, `!`/`^` negation, backslash escapes and POSIX
// classes, optionally ASCII case-insensitive (core.ignorecase). The
// behaviour follows git's gitignore(5) and gitattributes(5) and is checked
// against git itself (attr_test.go asks `git check-attr`), including the
// corners a user rarely meets: a bracket that is never closed or names an
// unknown class matches nothing, a pattern ending in a lone backslash
// matches nothing, and under case folding an upper-case letter listed in a
// bracket or escaped matches nothing while ranges and [:upper:] fold.

// globOp is the kind of one pattern token.
type globOp uint8

const (
	globLit      globOp = iota // one byte (compared case-folded when asked)
	globAny                    // ?: any byte but '/' (in path mode)
	globClass                  // [...]: a byte of a set
	globStar                   // *: a run of bytes without '/' (in path mode)
	globStarDirs               // **/ as a component: nothing, or a run ending in '/'
	globStarAll                // ** as the last component: everything left
	globNever                  // matches nothing (a malformed pattern)
)

type globTok struct {
	op  globOp
	c   byte
	set *[256]bool
}

// glob is a compiled pattern.
type glob struct {
	toks     []globTok
	fold     bool
	pathMode bool
	never    bool
	stars    int
}

// compileGlob compiles pattern p. pathMode makes '/' special (`*`, `?`
// and brackets never match it; `**` components cross directories), as
// for patterns that contain a slash; fold compares ASCII letters
// case-insensitively.
func compileGlob(p string, pathMode, fold bool) *glob {
	g := &glob{fold: fold, pathMode: pathMode}
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '\\':
			if i+1 >= len(p) || (fold && 'A' <= p[i+1] && p[i+1] <= 'Z') {
				// A lone backslash at the end matches nothing; so does
				// an escaped upper-case letter under case folding (git
				// folds the text, not the escaped letter).
				g.never = true
				return g
			}
			g.lit(p[i+1])
			i += 2
		case '?':
			g.toks = append(g.toks, globTok{op: globAny})
			i++
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			run := j - i
			if pathMode && run >= 2 && (i == 0 || p[i-1] == '/') {
				switch {
				case j == len(p):
					g.toks = append(g.toks, globTok{op: globStarAll})
					i = j
					continue
				case p[j] == '/':
					g.toks = append(g.toks, globTok{op: globStarDirs})
					g.stars++
					i = j + 1
					continue
				case p[j] == '\\' && j+1 < len(p) && p[j+1] == '/':
					g.toks = append(g.toks, globTok{op: globStarDirs})
					g.stars++
					i = j + 2
					continue
				}
			}
			g.toks = append(g.toks, globTok{op: globStar})
			g.stars++
			i = j
		case '[':
			set, n, ok := compileClass(p[i+1:], pathMode, fold)
			if !ok {
				g.never = true
				return g
			}
			g.toks = append(g.toks, globTok{op: globClass, set: set})
			i += 1 + n
		default:
			g.lit(c)
			i++
		}
	}
	return g
}

func (g *glob) lit(c byte) {
	if g.fold {
		c = lower(c)
	}
	g.toks = append(g.toks, globTok{op: globLit, c: c})
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// compileClass reads a bracket expression whose '[' is just before s and
// returns the bytes it accepts (indexed by the text byte as read) and how
// many bytes of s it took, up to and including the closing ']'. ok is
// false for a bracket that is never closed or names an unknown class.
func compileClass(s string, pathMode, fold bool) (*[256]bool, int, bool) {
	i := 0
	at := func(k int) byte {
		if k < len(s) {
			return s[k]
		}
		return 0
	}
	negated := false
	if c := at(i); c == '!' || c == '^' {
		negated = true
		i++
	}
	// Each member is a predicate over the (folded) text byte.
	var lits []byte
	type span struct{ lo, hi byte }
	var spans []span
	var classes []string
	var prev byte
	first := true
	for {
		c := at(i)
		if c == 0 {
			return nil, 0, false
		}
		if c == ']' && !first {
			i++
			break
		}
		first = false
		switch {
		case c == '\\':
			i++
			c = at(i)
			if c == 0 {
				return nil, 0, false
			}
			lits = append(lits, c)
			prev = c
			i++
		case c == '-' && prev != 0 && at(i+1) != 0 && at(i+1) != ']':
			i++
			hi := at(i)
			if hi == '\\' {
				i++
				hi = at(i)
				if hi == 0 {
					return nil, 0, false
				}
			}
			spans = append(spans, span{prev, hi})
			prev = 0
			i++
		case c == '[' && at(i+1) == ':':
			start := i + 2
			end := start
			for at(end) != 0 && at(end) != ']' {
				end++
			}
			if at(end) == 0 {
				return nil, 0, false
			}
			if end-start-1 < 0 || s[end-1] != ':' {
				// No ":]": the '[' is an ordinary member.
				lits = append(lits, '[')
				prev = '['
				i++
				continue
			}
			name := s[start : end-1]
			if !knownClass(name) {
				return nil, 0, false
			}
			classes = append(classes, name)
			prev = 0
			i = end + 1
		default:
			lits = append(lits, c)
			prev = c
			i++
		}
	}
	set := new([256]bool)
	for b := 0; b < 256; b++ {
		t := byte(b)
		if fold {
			t = lower(t)
		}
		in := false
		for _, l := range lits {
			in = in || t == l
		}
		for _, sp := range spans {
			in = in || (sp.lo <= t && t <= sp.hi)
			if fold && 'a' <= t && t <= 'z' {
				u := upper(t)
				in = in || (sp.lo <= u && u <= sp.hi)
			}
		}
		for _, name := range classes {
			in = in || inClass(name, t, fold)
		}
		set[b] = in != negated && !(pathMode && b == '/')
	}
	return set, i, true
}

func knownClass(name string) bool {
	switch name {
	case "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "xdigit":
		return true
	}
	return false
}

// inClass reports whether byte t (folded when fold) is in the POSIX class
// name, in the C locale.
func inClass(name string, t byte, fold bool) bool {
	isUpper := 'A' <= t && t <= 'Z'
	isLower := 'a' <= t && t <= 'z'
	isDigit := '0' <= t && t <= '9'
	isAlpha := isUpper || isLower
	isPrint := 0x20 <= t && t <= 0x7e
	isSpace := t == ' ' || ('\t' <= t && t <= '\r')
	switch name {
	case "alnum":
		return isAlpha || isDigit
	case "alpha":
		return isAlpha
	case "blank":
		return t == ' ' || t == '\t'
	case "cntrl":
		return t < 0x20 || t == 0x7f
	case "digit":
		return isDigit
	case "graph":
		return isPrint && t != ' '
	case "lower":
		return isLower
	case "print":
		return isPrint
	case "punct":
		return isPrint && t != ' ' && !isAlpha && !isDigit
	case "space":
		return isSpace
	case "upper":
		return isUpper || (fold && isLower)
	case "xdigit":
		return isDigit || ('a' <= t && t <= 'f') || ('A' <= t && t <= 'F')
	}
	return false
}

// match reports whether the whole of text matches g.
func (g *glob) match(text string) bool {
	if g.never {
		return false
	}
	var memo []uint8 // (token, offset) -> 0 unknown, 1 no, 2 yes
	if g.stars > 1 {
		memo = make([]uint8, (len(g.toks)+1)*(len(text)+1))
	}
	return g.from(0, 0, text, memo)
}

func (g *glob) from(ti, xi int, text string, memo []uint8) bool {
	for {
		if ti == len(g.toks) {
			return xi == len(text)
		}
		t := &g.toks[ti]
		switch t.op {
		case globLit:
			if xi >= len(text) {
				return false
			}
			c := text[xi]
			if g.fold {
				c = lower(c)
			}
			if c != t.c {
				return false
			}
		case globAny:
			if xi >= len(text) || (g.pathMode && text[xi] == '/') {
				return false
			}
		case globClass:
			if xi >= len(text) || !t.set[text[xi]] {
				return false
			}
		case globStarAll:
			return true
		case globNever:
			return false
		case globStar, globStarDirs:
			return g.star(ti, xi, text, memo)
		}
		ti++
		xi++
	}
}

// star tries every length the star token ti may take at offset xi.
func (g *glob) star(ti, xi int, text string, memo []uint8) bool {
	k := 0
	if memo != nil {
		k = ti*(len(text)+1) + xi
		if memo[k] != 0 {
			return memo[k] == 2
		}
	}
	ok := false
	if g.toks[ti].op == globStarDirs {
		// Nothing, or any run that ends with a '/'.
		ok = g.from(ti+1, xi, text, memo)
		for j := xi + 1; !ok && j <= len(text); j++ {
			if text[j-1] == '/' {
				ok = g.from(ti+1, j, text, memo)
			}
		}
	} else {
		for j := xi; !ok && j <= len(text); j++ {
			ok = g.from(ti+1, j, text, memo)
			if j < len(text) && g.pathMode && text[j] == '/' {
				break
			}
		}
	}
	if memo != nil {
		memo[k] = 1
		if ok {
			memo[k] = 2
		}
	}
	return ok
}
