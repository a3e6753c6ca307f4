package gitdiff

import (
	"bytes"
	"errors"
	"strconv"
)

// Options are the settings of `git diff` that shape the hunks of a text
// file.
type Options struct {
	// Context is the number of context lines (-U<n>, diff.context; git's
	// default is 3).
	Context int
	// InterHunkContext is diff.interHunkContext (--inter-hunk-context):
	// hunks closer than 2*Context+InterHunkContext lines are merged.
	InterHunkContext int
	// IndentHeuristic is diff.indentHeuristic (git's default: on).
	IndentHeuristic bool
}

// DefaultOptions are git's defaults.
var DefaultOptions = Options{Context: 3, IndentHeuristic: true}

// MaxSize is the largest file xdiff diffs (MAX_XDIFF_SIZE): git refuses
// larger ones.
const MaxSize = 1 << 30

// ErrTooLarge: a side is larger than MaxSize.
var ErrTooLarge = errors.New("gitdiff: file larger than xdiff's limit")

// Script returns the changes git's Myers diff finds between old and new
// with these options (only Context matters: at 0, git first trims the
// common tail, which can change the script).
func Script(old, new []byte, o Options) ([]Change, error) {
	r, err := diff(old, new, o)
	if err != nil {
		return nil, err
	}
	return r.script, nil
}

// result is one diff: both sides' records and the script.
type result struct {
	f1, f2 *file
	script []Change
}

// diff is xdi_diff with git's Myers algorithm: the common tail trimmed at
// context 0, then xdl_do_diff, both compactions and the script.
func diff(old, new []byte, o Options) (result, error) {
	if len(old) > MaxSize || len(new) > MaxSize {
		return result{}, ErrTooLarge
	}
	if o.Context == 0 {
		old, new = trimCommonTail(old, new)
	}
	f1, f2 := prepare(old, new)
	doDiff(f1, f2, false)
	compact(f1, f2, o.IndentHeuristic)
	compact(f2, f1, o.IndentHeuristic)
	return result{f1: f1, f2: f2, script: buildScript(f1, f2)}, nil
}

// trimCommonTail is xdiff-interface.c's trim_common_tail: whole 1 KiB
// blocks the two sides end with are dropped, up to a line end.
func trimCommonTail(a, b []byte) ([]byte, []byte) {
	const blk = 1024
	trimmed := 0
	ap, bp := len(a), len(b)
	smaller := min(len(a), len(b))
	for blk+trimmed <= smaller && bytes.Equal(a[ap-blk:ap], b[bp-blk:bp]) {
		trimmed += blk
		ap -= blk
		bp -= blk
	}
	recovered := 0
	for recovered < trimmed {
		c := a[ap+recovered]
		recovered++
		if c == '\n' {
			break
		}
	}
	return a[:len(a)-(trimmed-recovered)], b[:len(b)-(trimmed-recovered)]
}

// Stat counts the lines a patch adds and deletes.
type Stat struct {
	Added, Deleted int
}

// Count returns what `git diff --numstat` counts for old -> new: the
// lines of the script git computes with these options.
func Count(old, new []byte, o Options) (Stat, error) {
	s, err := Script(old, new, o)
	if err != nil {
		return Stat{}, err
	}
	return stat(s), nil
}

func stat(script []Change) Stat {
	var st Stat
	for _, c := range script {
		st.Added += c.Chg2
		st.Deleted += c.Chg1
	}
	return st
}

// emit is xdl_emit_diff without function context.
func (r result) emit(w []byte, o Options) []byte {
	ctx := o.Context
	maxCommon := 2*ctx + o.InterHunkContext
	f1, f2 := r.f1, r.f2
	n1, n2 := len(f1.recs), len(f2.recs)
	funcLinePrev := -1
	var funcLine []byte
	for x := 0; x < len(r.script); {
		// xdl_get_hunk: the changes of this hunk are script[x:y+1].
		y := x
		for y+1 < len(r.script) {
			prev, next := r.script[y], r.script[y+1]
			if next.I1-(prev.I1+prev.Chg1) > maxCommon {
				break
			}
			y++
		}
		xch, xche := r.script[x], r.script[y]
		s1 := max(xch.I1-ctx, 0)
		s2 := max(xch.I2-ctx, 0)
		lctx := min(ctx, n1-(xche.I1+xche.Chg1), n2-(xche.I2+xche.Chg2))
		e1 := xche.I1 + xche.Chg1 + lctx
		e2 := xche.I2 + xche.Chg2 + lctx

		if l, fl := f1.funcLine(s1-1, funcLinePrev); l >= 0 {
			funcLine = fl
		}
		funcLinePrev = s1 - 1
		w = hunkHeader(w, s1+1, e1-s1, s2+1, e2-s2, funcLine)

		for ; s2 < xch.I2; s2++ {
			w = emitRecord(w, ' ', f2.recs[s2])
		}
		s1, s2 = xch.I1, xch.I2
		for i := x; ; i++ {
			c := r.script[i]
			for ; s1 < c.I1 && s2 < c.I2; s1, s2 = s1+1, s2+1 {
				w = emitRecord(w, ' ', f2.recs[s2])
			}
			for s1 = c.I1; s1 < c.I1+c.Chg1; s1++ {
				w = emitRecord(w, '-', f1.recs[s1])
			}
			for s2 = c.I2; s2 < c.I2+c.Chg2; s2++ {
				w = emitRecord(w, '+', f2.recs[s2])
			}
			if i == y {
				break
			}
			s1, s2 = c.I1+c.Chg1, c.I2+c.Chg2
		}
		for s2 = xche.I2 + xche.Chg2; s2 < e2; s2++ {
			w = emitRecord(w, ' ', f2.recs[s2])
		}
		x = y + 1
	}
	return w
}

// noNewline follows a last line that has no "\n".
const noNewline = "\n\\ No newline at end of file\n"

func emitRecord(w []byte, sign byte, rec []byte) []byte {
	w = append(w, sign)
	w = append(w, rec...)
	if rec[len(rec)-1] != '\n' {
		w = append(w, noNewline...)
	}
	return w
}

// funcLineMax is the size of xdiff's function-name buffer.
const funcLineMax = 80

// funcLine is get_func_line: the nearest line at or above start (down to
// limit, excluded) that git's default rule takes for a function name, and
// that name; -1 when there is none.
func (f *file) funcLine(start, limit int) (int, []byte) {
	step := 1
	if start > limit {
		step = -1
	}
	for l := start; l != limit && 0 <= l && l < len(f.recs); l += step {
		if name, ok := defaultFuncName(f.recs[l]); ok {
			return l, name
		}
	}
	return -1, nil
}

// defaultFuncName is xemit.c's def_ff: a line starting with an ASCII
// letter, '_' or '$' names a function; the name is its first 80 bytes
// without trailing whitespace.
func defaultFuncName(rec []byte) ([]byte, bool) {
	if len(rec) == 0 {
		return nil, false
	}
	c := rec[0]
	if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$') {
		return nil, false
	}
	n := min(len(rec), funcLineMax)
	for n > 0 && isSpace(rec[n-1]) {
		n--
	}
	return rec[:n], true
}

// hunkHeaderMax is the size of xdiff's hunk header buffer.
const hunkHeaderMax = 128

// hunkHeader appends the hunk header line as git prints it: xdiff's
// "@@ -s1,c1 +s2,c2 @@ name" (name cut to fit 128 bytes), then diff.c
// cuts the line before its first byte that is not valid UTF-8
// (sane_truncate_line) and ends it with a newline.
func hunkHeader(w []byte, s1, c1, s2, c2 int, name []byte) []byte {
	start := len(w)
	w = append(w, "@@ -"...)
	w = appendRange(w, s1, c1)
	w = append(w, " +"...)
	w = appendRange(w, s2, c2)
	w = append(w, " @@"...)
	if len(name) > 0 {
		w = append(w, ' ')
		room := hunkHeaderMax - (len(w) - start) - 1
		if len(name) > room {
			name = name[:room]
		}
		w = append(w, name...)
	}
	w = append(w, '\n')
	line := w[start:]
	if n := validPrefix(line); n < len(line) {
		w = append(w[:start+n], '\n')
	}
	return w
}

func appendRange(w []byte, s, c int) []byte {
	if c == 0 {
		s--
	}
	w = strconv.AppendInt(w, int64(s), 10)
	if c != 1 {
		w = append(w, ',')
		w = strconv.AppendInt(w, int64(c), 10)
	}
	return w
}

// validPrefix returns the length of the longest prefix of b that git's
// pick_one_utf8_char reads as UTF-8 (it rejects overlong forms,
// surrogates, U+FFFE, U+FFFF and code points past U+10FFFF).
func validPrefix(b []byte) int {
	i := 0
	for i < len(b) {
		s := b[i:]
		n := 0
		switch {
		case s[0] < 0x80:
			n = 1
		case s[0]&0xe0 == 0xc0:
			if len(s) >= 2 && s[1]&0xc0 == 0x80 && s[0]&0xfe != 0xc0 {
				n = 2
			}
		case s[0]&0xf0 == 0xe0:
			if len(s) >= 3 && s[1]&0xc0 == 0x80 && s[2]&0xc0 == 0x80 &&
				!(s[0] == 0xe0 && s[1]&0xe0 == 0x80) &&
				!(s[0] == 0xed && s[1]&0xe0 == 0xa0) &&
				!(s[0] == 0xef && s[1] == 0xbf && s[2]&0xfe == 0xbe) {
				n = 3
			}
		case s[0]&0xf8 == 0xf0:
			if len(s) >= 4 && s[1]&0xc0 == 0x80 && s[2]&0xc0 == 0x80 && s[3]&0xc0 == 0x80 &&
				!(s[0] == 0xf0 && s[1]&0xf0 == 0x80) &&
				!(s[0] == 0xf4 && s[1] > 0x8f) && s[0] <= 0xf4 {
				n = 4
			}
		}
		if n == 0 {
			return i
		}
		i += n
	}
	return i
}
