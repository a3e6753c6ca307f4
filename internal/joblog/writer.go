package joblog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/redact"
)

const (
	// DefaultMaxBytes is the cap of a log when Create gets maxBytes 0.
	DefaultMaxBytes = 8 << 20
	// MinMaxBytes is the smallest cap Create accepts.
	MinMaxBytes = 4 << 10
	// MaxReadBytes bounds the data one Read returns.
	MaxReadBytes = 1 << 20

	// markerReserve is kept free in the compacted file for the marker.
	markerReserve = 128

	tailInfix = ".tail."
	idxSuffix = ".idx"
)

// Writer writes one redacted, size-capped log. It is an io.WriteCloser and
// safe for concurrent use: each Write is redacted and stored as a unit, but
// partial lines of concurrent writers can end up joined on one line.
type Writer struct {
	red     *redact.Writer
	sink    *sink
	written atomic.Int64

	mu     sync.Mutex
	closed bool
	err    error
}

// Create creates (or truncates) the log dir/name and returns its Writer. dir
// is created with mode 0700 when missing, the files with 0600. maxBytes caps
// the log (0 means DefaultMaxBytes; otherwise at least MinMaxBytes); see the
// package documentation for what is kept. Stale tail segments and index of
// an earlier log with the same name are removed.
func Create(dir, name string, maxBytes int64) (*Writer, error) {
	return CreateWith(dir, name, maxBytes, redact.Default())
}

// CreateWith is Create with the redactor of the log (the rules and, for a
// job of a checkout, the known values of its secret files).
func CreateWith(dir, name string, maxBytes int64, red *redact.Redactor) (*Writer, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errs.New(errs.InvalidArgument, "joblog: empty directory")
	}
	switch {
	case maxBytes == 0:
		maxBytes = DefaultMaxBytes
	case maxBytes < MinMaxBytes:
		return nil, errs.New(errs.InvalidArgument, "joblog: maxBytes %d is below the minimum %d", maxBytes, MinMaxBytes)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errs.Wrap(errs.Internal, err, "joblog: create directory: %v", err)
	}
	// The index first: a stale index must never describe the new file.
	if err := removeIfExists(filepath.Join(dir, name+idxSuffix)); err != nil {
		return nil, err
	}
	segs, err := listSegments(dir, name)
	if err != nil {
		return nil, err
	}
	for _, s := range segs {
		if err := removeIfExists(s.path); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "joblog: create %s: %v", name, err)
	}
	headCap := maxBytes / 4
	s := &sink{
		dir:     dir,
		name:    name,
		max:     maxBytes,
		headCap: headCap,
		tailCap: maxBytes - headCap - markerReserve,
		head:    f,
	}
	return &Writer{red: red.Writer(s), sink: s}, nil
}

// Write redacts p and appends it to the log. It returns len(p) unless the
// log failed or was closed.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errs.New(errs.InvalidArgument, "joblog: write to a closed log")
	}
	n, err := w.red.Write(p)
	w.written.Add(int64(n))
	return n, err
}

// Close flushes the redactor, compacts a capped log and closes the files.
// Closing twice returns the first result.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	w.err = errors.Join(w.red.Close(), w.sink.close())
	return w.err
}

// Written returns the number of bytes accepted, before redaction and capping.
func (w *Writer) Written() int64 { return w.written.Load() }

// Redactions returns the number of secrets redacted so far.
func (w *Writer) Redactions() int { return w.red.Count() }

// Stored returns the number of redacted bytes the log has received (its
// stream length, the total that Read reports).
func (w *Writer) Stored() int64 {
	w.sink.mu.Lock()
	defer w.sink.mu.Unlock()
	return w.sink.pos
}

// sink stores the redacted stream: the head file, then tail segments.
type sink struct {
	dir, name string
	max       int64
	headCap   int64
	tailCap   int64

	mu       sync.Mutex
	head     *os.File
	headSize int64 // bytes in the head file
	pos      int64 // stream bytes received
	capping  bool
	seg      *os.File
	segSize  int64
	segs     []int64 // starts of the segments on disk, oldest first
	err      error
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	if err := s.write(p); err != nil {
		s.err = errs.Wrap(errs.Internal, err, "joblog: write %s: %v", s.name, err)
		return 0, s.err
	}
	return len(p), nil
}

func (s *sink) write(p []byte) error {
	for len(p) > 0 {
		if !s.capping {
			if int64(len(p)) <= s.max-s.headSize {
				n, err := s.head.Write(p)
				s.headSize += int64(n)
				s.pos += int64(n)
				return err
			}
			if fill := s.headCap - s.headSize; fill > 0 {
				// The head is not full yet: fill it first.
				n, err := s.head.Write(p[:fill])
				s.headSize += int64(n)
				s.pos += int64(n)
				if err != nil {
					return err
				}
				p = p[fill:]
			}
			if err := s.startCapping(); err != nil {
				return err
			}
			continue
		}
		if int64(len(p)) > s.tailCap {
			// Only the last tailCap bytes of p can survive: skip the rest and
			// start a fresh segment that makes the older ones useless.
			drop := int64(len(p)) - s.tailCap
			s.pos += drop
			p = p[drop:]
			if err := s.rotate(true); err != nil {
				return err
			}
		}
		if s.segSize >= s.tailCap {
			if err := s.rotate(false); err != nil {
				return err
			}
		}
		n := min(s.tailCap-s.segSize, int64(len(p)))
		m, err := s.seg.Write(p[:n])
		s.segSize += int64(m)
		s.pos += int64(m)
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// startCapping moves everything after the head into the first segment.
// The segment is written before the head file is cut, so a crash in between
// leaves overlapping, not missing, data.
func (s *sink) startCapping() error {
	h := s.headCap
	buf := make([]byte, s.headCap-s.headCap/2)
	if _, err := s.head.ReadAt(buf, s.headCap/2); err != nil && err != io.EOF {
		return err
	}
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		h = s.headCap/2 + int64(i) + 1
	}
	if err := s.openSegment(h); err != nil {
		return err
	}
	n, err := io.Copy(s.seg, io.NewSectionReader(s.head, h, s.headSize-h))
	s.segSize = n
	if err != nil {
		return err
	}
	if err := s.head.Truncate(h); err != nil {
		return err
	}
	s.headSize = h
	s.capping = true
	return nil
}

// openSegment creates the segment starting at stream offset start.
func (s *sink) openSegment(start int64) error {
	f, err := os.OpenFile(segmentPath(s.dir, s.name, start), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.seg, s.segSize = f, 0
	s.segs = append(s.segs, start)
	return nil
}

// rotate closes the current segment and opens one at the current offset,
// keeping at most one older segment (none when fresh).
func (s *sink) rotate(fresh bool) error {
	if err := s.seg.Close(); err != nil {
		return err
	}
	s.seg = nil
	if s.segs[len(s.segs)-1] == s.pos {
		// The current segment starts here: reuse its name.
		s.segs = s.segs[:len(s.segs)-1]
	}
	if err := s.openSegment(s.pos); err != nil {
		return err
	}
	keep := 2
	if fresh {
		keep = 1
	}
	for len(s.segs) > keep {
		if err := removeIfExists(segmentPath(s.dir, s.name, s.segs[0])); err != nil {
			return err
		}
		s.segs = s.segs[1:]
	}
	return nil
}

func (s *sink) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errList []error
	if s.seg != nil {
		errList = append(errList, s.seg.Close())
		s.seg = nil
	}
	if s.head != nil {
		errList = append(errList, s.head.Close())
		s.head = nil
	}
	if err := errors.Join(errList...); err != nil {
		return errs.Wrap(errs.Internal, err, "joblog: close %s: %v", s.name, err)
	}
	if s.capping && s.err == nil {
		return compact(s.dir, s.name, s.max)
	}
	return s.err
}

// Compact turns a capped log left behind by a writer that died (tail
// segments still on disk) into its compacted form, as Close would have,
// keeping at most about maxBytes (0 = DefaultMaxBytes). A log that is
// complete already is left alone.
func Compact(dir, name string, maxBytes int64) error {
	if err := checkName(name); err != nil {
		return err
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxBytes < MinMaxBytes {
		return errs.New(errs.InvalidArgument, "joblog: maxBytes %d is below the minimum %d", maxBytes, MinMaxBytes)
	}
	return compact(dir, name, maxBytes)
}

// compact writes head + marker + tail to a temporary file, then the index,
// then renames the file over the log and removes the segments. Each crash
// point leaves a state Read understands (see view).
func compact(dir, name string, maxBytes int64) error {
	v, err := loadView(dir, name)
	if err != nil {
		return err
	}
	defer v.close()
	if v.compacted || len(v.pieces) < 2 {
		return nil
	}
	head := v.pieces[0]
	if head.start != 0 {
		return errs.New(errs.Internal, "joblog: %s has no head", name)
	}
	h := head.end
	keep := maxBytes - maxBytes/4 - markerReserve
	from := max(v.total-keep, v.runStart(), h)
	tail, err := v.readExact(from, v.total)
	if err != nil {
		return err
	}
	if from > h {
		// Start the tail at a line boundary when one is near its start.
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/4 {
			from += int64(i) + 1
			tail = tail[i+1:]
		}
	}
	headData, err := v.readExact(0, h)
	if err != nil {
		return err
	}
	marker := omitted(from - h)
	if from > h && h > 0 && headData[h-1] != '\n' {
		marker = "\n" + marker
	}
	if from == h {
		marker = ""
	}
	tmp, err := os.CreateTemp(dir, "."+name+".compact-*")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "joblog: compact %s: %v", name, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // no-op after the rename
	size := h + int64(len(marker)) + int64(len(tail))
	_, werr := tmp.Write(headData)
	if werr == nil {
		_, werr = tmp.WriteString(marker)
	}
	if werr == nil {
		_, werr = tmp.Write(tail)
	}
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = writeIndex(dir, name, index{head: h, marker: int64(len(marker)), tail: from, total: v.total, size: size})
	}
	if werr == nil {
		werr = os.Rename(tmpName, filepath.Join(dir, name))
	}
	if werr != nil {
		return errs.Wrap(errs.Internal, werr, "joblog: compact %s: %v", name, werr)
	}
	segs, err := listSegments(dir, name)
	if err != nil {
		return err
	}
	for _, sg := range segs {
		if err := removeIfExists(sg.path); err != nil {
			return err
		}
	}
	return nil
}

// omitted is the marker line for n dropped bytes.
func omitted(n int64) string {
	return "[... joblog: " + strconv.FormatInt(n, 10) + " bytes omitted ...]\n"
}

// index describes a compacted log: file [0,head) is stream [0,head), then
// marker bytes, then stream [tail,total); size is the file size.
type index struct {
	head, marker, tail, total, size int64
}

const indexFormat = "joblog-index v1 head=%d marker=%d tail=%d total=%d size=%d\n"

func writeIndex(dir, name string, ix index) error {
	f, err := os.CreateTemp(dir, "."+name+".idx-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = fmt.Fprintf(f, indexFormat, ix.head, ix.marker, ix.tail, ix.total, ix.size)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, name+idxSuffix))
}

// readIndex returns the index of a compacted log, ok=false when there is none.
func readIndex(dir, name string) (ix index, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, name+idxSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return index{}, false, nil
	}
	if err != nil {
		return index{}, false, errs.Wrap(errs.Internal, err, "joblog: read index of %s: %v", name, err)
	}
	_, err = fmt.Sscanf(string(b), indexFormat, &ix.head, &ix.marker, &ix.tail, &ix.total, &ix.size)
	if err != nil || ix.head < 0 || ix.marker < 0 || ix.tail < ix.head || ix.total < ix.tail ||
		ix.size != ix.head+ix.marker+ix.total-ix.tail {
		return index{}, false, errs.New(errs.Internal, "joblog: corrupt index for %s", name)
	}
	return ix, true, nil
}

// segment is one tail segment file.
type segment struct {
	start int64
	path  string
}

func segmentPath(dir, name string, start int64) string {
	return filepath.Join(dir, fmt.Sprintf("%s%s%016x", name, tailInfix, start))
}

// listSegments returns the tail segments of a log, oldest first.
func listSegments(dir, name string) ([]segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, errs.Wrap(errs.Internal, err, "joblog: list %s: %v", dir, err)
	}
	prefix := name + tailInfix
	var segs []segment
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || len(n) != len(prefix)+16 {
			continue
		}
		start, err := strconv.ParseInt(n[len(prefix):], 16, 64)
		if err != nil || start < 0 {
			continue
		}
		segs = append(segs, segment{start: start, path: filepath.Join(dir, n)})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].start < segs[j].start })
	return segs, nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errs.Wrap(errs.Internal, err, "joblog: remove %s: %v", filepath.Base(path), err)
	}
	return nil
}

// checkName accepts a plain file name.
func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return errs.New(errs.InvalidArgument, "joblog: invalid log name %q", name)
	case strings.ContainsAny(name, "/\\\x00"):
		return errs.New(errs.InvalidArgument, "joblog: log name %q must be a plain file name", name)
	case strings.HasPrefix(name, "."):
		return errs.New(errs.InvalidArgument, "joblog: log name %q must not start with a dot", name)
	case len(name) > 200:
		return errs.New(errs.InvalidArgument, "joblog: log name is too long (%d bytes)", len(name))
	}
	return nil
}
