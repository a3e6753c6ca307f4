package gitdiff

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// testRepo is a scratch repository the tests diff in with the git
// installed here, configured as harnessd's git is (no user or system
// configuration).
type testRepo struct {
	t    testing.TB
	root string
}

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	r := &testRepo{t: t, root: t.TempDir()}
	r.git("init", "-q", ".")
	return r
}

func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.fsmonitor=false", "-c", "core.quotePath=false", "-c", "color.ui=false"}, args...)...)
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1", "LC_ALL=C")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String()
}

func (r *testRepo) write(rel string, data []byte, mode os.FileMode) {
	r.t.Helper()
	p := filepath.Join(r.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		r.t.Fatal(err)
	}
}

func blobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// diffArgs are the arguments git gets for o.
func diffArgs(o Options, withU bool) []string {
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--inter-hunk-context=" + strconv.Itoa(o.InterHunkContext)}
	if withU {
		args = append(args, "-U"+strconv.Itoa(o.Context))
	}
	if !o.IndentHeuristic {
		args = append(args, "--no-indent-heuristic")
	}
	return args
}

// lineGen draws lines that make diffs interesting: few distinct ones (so
// lines match in many places), indentation, blank lines, function-like
// lines (with long and non-UTF-8 names), CRLF.
func lineGen() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.SampledFrom([]string{"", " ", "\t", "}", "{", "\treturn x", "\tx++", "  y := 2", "//", "end", "\r"}),
		rapid.SampledFrom([]string{"func f() {", "func g(a int) {", "_private:", "$var = 1", "9 not a func", "class C:", "  def m(self):"}),
		rapid.StringMatching(`[a-c ]{0,6}`),
		rapid.Custom(func(t *rapid.T) string {
			// A long function line, with bytes that are not UTF-8 or a
			// multibyte character near git's 80- and 128-byte cuts.
			n := rapid.IntRange(60, 140).Draw(t, "n")
			tail := rapid.SampledFrom([]string{"", "\xff", "é", "日本", "\xe2\x82", " \t "}).Draw(t, "tail")
			at := rapid.IntRange(0, n).Draw(t, "at")
			s := "func " + strings.Repeat("x", n)
			return s[:at] + tail + s[at:]
		}),
	)
}

func fileGen() *rapid.Generator[[]byte] {
	return rapid.Custom(func(t *rapid.T) []byte {
		lines := rapid.SliceOfN(lineGen(), 0, 60).Draw(t, "lines")
		var b bytes.Buffer
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		data := b.Bytes()
		if len(data) > 0 && rapid.Bool().Draw(t, "noEOL") {
			data = data[:len(data)-1]
		}
		return data
	})
}

// editGen edits a file: inserts, deletes, replaces and moves lines.
func edit(t *rapid.T, data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for range rapid.IntRange(0, 6).Draw(t, "edits") {
		switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
		case op == 0 || len(lines) == 0: // insert
			at := rapid.IntRange(0, len(lines)).Draw(t, "at")
			ins := rapid.SliceOfN(lineGen(), 1, 8).Draw(t, "ins")
			for i := range ins {
				ins[i] += "\n"
			}
			lines = append(lines[:at], append(ins, lines[at:]...)...)
		case op == 1: // delete
			at := rapid.IntRange(0, len(lines)-1).Draw(t, "at")
			n := rapid.IntRange(1, len(lines)-at).Draw(t, "n")
			lines = append(lines[:at], lines[at+n:]...)
		case op == 2: // replace
			at := rapid.IntRange(0, len(lines)-1).Draw(t, "at")
			lines[at] = lineGen().Draw(t, "line") + "\n"
		default: // move a block
			at := rapid.IntRange(0, len(lines)-1).Draw(t, "at")
			n := rapid.IntRange(1, len(lines)-at).Draw(t, "n")
			block := append([]string(nil), lines[at:at+n]...)
			rest := append(append([]string(nil), lines[:at]...), lines[at+n:]...)
			to := rapid.IntRange(0, len(rest)).Draw(t, "to")
			lines = append(rest[:to], append(block, rest[to:]...)...)
		}
	}
	out := []byte(strings.Join(lines, ""))
	if len(out) > 0 && rapid.Bool().Draw(t, "dropEOL") && out[len(out)-1] == '\n' {
		out = out[:len(out)-1]
	}
	return out
}

// TestPatchMatchesGitProperty: for random files and random edits of them,
// with random context, inter-hunk context and indent heuristic, the patch
// and the counts equal `git diff` and `git diff --numstat` byte for byte.
func TestPatchMatchesGitProperty(t *testing.T) {
	r := newTestRepo(t)
	rapid.Check(t, func(rt *rapid.T) {
		path := rapid.SampledFrom([]string{"f.txt", "dir/sub file.go", "é/x"}).Draw(rt, "path")
		old := fileGen().Draw(rt, "old")
		var new []byte
		if rapid.IntRange(0, 4).Draw(rt, "fresh") == 0 {
			new = fileGen().Draw(rt, "new")
		} else {
			new = edit(rt, old)
		}
		o := Options{
			Context:          rapid.SampledFrom([]int{3, 3, 0, 1, 2, 5}).Draw(rt, "context"),
			InterHunkContext: rapid.SampledFrom([]int{0, 0, 1, 4}).Draw(rt, "interhunk"),
			IndentHeuristic:  rapid.IntRange(0, 3).Draw(rt, "indent") > 0,
		}
		statOpts := o
		statOpts.Context = 3
		mode := uint32(ModeRegular)
		perm := os.FileMode(0o644)
		if rapid.IntRange(0, 5).Draw(rt, "exec") == 0 {
			mode, perm = ModeExecutable, 0o755
		}
		r.write(path, old, perm)
		r.git("add", "--", path)
		deleted := rapid.IntRange(0, 10).Draw(rt, "delete") == 0
		f := File{Path: path, OldMode: mode, NewMode: mode, OldID: blobID(old)[:7], NewID: blobID(new)[:7], Old: old, New: new}
		if deleted {
			if err := os.Remove(filepath.Join(r.root, filepath.FromSlash(path))); err != nil {
				rt.Fatal(err)
			}
			f.NewMode, f.NewID, f.New = 0, "0000000", nil
		} else {
			r.write(path, new, perm)
		}
		got, st, err := WritePatch(nil, f, o, statOpts)
		if err != nil {
			rt.Fatalf("WritePatch: %v", err)
		}
		want := r.git(append(diffArgs(o, true), "--", path)...)
		if string(got) != want {
			rt.Fatalf("patch differs from git's\n--- got\n%s\n--- want\n%s", got, want)
		}
		numstat := r.git(append(append(diffArgs(statOpts, false), "--numstat"), "--", path)...)
		wantStat := ""
		if len(got) > 0 {
			wantStat = fmt.Sprintf("%d\t%d\t%s\n", st.Added, st.Deleted, path)
		}
		if numstat != wantStat {
			rt.Fatalf("numstat %q, want %q (patch %q)", wantStat, numstat, got)
		}
		r.git("rm", "-q", "--cached", "-f", "--", path)
	})
}

// TestLargePatchMatchesGitProperty: files of thousands of lines with
// scattered edits make the search costly enough for xdiff's heuristics
// (a cost past 256 cuts the search; long snakes end it early): the patch
// must still be git's.
func TestLargePatchMatchesGitProperty(t *testing.T) {
	r := newTestRepo(t)
	rapid.Check(t, func(rt *rapid.T) {
		// Past 8,000 lines a side, the search may run long enough
		// (a cost past 256 with mxcost 512: 32,768 lines a side) for the snake heuristic.
		n := rapid.SampledFrom([]int{300, 1000, 4000, 12000, 40000}).Draw(rt, "lines")
		distinct := rapid.SampledFrom([]int{3, 20, 200, 5000, 100000}).Draw(rt, "distinct")
		seed := rapid.Uint64().Draw(rt, "seed")
		line := func(i uint64) string {
			x := (i*0x9E3779B97F4A7C15 + seed) >> 33
			switch x % 7 {
			case 0:
				return ""
			case 1:
				return fmt.Sprintf("func f%d() {", x%uint64(distinct))
			default:
				return fmt.Sprintf("\tv%d := %d", x%uint64(distinct), x%3)
			}
		}
		var old, new bytes.Buffer
		changeRate := rapid.SampledFrom([]uint64{2, 5, 30, 200}).Draw(rt, "rate")
		// Swapped neighbours keep every line matched on the other side,
		// so none is set aside before the search and its cost grows.
		swap := rapid.Bool().Draw(rt, "swap")
		var pending string
		for i := uint64(0); i < uint64(n); i++ {
			l := line(i)
			old.WriteString(l + "\n")
			h := (i*0xBF58476D1CE4E5B9 + seed*7) >> 40
			switch {
			case pending != "":
				new.WriteString(l + "\n" + pending)
				pending = ""
			case swap && h%changeRate == 0:
				pending = l + "\n"
			case swap:
				new.WriteString(l + "\n")
			case h%changeRate == 0:
				new.WriteString(line(i+uint64(n)) + "\n") // replaced
			case h%changeRate == 1:
				// deleted
			default:
				new.WriteString(l + "\n")
				if h%(changeRate*3) == 2 {
					new.WriteString(line(i*3+1) + "\n") // inserted
				}
			}
		}
		new.WriteString(pending)
		o := DefaultOptions
		if rapid.Bool().Draw(rt, "zero") {
			o.Context = 0
		}
		r.write("big.go", old.Bytes(), 0o644)
		r.git("add", "big.go")
		r.write("big.go", new.Bytes(), 0o644)
		f := File{Path: "big.go", OldMode: ModeRegular, NewMode: ModeRegular, OldID: blobID(old.Bytes())[:7], NewID: blobID(new.Bytes())[:7], Old: old.Bytes(), New: new.Bytes()}
		got, st, err := WritePatch(nil, f, o, DefaultOptions)
		if err != nil {
			rt.Fatal(err)
		}
		if want := r.git(append(diffArgs(o, true), "--", "big.go")...); string(got) != want {
			rt.Fatalf("patch of %d lines differs from git's (%d vs %d bytes)\n%s", n, len(got), len(want), firstDiff(string(got), want))
		}
		numstat := r.git("diff", "--numstat", "--", "big.go")
		if want := fmt.Sprintf("%d\t%d\tbig.go\n", st.Added, st.Deleted); len(got) > 0 && numstat != want {
			rt.Fatalf("numstat %q, want %q", want, numstat)
		}
	})
}

// firstDiff shows where two texts start to differ.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-300)
	return fmt.Sprintf("at byte %d:\n--- got\n%s\n--- want\n%s", i, a[lo:min(len(a), i+300)], b[lo:min(len(b), i+300)])
}
