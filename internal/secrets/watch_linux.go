package secrets

import (
	"bytes"
	"errors"
	"syscall"
	"unsafe"

	"github.com/harnessd/harnessd/internal/pathsafe"
)

// dirWatch is an inotify instance watching the directories of a Set's
// stamps (watch.go). It is used under its entry's mu.
type dirWatch struct {
	fd    int
	byWD  map[int32]*watched
	byDir map[string]int32
	buf   []byte
}

// watched is what one watch descriptor covers.
type watched struct {
	names []string // a change of one of these matters
	// rel is the directory relative to the root when it is inside it:
	// a new entry whose path is a secret path matters too (a secret file
	// created there), and in a secret directory every new entry does.
	rel       string
	inRoot    bool
	secretDir bool
}

const watchMask = syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE | syscall.IN_CREATE |
	syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO | syscall.IN_DELETE_SELF |
	syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR

// newDirWatch returns a watch, or nil when inotify cannot give one (no
// instance left): then every Get revalidates in full.
func newDirWatch() *dirWatch {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &dirWatch{fd: fd, byWD: map[int32]*watched{}, byDir: map[string]int32{}, buf: make([]byte, 8<<10)}
}

// ensure watches the spots' directories (and no others) and reports
// whether each is watched (ok) and whether any watch is new (added): the
// events before it was added are lost, so a revalidation that ran before
// it proves nothing about them. A directory that does not exist is not
// watched: its parent's spot names it.
func (w *dirWatch) ensure(spots []watchSpot, deny *pathsafe.Denylist) (added, ok bool) {
	ok = true
	keep := make(map[string]bool, len(spots))
	seen := make(map[int32]bool, len(spots))
	for _, s := range spots {
		keep[s.dir] = true
		wd, have := w.byDir[s.dir]
		if !have {
			n, err := syscall.InotifyAddWatch(w.fd, s.dir, watchMask)
			if err != nil {
				if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR) {
					ok = false // out of watches, say: no proof from this one
				}
				continue
			}
			wd, added = int32(n), true
			w.byDir[s.dir] = wd
		}
		cur := w.byWD[wd]
		if cur == nil {
			cur = &watched{}
			w.byWD[wd] = cur
		}
		if !seen[wd] { // this call's first spot of the descriptor: start over
			seen[wd] = true
			cur.names = cur.names[:0]
			cur.rel, cur.inRoot, cur.secretDir = s.rel, s.inRoot, false
			if s.inRoot && s.rel != "" {
				_, cur.secretDir = deny.Match(s.rel)
			}
		}
		// Another path of a directory watched already (a symlink): the
		// names add up.
		cur.names = append(cur.names, s.names...)
	}
	for dir, wd := range w.byDir {
		if !keep[dir] {
			delete(w.byDir, dir)
			if !w.sharedWD(wd) {
				_, _ = syscall.InotifyRmWatch(w.fd, uint32(wd))
				delete(w.byWD, wd)
			}
		}
	}
	return added, ok
}

// sharedWD reports whether a directory still watched has descriptor wd.
func (w *dirWatch) sharedWD(wd int32) bool {
	for _, d := range w.byDir {
		if d == wd {
			return true
		}
	}
	return false
}

// poll reads every event queued without blocking: quiet is false when one
// of them may change the Set (a name that matters changed, a watched
// directory went away, the queue overflowed, or it could not be read),
// and fresh is true when a new entry is a secret path (the tree must be
// walked before the Set is served).
func (w *dirWatch) poll(deny *pathsafe.Denylist) (quiet, fresh bool) {
	quiet = true
	for {
		n, err := syscall.Read(w.fd, w.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) {
			return quiet, fresh
		}
		if err != nil || n < syscall.SizeofInotifyEvent {
			return false, fresh
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			end := off + syscall.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				return false, fresh
			}
			name := w.buf[off+syscall.SizeofInotifyEvent : end]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off = end
			if ev.Mask&syscall.IN_Q_OVERFLOW != 0 {
				quiet = false
				continue
			}
			d := w.byWD[ev.Wd]
			if d == nil {
				continue // a watch removed since (its IN_IGNORED)
			}
			if ev.Mask&(syscall.IN_IGNORED|syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_UNMOUNT) != 0 {
				quiet = false
				continue
			}
			for _, m := range d.names {
				if m == string(name) {
					quiet = false
					break
				}
			}
			if d.inRoot && ev.Mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0 {
				if _, secret := deny.Match(pathJoin(d.rel, string(name))); secret || d.secretDir {
					quiet, fresh = false, true
				}
			}
		}
	}
}

// close ends the watch.
func (w *dirWatch) close() { _ = syscall.Close(w.fd) }
