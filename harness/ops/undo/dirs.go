package undo

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"syscall"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/preimage"
)

// dirStates returns, per directory the reverted receipts made, removed or
// chmodded (a job's receipt names them: preimage.Ref.Dir), its state
// before the oldest of them: made again with its mode, or absent.
func dirStates(targets []*op.Receipt) map[string]preimage.Ref {
	out := map[string]preimage.Ref{}
	for i := len(targets) - 1; i >= 0; i-- { // oldest first: the first seen wins
		for _, ref := range targets[i].PreImages {
			if _, seen := out[ref.Path]; ref.Dir && !seen {
				out[ref.Path] = ref
			}
		}
	}
	return out
}

// restoreDirs puts the directories of states back once the files are:
// a directory that was there is made (parents first) with its mode, or
// given its mode back; one a job made is removed, deepest first, when
// the revert left it empty (what else is in it now stays, and so does
// the directory). fence runs before each change.
func restoreDirs(root *pathsafe.Root, states map[string]preimage.Ref, fence func() error) error {
	paths := make([]string, 0, len(states))
	for p := range states {
		paths = append(paths, p)
	}
	sort.Strings(paths) // parents first
	for _, p := range paths {
		ref := states[p]
		if ref.Absent {
			continue
		}
		m, err := patch.ParseMode(ref.Mode)
		if err != nil {
			return err
		}
		abs, _, err := root.ResolveWrite(p)
		if err != nil {
			return err
		}
		if err := fence(); err != nil {
			return errs.Wrap(errs.LeaseLost, err, "fencing check failed before restoring directory %q: %v", p, err)
		}
		fi, err := os.Lstat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(abs, m); err != nil {
				return errs.Wrap(errs.Internal, err, "the files were restored, but directory %q could not be made again: %v", p, err).With("path", p)
			}
			err = os.Chmod(abs, m) // not subject to the umask
			if err != nil {
				return errs.Wrap(errs.Internal, err, "the files were restored, but directory %q could not get its mode back: %v", p, err).With("path", p)
			}
		case err != nil:
			return errs.Wrap(errs.Internal, err, "restore directory %q: %v", p, err).With("path", p)
		case !fi.IsDir():
			return errs.New(errs.PatchConflict, "%q was a directory before the job and is not one now: it was changed since", p).With("path", p)
		case fi.Mode().Perm() != m:
			if err := os.Chmod(abs, m); err != nil {
				return errs.Wrap(errs.Internal, err, "the files were restored, but directory %q could not get its mode back: %v", p, err).With("path", p)
			}
		}
	}
	for i := len(paths) - 1; i >= 0; i-- { // deepest first
		p := paths[i]
		if !states[p].Absent {
			continue
		}
		abs, _, err := root.ResolveWrite(p)
		if err != nil {
			return err
		}
		if err := fence(); err != nil {
			return errs.Wrap(errs.LeaseLost, err, "fencing check failed before removing directory %q: %v", p, err)
		}
		if fi, err := os.Lstat(abs); err != nil || !fi.IsDir() {
			continue
		}
		if err := syscall.Rmdir(abs); err != nil && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			return errs.Wrap(errs.Internal, err, "the files were restored, but directory %q the job made could not be removed: %v", p, err).With("path", p)
		}
	}
	return nil
}
