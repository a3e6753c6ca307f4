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
}

// entry is one file as readFile found it. A kindText entry whose data is
// nil keeps only the file's trigram filter: its content did not fit.
type entry struct {
	data  []byte // kindText only; nil = not kept
	size  int64
	kind  uint8
	bloom *bloom // kindText files of at most bloomMaxFile bytes
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
}

func cost(rel string, e entry) int64 {
	n := int64(len(rel)+len(e.data)) + entryOverhead
	if e.bloom != nil {
		n += bloomBits / 8
	}
	return n
}

// contentShare is the part of the bound file contents may take: the rest
// is left to the trigram filters of the files whose content did not fit.
func (c *Cache) contentShare() int64 { return c.max / 4 * 3 }

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

// fits reports whether an entry of n content bytes may still fit; put
// decides for sure.
func (c *Cache) fits(rel string, n int64) bool {
	c.mu.RLock()
	ok := c.bytes+int64(len(rel))+n+entryOverhead+bloomBits/8 <= c.contentShare()
	c.mu.RUnlock()
	return ok
}

// put stores e for rel unless the cache changed since epoch (an Invalidate
// may concern what was read) or e does not fit. e.data must not be
// modified afterwards.
func (c *Cache) put(rel string, e entry, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != epoch {
		return
	}
	old, had := c.m[rel]
	n := cost(rel, e)
	if had {
		n -= cost(rel, old)
	}
	limit := c.max
	if e.data != nil {
		limit = c.contentShare()
	}
	if c.bytes+n > limit {
		c.over.Add(1)
		return
	}
	c.m[rel] = e
	c.bytes += n
	if !had {
		for d := parentDir(rel); d != ""; d = parentDir(d) {
			c.dirs[d]++
		}
	}
}
