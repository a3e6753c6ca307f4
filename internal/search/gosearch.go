package search

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"syscall"
)

// fileResult is what searching one file produced.
type fileResult struct{ matches []Match }

// searchFiles searches files (already in order) with bounded concurrency and
// returns the first need matches in order. It stops reading files as soon as
// the first need matches are certain.
func searchFiles(ctx context.Context, p *plan, files []string, need int) ([]Match, error) {
	if len(files) == 0 {
		return nil, ctx.Err()
	}
	workers := min(runtime.GOMAXPROCS(0), len(files))
	window := workers * 8
	type job struct {
		rel string
		out chan fileResult
	}
	jobs := make(chan job, window)
	queue := make(chan chan fileResult, window)
	stop := make(chan struct{})
	var wg sync.WaitGroup

	wg.Add(1)
	go func() { // producer: hands out files in order, at most window ahead
		defer wg.Done()
		defer close(queue)
		defer close(jobs)
		for _, rel := range files {
			out := make(chan fileResult, 1)
			select {
			case queue <- out:
			case <-stop:
				return
			}
			select {
			case jobs <- job{rel, out}:
			case <-stop:
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := new(bytes.Buffer)
			for j := range jobs {
				var r fileResult
				select {
				case <-stop:
				default:
					r.matches = searchFile(p, j.rel, buf, need)
				}
				j.out <- r
			}
		}()
	}

	var (
		ms  []Match
		err error
	)
merge:
	for out := range queue {
		select {
		case r := <-out:
			ms = append(ms, r.matches...)
			if len(ms) >= need {
				break merge
			}
		case <-ctx.Done():
			err = ctx.Err()
			break merge
		}
	}
	close(stop)
	for range queue { // let the producer finish
	}
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if len(ms) > need {
		ms = ms[:need]
	}
	return ms, nil
}

// searchFile returns up to need matches of one file; it returns nothing for
// files that are not regular, too large, binary or unreadable.
func searchFile(p *plan, rel string, buf *bytes.Buffer, need int) []Match {
	data, kind, _ := readFile(p, rel, p.lim.MaxFileSize, buf)
	if kind != kindText {
		return nil
	}
	var ms []Match
	p.m.scan(data, func(line, start, end, col int) bool {
		ms = append(ms, p.makeMatch(rel, line, col, data[start:end]))
		return len(ms) < need
	})
	return ms
}

// File kinds found by readFile (and kept by Cache).
const (
	kindNone     uint8 = iota // not looked at yet (a Cache miss)
	kindText                  // a regular file of at most max bytes without NUL: searched
	kindBinary                // a regular file of at most max bytes with a NUL byte
	kindLarge                 // a regular file larger than max (its size is reported)
	kindAbsent                // vanished, not a regular file (symlink, directory, FIFO), or not readable by us
	kindRetry                 // unreadable for now (out of file descriptors, an I/O error): skipped, never cached
	kindExcluded              // Cache only: the Searcher's Exclude rejects the path (never read)
)

// failedKind is the kind of a file whose stat, open or read failed with err:
// kindAbsent when err says what the path is (missing, a symlink on the way,
// not permitted), kindRetry for a failure that may pass.
func failedKind(err error) uint8 {
	for _, e := range []error{syscall.ENOENT, syscall.ENOTDIR, syscall.ELOOP, syscall.EXDEV, syscall.EACCES,
		syscall.EPERM, syscall.ENAMETOOLONG, syscall.EISDIR, syscall.ENXIO, syscall.ENODEV} {
		if errors.Is(err, e) {
			return kindAbsent
		}
	}
	return kindRetry
}

// readFile reads rel, a regular file of at most max bytes below p.root
// (opened with p.openRoot), following no symbolic link (see openBeneath),
// and says what it found; data (which aliases buf) is set for kindText
// only, size for kindText and kindLarge (a lower bound for a file that grew
// while it was read). A file too large is never opened.
func readFile(p *plan, rel string, max int64, buf *bytes.Buffer) (data []byte, kind uint8, size int64) {
	if p.dir == nil {
		return nil, kindAbsent, 0
	}
	mode, sz, err := statBeneath(p.dirfd, rel)
	if err != nil {
		return nil, failedKind(err), 0
	}
	if mode != syscall.S_IFREG {
		return nil, kindAbsent, 0
	}
	if sz > max {
		return nil, kindLarge, sz
	}
	f, err := openBeneath(p.dirfd, rel)
	if err != nil {
		return nil, failedKind(err), 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, kindRetry, 0
	}
	if !fi.Mode().IsRegular() {
		return nil, kindAbsent, 0
	}
	if fi.Size() > max {
		return nil, kindLarge, fi.Size()
	}
	buf.Reset()
	if fi.Size() > 0 {
		buf.Grow(int(fi.Size()) + 1)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, kindRetry, 0
	}
	data = buf.Bytes()
	if buf.Cap() > 4<<20 { // do not keep a huge buffer alive in a worker
		defer func() { *buf = bytes.Buffer{} }()
	}
	if int64(len(data)) > max {
		return nil, kindLarge, int64(len(data))
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, kindBinary, int64(len(data))
	}
	return data, kindText, int64(len(data))
}
