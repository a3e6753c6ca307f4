package target

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/harnessd/harnessd/internal/patch"
)

// processStart is when this process started: a temp file of a write of
// this process is never older. Set once, read only.
var processStart = time.Now()

// maxSweepEntries bounds the directory entries one sweep visits.
const maxSweepEntries = 1 << 20

// errSweepIncomplete is returned (wrapped) when a root has more entries
// than a sweep visits; the leftovers it found are removed.
var errSweepIncomplete = errors.New("target: temp sweep stopped at its entry limit")

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
// and stops after about a million entries (errSweepIncomplete, wrapped).
// Unreadable directories are skipped. It returns how many files it
// removed and the first errors met.
func SweepTemp(root string) (int, error) { return sweepTemp(root, processStart) }

func sweepTemp(root string, before time.Time) (removed int, err error) {
	var failed []error
	remove := func(p string, d fs.DirEntry) {
		t := d.Type()
		if !(t.IsRegular() || t&fs.ModeSymlink != 0) || !patch.IsTempName(d.Name()) {
			return
		}
		info, err := d.Info()
		if err != nil || !info.ModTime().Before(before) {
			return // gone already, or a write of this process
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			failed = append(failed, err)
			return
		}
		removed++
	}
	if gd := patch.GitDir(root); gd != "" {
		dir := filepath.Join(gd, patch.TempDirName)
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			ents, err := os.ReadDir(dir)
			if err != nil {
				failed = append(failed, err)
			}
			for _, e := range ents {
				remove(filepath.Join(dir, e.Name()), e)
			}
		}
	}
	visited := 0
	werr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if visited++; visited > maxSweepEntries {
			return errSweepIncomplete
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		remove(p, d)
		return nil
	})
	switch {
	case errors.Is(werr, errSweepIncomplete):
		failed = append(failed, fmt.Errorf("sweep temp files of %s: %w after %d entries", root, errSweepIncomplete, maxSweepEntries))
	case werr != nil:
		failed = append(failed, werr)
	}
	return removed, errors.Join(failed...)
}
