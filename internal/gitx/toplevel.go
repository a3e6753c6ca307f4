package gitx

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// TopLevel returns the root of the work tree containing path and the
// repository's common git directory (shared by linked worktrees), both
// absolute with symlinks resolved. path may be a directory or a file inside
// the work tree. A missing path gives NOT_FOUND; a path outside any work
// tree, inside a .git directory or in a bare repository gives
// NOT_A_GIT_REPOSITORY.
func (g *Git) TopLevel(ctx context.Context, path string) (root, commonDir string, err error) {
	if path == "" {
		return "", "", errs.New(errs.InvalidArgument, "path must not be empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", errs.Wrap(errs.InvalidArgument, err, "cannot resolve path %q: %v", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", errs.Wrap(errs.NotFound, err, "path %q does not exist", path)
		}
		return "", "", errs.Wrap(errs.NotFound, err, "cannot resolve path %q: %v", path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", "", errs.Wrap(errs.NotFound, err, "path %q does not exist", path)
	}
	dir := real
	if !fi.IsDir() {
		dir = filepath.Dir(real)
	}
	out, _, err := g.Run(ctx, dir, 64<<10, "rev-parse", "--show-toplevel", "--git-common-dir")
	if err != nil {
		e := errs.From(err)
		if e.Code == errs.NotAGitRepository {
			return "", "", errs.Wrap(errs.NotAGitRepository, err, "%q is not inside a git work tree: %s", path, e.Message)
		}
		return "", "", err
	}
	top, common, ok := splitTopLevel(strings.TrimSuffix(string(out), "\n"))
	if !ok || top == "" {
		// Bare repositories and .git directories print no top level.
		return "", "", errs.New(errs.NotAGitRepository, "%q is not inside a git work tree", path)
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	if root, err = filepath.EvalSymlinks(top); err != nil {
		return "", "", errs.Wrap(errs.Internal, err, "cannot resolve work tree root %q: %v", top, err)
	}
	if commonDir, err = filepath.EvalSymlinks(common); err != nil {
		return "", "", errs.Wrap(errs.Internal, err, "cannot resolve git directory %q: %v", common, err)
	}
	return root, commonDir, nil
}

// splitTopLevel splits "toplevel\ncommondir". A newline inside the top level
// (legal in a directory name) is resolved by preferring the split where the
// common dir is toplevel/.git.
func splitTopLevel(s string) (top, common string, ok bool) {
	if strings.Count(s, "\n") == 1 {
		top, common, _ = strings.Cut(s, "\n")
		return top, common, true
	}
	first := -1
	for i := 0; i < len(s); i++ {
		if s[i] != '\n' {
			continue
		}
		if first < 0 {
			first = i
		}
		if s[i+1:] == s[:i]+"/.git" {
			return s[:i], s[i+1:], true
		}
	}
	if first < 0 {
		return "", "", false
	}
	return s[:first], s[first+1:], true
}
