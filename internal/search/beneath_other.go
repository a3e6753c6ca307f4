//go:build unix && !linux

package search

import "golang.org/x/sys/unix"

// openat2Beneath: openat2 is Linux's; elsewhere openBeneath walks.
func openat2Beneath(int, string, int) (int, error) { return -1, unix.ENOSYS }
