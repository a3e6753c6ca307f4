package pathsafe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
)

// MaxPathLen is the longest path (in bytes) the Resolve functions accept.
const MaxPathLen = 4096

// maxSymlinks bounds symlink expansion during resolution, like the kernel's
// ELOOP limit.
const maxSymlinks = 40

// Root is a repository root that paths are confined to. It is immutable and
// safe for concurrent use.
//
// Resolution is check-then-use: a concurrent process that swaps a directory for
// a symlink between the check and the later open can still redirect the open.
// Callers that open files should use O_NOFOLLOW and either compare the opened
// file's device and inode with ResolveReadLeaf's Leaf (as harness/readfile
// does) or open rel with os.OpenInRoot.
type Root struct {
	path  string // canonical: absolute, symlink-free, clean
	alias string // absolute, clean form of the root as given (may equal path)
	deny  *Denylist
}

// NewRoot returns a Root for the directory root, which is made absolute and
// canonical with filepath.EvalSymlinks. A nil deny means the default denylist.
// A missing root gives errs.NotFound; a root that is not a directory or is
// otherwise unusable gives errs.InvalidArgument.
func NewRoot(root string, deny *Denylist) (*Root, error) {
	if root == "" || strings.IndexByte(root, 0) >= 0 {
		return nil, errs.New(errs.InvalidArgument, "invalid repository root %q", root)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "repository root %q: %v", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errs.Wrap(errs.NotFound, err, "repository root %q does not exist", root)
		}
		return nil, errs.Wrap(errs.InvalidArgument, err, "repository root %q: %v", root, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "repository root %q: %v", root, err)
	}
	if !fi.IsDir() {
		return nil, errs.New(errs.InvalidArgument, "repository root %q is not a directory", root)
	}
	if deny == nil {
		deny = defaultDenylist()
	}
	return &Root{path: real, alias: abs, deny: deny}, nil
}

// Path returns the canonical root: absolute, clean and free of symlinks.
func (r *Root) Path() string { return r.path }

// Deny returns the root's secret denylist.
func (r *Root) Deny() *Denylist { return r.deny }

// Excluded reports whether rel (slash-separated, relative to the root) is a
// secret path that must be left out of search results and listings.
func (r *Root) Excluded(rel string) bool {
	_, ok := r.deny.Match(rel)
	return ok
}

// mode selects the checks of one resolution.
type mode struct {
	mustExist bool // the leaf must exist (read)
	write     bool // refuse the root itself and non-directory ancestors
	noGit     bool // refuse anything named .git or inside it
	lenient   bool // argv mode: only NUL is garbage
}

var (
	modeRead    = mode{mustExist: true, noGit: true}
	modeWrite   = mode{write: true, noGit: true}
	modeGeneral = mode{}
	modeArgv    = mode{lenient: true}
)

// ResolveRead resolves p for reading. The path must exist and must not be
// inside a .git directory (or be a .git file or directory) at any depth.
//
// It returns abs, the real (symlink-resolved) absolute path, and rel, that
// location relative to the root with slash separators ("." for the root).
//
// Errors: errs.InvalidArgument (empty path, NUL or control bytes, invalid
// UTF-8, over MaxPathLen, symlink loop), errs.PathOutsideRoot (".." escape, an
// absolute path outside the root, "~", a symlink leading outside),
// errs.SecretPathDenied (details "pattern" and "path"), errs.PathNotAllowed
// (.git) and errs.NotFound.
func (r *Root) ResolveRead(p string) (abs, rel string, err error) {
	abs, rel, _, err = r.resolve(p, modeRead)
	return abs, rel, err
}

// Leaf describes the file a resolution ended on, from the lstat made while
// resolving (no extra system call). Callers that open Abs can compare Dev and
// Ino with an fstat of the opened descriptor to detect that the path was
// redirected (for example a directory swapped for a symlink) in between.
type Leaf struct {
	Mode fs.FileMode // type bits only: 0 for a regular file, fs.ModeDir, fs.ModeNamedPipe, ...
	Dev  uint64      // device of the file
	Ino  uint64      // inode of the file
}

// ResolveReadLeaf is ResolveRead that also describes the resolved file, so
// read_file can refuse directories and special files without another stat and
// can verify the descriptor it opens.
func (r *Root) ResolveReadLeaf(p string) (abs, rel string, leaf Leaf, err error) {
	return r.resolve(p, modeRead)
}

// ResolveWrite resolves p for writing. The leaf and any of its parent
// directories may be missing; the existing part is resolved through symlinks so
// that "link/newfile" with link -> /etc is refused. The root itself, .git
// paths, and paths whose existing ancestor is not a directory are refused.
// abs and rel are as for ResolveRead.
func (r *Root) ResolveWrite(p string) (abs, rel string, err error) {
	abs, rel, _, err = r.resolve(p, modeWrite)
	return abs, rel, err
}

// Resolve resolves p without the .git rule; the leaf may or may not exist.
// abs and rel are as for ResolveRead.
func (r *Root) Resolve(p string) (abs, rel string, err error) {
	abs, rel, _, err = r.resolve(p, modeGeneral)
	return abs, rel, err
}

// resolve implements the Resolve functions. leaf describes the leaf when it
// exists.
func (r *Root) resolve(p string, m mode) (abs, rel string, leaf Leaf, err error) {
	if err := validatePath(p, m.lenient); err != nil {
		return "", "", Leaf{}, err
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		return "", "", Leaf{}, errs.New(errs.PathOutsideRoot, "path %q is relative to a home directory, not the repository root", p).With("path", p)
	}
	// Lexical step: clean and express the path relative to the root.
	lex, err := r.lexicalRel(p)
	if err != nil {
		return "", "", Leaf{}, err
	}
	if err := r.checkRel(p, lex, m); err != nil {
		return "", "", Leaf{}, err
	}
	// Physical step: walk the components below the root through symlinks.
	w, err := r.walk(lex)
	if err != nil {
		return "", "", Leaf{}, errs.From(err).With("path", p)
	}
	relReal, ok := r.within(w.real)
	if !ok {
		return "", "", Leaf{}, errs.New(errs.PathOutsideRoot, "path %q resolves outside the repository root", p).With("path", p)
	}
	if relReal != lex {
		if err := r.checkRel(p, relReal, m); err != nil {
			return "", "", Leaf{}, err
		}
	}
	switch {
	case m.mustExist && !w.exists:
		return "", "", Leaf{}, errs.New(errs.NotFound, "path %q does not exist", p).With("path", p)
	case m.write && relReal == ".":
		return "", "", Leaf{}, errs.New(errs.InvalidArgument, "path %q is the repository root itself", p).With("path", p)
	case m.write && w.notDir:
		return "", "", Leaf{}, errs.New(errs.InvalidArgument, "a parent of path %q is not a directory", p).With("path", p)
	}
	return w.real, relReal, w.leaf, nil
}

// validatePath rejects garbage input.
func validatePath(p string, lenient bool) error {
	if p == "" {
		return errs.New(errs.InvalidArgument, "path is empty")
	}
	if len(p) > MaxPathLen {
		return errs.New(errs.InvalidArgument, "path is longer than %d bytes", MaxPathLen)
	}
	if lenient {
		if strings.IndexByte(p, 0) >= 0 {
			return errs.New(errs.InvalidArgument, "path %q contains a NUL byte", p)
		}
		return nil
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			return errs.New(errs.InvalidArgument, "path %q contains a control character", p)
		}
	}
	if !utf8.ValidString(p) {
		return errs.New(errs.InvalidArgument, "path %q is not valid UTF-8", p)
	}
	return nil
}

// lexicalRel cleans p and returns it relative to the root, slash-separated,
// without touching the file system.
func (r *Root) lexicalRel(p string) (string, error) {
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		if rel, ok := r.within(c); ok {
			return rel, nil
		}
		if r.alias != r.path {
			if rel, ok := relWithin(r.alias, c); ok {
				return rel, nil
			}
		}
		return "", errs.New(errs.PathOutsideRoot, "path %q is outside the repository root", p).With("path", p)
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", errs.New(errs.PathOutsideRoot, "path %q escapes the repository root", p).With("path", p)
	}
	return filepath.ToSlash(c), nil
}

// within reports whether the clean absolute path abs is the root or below it,
// and returns it relative to the root.
func (r *Root) within(abs string) (string, bool) { return relWithin(r.path, abs) }

func relWithin(root, abs string) (string, bool) {
	if abs == root {
		return ".", true
	}
	if root == "/" {
		return filepath.ToSlash(abs[1:]), true
	}
	if len(abs) > len(root) && abs[len(root)] == '/' && strings.HasPrefix(abs, root) {
		return filepath.ToSlash(abs[len(root)+1:]), true
	}
	return "", false
}

// checkRel applies the .git rule and the denylist to a root-relative path.
func (r *Root) checkRel(p, rel string, m mode) error {
	if m.noGit && hasGitComponent(rel) {
		return errs.New(errs.PathNotAllowed, "path %q is inside the .git directory", p).With("path", p)
	}
	if pat, ok := r.deny.Match(rel); ok {
		return r.deny.SecretError(fmt.Sprintf("path %q", p), p, rel, pat)
	}
	return nil
}

// hasGitComponent reports whether some component of rel is ".git" (compared
// case-insensitively, for case-insensitive file systems).
func hasGitComponent(rel string) bool {
	for {
		i := strings.IndexByte(rel, '/')
		seg := rel
		if i >= 0 {
			seg = rel[:i]
		}
		if strings.EqualFold(seg, ".git") {
			return true
		}
		if i < 0 {
			return false
		}
		rel = rel[i+1:]
	}
}

// walked is the outcome of walk.
type walked struct {
	real   string // clean absolute real path
	exists bool   // the whole path exists
	notDir bool   // an existing ancestor is not a directory
	leaf   Leaf   // the leaf when it exists
}

// walk resolves the root-relative clean path rel component by component with
// lstat, following symlinks (including dangling ones) like the kernel would.
// Once a component is missing, the rest is appended lexically.
//
// Starting from the canonical root avoids re-resolving the root on every call.
func (r *Root) walk(rel string) (walked, error) {
	if rel == "." {
		return r.rootLeaf()
	}
	cur := r.path
	rest := rel
	links := 0
	var st syscall.Stat_t
	typ := fs.ModeDir
	// stale is set when st no longer describes cur: after a symlink (whose
	// target may end in "." or "/") or a ".." from a symlink target.
	stale := false
	for rest != "" {
		var comp string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
		} else {
			comp, rest = rest, ""
		}
		switch comp {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			stale = true
			continue
		}
		next := joinAbs(cur, comp)
		if err := lstat(next, &st); err != nil {
			switch {
			case errors.Is(err, syscall.ENOENT):
				return walked{real: filepath.Clean(next + "/" + rest)}, nil
			case errors.Is(err, syscall.ENOTDIR):
				return walked{real: filepath.Clean(next + "/" + rest), notDir: true}, nil
			case errors.Is(err, syscall.ENAMETOOLONG):
				return walked{}, errs.Wrap(errs.InvalidArgument, err, "path component %q is too long", comp)
			case errors.Is(err, syscall.EACCES):
				return walked{}, errs.Wrap(errs.PathNotAllowed, err, "permission denied resolving %q", comp)
			default:
				return walked{}, errs.Wrap(errs.Internal, err, "lstat %q: %v", next, err)
			}
		}
		typ = FileType(st.Mode)
		stale = typ == fs.ModeSymlink
		switch typ {
		case fs.ModeSymlink:
			links++
			if links > maxSymlinks {
				return walked{}, errs.New(errs.InvalidArgument, "too many levels of symbolic links")
			}
			target, err := os.Readlink(next)
			if err != nil {
				return walked{}, errs.Wrap(errs.Internal, err, "readlink %q: %v", next, err)
			}
			if target == "" {
				return walked{}, errs.New(errs.InvalidArgument, "empty symbolic link %q", comp)
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			if rest == "" {
				rest = target
			} else {
				rest = target + "/" + rest
			}
		case fs.ModeDir:
			cur = next
		default:
			cur = next
			if strings.Trim(rest, "/") != "" {
				// A file used as a directory: nothing below it can exist.
				return walked{real: filepath.Clean(cur + "/" + rest), notDir: true}, nil
			}
		}
	}
	if cur == r.path {
		return r.rootLeaf()
	}
	if stale {
		if err := lstat(cur, &st); err != nil {
			return walked{}, errs.Wrap(errs.Internal, err, "lstat %q: %v", cur, err)
		}
		typ = FileType(st.Mode)
	}
	return walked{real: cur, exists: true, leaf: Leaf{Mode: typ, Dev: uint64(st.Dev), Ino: uint64(st.Ino)}}, nil
}

// rootLeaf describes the root itself.
func (r *Root) rootLeaf() (walked, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(r.path, &st); err != nil {
		return walked{}, errs.Wrap(errs.NotFound, err, "repository root %q: %v", r.path, err)
	}
	return walked{real: r.path, exists: true, leaf: Leaf{Mode: fs.ModeDir, Dev: uint64(st.Dev), Ino: uint64(st.Ino)}}, nil
}

// FileType converts the S_IFMT bits of a stat mode to fs.FileMode type bits.
func FileType(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	default:
		return fs.ModeIrregular
	}
}

func joinAbs(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// lstat is syscall.Lstat retried on EINTR; it avoids os.Lstat's FileInfo
// allocation on the hot path.
func lstat(p string, st *syscall.Stat_t) error {
	for {
		err := syscall.Lstat(p, st)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Dir resolves a command's working directory ("" or "." = the root) and
// returns its absolute and root-relative forms; it must be a directory.
func (r *Root) Dir(cwd string) (abs, rel string, err error) {
	if cwd == "" || cwd == "." {
		return r.Path(), "", nil
	}
	abs, rel, err = r.Resolve(cwd)
	if err != nil {
		return "", "", err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", "", errs.New(errs.InvalidArgument, "cwd %q is not a directory in the repository", cwd).With("path", cwd)
	}
	return abs, rel, nil
}
