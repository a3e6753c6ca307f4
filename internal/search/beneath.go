//go:build unix

package search

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
)

// openRoot opens p.root as the directory every file of the search is opened
// beneath (see openBeneath); the returned func closes it.
func (p *plan) openRoot() (func(), error) {
	d, err := os.Open(p.root)
	if err != nil {
		return func() {}, errs.Wrap(errs.Internal, err, "open root %q: %v", p.root, err)
	}
	p.dir, p.dirfd = d, int(d.Fd())
	return func() { d.Close() }, nil
}

// openBeneath opens rel (slash-separated, relative) below the directory
// dirfd for reading without following a symbolic link in any component,
// the last included, and without leaving dirfd's tree: a tracked path
// whose parent directory was swapped for a symlink is not read through it
// (rg does not walk into it either). FIFOs do not block the open.
func openBeneath(dirfd int, rel string) (*os.File, error) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := openat2Beneath(dirfd, rel, flags)
	if err == unix.ENOSYS || err == unix.EPERM || err == unix.E2BIG {
		fd, err = openWalk(dirfd, rel, flags) // no openat2 here (old kernel, seccomp)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// openWalk is openBeneath one component at a time.
func openWalk(dirfd int, rel string, flags int) (int, error) {
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for {
		i := strings.IndexByte(rel, '/')
		if i < 0 {
			break
		}
		comp := rel[:i]
		rel = rel[i+1:]
		if comp == ".." || comp == "." || comp == "" {
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(cur, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = next
	}
	if rel == ".." || rel == "." || rel == "" {
		return -1, unix.EXDEV
	}
	return unix.Openat(cur, rel, flags, 0)
}

// statBeneath is what Lstat says of rel below dirfd: its type bits and size.
// (A symlinked parent is followed here; openBeneath then refuses it.)
func statBeneath(dirfd int, rel string) (mode uint32, size int64, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, 0, err
	}
	return uint32(st.Mode) & unix.S_IFMT, st.Size, nil
}

// readKnown reads rel, which the cache holds as a regular file of size
// bytes, with the fewest system calls: an open beneath dirfd (no stat
// before it, no poller registration), reads into buf until end of file,
// a close. It reports false, having read nothing it returns, when the file
// is not what the cache says (gone, of another size, not a regular file):
// the caller then reads it the careful way (readFile).
func readKnown(dirfd int, rel string, size int64, buf []byte) ([]byte, bool) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := openat2Beneath(dirfd, rel, flags)
	if err == unix.ENOSYS || err == unix.EPERM || err == unix.E2BIG {
		fd, err = openWalk(dirfd, rel, flags)
	}
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	if int64(cap(buf)) < size+1 {
		buf = make([]byte, 0, size+1)
	}
	buf = buf[:size+1]
	n := 0
	for {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false // a FIFO (EAGAIN), a directory (EISDIR), an I/O error
		}
		if m == 0 {
			break
		}
		n += m
		if int64(n) > size {
			return nil, false // it grew
		}
	}
	if int64(n) != size {
		return nil, false
	}
	return buf[:n], true
}
