package gitx

import (
	"errors"
	"strings"
)

// A port of git's config file reader (config.c: git_parse_source,
// get_next_char, get_base_var, get_extended_base_var, get_value,
// parse_value, as of git 2.39), so the scanner sees exactly the variables git
// sees. It reports each variable the way git hands it to its callbacks: the
// full name with the section and key lower-cased and the subsection as
// written (lower-cased in the legacy "[section.sub]" form), cut at the first
// NUL as a C string is, and the value (also cut at a NUL), or no value for a
// key without "=" (boolean true).
//
// git stops at the first syntax error and dies, so nothing after it can take
// effect; parseConfig stops there too and returns errConfigSyntax.

var errConfigSyntax = errors.New("gitx: config syntax error")

// cfgEntry is one variable from a config file.
type cfgEntry struct {
	name     string // "section.sub.key" or "section.key"
	value    string
	hasValue bool
}

type cfgReader struct {
	b   []byte
	i   int
	eof bool
}

// next mirrors get_next_char: CRLF reads as LF, end of input reads as LF with
// eof set (and keeps doing so).
func (r *cfgReader) next() byte {
	if r.i >= len(r.b) {
		r.eof = true
		return '\n'
	}
	c := r.b[r.i]
	r.i++
	if c == '\r' && r.i < len(r.b) && r.b[r.i] == '\n' {
		r.i++
		return '\n'
	}
	return c
}

// git's sane ctype: only ASCII, and isspace is " \t\n\r".
func cfgIsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func cfgIsAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func cfgIsKeyChar(c byte) bool {
	return cfgIsAlpha(c) || (c >= '0' && c <= '9') || c == '-'
}
func cfgLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// cString cuts s at its first NUL.
func cString(s []byte) string {
	for i, c := range s {
		if c == 0 {
			return string(s[:i])
		}
	}
	return string(s)
}

// parseConfig calls header for each section header (with the section name
// as git builds it, e.g. "filter.evil", before truncation at a NUL) and entry
// for each variable, in file order. Either callback returns false to stop.
func parseConfig(b []byte, header func(name string) bool, entry func(e cfgEntry) bool) error {
	r := &cfgReader{b: b}
	var name []byte
	baselen := 0
	comment := false
	bom := 0 // bytes of a leading UTF-8 BOM matched; -1 once past it
	const utf8BOM = "\xef\xbb\xbf"
	for {
		c := r.next()
		if bom >= 0 && bom < len(utf8BOM) {
			if !r.eof && c == utf8BOM[bom] {
				bom++
				continue
			}
			if bom > 0 {
				return errConfigSyntax // a partial BOM is not tolerated
			}
			bom = -1
		}
		if c == '\n' {
			if r.eof {
				return nil
			}
			comment = false
			continue
		}
		if comment {
			continue
		}
		if cfgIsSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			continue
		}
		if c == '[' {
			name = name[:0]
			var ok bool
			name, ok = r.baseVar(name)
			if !ok || len(name) < 1 {
				return errConfigSyntax
			}
			if header != nil && !header(string(name)) {
				return nil
			}
			name = append(name, '.')
			baselen = len(name)
			continue
		}
		if !cfgIsAlpha(c) {
			return errConfigSyntax
		}
		name = append(name[:baselen], cfgLower(c))
		e, n, ok := r.value(name)
		name = n
		if !ok {
			return errConfigSyntax
		}
		if entry != nil && !entry(e) {
			return nil
		}
	}
}

// baseVar mirrors get_base_var: the section name up to ']'.
func (r *cfgReader) baseVar(name []byte) ([]byte, bool) {
	for {
		c := r.next()
		if r.eof {
			return name, false
		}
		if c == ']' {
			return name, true
		}
		if cfgIsSpace(c) {
			return r.extendedBaseVar(name, c)
		}
		if !cfgIsKeyChar(c) && c != '.' {
			return name, false
		}
		name = append(name, cfgLower(c))
	}
}

// extendedBaseVar mirrors get_extended_base_var: `[base "sub"]`.
func (r *cfgReader) extendedBaseVar(name []byte, c byte) ([]byte, bool) {
	for {
		if c == '\n' {
			return name, false
		}
		c = r.next()
		if !cfgIsSpace(c) {
			break
		}
	}
	if c != '"' {
		return name, false
	}
	name = append(name, '.')
	for {
		c := r.next()
		if c == '\n' {
			return name, false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			c = r.next()
			if c == '\n' {
				return name, false
			}
		}
		name = append(name, c)
	}
	if r.next() != ']' {
		return name, false
	}
	return name, true
}

// value mirrors get_value: the rest of the key name, then "= value" or
// nothing.
func (r *cfgReader) value(name []byte) (cfgEntry, []byte, bool) {
	var c byte
	for {
		c = r.next()
		if r.eof || !cfgIsKeyChar(c) {
			break
		}
		name = append(name, cfgLower(c))
	}
	for c == ' ' || c == '\t' {
		c = r.next()
	}
	e := cfgEntry{name: cString(name)}
	if c != '\n' {
		if c != '=' {
			return e, name, false
		}
		v, ok := r.parseValue()
		if !ok {
			return e, name, false
		}
		e.value = cString(v)
		e.hasValue = true
	}
	return e, name, true
}

// parseValue mirrors parse_value: quotes, escapes, comments, continuation
// lines and whitespace folding.
func (r *cfgReader) parseValue() ([]byte, bool) {
	var v []byte
	quote, comment := false, false
	space := 0
	for {
		c := r.next()
		if c == '\n' {
			if quote {
				return nil, false
			}
			return v, true
		}
		if comment {
			continue
		}
		if cfgIsSpace(c) && !quote {
			if len(v) > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			v = append(v, ' ')
		}
		if c == '\\' {
			c = r.next()
			switch c {
			case '\n':
				// A continuation line (at end of input the next read
				// is '\n' again, which ends the value).
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return nil, false
			}
			v = append(v, c)
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		v = append(v, c)
	}
}

// splitConfigKey splits a variable name the way parse_config_key does: the
// section is up to the first dot, the key after the last, and the
// subsection (which may contain dots) in between. hasSub is false for
// "section.key". ok is false for a name without a dot.
func splitConfigKey(name string) (section, sub string, hasSub bool, key string, ok bool) {
	first := strings.IndexByte(name, '.')
	if first < 0 {
		return "", "", false, "", false
	}
	last := strings.LastIndexByte(name, '.')
	section, key = name[:first], name[last+1:]
	if last > first {
		return section, name[first+1 : last], true, key, true
	}
	return section, "", false, key, true
}
