package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// collector gathers batches until a cookie shows up.
type collector struct {
	ch        chan Batch
	cookieDir string
	seen      []string // every cookie seen
}

func newCollector(t *testing.T) *collector {
	return &collector{ch: make(chan Batch, 1024), cookieDir: filepath.Join(t.TempDir(), "cookies")}
}

func (c *collector) emit(b Batch) { c.ch <- b }

// until makes a cookie and returns every path and meta flag seen up to
// its event: what a sync proves.
func (c *collector) until(t *testing.T, name string) (paths []string, meta bool) {
	t.Helper()
	cookie := filepath.Join(c.cookieDir, CookiePrefix+name)
	if err := os.WriteFile(cookie, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(cookie)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case b := <-c.ch:
			if b.Overflow {
				t.Fatalf("unexpected overflow: %s", b.Reason)
			}
			paths = append(paths, b.Paths...)
			meta = meta || b.Meta
			c.seen = append(c.seen, b.Cookies...)
			if slices.Contains(b.Cookies, CookiePrefix+name) {
				slices.Sort(paths)
				return slices.Compact(paths), meta
			}
		case <-deadline:
			t.Fatalf("cookie %s never seen", name)
		}
	}
}

func newRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{".git/refs/heads", ".git/objects", "src", "build/out"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestPumpSeesWhatStatusDependsOn(t *testing.T) {
	root := newRepo(t)
	c := newCollector(t)
	p, err := Start(root, Options{Ignored: map[string]bool{"build": true}, CookieDir: c.cookieDir}, c.emit)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	write := func(rel string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("src/a.go")
	if got, meta := c.until(t, "1"); !slices.Equal(got, []string{"src/a.go"}) || meta {
		t.Fatalf("a file write: %v meta %v", got, meta)
	}
	// A directory made with files already in it (before its watch):
	// the walk reports them.
	if err := os.MkdirAll(filepath.Join(root, "new/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("new/deep/f.txt")
	got, _ := c.until(t, "2")
	if !slices.Contains(got, "new/deep/f.txt") {
		t.Fatalf("new directory's file not seen: %v", got)
	}
	// After a directory rename, writes under the new name are seen under
	// the new name (never under the old one).
	if err := os.Rename(filepath.Join(root, "new"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	got, _ = c.until(t, "3")
	if !slices.Contains(got, "new") || !slices.Contains(got, "moved") {
		t.Fatalf("rename: %v", got)
	}
	write("moved/deep/g.txt")
	got, _ = c.until(t, "4")
	if !slices.Equal(got, []string{"moved/deep/g.txt"}) {
		t.Fatalf("write after rename: %v", got)
	}
	// Ignored directories are not watched.
	write("build/out/x.o")
	if got, _ = c.until(t, "5"); len(got) != 0 {
		t.Fatalf("ignored dir reported: %v", got)
	}
	// .git: the index and refs are meta; objects and lock files are not.
	write(".git/objects/ab")
	write(".git/index.lock")
	if got, meta := c.until(t, "6"); meta || len(got) != 0 {
		t.Fatalf("objects/lock: %v meta %v", got, meta)
	}
	write(".git/index")
	if _, meta := c.until(t, "7"); !meta {
		t.Fatal("index change not meta")
	}
	write(".git/refs/heads/topic/x")
	if _, meta := c.until(t, "8"); !meta {
		t.Fatal("ref in a new refs dir not meta")
	}
	write("src/.gitignore")
	if got, meta := c.until(t, "9"); !meta || !slices.Equal(got, []string{"src/.gitignore"}) {
		t.Fatalf(".gitignore: %v meta %v", got, meta)
	}
	p.Overflow()
	select {
	case b := <-c.ch:
		if !b.Overflow {
			t.Fatalf("forced overflow gave %+v", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no overflow batch")
	}
	if n := p.Watches(); n < 5 {
		t.Fatalf("watches = %d", n)
	}
}

func TestPumpRefusesAMissingGitDir(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: /elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(root, Options{CookieDir: filepath.Join(t.TempDir(), "c")}, func(Batch) {}); err == nil {
		t.Fatal("a .git file naming no git dir must be refused")
	}
}

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPumpLinkedWorktree: a worktree whose .git is a file is watched like
// a main checkout: its files, its own git dir (index, HEAD) and what it
// shares with the main checkout (config, refs, packed-refs, info) — but
// not the main checkout's index, HEAD or files.
func TestPumpLinkedWorktree(t *testing.T) {
	main := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	wt := filepath.Join(t.TempDir(), "wt")
	testutil.Git(t, main, "worktree", "add", "-q", "-b", "wt", wt)
	own := strings.TrimSpace(testutil.Git(t, wt, "rev-parse", "--absolute-git-dir"))
	common := filepath.Join(main, ".git")
	c := newCollector(t)
	p, err := Start(wt, Options{CookieDir: c.cookieDir}, c.emit)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	touch(t, filepath.Join(wt, "src/b.txt"))
	if got, meta := c.until(t, "1"); !slices.Equal(got, []string{"src", "src/b.txt"}) || meta {
		t.Fatalf("a worktree write: %v meta %v", got, meta)
	}
	for i, f := range []string{filepath.Join(own, "index"), filepath.Join(own, "HEAD"), filepath.Join(common, "config"),
		filepath.Join(common, "packed-refs"), filepath.Join(common, "refs/heads/topic"), filepath.Join(common, "info/exclude")} {
		touch(t, f)
		if got, meta := c.until(t, fmt.Sprint("own", i)); !meta || len(got) != 0 {
			t.Fatalf("%s: %v meta %v, want meta", f, got, meta)
		}
	}
	for i, f := range []string{filepath.Join(common, "index"), filepath.Join(common, "HEAD"), filepath.Join(main, "a.txt"),
		filepath.Join(common, "objects/ab/cd"), filepath.Join(common, "worktrees/other/index")} {
		touch(t, f)
		if got, meta := c.until(t, fmt.Sprint("main", i)); meta || len(got) != 0 {
			t.Fatalf("%s (the main checkout's): %v meta %v, want nothing", f, got, meta)
		}
	}
}

// TestPumpSubmodules: a change in a submodule's git dir (a commit, its
// index) is a change of the submodule's path, not meta; its files are
// ordinary paths; a submodule added later is followed once the index
// names it.
func TestPumpSubmodules(t *testing.T) {
	sub := testutil.Repo(t, map[string]string{"s.txt": "s\n"})
	super := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	testutil.Git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sm")
	testutil.Git(t, super, "commit", "-qm", "sm")
	c := newCollector(t)
	p, err := Start(super, Options{CookieDir: c.cookieDir}, c.emit)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	touch(t, filepath.Join(super, "sm/new.txt"))
	if got, meta := c.until(t, "1"); !slices.Equal(got, []string{"sm/new.txt"}) || meta {
		t.Fatalf("a file in the submodule: %v meta %v", got, meta)
	}
	testutil.Git(t, filepath.Join(super, "sm"), "add", "new.txt")
	testutil.Git(t, filepath.Join(super, "sm"), "commit", "-qm", "sub")
	if got, meta := c.until(t, "2"); !slices.Contains(got, "sm") || meta {
		t.Fatalf("a commit in the submodule: %v meta %v, want sm and not meta", got, meta)
	}
	testutil.Git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "later")
	c.until(t, "3")
	testutil.Git(t, filepath.Join(super, "later"), "commit", "-q", "--allow-empty", "-m", "later")
	if got, _ := c.until(t, "4"); !slices.Contains(got, "later") {
		t.Fatalf("a commit in a submodule added later: %v, want later", got)
	}
}

func TestPumpRefusesNoCookieDir(t *testing.T) {
	for _, dir := range []string{"", "relative/cookies"} {
		if p, err := Start(newRepo(t), Options{CookieDir: dir}, func(Batch) {}); err == nil {
			p.Close()
			t.Fatalf("cookie dir %q accepted", dir)
		}
	}
}

// A process that can write the checkout (a command harnessd runs) names a
// file like a cookie, in the tree and in .git: neither answers a sync
// (only the cookie dir, outside the checkout, does), and the tree stays
// free of harnessd's files.
func TestPumpCookiesOnlyFromTheCookieDir(t *testing.T) {
	root := newRepo(t)
	c := newCollector(t)
	p, err := Start(root, Options{CookieDir: c.cookieDir}, c.emit)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, f := range []string{".git/" + CookiePrefix + "forged", "src/" + CookiePrefix + "forged", CookiePrefix + "forged"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := c.until(t, "real")
	forged := c.seen
	for _, b := range drain(c.ch) {
		forged = append(forged, b.Cookies...)
	}
	if !slices.Contains(got, "src/"+CookiePrefix+"forged") || !slices.Contains(got, CookiePrefix+"forged") {
		t.Fatalf("forged files in the tree are tree changes: %v", got)
	}
	if slices.Contains(forged, CookiePrefix+"forged") {
		t.Fatalf("a file in the checkout was taken for a cookie: %v", forged)
	}
	if want := CookieDir(c.cookieDir, root); want == CookieDir(c.cookieDir, root+"x") || filepath.Dir(want) != c.cookieDir {
		t.Fatalf("CookieDir %q: not one dir per work tree under base", want)
	}
}

func drain(ch chan Batch) (out []Batch) {
	for {
		select {
		case b := <-ch:
			out = append(out, b)
		default:
			return out
		}
	}
}
