package readfile

import (
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// Listing limits.
const (
	DefaultListEntries = 500
	MaxListEntries     = 2000
	// maxListScan bounds the names of one directory read before sorting:
	// a bigger directory is listed from its first maxListScan names (in
	// the order the file system gives them), and says so (Truncated).
	maxListScan = 20000
)

// ListRequest is a list_dir call.
type ListRequest struct {
	Path       string // relative to the root; "" or "." is the root
	MaxEntries int    // 0 = DefaultListEntries; at most MaxListEntries
}

// Entry is one entry of a listing.
type Entry struct {
	Name string `json:"name"`
	// Type is file, dir, symlink (not followed) or other.
	Type string `json:"type"`
	// Size is a regular file's size in bytes.
	Size int64 `json:"size,omitempty"`
}

// Listing is a directory's entries, sorted by name.
type Listing struct {
	Path    string  `json:"path"` // rel, slash-separated; "." for the root
	Entries []Entry `json:"entries"`
	// Truncated says there are more entries than Entries holds.
	Truncated bool `json:"truncated,omitempty"`
	// Omitted counts what is left out as search and glob leave it out:
	// secret paths (the denylist), .git, and harnessd's own temp files.
	Omitted int `json:"omitted,omitempty"`
}

// List lists the directory req.Path under root. The path is resolved as
// Read resolves a file (escapes, symlinks leading outside, secret paths
// and .git are refused with the pathsafe codes; a missing path is
// NOT_FOUND); a file is INVALID_ARGUMENT naming read_file. The directory
// is opened with O_NOFOLLOW|O_DIRECTORY and must be the one resolution
// saw (device and inode), else UNAVAILABLE (it changed meanwhile). Its
// entries are not followed: a symlink is listed as one, with no size.
func List(root *pathsafe.Root, req ListRequest) (Listing, error) {
	if root == nil {
		return Listing{}, errs.New(errs.InvalidArgument, "no repository root")
	}
	limit := req.MaxEntries
	switch {
	case limit == 0:
		limit = DefaultListEntries
	case limit < 0 || limit > MaxListEntries:
		return Listing{}, errs.New(errs.InvalidArgument, "max_entries must be between 1 and %d (default %d)", MaxListEntries, DefaultListEntries).
			With("max_entries", req.MaxEntries)
	}
	p := req.Path
	if p == "" {
		p = "."
	}
	abs, rel, leaf, err := root.ResolveReadLeaf(p)
	if err != nil {
		return Listing{}, err
	}
	if !leaf.Mode.IsDir() {
		return Listing{}, errs.New(errs.InvalidArgument, "path %q is not a directory: read a file with read_file", p).With("path", p)
	}
	if testHookBeforeOpen != nil {
		testHookBeforeOpen(abs)
	}
	fd, err := openDir(abs)
	if err != nil {
		return Listing{}, openError(p, err)
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return Listing{}, errs.Wrap(errs.Internal, err, "fstat %q: %v", p, err)
	}
	if uint64(st.Dev) != leaf.Dev || uint64(st.Ino) != leaf.Ino {
		return Listing{}, errs.New(errs.Unavailable, "path %q changed while it was being opened; retry", p).With("path", p)
	}
	out := Listing{Path: rel, Entries: []Entry{}}
	var ents []os.DirEntry
	for len(ents) < maxListScan {
		batch, err := f.ReadDir(1024)
		ents = append(ents, batch...)
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return Listing{}, errs.Wrap(errs.Internal, err, "read the directory %q: %v", p, err)
		}
	}
	if len(ents) >= maxListScan {
		if more, _ := f.ReadDir(1); len(more) > 0 {
			out.Truncated = true
		}
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		name := e.Name()
		if name == ".git" || root.Excluded(childRel(rel, name)) || !e.IsDir() && patch.IsTempName(name) {
			out.Omitted++
			continue
		}
		if len(out.Entries) == limit {
			out.Truncated = true // and the rest is still counted in Omitted
			continue
		}
		out.Entries = append(out.Entries, entryOf(fd, e))
	}
	return out, nil
}

// childRel is the path of name in the directory rel ("." the root).
func childRel(rel, name string) string {
	if rel == "." || rel == "" {
		return name
	}
	return rel + "/" + name
}

// entryOf describes e, a member of the directory dirfd; a regular file's
// size comes from an fstatat that does not follow a symlink.
func entryOf(dirfd int, e os.DirEntry) Entry {
	d := Entry{Name: e.Name(), Type: TypeName(e.Type())}
	if d.Type == "file" {
		var st unix.Stat_t
		if fstatat(dirfd, e.Name(), &st) == nil {
			d.Size = st.Size
		}
	}
	return d
}

// TypeName is how a listing names an entry of type t (os.DirEntry.Type,
// not followed): dir, symlink, file or other.
func TypeName(t os.FileMode) string {
	switch {
	case t.IsDir():
		return "dir"
	case t&os.ModeSymlink != 0:
		return "symlink"
	case t.IsRegular():
		return "file"
	}
	return "other"
}

func openDir(abs string) (int, error) {
	for {
		fd, err := syscall.Open(abs, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}
