// Package liveview is the live index of one checkout: the caches that a
// checkout's watcher (internal/watch, driven by the watcher actor) keeps
// true, and the in-process answers built from them — git status from
// .git/index plus the paths the watcher saw change, the candidate file
// list and contents of search, and results of git calls (diffs, read-only
// commands) keyed by the watcher's generation.
//
// Every query first syncs with the watcher through a cookie (a file
// raised in the watcher's cookie dir, outside the checkout, whose event
// proves that every earlier change has been seen), so the view is never
// stale. Anything the view cannot prove —
// the checkout is not watched, the watcher lost track, a repository
// feature the in-process status does not model — falls back to running
// git, and the answer says so (Source).
//
// A view starts cold: its first calls are answered by git while it warms
// up in the background (the watcher's walk, then a base from git), so the
// first status costs what `git status` costs; so does the first call
// after the watcher was passivated.
package liveview

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/gitindex"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/search"
	"github.com/harnessd/harnessd/internal/watch"
)

// Sources of an answer.
const (
	// SourceIndex: computed in process from the live index.
	SourceIndex = "index"
	// SourceExec: git ran for this answer.
	SourceExec = "exec"
	// SourceCache: the result of an earlier identical git call, which
	// the watcher proves still holds (nothing changed since).
	SourceCache = "cache"
)

// Sync is the watcher's answer to a cookie sync.
type Sync struct {
	// Ready is false when the checkout is not watched (Reason says why).
	Ready  bool
	Reason string
	watch.State
	Watches int
	// CookieSeen: the answer proved the cookie's event; only then may the
	// cookie be raised again.
	CookieSeen bool
}

// Syncer asks the checkout's watcher for the changes since (epoch, gen)
// once it has seen the cookie file (a base name in the cookie dir) appear.
type Syncer func(ctx context.Context, cookie string, epoch, gen uint64) (Sync, error)

// View is the live index of one checkout. Its methods are safe for
// concurrent use.
type View struct {
	root      string
	cookieDir string // the watcher's cookie dir, outside the checkout
	cookieTag string // "<pid>-<random>-": this view's cookie names
	git       *gitx.Git
	sync      Syncer
	cookies   atomic.Uint64
	cache     *search.Cache

	cookieMu    sync.Mutex // protects freeCookies
	freeCookies []string   // cookie files that exist and no sync uses

	mu       sync.Mutex
	gitDir   string // the work tree's own git dir (a linked worktree's is not root/.git)
	watched  bool   // the last sync was Ready
	reason   string // why not, or why the in-process status is off
	epoch    uint64
	gen      uint64
	base     *gitx.Status // exact as of (epoch, gen) minus pending
	ix       *gitindex.Index
	eligible bool
	pending  map[string]bool // paths changed since base
	files    []string        // search candidates, nil = rebuild
	results  map[string]any  // git call results valid at (epoch, gen)
	// What the base was built with: the configuration (raw, and what
	// Refresh reads of it) and the attribute rules read so far.
	cfg   map[string][]string
	tree  gitindex.TreeConfig
	attrs *gitindex.Attributes
	// warmth: cold (no position; calls answered by git), warming (the
	// background build runs) or warm (calls sync with the watcher).
	warmth     warmth
	warmCancel context.CancelFunc
	warmDone   chan struct{} // closed when the background build ends
	// The search index's background fill (search.Cache.Fill): a checkout
	// of fillMin files or more is searched by the usual way (rg) until
	// its fill is done, for fillOwner (a new Searcher starts it over);
	// fillGen counts resets, so a fill begun before one keeps nothing.
	fill       warmth
	fillOwner  *search.Searcher
	fillGen    uint64
	fillCancel context.CancelFunc
	fillDone   chan struct{}
	closed     bool
}

// fillMin is the size of a checkout (files) from which its first search
// is answered by rg while the search index fills in the background:
// below it, reading the files inline costs less than starting rg.
const fillMin = 2000

// ReasonIndexing is the index_reason of a search answered by rg while
// the search index fills in the background.
const ReasonIndexing = "the search index is building: answered by rg meanwhile"

// warmth is how far a view got towards answering in process.
type warmth uint8

const (
	cold warmth = iota
	warming
	warm
)

// reasonWarming is the index_reason of calls answered by git while the
// view warms up.
const reasonWarming = "the live index is starting: answered by git meanwhile"

// warmTimeout bounds a background build (the watcher's walk, then git
// status): past it the view is cold again and the next call starts over.
const warmTimeout = 15 * time.Minute

// New returns the view of the work tree root (git dir root/.git) whose
// watcher sees cookies raised in cookieDir (watch.CookieDir).
func New(root, cookieDir string, git *gitx.Git, sync Syncer, cache *search.Cache) *View {
	if cache == nil {
		cache = search.NewCache(0)
	}
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	v := &View{root: root, gitDir: filepath.Join(root, ".git"), cookieDir: cookieDir, git: git, sync: sync, cache: cache,
		cookieTag: strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(tag[:]) + "-",
		pending:   map[string]bool{}, results: map[string]any{}}
	// In the background: the cookie dir is in the data dir, whose disk
	// may be frozen or stalled, and a view is made on a call's path (a
	// failure shows at the first sync, answered by git).
	go func() {
		_ = os.MkdirAll(cookieDir, 0o700)
		removeDeadCookies(cookieDir)
	}()
	return v
}

// removeDeadCookies removes the cookie files in dir of processes that are
// gone (a harnessd killed before it could remove its own).
func removeDeadCookies(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, watch.CookiePrefix+"*"))
	for _, p := range names {
		rest := strings.TrimPrefix(filepath.Base(p), watch.CookiePrefix)
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '-'), 0)])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(p)
		}
	}
}

// Position is the watcher generation a view answered at: two equal
// positions (Valid both) mean the tree did not change in between.
type Position struct {
	Epoch, Gen uint64
	Valid      bool
}

// Cookies. Creating and removing a file costs a directory update each
// (≈ 0.3 ms on a busy ext4); touching an existing file's times costs a few
// microseconds and raises one inotify event all the same. So a cookie file
// is created once (its creation is its first sync) and then reused: a
// reuse touches it (utimensat, not following links). A name is in use by
// one sync at a time; a sync that failed or timed out removes its file and
// its name is never used again, so a late event of it cannot answer
// another sync.

// takeCookie returns a cookie name for one sync and whether its file
// exists already.
func (v *View) takeCookie() (name string, exists bool) {
	v.cookieMu.Lock()
	defer v.cookieMu.Unlock()
	if n := len(v.freeCookies); n > 0 {
		name = v.freeCookies[n-1]
		v.freeCookies = v.freeCookies[:n-1]
		return name, true
	}
	return watch.CookiePrefix + v.cookieTag + strconv.FormatUint(v.cookies.Add(1), 10), false
}

func (v *View) returnCookie(name string) {
	v.cookieMu.Lock()
	defer v.cookieMu.Unlock()
	if len(v.freeCookies) < maxFreeCookies {
		v.freeCookies = append(v.freeCookies, name)
		return
	}
	os.Remove(filepath.Join(v.cookieDir, name))
}

// maxFreeCookies bounds the cookie files kept for reuse (one per sync
// that ran at the same time).
const maxFreeCookies = 16

// raiseCookie makes the event of cookie name: creates its file, or
// touches it when it exists (a file gone meanwhile is created again).
func (v *View) raiseCookie(name string, exists bool) error {
	path := filepath.Join(v.cookieDir, name)
	if exists {
		now := unix.NsecToTimespec(time.Now().UnixNano())
		err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{now, now}, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// cookieWait bounds how long a call waits for its sync cookie's file:
// the cookie dir is in the data dir (where confined processes cannot
// raise one), and a frozen or stalled data-dir disk must not hold a read.
const cookieWait = time.Second

// ReasonCookieStalled is the reason of a sync whose cookie the data dir
// did not take within cookieWait: the call is answered by git.
const ReasonCookieStalled = "the data dir did not take the sync cookie within 1s (a frozen or stalled disk): answered by git"

// raiseCookieWithin raises cookie name (raiseCookie), waiting at most d
// (or until ctx ends): ok is false when it did not end by then; the name
// is then never used again and its file is removed once the system call
// returns.
func (v *View) raiseCookieWithin(ctx context.Context, name string, exists bool, d time.Duration) (ok bool, err error) {
	done := make(chan error, 1)
	go func() { done <- v.raiseCookie(name, exists) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return true, err
	case <-t.C:
	case <-ctx.Done():
	}
	go func() {
		<-done
		os.Remove(filepath.Join(v.cookieDir, name))
	}()
	return false, nil
}

// syncAt raises a cookie and asks the watcher for the changes since
// (epoch, gen). A checkout whose git dir cannot hold a cookie, or whose
// watcher does not answer, is reported not Ready.
func (v *View) syncAt(ctx context.Context, epoch, gen uint64) (Sync, error) {
	name, exists := v.takeCookie()
	if ok, err := v.raiseCookieWithin(ctx, name, exists, cookieWait); !ok {
		if ctx.Err() != nil {
			return Sync{}, ctx.Err()
		}
		return Sync{Reason: ReasonCookieStalled}, nil
	} else if err != nil {
		os.Remove(filepath.Join(v.cookieDir, name))
		return Sync{Reason: "cannot make a sync cookie: " + err.Error()}, nil
	}
	st, err := v.sync(ctx, name, epoch, gen)
	if err != nil {
		os.Remove(filepath.Join(v.cookieDir, name)) // never reused: a late event must not answer another sync
		if ctx.Err() != nil {
			return Sync{}, ctx.Err()
		}
		return Sync{Reason: "watcher: " + err.Error()}, nil
	}
	if st.CookieSeen {
		v.returnCookie(name)
	} else {
		os.Remove(filepath.Join(v.cookieDir, name)) // its event may still come: never reuse the name
	}
	return st, nil
}

// Close stops the view's background build and removes its cookie files.
func (v *View) Close() {
	v.mu.Lock()
	v.closed = true
	cancel, done := v.warmCancel, v.warmDone
	v.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	v.mu.Lock()
	cancel, done = v.fillCancel, v.fillDone
	v.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	v.cookieMu.Lock()
	defer v.cookieMu.Unlock()
	for _, name := range v.freeCookies {
		os.Remove(filepath.Join(v.cookieDir, name))
	}
	v.freeCookies = nil
}

// advance syncs with the watcher and applies what changed. It returns the
// position now held, Valid false when the checkout is not watched or the
// view is not warm (then the caller answers from git and kicks the
// view).
func (v *View) advance(ctx context.Context) (Position, error) {
	v.mu.Lock()
	if v.warmth != warm {
		v.mu.Unlock()
		return Position{}, nil
	}
	epoch, gen := v.epoch, v.gen
	v.mu.Unlock()
	st, err := v.syncAt(ctx, epoch, gen)
	if err != nil {
		return Position{}, err
	}
	if !st.Ready && st.Reason == watch.ReasonStarting {
		// A new watcher (after a passivation) is walking: warm up again
		// in the background rather than wait for it.
		v.mu.Lock()
		if v.warmth == warm {
			v.resetLocked()
			v.warmth, v.epoch, v.gen, v.reason = cold, 0, 0, reasonWarming
		}
		v.mu.Unlock()
		return Position{}, nil
	}
	if !st.Ready {
		v.notWatched(st.Reason)
		return Position{}, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.warmth != warm {
		return Position{}, nil // went cold meanwhile
	}
	v.watched = true
	switch {
	case st.Epoch < v.epoch:
		// An older answer overtaken by a newer one: nothing to apply.
	case !st.Complete || st.Epoch != v.epoch:
		v.resetLocked()
		v.epoch, v.gen = st.Epoch, st.Gen
	case st.Gen > v.gen:
		if st.Meta {
			v.resetLocked()
		} else {
			for _, p := range st.Changed {
				v.pending[p] = true
				if v.files != nil && underSubmodule(v.ix, p) {
					v.files = nil // a submodule's files are asked of git again
				}
			}
			v.cache.Invalidate(st.Changed...)
			clear(v.results)
		}
		v.gen = st.Gen
	}
	return Position{Epoch: v.epoch, Gen: v.gen, Valid: true}, nil
}

func (v *View) notWatched(reason string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.watched || v.reason != reason {
		v.resetLocked()
	}
	v.watched, v.reason = false, reason
}

func (v *View) resetLocked() {
	v.base, v.ix, v.files, v.attrs = nil, nil, nil, nil
	clear(v.pending)
	clear(v.results)
	v.cache.Reset()
	v.fill, v.fillGen = cold, v.fillGen+1
}

// kickLocked starts warming a cold view in the background. The build
// takes v.mu before it does anything, so it starts after the call that
// kicked it (and holds the lock) is done: the first call's git does not
// share the machine with the watcher's walk.
func (v *View) kickLocked() {
	if v.warmth != cold || v.closed {
		return
	}
	v.warmth, v.reason = warming, reasonWarming
	ctx, cancel := context.WithTimeout(context.Background(), warmTimeout)
	done := make(chan struct{})
	v.warmCancel, v.warmDone = cancel, done
	go func() {
		defer close(done)
		defer cancel()
		v.warmUp(ctx)
	}()
}

// warmUp is the background build: wait for the watches (a sync from no
// position waits for the watcher's walk), then take a base from git at
// the position the sync gave, and make the view warm. Until then calls
// are answered by git.
func (v *View) warmUp(ctx context.Context) {
	v.mu.Lock() // held by the kicking call until it is done
	closed := v.closed
	v.mu.Unlock()
	if closed {
		return
	}
	st, err := v.syncAt(ctx, 0, 0)
	if err == nil && st.Ready && !st.Complete {
		var b *built
		if b, err = v.build(ctx); err == nil {
			v.mu.Lock()
			if v.warmth == warming && !v.closed {
				v.resetLocked()
				v.warmth, v.watched, v.epoch, v.gen = warm, true, st.Epoch, st.Gen
				v.installLocked(b)
			}
			v.mu.Unlock()
			if b.ix != nil && len(b.ix.Entries) >= settleMin {
				settle() // what the build allocated and dropped goes back (memory.go)
			}
			return
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.warmth != warming || v.closed {
		return
	}
	switch {
	case err != nil:
		v.warmth = cold // the next call starts over
	case !st.Ready && st.Reason != watch.ReasonStarting:
		// Not watchable: warm, in the sense that every call asks the
		// watcher (cheaply) and runs git with its reason.
		v.warmth, v.watched, v.reason = warm, false, st.Reason
	default:
		v.warmth = cold
	}
}

// Position syncs with the watcher and returns the position of the tree.
func (v *View) Position(ctx context.Context) (Position, error) {
	pos, err := v.advance(ctx)
	if err == nil && !pos.Valid {
		v.kick()
	}
	return pos, err
}

// Warm starts warming the view if it is cold and waits until the
// background build is over (or ctx is done); it reports whether the view
// is warm then: answering from the watcher (in process when it can, or
// from git with the watcher's reason when the checkout is not watched).
// Calls do not need it (until the view is warm they are answered by git);
// benchmarks and tests that measure or prove in-process answers do.
func (v *View) Warm(ctx context.Context) (bool, error) {
	v.mu.Lock()
	v.kickLocked()
	w, done := v.warmth, v.warmDone
	v.mu.Unlock()
	if w == warm {
		return true, nil
	}
	return v.await(ctx, done, func() bool { return v.warmth == warm })
}

// await waits for a background build's done (nil: the view is closed) or
// ctx, then reports built(), called under v.mu.
func (v *View) await(ctx context.Context, done chan struct{}, built func() bool) (bool, error) {
	if done == nil {
		return false, nil // closed
	}
	select {
	case <-done:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return built(), nil
}

// kick is kickLocked for callers that do not hold v.mu.
func (v *View) kick() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.kickLocked()
}

// Changed syncs and returns the paths changed since from (sorted) and
// whether .git or an ignore file changed too; ok is false when the view
// cannot tell (from is not Valid, another epoch, not watched).
func (v *View) Changed(ctx context.Context, from Position) (paths []string, meta, ok bool, err error) {
	if !from.Valid {
		return nil, false, false, nil
	}
	v.mu.Lock()
	isWarm := v.warmth == warm
	v.mu.Unlock()
	if !isWarm {
		return nil, false, false, nil
	}
	st, err := v.syncAt(ctx, from.Epoch, from.Gen)
	if err != nil || !st.Ready || !st.Complete {
		return nil, false, false, err
	}
	return st.Changed, st.Meta, true, nil
}

// StatusResult is a status with where it came from.
type StatusResult struct {
	gitx.Status
	Source string
	// Reason says why the status was not computed in process.
	Reason string
}

// Status returns the exact `git status` of the work tree.
func (v *View) Status(ctx context.Context) (StatusResult, error) {
	pos, err := v.advance(ctx)
	if err != nil {
		return StatusResult{}, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	res, err := v.statusLocked(ctx, pos)
	if !pos.Valid {
		v.kickLocked() // after git ran: the build waits for the lock
	}
	return res, err
}

func (v *View) statusLocked(ctx context.Context, pos Position) (StatusResult, error) {
	if !pos.Valid {
		st, err := v.git.Status(ctx, v.root)
		return StatusResult{Status: st, Source: SourceExec, Reason: v.reason}, err
	}
	if v.base != nil && !v.eligible && v.ix != nil && v.cfg != nil {
		// Refused before and nothing meta changed since (that resets
		// the base): only the status itself may differ. One git status,
		// as without the view; a nested repository may have gone.
		st, err := v.git.Status(ctx, v.root)
		if err != nil {
			return StatusResult{}, err
		}
		v.base, v.files = &st, nil
		clear(v.pending)
		if !st.Truncated {
			v.eligible, v.reason = gitindex.Eligible(v.gitDir, v.ix, v.cfg, st.Untracked)
		}
		return StatusResult{Status: copyStatus(st), Source: SourceExec, Reason: v.reason}, nil
	}
	if v.base == nil || !v.eligible {
		if err := v.rebuildLocked(ctx); err != nil {
			return StatusResult{}, err
		}
		return StatusResult{Status: copyStatus(*v.base), Source: SourceExec, Reason: v.reason}, nil
	}
	if len(v.pending) > 0 {
		changed := make([]string, 0, len(v.pending))
		for p := range v.pending {
			changed = append(changed, p)
		}
		slices.Sort(changed)
		c := &gitindex.Checkout{Root: v.root, Index: v.ix, Config: v.tree, Attrs: v.attrs,
			LsOthers: func(paths []string) ([]string, error) { return v.lsOthers(ctx, paths) },
			AskGit:   gitindex.GitUnstaged(ctx, v.git, v.root)}
		st, err := c.Refresh(*v.base, changed)
		if errors.Is(err, gitindex.ErrInexact) {
			// A change the in-process status does not model (a new nested
			// repository, a special file): take a new base from git.
			why := err.Error()
			if err := v.rebuildLocked(ctx); err != nil {
				return StatusResult{}, err
			}
			if v.reason == "" {
				v.reason = why
			}
			return StatusResult{Status: copyStatus(*v.base), Source: SourceExec, Reason: v.reason}, nil
		}
		if err != nil {
			return StatusResult{}, err
		}
		if !slices.Equal(st.Untracked, v.base.Untracked) {
			v.files = nil
		}
		v.base = &st
		clear(v.pending)
	}
	return StatusResult{Status: copyStatus(*v.base), Source: SourceIndex}, nil
}

// built is a base taken from git: the status, and what decides whether
// and how the view refreshes it in process.
type built struct {
	st       gitx.Status
	gitDir   string
	ix       *gitindex.Index
	cfg      map[string][]string
	tree     gitindex.TreeConfig
	attrs    *gitindex.Attributes
	eligible bool
	reason   string
}

// build takes a base: git status, and meanwhile (another process, another
// core) the configuration, the index and the attribute rules of
// info/attributes. It touches no field of v but the immutable ones.
func (v *View) build(ctx context.Context) (*built, error) {
	b := &built{}
	var cfgErr error
	side := make(chan struct{})
	go func() {
		defer close(side)
		cfgErr = v.readMeta(ctx, b)
	}()
	st, err := v.git.Status(ctx, v.root)
	<-side
	if err != nil {
		return nil, err
	}
	b.st = st
	switch {
	case st.Truncated:
		b.reason = "status output past its cap"
	case cfgErr != nil:
		b.reason = cfgErr.Error()
	default:
		b.eligible, b.reason = gitindex.Eligible(b.gitDir, b.ix, b.cfg, st.Untracked)
	}
	if !b.eligible && b.reason == "" {
		b.reason = "not eligible"
	}
	return b, nil
}

// readMeta reads what the in-process status needs besides the status: the
// git dirs, the configuration, the index and the attribute reader. An
// error says why the view cannot answer in process.
func (v *View) readMeta(ctx context.Context, b *built) error {
	gitDir, common, err := gitindex.GitDirs(v.root)
	if err != nil {
		return fmt.Errorf("git dir: %v", err)
	}
	b.gitDir = gitDir
	cfgOut, _, err := v.git.Run(ctx, v.root, 1<<20, "config", "-z", "--list")
	if err != nil {
		return fmt.Errorf("git config: %v", err)
	}
	b.cfg = gitindex.ParseConfigList(cfgOut)
	b.tree, _ = gitindex.ParseTreeConfig(b.cfg) // Eligible refuses what it cannot read
	hashSize := 20
	if f := b.cfg["extensions.objectformat"]; len(f) > 0 && strings.EqualFold(f[len(f)-1], "sha256") {
		hashSize = 32
	}
	ix, err := gitindex.ReadFile(filepath.Join(gitDir, "index"), hashSize)
	if errors.Is(err, os.ErrNotExist) {
		// An empty repository has no index yet.
		ix, err = &gitindex.Index{Version: 2, HashSize: hashSize}, nil
	}
	if err != nil {
		return fmt.Errorf("read the index: %v", err)
	}
	b.ix = ix
	b.attrs, err = gitindex.NewAttributes(v.root, common, ix, b.tree.IgnoreCase, gitindex.GitBlob(context.WithoutCancel(ctx), v.git, v.root))
	if err != nil {
		return fmt.Errorf("info/attributes: %v", err)
	}
	return nil
}

// installLocked makes b the view's base.
func (v *View) installLocked(b *built) {
	clear(v.pending)
	v.files = nil
	st := b.st
	v.base = &st
	v.gitDir, v.ix, v.cfg, v.tree, v.attrs = b.gitDir, b.ix, b.cfg, b.tree, b.attrs
	v.eligible, v.reason = b.eligible, b.reason
}

// rebuildLocked takes a new base from git (see build).
func (v *View) rebuildLocked(ctx context.Context) error {
	clear(v.pending)
	v.files = nil
	b, err := v.build(ctx)
	if err != nil {
		v.base = nil
		return err
	}
	v.installLocked(b)
	return nil
}

// lsOthers lists the untracked, not ignored files at or under paths.
func (v *View) lsOthers(ctx context.Context, paths []string) ([]string, error) {
	args := []string{"ls-files", "-z", "--others", "--exclude-standard", "--"}
	for _, p := range paths {
		args = append(args, ":(literal)"+p)
	}
	out, truncated, err := v.git.Run(ctx, v.root, 64<<20, args...)
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, fmt.Errorf("git ls-files output past 64 MiB")
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files, nil
}

// Files returns the search candidates (`git ls-files --cached --others
// --exclude-standard`, sorted as search sorts them), false when the view
// cannot produce them in process (the caller searches the usual way).
func (v *View) Files(ctx context.Context) ([]string, bool, error) {
	pos, err := v.advance(ctx)
	if err != nil || !pos.Valid {
		if err == nil {
			v.kick()
		}
		return nil, false, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.filesLocked(ctx, pos)
}

func (v *View) filesLocked(ctx context.Context, pos Position) ([]string, bool, error) {
	st, err := v.statusLocked(ctx, pos)
	if err != nil {
		return nil, false, err
	}
	if st.Source != SourceIndex && !v.eligible {
		return nil, false, nil
	}
	if v.files == nil {
		files := make([]string, 0, len(v.ix.Entries)+len(v.base.Untracked))
		for _, e := range v.ix.Entries {
			files = append(files, e.Path)
		}
		for _, u := range v.base.Untracked {
			if !strings.HasSuffix(u, "/") {
				files = append(files, u)
			}
		}
		sub, err := v.submoduleFiles(ctx, v.ix)
		if err != nil {
			return nil, false, err
		}
		files = append(files, sub...)
		slices.SortFunc(files, search.PathCompare)
		v.files = slices.Compact(files)
	}
	return v.files, true, nil
}

// Search searches the live file list through the content cache, or
// returns ok false when the view cannot (the caller searches the usual
// way).
func (v *View) Search(ctx context.Context, s *search.Searcher, req search.Request) (search.Result, bool, error) {
	files, ok, err := v.Files(ctx)
	if err != nil || !ok {
		return search.Result{}, false, err
	}
	if len(files) >= fillMin && !v.filled(s, files) {
		return search.Result{}, false, nil
	}
	// The cache follows the Searcher: a new one (the root's secret list
	// changed) starts it over.
	v.cache.Adopt(v.root, s)
	res, err := s.SearchListed(ctx, v.root, files, req, v.cache)
	return res, true, err
}

// filled reports whether the search index was filled for s; if not, it
// starts the fill in the background (once), so the caller answers by rg
// meanwhile (ReasonIndexing).
func (v *View) filled(s *search.Searcher, files []string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.fillOwner == s && v.fill == warm {
		return true
	}
	if v.closed || (v.fillOwner == s && v.fill == warming) {
		return false
	}
	if v.fillCancel != nil {
		v.fillCancel() // a fill for another Searcher: its cache is gone
	}
	v.fill, v.fillOwner = warming, s
	gen := v.fillGen
	ctx, cancel := context.WithTimeout(context.Background(), warmTimeout)
	prev, done := v.fillDone, make(chan struct{})
	v.fillCancel, v.fillDone = cancel, done
	go func() {
		defer close(done)
		defer cancel()
		if prev != nil {
			<-prev // one fill at a time
		}
		v.cache.Adopt(v.root, s)
		err := v.cache.Fill(ctx, s, v.root, files)
		if err == nil && len(files) >= settleMin {
			// The fill read every file: what it dropped goes back
			// (memory.go), once the index answers and the lock is free.
			defer settle()
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.fillGen != gen || v.fillOwner != s || v.fill != warming {
			return
		}
		if err != nil {
			v.fill = cold // the next search starts over
			return
		}
		v.fill = warm
	}()
	return false
}

// FillSearch starts the search index's background fill for s if it is
// not done, and waits for it (or ctx); like Warm, for benchmarks and
// tests that measure in-process searches. It reports whether the index
// is filled (false too for a checkout the view does not search).
func (v *View) FillSearch(ctx context.Context, s *search.Searcher) (bool, error) {
	files, ok, err := v.Files(ctx)
	if err != nil || !ok {
		return false, err
	}
	if len(files) < fillMin || v.filled(s, files) {
		return true, nil
	}
	v.mu.Lock()
	done := v.fillDone
	v.mu.Unlock()
	return v.await(ctx, done, func() bool { return v.fill == warm && v.fillOwner == s })
}

// Cached returns the result of fn for key, computed at most once per tree
// state: while the watcher proves nothing changed, a later call with the
// same key gets the same result (SourceCache). Errors are not kept. When
// the checkout is not watched, or the in-process status is off for it (a
// feature such as submodules whose changes the watcher may not see), fn
// runs every time (SourceExec).
func (v *View) Cached(ctx context.Context, key string, fn func() (any, error)) (any, string, error) {
	r, hit, pos, err := v.Lookup(ctx, key)
	if err != nil {
		return nil, "", err
	}
	if hit {
		return r, SourceCache, nil
	}
	if r, err = fn(); err != nil {
		return nil, SourceExec, err
	}
	v.Store(pos, key, r)
	return r, SourceExec, nil
}

// Lookup returns the result kept for key when the watcher proves the tree
// unchanged since it was kept (hit). Otherwise pos is where a result
// computed now may be kept (Store); pos is not Valid when nothing may be
// kept (the checkout is not watched, or its status is not in process).
func (v *View) Lookup(ctx context.Context, key string) (r any, hit bool, pos Position, err error) {
	if pos, err = v.advance(ctx); err != nil || !pos.Valid {
		if err == nil {
			v.kick()
		}
		return nil, false, Position{}, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, err := v.statusLocked(ctx, pos); err != nil || !v.eligible {
		return nil, false, Position{}, err
	}
	if v.epoch != pos.Epoch || v.gen != pos.Gen {
		return nil, false, Position{}, nil // moved on meanwhile
	}
	if r, ok := v.results[key]; ok {
		return r, true, pos, nil
	}
	return nil, false, pos, nil
}

// Store keeps r for key if the tree is still at pos.
func (v *View) Store(pos Position, key string, r any) {
	if !pos.Valid {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.epoch == pos.Epoch && v.gen == pos.Gen && v.eligible {
		if len(v.results) >= maxResults {
			clear(v.results)
		}
		v.results[key] = r
	}
}

// maxResults bounds the git call results a view keeps.
const maxResults = 256

// IndexEntry returns the mode (octal, "100644") and object id (hex) of
// path's stage-0 entry in the index the view's status is built on. A
// submodule (gitlink) is not reported: what changed in it is the
// submodule's state, which no index entry describes (a caller hashing
// dirty paths falls back to git for it).
func (v *View) IndexEntry(path string) (mode, oid string, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ix == nil {
		return "", "", false
	}
	e, ok := v.ix.Lookup(path)
	if !ok || e.Mode == gitindex.ModeGitlink {
		return "", "", false
	}
	return strconv.FormatUint(uint64(e.Mode), 8), hex.EncodeToString(e.OID), true
}

// Reason says why the view is not answering in process ("" = it is).
func (v *View) Reason() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.reason
}

// CacheStats reports the content cache's use.
func (v *View) CacheStats() search.CacheStats { return v.cache.Stats() }

// copyStatus returns st with lists of its own (the view keeps st).
func copyStatus(st gitx.Status) gitx.Status {
	st.Staged = slices.Clone(st.Staged)
	st.Unstaged = slices.Clone(st.Unstaged)
	st.Untracked = slices.Clone(st.Untracked)
	st.Conflicted = slices.Clone(st.Conflicted)
	return st
}
