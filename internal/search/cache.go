package search

import (
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// DefaultCacheBytes is the bound of NewCache(0).
const DefaultCacheBytes = 96 << 20

// entryOverhead is what one cached entry is charged beyond its path and
// content: the map slot, the entry and the string and slice headers.
const entryOverhead = 96

// contentShare: contents may take at most 1/contentShare of the bound;
// the rest is for every file's entry and the trigram index, which are
// what spare reads (a content only spares the read of a file the index
// already picked, and the files a query picks are few).
const contentShare = 32

// tailTrigramCost is what a trigram of a file not yet sealed into a
// segment is charged: more than any segment spends on it, so sealing
// never makes the cache outgrow its bound.
const tailTrigramCost = 16

// Cache keeps what SearchListed learned about the files of one work tree:
// a trigram index of their contents (see postings), the negative facts
// (binary, larger than the size limit, not a regular file, vanished, not
// permitted, excluded), and, within a share of its bound, contents; so a
// warm search opens only the files its query's trigrams pick, and none
// whose content is kept. It is bounded by total bytes (entries, index and
// contents); once full it keeps what it has and refuses new entries
// (counted in CacheStats.OverBound): those files are read from disk on
// every search.
//
// Entries are never revalidated against the disk: the caller (the
// checkout's watcher, which proves what changed) must Invalidate every
// changed path. A path edited and not invalidated is served from the
// cache, stale. A Cache serves one root: SearchListed refuses it for
// another. A Cache is safe for concurrent use.
type Cache struct {
	max   int64
	epoch atomic.Uint64 // bumped by every Invalidate and Reset

	hits, misses, over atomic.Int64

	mu    sync.RWMutex
	root  string    // the root the entries belong to; "" until first use
	owner *Searcher // the Searcher whose Exclude the entries obey
	m     map[string]entry
	dirs  map[string]int // directory -> number of entries below it
	bytes int64          // entries and contents (the index is post.bytes())
	// content is the part of bytes held by contents.
	content int64
	// fifo lists the paths whose content was kept, oldest first from
	// head (a path invalidated or evicted since may still be listed): an
	// entry that does not fit evicts the oldest contents (their entries
	// stay).
	fifo []string
	head int
	post *postings
	list *listMap // the last candidate list searched, nil = none
}

// entry is one file as readFile found it. A kindText entry's trigrams are
// in the index when pid is set (posting id + 1); its content is kept when
// data is not nil.
type entry struct {
	data []byte // kindText only; nil = not kept
	size int64
	kind uint8
	pid  int32
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
	Indexed int `json:"indexed"` // files whose trigrams are in the index
}

// NewCache returns an empty cache of at most maxBytes (0 or less =
// DefaultCacheBytes).
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{max: maxBytes, m: map[string]entry{}, dirs: map[string]int{}, post: newPostings()}
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
		c.list.unsettle(p, false)
		if c.dirs[p] == 0 {
			continue
		}
		prefix := p + "/"
		for k, e := range c.m {
			if strings.HasPrefix(k, prefix) {
				c.deleteLocked(k, e)
			}
		}
		c.list.unsettle(p, true)
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
	indexed := 0
	for _, e := range c.m {
		if e.pid != 0 {
			indexed++
		}
	}
	return CacheStats{
		Entries: len(c.m), Bytes: c.bytes + c.post.bytes(), MaxBytes: c.max,
		Hits: c.hits.Load(), Misses: c.misses.Load(), OverBound: c.over.Load(), Indexed: indexed,
	}
}

func (c *Cache) clearLocked() {
	clear(c.m)
	clear(c.dirs)
	c.bytes, c.content = 0, 0
	clear(c.fifo)
	c.fifo, c.head = c.fifo[:0], 0
	c.post.release()
	c.list = nil
}

func cost(rel string, e entry) int64 {
	return int64(len(rel)+len(e.data)) + entryOverhead
}

func (c *Cache) deleteLocked(rel string, e entry) {
	delete(c.m, rel)
	c.bytes -= cost(rel, e)
	c.content -= int64(len(e.data))
	if e.pid != 0 {
		c.post.remove(e.pid - 1)
	}
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
// are freed or none is left; their entries stay.
func (c *Cache) evictContent(rel string, need int64) {
	for need > 0 && c.head < len(c.fifo) {
		k := c.fifo[c.head]
		c.fifo[c.head] = ""
		c.head++
		if e, ok := c.m[k]; ok && e.data != nil && k != rel {
			need -= int64(len(e.data))
			c.bytes -= int64(len(e.data))
			c.content -= int64(len(e.data))
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

// put stores e for rel unless the cache changed since epoch (an Invalidate
// may concern what was read). e.data must not be modified afterwards.
func (c *Cache) put(rel string, e entry, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(rel, -1, e, nil, epoch)
}

// putIndexed stores the entry of the text file rel (at position pos of
// the current list, -1 if unknown) with its trigram set tris, unless the
// cache changed since epoch. Every file's entry and index come first and
// contents take the rest, within their share: an index entry spares
// reading a file for almost every query, a content only the read of a
// file the index picked. So a content that does not fit is dropped (the
// rest is kept), and an entry that does not fit evicts the oldest
// contents, then its trigrams are left out (the file is read on every
// search), then it is refused.
func (c *Cache) putIndexed(rel string, pos int, e entry, tris []trigram, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(rel, pos, e, tris, epoch)
}

func (c *Cache) putLocked(rel string, pos int, e entry, tris []trigram, epoch uint64) {
	if c.epoch.Load() != epoch {
		return
	}
	old, had := c.m[rel]
	if had {
		c.deleteLocked(rel, old)
	}
	index := int64(0)
	if tris != nil {
		index = int64(len(tris))*tailTrigramCost + tailEntryOverhead
	}
	used := c.bytes + c.post.bytes()
	n := cost(rel, e)
	if e.data != nil && (used+n+index > c.max || c.content+int64(len(e.data)) > c.max/contentShare) {
		e.data = nil
		n = cost(rel, e)
		c.over.Add(1)
	}
	if used+n+index > c.max {
		c.evictContent(rel, used+n+index-c.max)
		used = c.bytes + c.post.bytes()
	}
	if used+n+index > c.max && tris != nil {
		tris, index = nil, 0 // keep the entry, not the trigrams
		c.over.Add(1)
	}
	if used+n > c.max {
		c.over.Add(1)
		return
	}
	if tris != nil {
		e.pid = c.post.add(slices.Clone(tris)) + 1
	}
	c.m[rel] = e
	c.bytes += n
	c.content += int64(len(e.data))
	if e.data != nil {
		c.fifo = append(c.fifo, rel)
		if len(c.fifo)-c.head > 2*len(c.m)+1024 {
			c.compactFIFO()
		}
	}
	for d := parentDir(rel); d != ""; d = parentDir(d) {
		c.dirs[d]++
	}
	c.list.settle(rel, pos, e)
}

// listMap is what the cache knows of one candidate list: a flag per
// position and the position of each posting id, so a search finds its
// candidates from the index without looking at every path. It is the
// list's as long as the caller passes the same list (the same slice).
type listMap struct {
	input []string // the list as the caller passed it
	files []string // the same, ordered (see orderList)
	flags []uint8
	posOf []int32 // posting id -> position, -1 = not in the list
	// pending lists positions flagged pending (and maybe some that no
	// longer are), excl those flagged excluded.
	pending []int32
	excl    []int32
}

// Flags of a list position.
const (
	fSkip     = 1 << iota // never a candidate: a temp file, a .git component
	fExcluded             // the Searcher's Exclude rejects it
	fPending              // not settled: read it (no entry, or one the index does not cover)
)

// same reports whether input is the list m was built for.
func (m *listMap) same(input []string) bool {
	return m != nil && len(m.input) == len(input) && unsafe.SliceData(m.input) == unsafe.SliceData(input)
}

// known returns the map of the list input when the cache has one (the list
// was checked and ordered then), nil otherwise.
func (c *Cache) known(input []string) *listMap {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.list.same(input) {
		return c.list
	}
	return nil
}

// position returns the position of rel in the list, -1 when absent.
func (m *listMap) position(rel string) int {
	i, ok := slices.BinarySearchFunc(m.files, rel, pathCompare)
	if !ok {
		return -1
	}
	return i
}

// unsettle marks rel (and, for a directory, everything below it) as
// pending: its entry is gone.
func (m *listMap) unsettle(rel string, dir bool) {
	if m == nil {
		return
	}
	mark := func(i int) {
		if m.flags[i]&(fSkip|fExcluded|fPending) == 0 {
			m.flags[i] |= fPending
			m.pending = append(m.pending, int32(i))
		}
	}
	if !dir {
		if i := m.position(rel); i >= 0 {
			mark(i)
		}
		return
	}
	prefix := rel + "/"
	i, _ := slices.BinarySearchFunc(m.files, prefix, pathCompare)
	for ; i < len(m.files) && strings.HasPrefix(m.files[i], prefix); i++ {
		mark(i)
	}
}

// settle records rel's new entry e (at pos, or found by a search when
// pos is -1).
func (m *listMap) settle(rel string, pos int, e entry) {
	if m == nil {
		return
	}
	if pos < 0 || pos >= len(m.files) || m.files[pos] != rel {
		if pos = m.position(rel); pos < 0 {
			return
		}
	}
	if e.pid != 0 {
		id := int(e.pid - 1)
		for id >= len(m.posOf) {
			m.posOf = append(m.posOf, -1)
		}
		m.posOf[id] = int32(pos)
	}
	switch {
	case e.kind == kindExcluded:
		if m.flags[pos]&fExcluded == 0 {
			m.flags[pos] |= fExcluded
			m.excl = append(m.excl, int32(pos))
		}
		m.flags[pos] &^= fPending
	case settled(e):
		m.flags[pos] &^= fPending
	}
}

// settled reports whether a file of entry e needs no reading to be
// searched: it is not text, or its trigrams are in the index.
func settled(e entry) bool {
	switch e.kind {
	case kindNone, kindRetry:
		return false
	case kindText:
		return e.pid != 0
	}
	return true
}

// mapList returns the cache's map of the list input (files once checked
// and ordered), building it when input is not the list last searched:
// every path is flagged (temp files and .git
// components skipped, Exclude asked once per path the cache has no entry
// for) and the posting ids of the entries placed. newlyExcluded are the
// paths Exclude rejected now, for the caller to remember.
func (c *Cache) mapList(input, files []string, exclude func(string) bool) *listMap {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.list.same(input) {
		return c.list
	}
	epoch := c.epoch.Load()
	m := &listMap{input: input, files: files, flags: make([]uint8, len(files)), posOf: make([]int32, c.post.next)}
	for i := range m.posOf {
		m.posOf[i] = -1
	}
	var newlyExcluded []string
	for i, f := range files {
		if isTemp(f) {
			m.flags[i] = fSkip
			continue
		}
		if strings.Contains(f, ".git") {
			if _, dotGit := relPath(f); dotGit {
				m.flags[i] = fSkip
				continue
			}
		}
		e, ok := c.m[f]
		switch {
		case !ok && exclude != nil && exclude(f):
			newlyExcluded = append(newlyExcluded, f)
			m.flags[i] = fExcluded
			m.excl = append(m.excl, int32(i))
			continue
		case e.kind == kindExcluded:
			m.flags[i] = fExcluded
			m.excl = append(m.excl, int32(i))
			continue
		}
		if e.pid != 0 {
			m.posOf[e.pid-1] = int32(i)
		}
		if !settled(e) {
			m.flags[i] = fPending
			m.pending = append(m.pending, int32(i))
		}
	}
	c.list = m
	for _, f := range newlyExcluded {
		c.putLocked(f, -1, entry{kind: kindExcluded}, nil, epoch)
	}
	return m
}

// candidates returns the positions of m a search of plan must look at,
// in order: the live files the index picks and the pending ones; and the
// excluded positions (for counting). Called with the list current.
func (c *Cache) candidates(m *listMap, plan *tquery) (cands []int32, excl []int32) {
	c.mu.Lock() // pending and excl are compacted in place
	defer c.mu.Unlock()
	for _, id := range c.post.query(plan) {
		if int(id) < len(m.posOf) {
			if pos := m.posOf[id]; pos >= 0 {
				cands = append(cands, pos)
			}
		}
	}
	kept := m.pending[:0]
	for _, pos := range m.pending {
		if m.flags[pos]&fPending != 0 {
			kept = append(kept, pos)
			cands = append(cands, pos)
		}
	}
	slices.Sort(kept)
	m.pending = slices.Compact(kept)
	slices.Sort(cands)
	cands = slices.Compact(cands)
	slices.Sort(m.excl)
	m.excl = slices.Compact(m.excl)
	return cands, slices.Clone(m.excl)
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
	ok := c.bytes+c.post.bytes()+int64(len(rel))+n+entryOverhead <= c.max && c.content+n <= c.max/contentShare
	c.mu.RUnlock()
	return ok
}

// keepContent keeps data as the content of rel's text entry, read by a
// search that found it not kept (the files searches pick stay near), unless
// the cache changed since epoch or it does not fit the contents' share
// (the oldest contents give way).
func (c *Cache) keepContent(rel string, data []byte, epoch uint64) {
	n := int64(len(data))
	share := c.max / contentShare
	if n > share {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[rel]
	if c.epoch.Load() != epoch || !ok || e.kind != kindText || e.data != nil || int64(len(data)) != e.size {
		return
	}
	if over := c.content + n - share; over > 0 {
		c.evictContent(rel, over)
	}
	if over := c.bytes + c.post.bytes() + n - c.max; over > 0 {
		c.evictContent(rel, over)
	}
	if c.content+n > share || c.bytes+c.post.bytes()+n > c.max {
		return
	}
	if e.data = slices.Clone(data); e.data == nil {
		e.data = []byte{}
	}
	c.m[rel] = e
	c.bytes += n
	c.content += n
	c.fifo = append(c.fifo, rel)
}
