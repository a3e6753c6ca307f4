package pathsafe

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
)

// DirBeneath opens dir, a directory at or below root (both absolute and
// canonical: resolved before, with no symbolic link in them), so that
// what is done through the returned handle (renameat, unlinkat, mkdirat,
// openat) happens in that directory and nowhere else: every component
// below root is opened without following a symbolic link or leaving root
// (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
// or, where the kernel has no openat2, one O_NOFOLLOW openat per
// component). A component swapped for a symbolic link since dir was
// resolved makes it fail (PATH_OUTSIDE_ROOT) instead of writing where the
// link points: the check and the use are the same open.
func DirBeneath(root, dir string) (*os.File, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return nil, errs.New(errs.PathOutsideRoot, "directory %q is not below %q", dir, root).With("path", dir)
	}
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, beneathError(dir, err)
	}
	defer unix.Close(rfd)
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(rfd, rel, &how)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && rel != "." {
		// No openat2 (before Linux 5.6, or a seccomp filter that refuses
		// it): walk the components one O_NOFOLLOW open at a time.
		fd, err = walkBeneath(rfd, rel)
	}
	if err != nil {
		return nil, beneathError(dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// walkBeneath opens rel below dirfd component by component, never
// following a symbolic link.
func walkBeneath(dirfd int, rel string) (int, error) {
	cur, err := unix.Openat(dirfd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return cur, nil
	}
	for _, c := range strings.Split(filepath.ToSlash(rel), "/") {
		if c == "" || c == "." || c == ".." {
			unix.Close(cur)
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// beneathError codes the failure of DirBeneath: a component that became a
// symbolic link or leaves the root is PATH_OUTSIDE_ROOT.
func beneathError(dir string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOTDIR):
		return errs.Wrap(errs.PathOutsideRoot, err, "directory %q changed since it was resolved (a symbolic link or a move took it out of the root): nothing was written there", dir).With("path", dir)
	case errors.Is(err, unix.ENOENT):
		return errs.Wrap(errs.NotFound, err, "directory %q no longer exists", dir).With("path", dir)
	}
	return errs.Wrap(errs.Internal, err, "open directory %q: %v", dir, err).With("path", dir)
}
