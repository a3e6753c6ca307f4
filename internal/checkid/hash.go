package checkid

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
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
)

// maxHashWorkers bounds the goroutines hashing files of one revision.
const maxHashWorkers = 8

// raceRetries is how often a path that changes type or identity while it is
// being hashed is retried before giving up.
const raceRetries = 3

var bufPool = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// errRaced says the path changed between its lstat and its open.
var errRaced = errors.New("checkid: path changed while it was hashed")

// hasher computes the Dirty values of one work tree.
type hasher struct {
	g        *gitx.Git
	root     string
	r        *os.Root
	maxBytes int64
}

// hashAll returns the value of each entry ("" for paths whose work tree state
// equals HEAD), hashing with a small pool of workers.
func (h *hasher) hashAll(ctx context.Context, entries []dirtyEntry) ([]string, error) {
	values := make([]string, len(entries))
	workers := min(len(entries), maxHashWorkers, max(2, runtime.GOMAXPROCS(0)*2))
	if workers <= 1 {
		for i := range entries {
			v, err := h.value(ctx, &entries[i])
			if err != nil {
				return nil, err
			}
			values[i] = v
		}
		return values, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(entries) || wctx.Err() != nil {
					return
				}
				v, err := h.value(wctx, &entries[i])
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				values[i] = v
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		if err := ctx.Err(); err != nil {
			return nil, ctxError(err)
		}
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err)
	}
	return values, nil
}

// value returns the Dirty value of e, retrying a few times when the path
// changes under it.
func (h *hasher) value(ctx context.Context, e *dirtyEntry) (string, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return "", ctxError(err)
		}
		v, err := h.valueOnce(ctx, e)
		if !errors.Is(err, errRaced) {
			return v, err
		}
		if attempt+1 >= raceRetries {
			return "", errs.Wrap(errs.Unavailable, err, "%q kept changing while it was hashed", e.path)
		}
	}
}

func (h *hasher) valueOnce(ctx context.Context, e *dirtyEntry) (string, error) {
	fi, err := h.r.Lstat(e.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			if e.headKnown && isZeroOID(e.headOID) {
				// Not in HEAD and not in the work tree: nothing to
				// record (added to the index, then removed).
				return "", nil
			}
			return DirtyDeleted, nil
		}
		return "", errs.Wrap(errs.Unavailable, err, "cannot stat %q: %v", e.path, err)
	}
	mode := fi.Mode()
	switch {
	case e.submodule():
		if !mode.IsDir() {
			break // the submodule was replaced by a file or link
		}
		return h.submoduleValue(ctx, e)
	case mode.IsDir():
		if e.untracked && e.dir {
			return h.nestedRepoValue(ctx, e)
		}
		// A tracked file replaced by a directory: the file is gone; the
		// directory's files are listed on their own.
		return DirtyDeleted, nil
	}
	switch {
	case mode&fs.ModeSymlink != 0:
		target, err := h.r.Readlink(e.path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EINVAL) {
				return "", errRaced
			}
			return "", errs.Wrap(errs.Unavailable, err, "cannot read link %q: %v", e.path, err)
		}
		if sameAsHead(e, "120000", []byte(target), int64(len(target))) {
			return "", nil
		}
		sum := sha256.Sum256([]byte(target))
		return DirtySymlinkPrefix + "sha256:" + hex.EncodeToString(sum[:]), nil
	case mode.IsRegular():
		return h.fileValue(ctx, e, fi)
	case mode.IsDir():
		return DirtyDeleted, nil
	default:
		return DirtySpecialPrefix + mode.Type().String(), nil
	}
}

// sameAsHead reports whether content (size bytes) in the given git mode is
// exactly the blob HEAD has at e's path.
func sameAsHead(e *dirtyEntry, mode string, content []byte, size int64) bool {
	if !e.headKnown || e.headMode != mode || isZeroOID(e.headOID) {
		return false
	}
	oh := blobHasher(e.headOID)
	if oh == nil {
		return false
	}
	gitx.WriteBlobHeader(oh, size)
	oh.Write(content)
	return hex.EncodeToString(oh.Sum(nil)) == e.headOID
}

// blobHasher returns the hash git uses for object ids of oid's length.
func blobHasher(oid string) hash.Hash {
	switch len(oid) {
	case 40:
		return sha1.New()
	case 64:
		return sha256.New()
	}
	return nil
}

// fileValue streams a regular file through sha256 (and, when HEAD has a
// blob at the path, through git's blob hash to spot content equal to HEAD).
func (h *hasher) fileValue(ctx context.Context, e *dirtyEntry, lfi fs.FileInfo) (string, error) {
	f, err := h.r.OpenFile(e.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
			return "", errRaced
		}
		return "", errs.Wrap(errs.Unavailable, err, "cannot open %q: %v", e.path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "cannot stat %q: %v", e.path, err)
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, lfi) {
		return "", errRaced
	}
	size := fi.Size()
	if size > h.maxBytes {
		return "", tooBig(e.path, size, h.maxBytes)
	}
	exec := fi.Mode().Perm()&0o100 != 0
	gitMode := "100644"
	if exec {
		gitMode = "100755"
	}
	sum := sha256.New()
	var oh hash.Hash
	if e.headKnown && e.headMode == gitMode && !isZeroOID(e.headOID) {
		if oh = blobHasher(e.headOID); oh != nil {
			gitx.WriteBlobHeader(oh, size)
		}
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return "", ctxError(err)
		}
		n, rerr := f.Read(buf)
		if n > 0 {
			total += int64(n)
			if total > h.maxBytes {
				return "", tooBig(e.path, total, h.maxBytes)
			}
			sum.Write(buf[:n])
			if oh != nil {
				oh.Write(buf[:n])
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", errs.Wrap(errs.Unavailable, rerr, "cannot read %q: %v", e.path, rerr)
		}
	}
	if oh != nil && total == size && hex.EncodeToString(oh.Sum(nil)) == e.headOID {
		return "", nil
	}
	v := "sha256:" + hex.EncodeToString(sum.Sum(nil))
	if exec {
		v = DirtyExecPrefix + v
	}
	return v, nil
}

func tooBig(path string, size, limit int64) error {
	return errs.New(errs.PolicyDenied, "dirty file %q is %d bytes, more than the %d allowed", path, size, limit).
		With("path", path).With("size", size).With("limit", limit)
}

// submoduleValue records a submodule's checked-out commit: the index's
// gitlink unless status says the submodule's HEAD moved, in which case one
// rev-parse inside it finds the commit. Nothing inside it is hashed.
func (h *hasher) submoduleValue(ctx context.Context, e *dirtyEntry) (string, error) {
	oid := e.indexOID
	if e.sub[1] == 'C' || isZeroOID(oid) {
		head, err := h.headOf(ctx, e.path)
		if err != nil {
			return "", err
		}
		oid = head
	}
	if e.sub[2] == '.' && e.sub[3] == '.' && e.headKnown && e.headMode == "160000" && oid == e.headOID {
		return "", nil
	}
	v := DirtySubmodulePrefix + oid
	if e.sub[2] == 'M' {
		v += "+modified"
	}
	if e.sub[3] == 'U' {
		v += "+untracked"
	}
	return v, nil
}

// nestedRepoValue records the HEAD of an untracked nested repository.
func (h *hasher) nestedRepoValue(ctx context.Context, e *dirtyEntry) (string, error) {
	head, err := h.headOf(ctx, e.path)
	if err != nil {
		return "", err
	}
	return DirtyRepoPrefix + head, nil
}

// headOf returns the HEAD commit of the repository at rel, "unborn", or
// "unknown" when rel has no .git (git would find the enclosing repository).
func (h *hasher) headOf(ctx context.Context, rel string) (string, error) {
	if _, err := h.r.Lstat(path.Join(rel, ".git")); err != nil {
		return "unknown", nil
	}
	out, _, err := h.g.Run(ctx, filepath.Join(h.root, filepath.FromSlash(rel)), 4096, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil {
		switch errs.CodeOf(err) {
		case errs.Cancelled, errs.Timeout, errs.Unavailable, errs.PolicyDenied:
			return "", err
		}
		// No commit yet (or not a repository after all).
		return "unborn", nil
	}
	oid := string(bytes.TrimSpace(out))
	if !isOID(oid) {
		return "unborn", nil
	}
	return oid, nil
}

// ctxError codes a context error.
func ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errs.Wrap(errs.Timeout, err, "computing the content revision timed out")
	}
	return errs.Wrap(errs.Cancelled, err, "computing the content revision was cancelled")
}
