package patch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/harnessd/harnessd/contract/errs"
)

// permBits are the mode bits a patch reads, writes and restores.
const permBits = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// file is one touched file: its original state (the backup) and its planned
// state after the ops simulated so far.
type file struct {
	abs, rel string

	// Backup of the original state.
	existed    bool
	info       os.FileInfo // the lstat of the original, when it existed
	isLink     bool        // the leaf was a symlink the resolver left unresolved
	linkTarget string      // when isLink
	origData   []byte
	origMode   os.FileMode
	origDigest string

	// Planned state.
	exists  bool
	curLink bool // the planned state is still the original symlink
	newLink bool // the planned state is a symlink to data (Op.Link)
	data    []byte
	mode    os.FileMode
	digest  string
}

// plan is a validated patch: the files in first-touch order with their final
// planned content, and the changes to report.
type plan struct {
	root    string // checkout root from the first resolved path; "" if not known
	canon   string // the root as the resolver canonicalised it; "" if it does not say
	files   []*file
	changes []Change
}

// resolved is an op after field validation and path resolution.
type resolved struct {
	abs, rel string
	mode     os.FileMode
	hasMode  bool
}

func newPlan(r Resolver, ops []Op, o Options) (*plan, error) {
	if len(ops) == 0 {
		return nil, errs.New(errs.InvalidArgument, "patch has no operations")
	}
	if len(ops) > o.MaxOps {
		return nil, errs.New(errs.InvalidArgument, "patch has %d operations, more than the limit of %d", len(ops), o.MaxOps).
			With("ops", len(ops)).With("max_ops", o.MaxOps)
	}
	for _, pat := range o.AllowedPaths {
		if !doublestar.ValidatePattern(pat) {
			return nil, errs.New(errs.InvalidArgument, "allowed_paths pattern %q is not a valid glob", pat).With("pattern", pat)
		}
	}

	// Pass 1: fields, caps, paths. Nothing is read yet.
	res := make([]resolved, len(ops))
	total := 0
	for i, op := range ops {
		m, hasMode, err := checkFields(i, op)
		if err != nil {
			return nil, err
		}
		total += len(op.Content) + len(op.NewText)
		if total > o.MaxBytes {
			return nil, errs.New(errs.InvalidArgument, "patch content exceeds the limit of %d bytes (at op %d)", o.MaxBytes, i).
				With("op_index", i).With("max_bytes", o.MaxBytes)
		}
		abs, rel, err := r.ResolveWrite(op.Path)
		if err != nil {
			return nil, coded(err, errs.InvalidArgument, "op %d: cannot resolve path %q: %v", i, op.Path, err)
		}
		rel = filepath.ToSlash(rel)
		if !allowed(o.AllowedPaths, rel) {
			return nil, errs.New(errs.PathNotAllowed, "op %d: path %q is not in allowed_paths", i, rel).
				With("path", rel).With("op_index", i)
		}
		res[i] = resolved{abs: abs, rel: rel, mode: m, hasMode: hasMode}
	}

	// Pass 2: simulate in memory.
	p := &plan{changes: make([]Change, 0, len(ops))}
	if len(res) > 0 {
		p.root = rootOf(res[0].abs, res[0].rel)
		if rp, ok := r.(interface{ Path() string }); ok {
			p.canon = rp.Path()
		}
	}
	byAbs := make(map[string]*file, len(ops))
	lc, _ := r.(LeafChecker)
	budget := 0
	for i, op := range ops {
		rs := res[i]
		f := byAbs[rs.abs]
		if f == nil {
			var err error
			if f, err = load(rs.abs, rs.rel, lc); err != nil {
				return nil, err
			}
			byAbs[rs.abs] = f
			p.files = append(p.files, f)
		}
		ch, n, err := f.apply(i, op, rs)
		if err != nil {
			return nil, err
		}
		budget += len(op.Content) + n*len(op.NewText)
		if budget > o.MaxBytes {
			return nil, errs.New(errs.InvalidArgument, "op %d: %d replacements bring the new content over the limit of %d bytes", i, n, o.MaxBytes).
				With("path", rs.rel).With("op_index", i).With("max_bytes", o.MaxBytes)
		}
		p.changes = append(p.changes, ch)
	}
	if err := p.checkParents(byAbs); err != nil {
		return nil, err
	}
	return p, nil
}

// checkFields validates one op's fields and parses its mode.
func checkFields(i int, op Op) (os.FileMode, bool, error) {
	bad := func(format string, args ...any) error {
		return errs.New(errs.InvalidArgument, "op %d (%s): "+format, append([]any{i, op.Op}, args...)...).
			With("op_index", i)
	}
	if op.Path == "" {
		return 0, false, bad("path is empty")
	}
	switch op.Op {
	case OpReplace:
		if op.OldText == "" {
			return 0, false, bad("old_text is empty")
		}
		if op.Content != "" || op.Overwrite || op.Mode != "" {
			return 0, false, bad("content, overwrite and mode are not used by replace")
		}
	case OpCreate, OpWrite:
		if op.NewText != "" && op.Content == "" && op.OldText == "" {
			return 0, false, bad("the file's text goes in content (new_text is only used by replace)")
		}
		if op.OldText != "" || op.NewText != "" || op.All {
			return 0, false, bad("old_text, new_text and all are only used by replace")
		}
		if op.Op == OpWrite && op.Overwrite {
			return 0, false, bad("overwrite is only used by create (write always overwrites)")
		}
	case OpDelete:
		if op.OldText != "" || op.NewText != "" || op.All || op.Content != "" || op.Overwrite || op.Mode != "" {
			return 0, false, bad("delete takes only a path")
		}
	case "":
		return 0, false, bad("op is empty; want replace, create, write or delete")
	default:
		return 0, false, errs.New(errs.InvalidArgument, "op %d: unknown op %q; want replace, create, write or delete", i, op.Op).
			With("op_index", i)
	}
	if op.Link && (op.Op != OpWrite || op.Mode != "") {
		return 0, false, bad("link is a write without mode")
	}
	if op.Mode == "" {
		return 0, false, nil
	}
	m, err := ParseMode(op.Mode)
	if err != nil {
		return 0, false, bad("%v", err)
	}
	return m, true, nil
}

// ParseMode parses an octal file mode such as "0755" or "644". Only the
// permission bits (0777) are accepted.
func ParseMode(s string) (os.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return 0, errs.New(errs.InvalidArgument, "mode %q is not an octal permission between 0000 and 0777", s)
	}
	return os.FileMode(v), nil
}

func allowed(patterns []string, rel string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, pat := range patterns {
		if doublestar.MatchUnvalidated(pat, rel) {
			return true
		}
	}
	return false
}

// load reads the original state of abs: the backup and the starting point of
// the simulation. An existing file lc refuses (a hard link) is refused.
func load(abs, rel string, lc LeafChecker) (*file, error) {
	f := &file{abs: abs, rel: rel}
	fi, err := os.Lstat(abs)
	switch {
	case isNotExist(err):
		return f, nil
	case errors.Is(err, syscall.ENAMETOOLONG):
		return nil, errs.Wrap(errs.InvalidArgument, err, "path %q is too long", rel).With("path", rel)
	case err != nil:
		return nil, errs.Wrap(errs.Internal, err, "stat %q: %v", rel, err)
	}
	if lc != nil {
		if err := lc.CheckLeaf(rel, fi); err != nil {
			return nil, err
		}
	}
	f.existed, f.exists, f.info = true, true, fi
	f.origMode = fi.Mode() & permBits
	f.mode = f.origMode
	switch {
	case fi.IsDir():
		return nil, errs.New(errs.IsDirectory, "path %q is a directory", rel).With("path", rel)
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(abs)
		if err != nil {
			return nil, errs.Wrap(errs.Internal, err, "readlink %q: %v", rel, err)
		}
		f.isLink, f.curLink, f.linkTarget = true, true, t
		f.origDigest = digestBytes([]byte(t))
	case !fi.Mode().IsRegular():
		return nil, errs.New(errs.InvalidArgument, "path %q is not a regular file (%v)", rel, fi.Mode().Type()).With("path", rel)
	default:
		if fi.Size() > MaxFileBytes {
			return nil, errs.New(errs.InvalidArgument, "file %q is %d bytes; patches handle files up to %d bytes", rel, fi.Size(), MaxFileBytes).
				With("path", rel)
		}
		data, err := readRegular(abs, fi)
		if err != nil {
			return nil, errs.Wrap(errs.Internal, err, "read %q: %v", rel, err)
		}
		f.origData, f.data = data, data
		f.origDigest = digestBytes(data)
	}
	f.digest = f.origDigest
	return f, nil
}

// readRegular reads the file that fi describes, refusing it if it was swapped
// between the Lstat and the open.
func readRegular(abs string, fi os.FileInfo) ([]byte, error) {
	fh, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi, st) {
		return nil, errors.New("file changed while it was being read")
	}
	data := make([]byte, 0, st.Size()+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := fh.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(data) > MaxFileBytes {
			return nil, fmt.Errorf("file grew beyond %d bytes while it was being read", MaxFileBytes)
		}
	}
	return data, nil
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// apply simulates op i on f and returns its Change and its replacement count.
func (f *file) apply(i int, op Op, rs resolved) (Change, int, error) {
	conflict := func(format string, args ...any) *errs.Error {
		return errs.New(errs.PatchConflict, "op %d (%s %q): "+format, append([]any{i, op.Op, rs.rel}, args...)...).
			With("path", rs.rel).With("op_index", i)
	}
	notLink := func() error {
		if f.exists && f.curLink {
			return errs.New(errs.InvalidArgument, "op %d (%s): path %q is a symbolic link; only delete applies to it", i, op.Op, rs.rel).
				With("path", rs.rel).With("op_index", i)
		}
		return nil
	}
	ch := Change{Path: rs.rel, Op: op.Op, Before: ""}
	if f.exists {
		ch.Before = f.digest
	}
	n := 0
	switch op.Op {
	case OpReplace:
		if !f.exists {
			return ch, 0, conflict("file does not exist").With("matches", 0)
		}
		if err := notLink(); err != nil {
			return ch, 0, err
		}
		old := []byte(op.OldText)
		n = bytes.Count(f.data, old)
		switch {
		case n == 0:
			return ch, 0, conflict("old_text not found").With("matches", 0)
		case n > 1 && !op.All:
			return ch, 0, conflict("old_text found %d times; make it unique or set all", n).With("matches", n)
		}
		limit := 1
		if op.All {
			limit = -1
		}
		f.data = bytes.Replace(f.data, old, []byte(op.NewText), limit)
		ch.Replacements = n
	case OpCreate, OpWrite:
		if op.Op == OpCreate && f.exists && !op.Overwrite {
			return ch, 0, conflict("file already exists; set overwrite or use write")
		}
		if err := notLink(); err != nil && !op.Link {
			return ch, 0, err
		}
		f.curLink, f.newLink = false, op.Link
		switch {
		case rs.hasMode:
			f.mode = rs.mode
		case !f.exists:
			f.mode = DefaultMode
		}
		f.data = []byte(op.Content)
		f.exists = true
	case OpDelete:
		if !f.exists {
			return ch, 0, conflict("file does not exist")
		}
		f.exists, f.curLink, f.newLink, f.data, f.digest = false, false, false, nil, ""
		return ch, 0, nil
	}
	f.digest = digestBytes(f.data)
	ch.After = f.digest
	return ch, n, nil
}

// unchanged reports whether the planned state equals the original one, so the
// file needs no write.
func (f *file) unchanged() bool {
	if f.exists != f.existed {
		return false
	}
	if !f.exists {
		return true
	}
	if f.newLink {
		return f.isLink && f.linkTarget == string(f.data)
	}
	return f.curLink || (!f.isLink && f.mode == f.origMode && bytes.Equal(f.data, f.origData))
}

// checkParents refuses new files whose parent directory would have to be
// created where a file exists on disk or is touched by the patch.
func (p *plan) checkParents(byAbs map[string]*file) error {
	for _, f := range p.files {
		if !f.exists || f.existed {
			continue
		}
		for dir := filepath.Dir(f.abs); ; dir = filepath.Dir(dir) {
			if g := byAbs[dir]; g != nil {
				return errs.New(errs.PatchConflict, "cannot create %q: its parent %q is a file touched by this patch", f.rel, g.rel).
					With("path", f.rel)
			}
			fi, err := os.Stat(dir)
			if err == nil {
				if !fi.IsDir() {
					return errs.New(errs.PatchConflict, "cannot create %q: a parent path is a file, not a directory", f.rel).
						With("path", f.rel)
				}
				break
			}
			if !isNotExist(err) {
				return errs.Wrap(errs.Internal, err, "stat parent of %q: %v", f.rel, err)
			}
			if parent := filepath.Dir(dir); parent == dir {
				return errs.New(errs.InvalidArgument, "cannot create %q: no existing parent directory", f.rel).With("path", f.rel)
			}
		}
	}
	return nil
}

func digestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// DigestChecked is Digest of a regular file that check (such as
// pathsafe.Root.CheckLeaf of its path) accepts as opened: the decision and
// the bytes hashed are the same file's, so a hard link to a secret is
// refused, never hashed (a digest is an oracle of the content). A file
// that is not regular is digested as by Digest.
func DigestChecked(path string, check func(fs.FileInfo) error) (string, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if isNotExist(err) {
			return "", nil
		}
		return Digest(path) // a symlink (ELOOP) or a special file: not read
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return "", errs.Wrap(errs.Internal, err, "stat %q: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return Digest(path)
	}
	if err := check(fi); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{fh}, make([]byte, min(fi.Size()+1, 64<<10))); err != nil {
		return "", errs.Wrap(errs.Internal, err, "read %q: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Digest returns the hex SHA-256 of the file at path, or "" if it does not
// exist. A symbolic link is not followed: its digest is that of its target
// text, as git hashes a symlink. A directory is errs.IsDirectory and other
// non-regular files are errs.InvalidArgument.
func Digest(path string) (string, error) {
	fi, err := os.Lstat(path)
	switch {
	case isNotExist(err):
		return "", nil
	case err != nil:
		return "", errs.Wrap(errs.Internal, err, "stat %q: %v", path, err)
	case fi.IsDir():
		return "", errs.New(errs.IsDirectory, "path %q is a directory", path)
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(path)
		if err != nil {
			return "", errs.Wrap(errs.Internal, err, "readlink %q: %v", path, err)
		}
		return digestBytes([]byte(t)), nil
	case !fi.Mode().IsRegular():
		return "", errs.New(errs.InvalidArgument, "path %q is not a regular file (%v)", path, fi.Mode().Type())
	}
	fh, err := os.Open(path)
	if err != nil {
		if isNotExist(err) {
			return "", nil
		}
		return "", errs.Wrap(errs.Internal, err, "open %q: %v", path, err)
	}
	defer fh.Close()
	bufSize := int64(64 << 10)
	if fi.Size() < bufSize {
		bufSize = fi.Size() + 1
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{fh}, make([]byte, bufSize)); err != nil {
		return "", errs.Wrap(errs.Internal, err, "read %q: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
