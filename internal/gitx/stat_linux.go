//go:build linux

package gitx

import (
	"os"
	"syscall"
)

// sysStamp is the part of a file stamp only the platform knows: the inode
// and the change time, which a writer cannot set back (unlike the mtime).
type sysStamp struct {
	dev, ino uint64
	ctime    int64
}

func sysStampOf(fi os.FileInfo) sysStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return sysStamp{}
	}
	sec, nsec := st.Ctim.Unix()
	return sysStamp{dev: uint64(st.Dev), ino: uint64(st.Ino), ctime: sec*1e9 + nsec}
}

// searchable reports whether access(path, X_OK) succeeds, as git's
// is_git_directory checks objects/ and refs/.
func searchable(path string) bool {
	return syscall.Access(path, 1) == nil
}
