package ctxasm

import "unicode/utf8"

// TextKind is what a text is, for the token estimate.
type TextKind int

// The kinds of text.
const (
	Prose TextKind = iota
	Code
	JSON
)

// Estimate returns the estimated tokens of s as text of kind k (see the
// package doc): non-ASCII runes count one token each, ASCII bytes are
// divided by 4 (prose), 3.5 (code) or 3 (JSON), rounded up.
func Estimate(k TextKind, s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		other++
		i += n
	}
	var t int
	switch k {
	case Code:
		t = (2*ascii + 6) / 7
	case JSON:
		t = (ascii + 2) / 3
	default:
		t = (ascii + 3) / 4
	}
	return t + other
}

// KindOf returns the text kind of a file by its name.
func KindOf(rel string) TextKind {
	switch ext(rel) {
	case ".json":
		return JSON
	case ".md", ".mdc", ".txt", "":
		return Prose
	}
	if _, ok := langByExt[ext(rel)]; ok {
		return Code
	}
	return Prose
}

// ext returns the lower-case extension of a slash path.
func ext(rel string) string {
	for i := len(rel) - 1; i >= 0 && rel[i] != '/'; i-- {
		if rel[i] == '.' {
			if i == 0 || rel[i-1] == '/' {
				return "" // a dot file
			}
			return lower(rel[i:])
		}
	}
	return ""
}

func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
