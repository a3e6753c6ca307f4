package search

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
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
	data, ok := readCandidate(filepath.Join(p.root, filepath.FromSlash(rel)), p.lim.MaxFileSize, buf)
	if !ok {
		return nil
	}
	var ms []Match
	p.m.scan(data, func(line, start, end, col int) bool {
		ms = append(ms, p.makeMatch(rel, line, col, data[start:end]))
		return len(ms) < need
	})
	return ms
}

// readCandidate reads a regular file of at most max bytes without following
// symbolic links; ok is false for anything that must not be searched,
// including files containing a NUL byte. The returned bytes alias buf.
func readCandidate(full string, max int64, buf *bytes.Buffer) (data []byte, ok bool) {
	fi, err := os.Lstat(full)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, false
	}
	// O_NOFOLLOW and O_NONBLOCK: a path swapped for a symlink or a FIFO since
	// Lstat is neither followed nor blocks us.
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, false
	}
	buf.Reset()
	if fi.Size() > 0 {
		buf.Grow(int(fi.Size()) + 1)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, false
	}
	data = buf.Bytes()
	if int64(len(data)) > max || bytes.IndexByte(data, 0) >= 0 {
		return nil, false
	}
	if buf.Cap() > 4<<20 { // do not keep a huge buffer alive in a worker
		defer func() { *buf = bytes.Buffer{} }()
	}
	return data, true
}
