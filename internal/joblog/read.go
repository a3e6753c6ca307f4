package joblog

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/contract/errs"
)

// readAttempts bounds the retries of a Read that raced with the writer
// (rotation, compaction).
const readAttempts = 8

// errRetry reports that the files changed under a read.
var errRetry = errors.New("joblog: log changed during read")

// Read returns the redacted log dir/name from stream offset offset, or, when
// tail > 0, its last tail bytes; at most MaxReadBytes per call. next is the
// offset to continue from and total the stream length so far (the log may
// still be growing). A range that capping dropped is returned as an
// omission marker line, so next-offset can exceed len(data). An offset at or
// past total returns no data and next = offset.
func Read(dir, name string, offset, tail int64) (data []byte, next, total int64, err error) {
	if err := checkName(name); err != nil {
		return nil, 0, 0, err
	}
	if offset < 0 {
		return nil, 0, 0, errs.New(errs.InvalidArgument, "joblog: negative offset %d", offset)
	}
	if tail < 0 {
		return nil, 0, 0, errs.New(errs.InvalidArgument, "joblog: negative tail %d", tail)
	}
	for range readAttempts {
		v, err := loadView(dir, name)
		if err != nil {
			return nil, 0, 0, err
		}
		from := offset
		if tail > 0 {
			from = max(0, v.total-min(tail, MaxReadBytes))
		}
		data, next, err = v.read(from, MaxReadBytes)
		v.close()
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return nil, 0, 0, err
		}
		return data, next, v.total, nil
	}
	return nil, 0, 0, errs.New(errs.Unavailable, "joblog: %s kept changing during the read; try again", name)
}

// piece maps stream [start,end) to file f at offset off.
type piece struct {
	start, end int64
	f          *os.File
	off        int64
}

// view is a consistent snapshot of a log's layout.
type view struct {
	pieces    []piece // ordered, non-overlapping; gaps are dropped ranges
	total     int64
	compacted bool
	files     []*os.File
}

func (v *view) close() {
	for _, f := range v.files {
		f.Close()
	}
	v.files = nil
}

// loadView snapshots the layout, retrying while a writer moves files.
func loadView(dir, name string) (*view, error) {
	for range readAttempts {
		v, err := tryView(dir, name)
		if errors.Is(err, errRetry) {
			continue
		}
		return v, err
	}
	return nil, errs.New(errs.Unavailable, "joblog: %s kept changing; try again", name)
}

func tryView(dir, name string) (*view, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.Wrap(errs.NotFound, err, "joblog: no log %q in %s", name, dir)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "joblog: open %s: %v", name, err)
	}
	v := &view{files: []*os.File{f}}
	st, err := f.Stat()
	if err != nil {
		v.close()
		return nil, errs.Wrap(errs.Internal, err, "joblog: stat %s: %v", name, err)
	}
	size := st.Size()
	ix, hasIndex, err := readIndex(dir, name)
	if err != nil {
		v.close()
		return nil, err
	}
	if hasIndex && ix.size == size {
		// The file is the compacted form (a raw head is always shorter).
		v.compacted = true
		v.pieces = append(v.pieces, piece{start: 0, end: ix.head, f: f})
		if ix.total > ix.tail {
			v.pieces = append(v.pieces, piece{start: ix.tail, end: ix.total, f: f, off: ix.head + ix.marker})
		}
		v.total = ix.total
		return v, nil
	}
	segs, err := listSegments(dir, name)
	if err != nil {
		v.close()
		return nil, err
	}
	if hasIndex && len(segs) == 0 {
		// Compaction renamed the file and removed the segments after we
		// opened the old head: look again.
		v.close()
		return nil, errRetry
	}
	v.pieces = append(v.pieces, piece{start: 0, end: size, f: f})
	end := size
	for _, s := range segs {
		sf, err := os.Open(s.path)
		if errors.Is(err, fs.ErrNotExist) {
			v.close()
			return nil, errRetry // rotated away
		}
		if err != nil {
			v.close()
			return nil, errs.Wrap(errs.Internal, err, "joblog: open segment: %v", err)
		}
		v.files = append(v.files, sf)
		sst, err := sf.Stat()
		if err != nil {
			v.close()
			return nil, errs.Wrap(errs.Internal, err, "joblog: stat segment: %v", err)
		}
		e := s.start + sst.Size()
		if e <= end {
			continue // covered by the head (a crash while capping started)
		}
		from := max(s.start, end)
		v.pieces = append(v.pieces, piece{start: from, end: e, f: sf, off: from - s.start})
		end = e
	}
	v.total = end
	return v, nil
}

// read returns up to limit bytes from stream offset off, with omission
// markers for dropped ranges.
func (v *view) read(off int64, limit int) ([]byte, int64, error) {
	if off >= v.total {
		return nil, off, nil
	}
	out := make([]byte, 0, min(int64(limit), v.total-off+64))
	pos := off
	for _, p := range v.pieces {
		if pos >= v.total || len(out) >= limit {
			break
		}
		if p.end <= pos {
			continue
		}
		if pos < p.start {
			m := omitted(p.start - pos)
			if len(out)+len(m) > limit && len(out) > 0 {
				break
			}
			out = append(out, m...)
			pos = p.start
		}
		n := min(p.end-pos, int64(limit-len(out)))
		if n <= 0 {
			break
		}
		l := len(out)
		out = out[:l+int(n)]
		if _, err := p.f.ReadAt(out[l:], p.off+pos-p.start); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, 0, errRetry // truncated under us
			}
			return nil, 0, errs.Wrap(errs.Internal, err, "joblog: read: %v", err)
		}
		pos += n
	}
	return out, pos, nil
}

// readExact returns stream [from,to), which must be stored without gaps.
func (v *view) readExact(from, to int64) ([]byte, error) {
	if to <= from {
		return nil, nil
	}
	b, next, err := v.read(from, int(to-from))
	if err != nil {
		return nil, err
	}
	if next != to || int64(len(b)) != to-from {
		return nil, errs.New(errs.Internal, "joblog: stream range [%d,%d) is not stored contiguously", from, to)
	}
	return b, nil
}

// runStart returns where the last contiguous run of stored bytes starts.
func (v *view) runStart() int64 {
	i := len(v.pieces) - 1
	for i > 0 && v.pieces[i].start == v.pieces[i-1].end {
		i--
	}
	return v.pieces[i].start
}
