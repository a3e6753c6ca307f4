package ctxasm

import (
	"strconv"
	"strings"
)

// outlineLine reports whether a line belongs to the outline of a text of
// kind tk: a markdown heading, or a Go, TypeScript or Python symbol line.
func outlineLine(line string, tk TextKind) bool {
	if tk != Code {
		t := strings.TrimSpace(line)
		return strings.HasPrefix(t, "#") && len(t) > 1 && (t[1] == '#' || t[1] == ' ')
	}
	for _, p := range [...]string{
		"package ", "func ", "type ", "const ", "var ", // Go
		"export ", "function ", "class ", "interface ", "enum ", "async function ", // TypeScript, JavaScript
		"def ", "async def ", // Python
	} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	t := strings.TrimLeft(line, " \t")
	return len(t) < len(line) && len(line)-len(t) <= 4 && (strings.HasPrefix(t, "def ") || strings.HasPrefix(t, "async def "))
}

// Summarise returns a version of text of at most maxTokens tokens (with
// title, see fits): a marker line, the head, the outline and the tail of
// the text. It returns "" when not even the marker fits.
func Summarise(title, text string, tk TextKind, maxTokens int) string {
	lines := strings.Split(text, "\n")
	var outline []string
	for _, l := range lines {
		if outlineLine(l, tk) {
			outline = append(outline, strings.TrimRight(l, " \t{"))
		}
	}
	marker := "[summarised from " + strconv.Itoa(len(lines)) + " lines, ~" + strconv.Itoa(Estimate(tk, text)) + " tokens: head, outline, tail; read the file for the rest]"
	// Shrink until the result fits: the head and tail first (to a few
	// lines), then the outline, then the rest of the head and tail.
	h, o, t := min(len(lines), 40), min(len(outline), 80), min(len(lines), 15)
	for range 128 {
		s := compose(marker, lines, outline, h, o, t)
		if fits(title, s, tk, maxTokens) {
			return s
		}
		switch {
		case h > 8:
			h = max(8, h*3/4)
		case t > 3:
			t = max(3, t*3/4)
		case o > 0:
			o = o * 3 / 4
		case h > 0 || t > 0:
			h, t = h*3/4, t*3/4
		}
		if h == 0 && o == 0 && t == 0 {
			break
		}
	}
	// Last resort: the marker and as many bytes of the head as fit.
	if !fits(title, marker, tk, maxTokens) {
		return ""
	}
	lo, hi := 0, len(text)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(title, marker+"\n"+cutValid(text, mid), tk, maxTokens) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return marker + "\n" + cutValid(text, lo)
}

func compose(marker string, lines, outline []string, h, o, t int) string {
	var b strings.Builder
	b.WriteString(marker)
	if h > 0 {
		b.WriteString("\n")
		b.WriteString(strings.Join(lines[:h], "\n"))
	}
	if o > 0 {
		b.WriteString("\n[outline]\n")
		b.WriteString(strings.Join(outline[:o], "\n"))
	}
	if t > 0 && len(lines) > h {
		t = min(t, len(lines)-h)
		b.WriteString("\n[tail]\n")
		b.WriteString(strings.Join(lines[len(lines)-t:], "\n"))
	}
	return b.String()
}

// cutValid returns the first n bytes of s, backed off to a rune boundary.
func cutValid(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// cost is the tokens of a part as emitted: its title line and its text.
func cost(title, text string, tk TextKind) int {
	return Estimate(Prose, title) + 1 + Estimate(tk, text)
}

func fits(title, text string, tk TextKind, maxTokens int) bool {
	return cost(title, text, tk) <= maxTokens
}
