package persistence

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
)

// Badger maps its files: every table (.sst) it reads, the memtables'
// write-ahead logs (.mem), the value log (.vlog). Pages it writes through
// those maps (a flushed or compacted table is written whole through its
// map) stay in the daemon's resident set until the kernel needs the
// memory, so under steady writes the file-backed part of the RSS follows
// the store's size, not what is read. The store hands those pages back
// periodically (Options.ReleaseEvery, releaseMapped): the kernel writes
// nothing, drops clean pages (every synced write is on disk already) and
// keeps dirty ones; a page read again is read back from the file (or the
// page cache). Reads of hot blocks are served by Badger's block cache,
// which is on the heap.

// mapping is one file mapping of the process: [start, end).
type mapping struct {
	start, end uintptr
	path       string
}

// storeMappings returns the mappings of /proc/self/maps (its text) whose
// file is in dir (a directory, without a trailing slash): Badger's tables,
// logs and value log files. A line it cannot parse is skipped.
func storeMappings(maps []byte, dir string) []mapping {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// start-end perms offset dev inode path (the path may hold spaces,
		// and ends with " (deleted)" once its file is removed)
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			continue
		}
		path := strings.Join(f[5:], " ")
		if !strings.HasPrefix(path, prefix) || strings.HasSuffix(path, " (deleted)") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, mapping{start: uintptr(start), end: uintptr(end), path: path})
	}
	return out
}

// mappedDir is dir as the kernel names it in /proc/self/maps: absolute,
// its symbolic links resolved (dir itself when that fails).
func mappedDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}
