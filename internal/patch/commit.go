package patch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// Test hooks; nil in production.
var (
	// testHookBeforeVerify runs after a rollback restored the files and
	// before it verifies them.
	testHookBeforeVerify func()
)

// tempMarker is part of every temp file name, so stray ones can be found.
const tempMarker = ".harnessd-tmp-"

// maxTempBase bounds the part of a target's name copied into its temp name,
// keeping the temp name within NAME_MAX.
const maxTempBase = 100

// createdDir is a directory the patch created.
type createdDir struct{ abs, rel string }

// committer carries the state of the commit phase that a rollback needs.
type committer struct {
	sync bool
	root string // checkout root, for messages; "" if not known
	// canon is the root as the resolver canonicalised it ("" when it does
	// not say): the directories written in are opened beneath it
	// (pathsafe.DirBeneath), so no symbolic link swapped in since the
	// paths were resolved can carry a write out of it.
	canon   string
	tmp     *temps
	touched []*file      // files whose target may have changed, in order
	created []createdDir // directories created, parents first
	temp    string       // temp file not yet renamed, "" if none
	dirs    map[string]struct{}
}

// commit writes the plan to disk, rolling back on any failure.
func (p *plan) commit(ctx context.Context, o Options) error {
	c := &committer{sync: !o.NoSync, root: p.root, canon: p.canon, tmp: newTemps(p.root), dirs: make(map[string]struct{})}
	for _, f := range p.files {
		if f.unchanged() {
			continue
		}
		if err := c.step(ctx, o, f); err != nil {
			return c.rollback(err)
		}
	}
	if err := c.syncDirs(); err != nil {
		return c.rollback(err)
	}
	return nil
}

// step makes the planned state of f the state on disk.
func (c *committer) step(ctx context.Context, o Options, f *file) error {
	if err := ctx.Err(); err != nil {
		return ctxError(err, fmt.Sprintf("patch cancelled before writing %q", f.rel))
	}
	dir := filepath.Dir(f.abs)
	if f.exists {
		if err := c.mkdirs(dir, f); err != nil {
			return err
		}
		var tmp string
		var err error
		if f.newLink {
			tmp, err = tempSymlink(c.tmp.dirFor(dir), filepath.Base(f.abs), string(f.data))
		} else {
			tmp, err = writeTemp(c.tmp.dirFor(dir), filepath.Base(f.abs), f.data, f.mode, c.sync)
		}
		if err != nil {
			return ioError(err, c.root, f.rel, "write %q: %v", f.rel, err)
		}
		c.temp = tmp
	}
	if o.Fence != nil {
		if err := o.Fence(); err != nil {
			return coded(err, errs.LeaseLost, "fencing check failed before writing %q: %v", f.rel, err)
		}
	}
	c.touched = append(c.touched, f)
	c.dirs[dir] = struct{}{}
	if f.exists {
		if err := c.rename(c.temp, f.abs); err != nil {
			if isNoSpace(err) {
				// The rename did not happen: the target is untouched
				// and needs no restore (which would need space too).
				c.touched = c.touched[:len(c.touched)-1]
			}
			return ioError(err, c.root, f.rel, "replace %q: %v", f.rel, err)
		}
		c.temp = ""
		return nil
	}
	if err := c.remove(f.abs); err != nil && !isNotExist(err) {
		return coded(err, errs.Internal, "delete %q: %v", f.rel, err)
	}
	return nil
}

// parent opens the directory of abs beneath the canonical root, or
// returns nil when the root is not known.
func (c *committer) parent(abs string) (*os.File, error) {
	if c.canon == "" {
		return nil, nil
	}
	return pathsafe.DirBeneath(c.canon, filepath.Dir(abs))
}

// rename renames tmp over abs through abs's directory opened beneath the
// root.
func (c *committer) rename(tmp, abs string) error {
	d, err := c.parent(abs)
	if err != nil {
		return err
	}
	if d != nil {
		defer d.Close()
	}
	return renameFile(tmp, d, abs)
}

// remove removes abs (not a directory) through its directory opened
// beneath the root.
func (c *committer) remove(abs string) error {
	d, err := c.parent(abs)
	if err != nil {
		return err
	}
	if d == nil {
		return os.Remove(abs)
	}
	defer d.Close()
	if err := unix.Unlinkat(int(d.Fd()), filepath.Base(abs), 0); err != nil {
		return &os.PathError{Op: "remove", Path: abs, Err: err}
	}
	return nil
}

// mkdir creates the directory abs through its parent opened beneath the
// root.
func (c *committer) mkdir(abs string) error {
	d, err := c.parent(abs)
	if err != nil {
		return err
	}
	if d == nil {
		return os.Mkdir(abs, 0o755)
	}
	defer d.Close()
	if err := unix.Mkdirat(int(d.Fd()), filepath.Base(abs), 0o755); err != nil {
		return &os.PathError{Op: "mkdir", Path: abs, Err: err}
	}
	return nil
}

// mkdirs creates dir and its missing parents, recording each one.
func (c *committer) mkdirs(dir string, f *file) error {
	rel := f.rel
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !isNotExist(err) {
			return ioError(err, c.root, rel, "create parent directories of %q: %v", rel, err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := c.mkdir(d); err != nil {
			if errs.CodeOf(err) == errs.PathOutsideRoot {
				return err
			}
			return ioError(err, c.root, rel, "create parent directories of %q: %v", rel, err)
		}
		c.created = append(c.created, createdDir{abs: d, rel: relDir(f, d)})
		c.dirs[filepath.Dir(d)] = struct{}{}
	}
	return nil
}

// syncDirs fsyncs every directory whose entries changed.
func (c *committer) syncDirs() error {
	if !c.sync {
		return nil
	}
	for _, d := range sortedKeys(c.dirs) {
		if err := syncDir(d); err != nil {
			return ioError(err, c.root, "", "fsync directory: %v", err)
		}
	}
	return nil
}

// rollback restores every touched file, removes created directories and
// verifies the result. It returns cause, or PATCH_ROLLBACK_INCOMPLETE.
func (c *committer) rollback(cause error) error {
	if c.temp != "" {
		_ = os.Remove(c.temp)
		c.temp = ""
	}
	failed := make(map[string]string)
	for i := len(c.touched) - 1; i >= 0; i-- {
		f := c.touched[i]
		if err := c.restore(f, c.tmp.dirFor(filepath.Dir(f.abs)), c.sync); err != nil {
			failed[f.rel] = err.Error()
		}
	}
	for i := len(c.created) - 1; i >= 0; i-- {
		if err := os.Remove(c.created[i].abs); err != nil && !isNotExist(err) {
			failed[c.created[i].rel] = err.Error()
		}
	}
	if c.sync {
		for _, d := range sortedKeys(c.dirs) {
			_ = syncDir(d) // best effort; a missing created dir is expected
		}
	}
	if testHookBeforeVerify != nil {
		testHookBeforeVerify()
	}
	for _, f := range c.touched {
		if _, ok := failed[f.rel]; ok {
			continue
		}
		if err := verify(f); err != nil {
			failed[f.rel] = err.Error()
		}
	}
	for _, d := range c.created {
		if _, err := os.Lstat(d.abs); !isNotExist(err) {
			failed[d.rel] = "created directory still exists"
		}
	}
	if len(failed) == 0 {
		return cause
	}
	paths := sortedKeys(failed)
	return errs.Wrap(errs.PatchRollbackIncomplete, cause,
		"patch failed (%v) and %d path(s) could not be restored: %v", cause, len(paths), paths).
		With("paths", paths).With("reasons", failed).With("cause", errs.From(cause))
}

// relDir names dir, an ancestor of f, relative to the repository root.
func relDir(f *file, dir string) string {
	rest, err := filepath.Rel(dir, f.abs)
	if err != nil {
		return filepath.ToSlash(dir)
	}
	return strings.TrimSuffix(strings.TrimSuffix(f.rel, filepath.ToSlash(rest)), "/")
}

// restore puts f's original state back on disk, through a temp file in
// tmpDir.
func (c *committer) restore(f *file, tmpDir string, sync bool) error {
	base := filepath.Base(f.abs)
	switch {
	case !f.existed:
		fi, err := os.Lstat(f.abs)
		if isNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return errors.New("a directory now exists where the patch created a file")
		}
		if err := c.remove(f.abs); err != nil && !isNotExist(err) {
			return err
		}
		return nil
	case f.isLink:
		tmp, err := tempSymlink(tmpDir, base, f.linkTarget)
		if err != nil {
			return err
		}
		if err := c.rename(tmp, f.abs); err != nil {
			_ = os.Remove(tmp)
			return err
		}
		return nil
	default:
		tmp, err := writeTemp(tmpDir, base, f.origData, f.origMode, sync)
		if err != nil {
			return err
		}
		if err := c.rename(tmp, f.abs); err != nil {
			_ = os.Remove(tmp)
			return err
		}
		return nil
	}
}

// verify checks that f's original state is on disk.
func verify(f *file) error {
	fi, err := os.Lstat(f.abs)
	if !f.existed {
		if isNotExist(err) {
			return nil
		}
		return errors.New("a file the patch created still exists")
	}
	if err != nil {
		return err
	}
	if f.isLink {
		if fi.Mode()&os.ModeSymlink == 0 {
			return errors.New("symbolic link was not restored")
		}
		t, err := os.Readlink(f.abs)
		if err != nil {
			return err
		}
		if t != f.linkTarget {
			return fmt.Errorf("symbolic link points to %q, want %q", t, f.linkTarget)
		}
		return nil
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("restored path is %v, want a regular file", fi.Mode().Type())
	}
	if got := fi.Mode() & permBits; got != f.origMode {
		return fmt.Errorf("restored mode is %v, want %v", got, f.origMode)
	}
	data, err := readRegular(f.abs, fi)
	if err != nil {
		return err
	}
	if !bytes.Equal(data, f.origData) {
		return fmt.Errorf("restored content has sha256 %s, want %s", digestBytes(data), f.origDigest)
	}
	return nil
}

// writeTemp writes data to a new temp file in dir (the checkout's temp dir,
// or the target's own directory), fsyncs it if sync, sets its mode and
// returns its path. base is the target's name. On error no file is left.
func writeTemp(dir, base string, data []byte, mode os.FileMode, sync bool) (path string, err error) {
	fh, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return "", err
	}
	name := fh.Name() // not path: the error returns set path to ""
	defer func() {
		if err != nil {
			_ = fh.Close()
			_ = os.Remove(name)
		}
	}()
	if _, err = writeData(fh, data); err != nil {
		return "", err
	}
	// Chmod before the fsync so the mode is durable with the content;
	// fchmod is not subject to the umask.
	if err = fh.Chmod(mode); err != nil {
		return "", err
	}
	if sync {
		if err = fh.Sync(); err != nil {
			return "", err
		}
	}
	if err = fh.Close(); err != nil {
		return "", err
	}
	return name, nil
}

// tempSymlink creates a symlink to target under a fresh temp name in dir.
func tempSymlink(dir, base, target string) (string, error) {
	for range 10 {
		p := filepath.Join(dir, tempPrefix(base)+randSuffix())
		err := os.Symlink(target, p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", errors.New("could not find a free temp name for a symbolic link")
}

func tempPrefix(base string) string {
	if len(base) > maxTempBase {
		base = base[:maxTempBase]
	}
	return "." + base + tempMarker
}

func randSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
