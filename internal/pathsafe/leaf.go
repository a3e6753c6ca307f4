package pathsafe

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/contract/errs"
)

// CheckLeaf decides on the file at rel (slash-separated, relative to the
// root) as an lstat or fstat of it found it, fi (nil: by name only). It is
// the one check of every surface that reads, copies, moves, patches,
// keeps, restores or digests a file's content:
//
//   - a secret by name (the root's denylist, exceptions included) is
//     SECRET_PATH_DENIED;
//   - a regular file with more than one link outside .git/objects is
//     PATH_NOT_ALLOWED "is a hard link": another name of the same file may
//     be a secret or lie outside the root, and no check of this name can
//     see it. Git's own object store hard-links objects (clone --local).
func (r *Root) CheckLeaf(rel string, fi fs.FileInfo) error {
	if pat, ok := r.deny.Match(rel); ok {
		return r.deny.SecretError(fmt.Sprintf("path %q", rel), rel, rel, pat)
	}
	if fi == nil || !fi.Mode().IsRegular() {
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return checkLinks(rel, uint64(st.Nlink))
	}
	return nil
}

// CheckLeafStat is CheckLeaf for a raw stat (readfile's fstat of the
// descriptor it reads).
func (r *Root) CheckLeafStat(rel string, st *syscall.Stat_t) error {
	if pat, ok := r.deny.Match(rel); ok {
		return r.deny.SecretError(fmt.Sprintf("path %q", rel), rel, rel, pat)
	}
	if st == nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil
	}
	return checkLinks(rel, uint64(st.Nlink))
}

// checkLinks refuses a regular file of nlink names outside .git/objects.
func checkLinks(rel string, nlink uint64) error {
	if nlink <= 1 || inGitObjects(rel) {
		return nil
	}
	return errs.New(errs.PathNotAllowed, "path %q is a hard link (the file has %d names): another name may be a secret or lie outside the root, so harnessd does not read, copy, move, patch, revert or digest it through this one", rel, nlink).
		With("path", rel).With("links", nlink)
}

// inGitObjects reports whether rel lies in a .git/objects directory.
func inGitObjects(rel string) bool {
	return strings.HasPrefix(rel, ".git/objects/") || strings.Contains(rel, "/.git/objects/")
}

// CheckLeafAt is CheckLeaf of the file at rel as an lstat finds it now (a
// search match, a listed entry): a missing file is no refusal.
func (r *Root) CheckLeafAt(rel string) error {
	var st syscall.Stat_t
	if err := lstat(joinAbs(r.path, filepath.FromSlash(rel)), &st); err != nil {
		return r.CheckLeafStat(rel, nil)
	}
	return r.CheckLeafStat(rel, &st)
}
