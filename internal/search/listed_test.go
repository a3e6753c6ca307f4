package search

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// fatalT is what the fixture helpers need of a *testing.T, *testing.B or
// *rapid.T.
type fatalT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// gitListed is root's candidate list as `git ls-files -z --cached --others
// --exclude-standard` prints it (git's order, which is not pathCompare's),
// or, outside a work tree, a walk in reverse order: SearchListed must sort
// either.
func gitListed(t fatalT, root string) []string {
	t.Helper()
	out, err := gitOutput(context.Background(), root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err == errNotRepo {
		files, err := walkFiles(context.Background(), root)
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(files)
		return files
	}
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files
}

// listedEngine is SearchListed over git's list, with SearchGo's signature;
// when cached, each root gets a Cache that later calls reuse (warm). A root
// that cannot be listed gives a nil list (the search then fails or finds
// nothing on its own).
func listedEngine(cached bool) func(*Searcher, context.Context, string, Request) (Result, error) {
	var mu sync.Mutex
	type key struct {
		root string
		s    *Searcher
	}
	caches := map[key]*Cache{} // one per root and Searcher, as SearchListed wants
	return func(s *Searcher, ctx context.Context, root string, req Request) (Result, error) {
		var files []string
		if out, err := gitOutput(context.Background(), root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"); err == nil {
			files = splitList(out)
		} else if err == errNotRepo {
			files, _ = walkFiles(context.Background(), root)
		}
		var cache *Cache
		if cached {
			mu.Lock()
			if cache = caches[key{root, s}]; cache == nil {
				cache = NewCache(0)
				caches[key{root, s}] = cache
			}
			mu.Unlock()
		}
		return s.SearchListed(ctx, root, files, req, cache)
	}
}

// sameAsGo fails t unless SearchListed over files with cache gives SearchGo's
// Result for each request.
func sameAsGo(t *testing.T, s *Searcher, root string, files []string, cache *Cache, reqs []Request, label string) {
	t.Helper()
	for i, req := range reqs {
		g, gerr := s.SearchGo(context.Background(), root, req)
		l, lerr := s.SearchListed(context.Background(), root, files, req, cache)
		if gerr != nil || lerr != nil {
			t.Fatalf("%s: request %d %+v: got errors go=%v index=%v, want none", label, i, req, gerr, lerr)
		}
		if l.Engine != EngineIndex {
			t.Errorf("%s: got engine %q, want %q", label, l.Engine, EngineIndex)
		}
		l.Engine = g.Engine
		if !reflect.DeepEqual(g, l) {
			t.Errorf("%s: request %d %+v: results differ:\ngo:    %s\nindex: %s", label, i, req, describe(g), describe(l))
		}
	}
}

func TestListedParity(t *testing.T) {
	root := makeFixture(t)
	plain := t.TempDir() // not a git work tree: every file counts
	for rel, c := range fixtureFiles() {
		writeFile(t, plain, rel, c)
	}
	for _, dir := range []struct{ name, root string }{{"git", root}, {"plain", plain}} {
		files := gitListed(t, dir.root)
		for _, excl := range []bool{true, false} {
			s := testSearcher("")
			if !excl {
				s.Exclude = nil
			}
			t.Run(fmt.Sprintf("%s/exclude=%v", dir.name, excl), func(t *testing.T) {
				sameAsGo(t, s, dir.root, files, nil, parityRequests, "no cache")
				cache := NewCache(0)
				sameAsGo(t, s, dir.root, files, cache, parityRequests, "cold")
				before := cache.Stats()
				sameAsGo(t, s, dir.root, files, cache, parityRequests, "warm")
				after := cache.Stats()
				if after.Misses != before.Misses || after.Hits <= before.Hits {
					t.Errorf("warm searches: got misses %d->%d hits %d->%d, want no new miss and new hits",
						before.Misses, after.Misses, before.Hits, after.Hits)
				}
				if after.OverBound != 0 {
					t.Errorf("got OverBound %d with the default bound, want 0", after.OverBound)
				}
			})
		}
	}
}

// TestWarmSearchOpensNothing deletes every file after warming the cache: a
// warm search must still answer as before, so it read nothing from disk.
func TestWarmSearchOpensNothing(t *testing.T) {
	root := makeFixture(t)
	s := testSearcher("")
	files := gitListed(t, root)
	cache := NewCache(0)
	reqs := []Request{{Query: "needle", MaxResults: 500}, {Query: `ne+dle$`, Regex: true, MaxResults: 500}, {Query: "NEEDLE", CaseInsensitive: true}}
	var want []Result
	for _, req := range reqs {
		r, err := s.SearchListed(context.Background(), root, files, req, cache)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	misses := cache.Stats().Misses
	for i, req := range reqs {
		got, err := s.SearchListed(context.Background(), root, files, req, cache)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%+v: got %s after deleting the files, want the warm result %s", req, describe(got), describe(want[i]))
		}
	}
	if m := cache.Stats().Misses; m != misses {
		t.Errorf("got %d misses on a warm cache, want 0", m-misses)
	}
	// After an Invalidate of everything, the deletions are seen.
	cache.Invalidate(".")
	got, err := s.SearchListed(context.Background(), root, files, reqs[0], cache)
	if err != nil || len(got.Matches) != 0 {
		t.Errorf("got %s, %v after invalidating a deleted tree, want no matches", describe(got), err)
	}
}

// editRequests are the requests checked after each edit.
var editRequests = []Request{
	{Query: "needle", MaxResults: 500},
	{Query: "needle", MaxResults: 3},
	{Query: "NEEDLE", CaseInsensitive: true, MaxResults: 500},
	{Query: `\bneedle\b`, Regex: true, MaxResults: 500},
	{Query: "private", MaxResults: 500},
	{Query: "fresh", MaxResults: 500},
	{Query: "needle", Glob: "!src", MaxResults: 500},
}

func TestListedAfterEditsAndInvalidate(t *testing.T) {
	root := makeFixture(t)
	s := testSearcher("")
	cache := NewCache(0)
	sameAsGo(t, s, root, gitListed(t, root), cache, editRequests, "warm-up")

	abs := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	edits := []struct {
		name    string
		edit    func(t *testing.T)
		changed []string
	}{
		{"content edited", func(t *testing.T) { writeFile(t, root, "docs.md", "fresh docs, no n-word\n") }, []string{"docs.md"}},
		{"file made binary", func(t *testing.T) { writeFile(t, root, "words.txt", "needle\x00\n") }, []string{"words.txt"}},
		{"binary made text", func(t *testing.T) { writeFile(t, root, "bin.dat", "fresh needle\n") }, []string{"bin.dat"}},
		{"file grown past the limit", func(t *testing.T) {
			writeFile(t, root, "exact.txt", "needle\n"+strings.Repeat("y", testMaxFileSize))
		}, []string{"exact.txt"}},
		{"large file shrunk", func(t *testing.T) { writeFile(t, root, "big.txt", "fresh small needle\n") }, []string{"big.txt"}},
		{"tracked file deleted", func(t *testing.T) {
			if err := os.Remove(abs("noeol.txt")); err != nil {
				t.Fatal(err)
			}
		}, []string{"noeol.txt"}},
		{"file swapped for a symlink to a secret", func(t *testing.T) {
			if err := os.Remove(abs("src/main.go")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(abs("secrets/key.txt"), abs("src/main.go")); err != nil {
				t.Fatal(err)
			}
		}, []string{"src/main.go"}},
		{"directory removed", func(t *testing.T) {
			if err := os.RemoveAll(abs("src/util")); err != nil {
				t.Fatal(err)
			}
		}, []string{"src/util"}},
		{"directory recreated", func(t *testing.T) { writeFile(t, root, "src/util/helper.go", "fresh needle helper\n") }, []string{"src/util"}},
		{"new untracked file", func(t *testing.T) { writeFile(t, root, "new/fresh.txt", "fresh needle\n") }, []string{"new/fresh.txt"}},
		{"file swapped for a FIFO", func(t *testing.T) {
			if err := os.Remove(abs("docs/guide.md")); err != nil {
				t.Fatal(err)
			}
			if err := mkfifo(abs("docs/guide.md")); err != nil {
				t.Skip("no FIFOs here")
			}
		}, []string{"docs/guide.md"}},
	}
	for _, e := range edits {
		e.edit(t)
		cache.Invalidate(e.changed...)
		files := gitListed(t, root)
		sameAsGo(t, s, root, files, cache, editRequests, e.name)
		res, err := s.SearchListed(context.Background(), root, files, Request{Query: "private"}, cache)
		if err != nil || len(res.Matches) != 0 {
			t.Errorf("%s: got %s, %v for the secret's text, want no match", e.name, describe(res), err)
		}
	}

	// An edit that is not invalidated is served stale, as documented: the
	// cache trusts its caller. The Invalidate then makes it fresh.
	writeFile(t, root, "crlf.txt", "fresh text only\n")
	stale, err := s.SearchListed(context.Background(), root, gitListed(t, root), Request{Query: "fresh", MaxResults: 500}, cache)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(paths(stale.Matches), "crlf.txt") {
		t.Errorf("got crlf.txt's new text without an Invalidate, want the cached (stale) content")
	}
	cache.Invalidate("crlf.txt")
	sameAsGo(t, s, root, gitListed(t, root), cache, editRequests, "after the late invalidate")
}

func TestCacheBound(t *testing.T) {
	root := makeFixture(t)
	s := testSearcher("")
	files := gitListed(t, root)
	for _, bound := range []int64{1, 100, 2000, 20000, 60000} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			cache := NewCache(bound)
			for range 2 {
				sameAsGo(t, s, root, files, cache, editRequests, "bounded")
				st := cache.Stats()
				if st.Bytes > bound || st.MaxBytes != bound {
					t.Fatalf("got %d bytes in a cache bounded at %d (max %d)", st.Bytes, bound, st.MaxBytes)
				}
				if st.OverBound == 0 {
					t.Errorf("got OverBound 0 for a fixture that does not fit %d bytes", bound)
				}
			}
		})
	}
	cache := NewCache(0)
	sameAsGo(t, s, root, files, cache, editRequests, "default")
	if st := cache.Stats(); st.MaxBytes != DefaultCacheBytes || st.OverBound != 0 || st.Entries == 0 {
		t.Errorf("got %+v for the default cache, want max %d, nothing over bound, some entries", st, DefaultCacheBytes)
	}
	cache.Reset()
	if st := cache.Stats(); st != (CacheStats{MaxBytes: DefaultCacheBytes}) {
		t.Errorf("got %+v after Reset, want an empty cache", st)
	}
}

func TestCacheInvalidate(t *testing.T) {
	all := []string{"a", "a/b", "a/b/c", "a/bc", "ab", "a.b", "x/a/b"}
	tests := []struct {
		invalidate []string
		want       []string // what is left
	}{
		{[]string{"a"}, []string{"ab", "a.b", "x/a/b"}},
		{[]string{"a/b"}, []string{"a", "a/bc", "ab", "a.b", "x/a/b"}},
		{[]string{"a/b/"}, []string{"a", "a/bc", "ab", "a.b", "x/a/b"}},
		{[]string{"./a/b/c"}, []string{"a", "a/b", "a/bc", "ab", "a.b", "x/a/b"}},
		{[]string{"x"}, []string{"a", "a/b", "a/b/c", "a/bc", "ab", "a.b"}},
		{[]string{"nothing", "a.b"}, []string{"a", "a/b", "a/b/c", "a/bc", "ab", "x/a/b"}},
		{[]string{"."}, nil},
		{[]string{""}, nil},
		{nil, all},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.invalidate, ","), func(t *testing.T) {
			c := NewCache(0)
			for _, p := range all {
				c.put(p, entry{data: []byte(p), kind: kindText, size: int64(len(p))}, c.epoch.Load())
			}
			c.Invalidate(tt.invalidate...)
			var left []string
			var bytes int64
			for k, e := range c.m {
				left = append(left, k)
				bytes += cost(k, e)
			}
			slices.Sort(left)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(left, want) {
				t.Errorf("got %q left, want %q", left, want)
			}
			if st := c.Stats(); st.Bytes != bytes || st.Entries != len(want) {
				t.Errorf("got %+v, want %d bytes in %d entries", st, bytes, len(want))
			}
			for d, n := range c.dirs {
				got := 0
				for k := range c.m {
					if strings.HasPrefix(k, d+"/") {
						got++
					}
				}
				if got != n || n <= 0 {
					t.Errorf("got dirs[%q] = %d, want %d", d, n, got)
				}
			}
		})
	}
}

// TestCachePutAfterInvalidate: a read that raced an Invalidate is not kept,
// so the cache cannot keep content older than the invalidation.
func TestCachePutAfterInvalidate(t *testing.T) {
	c := NewCache(0)
	epoch := c.epoch.Load()
	c.Invalidate("f")
	c.put("f", entry{data: []byte("old"), kind: kindText, size: 3}, epoch)
	if st := c.Stats(); st.Entries != 0 {
		t.Errorf("got %d entries, want the racing read dropped", st.Entries)
	}
}

func TestListedConcurrentWithInvalidate(t *testing.T) {
	root := makeFixture(t)
	s := testSearcher("")
	files := gitListed(t, root)
	const bound = 40000
	cache := NewCache(bound)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := editRequests[(i+w)%len(editRequests)]
				if _, err := s.SearchListed(context.Background(), root, files, req, cache); err != nil {
					t.Errorf("got %v, want none", err)
					return
				}
				if st := cache.Stats(); st.Bytes > bound {
					t.Errorf("got %d bytes, bound %d", st.Bytes, bound)
					return
				}
			}
		})
	}
	for i := range 200 {
		rel := fmt.Sprintf("docs/gen%d.md", i%7)
		writeFile(t, root, rel, fmt.Sprintf("needle edit %d\n", i))
		cache.Invalidate(rel, "src/util")
		if i%50 == 0 {
			cache.Reset()
		}
	}
	close(stop)
	wg.Wait()
	sameAsGo(t, s, root, gitListed(t, root), cache, editRequests, "after the concurrent edits")
}

func TestListedErrors(t *testing.T) {
	root := makeFixture(t)
	s := testSearcher("")
	for _, files := range [][]string{{"/etc/passwd"}, {"../outside"}, {"a/../../b"}, {""}, {"a//b"}, {"./a"}, {"a/."}, {"a\x00b"}, {"ok.txt", "/"}} {
		_, err := s.SearchListed(context.Background(), root, files, Request{Query: "a"}, nil)
		if got := errs.CodeOf(err); got != errs.InvalidArgument {
			t.Errorf("files %q: got code %q (%v), want %q", files, got, err, errs.InvalidArgument)
		}
	}
	cache := NewCache(0)
	if _, err := s.SearchListed(context.Background(), root, nil, Request{Query: "a"}, cache); err != nil {
		t.Fatal(err)
	}
	_, err := s.SearchListed(context.Background(), t.TempDir(), nil, Request{Query: "a"}, cache)
	if got := errs.CodeOf(err); got != errs.InvalidArgument {
		t.Errorf("another root's cache: got code %q (%v), want %q", got, err, errs.InvalidArgument)
	}
}

// TestListedNeverReadsOutsideItsList: a listed path with a .git component
// or outside the list is never searched, whatever is on disk.
func TestListedNeverReadsOutsideItsList(t *testing.T) {
	root := makeFixture(t)
	writeFile(t, root, ".git/needle-marker", "needle in .git\n")
	writeFile(t, root, "sub/.git/config", "needle in a nested .git\n")
	s := testSearcher("")
	res, err := s.SearchListed(context.Background(), root,
		[]string{".git/needle-marker", "sub/.git/config", "docs.md", "docs.md", "src/", "link.go"}, Request{Query: "needle"}, NewCache(0))
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Matches); !slices.Equal(got, []string{"docs.md"}) {
		t.Errorf("got paths %q, want only docs.md", got)
	}
}

func TestOrderList(t *testing.T) {
	tests := []struct{ in, want []string }{
		{nil, nil},
		{[]string{"a.b", "a/b"}, []string{"a/b", "a.b"}},
		{[]string{"b", "a", "b", "sub/", "a"}, []string{"a", "b"}},
		{[]string{"a/b", "a.b"}, []string{"a/b", "a.b"}},
	}
	for _, tt := range tests {
		got, err := orderList(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("orderList(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	sorted := []string{"a/b", "a.b", "c"}
	if got, _ := orderList(sorted); &got[0] != &sorted[0] {
		t.Errorf("got a copy of a sorted list, want it as is")
	}
}

// FuzzRelPath: a path relPath accepts stays below root when joined, and is
// its own clean form.
func FuzzRelPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../a", "a/..", "/a", "a//b", ".git/x", "a/.git", ".", "", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		ok, dotGit := relPath(rel)
		if !ok {
			return
		}
		if path.Clean(rel) != rel || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
			t.Errorf("relPath accepted %q, which is not clean", rel)
		}
		if j := filepath.Join("/root", rel); !strings.HasPrefix(j, "/root/") {
			t.Errorf("relPath accepted %q, which joins to %q", rel, j)
		}
		if want := slices.Contains(strings.Split(rel, "/"), ".git"); dotGit != want {
			t.Errorf("relPath(%q) dotGit = %v, want %v", rel, dotGit, want)
		}
	})
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }

// FuzzIndexRare: indexRare finds what bytes.Index finds, for every choice
// of the skip byte.
func FuzzIndexRare(f *testing.F) {
	f.Add([]byte("xxrareNeedle rareNeedle"), []byte("rareNeedle"))
	f.Add([]byte(strings.Repeat("a", 3000)+"ab"), []byte("ab"))
	f.Add([]byte("NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN x Nx"), []byte("Nx"))
	f.Add([]byte("ab"), []byte("abc"))
	f.Fuzz(func(t *testing.T, s, sep []byte) {
		want := bytes.Index(s, sep)
		for k := range max(len(sep), 1) {
			if got := indexRare(s, sep, k); got != want {
				t.Fatalf("indexRare(%q, %q, %d) = %d, want %d", s, sep, k, got, want)
			}
		}
		if k := rarestByte(sep); len(sep) > 0 && (k < 0 || k >= len(sep)) {
			t.Fatalf("rarestByte(%q) = %d, out of range", sep, k)
		}
	})
}

// TestNoEngineReadsThroughASymlinkedParent: a tracked file whose directory
// was swapped for a symlink to a directory outside the tree holding a file
// of the same name must not be read through it by any engine.
func TestNoEngineReadsThroughASymlinkedParent(t *testing.T) {
	root := makeFixture(t)
	outside := t.TempDir()
	writeFile(t, outside, "util/helper.go", "OUTSIDE-MARKER needle\n")
	writeFile(t, outside, "x.yml", "OUTSIDE-MARKER needle\n")
	for _, swap := range []struct{ dir, target string }{{"src", outside}, {".github", outside}} {
		if err := os.RemoveAll(filepath.Join(root, swap.dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(swap.target, filepath.Join(root, swap.dir)); err != nil {
			t.Fatal(err)
		}
	}
	files := gitListed(t, root)
	if !slices.Contains(files, "src/util/helper.go") {
		t.Fatalf("got list %q, want the tracked src/util/helper.go still listed", files)
	}
	engines := map[string]func(*Searcher, context.Context, string, Request) (Result, error){
		"go":    (*Searcher).SearchGo,
		"index": listedEngine(true),
	}
	if rg, err := rgLook(); err == nil {
		engines["rg"] = func(s *Searcher, ctx context.Context, root string, req Request) (Result, error) {
			s.RG = rg
			return s.SearchRG(ctx, root, req)
		}
	}
	for name, run := range engines {
		for _, req := range []Request{{Query: "OUTSIDE-MARKER"}, {Query: "outside-marker", CaseInsensitive: true}, {Query: "OUTSIDE.MARKER", Regex: true}} {
			res, err := run(testSearcher(""), context.Background(), root, req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(res.Matches) != 0 {
				t.Errorf("%s %+v: got %s, want nothing read through the symlinked directories", name, req, describe(res))
			}
		}
	}
}

// TestOpenWalkAgreesWithOpenat2: the fallback walk refuses what openat2
// refuses (symlinks anywhere, escapes) and opens what it opens.
func TestOpenWalkAgreesWithOpenat2(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a/b.txt", "x")
	writeFile(t, root, "c.txt", "x")
	for _, l := range []struct{ name, target string }{{"lnkdir", "a"}, {"a/lnk.txt", "b.txt"}, {"out", t.TempDir()}} {
		if err := os.Symlink(l.target, filepath.Join(root, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	d, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const flags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	for _, tt := range []struct {
		rel  string
		want bool
	}{
		{"a/b.txt", true}, {"c.txt", true}, {"lnkdir/b.txt", false}, {"a/lnk.txt", false},
		{"out", false}, {"a/../c.txt", false}, {"../c.txt", false}, {"a//b.txt", false}, {"missing", false},
	} {
		fd, err := openWalk(int(d.Fd()), tt.rel, flags)
		if err == nil {
			syscall.Close(fd)
		}
		if (err == nil) != tt.want {
			t.Errorf("openWalk(%q): got err %v, want success %v", tt.rel, err, tt.want)
		}
		if tt.rel == "a//b.txt" || strings.Contains(tt.rel, "..") {
			continue // openat2 normalizes these itself; only the walk is strict
		}
		fd2, err2 := openat2Beneath(int(d.Fd()), tt.rel, flags)
		if err2 == nil {
			syscall.Close(fd2)
		}
		if (err2 == nil) != tt.want {
			t.Errorf("openat2Beneath(%q): got err %v, want success %v", tt.rel, err2, tt.want)
		}
	}
}

// FuzzIndexFold: indexFold finds what bytes.Index finds in an ASCII-lowered
// copy, for every choice of the skip byte.
func FuzzIndexFold(f *testing.F) {
	f.Add([]byte("xx RARENEEDLE rareneedle"), []byte("rareneedle"))
	f.Add([]byte(strings.Repeat("A", 300)+"ab"), []byte("ab"))
	f.Add([]byte("Kk\xe2\x84\xaa k"), []byte("k"))
	f.Add([]byte("a"), []byte(""))
	f.Fuzz(func(t *testing.T, s, sep []byte) {
		sep = bytes.ToLower(sep)
		for _, c := range sep {
			if 'A' <= c && c <= 'Z' || c >= 0x80 {
				return // foldLit is the lowered query of an ASCII literal
			}
		}
		lower := make([]byte, len(s))
		for i, c := range s {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			lower[i] = c
		}
		want := bytes.Index(lower, sep)
		for k := range max(len(sep), 1) {
			if got := indexFold(s, sep, k); got != want {
				t.Fatalf("indexFold(%q, %q, %d) = %d, want %d", s, sep, k, got, want)
			}
		}
	})
}

func TestRequiredLiteral(t *testing.T) {
	tests := []struct{ re, want string }{
		{`\w+Needle\b`, "Needle"},
		{`handler\d+7\(`, "7("},
		{`(?:ab)+c`, "ab"},
		{`(x|y)z`, "z"},
		{`a|b`, ""},
		{`x*`, ""},
		{`(?i)needle`, ""},
		{`x{2,}#`, "#"}, {`y{2,}`, "y"},
		{`x{0,3}`, ""},
		{`日本.`, "日本"},
		{"\uFFFDab", ""},
		{`.`, ""},
	}
	for _, tt := range tests {
		tree, err := syntax.Parse(tt.re, syntax.Perl&^syntax.OneLine)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(requiredLiteral(tree)); got != tt.want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", tt.re, got, tt.want)
		}
	}
}

// TestFailedKind: only failures that say what the path is are cached as
// absent; a transient one (no descriptors left, an I/O error) is retried.
func TestFailedKind(t *testing.T) {
	tests := []struct {
		err  error
		want uint8
	}{
		{&os.PathError{Op: "openat2", Path: "x", Err: syscall.ENOENT}, kindAbsent},
		{syscall.ELOOP, kindAbsent},
		{syscall.EXDEV, kindAbsent},
		{syscall.EACCES, kindAbsent},
		{syscall.EMFILE, kindRetry},
		{syscall.ENFILE, kindRetry},
		{syscall.EIO, kindRetry},
		{syscall.EINTR, kindRetry},
	}
	for _, tt := range tests {
		if got := failedKind(tt.err); got != tt.want {
			t.Errorf("failedKind(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// The cache remembers which paths Exclude rejected, so a warm search asks
// it no more; a secret stays unsearched on every search, the count of
// excluded files stays the same, and a cache filled for a Searcher that
// excludes nothing is refused to one that excludes secrets (its entries
// would let them through).
func TestCachedExclusionNeverLetsASecretThrough(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, ".env", "SECRET-MARKER=1\n")
	writeFile(t, root, "config/.env", "SECRET-MARKER=2\n")
	writeFile(t, root, "main.go", "package main // SECRET-MARKER is a word here\n")
	files := []string{".env", "config/.env", "main.go"}
	asked := map[string]int{}
	s := &Searcher{Exclude: func(rel string) bool { asked[rel]++; return isSecret(rel) }}
	if !s.Exclude(".env") || !s.Exclude("config/.env") {
		t.Fatal("the fixture's secrets are not secret to isSecret")
	}
	clear(asked)
	cache := NewCache(0)
	for i := range 3 {
		res, err := s.SearchListed(context.Background(), root, files, Request{Query: "SECRET-MARKER"}, cache)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 1 || res.Matches[0].Path != "main.go" || res.Excluded != 2 {
			t.Fatalf("search %d: %s, excluded %d; want main.go only, 2 excluded", i, describe(res), res.Excluded)
		}
	}
	for _, f := range files {
		if asked[f] != 1 {
			t.Errorf("Exclude asked %d times about %s over 3 searches, want once", asked[f], f)
		}
	}
	open := &Searcher{}
	fresh := NewCache(0)
	if res, err := open.SearchListed(context.Background(), root, files, Request{Query: "SECRET-MARKER"}, fresh); err != nil || len(res.Matches) != 3 {
		t.Fatalf("a Searcher without Exclude: %v %v", describe(res), err)
	}
	if res, err := s.SearchListed(context.Background(), root, files, Request{Query: "SECRET-MARKER"}, fresh); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("another Searcher's cache: %s %v, want INVALID_ARGUMENT", describe(res), err)
	}
}

// When the tree does not fit, every file keeps its entry (and its
// trigrams in the index) and contents take what is left: the oldest
// contents give way to the entries of files read later, so a warm search
// reads no file the index rules out, and the bound holds.
func TestCacheKeepsEveryFilterBeforeContents(t *testing.T) {
	root := t.TempDir()
	var files []string
	for i := range 200 {
		rel := fmt.Sprintf("pkg%02d/file%03d.go", i%10, i)
		body := strings.Repeat(fmt.Sprintf("func f%d() { return %d }\n", i, i*31), 40) // ≈ 1 KB
		if i == 150 {
			body += "const needleSymbol = 1\n"
		}
		writeFile(t, root, rel, body)
		files = append(files, rel)
	}
	s := &Searcher{}
	// Room for every entry and its trigrams (about 30 a file) and about
	// 20 contents (contents take at most an eighth of the bound).
	const bound = contentShare * 20 << 10
	cache := NewCache(bound)
	req := Request{Query: "needleSymbol"}
	want, err := s.SearchGo(context.Background(), root, req)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got, err := s.SearchListed(context.Background(), root, files, req, cache)
		if err != nil {
			t.Fatal(err)
		}
		got.Engine = want.Engine
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("search %d: %s, want %s", i, describe(got), describe(want))
		}
	}
	st := cache.Stats()
	if st.Entries != len(files) {
		t.Fatalf("%d entries of %d files: filters were dropped for contents (%+v)", st.Entries, len(files), st)
	}
	if st.Bytes > st.MaxBytes {
		t.Fatalf("bytes %d over the bound %d", st.Bytes, st.MaxBytes)
	}
	if st.Misses != int64(len(files)) {
		t.Fatalf("misses %d over two searches of %d files: the second read files again", st.Misses, len(files))
	}
	kept := 0
	for _, f := range files {
		if e := cache.m[f]; e.data != nil {
			kept++
		}
	}
	if kept == 0 || kept == len(files) {
		t.Fatalf("%d contents kept: the test does not exercise a partial fit", kept)
	}
}
