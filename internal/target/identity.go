package target

import (
	"errors"
	"os"
	"syscall"

	"github.com/harnessd/harnessd/contract/errs"
)

// Identity reads the device and inode of a target root (following a
// symlink: a root swapped for a link to elsewhere has another identity).
func Identity(root string) (dev, ino uint64, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(root, &st); err != nil {
		return 0, 0, &os.PathError{Op: "stat", Path: root, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return 0, 0, &os.PathError{Op: "stat", Path: root, Err: syscall.ENOTDIR}
	}
	return uint64(st.Dev), st.Ino, nil
}

// CheckIdentity answers TARGET_MOVED when the directory at root is not the
// one granted as targetID (dev, ino): moved, deleted, or another directory
// swapped in under the same path. Nothing has run when it fails.
func CheckIdentity(targetID, root string, dev, ino uint64) error {
	gotDev, gotIno, err := Identity(root)
	fix := "nothing was done; if this directory is the one you mean, register it again (target_register) and use the new target_id"
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return errs.New(errs.TargetMoved, "target %s: its root %s no longer exists as a directory (moved or deleted); %s", targetID, root, fix).
			With("target_id", targetID).With("root", root)
	case err != nil:
		return errs.Wrap(errs.Unavailable, err, "target %s: check its root: %v", targetID, err).With("target_id", targetID)
	case gotDev != dev || gotIno != ino:
		return errs.New(errs.TargetMoved, "target %s: another directory is at %s than the one granted (its device and inode differ: swapped or replaced); %s", targetID, root, fix).
			With("target_id", targetID).With("root", root)
	}
	return nil
}
