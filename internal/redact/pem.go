package redact

import "strings"

// Status of a PEM body walk.
const (
	pemEnded   = iota // the END line was found
	pemStopped        // a line that is not part of a PEM body ended the block
	pemEOF            // the input ended inside the block
)

// matchPEM matches a PEM private key block at a "-----BEGIN" occurrence:
// from the BEGIN marker through the END marker. The body may carry
// decorations (a diff's +/-, quotes, string concatenation, "\n" escapes), so
// keys in diffs and source code are found too. A block whose END line is
// missing ends after its last body line; one without any body line (a lone
// header constant in source code) is not a secret and is kept.
func matchPEM(c *scanCtx, at, _ int) (int, int, bool) {
	s := c.s
	const begin = "-----BEGIN "
	if !strings.HasPrefix(s[at:], begin) {
		return 0, 0, false
	}
	p := at + len(begin)
	q := p
	for q < len(s) && q-p <= 64 && (isUpper(s[q]) || isDigit(s[q]) || s[q] == ' ') {
		q++
	}
	if !strings.HasPrefix(s[q:], "-----") {
		return 0, 0, false
	}
	label := s[p:q]
	if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
		return 0, 0, false
	}
	hdrEnd := q + len("-----")
	le := c.nextByte(hdrEnd, '\n', &c.nl)
	rest := s[hdrEnd:le]
	if i := c.nextEnd(hdrEnd); i < le {
		// The whole block is on one line, as in a JSON string with "\n"
		// escapes.
		j := i + len("-----END ")
		if k := strings.Index(s[j:le], "-----"); k >= 0 {
			return at, j + k + len("-----"), true
		}
		return at, le, true
	}
	inline := inlineBody(rest)
	if inline > 0 && le == len(s) && c.final {
		// A one-line block cut short: redact the body that is there.
		return at, hdrEnd + inline, true
	}
	if le == len(s) {
		c.pemOpenAt(at)
		return 0, 0, false
	}
	end, st, body := pemWalk(s, le+1)
	if st == pemEOF {
		if !c.final {
			c.pemOpenAt(at)
			return 0, 0, false
		}
		c.pemOpen = true
	}
	if inline > 0 {
		// Text after the BEGIN marker that could be body: the block is
		// what follows as well, if it is body (a marker with text glued
		// on its line must not end it).
		if body == 0 && st != pemEnded {
			end = hdrEnd + inline
		}
		return at, max(end, hdrEnd+inline), true
	}
	if body == 0 && st != pemEnded {
		return 0, 0, false
	}
	return at, end, true
}

// pemOpenAt records a PEM block, starting on the line of s[at], that is
// still open at the end of the input.
func (c *scanCtx) pemOpenAt(at int) {
	if c.final {
		c.pemOpen = true
		return
	}
	c.hold = min(c.hold, lineStart(c.s, at))
}

// pemWalk walks the lines of a PEM body starting at i (the start of a line).
// It returns the end of the block (after the END marker, or after the last
// body line), how the walk ended and how many body lines it saw.
func pemWalk(s string, i int) (end, status, body int) {
	end = i
	for i < len(s) {
		le := lineEnd(s, i)
		line := s[i:le]
		if k := strings.Index(line, "-----END "); k >= 0 && isBodyPrefix(line[:k]) {
			j := k + len("-----END ")
			if m := strings.Index(line[j:], "-----"); m >= 0 {
				return i + j + m + len("-----"), pemEnded, body
			}
			return i + len(strings.TrimRight(line, " \t\r")), pemEnded, body
		}
		switch pemLineKind(line) {
		case pemBody:
			body++
			end = i + len(strings.TrimRight(line, " \t\r"))
		case pemBlank:
		default:
			return end, pemStopped, body
		}
		i = le + 1
	}
	return end, pemEOF, body
}

// Kinds of lines inside a PEM block.
const (
	pemOther = iota
	pemBlank
	pemBody // base64 or an RFC 1421 header such as "Proc-Type: 4,ENCRYPTED"
)

func pemLineKind(line string) int {
	t := trimPEMDecoration(line)
	if t == "" {
		return pemBlank
	}
	if isPEMBody(t) {
		return pemBody
	}
	// Encapsulated header: "Name: value".
	i := 0
	for i < len(t) && (isAlnum(t[i]) || t[i] == '-') {
		i++
	}
	if i > 0 && isLetter(t[0]) && i+1 < len(t) && t[i] == ':' && t[i+1] == ' ' {
		return pemBody
	}
	return pemOther
}

// isBodyPrefix reports whether the text before an END marker on its line is
// decoration or base64 only.
func isBodyPrefix(pre string) bool {
	t := trimPEMDecoration(pre)
	return t == "" || isPEMBody(t)
}

// trimPEMDecoration strips what surrounds PEM lines in diffs, quoted strings
// and source code: diff markers, quotes, comment leaders, string
// concatenation and "\n" escapes.
func trimPEMDecoration(s string) string {
	s = strings.TrimLeft(s, " \t+->#\"'`*/")
	for {
		n := len(s)
		s = strings.TrimRight(s, " \t\r\"'`,;+")
		if strings.HasSuffix(s, `\n`) || strings.HasSuffix(s, `\r`) {
			s = s[:len(s)-2]
		}
		if len(s) == n {
			return s
		}
	}
}

// inlineBody returns the length of the base64 body (with "\n" escapes)
// following a BEGIN marker on the same line, or 0 if there is too little of
// it to be one.
func inlineBody(rest string) int {
	n, b64 := 0, 0
	for n < len(rest) {
		c := rest[n]
		switch {
		case c == '\\' || c == ' ' || c == '\t':
		case isBase64Byte(c):
			b64++
		default:
			if b64 >= 16 {
				return n
			}
			return 0
		}
		n++
	}
	if b64 >= 16 {
		return len(strings.TrimRight(rest, " \t\r"))
	}
	return 0
}

// isPEMBody reports whether s holds only base64 or base64url characters.
func isPEMBody(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isBase64Byte(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isBase64Byte(s[i]) {
			return false
		}
	}
	return true
}

func isBase64Byte(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '=' }
func isUpper(c byte) bool      { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isLetter(c byte) bool     { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isAlnum(c byte) bool      { return isLetter(c) || isDigit(c) }
