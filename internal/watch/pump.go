package watch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/fsnotify/fsnotify"

	"github.com/harnessd/harnessd/internal/gitindex"
)

// CookiePrefix starts the base name of every sync cookie, a file raised
// in the pump's cookie dir.
const CookiePrefix = "harnessd-cookie-"

// ReasonStarting is a watcher's answer (not ready) to a sync from a view
// that holds a position while the watches are being built: the view must
// rebuild anyway, so it answers from git at once and warms up in the
// background with a sync from no position, which waits for the watches.
const ReasonStarting = "the watcher is starting"

// CookieDir returns the cookie dir of the work tree root under base (one
// dir per work tree, outside it: harnessd writes nothing into a checkout
// to sync with its watcher).
//
// A cookie needs no place in the tree it proves: inotify queues the events
// of all the watches of one instance in one list, in the order they
// happen, so a cookie's event in a watched dir elsewhere still comes after
// every change made to the tree before it was raised.
func CookieDir(base, root string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return filepath.Join(base, hex.EncodeToString(sum[:12]))
}

// Options configure a pump.
type Options struct {
	// Ignored reports the directories (slash-separated, relative) not to
	// watch because git ignores everything in them; nil = watch all.
	Ignored map[string]bool
	// CookieDir (required, absolute) is where sync cookies are raised: the
	// pump makes it (0700) and watches it. Keep it where the processes
	// harnessd confines cannot write (the data dir), so none can raise a
	// cookie before harnessd does.
	CookieDir string
	// Buffer is the pump's event channel size (0 = 4096).
	Buffer uint
}

// Pump reads a work tree's inotify events (through fsnotify) and hands
// them out in batches. It watches every directory of the work tree but its
// git dirs and the ignored ones, adding watches as directories appear;
// the git dirs status depends on: the work tree's own (the index, HEAD,
// per-worktree refs: root/.git, or what a .git file names for a linked
// worktree or a submodule checkout) and its common dir (config,
// packed-refs, refs, info: a linked worktree shares them with its main
// checkout); and the git dir of every populated submodule, nested ones
// too, whose changes are reported as changes of the submodule's path. And
// its cookie dir. A watch it cannot add, or a queue overflow, is reported
// as a Batch with Overflow set.
type Pump struct {
	root      string
	gitDir    string // absolute: the work tree's own git dir
	cookieDir string // absolute
	w         *fsnotify.Watcher
	emit      func(Batch)
	opts      Options

	mu    sync.Mutex
	dirs  map[string]bool // watched directories, absolute
	areas []gitArea       // the git dirs watched, the longest first

	done chan struct{}
	wg   sync.WaitGroup
}

// areaKind says how the events of a watched git dir count.
type areaKind uint8

const (
	areaOwn    areaKind = iota // the work tree's own git dir: what changes there is meta
	areaCommon                 // a linked worktree's common dir: only what it shares (config, packed-refs, refs, info) is meta
	areaSub                    // a submodule's git dir: a change of the submodule's path
)

// gitArea is a git dir the pump watches.
type gitArea struct {
	dir  string // absolute
	kind areaKind
	sub  string // areaSub: the submodule's work-tree path, relative to root
}

// Bounds of the submodules a pump follows (gitx's bound on repositories
// is 64 too): past them the checkout is not watched.
const (
	maxSubmodules     = 64
	maxSubmoduleDepth = 8
)

// ErrUnsupported is wrapped by Start's errors when the checkout cannot be
// watched at all (no git dir found, too many submodules).
var ErrUnsupported = errors.New("checkout cannot be watched")

// Start watches root (a work tree: root/.git is its git dir, or a file
// naming it) and calls emit (safe for concurrent use; the event goroutine
// and Overflow call it) with each batch of events until Close. The initial
// walk happens before Start returns.
func Start(root string, opts Options, emit func(Batch)) (*Pump, error) {
	gitDir, common, err := gitindex.GitDirs(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if !filepath.IsAbs(opts.CookieDir) {
		return nil, fmt.Errorf("%w: no cookie dir (an absolute path) to sync with", ErrUnsupported)
	}
	cookieDir := filepath.Clean(opts.CookieDir)
	if err := os.MkdirAll(cookieDir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: cookie dir: %v", ErrUnsupported, err)
	}
	if opts.Buffer == 0 {
		opts.Buffer = 4096
	}
	w, err := fsnotify.NewBufferedWatcher(opts.Buffer)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	p := &Pump{root: root, gitDir: gitDir, cookieDir: cookieDir, w: w, emit: emit, opts: opts, dirs: map[string]bool{}, done: make(chan struct{})}
	if err := p.w.Add(cookieDir); err != nil {
		w.Close()
		return nil, fmt.Errorf("%w: watch the cookie dir: %v", ErrUnsupported, err)
	}
	if err := p.watchGitDir(gitArea{dir: gitDir, kind: areaOwn}); err != nil {
		w.Close()
		return nil, err
	}
	if common != gitDir {
		if err := p.watchGitDir(gitArea{dir: common, kind: areaCommon}); err != nil {
			w.Close()
			return nil, err
		}
	}
	if err := p.watchSubmodules(); err != nil {
		w.Close()
		return nil, err
	}
	if _, err := p.addTree(root); err != nil {
		w.Close()
		return nil, err
	}
	p.wg.Add(1)
	go p.loop()
	return p, nil
}

// watchGitDir watches git dir a: the dir itself, its info and its refs.
func (p *Pump) watchGitDir(a gitArea) error {
	p.mu.Lock()
	p.areas = append(p.areas, a)
	// The longest first: a linked worktree's own dir lies in its common
	// dir, a submodule's in its superproject's.
	slices.SortStableFunc(p.areas, func(x, y gitArea) int { return len(y.dir) - len(x.dir) })
	p.mu.Unlock()
	for _, d := range []string{a.dir, filepath.Join(a.dir, "info")} {
		if err := p.add(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	_, err := p.addTree(filepath.Join(a.dir, "refs"))
	return err
}

// watchSubmodules watches the git dir of every populated submodule (the
// gitlinks of the index, then of each submodule's index, down to
// maxSubmoduleDepth) not watched yet. Past maxSubmodules it fails.
func (p *Pump) watchSubmodules() error {
	type sub struct {
		gitDir, rel string
		depth       int
	}
	queue := []sub{{gitDir: p.gitDir}}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		ix, err := gitindex.ReadFile(filepath.Join(s.gitDir, "index"), 0)
		if err != nil {
			continue // no index (yet), or one being replaced: its change comes as an event
		}
		for _, e := range ix.Entries {
			if e.Mode != gitindex.ModeGitlink || e.Stage != 0 {
				continue
			}
			rel := e.Path
			if s.rel != "" {
				rel = s.rel + "/" + e.Path
			}
			dir, _, err := gitindex.GitDirs(filepath.Join(p.root, filepath.FromSlash(rel)))
			if err != nil {
				continue // not populated
			}
			p.mu.Lock()
			known, n := false, 0
			for _, a := range p.areas {
				known = known || a.dir == dir
				if a.kind == areaSub {
					n++
				}
			}
			p.mu.Unlock()
			if !known {
				if n >= maxSubmodules || s.depth >= maxSubmoduleDepth {
					return fmt.Errorf("%w: more than %d submodules, or nested deeper than %d", ErrUnsupported, maxSubmodules, maxSubmoduleDepth)
				}
				if err := p.watchGitDir(gitArea{dir: dir, kind: areaSub, sub: rel}); err != nil {
					return err
				}
			}
			queue = append(queue, sub{gitDir: dir, rel: rel, depth: s.depth + 1})
		}
	}
	return nil
}

// areaOf returns the watched git dir that holds the absolute path name.
func (p *Pump) areaOf(name string) (gitArea, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.areas {
		if name == a.dir || strings.HasPrefix(name, a.dir+string(filepath.Separator)) {
			return a, true
		}
	}
	return gitArea{}, false
}

// Close stops the pump and releases its watches. It waits for the event
// goroutine, so emit is never called after Close returns.
func (p *Pump) Close() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	close(p.done)
	err := p.w.Close()
	p.wg.Wait()
	return err
}

// Watches returns how many directories are watched.
func (p *Pump) Watches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.dirs)
}

func (p *Pump) add(dir string) error {
	if err := p.w.Add(dir); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("%w: inotify watch limit reached (raise fs.inotify.max_user_watches)", ErrUnsupported)
		}
		return err
	}
	p.mu.Lock()
	p.dirs[dir] = true
	p.mu.Unlock()
	return nil
}

// addTree watches dir and every directory under it that is not the git dir
// or ignored, and returns the work-tree paths found (files and
// directories), which may have been created before their watch existed.
func (p *Pump) addTree(dir string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil // gone, or unreadable: git cannot see in either
			}
			return err
		}
		if path != dir {
			if rel, ok := p.rel(path); ok {
				found = append(found, rel)
			}
		}
		if !d.IsDir() {
			return nil
		}
		if a, ok := p.areaOf(path); (ok && path == a.dir) || d.Name() == ".git" {
			// A git dir in the tree: a submodule's is watched as one; an
			// untracked nested repository's changes nothing status says
			// beyond its directory's existence.
			return fs.SkipDir
		}
		if rel, ok := p.rel(path); ok && p.opts.Ignored[rel] {
			return fs.SkipDir
		}
		if err := p.add(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		return nil
	})
	return found, err
}

// rel returns the work-tree path of an absolute path, false for the root
// itself and for paths under the git dir.
func (p *Pump) rel(path string) (string, bool) {
	r, err := filepath.Rel(p.root, path)
	if err != nil || r == "." || strings.HasPrefix(r, "..") {
		return "", false
	}
	r = filepath.ToSlash(r)
	if r == ".git" || strings.HasPrefix(r, ".git/") {
		return "", false
	}
	return r, true
}

func (p *Pump) loop() {
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case ev, ok := <-p.w.Events:
			if !ok {
				return
			}
			var b Batch
			p.event(&b, ev)
			// Take whatever else is queued already: one batch, one
			// generation.
		drain:
			for n := 0; n < 4096; n++ {
				select {
				case ev, ok := <-p.w.Events:
					if !ok {
						break drain
					}
					p.event(&b, ev)
				default:
					break drain
				}
			}
			if len(b.Paths) > 0 || b.Meta || len(b.Cookies) > 0 || b.Overflow {
				p.emit(b)
			}
		case err, ok := <-p.w.Errors:
			if !ok {
				return
			}
			reason := "event queue overflow"
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				reason = "watch error: " + err.Error()
			}
			p.emit(Batch{Overflow: true, Reason: reason})
		}
	}
}

// event adds one fsnotify event to b.
func (p *Pump) event(b *Batch, ev fsnotify.Event) {
	name := ev.Name
	if filepath.Dir(name) == p.cookieDir {
		// A cookie is raised by creating its file or, reused, by touching
		// it (an attribute change); its removal is no cookie.
		if base := filepath.Base(name); strings.HasPrefix(base, CookiePrefix) &&
			(ev.Has(fsnotify.Create) || ev.Has(fsnotify.Chmod) || ev.Has(fsnotify.Write)) {
			b.Cookies = append(b.Cookies, base)
		}
		return
	}
	if a, ok := p.areaOf(name); ok {
		p.gitEvent(b, ev, a)
		return
	}
	if name == filepath.Join(p.root, ".git") {
		b.Meta = true // a .git file naming another git dir
		return
	}
	rel, ok := p.rel(name)
	if !ok {
		return
	}
	b.Paths = append(b.Paths, rel)
	switch filepath.Base(name) {
	case ".gitignore":
		b.Meta = true
	case ".git":
		// A submodule checked out (or gone): follow its git dir.
		p.rescan(b)
	}
	p.mu.Lock()
	watched := p.dirs[name]
	p.mu.Unlock()
	if watched && (ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove)) {
		p.forget(name)
	}
	if ev.Has(fsnotify.Create) {
		fi, err := os.Lstat(name)
		if err == nil && fi.IsDir() && !p.opts.Ignored[rel] {
			found, err := p.addTree(name)
			if err != nil {
				b.Overflow, b.Reason = true, err.Error()
				return
			}
			b.Paths = append(b.Paths, found...)
		}
	}
}

// forget drops the watches of dir and of every directory under it (a
// renamed directory keeps its inotify watch under the old name otherwise).
func (p *Pump) forget(dir string) {
	p.mu.Lock()
	var gone []string
	prefix := dir + string(filepath.Separator)
	for d := range p.dirs {
		if d == dir || strings.HasPrefix(d, prefix) {
			gone = append(gone, d)
			delete(p.dirs, d)
		}
	}
	p.mu.Unlock()
	for _, d := range gone {
		_ = p.w.Remove(d) // already gone with the directory: fine
	}
}

// gitEvent handles an event under watched git dir a.
func (p *Pump) gitEvent(b *Batch, ev fsnotify.Event, a gitArea) {
	rel, _ := filepath.Rel(a.dir, ev.Name)
	rel = filepath.ToSlash(rel)
	base := filepath.Base(rel)
	switch {
	case strings.HasSuffix(base, ".lock"), rel == "objects", strings.HasPrefix(rel, "objects/"),
		rel == "logs", strings.HasPrefix(rel, "logs/"), base == "COMMIT_EDITMSG", base == "FETCH_HEAD", base == "gc.pid":
		return
	}
	shared := rel == "refs" || strings.HasPrefix(rel, "refs/") || rel == "info" || strings.HasPrefix(rel, "info/")
	switch a.kind {
	case areaOwn:
		b.Meta = true
		if rel == "index" {
			p.rescan(b) // a submodule added or removed
		}
	case areaCommon:
		// The main checkout's index, HEAD and the like are not this work
		// tree's.
		if !shared && rel != "config" && rel != "packed-refs" && rel != "shallow" {
			return
		}
		b.Meta = true
	case areaSub:
		b.Paths = append(b.Paths, a.sub)
		if rel == "index" {
			p.rescan(b) // a nested submodule added or removed
		}
	}
	if ev.Has(fsnotify.Create) && shared {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			if _, err := p.addTree(ev.Name); err != nil {
				b.Overflow, b.Reason = true, err.Error()
			}
		}
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		p.mu.Lock()
		watched := p.dirs[ev.Name]
		p.mu.Unlock()
		if watched {
			p.forget(ev.Name)
		}
	}
}

// rescan follows the submodules after an index or a .git file changed; one
// it cannot follow (past the bounds) makes the checkout unwatchable.
func (p *Pump) rescan(b *Batch) {
	if err := p.watchSubmodules(); err != nil {
		b.Failed = err.Error()
	}
}

// Overflow makes the pump report an overflow, as if the kernel queue had
// overflowed (tests use it to prove a view survives one).
func (p *Pump) Overflow() {
	select {
	case <-p.done:
	default:
		p.emit(Batch{Overflow: true, Reason: "forced overflow"})
	}
}
