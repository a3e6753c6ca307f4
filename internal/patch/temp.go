package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
)

// TempDirName is the directory, inside a checkout's git dir, that holds the
// temp files of a patch: <gitdir>/harnessd-tmp.
const TempDirName = "harnessd-tmp"

// maxTempSuffix bounds the random part of a temp name: os.CreateTemp
// appends a decimal uint32 (at most 10 digits), randSuffix 16 hex digits.
const maxTempSuffix = 20

// maxGitFile bounds the .git file of a linked worktree or submodule.
const maxGitFile = 4096

// maxSweepEntries bounds the directory entries SweepTemp visits in the work
// tree; a variable so tests can lower it.
var maxSweepEntries = 1 << 20

// ErrSweepIncomplete is returned (wrapped) by SweepTemp when the work tree
// has more entries than it visits; the leftovers it found are removed.
var ErrSweepIncomplete = errors.New("patch: temp sweep stopped at its entry limit")

// Fault seams; tests replace them to inject errors such as ENOSPC.
var (
	// writeData writes a temp file's content.
	writeData = func(fh *os.File, b []byte) (int, error) { return fh.Write(b) }
	// renameFile renames a temp file over its target: through dir (the
	// target's directory opened beneath the root, DirBeneath) when it is
	// not nil, so the rename lands where the path was resolved or nowhere.
	renameFile = func(oldpath string, dir *os.File, newpath string) error {
		if dir == nil {
			return os.Rename(oldpath, newpath)
		}
		if err := unix.Renameat(unix.AT_FDCWD, oldpath, int(dir.Fd()), filepath.Base(newpath)); err != nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
		}
		return nil
	}
	// deviceOf returns the device (st_dev) of the file at path.
	deviceOf = fileDevice
)

// IsTempName reports whether base (a file name without directory) is a temp
// file name of this package, ".<name>.harnessd-tmp-<random>" where <random>
// is 1 to 20 lowercase hex digits. A crash can leave such files behind;
// SweepTemp removes them and listings (search, git status) hide them.
func IsTempName(base string) bool {
	i := strings.LastIndex(base, tempMarker)
	if len(base) == 0 || base[0] != '.' || i <= 0 {
		return false
	}
	suf := base[i+len(tempMarker):]
	if len(suf) == 0 || len(suf) > maxTempSuffix {
		return false
	}
	for j := 0; j < len(suf); j++ {
		if c := suf[j]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// GitDir returns the git dir of the checkout whose work tree root is root:
// root/.git when it is a directory, or the directory a .git file names with
// "gitdir: <path>" (a linked worktree or a submodule; a relative path is
// relative to root). It returns "" when there is none, or when the
// directory has no HEAD entry, so is not a git dir.
func GitDir(root string) string {
	dot := filepath.Join(root, ".git")
	fi, err := os.Stat(dot)
	if err != nil {
		return ""
	}
	dir := dot
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() || fi.Size() > maxGitFile {
			return ""
		}
		b, err := os.ReadFile(dot)
		if err != nil {
			return ""
		}
		line, _, _ := strings.Cut(string(b), "\n")
		target, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
		if !ok || target == "" || strings.IndexByte(target, 0) >= 0 {
			return ""
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(root, target)
		}
		if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
			return ""
		}
		dir = filepath.Clean(target)
	}
	if _, err := os.Lstat(filepath.Join(dir, "HEAD")); err != nil {
		return ""
	}
	return dir
}

// temps chooses where the temp files of one patch go: <gitdir>/harnessd-tmp
// when the checkout has a git dir and it is on the same file system as the
// target (so the rename stays atomic), else beside the target.
type temps struct {
	root  string // checkout root, "" when not known
	dir   string // <gitdir>/harnessd-tmp; "" when unusable
	dev   uint64 // device of dir
	same  map[string]bool
	tried bool
}

func newTemps(root string) *temps { return &temps{root: root, same: make(map[string]bool)} }

// dirFor returns the directory for the temp file of a target in targetDir.
func (t *temps) dirFor(targetDir string) string {
	if !t.tried {
		t.tried = true
		t.dir, t.dev = openTempDir(t.root)
	}
	if t.dir == "" {
		return targetDir
	}
	same, ok := t.same[targetDir]
	if !ok {
		d, okDev := deviceOf(targetDir)
		same = okDev && d == t.dev
		t.same[targetDir] = same
	}
	if !same {
		return targetDir
	}
	return t.dir
}

// openTempDir creates (if needed) and checks <gitdir>/harnessd-tmp of root.
// It refuses a symbolic link or anything but a directory there.
func openTempDir(root string) (string, uint64) {
	if root == "" {
		return "", 0
	}
	gd := GitDir(root)
	if gd == "" {
		return "", 0
	}
	dir := filepath.Join(gd, TempDirName)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", 0
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return "", 0
	}
	dev, ok := deviceOf(dir)
	if !ok {
		return "", 0
	}
	return dir, dev
}

// rootOf returns the checkout root for a resolved path: abs with rel (slash
// separated, relative to the root) removed from its end, or "" when abs does
// not end in rel.
func rootOf(abs, rel string) string {
	r := filepath.FromSlash(rel)
	if rel == "" || rel == "." || !strings.HasSuffix(abs, string(filepath.Separator)+r) {
		return ""
	}
	root := abs[:len(abs)-len(r)-1]
	if root == "" {
		return string(filepath.Separator)
	}
	return root
}

// isNoSpace reports whether err means the file system is full (ENOSPC) or
// the user's quota is spent (EDQUOT).
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// ioError codes an I/O failure of the commit phase: STORAGE_FULL for ENOSPC
// and EDQUOT, naming the file system of root, INTERNAL otherwise.
func ioError(err error, root, rel, format string, args ...any) error {
	if isNoSpace(err) {
		where := root
		if where == "" {
			where = "the repository"
		}
		return errs.Wrap(errs.StorageFull, err, "no space left on the file system of %s: free space and retry", where).
			With("path", rel)
	}
	return errs.Wrap(errs.Internal, err, format, args...)
}

// SweepTemp removes the temp files a crash (kill -9, power loss) or an
// interrupted write left behind in the checkout whose work tree root is root:
// every entry of <gitdir>/harnessd-tmp whose name IsTempName, and every
// file or symbolic link in the work tree whose base name IsTempName. It
// returns how many it removed. A root that is a symbolic link is resolved
// first.
//
// The walk of the work tree does not follow symbolic links, never enters a
// .git directory (at any depth) and stops after about a million entries,
// returning ErrSweepIncomplete (wrapped) with what it removed so far.
// Unreadable directories are skipped. A missing root is NOT_FOUND, a root
// that is not a directory INVALID_ARGUMENT; other errors (a temp file that
// cannot be removed) are INTERNAL, reported after the sweep finished.
//
// Call it when no patch is being applied to root or to a checkout nested
// inside it (at daemon start or when the repository is registered): it
// would remove the temp file of a patch in flight, which then fails and
// rolls back.
func SweepTemp(root string) (removed int, err error) { return SweepTempBefore(root, time.Time{}) }

// SweepTempBefore is SweepTemp for files last modified before before only
// (zero = any): a write in flight made its temp file after the time its
// process started, so with that time a sweep is safe while writes run
// (the targets sweep so, internal/target).
func SweepTempBefore(root string, before time.Time) (removed int, err error) {
	if root == "" {
		return 0, errs.New(errs.InvalidArgument, "patch: sweep of an empty root")
	}
	real, err := filepath.EvalSymlinks(root)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, errs.Wrap(errs.NotFound, err, "sweep temp files: %s does not exist", root)
	}
	if err != nil {
		return 0, errs.Wrap(errs.Internal, err, "sweep temp files of %s: %v", root, err)
	}
	root = real
	fi, err := os.Stat(root)
	if err != nil {
		return 0, errs.Wrap(errs.Internal, err, "sweep temp files of %s: %v", root, err)
	}
	if !fi.IsDir() {
		return 0, errs.New(errs.InvalidArgument, "sweep temp files: %s is not a directory", root)
	}
	var failed []error
	remove := func(p string) {
		if !before.IsZero() {
			info, err := os.Lstat(p)
			if err != nil || !info.ModTime().Before(before) {
				return // gone already, or a write of this process
			}
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			failed = append(failed, err)
			return
		}
		removed++
	}
	if gd := GitDir(root); gd != "" {
		dir := filepath.Join(gd, TempDirName)
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			ents, err := os.ReadDir(dir)
			if err != nil {
				failed = append(failed, err)
			}
			for _, e := range ents {
				if IsTempName(e.Name()) && !e.IsDir() {
					remove(filepath.Join(dir, e.Name()))
				}
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
			return ErrSweepIncomplete
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if t := d.Type(); (t.IsRegular() || t&fs.ModeSymlink != 0) && IsTempName(d.Name()) {
			remove(p)
		}
		return nil
	})
	switch {
	case errors.Is(werr, ErrSweepIncomplete):
		return removed, fmt.Errorf("sweep temp files of %s: %w after %d entries", root, ErrSweepIncomplete, maxSweepEntries)
	case werr != nil:
		failed = append(failed, werr)
	}
	if len(failed) > 0 {
		err := errors.Join(failed...)
		return removed, errs.Wrap(errs.Internal, err, "sweep temp files of %s: %d error(s): %v", root, len(failed), failed[0])
	}
	return removed, nil
}
