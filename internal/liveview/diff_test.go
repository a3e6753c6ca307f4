package liveview

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/internal/gitindex"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/watch"
)

// fakeWatch stands in for a checkout's watcher: the test reports each
// change it makes, and a sync returns what changed since the asked
// generation (always seeing the cookie).
type fakeWatch struct {
	mu   sync.Mutex
	gen  uint64
	log  []fakeChange
	meta uint64 // generation of the last .git change
}

type fakeChange struct {
	gen  uint64
	path string
}

func (w *fakeWatch) touch(paths ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	for _, p := range paths {
		w.log = append(w.log, fakeChange{w.gen, p})
	}
}

func (w *fakeWatch) gitChanged() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	w.meta = w.gen
}

func (w *fakeWatch) sync(_ context.Context, _ string, epoch, gen uint64) (Sync, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := Sync{Ready: true, CookieSeen: true, State: watch.State{Epoch: 1, Gen: w.gen, Complete: true}}
	if epoch != 1 {
		st.Complete = false
		return st, nil
	}
	for _, c := range w.log {
		if c.gen > gen {
			st.Changed = append(st.Changed, c.path)
		}
	}
	slices.Sort(st.Changed)
	st.Changed = slices.Compact(st.Changed)
	st.Meta = w.meta > gen
	return st, nil
}

// diffRepo is a repository with a View over it and the fake watcher.
type diffRepo struct {
	t    testing.TB
	root string
	w    *fakeWatch
	v    *View
	git  *gitx.Git
}

func newDiffRepo(t testing.TB) *diffRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &diffRepo{t: t, root: root, w: &fakeWatch{}, git: &gitx.Git{}}
	r.raw("init", "-q", ".")
	r.v = New(root, t.TempDir(), r.git, r.w.sync, nil)
	t.Cleanup(r.v.Close)
	return r
}

// raw runs the test's own git (not harnessd's) for setup.
func (r *diffRepo) raw(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (r *diffRepo) write(rel string, data []byte, perm os.FileMode) {
	r.t.Helper()
	p := filepath.Join(r.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, perm); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		r.t.Fatal(err)
	}
	r.w.touch(rel)
}

// warm asks for the status until the view answers it in process (a view
// may build its base in the background first): the diffs that follow
// can then be computed in process.
func (r *diffRepo) warm(t interface{ Fatalf(string, ...any) }) {
	for range 500 {
		st, err := r.v.Status(context.Background())
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if st.Source == SourceIndex {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("the view never answered the status in process")
}

// check compares the view's diff for o with gitx's and returns its source.
func (r *diffRepo) check(t interface {
	Fatalf(string, ...any)
}, o gitx.DiffOptions) DiffResult {
	got, err := r.v.Diff(context.Background(), o)
	if err != nil {
		t.Fatalf("View.Diff(%+v): %v", o, err)
	}
	want, err := r.git.Diff(context.Background(), r.root, o)
	if err != nil {
		t.Fatalf("gitx Diff(%+v): %v", o, err)
	}
	if !reflect.DeepEqual(got.Diff, want) {
		t.Fatalf("%+v: the %s diff (%s) differs from git's:\n--- got (%d files %+v)\n%s\n--- want (%d files %+v)\n%s",
			o, got.Source, got.Reason, len(got.Files), got.Files, got.Patch, len(want.Files), want.Files, want.Patch)
	}
	return got
}

var diffLines = []string{"", "func f() {", "\treturn x", "}", "package p", "// note", "\tx++", "_start:", "a", "b", "c", "é", "\tif y {", "\t}"}

func diffContent(t *rapid.T, label string) []byte {
	lines := rapid.SliceOfN(rapid.SampledFrom(diffLines), 0, 40).Draw(t, label)
	s := strings.Join(lines, "\n")
	if len(lines) > 0 && rapid.IntRange(0, 5).Draw(t, label+"-eol") > 0 {
		s += "\n"
	}
	return []byte(s)
}

var diffPaths = []string{"a.go", "dir/b.go", "dir/sub/c.txt", "d e.txt", "z.md", "secret.env"}

// TestDiffMatchesGitProperty: on random trees edited at random (text
// edits, deletions, binary files, mode changes, staged changes, commits,
// packs), under random diff settings, the view's diff equals what
// gitx runs git for, field for field; and it is computed in process
// whenever nothing calls for git.
func TestDiffMatchesGitProperty(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	sources := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		r := newDiffRepo(t)
		for _, p := range diffPaths {
			r.write(p, diffContent(rt, "init "+p), 0o644)
		}
		r.raw("add", "-A")
		r.raw("commit", "-q", "-m", "init")
		if rapid.IntRange(0, 3).Draw(rt, "pack") == 0 {
			r.raw("gc", "-q")
		}
		for _, kv := range rapid.SliceOfN(rapid.SampledFrom([]string{
			"diff.context=1", "diff.context=0", "diff.interHunkContext=2", "diff.indentHeuristic=false",
			"core.abbrev=12", "core.abbrev=auto", "diff.algorithm=patience", "diff.suppressBlankEmpty=true",
		}), 0, 2).Draw(rt, "config") {
			k, v, _ := strings.Cut(kv, "=")
			r.raw("config", k, v)
		}
		r.w.gitChanged()
		r.warm(rt)
		for range rapid.IntRange(1, 3).Draw(rt, "steps") {
			p := rapid.SampledFrom(diffPaths).Draw(rt, "path")
			switch op := rapid.SampledFrom([]string{"edit", "edit", "edit", "delete", "binary", "chmod", "stage", "commit", "untracked"}).Draw(rt, "op"); op {
			case "edit":
				r.write(p, diffContent(rt, "edit"), 0o644)
			case "delete":
				os.Remove(filepath.Join(r.root, p))
				r.w.touch(p)
			case "binary":
				r.write(p, []byte("bin\x00ary\n"), 0o644)
			case "chmod":
				os.Chmod(filepath.Join(r.root, p), 0o755)
				r.w.touch(p)
			case "stage":
				r.raw("add", "-A")
				r.w.gitChanged()
			case "commit":
				r.raw("add", "-A")
				r.raw("commit", "-q", "--allow-empty", "-m", "step")
				r.w.gitChanged()
			case "untracked":
				r.write("new/"+strconv.Itoa(rapid.IntRange(0, 3).Draw(rt, "n"))+".txt", diffContent(rt, "new"), 0o644)
			}
			o := gitx.DiffOptions{}
			switch rapid.IntRange(0, 5).Draw(rt, "opts") {
			case 1:
				o.Paths = []string{rapid.SampledFrom([]string{"dir", "a.go", "dir/sub", "."}).Draw(rt, "spec")}
			case 2:
				o.Context = rapid.IntRange(1, 6).Draw(rt, "U")
			case 3:
				o.MaxBytes = rapid.IntRange(1, 300).Draw(rt, "max")
			case 4:
				o.Exclude = []string{"secret.env", "dir/sub"}
			case 5:
				o.Paths = []string{"*.go"}
			}
			res := r.check(rt, o)
			sources[res.Source]++
			// Asked again with nothing changed: the same answer, from the
			// cache when the first was computed in process.
			again, err := r.v.Diff(context.Background(), o)
			if err != nil || !reflect.DeepEqual(again.Diff, res.Diff) || res.Source == SourceIndex && again.Source != SourceCache {
				rt.Fatalf("the same diff on an unchanged tree: %v, from %s (%s) after %s, want the first answer (from the cache)", err, again.Source, again.Reason, res.Source)
			}
		}
	})
	if sources[SourceIndex] == 0 || sources[SourceExec] == 0 {
		t.Fatalf("sources %v: both the in-process diff and the fallback must be exercised", sources)
	}
	t.Logf("sources: %v", sources)
}

func TestParseDiffSettings(t *testing.T) {
	tests := []struct {
		cfg    string
		ctx    int
		inter  int
		indent bool
		abbrev int
		reason string
	}{
		{"", 3, 0, true, -1, ""},
		{"diff.context=5\ndiff.interhunkcontext=2\ndiff.indentheuristic=off\ncore.abbrev=10", 5, 2, false, 10, ""},
		{"core.abbrev=no", 3, 0, true, 40, ""},
		{"core.abbrev=auto\ndiff.algorithm=Myers\ndiff.noprefix=false\ndiff.srcprefix=a/", 3, 0, true, -1, ""},
		{"diff.x.xfuncname=^f\ndiff.renames=copies\ndiff.renamelimit=5", 3, 0, true, -1, ""},
		{"diff.algorithm=histogram", 0, 0, false, 0, "diff.algorithm=histogram"},
		{"diff.suppressblankempty=true", 0, 0, false, 0, "diff.suppressblankempty=true"},
		{"diff.noprefix=true", 0, 0, false, 0, "diff.noprefix=true"},
		{"diff.context=-1", 0, 0, false, 0, "diff.context=-1"},
		{"diff.context=1k", 0, 0, false, 0, "diff.context=1k"},
		{"core.autocrlf=input", 0, 0, false, 0, "core.autocrlf=input"},
		{"core.filemode=false", 0, 0, false, 0, "core.filemode=false"},
		{"core.abbrev=3", 0, 0, false, 0, "core.abbrev=3"},
		{"extensions.objectformat=sha256", 0, 0, false, 0, "extensions.objectFormat=sha256"},
		{"diff.newthing=1", 0, 0, false, 0, "diff.newthing is set"},
		{"diff.orderfile=o.txt", 0, 0, false, 0, "diff.orderfile=o.txt"},
	}
	for _, tt := range tests {
		var list bytes.Buffer
		for _, kv := range strings.Split(tt.cfg, "\n") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&list, "%s\n%s\x00", k, v)
		}
		got := parseDiffSettings(gitindex.ParseConfigList(list.Bytes()))
		if got.reason != tt.reason {
			t.Errorf("%q: reason %q, want %q", tt.cfg, got.reason, tt.reason)
			continue
		}
		if tt.reason == "" && (got.opts.Context != tt.ctx || got.opts.InterHunkContext != tt.inter || got.opts.IndentHeuristic != tt.indent || got.abbrev != tt.abbrev) {
			t.Errorf("%q: %+v abbrev %d, want context %d interhunk %d indent %v abbrev %d", tt.cfg, got.opts, got.abbrev, tt.ctx, tt.inter, tt.indent, tt.abbrev)
		}
	}
}

func TestLiteralPathspecs(t *testing.T) {
	s, why := literalPathspecs([]string{"dir", "./x.go"}, []string{"dir/sub"})
	if why != "" {
		t.Fatal(why)
	}
	for p, want := range map[string]bool{"dir/a": true, "dir": true, "dir/sub/b": false, "x.go": true, "dirx": false, "y": false} {
		if got := s.selects(p); got != want {
			t.Errorf("selects(%q) = %v, want %v", p, got, want)
		}
	}
	for _, bad := range []string{":(glob)*", "*.go", "a?", "[ab]", "../up", "/abs", ""} {
		if _, why := literalPathspecs([]string{bad}, nil); why == "" {
			t.Errorf("pathspec %q accepted", bad)
		}
	}
}
