//go:build unix

package search

import "golang.org/x/sys/unix"

// mapAnon returns n bytes of memory outside the Go heap (an anonymous
// mapping), or nil when the system refuses.
func mapAnon(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
}

func unmapAnon(b []byte) { _ = unix.Munmap(b) }
