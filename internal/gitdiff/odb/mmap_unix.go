//go:build unix

package odb

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps path read-only (a pack index is read in a few places per
// lookup: mapped, only those pages are read and held).
func mapFile(path string) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() == 0 {
		return nil, func() {}, nil
	}
	if fi.Size() != int64(int(fi.Size())) {
		return nil, nil, corrupt("%s: too large to map", path)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = unix.Munmap(b) }, nil
}
