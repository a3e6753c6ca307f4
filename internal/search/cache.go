package search

import (
	"path"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultCacheBytes is the bound of NewCache(0).
const DefaultCacheBytes = 96 << 20

// entryOverhead is what one cached entry is charged beyond its path and
// content: the map slot, the entry and the string and slice headers.
const entryOverhead = 96

// Cache keeps what SearchListed learned about the files of one work tree:
// the content of searchable files and the negative facts (binary, larger than
// the size limit, not a regular file, vanished, not permitted), so a warm
// search opens nothing. It is bounded by total bytes (content + path + a fixed overhead per
// entry); once full it keeps what it has and refuses new entries (counted in
// CacheStats.OverBound): those files are read from disk on every search.
//
// Entries are never revalidated against the disk: the caller (the checkout's
// watcher, which proves what changed) must Invalidate every changed path. A
// path edited and not invalidated is served from the cache, stale. A Cache
// serves one root: SearchListed refuses it for another. A Cache is safe for
// concurrent use.
type Cache struct {
	max   int64
	epoch atomic.Uint64 // bumped by every Invalidate and Reset

	hits, misses, over atomic.Int64

	mu    sync.RWMutex
	root  string    // the root the entries belong to; "" until first use
	owner *Searcher // the Searcher whose Exclude the entries obey
	m     map[string]entry
	dirs  map[string]int // directory -> number of entries below it
	bytes int64
	// fifo lists the paths whose content was kept, oldest first from
	// head (a path invalidated or evicted since may still be listed): a
	// filter or a negative fact that does not fit evicts the oldest
	// contents (their filters stay).
	fifo []string
	head int
}

// entry is one file as readFile found it. A kindText entry whose data is
// nil keeps only the file's trigram filter: its content did not fit.
type entry struct {
	data  []byte // kindText only; nil = not kept
	size  int64
	kind  uint8
	bloom *bloom // kindText files
}

// CacheStats describes a Cache. The counters run from NewCache or the last
// Reset.
type CacheStats struct {
	Entries   int   `json:"entries"`
	Bytes     int64 `json:"bytes"`     // charged bytes, never above MaxBytes
	MaxBytes  int64 `json:"max_bytes"` // the bound
	Hits      int64 `json:"hits"`      // files answered from the cache
	Misses    int64 `json:"misses"`    // files read from disk
	OverBound int64 `json:"over_bound"`
	// OverBound counts files read from disk but not kept because the cache
	// was full: when it grows, the tree does not fit and the caller may prefer
	// rg for it.
}

// NewCache returns an empty cache of at most maxBytes (0 or less =
// DefaultCacheBytes).
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{max: maxBytes, m: map[string]entry{}, dirs: map[string]int{}}
}

// Invalidate drops what the cache knows about each path (slash-separated,
// relative to the root) and, when a path is a directory, about everything
// below it. "" and "." drop everything. Call it for every path the watcher
// saw change (created, written, removed, renamed, chmod) before searching.
func (c *Cache) Invalidate(paths ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	for _, p := range paths {
		p = path.Clean(strings.TrimPrefix(p, "/"))
		if p == "." {
			c.clearLocked()
			return
		}
		if e, ok := c.m[p]; ok {
			c.deleteLocked(p, e)
		}
		if c.dirs[p] == 0 {
			continue
		}
		prefix := p + "/"
		for k, e := range c.m {
			if strings.HasPrefix(k, prefix) {
				c.deleteLocked(k, e)
			}
		}
	}
}

// Reset drops every entry and zeroes the counters.
func (c *Cache) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	c.clearLocked()
	c.root, c.owner = "", nil
	c.hits.Store(0)
	c.misses.Store(0)
	c.over.Store(0)
}

// Stats returns the cache's size and counters.
func (c *Cache) Stats() CacheStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return CacheStats{
		Entries: len(c.m), Bytes: c.bytes, MaxBytes: c.max,
		Hits: c.hits.Load(), Misses: c.misses.Load(), OverBound: c.over.Load(),
	}
}

func (c *Cache) clearLocked() {
	clear(c.m)
	clear(c.dirs)
	c.bytes = 0
	clear(c.fifo)
	c.fifo, c.head = c.fifo[:0], 0
}

func cost(rel string, e entry) int64 {
	n := int64(len(rel)+len(e.data)) + entryOverhead
	if e.bloom != nil {
		n += e.bloom.bytes()
	}
	return n
}

func (c *Cache) deleteLocked(rel string, e entry) {
	delete(c.m, rel)
	c.bytes -= cost(rel, e)
	for d := parentDir(rel); d != ""; d = parentDir(d) {
		if c.dirs[d]--; c.dirs[d] <= 0 {
			delete(c.dirs, d)
		}
	}
}

func parentDir(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// evictContent drops the oldest kept contents but rel's until need bytes
// are freed or none is left; their entries (filters) stay.
func (c *Cache) evictContent(rel string, need int64) {
	for need > 0 && c.head < len(c.fifo) {
		k := c.fifo[c.head]
		c.fifo[c.head] = ""
		c.head++
		if e, ok := c.m[k]; ok && e.data != nil && k != rel {
			need -= int64(len(e.data))
			c.bytes -= int64(len(e.data))
			e.data = nil
			c.m[k] = e
		}
	}
	if c.head > len(c.fifo)/2 {
		c.compactFIFO()
	}
}

// compactFIFO rebuilds the fifo from the entries that hold content, in
// their fifo order.
func (c *Cache) compactFIFO() {
	seen := make(map[string]bool, len(c.fifo)-c.head)
	out := c.fifo[:0]
	for _, k := range c.fifo[c.head:] {
		if e, ok := c.m[k]; ok && e.data != nil && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	clear(c.fifo[len(out):])
	c.fifo, c.head = out, 0
}

// bind ties the cache to root and to the Searcher s on first use; it
// reports false when the cache already serves another root or Searcher.
// (An entry tells that s's Exclude let its path through, or, kindExcluded,
// that it did not: another Searcher's Exclude may answer otherwise.)
func (c *Cache) bind(root string, s *Searcher) bool {
	c.mu.RLock()
	r, o := c.root, c.owner
	c.mu.RUnlock()
	if r == root && o == s {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.root == "" {
		c.root, c.owner = root, s
	}
	return c.root == root && c.owner == s
}

// Adopt ties the cache to root and the Searcher s, emptying it first when
// it served another Searcher of root (whose Exclude may answer otherwise:
// the root's secret list changed). It reports false, and changes nothing,
// when the cache serves another root.
func (c *Cache) Adopt(root string, s *Searcher) bool {
	if c.bind(root, s) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.root != root {
		return false
	}
	c.epoch.Add(1) // puts of searches begun with the old Searcher are dropped
	c.clearLocked()
	c.owner = s
	return true
}

// kinds sets kinds[i] to the kind of the entry of files[idx[i]] (kindNone
// for a miss), under one read lock.
func (c *Cache) kinds(files []string, idx []int32, kinds []uint8) {
	c.mu.RLock()
	for i, fi := range idx {
		kinds[i] = c.m[files[fi]].kind
	}
	c.mu.RUnlock()
}

// putExcluded remembers that the Searcher's Exclude rejects each of rels,
// unless the cache changed since epoch; what does not fit the bound is
// not remembered (and asked again next time).
func (c *Cache) putExcluded(rels []string, epoch uint64) {
	for _, rel := range rels {
		c.put(rel, entry{kind: kindExcluded}, epoch)
	}
}

// lookup appends the entry of each files[i], i in idx, to ents (kindNone
// for a miss), under one read lock.
func (c *Cache) lookup(files []string, idx []int32, ents []entry) []entry {
	c.mu.RLock()
	for _, i := range idx {
		ents = append(ents, c.m[files[i]])
	}
	c.mu.RUnlock()
	return ents
}

// fits reports whether an entry of n content bytes may still fit with its
// content; put decides for sure.
func (c *Cache) fits(rel string, n int64) bool {
	c.mu.RLock()
	ok := c.bytes+int64(len(rel))+n+entryOverhead+int64(bloomSize(int(n))/8) <= c.max
	c.mu.RUnlock()
	return ok
}

// put stores e for rel unless the cache changed since epoch (an Invalidate
// may concern what was read). When not everything fits, every file's entry
// (its filter, or what it is: binary, too large, excluded, ...) comes
// first and contents take the rest: a filter spares reading a file for
// almost every query, a content only the read of a file whose filter
// passed. So a content that does not fit is dropped (the rest of e is
// kept), and an entry without content that does not fit evicts the oldest
// contents, refused only when none is left. e.data must not be modified
// afterwards.
func (c *Cache) put(rel string, e entry, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != epoch {
		return
	}
	old, had := c.m[rel]
	delta := func() int64 {
		n := cost(rel, e)
		if had {
			n -= cost(rel, old)
		}
		return n
	}
	n := delta()
	if c.bytes+n > c.max && e.data != nil {
		e.data = nil
		n = delta()
		c.over.Add(1)
	}
	if c.bytes+n > c.max {
		c.evictContent(rel, c.bytes+n-c.max)
		if c.bytes+n > c.max {
			c.over.Add(1)
			return
		}
	}
	c.m[rel] = e
	c.bytes += n
	if e.data != nil {
		c.fifo = append(c.fifo, rel)
		if len(c.fifo)-c.head > 2*len(c.m)+1024 {
			c.compactFIFO()
		}
	}
	if !had {
		for d := parentDir(rel); d != ""; d = parentDir(d) {
			c.dirs[d]++
		}
	}
}
