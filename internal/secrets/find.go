package secrets

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// DefaultLimit is the number of entries [Find] visits when limit is 0.
const DefaultLimit = 50_000

// Found is the result of [Find]: slash-separated paths relative to the root,
// sorted.
type Found struct {
	// Files are the secret entries that are not directories: regular files,
	// and also symlinks and other special files, which are not followed.
	Files []string
	// Dirs are the secret directories (such as .ssh). They are not
	// descended, so the files inside them are not in Files.
	Dirs []string
	// Truncated reports that the walk stopped at the limit.
	Truncated bool
}

// Find walks the work tree at root and returns the paths that deny matches
// (a nil deny is the default list). It skips every entry named .git
// (directory or file), does not follow symlinks, does not descend a matching
// directory, and skips directories it cannot read. It stops after visiting
// limit entries (0 means [DefaultLimit]) and then sets Truncated.
func Find(root string, deny *pathsafe.Denylist, limit int) (Found, error) {
	return find(context.Background(), root, deny, limit)
}

func find(ctx context.Context, root string, deny *pathsafe.Denylist, limit int) (Found, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	root = filepath.Clean(root)
	if err := checkRoot(root); err != nil {
		return Found{}, err
	}
	var f Found
	visited := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if p == root {
			return err
		}
		if err != nil {
			return nil // an unreadable directory: skip it
		}
		if visited++; visited > limit {
			f.Truncated = true
			return fs.SkipAll
		}
		if visited%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel := relPath(root, p)
		if _, ok := deny.Match(rel); !ok {
			return nil
		}
		if d.IsDir() {
			f.Dirs = append(f.Dirs, rel)
			return fs.SkipDir
		}
		f.Files = append(f.Files, rel)
		return nil
	})
	if err != nil {
		return Found{}, walkError(err, root)
	}
	slices.Sort(f.Files)
	slices.Sort(f.Dirs)
	return f, nil
}

// filesUnder returns the regular files below the directories dirs of root
// (slash-separated, relative to root, sorted), visiting at most limit
// entries. It skips .git entries and does not follow symlinks.
func filesUnder(ctx context.Context, root string, dirs []string, limit int) ([]string, bool, error) {
	var files []string
	visited := 0
	for _, dir := range dirs {
		top := filepath.Join(root, filepath.FromSlash(dir))
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == top {
				return nil
			}
			if visited++; visited > limit {
				return fs.SkipAll
			}
			if visited%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if d.Name() == ".git" {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				files = append(files, relPath(root, p))
			}
			return nil
		})
		if err != nil {
			return nil, false, walkError(err, root)
		}
		if visited > limit {
			break
		}
	}
	slices.Sort(files)
	return files, visited > limit, nil
}

func checkRoot(root string) error {
	fi, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errs.Wrap(errs.NotFound, err, "secret scan: directory %q does not exist", root)
	case err != nil:
		return errs.Wrap(errs.Internal, err, "secret scan: %v", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return errs.New(errs.InvalidArgument, "secret scan: %q is a symlink: pass the resolved directory", root)
	case !fi.IsDir():
		return errs.New(errs.InvalidArgument, "secret scan: %q is not a directory", root)
	}
	return nil
}

func walkError(err error, root string) error {
	switch {
	case errors.Is(err, context.Canceled):
		return errs.Wrap(errs.Cancelled, err, "secret scan of %q: cancelled", root)
	case errors.Is(err, context.DeadlineExceeded):
		return errs.Wrap(errs.Timeout, err, "secret scan of %q: timed out", root)
	}
	return errs.Wrap(errs.Internal, err, "secret scan of %q: %v", root, err)
}

// relPath returns p, which is below root, relative to it with slashes.
func relPath(root, p string) string {
	rel := strings.TrimPrefix(p, root)
	rel = strings.TrimLeft(rel, string(filepath.Separator))
	return filepath.ToSlash(rel)
}

// hardLinks returns the other names, in the work tree at root, of the
// secret files (slash-separated, relative to root) that have more than one
// link: a directory walk (grep -r) by a confined process would read a
// secret's content through them, since the sandbox closes names. It costs
// one lstat per secret file, and a walk that stats the tree's regular
// files only when one of them has links. It skips .git, the directories
// in skip (already closed) and visits at most limit entries.
func hardLinks(ctx context.Context, root string, secretFiles, skip []string, limit int) ([]string, error) {
	ids := map[[2]uint64]bool{}
	isSecret := map[string]bool{}
	for _, rel := range secretFiles {
		isSecret[rel] = true
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			if id, ok := fileID(fi); ok {
				ids[id] = true
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	skipped := map[string]bool{}
	for _, d := range skip {
		skipped[d] = true
	}
	var links []string
	visited := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		if visited++; visited > limit {
			return fs.SkipAll
		}
		if visited%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		rel := relPath(root, p)
		if d.IsDir() {
			if d.Name() == ".git" || skipped[rel] {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || isSecret[rel] {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if id, ok := fileID(fi); ok && ids[id] {
				links = append(links, rel)
			}
		}
		return nil
	})
	if err != nil {
		return nil, walkError(err, root)
	}
	slices.Sort(links)
	return links, nil
}
