package search

import "golang.org/x/sys/unix"

// openat2Beneath opens rel with openat2, resolving no symlink and staying
// beneath dirfd.
func openat2Beneath(dirfd int, rel string, flags int) (int, error) {
	return unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}
