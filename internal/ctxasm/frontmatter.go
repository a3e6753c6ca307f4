package ctxasm

import (
	"strings"
	"unicode/utf8"
)

// FrontMatter is the front matter of a Cursor rule (.mdc).
type FrontMatter struct {
	Description string   `json:"description,omitempty"`
	Globs       []string `json:"globs,omitempty"`
	AlwaysApply bool     `json:"always_apply,omitempty"`
}

// Limits of the front matter parser.
const (
	maxFrontMatter = 16 << 10 // bytes of front matter looked at
	maxGlobs       = 64
	maxGlobLen     = 512
)

// ParseMDC splits a .mdc rule into its front matter and body. The front
// matter is the block between a first line "---" and the next "---" line;
// it is read as "key: value" lines, not as YAML (Cursor writes globs
// unquoted, and "*.ts" is not valid YAML): globs is a comma-separated list,
// a [a, b] flow list, or "- item" lines below the key; quotes around items
// are dropped. Unknown keys are ignored. Without front matter the whole
// text is the body. It never panics.
func ParseMDC(s string) (FrontMatter, string) {
	var fm FrontMatter
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	first, rest, ok := cutLine(s)
	if !ok || strings.TrimSpace(first) != "---" {
		return fm, s
	}
	for off := 0; off <= len(rest) && off <= maxFrontMatter; {
		i := strings.IndexByte(rest[off:], '\n')
		line, next := rest[off:], len(rest)+1
		if i >= 0 {
			line, next = rest[off:off+i], off+i+1
		}
		if strings.TrimSpace(line) == "---" {
			body := ""
			if next <= len(rest) {
				body = rest[next:]
			}
			return parseFields(rest[:off]), body
		}
		off = next
	}
	return fm, s // no closing line: not front matter
}

// cutLine returns the first line of s (without \n or \r\n), the rest, and
// whether a newline ended the line.
func cutLine(s string) (line, rest string, ok bool) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return strings.TrimSuffix(s, "\r"), "", false
	}
	return strings.TrimSuffix(s[:i], "\r"), s[i+1:], true
}

func parseFields(block string) FrontMatter {
	var fm FrontMatter
	lines := strings.Split(block, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSuffix(lines[i], "\r")
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
			continue
		}
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		switch key {
		case "description":
			fm.Description = unquote(val)
		case "alwaysapply", "always_apply":
			fm.AlwaysApply = strings.EqualFold(unquote(val), "true")
		case "globs":
			if val == "" {
				// "- item" lines below the key.
				for i+1 < len(lines) {
					item := strings.TrimSpace(strings.TrimSuffix(lines[i+1], "\r"))
					v, isItem := strings.CutPrefix(item, "-")
					if !isItem {
						break
					}
					fm.Globs = addGlob(fm.Globs, v)
					i++
				}
				continue
			}
			if strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]") {
				val = val[1 : len(val)-1]
			}
			for _, g := range strings.Split(val, ",") {
				fm.Globs = addGlob(fm.Globs, g)
			}
		}
	}
	return fm
}

func addGlob(globs []string, g string) []string {
	g = unquote(strings.TrimSpace(g))
	if g == "" || len(g) > maxGlobLen || len(globs) >= maxGlobs {
		return globs
	}
	for _, have := range globs {
		if have == g {
			return globs
		}
	}
	return append(globs, g)
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}
