//go:build !linux

package persistence

import "errors"

// releaseMapped is Linux's (MADV_PAGEOUT); elsewhere the kernel decides.
func releaseMapped(string) (int64, error) {
	return 0, errors.ErrUnsupported
}
