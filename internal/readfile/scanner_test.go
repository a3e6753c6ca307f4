package readfile

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFitReplaced(t *testing.T) {
	const r = "\uFFFD"
	tests := []struct {
		name     string
		in       Result
		maxBytes int
		want     Result
	}{
		{"fits", Result{Content: "a" + r + "\n", StartLine: 1, EndLine: 1, TotalLines: 1}, 10,
			Result{Content: "a" + r + "\n", StartLine: 1, EndLine: 1, TotalLines: 1}},
		{"drop last line", Result{Content: "ab\n" + r + r + "\n", StartLine: 1, EndLine: 2, TotalLines: 2}, 4,
			Result{Content: "ab\n", StartLine: 1, EndLine: 1, TotalLines: 2, Truncated: true, NextOffsetLine: 2}},
		{"drop unterminated last line", Result{Content: "a\nb\n" + r + r, StartLine: 3, EndLine: 5, TotalLines: 9}, 5,
			Result{Content: "a\nb\n", StartLine: 3, EndLine: 4, TotalLines: 9, Truncated: true, NextOffsetLine: 5}},
		{"cut lone line", Result{Content: r + r + "\n", StartLine: 2, EndLine: 2, TotalLines: 2}, 4,
			Result{Content: r, StartLine: 2, EndLine: 2, TotalLines: 2, Truncated: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			fitReplaced(&got, tt.maxBytes)
			if got != tt.want {
				t.Errorf("fitReplaced(%+v, %d):\n got %+v\nwant %+v", tt.in, tt.maxBytes, got, tt.want)
			}
		})
	}
}

// refWindow is a straightforward reference for the scanner, working on the
// whole content at once.
func refWindow(content string, start, maxLines, maxBytes int) Result {
	var lines []string
	for rest := content; rest != ""; {
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			lines = append(lines, rest)
			break
		}
		lines = append(lines, rest[:i+1])
		rest = rest[i+1:]
	}
	res := Result{StartLine: start, TotalLines: len(lines)}
	var b []byte
	for ln := start; ln <= len(lines); ln++ {
		l := lines[ln-1]
		if ln-start >= maxLines {
			res.Truncated, res.NextOffsetLine = true, ln
			break
		}
		if len(b)+len(l) > maxBytes {
			if ln == start {
				b = trimIncompleteRune(append(b, l[:maxBytes]...))
				res.EndLine, res.Truncated = ln, true
				if ln+1 <= len(lines) {
					res.NextOffsetLine = ln + 1
				}
			} else {
				res.Truncated, res.NextOffsetLine = true, ln
			}
			break
		}
		b = append(b, l...)
		res.EndLine = ln
	}
	res.Content = string(b)
	if !utf8.ValidString(res.Content) {
		res.Content = strings.ToValidUTF8(res.Content, "\uFFFD")
		fitReplaced(&res, maxBytes)
	}
	return res
}

func FuzzScanner(f *testing.F) {
	f.Add("one\ntwo\nthree\n", 1, 2, 100, 3)
	f.Add("a\r\nb\r\nc", 2, 10, 3, 1)
	f.Add("ééé\nx", 1, 5, 4, 2)
	f.Add("", 1, 1, 1, 1)
	f.Add("\n\n\n", 4, 1, 1, 7)
	f.Add("abc\xffdef\nghi\n", 1, 3, 6, 5)
	f.Fuzz(func(t *testing.T, content string, start, maxLines, maxBytes, chunk int) {
		start = 1 + abs(start)%20
		maxLines = 1 + abs(maxLines)%20
		maxBytes = 1 + abs(maxBytes)%200
		chunk = 1 + abs(chunk)%64
		s := newScanner(start, maxLines, maxBytes, int64(len(content)))
		for i := 0; i < len(content); i += chunk {
			s.feed([]byte(content[i:min(i+chunk, len(content))]))
		}
		var got Result
		s.finish(&got)
		want := refWindow(content, start, maxLines, maxBytes)
		if got != want {
			t.Fatalf("scan(%q, start %d, lines %d, bytes %d, chunk %d):\n got %+v\nwant %+v", content, start, maxLines, maxBytes, chunk, got, want)
		}
		if len(got.Content) > maxBytes || !utf8.ValidString(got.Content) {
			t.Fatalf("got content of %d bytes, want <= %d", len(got.Content), maxBytes)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // math.MinInt
			return 0
		}
		return -n
	}
	return n
}
