package proc

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// lookPath resolves argv0 the way a shell would, but with the given PATH and
// without ever resolving through a relative or empty PATH entry: an agent
// must not be able to shadow `git` by dropping an executable named git into
// the working directory. A name containing a slash is used as is (relative to
// dir when relative). The error is NotFound or InvalidArgument coded.
func lookPath(argv0, pathEnv, dir string) (string, error) {
	if strings.Contains(argv0, "/") {
		p := argv0
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", err.With("argv0", argv0)
		}
		return argv0, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, argv0)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", errs.New(errs.NotFound, "command %q not found in PATH", argv0).With("argv0", argv0)
}

// checkExecutable reports whether p is an executable regular file.
func checkExecutable(p string) *errs.Error {
	fi, err := os.Stat(p)
	switch {
	case err != nil && os.IsNotExist(err):
		return errs.New(errs.NotFound, "command %q does not exist", p)
	case err != nil:
		return errs.Wrap(errs.NotFound, err, "command %q: %v", p, err)
	case fi.IsDir():
		return errs.New(errs.InvalidArgument, "command %q is a directory", p)
	case !fi.Mode().IsRegular():
		return errs.New(errs.InvalidArgument, "command %q is not a regular file", p)
	case fi.Mode().Perm()&0o111 == 0:
		return errs.New(errs.InvalidArgument, "command %q is not executable", p)
	}
	return nil
}
