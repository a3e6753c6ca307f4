package gitindex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/patch"
)

// ErrInexact is the cause of a Refresh error that means "this status cannot
// be computed in process exactly; run git": the caller falls back to the
// exec path. The error's text names the case.
var ErrInexact = errors.New("gitindex: status not exact in process")

func inexact(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInexact, fmt.Sprintf(format, args...))
}

// Refresh returns the exact current status of the work tree at root, given
// base, a status that was exact at some moment (gitx.ParseStatus of
// `git status --porcelain=v2 --branch -z --untracked-files=all`, or an
// earlier Refresh result); ix, the index then and now (the caller
// guarantees that .git/index, HEAD, refs, config, .git/info/exclude,
// core.excludesFile and attributes are unchanged since base, and that
// Eligible accepted the checkout; a changed .gitignore is fine: its
// directory is asked about again); changed, the slash-separated paths
// relative to root that may have changed since (files or directories,
// existing or deleted, duplicated, or only a parent directory; "" or "."
// is the whole tree; paths inside a .git directory count as that
// directory's parent, and the top-level .git is ignored); and lsOthers,
// which runs `git ls-files -z --others --exclude-standard -- <paths>` with
// literal pathspecs in root. lsOthers is called at most once, and only
// when a changed path is not a tracked file (a new, renamed or replaced
// file or directory).
//
// Staged, Conflicted and the branch fields are kept from base; Unstaged
// and Untracked are recomputed under the changed paths: tracked files by
// lstat and content hash against the index (core.filemode and
// core.symlinks are taken as true, which Eligible checks; when ix.Mtime is
// known, a file whose stat data matches its entry and is older than the
// index is not read, as git does), untracked ones through lsOthers. A case
// it does not model (a nested repository, a .gitattributes change, a
// special file, a file changing while read, a truncated base) gives an
// error wrapping ErrInexact: run git instead. A bad changed path gives
// INVALID_ARGUMENT.
func Refresh(base gitx.Status, ix *Index, root string, changed []string, lsOthers func(paths []string) ([]string, error)) (gitx.Status, error) {
	if ix == nil {
		return gitx.Status{}, errs.New(errs.InvalidArgument, "gitindex.Refresh needs the index; parse .git/index with gitindex.Parse")
	}
	if ix.Has("link") || ix.Has("sdir") {
		return gitx.Status{}, inexact("split or sparse index")
	}
	if base.Truncated {
		return gitx.Status{}, inexact("the base status was truncated")
	}
	for _, u := range base.Untracked {
		if strings.HasSuffix(u, "/") {
			return gitx.Status{}, inexact("nested repository %q", u)
		}
	}
	roots, err := normalize(changed)
	if err != nil {
		return gitx.Status{}, err
	}
	// A .gitignore rules only its own directory: when one changed, its
	// whole directory is asked about again (lsOthers applies the rules of
	// now). Attributes change how tracked files hash: not modelled.
	for i, p := range roots {
		switch path.Base(p) {
		case ".gitignore":
			roots[i] = parent(p)
		case ".gitattributes":
			return gitx.Status{}, inexact("%s changed: the attribute rules may differ from the base", p)
		}
	}
	roots = minimal(roots)
	for _, u := range base.Untracked {
		if isAttributes(u) && coveredBy(u, roots) {
			return gitx.Status{}, inexact("%s may have changed: the attribute rules may differ from the base", u)
		}
	}
	r := refresher{ix: ix, root: root, dirs: map[string]bool{}}
	// A tracked file that is an ancestor of a changed path has become a
	// directory (or the path is stale): check it as a root of its own.
	for _, p := range roots {
		for d := parent(p); d != ""; d = parent(d) {
			if _, ok := ix.Lookup(d); ok {
				roots = append(roots, d)
			}
		}
	}
	roots = minimal(roots)

	var unstaged []gitx.Entry
	var ask []string
	for _, p := range roots {
		exact, below := ix.under(p)
		for _, rg := range [2][2]int{exact, below} {
			for i := rg[0]; i < rg[1]; i++ {
				e := &ix.Entries[i]
				if e.Stage != 0 {
					return gitx.Status{}, inexact("unmerged entry %q", e.Path)
				}
				code, err := r.compare(e)
				if err != nil {
					return gitx.Status{}, err
				}
				if code != "" {
					if isAttributes(e.Path) {
						return gitx.Status{}, inexact("%s changed: the attribute rules may differ from the base", e.Path)
					}
					unstaged = append(unstaged, gitx.Entry{Path: e.Path, Status: code})
				}
			}
		}
		need, err := r.mayHoldUntracked(p)
		if err != nil {
			return gitx.Status{}, err
		}
		if need {
			ask = append(ask, p)
		}
	}

	var untracked []string
	if len(ask) > 0 {
		if lsOthers == nil {
			return gitx.Status{}, errs.New(errs.InvalidArgument, "gitindex.Refresh needs lsOthers for new or replaced paths")
		}
		spec := ask
		if len(ask) == 1 && ask[0] == "" {
			spec = []string{"."}
		}
		got, err := lsOthers(spec)
		if err != nil {
			return gitx.Status{}, err
		}
		for _, u := range got {
			switch {
			case strings.HasSuffix(u, "/"):
				return gitx.Status{}, inexact("nested repository %q", u)
			case !coveredBy(u, ask):
				// Not under what was asked: not ours to report.
			case isAttributes(u) && !slices.Contains(base.Untracked, u):
				return gitx.Status{}, inexact("new %s: the attribute rules may differ from the base", u)
			case patch.IsTempName(path.Base(u)):
				// A patch's temp file left by a crash (as gitx.ParseStatus).
			default:
				untracked = append(untracked, u)
			}
		}
	}

	st := base
	st.Staged = append([]gitx.Entry{}, base.Staged...)
	st.Conflicted = append([]gitx.Entry{}, base.Conflicted...)
	st.Unstaged = []gitx.Entry{}
	for _, e := range base.Unstaged {
		if !coveredBy(e.Path, roots) {
			st.Unstaged = append(st.Unstaged, e)
		}
	}
	st.Unstaged = append(st.Unstaged, unstaged...)
	slices.SortStableFunc(st.Unstaged, func(a, b gitx.Entry) int { return strings.Compare(a.Path, b.Path) })
	st.Untracked = []string{}
	for _, u := range base.Untracked {
		if !coveredBy(u, roots) {
			st.Untracked = append(st.Untracked, u)
		}
	}
	st.Untracked = append(st.Untracked, untracked...)
	slices.Sort(st.Untracked)
	st.Untracked = slices.Compact(st.Untracked)
	st.Clean = len(st.Staged) == 0 && len(st.Unstaged) == 0 && len(st.Untracked) == 0 && len(st.Conflicted) == 0
	return st, nil
}

// normalize cleans the changed paths: slash-separated and relative, with
// paths inside a .git directory mapped to that directory's parent and the
// top-level .git dropped. "" stands for the whole tree.
func normalize(changed []string) ([]string, error) {
	out := make([]string, 0, len(changed))
	for _, c := range changed {
		if strings.IndexByte(c, 0) >= 0 || strings.HasPrefix(c, "/") {
			return nil, errs.New(errs.InvalidArgument, "changed path %q is not a slash-separated path relative to the work tree root", c)
		}
		p := path.Clean(c)
		if p == "." {
			p = ""
		}
		if p == ".." || strings.HasPrefix(p, "../") {
			return nil, errs.New(errs.InvalidArgument, "changed path %q leaves the work tree; pass paths relative to its root", c)
		}
		if p != "" {
			parts := strings.Split(p, "/")
			if i := slices.IndexFunc(parts, func(s string) bool { return strings.EqualFold(s, ".git") }); i >= 0 {
				if i == 0 {
					continue // the repository's own git dir
				}
				p = strings.Join(parts[:i], "/")
			}
		}
		out = append(out, p)
	}
	return minimal(out), nil
}

// minimal sorts and dedupes paths and drops those under another one.
func minimal(ps []string) []string {
	set := make(map[string]bool, len(ps))
	for _, p := range ps {
		set[p] = true
	}
	out := ps[:0]
	for p := range set {
		if p != "" && set[""] {
			continue
		}
		under := false
		for d := parent(p); d != ""; d = parent(d) {
			if set[d] {
				under = true
				break
			}
		}
		if !under {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// parent returns the parent directory of p, "" at the top.
func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// coveredBy reports whether p is one of roots or under one.
func coveredBy(p string, roots []string) bool {
	p = strings.TrimSuffix(p, "/")
	for _, r := range roots {
		if r == "" || p == r || (len(p) > len(r) && p[len(r)] == '/' && p[:len(r)] == r) {
			return true
		}
	}
	return false
}

// under returns the entries whose path is p (the first range) and those
// below p/ (the second): two ranges, since paths such as "p.x" sort between
// "p" and "p/...". For p == "" the first range is every entry.
func (ix *Index) under(p string) (exact, below [2]int) {
	if p == "" {
		return [2]int{0, len(ix.Entries)}, [2]int{}
	}
	lo := ix.search(p)
	hi := lo
	for hi < len(ix.Entries) && ix.Entries[hi].Path == p {
		hi++
	}
	// Every path below p/ sorts between p+"/" and p+"0" ('/'+1).
	return [2]int{lo, hi}, [2]int{ix.search(p + "/"), ix.search(p + "0")}
}

// refresher holds the state of one Refresh.
type refresher struct {
	ix   *Index
	root string
	dirs map[string]bool // directory (relative) -> is a real directory (not a symlink)
	buf  []byte

	hashed int // files hashed (tests)
}

// realDir reports whether every component of dir is a directory and not a
// symbolic link (git's has_symlink_leading_path), caching the answers.
func (r *refresher) realDir(dir string) (bool, error) {
	if dir == "" {
		return true, nil
	}
	if ok, seen := r.dirs[dir]; seen {
		return ok, nil
	}
	ok, err := r.realDir(parent(dir))
	if err != nil {
		return false, err
	}
	if ok {
		fi, err := os.Lstat(r.abs(dir))
		switch {
		case err == nil:
			ok = fi.IsDir()
		case errors.Is(err, fs.ErrNotExist), isNotDir(err):
			ok = false
		default:
			return false, err
		}
	}
	r.dirs[dir] = ok
	return ok, nil
}

func (r *refresher) abs(rel string) string { return filepath.Join(r.root, filepath.FromSlash(rel)) }

// lstat returns the work tree's file at rel, nil when it is missing (also
// when a leading directory is missing, not a directory or a symlink).
func (r *refresher) lstat(rel string) (fs.FileInfo, error) {
	ok, err := r.realDir(parent(rel))
	if err != nil || !ok {
		return nil, err
	}
	fi, err := os.Lstat(r.abs(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return nil, nil
		}
		return nil, err
	}
	return fi, nil
}

// compare returns the unstaged status letter of entry e: "" (unchanged),
// deleted, type_changed or modified.
func (r *refresher) compare(e *Entry) (string, error) {
	fi, err := r.lstat(e.Path)
	if err != nil {
		return "", err
	}
	if fi == nil {
		return gitx.StatusDeleted, nil
	}
	m := fi.Mode()
	switch {
	case m.IsDir():
		if _, err := os.Lstat(filepath.Join(r.abs(e.Path), ".git")); err == nil {
			return "", inexact("a repository replaced the tracked file %q", e.Path)
		}
		return gitx.StatusDeleted, nil
	case m&fs.ModeSymlink == 0 && !m.IsRegular():
		return "", inexact("%q is a special file", e.Path)
	}
	switch e.Mode {
	case ModeRegular, ModeExecutable:
		if !m.IsRegular() {
			return gitx.StatusTypeChanged, nil
		}
		if (e.Mode&0o100 != 0) != (m.Perm()&0o100 != 0) {
			return gitx.StatusModified, nil
		}
		if r.ix.fresh(e, fi) {
			return "", nil
		}
		r.hashed++
		oid, err := r.hashFile(e.Path, fi)
		if err != nil {
			return "", err
		}
		if !bytes.Equal(oid, e.OID) {
			return gitx.StatusModified, nil
		}
		return "", nil
	case ModeSymlink:
		if m&fs.ModeSymlink == 0 {
			return gitx.StatusTypeChanged, nil
		}
		target, err := os.Readlink(r.abs(e.Path))
		if err != nil {
			return "", inexact("read link %q: %v", e.Path, err)
		}
		if !bytes.Equal(HashBlob(r.ix.HashSize, []byte(filepath.ToSlash(target))), e.OID) {
			return gitx.StatusModified, nil
		}
		return "", nil
	}
	return "", inexact("entry %q has mode %o", e.Path, e.Mode)
}

// hashFile returns the blob id of the regular file rel that lstat saw as
// fi. A file that is replaced or changes size while read is inexact (the
// watcher will report it again).
func (r *refresher) hashFile(rel string, fi fs.FileInfo) ([]byte, error) {
	f, err := os.Open(r.abs(rel))
	if err != nil {
		return nil, inexact("open %q: %v", rel, err)
	}
	defer f.Close()
	fi2, err := f.Stat()
	if err != nil || !os.SameFile(fi, fi2) || fi2.Size() != fi.Size() {
		return nil, inexact("%q changed while read", rel)
	}
	size := fi.Size()
	h := newHash(r.ix.HashSize)
	fmt.Fprintf(h, "blob %d\x00", size)
	if want := int(min(size+1, 32<<10)); len(r.buf) < want {
		r.buf = make([]byte, want)
	}
	n, err := io.CopyBuffer(h, io.LimitReader(f, size+1), r.buf)
	if err != nil {
		return nil, inexact("read %q: %v", rel, err)
	}
	if n != size {
		return nil, inexact("%q changed while read", rel)
	}
	return h.Sum(nil), nil
}

// mayHoldUntracked reports whether p may be or hold untracked files, so
// lsOthers must be asked about it: not when p is a tracked file that is
// still a file or symlink, and not when p is missing.
func (r *refresher) mayHoldUntracked(p string) (bool, error) {
	if p == "" {
		return true, nil
	}
	fi, err := r.lstat(p)
	if err != nil || fi == nil {
		return false, err
	}
	if fi.IsDir() {
		return true, nil
	}
	_, tracked := r.ix.Lookup(p)
	return !tracked, nil
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
