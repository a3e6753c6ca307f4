//go:build !unix

package secrets

import "os"

// openRegular opens the regular file name in tree; errNotRegular for
// anything else.
func openRegular(tree *os.Root, name string) (*os.File, error) {
	fi, err := tree.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	return checkRegular(tree.Open(name))
}
