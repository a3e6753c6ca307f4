package classify

import (
	"strconv"
	"strings"
)

// classifySed proves a sed invocation readonly: -n, no in-place editing, and
// a script (given inline) with no w/W/e commands and no s///w or s///e flags.
func classifySed(_ string, args []string, _ int) Result {
	quiet, inPlace, sandbox := false, false, false
	var scripts []string
	haveScript := false
	opts := true
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--"):
			name, attached := longName(a)
			switch {
			case abbrevOf(name, "quiet", 1) || abbrevOf(name, "silent", 2):
				quiet = true
			case abbrevOf(name, "in-place", 1):
				inPlace = true
			case abbrevOf(name, "sandbox", 2):
				sandbox = true
			case abbrevOf(name, "expression", 1):
				haveScript = true
				if attached {
					scripts = append(scripts, a[strings.IndexByte(a, '=')+1:])
				} else if i+1 < len(args) {
					i++
					scripts = append(scripts, args[i])
				}
			case abbrevOf(name, "file", 1):
				return result(Unknown, "sed --file reads its script from a file")
			case abbrevOf(name, "line-length", 1):
				if !attached {
					i++
				}
			}
		case opts && isShort(a):
			for j := 1; j < len(a); j++ {
				switch c := a[j]; c {
				case 'n':
					quiet = true
				case 'i':
					inPlace = true
					j = len(a) // the rest is the backup suffix
				case 'e', 'f', 'l':
					val := a[j+1:]
					if val == "" && i+1 < len(args) {
						i++
						val = args[i]
					}
					switch c {
					case 'e':
						haveScript = true
						scripts = append(scripts, val)
					case 'f':
						return result(Unknown, "sed -f reads its script from a file")
					}
					j = len(a)
				case 'E', 'r', 's', 'u', 'z':
				default:
					return result(Unknown, "unrecognised sed option "+strconv.Quote(a))
				}
			}
		default:
			if !haveScript {
				haveScript = true
				scripts = append(scripts, a)
			}
		}
	}
	if inPlace {
		return result(WorkspaceWrite, "sed -i edits files in place")
	}
	for _, s := range scripts {
		if isDynamic(s) {
			return result(Unknown, "the sed script is expanded at run time")
		}
	}
	class, why := sedScript(strings.Join(scripts, "\n"))
	if sandbox && class != Readonly {
		class, why = Readonly, "sed --sandbox refuses w/e/r commands"
	}
	if class != Readonly {
		return result(class, why)
	}
	if !quiet {
		return result(Unknown, "sed without -n is not proven readonly")
	}
	return result(Readonly, "sed -n only prints")
}

// sedScript scans a sed script the way GNU sed parses it and reports the most
// severe effect of its commands. Anything it cannot parse is unknown.
func sedScript(s string) (Class, string) {
	p := sedParser{s: s}
	class, why := Readonly, ""
	raise := func(c Class, m string) {
		if c.Severity() > class.Severity() {
			class, why = c, m
		}
	}
	for {
		p.skip(" \t\n;")
		if p.eof() {
			return class, why
		}
		if p.peek() == '#' {
			p.toEOL()
			continue
		}
		if !p.address() {
			return Unknown, "cannot parse the sed script"
		}
		p.skip(" \t")
		if p.peek() == ',' {
			p.i++
			p.skip(" \t")
			if !p.address() {
				return Unknown, "cannot parse the sed script"
			}
		}
		p.skip(" \t")
		for p.peek() == '!' {
			p.i++
			p.skip(" \t")
		}
		if p.eof() {
			return Unknown, "cannot parse the sed script"
		}
		c := p.s[p.i]
		p.i++
		switch c {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			p.skip(" \t")
			for !p.eof() && p.peek() >= '0' && p.peek() <= '9' {
				p.i++
			}
		case ':', 'b', 't', 'T', 'v':
			p.toSemiOrEOL()
		case 'a', 'i', 'c':
			p.text()
		case 'r', 'R':
			p.toEOL()
		case 'w', 'W':
			if f := strings.TrimSpace(p.toEOL()); !harmlessSink(f) {
				raise(WorkspaceWrite, "sed "+string(c)+" command writes "+strconv.Quote(f))
			}
		case 'e':
			p.toEOL()
			raise(Shell, "sed e command runs shell commands")
		case 's':
			if !p.delimited(2) {
				return Unknown, "cannot parse the sed script"
			}
		flags:
			for !p.eof() {
				switch f := p.peek(); {
				case f == 'e':
					p.i++
					raise(Shell, "sed s///e runs shell commands")
				case f == 'w':
					p.i++
					if name := strings.TrimSpace(p.toEOL()); !harmlessSink(name) {
						raise(WorkspaceWrite, "sed s///w writes "+strconv.Quote(name))
					}
					break flags
				case strings.IndexByte("gpiImM0123456789", f) >= 0:
					p.i++
				default:
					break flags
				}
			}
		case 'y':
			if !p.delimited(2) {
				return Unknown, "cannot parse the sed script"
			}
		default:
			return Unknown, "unknown sed command " + strconv.Quote(string(c))
		}
	}
}

type sedParser struct {
	s string
	i int
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sedParser) skip(set string) {
	for !p.eof() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *sedParser) toEOL() string {
	start := p.i
	for !p.eof() && p.s[p.i] != '\n' {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *sedParser) toSemiOrEOL() {
	for !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != ';' {
		p.i++
	}
}

// text consumes the text of a/i/c up to an unescaped newline.
func (p *sedParser) text() {
	for !p.eof() {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '\n':
			return
		}
		p.i++
	}
	if p.i > len(p.s) {
		p.i = len(p.s)
	}
}

// address consumes an optional address; it reports false on a malformed one.
func (p *sedParser) address() bool {
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		for !p.eof() && (p.peek() >= '0' && p.peek() <= '9' || p.peek() == '~') {
			p.i++
		}
	case c == '$':
		p.i++
	case c == '+' || c == '~':
		p.i++
		for !p.eof() && p.peek() >= '0' && p.peek() <= '9' {
			p.i++
		}
	case c == '/':
		p.i++
		if !p.until('/') {
			return false
		}
	case c == '\\':
		p.i++
		if p.eof() {
			return false
		}
		d := p.s[p.i]
		p.i++
		if !p.until(d) {
			return false
		}
	default:
		return true
	}
	for !p.eof() && (p.peek() == 'I' || p.peek() == 'M') {
		p.i++
	}
	return true
}

// until consumes up to and including the unescaped delimiter d.
func (p *sedParser) until(d byte) bool {
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == '\\':
			p.i += 2
			continue
		case c == d:
			p.i++
			return true
		case c == '\n' && d != '\n':
			return false
		}
		p.i++
	}
	return false
}

// delimited consumes the delimiter and n delimited parts of s or y.
func (p *sedParser) delimited(n int) bool {
	if p.eof() {
		return false
	}
	d := p.s[p.i]
	if d == '\\' || d == '\n' {
		return false
	}
	p.i++
	for k := 0; k < n; k++ {
		if !p.untilRepl(d) {
			return false
		}
	}
	return true
}

// untilRepl is until, but a replacement may contain escaped newlines.
func (p *sedParser) untilRepl(d byte) bool {
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == '\\':
			p.i += 2
			continue
		case c == d:
			p.i++
			return true
		}
		p.i++
	}
	return false
}
