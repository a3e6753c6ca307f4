package fleet

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// A job's uncommitted state (docs/fleet.md, Jobs): what a worktree job
// of a dirty checkout gets on top of the checkout's commit, shipped at
// job_start as one blob so that another node can rebuild the job's
// inputs when the job's node dies.
//
// The blob is a gzip'd tar with sorted entries and no times, owners or
// names of users (the same state encodes to the same bytes):
//
//	patch            the tracked changes against the commit (git diff --binary --full-index)
//	files/<dir>/     a directory of an untracked file, with its mode
//	files/<path>     an untracked file (its mode), or symlink (its target)

// StateMax bounds a job's uncommitted state: the patch and the untracked
// files, before compression. A larger state is not shipped (its job runs
// on its node only).
const StateMax = 64 << 20

// State is a checkout's uncommitted state as a worktree job gets it.
type State struct {
	// Patch is `git diff --binary --full-index` of the tracked changes
	// against the commit (staged and unstaged: deletions, mode changes,
	// symlinks and binary files included); empty if none.
	Patch []byte
	// Files are the untracked, non-ignored files and their directories,
	// sorted by name.
	Files []StateFile
}

// StateFile is one untracked entry of a State.
type StateFile struct {
	Name string      // slash-separated, relative to the checkout's root
	Mode fs.FileMode // fs.ModeDir or fs.ModeSymlink, or none (a regular file); plus the permission bits
	Data []byte      // a file's content, a symlink's target; nil for a directory
}

// Empty reports whether s carries nothing.
func (s State) Empty() bool { return len(s.Patch) == 0 && len(s.Files) == 0 }

// size is the bytes s carries.
func (s State) size() int64 {
	n := int64(len(s.Patch))
	for _, f := range s.Files {
		n += int64(len(f.Data)) + int64(len(f.Name))
	}
	return n
}

const (
	statePatchName = "patch"
	stateFilesDir  = "files/"
)

// EncodeState answers the blob of s (see the format above); s.Files must
// be valid names (ValidStateName), each once.
func EncodeState(s State) ([]byte, error) {
	files := slices.Clone(s.Files)
	slices.SortFunc(files, func(a, b StateFile) int { return strings.Compare(a.Name, b.Name) })
	if err := checkState(State{Patch: s.Patch, Files: files}); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	put := func(h *tar.Header, data []byte) error {
		h.Format, h.ModTime, h.Uid, h.Gid = tar.FormatPAX, time.Unix(0, 0), 0, 0
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	var err error
	if len(s.Patch) > 0 {
		err = put(&tar.Header{Typeflag: tar.TypeReg, Name: statePatchName, Mode: 0o644, Size: int64(len(s.Patch))}, s.Patch)
	}
	for _, f := range files {
		if err != nil {
			break
		}
		perm := int64(f.Mode.Perm())
		switch {
		case f.Mode.IsDir():
			err = put(&tar.Header{Typeflag: tar.TypeDir, Name: stateFilesDir + f.Name + "/", Mode: perm}, nil)
		case f.Mode&fs.ModeSymlink != 0:
			err = put(&tar.Header{Typeflag: tar.TypeSymlink, Name: stateFilesDir + f.Name, Linkname: string(f.Data), Mode: 0o777}, nil)
		default:
			err = put(&tar.Header{Typeflag: tar.TypeReg, Name: stateFilesDir + f.Name, Mode: perm, Size: int64(len(f.Data))}, f.Data)
		}
	}
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: encode a job's uncommitted state: %v", err)
	}
	return buf.Bytes(), nil
}

// DecodeState answers the State of blob, refusing anything EncodeState
// does not make: an entry of another type or name, a name that is not
// clean and relative or that reaches into .git, an entry below a symlink
// of the state, a name twice, more than StateMax bytes.
func DecodeState(blob []byte) (State, error) {
	bad := func(format string, a ...any) (State, error) {
		return State{}, errs.New(errs.InvalidArgument, "fleet: a job's uncommitted state is malformed: "+format, a...)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return bad("not gzip (%v)", err)
	}
	tr := tar.NewReader(io.LimitReader(zr, 2*StateMax))
	var s State
	seen := map[string]bool{}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return bad("%v", err)
		}
		if h.Size < 0 || total+h.Size > StateMax {
			return bad("more than %d bytes", StateMax)
		}
		total += h.Size
		if h.Name == statePatchName && h.Typeflag == tar.TypeReg {
			if s.Patch != nil || len(s.Files) > 0 {
				return bad("the patch is not the first entry, or comes twice")
			}
			if s.Patch, err = io.ReadAll(tr); err != nil {
				return bad("%v", err)
			}
			continue
		}
		rest, ok := strings.CutPrefix(h.Name, stateFilesDir)
		if !ok {
			return bad("unexpected entry %q", h.Name)
		}
		f := StateFile{Name: strings.TrimSuffix(rest, "/"), Mode: fs.FileMode(h.Mode).Perm()}
		switch h.Typeflag {
		case tar.TypeDir:
			f.Mode |= fs.ModeDir
		case tar.TypeSymlink:
			f.Mode, f.Data = fs.ModeSymlink|0o777, []byte(h.Linkname)
		case tar.TypeReg:
			if strings.HasSuffix(rest, "/") {
				return bad("file entry %q ends in /", h.Name)
			}
			if f.Data, err = io.ReadAll(tr); err != nil {
				return bad("%v", err)
			}
			if f.Data == nil {
				f.Data = []byte{}
			}
		default:
			return bad("entry %q has type %q (only files, directories and symlinks)", h.Name, h.Typeflag)
		}
		if seen[f.Name] {
			return bad("%q comes twice", f.Name)
		}
		seen[f.Name] = true
		s.Files = append(s.Files, f)
	}
	if err := checkState(s); err != nil {
		return State{}, err
	}
	return s, nil
}

// checkState checks every name of s, that none is below a symlink of s
// and that the files are sorted and unique.
func checkState(s State) error {
	links := map[string]bool{}
	for i, f := range s.Files {
		if err := ValidStateName(f.Name); err != nil {
			return err
		}
		if i > 0 && s.Files[i-1].Name >= f.Name {
			return errs.New(errs.InvalidArgument, "fleet: a job's uncommitted state lists %q out of order or twice", f.Name)
		}
		for d := path.Dir(f.Name); d != "."; d = path.Dir(d) {
			if links[d] {
				return errs.New(errs.InvalidArgument, "fleet: a job's uncommitted state has %q below its symlink %q", f.Name, d)
			}
		}
		if f.Mode&fs.ModeSymlink != 0 {
			links[f.Name] = true
		}
	}
	if s.size() > StateMax {
		return errs.New(errs.InvalidArgument, "fleet: a job's uncommitted state is over %d bytes", StateMax)
	}
	return nil
}

// ValidStateName checks an untracked path of a State: slash-separated,
// clean, relative, no "..", no .git component (any case), no NUL.
func ValidStateName(name string) error {
	if name == "" || name == "." || strings.HasPrefix(name, "/") || path.Clean(name) != name || strings.ContainsRune(name, 0) {
		return errs.New(errs.InvalidArgument, "fleet: %q is not a clean relative path", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." || strings.EqualFold(part, ".git") {
			return errs.New(errs.InvalidArgument, "fleet: %q reaches outside the work tree or into .git", name)
		}
	}
	return nil
}
