package textsafe

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unsafe reports whether r is escaped by Line: a control character (C0,
// DEL, C1), a format character (Unicode category Cf: bidi controls,
// zero-width characters, the byte order mark, the soft hyphen, the tag
// characters), or a line or paragraph separator (U+2028, U+2029). The
// backslash is not unsafe but is escaped too (see the package comment).
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r < 0xa0:
		return true
	case r == '\u2028', r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// mode is what an escaping keeps.
type mode uint8

const (
	modeLine mode = iota // everything escaped
	modeText             // "\n" and "\t" kept
	modeJSON             // "\n" and "\t" kept; backslashes are JSON's; \uHHHH escapes
)

// Line returns s for one line: every unsafe character, line break, tab and
// backslash escaped.
func Line(s string) string { return escape(s, modeLine) }

// Text returns s with its line breaks and tabs kept and every other unsafe
// character and every backslash escaped, for a place that frames the text
// itself (an HTML <pre>, a quoted block).
func Text(s string) string { return escape(s, modeText) }

// Block returns Text(s) with prefix before each of its lines, so that no
// line of s can pass for a line of the output around it. A trailing line
// break gives a last, empty line (prefix alone): s can be read back.
func Block(s, prefix string) string {
	t := Text(s)
	if prefix == "" {
		return t
	}
	return prefix + strings.ReplaceAll(t, "\n", "\n"+prefix)
}

// JSON returns JSON text s with every unsafe character but its line
// breaks and tabs (JSON's own white space) escaped as \uHHHH (a pair of
// them beyond U+FFFF): valid JSON stays valid JSON with the same meaning.
// encoding/json escapes the C0 controls but not DEL, the C1 controls or
// the format characters (a bidi override inside a string shows the text
// around it in another order). A byte that is not UTF-8 (never in JSON
// encoding/json wrote) shows as \xHH, which JSON has no other use for.
func JSON(s string) string { return escape(s, modeJSON) }

// Argv returns argv as a shell reads it back: a word of only plain
// characters as it is, another in single quotes, and a word holding an
// unsafe character as $'...' (bash's ANSI-C quoting) with the escapes of
// Line, which bash reads back as the same bytes.
func Argv(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		writeWord(&b, a)
	}
	return b.String()
}

func writeWord(b *strings.Builder, a string) {
	if a != "" && strings.IndexFunc(a, func(r rune) bool { return !plain(r) }) < 0 {
		b.WriteString(a)
		return
	}
	if strings.IndexFunc(a, Unsafe) < 0 && utf8.ValidString(a) {
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
		return
	}
	b.WriteString("$'")
	b.WriteString(strings.ReplaceAll(Line(a), "'", `\'`))
	b.WriteByte('\'')
}

// plain reports a character a shell word needs no quotes for.
func plain(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("-_./=:,@+", r)
}

// first returns the index of the first byte of s that m changes, or -1.
func first(s string, m mode) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '\\' && m != modeJSON || (c < 0x20 || c == 0x7f) && !(m != modeLine && (c == '\n' || c == '\t')) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || Unsafe(r) {
			return i
		}
		i += size
	}
	return -1
}

const hexDigits = "0123456789abcdef"

func escape(s string, m mode) string {
	i := first(s, m)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case r == '\\' && m != modeJSON:
			b.WriteString(`\\`)
		case (r == '\n' || r == '\t') && m != modeLine:
			b.WriteByte(byte(r))
		case !Unsafe(r):
			b.WriteString(s[i : i+size])
		case m == modeJSON:
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				writeHex(&b, `\u`, uint32(r1), 4)
				writeHex(&b, `\u`, uint32(r2), 4)
			} else {
				writeHex(&b, `\u`, uint32(r), 4)
			}
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			writeHex(&b, `\x`, uint32(r), 2)
		case r <= 0xffff:
			writeHex(&b, `\u`, uint32(r), 4)
		default:
			writeHex(&b, `\U`, uint32(r), 8)
		}
		i += size
	}
	return b.String()
}

func writeHex(b *strings.Builder, lead string, v uint32, digits int) {
	b.WriteString(lead)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[v>>shift&0xf])
	}
}

// Partial returns the length of a UTF-8 sequence begun but not ended at
// the end of s, or 0: a stream cut in chunks (a job's log) escapes each
// chunk up to it, so that a character cut in two is not shown as two
// bytes that are not UTF-8.
func Partial(s string) int {
	for n := 1; n < utf8.UTFMax && n <= len(s); n++ {
		c := s[len(s)-n]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRuneInString(s[len(s)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}
