package target

import (
	"time"

	"github.com/harnessd/harnessd/internal/patch"
)

// processStart is when this process started: a temp file of a write of
// this process is never older. Set once, read only.
var processStart = time.Now()

// SweepTemp removes the temp files a crash (kill -9, power loss) left in
// the target root: regular files and symbolic links whose base name is
// exactly harnessd's temp pattern (patch.IsTempName,
// ".<name>.harnessd-tmp-<1 to 20 hex digits>"), in the work tree and in
// <gitdir>/harnessd-tmp when the root is a git work tree, last modified
// before this process started. A write in flight (of a target or of a
// repository sharing the directory) made its temp file after the process
// started, so a sweep is safe at any time, at boot or when a target is
// registered. A user's file that only looks similar (".name.tmp",
// "x.harnessd-tmp", ".x.harnessd-tmp-notes") is never touched.
//
// The walk does not follow symbolic links, never enters a .git directory
// and stops after about a million entries (patch.ErrSweepIncomplete,
// wrapped). Unreadable directories are skipped. It returns how many files
// it removed and the errors met (patch.SweepTempBefore).
func SweepTemp(root string) (int, error) { return sweepTemp(root, processStart) }

func sweepTemp(root string, before time.Time) (int, error) {
	return patch.SweepTempBefore(root, before)
}
