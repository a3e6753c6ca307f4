package ctxasm

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// stamp identifies a version of a file without reading it.
type stamp struct {
	size  int64
	mtime int64 // ns
	ino   uint64
	dir   bool
}

func stampOf(fi os.FileInfo) stamp {
	s := stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), dir: fi.IsDir()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = uint64(st.Ino)
	}
	return s
}

// entry is a cached file (or directory listing) and what was parsed of it.
type entry struct {
	st    stamp
	file  *File    // a file's content and parsed form
	names []string // a directory's entries
	paths []string // a git index's paths
	set   map[string]bool
	langs []string
}

// Limits of the cache.
const (
	// MaxFileBytes is the most read of one candidate file; a longer file is
	// read to here and reported truncated.
	MaxFileBytes = 256 << 10
	maxEntries   = 4096
	// maxCacheBytes bounds the file content the cache holds; past it (or
	// maxEntries) the cache starts over.
	maxCacheBytes = 64 << 20
	// racyWindow: a file modified this recently is not cached (a later
	// write within the same mtime tick would look unchanged).
	racyWindow = 2 * time.Second
)

// Cache keeps the parsed candidate files, directory listings and git index
// of checkouts, keyed by path and revalidated by (size, mtime, inode): a
// warm Scan of an unchanged checkout stats its candidates and reads
// nothing. The zero Cache is ready to use; it is safe for concurrent use.
type Cache struct {
	mu    sync.Mutex // protects m, bytes and reads
	m     map[string]*entry
	bytes int
	// reads counts file reads (tests: a warm scan reads nothing).
	reads int64
}

// Reads returns how many files the cache has read so far.
func (c *Cache) Reads() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

func (c *Cache) get(key string, st stamp) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[key]; e != nil && e.st == st {
		return e
	}
	return nil
}

func (c *Cache) put(key string, e *entry, now time.Time) {
	if now.Sub(time.Unix(0, e.st.mtime)) < racyWindow {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	size := 0
	if e.file != nil {
		size = len(e.file.Content)
	}
	if c.m == nil || len(c.m) >= maxEntries || c.bytes+size > maxCacheBytes {
		c.m, c.bytes = map[string]*entry{}, 0
	}
	if old := c.m[key]; old != nil && old.file != nil {
		c.bytes -= len(old.file.Content)
	}
	c.m[key] = e
	c.bytes += size
}

func (c *Cache) countRead() {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
}

// readFile reads abs, which must still be the file (dev, ino) a path check
// resolved and which check (pathsafe.Root.CheckLeaf of its path) accepts
// as opened, up to MaxFileBytes. changed reports that the file changed
// while it was read.
func (c *Cache) readFile(abs string, ino uint64, check func(fs.FileInfo) error) (content []byte, truncated, changed bool, st stamp, err error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, false, st, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, false, st, err
	}
	st = stampOf(fi)
	if !fi.Mode().IsRegular() || (ino != 0 && st.ino != ino) {
		return nil, false, false, st, os.ErrNotExist
	}
	// A hard link may be another name of a secret file (read_file refuses
	// them too, by the same check).
	if check != nil && check(fi) != nil {
		return nil, false, false, st, os.ErrPermission
	}
	c.countRead()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, false, false, st, err
	}
	if len(b) > MaxFileBytes {
		b, truncated = b[:MaxFileBytes], true
	}
	if after, err := f.Stat(); err != nil || stampOf(after) != st {
		changed = true
	}
	return b, truncated, changed, st, nil
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
