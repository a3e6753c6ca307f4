package joblog

import (
	"strings"
	"unicode/utf8"
)

const (
	// DefaultSummaryLines is the number of entries Summarize returns when
	// max is 0.
	DefaultSummaryLines = 20
	// summaryContext is the number of lines kept after a failure line.
	summaryContext = 2
	// maxSummaryLine bounds one line of a summary entry, in bytes.
	maxSummaryLine = 400
	// maxSummaryInput bounds how much of the text Summarize scans: the
	// failures of a huge log are near its end, so the scan keeps the tail.
	maxSummaryInput = 16 << 20
)

// Summarize picks the failure lines out of test and build output for an
// agent: go test (`--- FAIL`, `FAIL`, `panic:`), pytest (`FAILED`, `ERROR`,
// `E   ` assertion lines, "file.py:4: AssertionError", the "N failed"
// summary), jest and vitest (`FAIL`, `✕`,
// `×`, `Tests: ... failed`), cargo (`FAILED`, `error:`, `error[E...]:`,
// `panicked at`) and generic `error:`/`Error:` lines. Each entry is the
// failure line followed by up to 2 lines of context (stopping at a blank
// line or the next failure line), joined by "\n", with ANSI colour codes
// removed and each line cut at 400 bytes. Entries are de-duplicated and
// returned in order of appearance, at most max of them (0 means 20).
func Summarize(text string, max int) []string {
	if max <= 0 {
		max = DefaultSummaryLines
	}
	if len(text) > maxSummaryInput {
		text = text[len(text)-maxSummaryInput:]
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	lines := strings.Split(text, "\n")
	seen := make(map[string]bool)
	var out []string
	for i := 0; i < len(lines) && len(out) < max; i++ {
		line := cleanLine(lines[i])
		if !isFailureLine(line) {
			continue
		}
		entry := []string{cutLine(line)}
		j := i + 1
		for ; j < len(lines) && len(entry) <= summaryContext; j++ {
			next := cleanLine(lines[j])
			if strings.TrimSpace(next) == "" || isFailureLine(next) {
				break
			}
			entry = append(entry, cutLine(next))
		}
		e := strings.Join(entry, "\n")
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
		i = j - 1
	}
	return out
}

// isFailureLine reports whether a (cleaned) line reports a failure.
func isFailureLine(line string) bool {
	t := strings.TrimSpace(line)
	if t == "" {
		return false
	}
	switch {
	case strings.HasPrefix(t, "--- FAIL"): // go test
		return true
	case hasWordPrefix(t, "FAIL"): // go test package line, jest/vitest file line
		return true
	case hasWordPrefix(t, "ERROR"): // pytest error line
		return true
	case strings.Contains(t, ": ") && (strings.HasSuffix(t, "Error") || strings.HasSuffix(t, "Exception")):
		return true // pytest location line "tests/x.py:4: AssertionError"
	case strings.HasPrefix(t, "panic:"), strings.HasPrefix(t, "fatal error:"): // go
		return true
	case strings.HasPrefix(line, "E   ") || line == "E": // pytest assertion detail
		return true
	case strings.HasPrefix(t, "✕"), strings.HasPrefix(t, "✗"), strings.HasPrefix(t, "✘"),
		strings.HasPrefix(t, "×"), strings.HasPrefix(t, "❌"): // jest, vitest, mocha-likes
		return true
	case strings.HasPrefix(t, "error[E"): // rustc
		return true
	case strings.Contains(t, "' panicked at "), strings.Contains(t, "' panicked at:"): // rust
		return true
	case strings.HasPrefix(t, "Tests:") && strings.Contains(t, " failed"): // jest summary
		return true
	case isPytestSummary(t):
		return true
	}
	return containsWord(t, "FAILED") || containsErrorColon(t)
}

// hasWordPrefix reports whether t starts with w followed by a blank, a
// colon or the end of the line.
func hasWordPrefix(t, w string) bool {
	if !strings.HasPrefix(t, w) {
		return false
	}
	if len(t) == len(w) {
		return true
	}
	c := t[len(w)]
	return c == ' ' || c == '\t' || c == ':'
}

// containsWord reports whether w occurs in t not surrounded by letters.
func containsWord(t, w string) bool {
	for off := 0; ; {
		i := strings.Index(t[off:], w)
		if i < 0 {
			return false
		}
		i += off
		before := i == 0 || !isWordByte(t[i-1])
		after := i+len(w) == len(t) || !isWordByte(t[i+len(w)])
		if before && after {
			return true
		}
		off = i + len(w)
	}
}

// containsErrorColon finds "error:" not preceded by a letter (so "error:",
// "fatal error:", "npm error:") or "Error:" after anything ("Error:",
// "AssertionError:", "TypeError:").
func containsErrorColon(t string) bool {
	if strings.Contains(t, "Error:") {
		return true
	}
	for off := 0; ; {
		i := strings.Index(t[off:], "error:")
		if i < 0 {
			return false
		}
		i += off
		if i == 0 || !isLetter(t[i-1]) {
			return true
		}
		off = i + len("error:")
	}
}

// isPytestSummary matches "==== 1 failed, 2 passed in 0.12s ====".
func isPytestSummary(t string) bool {
	if !strings.HasPrefix(t, "=") || !strings.HasSuffix(t, "=") {
		return false
	}
	inner := strings.Trim(t, "= ")
	return containsWord(inner, "failed") || containsWord(inner, "error") || containsWord(inner, "errors")
}

func isLetter(c byte) bool   { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isWordByte(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c == '_' }

// cleanLine removes a trailing CR and ANSI escape sequences.
func cleanLine(s string) string {
	s = strings.TrimRight(s, "\r")
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		// ESC [ params final-byte (CSI), or ESC + one byte.
		if i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		i++
	}
	return b.String()
}

// cutLine bounds a line to maxSummaryLine bytes at a rune boundary.
func cutLine(s string) string {
	s = strings.TrimRight(s, " \t")
	if len(s) <= maxSummaryLine {
		return s
	}
	cut := maxSummaryLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
