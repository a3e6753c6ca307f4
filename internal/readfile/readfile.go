package readfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// Defaults applied when a Limits field is zero (DESIGN.md section 7).
const (
	DefaultMaxBytes = 256 << 10
	DefaultMaxLines = 2000
)

// sniffLen is how much of the head of a file is examined for binary content.
const sniffLen = 8 << 10

// MaxFileBytes is the largest file Read reads: the SHA-256 covers the whole
// file, and reading a larger one (a 20 GiB sparse file, say) would hold a
// Fast Path call for many seconds.
const MaxFileBytes = 1 << 30

// chunkSize is the streaming read size; the SHA-256 covers the whole file.
const chunkSize = 64 << 10

// Limits caps the window a single Read may return. Zero (or negative) fields
// mean the defaults, DefaultMaxBytes and DefaultMaxLines.
type Limits struct {
	MaxBytes int
	MaxLines int
}

// Request is a read_file call.
type Request struct {
	Path       string `json:"path"`
	OffsetLine int    `json:"offset_line,omitempty"` // 1-based first line, 0 = 1
	MaxLines   int    `json:"max_lines,omitempty"`   // 0 = limit; larger than limit is clamped to the limit
	MaxBytes   int    `json:"max_bytes,omitempty"`
}

// Result is the answer to a read_file call.
type Result struct {
	Path           string `json:"path"`                       // rel, slash-separated
	Content        string `json:"content"`                    // the window of lines (valid UTF-8 text), "" for binary
	Binary         bool   `json:"binary"`                     // NUL or invalid UTF-8 in the first 8 KiB
	SizeBytes      int64  `json:"size_bytes"`                 // bytes read, all hashed
	SHA256         string `json:"sha256"`                     // hex digest of the WHOLE file
	StartLine      int    `json:"start_line"`                 // first line of the window (the requested offset)
	EndLine        int    `json:"end_line"`                   // last line included (0 if none)
	TotalLines     int    `json:"total_lines"`                // lines in the file; a last line without "\n" counts
	Truncated      bool   `json:"truncated"`                  // the window stopped early because of MaxLines or MaxBytes (more content follows)
	NextOffsetLine int    `json:"next_offset_line,omitempty"` // where to continue when Truncated
}

// testHookBeforeOpen, when set by tests, runs between resolution and open.
var testHookBeforeOpen func(abs string)

var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// Read reads a window of lines of req.Path under root.
//
// The path is resolved with root.ResolveReadLeaf, so escapes, symlinks leading
// outside, secret paths and .git paths are refused with the pathsafe codes.
// A directory gives errs.IsDirectory, a missing file errs.NotFound, and a
// non-regular file (fifo, socket, device) errs.InvalidArgument; such files are
// never opened, and the open itself uses O_NONBLOCK|O_NOFOLLOW so a file
// swapped for a fifo or symlink meanwhile cannot block or redirect it. The
// opened descriptor's device and inode must equal those seen during
// resolution, which closes the check-then-open race (a directory swapped for a
// symlink in between); on a mismatch the whole resolution is redone, up to
// three times, after which errs.Unavailable is returned.
//
// The file is opened once, fstat'ed and streamed in 64 KiB chunks: the SHA-256
// and line count cover the whole file (as of the fstat: bytes appended later
// are not read), while memory holds at most one chunk plus the window.
//
// The window starts at OffsetLine and holds whole lines (with their "\n" or
// "\r\n" kept as-is) up to MaxLines lines and MaxBytes bytes. When a limit
// stops it early, Truncated is set and NextOffsetLine names the next line. A
// single line longer than MaxBytes is cut at MaxBytes (on a UTF-8 boundary);
// the window then ends with that line and NextOffsetLine skips the rest of it.
// An offset past the end gives an empty window with TotalLines set. Binary
// files give empty Content and zero line numbers. Invalid UTF-8 after the
// first 8 KiB of a text file is replaced with U+FFFD in Content.
func Read(root *pathsafe.Root, req Request, lim Limits) (Result, error) {
	if root == nil {
		return Result{}, errs.New(errs.InvalidArgument, "no repository root")
	}
	start, maxLines, maxBytes, err := window(req, lim)
	if err != nil {
		return Result{}, err
	}
	var errChanged error
	for attempt := 0; attempt < openAttempts; attempt++ {
		res, changed, err := readOnce(root, req, start, maxLines, maxBytes)
		if !changed {
			return res, err
		}
		errChanged = err
	}
	return Result{}, errChanged
}

// openAttempts bounds how often Read resolves and opens again when the file
// changes identity between resolution and open (an editor's atomic save).
const openAttempts = 3

// readOnce resolves, opens and reads once. changed reports that the opened file
// was not the resolved one, which is worth another attempt.
func readOnce(root *pathsafe.Root, req Request, start, maxLines, maxBytes int) (res Result, changed bool, err error) {
	res, err = readResolved(root, req, start, maxLines, maxBytes)
	var e *errs.Error
	if errors.As(err, &e) && e.Code == errs.Unavailable {
		return Result{}, true, err
	}
	return res, false, err
}

func readResolved(root *pathsafe.Root, req Request, start, maxLines, maxBytes int) (Result, error) {
	abs, rel, leaf, err := root.ResolveReadLeaf(req.Path)
	if err != nil {
		return Result{}, err
	}
	if err := checkType(req.Path, leaf.Mode); err != nil {
		return Result{}, err
	}
	if testHookBeforeOpen != nil {
		testHookBeforeOpen(abs)
	}
	fd, err := open(abs)
	if err != nil {
		return Result{}, openError(req.Path, err)
	}
	defer syscall.Close(fd)

	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return Result{}, errs.Wrap(errs.Internal, err, "fstat %q: %v", req.Path, err)
	}
	if err := checkType(req.Path, pathsafe.FileType(st.Mode)); err != nil {
		return Result{}, err
	}
	// The file as opened: a second name of the inode (a hard link) may be
	// outside the root or a secret path, and a path check sees only this
	// one (the one check of every surface, pathsafe.Root.CheckLeaf).
	if err := root.CheckLeafStat(rel, &st); err != nil {
		return Result{}, err
	}
	if uint64(st.Dev) != leaf.Dev || uint64(st.Ino) != leaf.Ino {
		// Something on the path was replaced between resolution and open
		// (for example a directory swapped for a symlink): what was opened
		// is not the file that was checked.
		return Result{}, errs.New(errs.Unavailable, "path %q kept changing while it was being opened; retry", req.Path).With("path", req.Path)
	}

	if st.Size > MaxFileBytes {
		return Result{}, errs.New(errs.InvalidArgument, "path %q is %d bytes, larger than the %d read_file reads whole (it hashes the file): read a part with run_command, e.g. head -c or sed -n", req.Path, st.Size, MaxFileBytes).
			With("path", req.Path).With("size_bytes", st.Size)
	}
	res := Result{Path: rel}
	w := newScanner(start, maxLines, maxBytes, st.Size)
	h := sha256.New()
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	buf := *bp

	var total int64
	first := true
	for {
		n, eof, err := readFull(fd, buf, st.Size-total, st.Size > 0)
		if err != nil {
			return Result{}, errs.Wrap(errs.Internal, err, "read %q: %v", req.Path, err)
		}
		chunk := buf[:n]
		if first {
			first = false
			res.Binary = isBinary(chunk, !eof)
			w.binary = res.Binary
		}
		if n > 0 {
			h.Write(chunk)
			w.feed(chunk)
			total += int64(n)
		}
		if eof {
			break
		}
		if total > MaxFileBytes {
			// It grew past the limit while being read.
			return Result{}, errs.New(errs.InvalidArgument, "path %q grew past the %d bytes read_file reads whole", req.Path, MaxFileBytes).With("path", req.Path)
		}
	}

	res.SizeBytes = total
	res.SHA256 = hex.EncodeToString(h.Sum(nil))
	if res.Binary {
		return res, nil
	}
	w.finish(&res)
	return res, nil
}

// window validates the request against the limits.
func window(req Request, lim Limits) (start, maxLines, maxBytes int, err error) {
	switch {
	case req.OffsetLine < 0:
		return 0, 0, 0, errs.New(errs.InvalidArgument, "offset_line must be >= 0, got %d", req.OffsetLine)
	case req.MaxLines < 0:
		return 0, 0, 0, errs.New(errs.InvalidArgument, "max_lines must be >= 0, got %d", req.MaxLines)
	case req.MaxBytes < 0:
		return 0, 0, 0, errs.New(errs.InvalidArgument, "max_bytes must be >= 0, got %d", req.MaxBytes)
	}
	maxLines, maxBytes = lim.MaxLines, lim.MaxBytes
	if maxLines <= 0 {
		maxLines = DefaultMaxLines
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if req.MaxLines > 0 && req.MaxLines < maxLines {
		maxLines = req.MaxLines
	}
	if req.MaxBytes > 0 && req.MaxBytes < maxBytes {
		maxBytes = req.MaxBytes
	}
	start = max(req.OffsetLine, 1)
	return start, maxLines, maxBytes, nil
}

func checkType(p string, typ fs.FileMode) error {
	switch {
	case typ.IsRegular():
		return nil
	case typ.IsDir():
		return errs.New(errs.IsDirectory, "path %q is a directory: list it with list_dir", p).With("path", p)
	default:
		return errs.New(errs.InvalidArgument, "path %q is not a regular file (%s)", p, typeName(typ)).With("path", p)
	}
}

func typeName(typ fs.FileMode) string {
	switch {
	case typ&fs.ModeNamedPipe != 0:
		return "fifo"
	case typ&fs.ModeSocket != 0:
		return "socket"
	case typ&fs.ModeDevice != 0:
		return "device"
	case typ&fs.ModeSymlink != 0:
		return "symlink"
	default:
		return "irregular file"
	}
}

func open(abs string) (int, error) {
	for {
		fd, err := syscall.Open(abs, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func fstat(fd int, st *syscall.Stat_t) error {
	for {
		err := syscall.Fstat(fd, st)
		if err != syscall.EINTR {
			return err
		}
	}
}

func openError(p string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		return errs.Wrap(errs.NotFound, err, "path %q does not exist", p).With("path", p)
	case errors.Is(err, syscall.ELOOP):
		return errs.Wrap(errs.PathNotAllowed, err, "path %q changed into a symbolic link while being opened", p).With("path", p)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return errs.Wrap(errs.PathNotAllowed, err, "permission denied opening %q", p).With("path", p)
	case errors.Is(err, syscall.ENXIO):
		return errs.Wrap(errs.InvalidArgument, err, "path %q is not a regular file", p).With("path", p)
	default:
		return errs.Wrap(errs.Internal, err, "open %q: %v", p, err)
	}
}

// readFull reads into buf until it is full, want bytes were read (when
// bounded), or EOF. eof reports that the file has no more bytes to read.
func readFull(fd int, buf []byte, want int64, bounded bool) (n int, eof bool, err error) {
	limit := len(buf)
	if bounded && want < int64(limit) {
		if want <= 0 {
			return 0, true, nil
		}
		limit = int(want)
	}
	for n < limit {
		m, err := syscall.Read(fd, buf[n:limit])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, false, err
		}
		if m == 0 {
			return n, true, nil
		}
		n += m
	}
	return n, bounded && want == int64(n), nil
}

// isBinary reports whether the head of a file (its first chunk) looks binary:
// a NUL byte or invalid UTF-8 in the first sniffLen bytes. more says the file
// continues past chunk, so a rune cut at the sniff boundary is not an error.
func isBinary(chunk []byte, more bool) bool {
	head := chunk
	if len(head) > sniffLen {
		head = head[:sniffLen]
		more = true
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if more {
		head = trimIncompleteRune(head)
	}
	return !utf8.Valid(head)
}

// trimIncompleteRune drops a trailing partial UTF-8 sequence, if any.
func trimIncompleteRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b // ASCII: nothing partial after it
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
