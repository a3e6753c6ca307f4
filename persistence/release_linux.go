package persistence

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// releaseMapped advises the kernel to page out every mapping of the
// store's files (MADV_PAGEOUT, Linux 5.4+) and returns how many bytes of
// mappings it advised. MADV_PAGEOUT never changes what the memory holds,
// whatever is mapped at the address by the time the advice lands (a table
// unmapped and its range reused meanwhile): it only reclaims, so it is
// safe without a lock on Badger's maps. A kernel without it answers
// EINVAL, returned so the caller stops asking.
func releaseMapped(dir string) (int64, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, m := range storeMappings(maps, dir) {
		_, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT)
		switch {
		case e == 0:
			n += int64(m.end - m.start)
		case errors.Is(e, syscall.ENOMEM): // unmapped meanwhile (a compacted table)
		default:
			return n, e
		}
	}
	return n, nil
}
