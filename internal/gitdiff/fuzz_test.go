package gitdiff

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// applyHunks applies the hunks of a patch (the text after the +++ line)
// to old, checking each hunk's header against its lines, and returns
// the new text.
func applyHunks(old []byte, hunks string) ([]byte, error) {
	oldLines := strings.SplitAfter(string(old), "\n")
	if len(oldLines) > 0 && oldLines[len(oldLines)-1] == "" {
		oldLines = oldLines[:len(oldLines)-1]
	}
	var out []string
	next := 0 // next old line to copy
	lines := strings.SplitAfter(hunks, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := 0; i < len(lines); {
		h := lines[i]
		if !strings.HasPrefix(h, "@@ -") {
			return nil, fmt.Errorf("line %d: %q is not a hunk header", i, h)
		}
		s1, c1, s2, c2, err := parseHeader(h)
		if err != nil {
			return nil, err
		}
		if c1 == 0 {
			s1++
		}
		if c2 == 0 {
			s2++
		}
		for next < s1-1 {
			out = append(out, oldLines[next])
			next++
		}
		if len(out)+1 != s2 && !(c2 == 0 && len(out) == s2-1) {
			return nil, fmt.Errorf("hunk %q starts at new line %d, want %d", h, s2, len(out)+1)
		}
		i++
		n1, n2 := 0, 0
		for i < len(lines) && !strings.HasPrefix(lines[i], "@@ -") {
			l := lines[i]
			i++
			noEOL := i < len(lines) && lines[i] == "\\ No newline at end of file\n"
			body := l[1:]
			if noEOL {
				body = strings.TrimSuffix(body, "\n")
				i++
			}
			switch l[0] {
			case ' ':
				if next >= len(oldLines) || oldLines[next] != body {
					return nil, fmt.Errorf("context %q does not match old line %d", body, next+1)
				}
				out = append(out, body)
				next++
				n1++
				n2++
			case '-':
				if next >= len(oldLines) || oldLines[next] != body {
					return nil, fmt.Errorf("deleted %q does not match old line %d", body, next+1)
				}
				next++
				n1++
			case '+':
				out = append(out, body)
				n2++
			default:
				return nil, fmt.Errorf("bad hunk line %q", l)
			}
		}
		if n1 != c1 || n2 != c2 {
			return nil, fmt.Errorf("hunk %q holds %d,%d lines", h, n1, n2)
		}
	}
	out = append(out, oldLines[next:]...)
	return []byte(strings.Join(out, "")), nil
}

func parseHeader(h string) (s1, c1, s2, c2 int, err error) {
	rest, ok := strings.CutPrefix(h, "@@ -")
	if !ok {
		return 0, 0, 0, 0, fmt.Errorf("bad header %q", h)
	}
	a, rest, _ := strings.Cut(rest, " +")
	b, _, ok := strings.Cut(rest, " @@")
	if !ok {
		return 0, 0, 0, 0, fmt.Errorf("bad header %q", h)
	}
	rng := func(s string) (int, int, error) {
		x, y, has := strings.Cut(s, ",")
		start, err := strconv.Atoi(x)
		if err != nil {
			return 0, 0, err
		}
		if !has {
			return start, 1, nil
		}
		n, err := strconv.Atoi(y)
		return start, n, err
	}
	if s1, c1, err = rng(a); err != nil {
		return
	}
	s2, c2, err = rng(b)
	return
}

// FuzzPatch: whatever the contents and options, WritePatch does not panic,
// refuses only what it must, and its hunks turn the old text into the new
// one with headers that count their lines; the counts it returns are the
// hunks' lines.
func FuzzPatch(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nc\nd"), 3, 0, true)
	f.Add([]byte(""), []byte("x\n"), 0, 0, false)
	f.Add([]byte("func f() {\n\tx\n}\n"), []byte("func f() {\n\ty\n}\n\nfunc g() {\n}\n"), 1, 2, true)
	f.Add([]byte(strings.Repeat("l\n", 50)), []byte(strings.Repeat("l\n", 49)+"m"), 2, 1, true)
	f.Fuzz(func(t *testing.T, old, new []byte, ctx, inter int, indent bool) {
		o := Options{Context: ctx & 15, InterHunkContext: inter & 7, IndentHeuristic: indent}
		file := File{Path: "p", OldMode: ModeRegular, NewMode: ModeRegular, OldID: "1111111", NewID: "2222222", Old: old, New: new}
		got, st, err := WritePatch(nil, file, o, o)
		if err != nil {
			if IsBinary(old) || IsBinary(new) {
				return
			}
			t.Fatalf("WritePatch refused text files: %v", err)
		}
		if bytes.Equal(old, new) {
			if len(got) != 0 {
				t.Fatalf("equal sides printed %q", got)
			}
			return
		}
		_, body, ok := bytes.Cut(got, []byte("+++ b/p\n"))
		if !ok {
			t.Fatalf("no +++ line in %q", got)
		}
		applied, err := applyHunks(old, string(body))
		if err != nil {
			t.Fatalf("%v\npatch:\n%s", err, got)
		}
		if !bytes.Equal(applied, new) {
			t.Fatalf("the patch makes %q, want %q\npatch:\n%s", applied, new, got)
		}
		var plus, minus int
		for _, l := range bytes.SplitAfter(body, []byte("\n")) {
			switch {
			case bytes.HasPrefix(l, []byte("+")):
				plus++
			case bytes.HasPrefix(l, []byte("-")):
				minus++
			}
		}
		if st.Added != plus || st.Deleted != minus {
			t.Fatalf("counts %+v, hunks hold +%d -%d", st, plus, minus)
		}
	})
}
