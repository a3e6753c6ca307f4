package secrets

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testutil"
)

// watchedCache is a cache that serves a watched Set for an hour without
// its stamps (only an event makes it take them), counting its
// revalidations.
func watchedCache(t *testing.T) (*Cache, *atomic.Int64) {
	c := NewCache(Config{Deny: defaultDeny(t), Git: testGit, Rewalk: time.Hour, Recheck: time.Hour})
	t.Cleanup(func() { c.Close() })
	var n atomic.Int64
	c.revalidated = func(string) { n.Add(1) }
	return c, &n
}

// settle gets root until its watch is trusted: a watch is made from the
// watchAfter-th Get, the next revalidates under it.
func settle(t *testing.T, c *Cache, root string) {
	t.Helper()
	for range watchAfter + 1 {
		if _, err := c.Get(testCtx(t), root); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCacheServesAWatchedSetWithoutItsStamps(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"README.md": "x\n"})
	writeFile(t, root, ".env", "K="+fake(60, 20)+"\n")
	c, n := watchedCache(t)
	settle(t, c, root)
	before := n.Load()
	for range 200 {
		if _, err := c.Get(testCtx(t), root); err != nil {
			t.Fatal(err)
		}
	}
	// A change of a name that does not matter (a file beside .env) keeps
	// the Set: its event is read and passed over.
	writeFile(t, root, "README.md", "y\n")
	if _, err := c.Get(testCtx(t), root); err != nil {
		t.Fatal(err)
	}
	if got := n.Load() - before; got != 0 {
		t.Fatalf("%d revalidations over 201 Gets of an unchanged Set, want 0", got)
	}

	// Past Recheck the stamps are taken anyway.
	c2 := NewCache(Config{Deny: defaultDeny(t), Git: testGit, Rewalk: time.Hour, Recheck: time.Nanosecond})
	t.Cleanup(func() { c2.Close() })
	var n2 atomic.Int64
	c2.revalidated = func(string) { n2.Add(1) }
	settle(t, c2, root)
	before2 := n2.Load()
	for range 5 {
		if _, err := c2.Get(testCtx(t), root); err != nil {
			t.Fatal(err)
		}
	}
	if got := n2.Load() - before2; got != 5 {
		t.Fatalf("Recheck 1ns: %d revalidations over 5 Gets, want 5", got)
	}
}

// The attack on the watched Set: a secret changes (or appears) the moment
// before a read, in every way a file changes, and the read that follows
// must already know the new value. Each round first proves that the Set
// is served without its stamps (no revalidation), so that the watch alone
// decides.
func TestCacheSeesASecretChangedJustBeforeAGet(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"README.md": "x\n"})
	env := filepath.Join(root, ".env")
	writeFile(t, root, ".env", "K="+fake(70, 24)+"\n")
	writeFile(t, root, ".ssh/known", fake(71, 30)+"\n")
	c, n := watchedCache(t)
	settle(t, c, root)
	steps := []struct {
		name   string
		change func(t *testing.T, v string)
	}{
		{"rewritten in place with the same size", func(t *testing.T, v string) {
			if err := os.WriteFile(env, []byte("K="+v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"rewritten with its old mtime put back", func(t *testing.T, v string) {
			fi, err := os.Stat(env)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(env, []byte("K="+v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(env, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by a rename (an editor's save)", func(t *testing.T, v string) {
			tmp := filepath.Join(root, "4913")
			if err := os.WriteFile(tmp, []byte("K="+v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, env); err != nil {
				t.Fatal(err)
			}
		}},
		{"a new secret file in the root", func(t *testing.T, v string) {
			writeFile(t, root, ".env.r"+strconv.Itoa(len(v))+fake(uint64(len(v)), 4), "K="+v+"\n")
		}},
		{"a new file in a secret directory", func(t *testing.T, v string) {
			writeFile(t, root, ".ssh/k-"+fake(uint64(len(v))+7, 6), v+"\n")
		}},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			for round := range 30 {
				v := fake(uint64(1000*i+round), 24)
				// Served without stamps right before the change.
				before := n.Load()
				if _, err := c.Get(testCtx(t), root); err != nil {
					t.Fatal(err)
				}
				if n.Load() != before {
					// The previous round's change still settling (a new
					// directory to watch): one more Get trusts it.
					settle(t, c, root)
					before = n.Load()
					if _, err := c.Get(testCtx(t), root); err != nil || n.Load() != before {
						t.Fatalf("round %d: a Get of an unchanged Set revalidated (%v)", round, err)
					}
				}
				st.change(t, v)
				s, err := c.Get(testCtx(t), root)
				if err != nil {
					t.Fatal(err)
				}
				if !redacts(s.Known, v) {
					t.Fatalf("round %d: the Get right after the change does not know its value", round)
				}
			}
		})
	}
}

// A watch that cannot be had (no inotify instance left, say) leaves every
// Get to the stamps: dropping the entry's watch is the same state.
func TestCacheWithoutAWatchTakesTheStamps(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"README.md": "x\n"})
	writeFile(t, root, ".env", "K="+fake(80, 20)+"\n")
	c, n := watchedCache(t)
	settle(t, c, root)
	c.mu.Lock()
	e := c.roots[filepath.Clean(root)]
	c.mu.Unlock()
	e.drop()
	before := n.Load()
	v := fake(81, 20)
	writeFile(t, root, ".env", "K="+v+"\n")
	s, err := c.Get(testCtx(t), root)
	if err != nil || !redacts(s.Known, v) || n.Load() != before+1 {
		t.Fatalf("without a watch: redacts %v, revalidations %d, %v", redacts(s.Known, v), n.Load()-before, err)
	}
}

// TestCacheBoundsItsWatches: each watched checkout holds one of the
// user's inotify instances, so the cache holds at most MaxWatches; a
// checkout beyond it keeps to its stamps (every Get revalidates) and gets
// a watch once another checkout's ends.
func TestCacheBoundsItsWatches(t *testing.T) {
	a := testutil.Repo(t, map[string]string{"README.md": "a\n"})
	b := testutil.Repo(t, map[string]string{"README.md": "b\n"})
	c := NewCache(Config{Deny: defaultDeny(t), Git: testGit, Rewalk: time.Hour, Recheck: time.Hour, MaxWatches: 1})
	t.Cleanup(func() { c.Close() })
	var n atomic.Int64
	c.revalidated = func(string) { n.Add(1) }
	revalidations := func(root string, gets int) int64 {
		t.Helper()
		before := n.Load()
		for range gets {
			if _, err := c.Get(testCtx(t), root); err != nil {
				t.Fatal(err)
			}
		}
		return n.Load() - before
	}
	settle(t, c, a)
	settle(t, c, b)
	if got := c.watches.Load(); got != 1 {
		t.Fatalf("%d watches held, want the cap of 1", got)
	}
	if got := revalidations(a, 20); got != 0 {
		t.Errorf("the watched checkout revalidated %d times over 20 Gets, want 0", got)
	}
	if got := revalidations(b, 20); got != 20 {
		t.Errorf("the checkout beyond the cap revalidated %d times over 20 Gets, want every one (its stamps)", got)
	}
	c.Forget(a)
	if got := c.watches.Load(); got != 0 {
		t.Fatalf("%d watches held after the watched checkout was forgotten, want 0", got)
	}
	revalidations(b, 2) // the watch is made, then trusted
	if got := revalidations(b, 20); got != 0 {
		t.Errorf("once the cap had room, b revalidated %d times over 20 Gets, want 0", got)
	}
	none := NewCache(Config{Deny: defaultDeny(t), Git: testGit, Rewalk: time.Hour, Recheck: time.Hour, MaxWatches: -1})
	t.Cleanup(func() { none.Close() })
	settle(t, none, a)
	if got := none.watches.Load(); got != 0 {
		t.Errorf("MaxWatches -1: %d watches, want none", got)
	}
}
