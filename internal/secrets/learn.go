package secrets

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
)

const (
	// MaxFileBytes is how much of one secret file (or blob) Learn reads.
	MaxFileBytes = 256 << 10
	// maxLearnBytes bounds what one Learn call reads in all.
	maxLearnBytes = 64 << 20
	// maxPathspecs: above this many files, Learn lists the whole index and
	// HEAD tree and filters them, rather than passing one pathspec each.
	maxPathspecs = 64
)

// Learn returns the distinct values (sorted) held by the secret files of the
// checkout at root, given as slash-separated paths relative to root. Each
// file is read from three places: the work tree (a regular file, at most
// [MaxFileBytes]; one that cannot be opened, or only through a symlink that
// leaves root, is skipped), the index (all stages) and HEAD (through
// git; a path absent from either, an unborn HEAD or a root outside any
// repository is not an error). A path that names a directory in the index
// or HEAD stands for the files below it. With a nil git only the work tree
// is read.
//
// The values are those of KEY=VALUE, export KEY=VALUE, KEY = VALUE and YAML
// KEY: VALUE lines (unquoted, with a trailing " # comment" removed; quoted
// values may span lines and are also kept unescaped), JSON string values of
// keys, PEM bodies (joined, and each line of 16 characters or more), lines
// made of a single token of 16 characters or more, URL and .netrc
// passwords, and the password fields of .pgpass and .htpasswd. Values
// shorter than 6 bytes are dropped. At most 64 MiB are read and 20,000
// values kept in all.
//
// On a failure Learn still returns the values it found, with the first
// error. Neither values nor file contents appear in errors.
func Learn(ctx context.Context, git *gitx.Git, root string, files []string) ([]string, error) {
	return learn(ctx, git, root, files, nil, false)
}

// learn is Learn; with listed, the blobs of the index and HEAD are taken
// from tracked (every regular file at or below a secret path there, as
// trackedSecrets lists them) instead of listed again.
func learn(ctx context.Context, git *gitx.Git, root string, files []string, tracked []blob, listed bool) ([]string, error) {
	root = filepath.Clean(root)
	paths := slices.Clone(files)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	for _, p := range paths {
		if !validRel(p) {
			return nil, errs.New(errs.InvalidArgument, "learn secrets: %q is not a clean relative path", p)
		}
	}
	l := learner{vs: newValueSet(), budget: maxLearnBytes, seen: make(map[string]bool)}
	tree, err := os.OpenRoot(root)
	if err != nil {
		return nil, errs.Wrap(errs.NotFound, err, "learn secrets: open %q: %v", root, errText(err))
	}
	defer tree.Close()
	for _, rel := range paths {
		if err := ctx.Err(); err != nil {
			return l.vs.sorted(), ctxErr(err)
		}
		b, complete, err := readRegular(tree, filepath.FromSlash(rel), min(MaxFileBytes, l.budget))
		if err != nil {
			l.note(errs.Wrap(errs.Internal, err, "learn secrets: read %q: %v", rel, errText(err)))
			continue
		}
		if b == nil {
			continue
		}
		l.budget -= len(b)
		extract(rel, string(b), l.vs)
		if complete {
			// The index or HEAD usually holds the same content: skip it.
			l.seen[blobID(sha1.New(), b)] = true
			l.seen[blobID(sha256.New(), b)] = true
		}
	}
	if git != nil {
		var blobs []blob
		if listed {
			for _, b := range tracked {
				if wanted(paths, b.path) {
					blobs = append(blobs, b)
				}
			}
		} else {
			var err error
			blobs, err = trackedBlobs(ctx, git, root, paths)
			l.note(err)
		}
		for _, bl := range blobs {
			if l.seen[bl.oid] {
				continue
			}
			l.seen[bl.oid] = true
			if l.budget <= 0 {
				break
			}
			out, _, err := git.Run(ctx, root, min(MaxFileBytes, l.budget), "cat-file", "blob", bl.oid)
			if err != nil {
				if cerr := ctx.Err(); cerr != nil {
					return l.vs.sorted(), ctxErr(cerr)
				}
				if errs.CodeOf(err) != errs.NotFound {
					l.note(err)
				}
				continue
			}
			l.budget -= len(out)
			extract(bl.path, string(out), l.vs)
		}
	}
	return l.vs.sorted(), l.err
}

type learner struct {
	vs     *valueSet
	budget int
	seen   map[string]bool // blob ids already parsed
	err    error           // the first error
}

func (l *learner) note(err error) {
	if l.err == nil && err != nil {
		l.err = err
	}
}

// validRel reports whether p is a clean slash-separated relative path
// inside the root.
func validRel(p string) bool {
	return p != "" && p != "." && !strings.ContainsRune(p, 0) && !strings.Contains(p, "\\") &&
		filepath.IsLocal(filepath.FromSlash(p)) && filepath.ToSlash(filepath.Clean(filepath.FromSlash(p))) == p
}

// readRegular reads at most limit bytes of the regular file at name in
// tree. It returns nil, nil when the file cannot be opened (missing, not a
// regular file, unreadable, or behind a symlink that leaves the tree);
// complete reports that the whole file was read.
func readRegular(tree *os.Root, name string, limit int) (b []byte, complete bool, err error) {
	if limit <= 0 {
		return nil, false, nil
	}
	f, err := openRegular(tree, name)
	if err != nil {
		return nil, false, nil
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	if len(b) > limit {
		return b[:limit], false, nil
	}
	return b, true, nil
}

var errNotRegular = errors.New("not a regular file")

// checkRegular returns f if it is a regular file, and closes it otherwise.
func checkRegular(f *os.File, err error) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// errText describes err without the path (which the message already names).
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

func ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errs.Wrap(errs.Timeout, err, "learn secrets: timed out")
	}
	return errs.Wrap(errs.Cancelled, err, "learn secrets: cancelled")
}

// blobID returns git's object id of a blob with content b under h (SHA-1
// or SHA-256 repositories).
func blobID(h hash.Hash, b []byte) string {
	gitx.WriteBlobHeader(h, int64(len(b)))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// blob is a file in the index or HEAD.
type blob struct{ oid, path string }

// trackedBlobs lists the blobs of paths (or below them) in the index, all
// stages, and in HEAD. Outside a repository, and for an unborn HEAD, the
// list is empty.
func trackedBlobs(ctx context.Context, git *gitx.Git, root string, paths []string) ([]blob, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	var specs []string
	if len(paths) <= maxPathspecs {
		specs = make([]string, len(paths))
		for i, p := range paths {
			specs[i] = ":(literal)" + p
		}
	}
	keep := func(p string) bool { return specs != nil || wanted(paths, p) }

	var blobs []blob
	out, _, err := git.Run(ctx, root, 0, append([]string{"ls-files", "-s", "-z", "--"}, specs...)...)
	if err != nil {
		if errs.CodeOf(err) == errs.NotAGitRepository {
			return nil, nil
		}
		return nil, err
	}
	// "<mode> <oid> <stage>\t<path>"
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if ok && len(f) == 3 && isFileMode(f[0]) && validOID(f[1]) && keep(string(p)) {
			blobs = append(blobs, blob{f[1], string(p)})
		}
	}
	out, _, err = git.Run(ctx, root, 0, append([]string{"ls-tree", "-r", "-z", "HEAD", "--"}, specs...)...)
	if err != nil {
		if errs.CodeOf(err) == errs.NotFound {
			return blobs, nil // unborn HEAD
		}
		return blobs, err
	}
	// "<mode> <type> <oid>\t<path>"
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if ok && len(f) == 3 && f[1] == "blob" && isFileMode(f[0]) && validOID(f[2]) && keep(string(p)) {
			blobs = append(blobs, blob{f[2], string(p)})
		}
	}
	return blobs, nil
}

// wanted reports whether p is one of paths (sorted) or below one of them.
func wanted(paths []string, p string) bool {
	for {
		if _, ok := slices.BinarySearch(paths, p); ok {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// isFileMode reports a regular file mode (not a symlink or gitlink).
func isFileMode(m string) bool { return m == "100644" || m == "100755" || m == "100664" }

func validOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
