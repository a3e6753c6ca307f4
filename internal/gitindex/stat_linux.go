//go:build linux

package gitindex

import (
	"io/fs"
	"syscall"
)

// statMatches reports whether fi's stat data equals what the index
// recorded for e in the fields git compares with core.checkStat=default
// and core.trustctime=true, as git is built by default (without USE_NSEC
// and USE_STDEV): mtime and ctime seconds, inode, owner and the size
// truncated to 32 bits. Comparing more would make Refresh read (and find
// modified) a file git takes as unchanged.
func statMatches(e *Entry, fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return e.MtimeSec == uint32(st.Mtim.Sec) && e.CtimeSec == uint32(st.Ctim.Sec) &&
		e.Ino == uint32(st.Ino) && e.UID == st.Uid && e.GID == st.Gid && e.Size == uint32(st.Size)
}
