package preimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// Kinds of a tree entry.
const (
	KindFile = "f" // a regular file
	KindLink = "l" // a symbolic link (its content is its target text)
	KindDir  = "d" // a directory
)

// Defaults of the bounds of one tree snapshot (TreeOptions).
const (
	DefaultTreeMaxBytes = 256 << 20
	DefaultTreeMaxFiles = 50_000
)

// Entry is one path of a Tree: its kind, permission bits and, for files
// and links, the SHA-256 of their content (a link's is its target text's,
// as git hashes a link). Ino, Size and the times let the next snapshot
// skip reading a file that did not change.
type Entry struct {
	Path   string `json:"p"`
	Kind   string `json:"k"`
	Mode   uint32 `json:"m"`
	Size   int64  `json:"s,omitempty"`
	SHA256 string `json:"h,omitempty"`
	Ino    uint64 `json:"i,omitempty"`
	Mtime  int64  `json:"t,omitempty"`
	Ctime  int64  `json:"c,omitempty"`
	// NotKept says why a file's content was not read nor stored (a hard
	// link: another name of it may be a secret or lie outside the root).
	NotKept string `json:"n,omitempty"`
}

// Tree is a snapshot of the files under Scope of a checkout (every path
// "" = the whole checkout), sorted by path. The .git directories and the
// paths TreeOptions.Skip names are not in it.
type Tree struct {
	Scope   []string  `json:"scope"`
	Ignored bool      `json:"ignored"` // ignored files are in it too
	At      time.Time `json:"at"`
	Bytes   int64     `json:"bytes"` // total size of its files
	Entries []Entry   `json:"entries"`
	// Skipped are the ignored paths left out (dir/ for a directory), as
	// the caller listed them.
	Skipped []string `json:"skipped,omitempty"`
}

// Has reports whether the tree has p or a path under it.
func (t *Tree) Has(p string) bool {
	if t.Find(p) != nil {
		return true
	}
	dir := p + "/"
	i := sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].Path >= dir })
	return i < len(t.Entries) && strings.HasPrefix(t.Entries[i].Path, dir)
}

// Find returns the entry of p, or nil.
func (t *Tree) Find(p string) *Entry {
	i := sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].Path >= p })
	if i < len(t.Entries) && t.Entries[i].Path == p {
		return &t.Entries[i]
	}
	return nil
}

// TreeOptions configure TakeTree.
type TreeOptions struct {
	// Root is the checkout's canonical root.
	Root string
	// Scope are the slash-separated paths (relative to Root) to walk;
	// empty = the whole checkout.
	Scope []string
	// Ignored is recorded in the tree (the caller's Skip left ignored
	// files in).
	Ignored bool
	// Secret reports a secret path: neither read nor listed.
	Secret func(rel string) bool
	// Skip reports a path left out with what is under it (ignored files).
	Skip func(rel string, dir bool) bool
	// MaxBytes and MaxFiles bound the snapshot (0 = the defaults,
	// negative = no bound): beyond them TakeTree answers BUDGET_EXCEEDED.
	MaxBytes int64
	MaxFiles int
	// Store keeps the content of every file and link (nil = only hash).
	// Contents are written without a sync each: call Store.Sync after.
	Store *Store
	// Prev is an earlier tree of the same root: a file whose inode, size
	// and times did not change since, whose change time is older than
	// Prev.At by more than a second (a racy-git guard), and whose content
	// the store still holds, is not read again.
	Prev *Tree
	// Now is the clock (nil = time.Now).
	Now func() time.Time
	// StatOnly lists and sizes the paths without reading any content
	// (their digests stay empty): the quick estimate of the budget that
	// job_start makes before it queues a job.
	StatOnly bool
}

// TakeTree walks the checkout under o.Scope and returns its tree, keeping
// every content in o.Store. A path it cannot read is an error (the tree
// would not be whole). Symbolic links are not followed.
func TakeTree(ctx context.Context, o TreeOptions) (*Tree, error) {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultTreeMaxBytes
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = DefaultTreeMaxFiles
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	t := &Tree{Scope: append([]string{}, o.Scope...), Ignored: o.Ignored, At: o.Now().UTC()}
	w := &walker{o: o, t: t, ctx: ctx}
	scope := o.Scope
	if len(scope) == 0 {
		scope = []string{""}
	}
	seen := map[string]bool{}
	for _, s := range normScope(scope) {
		if seen[s] {
			continue
		}
		seen[s] = true
		if err := w.visit(s); err != nil {
			return nil, err
		}
	}
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Path < t.Entries[j].Path })
	return t, nil
}

// normScope drops the scope paths under another one of the scope.
func normScope(scope []string) []string {
	s := append([]string(nil), scope...)
	sort.Strings(s)
	var out []string
	for _, p := range s {
		if len(out) > 0 && Under(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Under reports whether p is dir or lies under it ("" = the root: every
// path).
func Under(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

type walker struct {
	o   TreeOptions
	t   *Tree
	ctx context.Context
}

func (w *walker) abs(rel string) string {
	if rel == "" {
		return w.o.Root
	}
	return filepath.Join(w.o.Root, filepath.FromSlash(rel))
}

// visit adds rel (and what is under it) to the tree; rel "" is the root,
// which is walked but not an entry itself.
func (w *walker) visit(rel string) error {
	if err := w.ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "snapshot of the checkout: %v", err)
	}
	if rel != "" {
		if isGit(rel) || (w.o.Secret != nil && w.o.Secret(rel)) {
			return nil
		}
	}
	fi, err := os.Lstat(w.abs(rel))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // an operand that does not exist: nothing to keep
	}
	if err != nil {
		return errs.Wrap(errs.Internal, err, "snapshot of the checkout: %v", err)
	}
	if rel != "" && w.o.Skip != nil && w.o.Skip(rel, fi.IsDir()) {
		return nil
	}
	if rel == "" && !fi.IsDir() {
		return errs.New(errs.InvalidArgument, "checkout root %s is not a directory", w.o.Root)
	}
	if rel != "" {
		e, err := w.entry(rel, fi)
		if err != nil {
			return err
		}
		w.t.Entries = append(w.t.Entries, e)
		if err := w.budget(rel); err != nil {
			return err
		}
	}
	if !fi.IsDir() {
		return nil
	}
	names, err := readNames(w.abs(rel))
	if err != nil {
		return errs.Wrap(errs.Internal, err, "snapshot of the checkout: list %q: %v", rel, err)
	}
	for _, n := range names {
		if err := w.visit(path.Join(rel, n)); err != nil {
			return err
		}
	}
	return nil
}

// budget refuses a tree beyond its bounds.
func (w *walker) budget(rel string) error {
	o, t := w.o, w.t
	if o.MaxFiles > 0 && len(t.Entries) > o.MaxFiles {
		return errs.New(errs.BudgetExceeded, "the job may change more than %d paths of the checkout (at %q): beyond the undo budget JobUndoMaxFiles, so its pre-images cannot all be kept and it was not started; narrow the command to the paths it needs, run it with isolation: \"worktree\", or raise JobUndoMaxFiles", o.MaxFiles, rel).
			With("budget", "JobUndoMaxFiles").With("limit", o.MaxFiles).With("scope", scopeOf(t.Scope))
	}
	if o.MaxBytes > 0 && t.Bytes > o.MaxBytes {
		return errs.New(errs.BudgetExceeded, "the files the job may change hold more than %d bytes (at %q): beyond the undo budget JobUndoMaxBytes, so their pre-images cannot all be kept and it was not started; narrow the command to the paths it needs, run it with isolation: \"worktree\", or raise JobUndoMaxBytes", o.MaxBytes, rel).
			With("budget", "JobUndoMaxBytes").With("limit", o.MaxBytes).With("scope", scopeOf(t.Scope))
	}
	return nil
}

func scopeOf(s []string) []string {
	if len(s) == 0 {
		return []string{"."}
	}
	return s
}

// entry records rel as fi found it, keeping its content.
func (w *walker) entry(rel string, fi fs.FileInfo) (Entry, error) {
	e := Entry{Path: rel, Mode: uint32(fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky))}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.Ino, e.Mtime, e.Ctime = st.Ino, st.Mtim.Nano(), st.Ctim.Nano()
	}
	abs := w.abs(rel)
	switch {
	case fi.IsDir():
		e.Kind = KindDir
		e.Ino, e.Mtime, e.Ctime = 0, 0, 0
	case w.o.StatOnly:
		e.Kind, e.Size = KindFile, fi.Size()
		if fi.Mode().IsRegular() {
			w.t.Bytes += fi.Size()
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			e.Kind = KindLink
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Kind = KindLink
		target, err := os.Readlink(abs)
		if err != nil {
			return e, errs.Wrap(errs.Internal, err, "snapshot of the checkout: readlink %q: %v", rel, err)
		}
		d, err := w.keep([]byte(target))
		if err != nil {
			return e, err
		}
		e.SHA256, e.Size = d, int64(len(target))
	case fi.Mode().IsRegular():
		e.Kind, e.Size = KindFile, fi.Size()
		w.t.Bytes += fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			e.NotKept = fmt.Sprintf("a hard link (%d names): another name may be a secret or lie outside the root, so harnessd does not read it", st.Nlink)
			e.SHA256 = unread(e)
			return e, nil
		}
		if d := w.cached(e); d != "" {
			e.SHA256 = d
			return e, nil
		}
		data, err := readSame(abs, fi)
		if err != nil {
			return e, errs.Wrap(errs.Internal, err, "snapshot of the checkout: read %q: %v", rel, err)
		}
		if e.SHA256, err = w.keep(data); err != nil {
			return e, err
		}
	default:
		// A socket, fifo or device: listed (a job that removes it changes
		// the tree) but neither read nor restorable.
		e.Kind = KindFile
		e.NotKept = "not a regular file (" + fi.Mode().Type().String() + ")"
		e.SHA256 = unread(e)
	}
	return e, nil
}

// unread is the digest a file not read stands under: of its stat, never
// of its content (no oracle of it), so a receipt names the file.
func unread(e Entry) string {
	return Digest([]byte(fmt.Sprintf("not read: %s inode %d size %d mtime %d ctime %d", e.Path, e.Ino, e.Size, e.Mtime, e.Ctime)))
}

// cached returns the digest of e from the previous tree when the file did
// not change since and the store still holds its content.
func (w *walker) cached(e Entry) string {
	prev := w.o.Prev
	if prev == nil || e.Ino == 0 {
		return ""
	}
	p := prev.Find(e.Path)
	if p == nil || p.Kind != KindFile || p.NotKept != "" || p.Ino != e.Ino || p.Size != e.Size || p.Mtime != e.Mtime || p.Ctime != e.Ctime {
		return ""
	}
	if prev.At.UnixNano()-e.Ctime < int64(time.Second) {
		return "" // changed too close to that snapshot to trust the times
	}
	if w.o.Store != nil && !w.o.Store.Touch(p.SHA256) {
		return ""
	}
	return p.SHA256
}

// keep stores data (when the tree keeps contents) and returns its digest.
func (w *walker) keep(data []byte) (string, error) {
	if w.o.Store == nil {
		return Digest(data), nil
	}
	d, err := w.o.Store.put(data, false, false)
	if err != nil {
		return d, errs.Wrap(errs.CodeOf(err), err, "keep a pre-image before the job: %v", errs.From(err).Message)
	}
	return d, nil
}

// isGit reports whether rel is or lies in a .git directory (or file).
func isGit(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if c == ".git" {
			return true
		}
	}
	return false
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// readSame reads the regular file at abs that fi describes, refusing one
// swapped between the lstat and the open.
func readSame(abs string, fi fs.FileInfo) ([]byte, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi, st) || !st.Mode().IsRegular() {
		return nil, errors.New("the file changed while it was read")
	}
	return io.ReadAll(f)
}

// Delta is one path that differs between two trees: its entry before and
// after (nil = absent).
type Delta struct {
	Path          string
	Before, After *Entry
}

// Diff returns the paths that differ between before and after, sorted: a
// path added, removed, or whose kind, content or permission bits changed
// (a directory's content is its entries: only its existence and mode
// count).
func Diff(before, after *Tree) []Delta {
	var out []Delta
	i, j := 0, 0
	b, a := before.Entries, after.Entries
	for i < len(b) || j < len(a) {
		switch {
		case j >= len(a) || (i < len(b) && b[i].Path < a[j].Path):
			out = append(out, Delta{Path: b[i].Path, Before: &b[i]})
			i++
		case i >= len(b) || a[j].Path < b[i].Path:
			out = append(out, Delta{Path: a[j].Path, After: &a[j]})
			j++
		default:
			if !sameEntry(b[i], a[j]) {
				out = append(out, Delta{Path: b[i].Path, Before: &b[i], After: &a[j]})
			}
			i++
			j++
		}
	}
	return out
}

func sameEntry(x, y Entry) bool {
	if x.Kind != y.Kind || x.Mode != y.Mode {
		return false
	}
	if x.Kind == KindDir {
		return true
	}
	if x.NotKept != "" || y.NotKept != "" {
		// Not read: the stat tells whether it changed.
		return x.NotKept == y.NotKept && x.Ino == y.Ino && x.Size == y.Size && x.Mtime == y.Mtime && x.Ctime == y.Ctime
	}
	return x.SHA256 == y.SHA256
}

// SaveTree writes t to file (0600, fsynced, renamed into place).
func SaveTree(file string, t *Tree) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return errs.Wrap(errs.Internal, err, "save the job's tree: %v", err)
	}
	return SaveJSON(file, t, "the job's tree")
}

// SaveJSON writes v as JSON to file, all or nothing: 0600, fsynced,
// renamed into place. what names it in errors ("the job's tree").
func SaveJSON(file string, v any, what string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "encode %s: %v", what, err)
	}
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "save %s: %v", what, err)
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return errs.Wrap(errs.StorageFull, err, "save %s: %v", what, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return errs.Wrap(errs.Internal, err, "save %s: %v", what, err)
	}
	return nil
}

// LoadTree reads a tree SaveTree wrote.
func LoadTree(file string) (*Tree, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var t Tree
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decode %s: %w", file, err)
	}
	return &t, nil
}

// TreeHash is one digest of a tree's paths, kinds, modes and contents:
// two trees with the same hash hold the same files byte for byte.
func TreeHash(t *Tree) string {
	h := sha256.New()
	for _, e := range t.Entries {
		fmt.Fprintf(h, "%s\x00%s\x00%o\x00%s\x00", e.Path, e.Kind, e.Mode, e.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}
