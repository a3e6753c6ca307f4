//go:build unix

package secrets

import (
	"os"
	"syscall"
)

// openRegular opens the regular file name in tree without blocking on a
// FIFO; errNotRegular for anything else.
func openRegular(tree *os.Root, name string) (*os.File, error) {
	return checkRegular(tree.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0))
}
