package search

import (
	"bytes"
	"regexp"
	"testing"
	"unicode/utf8"
)

// FuzzScan checks the whole-buffer scan against a plain line-by-line scan.
func FuzzScan(f *testing.F) {
	f.Add("needle", false, false, []byte("a\nneedle\nb needle\r\n"))
	f.Add(`x*`, true, false, []byte("\n\nabc\n"))
	f.Add(`^a|b$`, true, true, []byte("A\nb\r\nab"))
	f.Add(`\s+`, true, false, []byte("a\n\nb c\n"))
	f.Add(`\Aa`, true, false, []byte("a\na\n"))
	f.Add(`(?-m)^x`, true, false, []byte("y\nx\n"))
	f.Add("é", false, true, []byte("É\xff\n"))
	f.Add("task", false, true, []byte("TA\u017fK\nx TASK\n"))
	f.Add(`(?i)func\s+\w+Handler`, true, false, []byte("func Handler1()\nFUNC x_HANDLER\nfunc  aHandler handler\n"))
	f.Add(`(?i)as+k\d`, true, false, []byte("A\u017f\u017fK1\nASK2\nask\n"))
	f.Add(`ta(?i:sk)`, true, false, []byte("taSK\nTASK\nta\u017fk\n"))
	f.Fuzz(func(t *testing.T, q string, isRegex, ci bool, data []byte) {
		if !utf8.ValidString(q) {
			return
		}
		m, err := newMatcher(Request{Query: q, Regex: isRegex, CaseInsensitive: ci})
		if err != nil || q == "" || bytes.ContainsAny([]byte(q), "\x00\n") {
			return
		}
		lineRe := m.lineRe
		if lineRe == nil {
			lineRe = regexp.MustCompile(regexp.QuoteMeta(q))
		}
		ref := &matcher{lineRe: lineRe, perLine: true}
		type hit struct{ line, start, end, col int }
		var got, want []hit
		m.scan(data, func(l, s, e, c int) bool { got = append(got, hit{l, s, e, c}); return true })
		if len(data) > 0 {
			ref.scanLines(data, func(l, s, e, c int) bool { want = append(want, hit{l, s, e, c}); return true })
		}
		if len(got) != len(want) {
			t.Fatalf("got %d hits %v, want %d %v", len(got), got, len(want), want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("hit %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}
