//go:build !linux

package gitx

import "os"

// sysStamp is empty where the inode and change time are not read.
type sysStamp struct{}

func sysStampOf(os.FileInfo) sysStamp { return sysStamp{} }

// searchable approximates access(path, X_OK) as "is a directory".
func searchable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
