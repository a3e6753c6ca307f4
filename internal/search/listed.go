package search

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/harnessd/harnessd/contract/errs"
)

// EngineIndex is Result.Engine for SearchListed.
const EngineIndex = "index"

// listedChunk is how many candidate files a worker takes at a time.
const listedChunk = 16

// SearchListed searches files, the caller's candidate list (slash-separated
// paths relative to root, as `git ls-files -z --cached --others
// --exclude-standard` lists them), reading contents through cache (nil =
// read every file from disk). The list may come in any order and hold
// duplicates and directory entries ("dir/", dropped); a sorted (by path
// component, see pathCompare), duplicate-free list costs no copy. A path
// that is absolute, empty, or has an empty, "." or ".." component is an
// errs.InvalidArgument; a path with a ".git" component is never searched.
//
// Filtering, matching, ordering, cut, truncation, errors and timeouts are
// SearchGo's (see the package doc); Result.Engine is EngineIndex. Cached
// entries are trusted: the caller must Invalidate every changed path first
// (see Cache). With a cache, the files read are those the query's trigram
// plan picks in the cache's index and those it does not cover yet; the
// cache recognizes a list passed again by identity, so a list must not be
// modified once passed (pass a new slice instead). Symbolic links are
// never followed and only regular files are read, as by SearchGo.
func (s *Searcher) SearchListed(ctx context.Context, root string, files []string, req Request, cache *Cache) (Result, error) {
	input := files
	p, err := s.prepare(root, req)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.lim.Timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return Result{}, ctxErr(ctx, err)
	}
	if cache != nil && !cache.bind(p.root, s) {
		return Result{}, errs.New(errs.InvalidArgument, "the cache holds another work tree's or another Searcher's files; use one Cache per root and Searcher")
	}
	var m *listMap
	if cache != nil {
		m = cache.known(files) // a list checked and ordered before
	}
	if m != nil {
		files = m.files
	} else if files, err = orderList(files); err != nil {
		return Result{}, err
	}
	closeRoot, err := p.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer closeRoot()
	r := runPool.Get().(*listedRun)
	defer r.release()
	var excluded int
	if cache != nil {
		if m == nil {
			m = cache.mapList(input, files, p.exclude)
		}
		excluded = r.candidates(p, m, cache)
	} else {
		excluded = r.filter(p, files)
	}
	ms, err := r.search(ctx, p, files, cache, p.max+1)
	if err != nil {
		return Result{}, ctxErr(ctx, err)
	}
	return p.result(ms, EngineIndex, excluded), nil
}

// relPath checks one listed path: ok is false for a path that is empty,
// absolute or has an empty, "." or ".." component; dotGit is true when a
// component is ".git".
func relPath(rel string) (ok, dotGit bool) {
	if rel == "" || rel[0] == '/' || strings.IndexByte(rel, 0) >= 0 {
		return false, false
	}
	for rest := rel; ; {
		i := strings.IndexByte(rest, '/')
		comp := rest
		if i >= 0 {
			comp = rest[:i]
		}
		switch comp {
		case "", ".", "..":
			return false, false
		case ".git":
			dotGit = true
		}
		if i < 0 {
			return true, dotGit
		}
		rest = rest[i+1:]
	}
}

// orderList checks files and returns them sorted by pathCompare, without
// duplicates or directory entries; a list already so is returned as is.
func orderList(files []string) ([]string, error) {
	clean := true
	for i, f := range files {
		if strings.HasSuffix(f, "/") {
			clean = false
			f = strings.TrimRight(f, "/")
		}
		if ok, _ := relPath(f); !ok {
			return nil, errs.New(errs.InvalidArgument, "listed file %q is not a clean relative path; pass the paths git ls-files prints", f)
		}
		if clean && i > 0 && pathCompare(files[i-1], f) >= 0 {
			clean = false
		}
	}
	if clean {
		return files, nil
	}
	out := make([]string, 0, len(files))
	for _, f := range files {
		if !strings.HasSuffix(f, "/") {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, pathCompare)
	return slices.Compact(out), nil
}

// listedRun is the state of one SearchListed; runs are pooled so a warm
// search allocates little more than its matches.
type listedRun struct {
	cands []int32 // indexes into files of the candidates, in order

	next atomic.Int64 // the next chunk to take
	stop atomic.Int64 // chunks at or past stop are not started
	// kept is how many content bytes this search has asked the cache to
	// keep (see keepBudget).
	kept atomic.Int64

	mu      sync.Mutex
	results [][]Match // per chunk
	done    []bool    // per chunk
	prefix  int       // chunks [0,prefix) are done
	total   int       // matches in chunks [0,prefix)
}

var runPool = sync.Pool{New: func() any { return new(listedRun) }}

func (r *listedRun) release() {
	clear(r.results)
	if cap(r.cands) > 1<<20 {
		return // do not keep a huge run alive
	}
	runPool.Put(r)
}

// filter picks the candidates of a search without a cache as plan.filter
// does (temp files, glob, Exclude, in that order, counting what Exclude
// rejects) and drops paths with a .git component.
func (r *listedRun) filter(p *plan, files []string) (excluded int) {
	r.cands = r.cands[:0]
	for i, f := range files {
		if isTemp(f) {
			continue
		}
		if strings.Contains(f, ".git") {
			if _, dotGit := relPath(f); dotGit {
				continue
			}
		}
		if p.glob != nil && !p.glob.match(f) {
			continue
		}
		if p.exclude != nil && p.exclude(f) {
			excluded++
			continue
		}
		r.cands = append(r.cands, int32(i))
	}
	return excluded
}

// candidates picks the candidates of a search through the cache: the
// files the query's trigram plan selects in the index, and those the
// index does not cover yet (never read, changed, or over the bound),
// that the glob selects; it counts the excluded files the glob selects.
// Temp files and .git components never are candidates. Exclude is asked
// once per path (its answer depends on the path alone) when the list is
// first seen.
func (r *listedRun) candidates(p *plan, m *listMap, cache *Cache) (excluded int) {
	files := m.files
	cands, excl := cache.candidates(m, p.m.plan())
	r.cands = r.cands[:0]
	for _, pos := range cands {
		if p.glob == nil || p.glob.match(files[pos]) {
			r.cands = append(r.cands, pos)
		}
	}
	for _, pos := range excl {
		if p.glob == nil || p.glob.match(files[pos]) {
			excluded++
		}
	}
	return excluded
}

// keepBudget: one search keeps the contents it reads from disk up to a
// keepBudget-th of the contents' share. A search whose candidates do not
// fit the share (a regex whose trigrams are common) would otherwise copy
// every file it reads into the cache only to push it out again a few
// files later, evicting what other searches kept on the way: at 100,000
// files that churn was a third of such a search's time.
const keepBudget = 2

// listedWorker is one worker's reusable buffers.
type listedWorker struct {
	buf   bytes.Buffer
	known []byte // readKnown's buffer
	ents  []entry
	tris  trigramSet
}

var workerPool = sync.Pool{New: func() any { return new(listedWorker) }}

// search searches the candidates with all cores, chunk by chunk, and returns
// the first need matches in order. Chunks past the point where need matches
// are certain are not searched.
func (r *listedRun) search(ctx context.Context, p *plan, files []string, cache *Cache, need int) ([]Match, error) {
	n := (len(r.cands) + listedChunk - 1) / listedChunk
	if n == 0 {
		return nil, ctx.Err()
	}
	r.results = slices.Grow(r.results[:0], n)[:n]
	r.done = slices.Grow(r.done[:0], n)[:n]
	clear(r.done)
	r.prefix, r.total = 0, 0
	r.next.Store(0)
	r.kept.Store(0)
	r.stop.Store(int64(n))

	work := func() {
		w := workerPool.Get().(*listedWorker)
		defer workerPool.Put(w)
		done := ctx.Done()
		for {
			c := r.next.Add(1) - 1
			if c >= r.stop.Load() {
				return
			}
			select {
			case <-done:
				r.stop.Store(0)
				return
			default:
			}
			r.finish(int(c), r.searchChunk(int(c), p, files, cache, need, w, done), need)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ms := make([]Match, 0, min(r.total, need))
	for _, cm := range r.results[:r.prefix] {
		ms = append(ms, cm...)
		if len(ms) >= need {
			break
		}
	}
	if len(ms) > need {
		ms = ms[:need]
	}
	return ms, nil
}

// finish records chunk c's matches and stops the search once the chunks done
// in order hold need matches.
func (r *listedRun) finish(c int, ms []Match, need int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[c], r.done[c] = ms, true
	for r.prefix < len(r.done) && r.done[r.prefix] {
		r.total += len(r.results[r.prefix])
		r.prefix++
		if r.total >= need {
			r.stop.Store(int64(r.prefix))
			return
		}
	}
}

// searchChunk returns up to need matches of chunk c, in order.
func (r *listedRun) searchChunk(c int, p *plan, files []string, cache *Cache, need int, w *listedWorker, done <-chan struct{}) []Match {
	idx := r.cands[c*listedChunk : min((c+1)*listedChunk, len(r.cands))]
	max := p.lim.MaxFileSize
	w.ents = w.ents[:0]
	if cache != nil {
		w.ents = cache.lookup(files, idx, w.ents)
	}
	var ms []Match
	hits, misses := 0, 0
	for i, fi := range idx {
		select {
		case <-done:
			return nil // the search fails; its matches do not matter
		default:
		}
		rel := files[fi]
		var e entry
		if cache != nil {
			e = w.ents[i]
		}
		if e.kind == kindNone || e.kind == kindLarge && e.size <= max {
			e = load(p, rel, int(fi), max, cache, w)
			misses++
		} else {
			hits++
		}
		if e.kind != kindText || e.size > max {
			continue
		}
		data := e.data
		if data == nil { // its content is not kept: read it
			var epoch uint64
			if cache != nil {
				epoch = cache.epoch.Load()
			}
			var ok bool
			if data, ok = readKnown(p.dirfd, rel, e.size, w.known); ok && bytes.IndexByte(data, 0) < 0 {
				w.known = data[:0]
			} else {
				var kind uint8
				if data, kind, _ = readFile(p, rel, max, &w.buf); kind != kindText {
					continue
				}
			}
			if cache != nil && r.kept.Add(int64(len(data))) <= cache.max/contentShare/keepBudget {
				cache.keepContent(rel, data, epoch)
			}
		}
		p.m.scan(data, func(line, start, end, col int) bool {
			ms = append(ms, p.makeMatch(rel, line, col, data[start:end]))
			return len(ms) < need
		})
		if len(ms) >= need {
			break
		}
	}
	if cache != nil {
		cache.hits.Add(int64(hits))
		cache.misses.Add(int64(misses))
	}
	return ms
}

// load reads rel (at position pos of the list) from disk and keeps what
// it found in cache (when not nil and there is room): for a text file,
// its trigrams in the index and, when it fits, its content. The returned
// data may alias w's buffer.
func load(p *plan, rel string, pos int, max int64, cache *Cache, w *listedWorker) entry {
	var epoch uint64
	if cache != nil {
		epoch = cache.epoch.Load()
	}
	data, kind, size := readFile(p, rel, max, &w.buf)
	e := entry{data: data, kind: kind, size: size}
	if cache == nil || kind == kindRetry {
		return e
	}
	if kind != kindText {
		cache.put(rel, e, epoch)
		return e
	}
	kept := e
	kept.data = nil
	if cache.fits(rel, size) {
		if kept.data = bytes.Clone(data); kept.data == nil {
			kept.data = []byte{}
		}
	} else {
		cache.over.Add(1) // its content is read from disk when the index picks it
	}
	cache.putIndexed(rel, pos, kept, w.tris.of(data), epoch)
	return e
}
