package watch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// collector gathers batches until a cookie shows up.
type collector struct{ ch chan Batch }

func (c *collector) emit(b Batch) { c.ch <- b }

// until makes a cookie and returns every path and meta flag seen up to
// its event: what a sync proves.
func (c *collector) until(t *testing.T, root, name string) (paths []string, meta bool) {
	t.Helper()
	cookie := filepath.Join(root, ".git", CookiePrefix+name)
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
	c := &collector{ch: make(chan Batch, 1024)}
	p, err := Start(root, Options{Ignored: map[string]bool{"build": true}}, c.emit)
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
	if got, meta := c.until(t, root, "1"); !slices.Equal(got, []string{"src/a.go"}) || meta {
		t.Fatalf("a file write: %v meta %v", got, meta)
	}
	// A directory made with files already in it (before its watch):
	// the walk reports them.
	if err := os.MkdirAll(filepath.Join(root, "new/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("new/deep/f.txt")
	got, _ := c.until(t, root, "2")
	if !slices.Contains(got, "new/deep/f.txt") {
		t.Fatalf("new directory's file not seen: %v", got)
	}
	// After a directory rename, writes under the new name are seen under
	// the new name (never under the old one).
	if err := os.Rename(filepath.Join(root, "new"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	got, _ = c.until(t, root, "3")
	if !slices.Contains(got, "new") || !slices.Contains(got, "moved") {
		t.Fatalf("rename: %v", got)
	}
	write("moved/deep/g.txt")
	got, _ = c.until(t, root, "4")
	if !slices.Equal(got, []string{"moved/deep/g.txt"}) {
		t.Fatalf("write after rename: %v", got)
	}
	// Ignored directories are not watched.
	write("build/out/x.o")
	if got, _ = c.until(t, root, "5"); len(got) != 0 {
		t.Fatalf("ignored dir reported: %v", got)
	}
	// .git: the index and refs are meta; objects and lock files are not.
	write(".git/objects/ab")
	write(".git/index.lock")
	if got, meta := c.until(t, root, "6"); meta || len(got) != 0 {
		t.Fatalf("objects/lock: %v meta %v", got, meta)
	}
	write(".git/index")
	if _, meta := c.until(t, root, "7"); !meta {
		t.Fatal("index change not meta")
	}
	write(".git/refs/heads/topic/x")
	if _, meta := c.until(t, root, "8"); !meta {
		t.Fatal("ref in a new refs dir not meta")
	}
	write("src/.gitignore")
	if got, meta := c.until(t, root, "9"); !meta || !slices.Equal(got, []string{"src/.gitignore"}) {
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

func TestPumpRefusesLinkedWorktree(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: /elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(root, Options{}, func(Batch) {}); err == nil {
		t.Fatal("a .git file must be refused")
	}
}
