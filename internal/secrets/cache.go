package secrets

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/redact"
)

const (
	// DefaultRewalk is how old a walk may get before Get starts a new one.
	DefaultRewalk = 2 * time.Second
	// maxInner bounds the entries visited below the secret directories.
	maxInner = 2000
)

// Config configures a [Cache].
type Config struct {
	// Deny selects the secret paths; nil means the default list.
	Deny *pathsafe.Denylist
	// DenyFor, if set, gives the list of each root instead of Deny: one
	// bound to the root (pathsafe.Denylist.ForRoot), so that a root inside
	// .aws has its credentials and a person's exceptions are no secrets
	// (neither closed nor learned). When it answers another list for a
	// root than the one the root's Set was built with, the Set is built
	// again (a policy reload changed the exceptions).
	DenyFor func(root string) *pathsafe.Denylist
	// Git reads the index and HEAD; nil means the work tree only.
	Git *gitx.Git
	// Rewalk is how old the last walk of a root may get before Get starts
	// a new one in the background; 0 means [DefaultRewalk].
	Rewalk time.Duration
	// Limit is the number of entries a walk visits; 0 means [DefaultLimit].
	Limit int
	// HistoryWait bounds how long a Get waits for the first learning of a
	// root's history; past it the Set says HistoryPending. 0 means
	// [DefaultHistoryWait].
	HistoryWait time.Duration
	// Recheck is how long a Set whose files are watched (watch.go) is
	// served without taking their stamps while no event says they changed;
	// 0 means [DefaultRecheck], a negative value takes the stamps on every
	// Get.
	Recheck time.Duration
	// MaxWatches bounds the inotify instances the cache's watches hold at
	// once (each watched checkout takes one of the user's
	// max_user_instances, 128 by default, shared with every other program
	// and with the live index); 0 means [DefaultMaxWatches], a negative
	// value no watch at all. A checkout beyond it keeps to its stamps.
	MaxWatches int
}

// DefaultMaxWatches is how many checkouts' stamps are watched at once.
const DefaultMaxWatches = 8

// DefaultRecheck is how long a watched Set is served without its stamps.
const DefaultRecheck = 100 * time.Millisecond

// DefaultHistoryWait is how long a Get waits, at most, for the first
// learning of a checkout's history.
const DefaultHistoryWait = 5 * time.Second

// Set is what the cache knows of one checkout. It is shared: do not modify
// its slices.
type Set struct {
	// Files and Dirs are the secret paths of the work tree, as [Find]
	// returns them.
	Files, Dirs []string
	// Links are the other names, in the work tree, of secret files that
	// have several hard links: closed like the secret files.
	Links []string
	// Tracked are the secret paths in the index or in HEAD, whether or not
	// the work tree still has them.
	Tracked []string
	// Truncated reports that the last walk stopped at its limit, so that
	// secret files may be missing.
	Truncated bool
	// Known holds the values learned from Files, the regular files below
	// Dirs, and Tracked (work tree, index and HEAD), for
	// [redact.Redactor.WithKnown]. It is never nil.
	Known *redact.Known
	// Blobs are the object ids of the secret files' contents in the index,
	// HEAD and the history: their loose objects are closed to confined
	// processes (a packed object cannot be closed alone).
	Blobs []string
	// HistoryPending reports that the values of the history are not
	// learned yet (the first learning outlasted Config.HistoryWait): Known
	// and Blobs may miss a rotated value, so whoever starts a process that
	// can read the object store should fail closed.
	HistoryPending bool
	// Gen increases whenever the Set of the root changes; 1 is the first.
	Gen uint64
}

// Cache remembers, per checkout root, the secret paths and the values
// learned from them. Get revalidates cheaply: it compares the stamps (size,
// mtime, inode, ctime) of the learned files and of the repository's index,
// HEAD and current branch ref, and learns again when one changed (or when
// one was modified less than a second before the last learning, which a
// stamp cannot tell from a later rewrite of the same size). While an
// inotify watch of the stamps' directories has queued nothing that
// matters, the stamps are not taken at all, for at most Config.Recheck
// (watch.go). The tree is walked again in the background when the last
// walk is older than Config.Rewalk. A Cache is safe for concurrent use;
// Close stops it.
type Cache struct {
	cfg    Config
	ctx    context.Context // of the background walks; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the background walks

	// mu protects roots and closed. It is never held during I/O, and it is
	// taken while holding an entry's mu (never the other way round).
	mu     sync.Mutex
	roots  map[string]*entry
	closed bool

	// watches counts the entries' watches (each an inotify instance),
	// bounded by cfg.MaxWatches.
	watches atomic.Int64

	// Tests: walkHook runs at the start of a background walk, walkDone
	// after it published its result; histHook at the start of a learning
	// of the history, histDone after it published its values.
	walkHook, walkDone, histHook, histDone func(root string)
	// revalidated runs after each revalidation with the stamps.
	revalidated func(root string)
}

// entry is the state of one root.
type entry struct {
	// mu protects every field below. Get holds it while it revalidates and
	// learns, so that concurrent Gets of one root learn once; a background
	// walk takes it only to publish its result.
	mu       sync.Mutex
	deny     *pathsafe.Denylist // the list of the root: fixed for the entry
	ready    bool               // the first walk and learning succeeded
	set      Set                // served
	tree     treeScan           // the walk set is built from
	next     *treeScan          // a finished background walk, not yet adopted
	dirty    bool               // tree changed since the last learning
	walking  bool               // a background walk runs
	stale    bool               // the next Get walks synchronously (Stale)
	walkedAt time.Time          // start of the last walk
	git      gitLocator         // finds the index, HEAD, ref and config files
	gitPaths []string           // those files at the last learning
	gitSt    []stamp            // their stamps then
	learned  []string           // the files learned from
	learnSt  []stamp            // their stamps before the last learning
	learnAt  time.Time          // when they were taken
	values   []string           // what the last learning returned

	histRunning bool          // a background learning of the history runs
	histDone    bool          // the first one finished
	histCh      chan struct{} // closed when the first one finished
	histValues  []string      // what the last one found
	histOids    []string      // and the blobs it found them in
	trackedOids []string      // the blobs of the tracked secret paths (index, HEAD)
	histNew     bool          // histValues changed since the last learning

	watch     *dirWatch     // the directories of the stamps (watch.go); nil: none
	gets      int           // Gets so far, up to watchAfter
	noWatch   bool          // inotify gave none, or the entry is gone: never again
	trusted   bool          // the watch covered the whole last revalidation
	checkedAt time.Time     // start of the last revalidation with the stamps
	counted   *atomic.Int64 // the cache's count of watches, while watch is set
}

// treeScan is the result of one walk.
type treeScan struct {
	found Found
	inner []string // regular files below found.Dirs
	trunc bool     // the walk below found.Dirs stopped at maxInner
	links []string // other names of linked secret files
}

func (t *treeScan) equal(o *treeScan) bool {
	return slices.Equal(t.found.Files, o.found.Files) && slices.Equal(t.found.Dirs, o.found.Dirs) &&
		t.found.Truncated == o.found.Truncated && slices.Equal(t.inner, o.inner) && t.trunc == o.trunc &&
		slices.Equal(t.links, o.links)
}

// NewCache returns an empty cache. Close it to stop its background walks.
func NewCache(cfg Config) *Cache {
	if cfg.Rewalk <= 0 {
		cfg.Rewalk = DefaultRewalk
	}
	if cfg.HistoryWait <= 0 {
		cfg.HistoryWait = DefaultHistoryWait
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = DefaultRecheck
	}
	if cfg.MaxWatches == 0 {
		cfg.MaxWatches = DefaultMaxWatches
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{cfg: cfg, ctx: ctx, cancel: cancel, roots: make(map[string]*entry)}
}

// Get returns the Set of the checkout at root, the top directory of a work
// tree (where .git is; the path is cleaned but not resolved). The first Get of a root walks the tree and
// learns synchronously, and waits (at most Config.HistoryWait) for the
// values of the repository's history, learned in the background. Later
// ones serve the last Set after revalidating it, learning again if a stamp
// changed or a finished background walk found different paths, and start a
// background walk when the last one is older than Config.Rewalk (at most
// one per root at a time).
//
// On an error, the Set returned is the last good one (the zero Set before
// the first success); callers should fail closed. Concurrent Gets of one
// root wait for each other's learning.
func (c *Cache) Get(ctx context.Context, root string) (Set, error) {
	s, hist, err := c.get(ctx, root)
	if err != nil || hist == nil {
		return s, err
	}
	t := time.NewTimer(c.cfg.HistoryWait)
	defer t.Stop()
	select {
	case <-hist:
		s, _, err = c.get(ctx, root)
	case <-t.C:
	case <-ctx.Done():
	}
	return s, err
}

// Current is Get without the wait for the history: the Set of the work
// tree, the index and HEAD, learned now, with HistoryPending while the
// first learning of the repository's history still runs, and then a
// channel closed when it finished (a Get after that knows its values).
// It is for what can print only the work tree (a read of a file): what can
// print history (git log -p, cat-file of an old blob, a diff against an
// old revision, any command) takes Get, which waits.
func (c *Cache) Current(ctx context.Context, root string) (Set, <-chan struct{}, error) {
	return c.get(ctx, root)
}

// get is Get without the wait: it also returns, while the first learning
// of the history runs, a channel closed when it finished.
func (c *Cache) get(ctx context.Context, root string) (Set, <-chan struct{}, error) {
	root = filepath.Clean(root)
	deny := c.denyFor(root)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Set{}, nil, errs.New(errs.Unavailable, "secrets cache is closed")
	}
	e := c.roots[root]
	old := e
	if e == nil || e.deny != deny {
		// A new list (the exceptions changed) starts the root over; the
		// old entry's background work ends unseen.
		e = &entry{deny: deny}
		c.roots[root] = e
	}
	c.mu.Unlock()
	if old != nil && old != e {
		old.drop()
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if e.gets < watchAfter {
		e.gets++
	}
	quiet := c.poll(e, now)
	if !e.ready {
		t, err := c.scan(ctx, root, e.deny)
		if err != nil {
			return Set{}, nil, err
		}
		e.tree, e.walkedAt, e.dirty = t, now, true
		if err := c.refresh(ctx, root, e, false); err != nil {
			return Set{}, nil, err
		}
		e.ready = true
		return e.set, e.pendingHistory(), nil
	}
	if e.stale {
		// Something may have appeared since the last walk (a watcher saw
		// a secret-named path, or the caller cannot tell): walk now, so
		// the Set served is the tree's as of this call.
		t, err := c.scan(ctx, root, e.deny)
		if err != nil {
			return e.set, nil, err
		}
		if !t.equal(&e.tree) {
			e.tree, e.dirty = t, true
		}
		e.walkedAt, e.next, e.stale = now, nil, false
	}
	if e.next != nil {
		if !e.next.equal(&e.tree) {
			e.tree, e.dirty = *e.next, true
		}
		e.next = nil
	}
	if !e.walking && now.Sub(e.walkedAt) >= c.cfg.Rewalk {
		c.startWalk(root, e, now)
	}
	if err := c.refresh(ctx, root, e, quiet); err != nil {
		return e.set, nil, err
	}
	return e.set, e.pendingHistory(), nil
}

// poll reads the events of e's watch: quiet reports that the stamps of
// the last revalidation still hold without taking them (watch.go); a new
// secret-named entry in a watched directory marks the Set stale (the tree
// is walked before it is served). e.mu is held.
func (c *Cache) poll(e *entry, now time.Time) (quiet bool) {
	if e.watch == nil {
		return false
	}
	q, fresh := e.watch.poll(e.deny)
	if fresh {
		e.stale = true
	}
	if !q {
		e.trusted = false
	}
	return e.trusted && now.Sub(e.checkedAt) < c.cfg.Recheck
}

// arm watches the directories of the files whose stamps the revalidation
// that began at start took, and trusts the watch when it covered all of
// them from the start. e.mu is held.
func (c *Cache) arm(root string, e *entry, start time.Time) {
	e.trusted = false
	if c.cfg.Recheck < 0 || e.noWatch {
		return
	}
	if e.watch == nil {
		if e.gets < watchAfter {
			return // a checkout read now and then keeps to the stamps
		}
		if c.watches.Add(1) > int64(c.cfg.MaxWatches) {
			c.watches.Add(-1)
			return // the cap: the stamps, until another watch ends
		}
		if e.watch = newDirWatch(); e.watch == nil {
			c.watches.Add(-1)
			e.noWatch = true
			return
		}
		e.counted = &c.watches
	}
	paths := slices.Concat(e.gitPaths, e.git.keyPaths(root))
	for _, r := range e.learned {
		paths = append(paths, filepath.Join(root, filepath.FromSlash(r)))
	}
	bases := []string{e.git.gitDir}
	if len(e.gitPaths) > 2 {
		bases = append(bases, filepath.Dir(e.gitPaths[2])) // the common dir (its config)
	}
	added, ok := e.watch.ensure(watchSpots(root, bases, paths), e.deny)
	e.trusted, e.checkedAt = ok && !added, start
}

// watchAfter is how many Gets of a root come before its watch: an inotify
// instance (128 per user by default, shared with the live index's
// watchers) is spent only on a checkout in steady use.
const watchAfter = 16

// drop closes the watch of an entry no longer in the cache.
func (e *entry) drop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.noWatch, e.trusted = true, false
	if e.watch != nil {
		e.watch.close()
		e.watch = nil
		e.counted.Add(-1)
	}
}

// Stale marks root's Set stale: the next Get walks the tree before it
// answers (a watcher saw a secret-named path appear).
func (c *Cache) Stale(root string) {
	root = filepath.Clean(root)
	c.mu.Lock()
	e := c.roots[root]
	c.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	e.stale = true
	e.mu.Unlock()
}

// Fresh is Get with a walk of the tree first: the Set is the tree's as of
// this call, not as of the last background walk (for a root no watcher
// follows: a target). The first Get of a root walks anyway.
func (c *Cache) Fresh(ctx context.Context, root string) (Set, error) {
	c.Stale(root)
	return c.Get(ctx, root)
}

// pendingHistory returns the channel closed when the first learning of the
// history finished, or nil when it did (or none runs). e.mu is held.
func (e *entry) pendingHistory() <-chan struct{} {
	if e.histDone || !e.histRunning {
		return nil
	}
	return e.histCh
}

// Forget drops what the cache knows of root. A background walk of it may
// still be running; Close waits for it.
func (c *Cache) Forget(root string) {
	c.mu.Lock()
	e := c.roots[filepath.Clean(root)]
	delete(c.roots, filepath.Clean(root))
	c.mu.Unlock()
	if e != nil {
		e.drop()
	}
}

// Close cancels the background walks and waits for them to end. Get fails
// afterwards. Close always returns nil.
func (c *Cache) Close() error {
	c.mu.Lock()
	c.closed = true
	roots := slices.Collect(maps.Values(c.roots))
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	for _, e := range roots {
		e.drop()
	}
	return nil
}

// startWalk starts a background walk of root. e.mu is held.
func (c *Cache) startWalk(root string, e *entry, now time.Time) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1) // under c.mu, so that it cannot race with Close's Wait
	c.mu.Unlock()
	e.walking, e.walkedAt = true, now
	go func() {
		defer c.wg.Done()
		if c.walkHook != nil {
			c.walkHook(root)
		}
		t, err := c.scan(c.ctx, root, e.deny)
		e.mu.Lock()
		e.walking = false
		if err == nil {
			e.next = &t
		}
		e.mu.Unlock()
		if c.walkDone != nil {
			c.walkDone(root)
		}
	}()
}

// startHistory starts learning the values of the secret paths in the
// repository's history, in the background (a big history takes a while):
// the next Get after it finished adds them. e.mu is held.
func (c *Cache) startHistory(root string, e *entry) {
	if e.histRunning {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	e.histRunning = true
	if e.histCh == nil {
		e.histCh = make(chan struct{})
	}
	go func() {
		defer c.wg.Done()
		if c.histHook != nil {
			c.histHook(root)
		}
		vals, oids, _ := learnHistory(c.ctx, c.cfg.Git, root, e.deny)
		slices.Sort(oids)
		e.mu.Lock()
		e.histRunning = false
		if (!slices.Equal(vals, e.histValues) || !slices.Equal(oids, e.histOids)) && (len(vals) > 0 || c.ctx.Err() == nil) {
			e.histValues, e.histOids, e.histNew = vals, oids, true
		}
		if !e.histDone {
			e.histDone, e.histNew = true, true // the next Get clears HistoryPending
			close(e.histCh)
		}
		e.mu.Unlock()
		if c.histDone != nil {
			c.histDone(root)
		}
	}()
}

// denyFor returns the list of root: Config.DenyFor's, else Config.Deny.
func (c *Cache) denyFor(root string) *pathsafe.Denylist {
	if c.cfg.DenyFor != nil {
		return c.cfg.DenyFor(root)
	}
	return c.cfg.Deny
}

// scan walks root: the secret paths, and the files below secret dirs.
func (c *Cache) scan(ctx context.Context, root string, deny *pathsafe.Denylist) (treeScan, error) {
	f, err := find(ctx, root, deny, c.cfg.Limit)
	if err != nil {
		return treeScan{}, err
	}
	inner, trunc, err := filesUnder(ctx, root, f.Dirs, maxInner)
	if err != nil {
		return treeScan{}, err
	}
	links, err := hardLinks(ctx, root, union(f.Files, inner), f.Dirs, cmp.Or(c.cfg.Limit, DefaultLimit))
	if err != nil {
		return treeScan{}, err
	}
	return treeScan{found: f, inner: inner, trunc: trunc, links: links}, nil
}

// refresh learns again if the tree changed (e.dirty), the repository's
// index or HEAD changed, or a learned file changed, and updates e.set.
// When quiet (poll), the stamps are known to hold and are not taken.
// e.mu is held.
func (c *Cache) refresh(ctx context.Context, root string, e *entry, quiet bool) error {
	if quiet && e.ready && !e.dirty && !e.histNew {
		return nil
	}
	start := time.Now()
	if err := c.revalidate(ctx, root, e); err != nil {
		e.trusted = false
		return err
	}
	c.arm(root, e, start)
	if c.revalidated != nil {
		c.revalidated(root)
	}
	return nil
}

// revalidate is refresh with the stamps. e.mu is held.
func (c *Cache) revalidate(ctx context.Context, root string, e *entry) error {
	gitPaths := e.git.find(root)
	gitSt := fileStamps("", gitPaths)
	gitChanged := !slices.Equal(gitPaths, e.gitPaths) || !slices.Equal(gitSt, e.gitSt)
	tracked := e.set.Tracked
	if (gitChanged || !e.ready) && c.cfg.Git != nil {
		c.startHistory(root, e)
	}
	var blobs []blob // of the index and HEAD, when listed now
	listed := false
	if (gitChanged || !e.ready) && c.cfg.Git != nil {
		t, bl, err := trackedSecrets(ctx, c.cfg.Git, root, e.deny)
		if err != nil {
			return err
		}
		tracked, blobs, listed = t, bl, true
		e.trackedOids = nil
		for _, b := range bl {
			if wanted(tracked, b.path) {
				e.trackedOids = append(e.trackedOids, b.oid)
			}
		}
	}
	learnPaths := e.learned
	if e.dirty || gitChanged || !e.ready {
		learnPaths = union(e.tree.found.Files, e.tree.inner, tracked)
	}
	learnSt := fileStamps(root, learnPaths)
	if e.ready && !e.dirty && !gitChanged && slices.Equal(learnPaths, e.learned) && slices.Equal(learnSt, e.learnSt) &&
		!racy(e.learnAt, e.learnSt) && !racy(e.learnAt, e.gitSt) && !e.histNew {
		return nil
	}
	learnAt := time.Now()
	values, err := learn(ctx, c.cfg.Git, root, learnPaths, blobs, listed)
	if err != nil {
		return err
	}
	values = union(values, e.histValues, gitConfigValues(gitPaths))
	e.histNew = false
	e.gitPaths, e.gitSt, e.learned, e.learnSt, e.learnAt, e.dirty = gitPaths, gitSt, learnPaths, learnSt, learnAt, false
	s := Set{
		Files: e.tree.found.Files, Dirs: e.tree.found.Dirs, Links: e.tree.links, Tracked: tracked,
		Truncated: e.tree.found.Truncated || e.tree.trunc, Known: e.set.Known, Gen: e.set.Gen,
		Blobs:          union(e.trackedOids, e.histOids),
		HistoryPending: c.cfg.Git != nil && !e.histDone,
	}
	if s.Known == nil || !slices.Equal(values, e.values) {
		s.Known, e.values = redact.NewKnown(values), values
	}
	if s.Gen == 0 || s.Known != e.set.Known || s.Truncated != e.set.Truncated ||
		!slices.Equal(s.Files, e.set.Files) || !slices.Equal(s.Dirs, e.set.Dirs) || !slices.Equal(s.Links, e.set.Links) || !slices.Equal(s.Tracked, e.set.Tracked) ||
		!slices.Equal(s.Blobs, e.set.Blobs) || s.HistoryPending != e.set.HistoryPending {
		s.Gen++
	}
	e.set = s
	return nil
}

// The racy slack covers the granularity of file timestamps: a file
// modified within it of a learning may have changed again since without
// changing its stamp (same size, same timestamp tick, rewritten in place).
//
// A file system with fine timestamps (sub-second parts that are not all
// zero) stamps files from the kernel's coarse clock, which lags real time
// by at most one tick (≤ 10 ms at HZ=100): a change after a learning at t
// gets a timestamp after t - tick, so racySlackFine covers it with margin.
// Timestamps without a sub-second part may come from a file system of
// whole (FAT: two) seconds: racySlackCoarse.
const (
	racySlackFine   = 50 * time.Millisecond
	racySlackCoarse = 3 * time.Second
)

// racy reports whether a stamp of sts is too recent, when the stamps were
// taken at, to prove that its file did not change after the learning: then
// it is learned once more, when it is old enough ("racy git"). Both mtime
// and ctime count (ctime cannot be set back by utimensat).
func racy(at time.Time, sts []stamp) bool {
	for _, st := range sts {
		if !st.exists {
			continue
		}
		slack := racySlackCoarse
		if st.mtime%int64(time.Second) != 0 || st.ctime%int64(time.Second) != 0 {
			slack = racySlackFine
		}
		limit := at.Add(-slack).UnixNano()
		if st.mtime >= limit || st.ctime >= limit {
			return true
		}
	}
	return false
}

// trackedSecrets lists the index (all stages) and HEAD once each: the
// paths deny matches there (sorted), and the
// blobs of every regular file at or below a path deny matches (a secret
// file, or one in a secret directory: what Learn reads of the index and
// HEAD), index entries first. Outside a repository, and for an unborn
// HEAD, there are none.
func trackedSecrets(ctx context.Context, git *gitx.Git, root string, deny *pathsafe.Denylist) ([]string, []blob, error) {
	var paths []string
	var blobs []blob
	add := func(out []byte, truncated bool, parse func(meta []string) (oid string, file bool)) {
		recs := bytes.Split(out, []byte{0})
		if truncated && len(recs) > 0 {
			recs = recs[:len(recs)-1] // cut mid-record
		}
		for _, r := range recs {
			meta, p, ok := bytes.Cut(r, []byte{'\t'})
			if !ok || len(p) == 0 || !secretInHistory(deny, string(p)) {
				continue
			}
			if _, ok := deny.Match(string(p)); ok {
				paths = append(paths, string(p))
			}
			if oid, file := parse(strings.Fields(string(meta))); file {
				blobs = append(blobs, blob{oid: oid, path: string(p)})
			}
		}
	}
	out, trunc, err := git.Run(ctx, root, maxTrackedListing, "ls-files", "-s", "-z")
	if err != nil {
		if errs.CodeOf(err) == errs.NotAGitRepository {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	// "<mode> <oid> <stage>\t<path>"
	add(out, trunc, func(f []string) (string, bool) {
		if len(f) != 3 {
			return "", false
		}
		return f[1], isFileMode(f[0]) && validOID(f[1])
	})
	out, trunc, err = git.Run(ctx, root, maxTrackedListing, "ls-tree", "-r", "-z", "HEAD")
	switch {
	case err == nil:
		// "<mode> <type> <oid>\t<path>"
		add(out, trunc, func(f []string) (string, bool) {
			if len(f) != 3 {
				return "", false
			}
			return f[2], f[1] == "blob" && isFileMode(f[0]) && validOID(f[2])
		})
	case errs.CodeOf(err) != errs.NotFound: // NotFound: unborn HEAD
		return nil, nil, err
	}
	slices.Sort(paths)
	return slices.Compact(paths), blobs, nil
}

// maxTrackedListing bounds the listing of the index or of HEAD that
// trackedSecrets reads (modes and object ids with the paths).
const maxTrackedListing = 32 << 20

// union returns the sorted, distinct paths of all lists.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
