package readfile

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// scanner turns a stream of chunks into the line window and line count.
type scanner struct {
	start, maxLines, maxBytes int
	binary                    bool

	line      int    // number of the line the next byte belongs to
	buf       []byte // window content
	lineStart int    // len(buf) when the current window line began
	endLine   int    // last complete line in buf
	done      bool   // the window is closed
	stopped   bool   // closed because of a limit
	cut       bool   // the only line was cut at maxBytes
	newlines  int
	last      byte
	n         int64
}

func newScanner(start, maxLines, maxBytes int, size int64) *scanner {
	s := &scanner{start: start, maxLines: maxLines, maxBytes: maxBytes, line: 1}
	if start == 1 {
		s.buf = make([]byte, 0, min(int64(maxBytes), max(size, 0)))
	}
	return s
}

func (s *scanner) feed(p []byte) {
	if len(p) == 0 {
		return
	}
	s.n += int64(len(p))
	s.last = p[len(p)-1]
	s.newlines += bytes.Count(p, []byte{'\n'})
	if s.binary {
		return
	}
	for len(p) > 0 && !s.done {
		if s.line < s.start {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				return
			}
			p = p[i+1:]
			s.line++
			continue
		}
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i+1]
		}
		if len(s.buf)+len(seg) > s.maxBytes {
			if s.line == s.start {
				// The first line alone is too long: keep its head.
				s.buf = append(s.buf, seg[:s.maxBytes-len(s.buf)]...)
				s.buf = trimIncompleteRune(s.buf)
				s.cut = true
				s.endLine = s.line
			} else {
				s.buf = s.buf[:s.lineStart]
			}
			s.done, s.stopped = true, true
			return
		}
		s.buf = append(s.buf, seg...)
		p = p[len(seg):]
		if i >= 0 {
			s.endLine = s.line
			s.line++
			s.lineStart = len(s.buf)
			if s.endLine-s.start+1 >= s.maxLines {
				s.done, s.stopped = true, true
			}
		}
	}
}

// finish fills the line fields and content of res.
func (s *scanner) finish(res *Result) {
	if !s.done && s.line >= s.start && len(s.buf) > s.lineStart {
		// The last line has no trailing newline.
		s.endLine = s.line
	}
	total := s.newlines
	if s.n > 0 && s.last != '\n' {
		total++
	}
	res.TotalLines = total
	res.StartLine = s.start
	res.EndLine = s.endLine
	res.Truncated = s.cut || (s.stopped && total > s.endLine)
	if res.Truncated && s.endLine+1 <= total {
		res.NextOffsetLine = s.endLine + 1
	}
	if utf8.Valid(s.buf) {
		res.Content = string(s.buf)
		return
	}
	res.Content = strings.ToValidUTF8(string(s.buf), "\uFFFD")
	fitReplaced(res, s.maxBytes)
}

// fitReplaced restores the byte cap after invalid UTF-8 was replaced with
// U+FFFD (3 bytes for each invalid run, possibly 1 byte long): whole lines
// are dropped from the end of the window, and a lone line is cut on a rune
// boundary.
func fitReplaced(res *Result, maxBytes int) {
	c := res.Content
	if len(c) <= maxBytes {
		return
	}
	for len(c) > maxBytes && res.EndLine > res.StartLine {
		i := strings.LastIndexByte(c[:len(c)-1], '\n')
		c = c[:i+1]
		res.EndLine--
	}
	if len(c) > maxBytes {
		c = string(trimIncompleteRune([]byte(c[:maxBytes])))
	}
	res.Content = c
	res.Truncated = true
	res.NextOffsetLine = 0
	if res.EndLine+1 <= res.TotalLines {
		res.NextOffsetLine = res.EndLine + 1
	}
}
