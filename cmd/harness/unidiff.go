package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/internal/patch"
)

// patchOps turns a unified diff (git diff, diff -u) into apply_patch
// operations: a hunk becomes a replace of its old lines (context and
// removed) by its new ones (context and added), which apply_patch refuses
// unless they are found exactly once; a new file (--- /dev/null) a create,
// a removed one (+++ /dev/null) a delete. Paths are taken as git writes
// them, relative to the repository root, without their a/ and b/ prefixes.
func patchOps(diff string) ([]patch.Op, error) {
	lines := strings.SplitAfter(diff, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var ops []patch.Op
	var oldPath, newPath, mode string
	for i := 0; i < len(lines); {
		l := strings.TrimRight(lines[i], "\r\n")
		switch {
		case strings.HasPrefix(l, "diff --git "):
			oldPath, newPath, mode = "", "", ""
			i++
		case strings.HasPrefix(l, "new file mode 100"):
			mode = "0" + strings.TrimPrefix(l, "new file mode 100")
			i++
		case strings.HasPrefix(l, "rename from "), strings.HasPrefix(l, "copy from "):
			return nil, usageErr{"line " + strconv.Itoa(i+1) + ": renames and copies are not supported: give the new file as a new file and delete the old one"}
		case strings.HasPrefix(l, "Binary files ") || l == "GIT binary patch":
			return nil, usageErr{"line " + strconv.Itoa(i+1) + ": binary changes are not supported: write the file with 'harness call apply_patch' (op write)"}
		case strings.HasPrefix(l, "--- "):
			oldPath = diffPath(strings.TrimPrefix(l, "--- "))
			i++
		case strings.HasPrefix(l, "+++ "):
			newPath = diffPath(strings.TrimPrefix(l, "+++ "))
			i++
		case strings.HasPrefix(l, "@@ "):
			if oldPath == "" || newPath == "" {
				return nil, usageErr{fmt.Sprintf("line %d: a hunk before its file's ---/+++ header", i+1)}
			}
			h, next, err := readHunk(lines, i)
			if err != nil {
				return nil, err
			}
			i = next
			switch {
			case oldPath == "/dev/null":
				op := patch.Op{Op: "create", Path: newPath, Content: h.new}
				if mode != "" && mode != "0644" {
					op.Mode = mode
				}
				ops = append(ops, op)
			case newPath == "/dev/null":
				ops = append(ops, patch.Op{Op: "delete", Path: oldPath})
			case oldPath != newPath:
				return nil, usageErr{fmt.Sprintf("line %d: %s renamed to %s: renames are not supported", i, oldPath, newPath)}
			case h.old == "":
				return nil, usageErr{fmt.Sprintf("line %d: a hunk of %s without context lines: make the diff with context (git diff -U3)", i, newPath)}
			default:
				ops = append(ops, patch.Op{Op: "replace", Path: newPath, OldText: h.old, NewText: h.new})
			}
		default:
			i++ // index lines, modes, a commit message before the diff
		}
	}
	if len(ops) == 0 {
		return nil, usageErr{"no hunk found: give a unified diff (git diff, diff -u) on stdin or as FILE"}
	}
	return mergeWholeFile(ops), nil
}

// mergeWholeFile keeps one delete per file: git prints a removed file as
// one hunk, other tools may split it.
func mergeWholeFile(ops []patch.Op) []patch.Op {
	out := ops[:0]
	deleted := map[string]bool{}
	for _, op := range ops {
		if op.Op == "delete" {
			if deleted[op.Path] {
				continue
			}
			deleted[op.Path] = true
		}
		out = append(out, op)
	}
	return out
}

// diffPath is the path of a ---/+++ line: without its timestamp (diff -u
// separates it with a tab) and its a/ or b/ prefix.
func diffPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "/dev/null" {
		return s
	}
	if unq, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		s = unq
	}
	for _, p := range []string{"a/", "b/"} {
		if strings.HasPrefix(s, p) {
			return s[len(p):]
		}
	}
	return s
}

// hunk is the old and new text of one hunk.
type hunk struct{ old, new string }

// readHunk reads the hunk whose @@ line is lines[at]; next is the line
// after it.
func readHunk(lines []string, at int) (h hunk, next int, err error) {
	oldN, newN, err := hunkCounts(strings.TrimRight(lines[at], "\r\n"))
	if err != nil {
		return hunk{}, 0, usageErr{fmt.Sprintf("line %d: %v", at+1, err)}
	}
	var oldB, newB strings.Builder
	last := byte(0) // which side the previous line went to: ' ', '-' or '+'
	i := at + 1
	for ; i < len(lines) && (oldN > 0 || newN > 0 || strings.HasPrefix(lines[i], `\`)); i++ {
		l := lines[i]
		if !strings.HasSuffix(l, "\n") {
			l += "\n" // the diff's own last line lost its newline
		}
		kind := l[0]
		if l == "\n" || l == "\r\n" {
			kind, l = ' ', " "+l // an empty context line whose space an editor trimmed
		}
		body := l[1:]
		switch kind {
		case ' ':
			oldB.WriteString(body)
			newB.WriteString(body)
			oldN--
			newN--
		case '-':
			oldB.WriteString(body)
			oldN--
		case '+':
			newB.WriteString(body)
			newN--
		case '\\': // "\ No newline at end of file": the previous line has none
			switch last {
			case ' ':
				trimNL(&oldB)
				trimNL(&newB)
			case '-':
				trimNL(&oldB)
			case '+':
				trimNL(&newB)
			}
			continue
		default:
			return hunk{}, 0, usageErr{fmt.Sprintf("line %d: %q is not a line of a hunk (space, -, + or \\ first); the hunk at line %d is shorter than its header says", i+1, clip(l, 40), at+1)}
		}
		last = kind
		if oldN < 0 || newN < 0 {
			return hunk{}, 0, usageErr{fmt.Sprintf("line %d: the hunk at line %d is longer than its header says", i+1, at+1)}
		}
	}
	if oldN > 0 || newN > 0 {
		return hunk{}, 0, usageErr{fmt.Sprintf("the hunk at line %d ends early: %d old and %d new lines missing", at+1, oldN, newN)}
	}
	return hunk{old: oldB.String(), new: newB.String()}, i, nil
}

func trimNL(b *strings.Builder) {
	s := strings.TrimSuffix(b.String(), "\n")
	b.Reset()
	b.WriteString(s)
}

// hunkCounts parses "@@ -a,b +c,d @@ ..." into the old and new line counts
// (a missing count is 1).
func hunkCounts(l string) (oldN, newN int, err error) {
	f := strings.Fields(l)
	if len(f) < 4 || f[0] != "@@" || f[3] != "@@" || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, fmt.Errorf("%q is not a hunk header (@@ -a,b +c,d @@)", l)
	}
	count := func(r string) (int, error) {
		start, n, ok := strings.Cut(r[1:], ",")
		if v, err := strconv.Atoi(start); err != nil || v < 0 {
			return 0, fmt.Errorf("bad line number in %q", l)
		}
		if !ok {
			return 1, nil
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("bad line count in %q", l)
		}
		return v, nil
	}
	if oldN, err = count(f[1]); err != nil {
		return 0, 0, err
	}
	newN, err = count(f[2])
	return oldN, newN, err
}
