//go:build unix

package patch

import (
	"os"
	"syscall"
)

// fileDevice returns the device (st_dev) of the file at path.
func fileDevice(path string) (uint64, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true
}
