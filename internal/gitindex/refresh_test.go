package gitindex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// execStatus is the oracle: gitx's own `git status` of dir.
func execStatus(t testing.TB, dir string) gitx.Status {
	t.Helper()
	st, err := (&gitx.Git{}).Status(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// realLsOthers is lsOthers as the caller implements it, counting calls.
func realLsOthers(t testing.TB, dir string, calls *int) func([]string) ([]string, error) {
	return func(paths []string) ([]string, error) {
		*calls++
		args := append([]string{"--literal-pathspecs", "ls-files", "-z", "--others", "--exclude-standard", "--"}, paths...)
		out, _, err := (&gitx.Git{}).Run(context.Background(), dir, 0, args...)
		if err != nil {
			return nil, err
		}
		var got []string
		for _, p := range strings.Split(string(out), "\x00") {
			if p != "" {
				got = append(got, p)
			}
		}
		return got, nil
	}
}

// fixture is a repository with a base status and index.
type fixture struct {
	t    testing.TB
	dir  string
	base gitx.Status
	ix   *Index
	// attrs is kept from one refresh to the next, as the view keeps it,
	// until the next base.
	attrs *Attributes
	cfg   TreeConfig
}

func newFixture(t testing.TB, files map[string]string) *fixture {
	f := &fixture{t: t, dir: newRepo(t, "sha1", files)}
	f.rebase()
	return f
}

// rebase takes a new base: the exec status, index and configuration of
// now.
func (f *fixture) rebase() {
	f.t.Helper()
	f.base = execStatus(f.t, f.dir)
	gitDir, _, err := GitDirs(f.dir)
	must(f.t, err)
	ix, err := ReadFile(filepath.Join(gitDir, "index"), 20)
	if err != nil {
		f.t.Fatal(err)
	}
	f.ix = ix
	out, _, err := (&gitx.Git{}).Run(context.Background(), f.dir, 0, "config", "-z", "--list")
	must(f.t, err)
	cfg, reason := ParseTreeConfig(ParseConfigList(out))
	if reason != "" {
		f.t.Fatalf("config: %s", reason)
	}
	f.cfg, f.attrs = cfg, nil
}

// checkout is the fixture as the view hands it to Refresh.
func (f *fixture) checkout(lsCalls *int) *Checkout {
	f.t.Helper()
	if f.attrs == nil {
		_, common, err := GitDirs(f.dir)
		must(f.t, err)
		f.attrs, err = NewAttributes(f.dir, common, f.ix, f.cfg.IgnoreCase, GitBlob(context.Background(), &gitx.Git{}, f.dir))
		must(f.t, err)
	}
	return &Checkout{Root: f.dir, Index: f.ix, Config: f.cfg, Attrs: f.attrs,
		LsOthers: realLsOthers(f.t, f.dir, lsCalls), AskGit: GitUnstaged(context.Background(), &gitx.Git{}, f.dir)}
}

func (f *fixture) git(args ...string) { f.t.Helper(); testutil.Git(f.t, f.dir, args...) }

func (f *fixture) abs(p string) string { return filepath.Join(f.dir, filepath.FromSlash(p)) }

func (f *fixture) write(p, body string) {
	f.t.Helper()
	must(f.t, os.MkdirAll(filepath.Dir(f.abs(p)), 0o755))
	must(f.t, os.WriteFile(f.abs(p), []byte(body), 0o644))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// refresh runs Refresh for changed and returns it and the lsOthers calls.
func (f *fixture) refresh(changed ...string) (gitx.Status, int, error) {
	calls := 0
	st, err := f.checkout(&calls).Refresh(f.base, changed)
	return st, calls, err
}

// TestRefreshCases: for each kind of work-tree change (reported the way a
// watcher reports it), Refresh equals git status, and lsOthers runs only
// when a changed path is not a tracked file.
func TestRefreshCases(t *testing.T) {
	files := map[string]string{
		".gitignore": "*.log\n!keep.log\nbuild/\n",
		"a.go":       "package a\n", "b.txt": "bee\n", "run.sh": "#!/bin/sh\n",
		"dir/x.txt": "x\n", "dir/sub/y.txt": "y\n", "a.b": "dot", "a/b": "slash",
		"link": "@a.go", "other/z.txt": "z\n",
	}
	tests := []struct {
		name    string
		staged  func(f *fixture) // index changes before the base
		mutate  func(f *fixture)
		changed []string
		calls   int // lsOthers calls wanted
	}{
		{name: "edit", mutate: func(f *fixture) { f.write("a.go", "package b\n") }, changed: []string{"a.go"}},
		{name: "same size", mutate: func(f *fixture) { f.write("b.txt", "bed\n") }, changed: []string{"b.txt"}},
		{name: "edit and revert", staged: func(f *fixture) { f.write("b.txt", "changed\n") },
			mutate: func(f *fixture) { f.write("b.txt", "bee\n") }, changed: []string{"b.txt"}},
		{name: "delete", mutate: func(f *fixture) { must(t, os.Remove(f.abs("b.txt"))) }, changed: []string{"b.txt"}},
		{name: "chmod +x", mutate: func(f *fixture) { must(t, os.Chmod(f.abs("run.sh"), 0o755)) }, changed: []string{"run.sh"}},
		{name: "file to symlink", mutate: func(f *fixture) {
			must(t, os.Remove(f.abs("b.txt")))
			must(t, os.Symlink("a.go", f.abs("b.txt")))
		}, changed: []string{"b.txt"}},
		{name: "symlink to file", mutate: func(f *fixture) {
			must(t, os.Remove(f.abs("link")))
			f.write("link", "a.go")
		}, changed: []string{"link"}},
		{name: "symlink retarget", mutate: func(f *fixture) {
			must(t, os.Remove(f.abs("link")))
			must(t, os.Symlink("b.txt", f.abs("link")))
		}, changed: []string{"link"}},
		{name: "file to dir", mutate: func(f *fixture) {
			must(t, os.Remove(f.abs("b.txt")))
			f.write("b.txt/inner", "i\n")
		}, changed: []string{"b.txt"}, calls: 1},
		{name: "file to dir, child reported", mutate: func(f *fixture) {
			must(t, os.Remove(f.abs("b.txt")))
			f.write("b.txt/inner", "i\n")
		}, changed: []string{"b.txt/inner"}, calls: 1},
		{name: "dir to file, parent reported", mutate: func(f *fixture) {
			must(t, os.RemoveAll(f.abs("dir")))
			f.write("dir", "now a file\n")
		}, changed: []string{"dir"}, calls: 1},
		{name: "dir to symlink", mutate: func(f *fixture) {
			must(t, os.Rename(f.abs("dir"), f.abs("moved")))
			must(t, os.Symlink("moved", f.abs("dir")))
		}, changed: []string{"dir", "moved"}, calls: 1},
		{name: "mv dir", mutate: func(f *fixture) { must(t, os.Rename(f.abs("dir"), f.abs("renamed"))) },
			changed: []string{"dir", "renamed"}, calls: 1},
		{name: "rm dir", mutate: func(f *fixture) { must(t, os.RemoveAll(f.abs("dir"))) }, changed: []string{"dir"}},
		{name: "new files, top dir reported", mutate: func(f *fixture) {
			f.write("new/deep/er/f.txt", "f")
			f.write("new/g.txt", "g")
			f.write("new/h.log", "ignored")
			f.write("new/keep.log", "negated")
			f.write("new/build/out.o", "ignored dir")
		}, changed: []string{"new"}, calls: 1},
		{name: "ignored only", mutate: func(f *fixture) { f.write("x.log", "l") }, changed: []string{"x.log"}, calls: 1},
		{name: "a.b and a/b", mutate: func(f *fixture) {
			f.write("a.b", "dot2")
			f.write("a/b", "slash2")
			f.write("a.c", "new")
			f.write("a/c", "new")
		}, changed: []string{"a/b", "a.b", "a/c", "a.c"}, calls: 1},
		{name: "patch temp file", mutate: func(f *fixture) { f.write("dir/.x.txt.harnessd-tmp-1a2b", "tmp") },
			changed: []string{"dir/.x.txt.harnessd-tmp-1a2b"}, calls: 1},
		{name: "whole tree", mutate: func(f *fixture) {
			f.write("a.go", "package c\n")
			f.write("u/v.txt", "v")
		}, changed: []string{"."}, calls: 1},
		{name: "git dir ignored", mutate: func(f *fixture) { f.write(".git/cookie-1", "") }, changed: []string{".git/cookie-1", ".git"}},
		{name: "duplicates and dot paths", mutate: func(f *fixture) { f.write("a.go", "package d\n") },
			changed: []string{"a.go", "./a.go", "a.go", "dir/../a.go"}},
		{name: "MM", staged: func(f *fixture) { f.write("a.go", "package s\n"); f.git("add", "a.go") },
			mutate: func(f *fixture) { f.write("a.go", "package w\n") }, changed: []string{"a.go"}},
		{name: "MM reverted", staged: func(f *fixture) {
			f.write("a.go", "package s\n")
			f.git("add", "a.go")
			f.write("a.go", "package w\n")
		}, mutate: func(f *fixture) { f.write("a.go", "package s\n") }, changed: []string{"a.go"}},
		{name: "AD", staged: func(f *fixture) { f.write("added.txt", "a"); f.git("add", "added.txt") },
			mutate: func(f *fixture) { must(t, os.Remove(f.abs("added.txt"))) }, changed: []string{"added.txt"}},
		{name: "staged rename edited", staged: func(f *fixture) { f.git("mv", "b.txt", "c.txt") },
			mutate: func(f *fixture) { f.write("c.txt", "sea\n") }, changed: []string{"c.txt"}},
		{name: "staged deletion reappears", staged: func(f *fixture) { f.git("rm", "-q", "b.txt") },
			mutate: func(f *fixture) { f.write("b.txt", "back\n") }, changed: []string{"b.txt"}, calls: 1},
		{name: "untracked deleted", staged: func(f *fixture) { f.write("u1.txt", "u") },
			mutate: func(f *fixture) { must(t, os.Remove(f.abs("u1.txt"))) }, changed: []string{"u1.txt"}},
		{name: "untracked dir emptied", staged: func(f *fixture) { f.write("ud/a", "a"); f.write("ud/b", "b") },
			mutate: func(f *fixture) { must(t, os.Remove(f.abs("ud/a"))) }, changed: []string{"ud/a"}},
		{name: "nothing changed", mutate: func(f *fixture) {}, changed: nil},
		{name: "new .gitignore ignoring itself", staged: func(f *fixture) { f.write("u/a.txt", "a"); f.write("u/b.tmp", "b") },
			mutate: func(f *fixture) { f.write("u/.gitignore", "*\n") }, changed: []string{"u/.gitignore"}, calls: 1},
		{name: "tracked .gitignore edited", mutate: func(f *fixture) {
			f.write("keep.log", "now visible")
			f.write("dir/new.txt", "n")
			f.write(".gitignore", "*.txt\n")
		}, changed: []string{".gitignore", "keep.log", "dir/new.txt"}, calls: 1},
		{name: "untracked .gitignore deleted", staged: func(f *fixture) {
			f.write("u/.gitignore", "*.tmp\n")
			f.write("u/b.tmp", "b")
		}, mutate: func(f *fixture) { must(t, os.Remove(f.abs("u/.gitignore"))) }, changed: []string{"u/.gitignore"}, calls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, files)
			if tt.staged != nil {
				tt.staged(f)
				f.rebase()
			}
			tt.mutate(f)
			got, calls, err := f.refresh(tt.changed...)
			if err != nil {
				t.Fatal(err)
			}
			if want := execStatus(t, f.dir); !reflect.DeepEqual(got, want) {
				t.Errorf("Refresh:\n got %+v\nwant %+v", got, want)
			}
			if calls != tt.calls {
				t.Errorf("lsOthers ran %d times, want %d", calls, tt.calls)
			}
		})
	}
}

// TestRefreshRefuses: bad changed paths are INVALID_ARGUMENT; cases Refresh
// does not model (a nested repository appearing, a truncated base) are
// ErrInexact, so the caller runs git instead of trusting a wrong answer.
func TestRefreshRefuses(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a", "d/b.txt": "b"})
	for _, p := range []string{"../escape", "/etc/passwd", "a\x00b"} {
		if _, _, err := f.refresh(p); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("changed %q: err = %v, want INVALID_ARGUMENT", p, err)
		}
	}
	testutil.Git(t, f.dir, "init", "-q", "nested")
	if _, _, err := f.refresh("nested"); !errors.Is(err, ErrInexact) {
		t.Errorf("new nested repository: err = %v, want ErrInexact", err)
	}
	if _, _, err := f.refresh("nested/.git/HEAD"); !errors.Is(err, ErrInexact) {
		t.Errorf("nested .git change: err = %v, want ErrInexact", err)
	}
	must(t, os.RemoveAll(f.abs("d")))
	testutil.Git(t, f.dir, "init", "-q", "d")
	f.write("d/f", "f")
	must(t, os.RemoveAll(f.abs("nested")))
	// git treats a directory that holds tracked paths as a directory, a
	// repository in it or not, and so does ls-files: exact.
	if got, _, err := f.refresh("d", "nested"); err != nil || !reflect.DeepEqual(got, execStatus(t, f.dir)) {
		t.Errorf("repository replacing a tracked directory: %+v, %v; git says %+v", got, err, execStatus(t, f.dir))
	}
	// A path only git can answer, with no git to ask.
	f.write(".gitattributes", "a.txt filter=x\n")
	f.git("config", "filter.x.clean", "cat")
	f.rebase()
	f.write("a.txt", "b") // the same size: git reads it (through the filter)
	c := f.checkout(new(int))
	c.AskGit = nil
	if _, err := c.Refresh(f.base, []string{"a.txt"}); !errors.Is(err, ErrInexact) {
		t.Errorf("filtered file with no AskGit: err = %v, want ErrInexact", err)
	}
	base := f.base
	base.Truncated = true
	if _, err := Refresh(base, f.ix, f.dir, []string{"a.txt"}, nil); !errors.Is(err, ErrInexact) {
		t.Errorf("truncated base: err = %v, want ErrInexact", err)
	}
	must(t, os.Remove(f.abs("a.txt")))
	must(t, os.Mkdir(f.abs("a.txt"), 0o755))
	testutil.Git(t, f.abs("a.txt"), "init", "-q")
	if _, _, err := f.refresh("a.txt"); !errors.Is(err, ErrInexact) {
		t.Errorf("repository replacing a tracked file: err = %v, want ErrInexact", err)
	}
}

// TestRefreshStatShortcut: with the index's mtime known, a file whose stat
// data matches its entry and predates the index is not read; one whose
// content changed under a restored mtime (ctime moved) is read and found
// modified, as git finds it; racily clean entries are always read.
func TestRefreshStatShortcut(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "aaaa", "d/b.txt": "bbbb", "c.txt": "cccc"})
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"a.txt", "d/b.txt", "c.txt"} {
		must(t, os.Chtimes(f.abs(p), old, old))
	}
	f.git("add", "-A") // records the old mtimes; the index itself is newer
	f.rebase()
	count := func(ix *Index) (map[string]string, int) {
		attrs, err := NewAttributes(f.dir, filepath.Join(f.dir, ".git"), ix, false, nil)
		must(t, err)
		r := refresher{ix: ix, root: f.dir, dirs: map[string]bool{}, attrs: attrs}
		got := map[string]string{}
		for i := range ix.Entries {
			code, byGit, err := r.compare(&ix.Entries[i])
			must(t, err)
			if byGit {
				t.Fatalf("%s: asks git", ix.Entries[i].Path)
			}
			if code != "" {
				got[ix.Entries[i].Path] = code
			}
		}
		return got, r.hashed
	}
	if got, hashed := count(f.ix); len(got) != 0 || hashed != 0 {
		t.Fatalf("clean tree: changes %v, %d files hashed; want none", got, hashed)
	}
	racy := *f.ix
	racy.Mtime = old // every entry as new as the index: racily clean
	if _, hashed := count(&racy); hashed != 3 {
		t.Errorf("racy entries: %d files hashed, want 3", hashed)
	}
	unknown := *f.ix
	unknown.Mtime = time.Time{}
	if _, hashed := count(&unknown); hashed != 3 {
		t.Errorf("unknown index mtime: %d files hashed, want 3", hashed)
	}
	f.write("d/b.txt", "BBBBB") // a new size: modified without reading, as git says
	must(t, os.Chtimes(f.abs("d/b.txt"), old, old))
	if got, hashed := count(f.ix); got["d/b.txt"] != gitx.StatusModified || hashed != 0 {
		t.Errorf("new size, mtime restored: changes %v, %d hashed; want d/b.txt modified, none hashed", got, hashed)
	}
	// Same size and mtime restored: within the second of the add, git
	// trusts the stat data (it compares whole seconds) and so does
	// Refresh; later the ctime differs and both read the file.
	f.write("a.txt", "AAAA")
	must(t, os.Chtimes(f.abs("a.txt"), old, old))
	got, _, err := f.refresh("a.txt", "d/b.txt")
	must(t, err)
	if want := execStatus(t, f.dir); !reflect.DeepEqual(got, want) {
		t.Errorf("Refresh:\n got %+v\nwant %+v", got, want)
	}
}

// TestRefreshConversions: end-of-line conversion decided per path as git
// decides it, each case against git status: a text file rewritten with
// CRLF is unchanged when its size is the recorded one and modified when
// not (git does not read a file whose size changed); text=auto keeps a
// blob that has CRLF itself; lone CRs and binary content are not
// converted; core.filemode=false ignores the executable bit; a filter or
// an expanded $Id$ goes to git, for those paths only.
func TestRefreshConversions(t *testing.T) {
	f := newFixture(t, map[string]string{
		".gitattributes": "*.txt text\n*.auto text=auto\n*.f filter=x\n*.id ident\n",
		"same.txt":       "a\nb\n", "grow.txt": "a\nb\n", "crlf.auto": "a\r\nb\r\n", "lf.auto": "a\nb\n",
		"lone.txt": "a\rb\n", "run.sh*": "x\n", "f.f": "ff", "k.id": "$Id$.......\n", "plain.id": "none\n",
	})
	f.git("config", "filter.x.clean", "cat")
	old := time.Now().Add(-time.Hour)
	files, _ := (&propRepo{fixture: f}).walk()
	for _, p := range files {
		must(t, os.Chtimes(f.abs(p), old, old))
	}
	f.git("update-index", "-q", "--refresh")
	f.rebase()
	asked := 0
	check := func(name string, changed ...string) {
		t.Helper()
		c := f.checkout(new(int))
		ask := c.AskGit
		asked = 0
		c.AskGit = func(paths []string) ([]gitx.Entry, error) { asked += len(paths); return ask(paths) }
		got, err := c.Refresh(f.base, changed)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := execStatus(t, f.dir); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
	// "a\r\nb" is the size of "a\nb\n": read, converted, unchanged.
	f.write("same.txt", "a\r\nb")
	f.write("grow.txt", "a\r\nb\r\n") // another size: modified unread
	f.write("crlf.auto", "a\r\nb\r\n")
	f.write("lf.auto", "a\r\nb\r\n")
	f.write("lone.txt", "a\rb\r")
	must(t, os.Chmod(f.abs("run.sh"), 0o644))
	check("conversions", "same.txt", "grow.txt", "crlf.auto", "lf.auto", "lone.txt", "run.sh")
	if asked != 0 {
		t.Errorf("asked git about %d paths, want none", asked)
	}
	f.git("config", "core.filemode", "false")
	f.rebase()
	check("core.filemode=false", "run.sh")
	f.write("f.f", "gg")
	f.write("k.id", "$Id: 0123 $\n") // the same size: git reads it
	f.write("plain.id", "nope\n")
	check("filter and ident", "f.f", "k.id", "plain.id")
	if asked != 2 {
		t.Errorf("asked git about %d paths, want 2 (the filtered file and the expanded $Id$)", asked)
	}
	// A .gitattributes change: the files below it are hashed again under
	// the new rules, as git would (those whose stat data changed).
	f.write(".gitattributes", "*.auto -text\n")
	check("attributes changed", ".gitattributes")
	f.git("config", "core.autocrlf", "true")
	f.rebase()
	f.write("crlf.auto", "a\r\nc\r\n")
	f.write("same.txt", "a\r\nc")
	check("core.autocrlf", "crlf.auto", "same.txt", ".gitattributes")
}
