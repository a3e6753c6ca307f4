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

// Checkout is a work tree as Refresh reads it.
type Checkout struct {
	// Root is the work tree's top directory.
	Root string
	// Index is the index then and now (see Refresh).
	Index *Index
	// Config is how the configuration says files are compared.
	Config TreeConfig
	// Attrs reads the attributes of the work tree; keep one across
	// Refresh calls (it caches what it read and forgets what the changed
	// paths may have changed). Nil: a new one per call, reading the
	// work tree's files and no index blob.
	Attrs *Attributes
	// LsOthers runs `git ls-files -z --others --exclude-standard --
	// <paths>` with literal pathspecs in Root. It is called at most
	// once per Refresh, and only when a changed path is not a tracked
	// file (a new, renamed or replaced file or directory).
	LsOthers func(paths []string) ([]string, error)
	// AskGit returns git's unstaged entries of the tracked paths given
	// (`git status` restricted to them): for the paths whose content git
	// converts in a way Refresh does not model (a clean filter, a
	// working-tree-encoding, an expanded $Id$) and for submodules. It is
	// called at most once per Refresh. Nil: such a path makes Refresh
	// inexact.
	AskGit func(paths []string) ([]gitx.Entry, error)
}

// Refresh returns the exact current status of the work tree at root (see
// Checkout.Refresh), with the default configuration and no git to ask.
func Refresh(base gitx.Status, ix *Index, root string, changed []string, lsOthers func(paths []string) ([]string, error)) (gitx.Status, error) {
	return (&Checkout{Root: root, Index: ix, LsOthers: lsOthers}).Refresh(base, changed)
}

// Refresh returns the exact current status of the work tree, given base,
// a status that was exact at some moment (gitx.ParseStatus of `git status
// --porcelain=v2 --branch -z --untracked-files=all`, or an earlier Refresh
// result); c.Index, the index then and now (the caller guarantees that the
// index, HEAD, refs, config, info/exclude, info/attributes and
// core.excludesFile are unchanged since base, and that Eligible accepted
// the checkout; a changed .gitignore or .gitattributes is fine: its
// directory is looked at again); and changed, the slash-separated paths
// relative to the root that may have changed since (files or directories,
// existing or deleted, duplicated, or only a parent directory; "" or "."
// is the whole tree; paths inside a .git directory count as that
// directory's parent, and the top-level .git is ignored).
//
// Staged, Conflicted and the branch fields are kept from base; Unstaged
// and Untracked are recomputed under the changed paths. A tracked file is
// compared as git compares it: by lstat (type; the executable bit unless
// core.filemode=false); when its stat data matches its entry and it is
// older than the index (ix.Mtime known) it is not read; when its size
// differs from the recorded one it is modified without being read, as
// git says; otherwise its content, converted as git converts it for its
// attributes and core.autocrlf (end of lines: exactly; a clean filter, a
// working-tree-encoding or an expanded $Id$: through c.AskGit), is hashed
// and compared with the entry's blob. A submodule (gitlink) is asked of
// git (c.AskGit), and so are all of them when .gitmodules changed.
// Untracked files are listed by c.LsOthers.
//
// A case it does not model (a nested repository, a special file, a file
// changing while read, a truncated base, a path only git can answer with
// no AskGit) gives an error wrapping ErrInexact: run git instead. A bad
// changed path gives INVALID_ARGUMENT.
func (c *Checkout) Refresh(base gitx.Status, changed []string) (gitx.Status, error) {
	ix, root := c.Index, c.Root
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
	// now). The same for a .gitattributes: the files below it that git
	// would hash again are hashed under the rules of now. A changed
	// .gitmodules may change how git reports every submodule.
	allGitlinks := false
	for i, p := range roots {
		switch path.Base(p) {
		case ".gitignore", ".gitattributes":
			roots[i] = parent(p)
		case ".gitmodules":
			allGitlinks = true
		}
	}
	roots = minimal(roots)
	attrs := c.Attrs
	if attrs == nil {
		common := ""
		if _, cd, err := GitDirs(root); err == nil {
			common = cd
		}
		if attrs, err = NewAttributes(root, common, ix, c.Config.IgnoreCase, nil); err != nil {
			return gitx.Status{}, inexact("read info/attributes: %v", err)
		}
	}
	attrs.forgetUnder(roots)
	r := refresher{ix: ix, root: root, dirs: map[string]bool{}, cfg: c.Config, attrs: attrs}
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
	var ask, askGit []string
	for _, p := range roots {
		exact, below := ix.under(p)
		for _, rg := range [2][2]int{exact, below} {
			for i := rg[0]; i < rg[1]; i++ {
				e := &ix.Entries[i]
				if e.Stage != 0 {
					return gitx.Status{}, inexact("unmerged entry %q", e.Path)
				}
				code, byGit, err := r.compare(e)
				if err != nil {
					return gitx.Status{}, err
				}
				switch {
				case byGit:
					askGit = append(askGit, e.Path)
				case code != "":
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
	if allGitlinks {
		for i := range ix.Entries {
			if e := &ix.Entries[i]; e.Mode == ModeGitlink && !slices.Contains(askGit, e.Path) {
				askGit = append(askGit, e.Path)
			}
		}
	}
	if len(askGit) > 0 {
		if c.AskGit == nil {
			return gitx.Status{}, inexact("%q needs git (a submodule, a filter, an encoding or an $Id$)", askGit[0])
		}
		got, err := c.AskGit(askGit)
		if err != nil {
			return gitx.Status{}, err
		}
		for _, e := range got {
			if slices.Contains(askGit, e.Path) {
				unstaged = append(unstaged, e)
			}
		}
	}

	var untracked []string
	if len(ask) > 0 {
		if c.LsOthers == nil {
			return gitx.Status{}, errs.New(errs.InvalidArgument, "gitindex.Refresh needs lsOthers for new or replaced paths")
		}
		spec := ask
		if len(ask) == 1 && ask[0] == "" {
			spec = []string{"."}
		}
		got, err := c.LsOthers(spec)
		if err != nil {
			return gitx.Status{}, err
		}
		for _, u := range got {
			switch {
			case strings.HasSuffix(u, "/"):
				return gitx.Status{}, inexact("nested repository %q", u)
			case !coveredBy(u, ask):
				// Not under what was asked: not ours to report.
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
		if !coveredBy(e.Path, roots) && !slices.Contains(askGit, e.Path) {
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
	ix    *Index
	root  string
	cfg   TreeConfig
	attrs *Attributes
	dirs  map[string]bool // directory (relative) -> is a real directory (not a symlink)
	buf   []byte

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

// compare returns the unstaged status of entry e: "" (unchanged),
// deleted, type_changed or modified; or byGit when only git can say (a
// submodule, a content git converts in a way not modelled here).
func (r *refresher) compare(e *Entry) (code string, byGit bool, err error) {
	if e.Mode == ModeGitlink {
		return "", true, nil
	}
	fi, err := r.lstat(e.Path)
	if err != nil {
		return "", false, err
	}
	if fi == nil {
		return gitx.StatusDeleted, false, nil
	}
	m := fi.Mode()
	switch {
	case m.IsDir():
		if _, err := os.Lstat(filepath.Join(r.abs(e.Path), ".git")); err == nil {
			return "", false, inexact("a repository replaced the tracked file %q", e.Path)
		}
		return gitx.StatusDeleted, false, nil
	case m&fs.ModeSymlink == 0 && !m.IsRegular():
		return "", false, inexact("%q is a special file", e.Path)
	}
	switch e.Mode {
	case ModeRegular, ModeExecutable:
		if !m.IsRegular() {
			return gitx.StatusTypeChanged, false, nil
		}
		if !r.cfg.NoFileMode && (e.Mode&0o100 != 0) != (m.Perm()&0o100 != 0) {
			return gitx.StatusModified, false, nil
		}
		if r.ix.fresh(e, fi) {
			return "", false, nil
		}
		if sizeChanged(e, fi) {
			return gitx.StatusModified, false, nil
		}
		r.hashed++
		same, why, err := r.sameFile(e, fi)
		switch {
		case err != nil:
			return "", false, err
		case why != "":
			return "", true, nil
		case !same:
			return gitx.StatusModified, false, nil
		}
		return "", false, nil
	case ModeSymlink:
		if m&fs.ModeSymlink == 0 {
			return gitx.StatusTypeChanged, false, nil
		}
		if sizeChanged(e, fi) {
			return gitx.StatusModified, false, nil
		}
		target, err := os.Readlink(r.abs(e.Path))
		if err != nil {
			return "", false, inexact("read link %q: %v", e.Path, err)
		}
		if !bytes.Equal(HashBlob(r.ix.HashSize, []byte(filepath.ToSlash(target))), e.OID) {
			return gitx.StatusModified, false, nil
		}
		return "", false, nil
	}
	return "", false, inexact("entry %q has mode %o", e.Path, e.Mode)
}

// sizeChanged reports git's "the size differs" (ie_modified): when the
// entry records a size (a zero one may be a smudged entry) and the file's
// is another, git reports the file modified without reading it, even
// when converting its content would give the same blob.
func sizeChanged(e *Entry, fi fs.FileInfo) bool {
	return e.Size != 0 && e.Size != uint32(fi.Size())
}

// sameFile reports whether the regular file of entry e, which lstat saw as
// fi, hashes to e's blob once converted as git converts it for its
// attributes; why is set when only git can say.
func (r *refresher) sameFile(e *Entry, fi fs.FileInfo) (same bool, why string, err error) {
	vals, uncertain, err := r.attrs.values(e.Path)
	if err != nil {
		return false, "", inexact("attributes of %q: %v", e.Path, err)
	}
	cv := conversionOf(vals, uncertain, r.cfg)
	if cv.git != "" {
		return false, cv.git, nil
	}
	if cv.crlf == crlfBinary && !cv.ident {
		oid, err := r.hashFile(e.Path, fi)
		if err != nil {
			return false, "", err
		}
		return bytes.Equal(oid, e.OID), "", nil
	}
	if fi.Size() > maxConvertRead {
		return false, "a large file git would convert", nil
	}
	data, err := r.readFile(e.Path, fi)
	if err != nil {
		return false, "", err
	}
	same, why = sameAsIndex(r.ix.HashSize, data, e.OID, cv)
	return same, why, nil
}

// open opens the regular file rel that lstat saw as fi, checking that it
// is still that file.
func (r *refresher) open(rel string, fi fs.FileInfo) (*os.File, error) {
	f, err := os.Open(r.abs(rel))
	if err != nil {
		return nil, inexact("open %q: %v", rel, err)
	}
	fi2, err := f.Stat()
	if err != nil || !os.SameFile(fi, fi2) || fi2.Size() != fi.Size() {
		f.Close()
		return nil, inexact("%q changed while read", rel)
	}
	return f, nil
}

// readFile reads the whole regular file rel that lstat saw as fi.
func (r *refresher) readFile(rel string, fi fs.FileInfo) ([]byte, error) {
	f, err := r.open(rel, fi)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := fi.Size()
	data := make([]byte, size+1)
	n, err := io.ReadFull(f, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, inexact("read %q: %v", rel, err)
	}
	if int64(n) != size {
		return nil, inexact("%q changed while read", rel)
	}
	return data[:n], nil
}

// hashFile returns the blob id of the regular file rel that lstat saw as
// fi, as is. A file that is replaced or changes size while read is
// inexact (the watcher will report it again).
func (r *refresher) hashFile(rel string, fi fs.FileInfo) ([]byte, error) {
	f, err := r.open(rel, fi)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
	e, tracked := r.ix.Lookup(p)
	if tracked && e.Mode == ModeGitlink {
		return false, nil // nothing in a submodule is the superproject's untracked file
	}
	if fi.IsDir() {
		return true, nil
	}
	return !tracked, nil
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
