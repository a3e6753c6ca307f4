// Package preimage keeps the pre-images of the files harnessd writes: the
// bytes a file had before a write, content-addressed by their SHA-256, so
// a receipt can name them and a revert can put them back.
//
// On disk the store is <dir>/<first two hex digits>/<the other 62>, each
// file 0600, written to a temp file in the same directory, fsynced and
// renamed into place; the same content is stored once. The store is bounded
// by age, by total size and by count: Sweep removes what is older than
// MaxAge, then the oldest until the total fits in MaxBytes and the count in
// MaxCount. Storing content that is already there refreshes its age. With
// no directory the store lives in memory (an in-memory harness).
//
// The index in memory is what the store costs the daemon: one fixed-size
// record (digest, size, age: 48 bytes in a map slot, about 70 with the
// table's headroom) a pre-image, no pointers, so MaxCount bounds it (under
// 16 MiB at the default) however small the pre-images are. A sweep for size or count prunes to 90% of the bound, so a store at
// its bound sorts its index once in a tenth of it, not on every Put.
//
// The store never sees paths: the caller decides what may be kept (secret
// paths are never passed to it).
package preimage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
)

// Defaults of the bounds.
const (
	DefaultMaxAge   = 7 * 24 * time.Hour
	DefaultMaxBytes = 1 << 30
	// DefaultMaxCount bounds the number of pre-images (one a write of
	// small files): the index in memory stays under 16 MiB (its table of
	// 2^18 slots of 48 bytes, which 200,000 fill to less than 7/8).
	DefaultMaxCount = 200_000
	// sweepEvery is how often Put sweeps for age (size is checked on every Put).
	sweepEvery = time.Hour
	// InlineMax is the largest pre-image PutPending keeps pending (its
	// file written without an fsync, its durable copy stored by the
	// write's own synced commit); a larger one is fsynced at once.
	InlineMax = 64 << 10
)

// Config configures a Store.
type Config struct {
	// Dir is the store's directory; "" keeps it in memory.
	Dir string
	// MaxAge drops pre-images older than this; 0 = DefaultMaxAge,
	// negative = no age bound.
	MaxAge time.Duration
	// MaxBytes bounds the total size; 0 = DefaultMaxBytes, negative = no
	// size bound.
	MaxBytes int64
	// MaxCount bounds the number of pre-images; 0 = DefaultMaxCount,
	// negative = no count bound.
	MaxCount int
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// Store is a bounded, content-addressed store of pre-images. Safe for
// concurrent use.
type Store struct {
	cfg Config

	mu        sync.Mutex
	index     map[sum]entry  // digest -> size and age
	mem       map[sum][]byte // in memory only: digest -> content
	total     int64
	lastSweep time.Time

	// pending are the contents whose files were written without an fsync
	// (PutPending) and not yet synced (Settle): each write that names one
	// stores its durable copy in its own synced commit (Pending).
	pending      map[sum][]byte
	pendingBytes int64
	unsynced     map[sum]bool  // written without an fsync since the last Sync or Settle
	fsyncs       atomic.Uint64 // file fsyncs (Syncs)
	settling     atomic.Bool   // a Settle is claimed (Due) or running
}

// sum is a digest's 32 bytes: the index's key.
type sum [sha256.Size]byte

// entry is a pre-image's record in the index: plain values, no pointers.
type entry struct {
	size int64
	at   int64 // Unix nanoseconds of the last Put
}

// Open opens (creating) the store and sweeps it once.
func Open(cfg Config) (*Store, error) {
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxCount == 0 {
		cfg.MaxCount = DefaultMaxCount
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{cfg: cfg, index: map[sum]entry{}}
	if cfg.Dir == "" {
		s.mem = map[sum][]byte{}
		return s, nil
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("preimage: create %s: %w", cfg.Dir, err)
	}
	err := filepath.WalkDir(cfg.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := filepath.Base(filepath.Dir(p)) + d.Name()
		k, ok := parse(name)
		if !ok {
			if strings.HasPrefix(d.Name(), ".tmp-") {
				_ = os.Remove(p) // left by a crash mid-write
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		s.index[k] = entry{size: fi.Size(), at: fi.ModTime().UnixNano()}
		s.total += fi.Size()
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sweepLocked()
	s.mu.Unlock()
	return s, nil
}

// Digest returns the hex SHA-256 of data: the name it is stored under.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ValidDigest reports whether d is 64 lowercase hex digits.
func ValidDigest(d string) bool {
	_, ok := parse(d)
	return ok
}

// parse returns the bytes of a digest of 64 lowercase hex digits.
func parse(d string) (sum, bool) {
	var k sum
	if len(d) != 2*len(k) {
		return k, false
	}
	for _, c := range d {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return k, false
		}
	}
	_, err := hex.Decode(k[:], []byte(d))
	return k, err == nil
}

// Put stores data and returns its digest. Content already stored is not
// written again; its age is refreshed. Content larger than MaxBytes is not
// kept (an error names the setting).
func (s *Store) Put(data []byte) (string, error) { return s.put(data, true, false) }

// PutPending is Put for a write that stores the durable copy of what it
// keeps in its own synced commit: content up to InlineMax is written
// without an fsync and stays pending (Pending returns it) until Settle
// syncs its file; larger content is fsynced at once, as by Put. A file
// written without an fsync outlives a kill -9 (the page cache keeps it);
// after a power loss its durable copy restores it (Restore). Content
// already stored and synced is not written again (its age is refreshed).
func (s *Store) PutPending(data []byte) (string, error) {
	if s.mem != nil || len(data) > InlineMax {
		return s.put(data, true, false)
	}
	return s.put(data, false, true)
}

// Pending returns the content of pre-image d while its file is not yet
// synced: the durable copy a write stores in its commit. False when d is
// synced (or not kept): the file is its own durable copy.
func (s *Store) Pending(d string) ([]byte, bool) {
	k, ok := parse(d)
	if !ok {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.pending[k]
	return b, ok
}

// PendingStats are the count and bytes of the pending pre-images.
func (s *Store) PendingStats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Count: len(s.pending), Bytes: s.pendingBytes}
}

// When the pending pre-images are due to be settled: this many, or this
// many bytes (a bound on what they hold in memory).
const (
	settleCount = 64
	settleBytes = 4 << 20
)

// Due reports whether the pending pre-images are enough to settle now
// and, if so, claims the settle for the caller, which must call Settle
// (that ends the claim): one settle at a time, never one per write.
func (s *Store) Due() bool {
	st := s.PendingStats()
	if st.Count < settleCount && st.Bytes < settleBytes {
		return false
	}
	return s.settling.CompareAndSwap(false, true)
}

// Settle makes the files of the pending pre-images durable with one
// syncfs of the store's file system (their contents and their renames:
// one flush for many writes, where an fsync of each file and directory
// would be two a write) and returns their digests: their durable copies
// may be deleted. A file the store pruned meanwhile is no longer pending
// and not returned. The sync runs outside the store's lock: Puts go on
// meanwhile.
func (s *Store) Settle() ([]string, error) {
	defer s.settling.Store(false)
	s.mu.Lock()
	keys := make([]sum, 0, len(s.pending))
	for k := range s.pending {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	if len(keys) == 0 {
		return nil, nil
	}
	if err := s.Sync(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if _, ok := s.pending[k]; !ok {
			continue // pruned meanwhile: nothing left to sync
		}
		s.dropPendingLocked(k)
		out = append(out, hex.EncodeToString(k[:]))
	}
	return out, nil
}

// Restore makes pre-image d durable from its durable copy data (a write's
// commit stored it while the file was pending, and a crash came before
// Settle): the file is written and fsynced when it is missing or damaged,
// left as it is otherwise. Data that is not d's content is refused.
func (s *Store) Restore(d string, data []byte) error {
	k, ok := parse(d)
	if !ok || Digest(data) != d {
		return errs.New(errs.StoreDamaged, "the durable copy of pre-image %s does not have its digest", short(d)).With("sha256", d)
	}
	if s.mem != nil {
		_, err := s.put(data, true, false)
		return err
	}
	if b, err := os.ReadFile(s.path(d)); err == nil && Digest(b) == d {
		err := s.syncFile(s.path(d)) // intact: make sure it is durable before its copy goes
		if err == nil {
			err = s.syncFile(filepath.Dir(s.path(d)))
		}
		s.mu.Lock()
		s.dropPendingLocked(k)
		s.mu.Unlock()
		return err
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(d, data, true); err != nil {
		return err
	}
	if err := s.syncFile(filepath.Dir(s.path(d))); err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: sync: %v", err)
	}
	if e, ok := s.index[k]; ok {
		s.total -= e.size
	}
	s.index[k] = entry{size: int64(len(data)), at: now.UnixNano()}
	s.total += int64(len(data))
	s.dropPendingLocked(k)
	return nil
}

// syncFile fsyncs the file or directory at p.
func (s *Store) syncFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	s.fsyncs.Add(1)
	return f.Sync()
}

// dropPendingLocked forgets k as pending (pruned, restored or synced).
func (s *Store) dropPendingLocked(k sum) {
	if b, ok := s.pending[k]; ok {
		s.pendingBytes -= int64(len(b))
		delete(s.pending, k)
	}
	delete(s.unsynced, k)
}

// put is Put, fsyncing each new content when sync (else Sync, or Settle
// for the pending ones, makes the contents written since durable); pend
// keeps content written without an fsync pending (PutPending). Content
// already written without an fsync is fsynced now by a synced put.
func (s *Store) put(data []byte, sync, pend bool) (string, error) {
	k := sum(sha256.Sum256(data))
	d := hex.EncodeToString(k[:])
	size := int64(len(data))
	if s.cfg.MaxBytes > 0 && size > s.cfg.MaxBytes {
		return d, errs.New(errs.InvalidArgument, "pre-image of %d bytes is larger than PreImageMaxBytes (%d): not kept", size, s.cfg.MaxBytes)
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.index[k]; ok {
		if s.mem == nil {
			_ = os.Chtimes(s.path(d), now, now)
		}
		if s.unsynced[k] && sync {
			if err := s.syncFile(s.path(d)); err != nil {
				return d, errs.Wrap(errs.Internal, err, "preimage: fsync: %v", err)
			}
			s.dropPendingLocked(k)
		}
	} else {
		if s.mem != nil {
			s.mem[k] = append([]byte(nil), data...)
		} else if err := s.write(d, data, sync); err != nil {
			return d, err
		}
		s.total += size
		if s.mem == nil && !sync {
			if s.unsynced == nil {
				s.unsynced = map[sum]bool{}
			}
			s.unsynced[k] = true
		}
	}
	if _, ok := s.pending[k]; pend && s.unsynced[k] && !ok {
		if s.pending == nil {
			s.pending = map[sum][]byte{}
		}
		s.pending[k] = append([]byte(nil), data...)
		s.pendingBytes += size
	}
	s.index[k] = entry{size: size, at: now.UnixNano()}
	if !s.cfg.fits(s.total, len(s.index), false) || now.Sub(s.lastSweep) >= sweepEvery {
		s.sweepLocked()
	}
	return d, nil
}

// fits reports whether a store of total bytes and n pre-images is within
// the size and count bounds, or with headroom within 90% of them.
func (c Config) fits(total int64, n int, headroom bool) bool {
	maxBytes, maxCount := c.MaxBytes, c.MaxCount
	if headroom {
		maxBytes -= maxBytes / 10
		maxCount -= maxCount / 10
	}
	return (c.MaxBytes <= 0 || total <= maxBytes) && (c.MaxCount <= 0 || n <= maxCount)
}

// write stores data under d: temp file, fsync (when sync), rename.
func (s *Store) write(d string, data []byte, sync bool) error {
	dir := filepath.Join(s.cfg.Dir, d[:2])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: %v", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: %v", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: %v", err)
	}
	if _, err := f.Write(data); err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: write: %v", err)
	}
	if sync {
		s.fsyncs.Add(1)
		if err := f.Sync(); err != nil {
			return errs.Wrap(errs.Internal, err, "preimage: fsync: %v", err)
		}
	}
	if err := f.Close(); err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: %v", err)
	}
	if err := os.Rename(tmp, s.path(d)); err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: rename: %v", err)
	}
	// The directory is not fsynced: the receipt naming the pre-image is
	// stored without a sync too, and a rename lost in a crash only makes
	// that write not revertable (the content was fsynced before).
	ok = true
	return nil
}

func (s *Store) path(d string) string { return filepath.Join(s.cfg.Dir, d[:2], d[2:]) }

// ErrMissing is the cause of Get's error for a pre-image not (or no
// longer) in the store.
var ErrMissing = errors.New("pre-image not in the store")

// Get returns the content stored under d. A pre-image that was pruned (or
// never kept) is errs.NotFound naming the settings that bound the store.
func (s *Store) Get(d string) ([]byte, error) {
	missing := func() error {
		return errs.Wrap(errs.NotFound, ErrMissing, "pre-image %s is no longer kept: the store keeps pre-images for PreImageMaxAge (%v) and up to PreImageMaxBytes (%d bytes) in total, oldest pruned first; raise them in harness.Config to keep undo longer", short(d), s.cfg.MaxAge, s.cfg.MaxBytes).
			With("sha256", d)
	}
	if !ValidDigest(d) {
		return nil, errs.New(errs.InvalidArgument, "pre-image digest %q is not 64 hex digits", d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, _ := parse(d)
	if s.mem != nil {
		b, ok := s.mem[k]
		if !ok {
			return nil, missing()
		}
		return append([]byte(nil), b...), nil
	}
	if _, ok := s.index[k]; !ok {
		return nil, missing()
	}
	b, err := os.ReadFile(s.path(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, missing()
	}
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "preimage: read: %v", err)
	}
	if Digest(b) != d {
		return nil, errs.New(errs.StoreDamaged, "pre-image %s is damaged: its content no longer has its digest", short(d)).With("sha256", d)
	}
	return b, nil
}

// Sync makes every content written to the store durable (syncfs of its
// file system): a tree snapshot writes its pre-images without a sync each,
// then syncs once.
func (s *Store) Sync() error {
	if s.mem != nil {
		return nil
	}
	f, err := os.Open(s.cfg.Dir)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: sync: %v", err)
	}
	defer f.Close()
	s.mu.Lock()
	written := make([]sum, 0, len(s.unsynced))
	for k := range s.unsynced {
		written = append(written, k)
	}
	s.mu.Unlock()
	s.fsyncs.Add(1)
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: sync: %v", err)
	}
	// What was written before the syncfs is durable. The pending ones
	// stay pending: Settle returns them, so their durable copies go.
	s.mu.Lock()
	for _, k := range written {
		delete(s.unsynced, k)
	}
	s.mu.Unlock()
	return nil
}

// Touch refreshes the age of d and reports whether it is stored.
func (s *Store) Touch(d string) bool {
	k, ok := parse(d)
	if !ok {
		return false
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.index[k]
	if !ok {
		return false
	}
	if s.mem == nil {
		_ = os.Chtimes(s.path(d), now, now)
	}
	e.at = now.UnixNano()
	s.index[k] = e
	return true
}

// Has reports whether d is stored.
func (s *Store) Has(d string) bool {
	k, ok := parse(d)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok = s.index[k]
	return ok
}

// Stats are the store's count and total size.
type Stats struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
	// Pending is how many are pending (PutPending: not yet fsynced, a
	// durable copy in the store); Fsyncs counts the store's file fsyncs.
	Pending int    `json:"pending,omitempty"`
	Fsyncs  uint64 `json:"fsyncs,omitempty"`
}

// Stats returns the count and total size of what is stored, how many are
// pending and the fsyncs so far.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Count: len(s.index), Bytes: s.total, Pending: len(s.pending), Fsyncs: s.fsyncs.Load()}
}

// Sweep removes the pre-images older than MaxAge, then, if the store is
// beyond MaxBytes or MaxCount, the oldest until it is within 90% of both.
// It returns how many it removed.
func (s *Store) Sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweepLocked()
}

func (s *Store) sweepLocked() int {
	now := s.cfg.Now()
	s.lastSweep = now
	doomed := prune(s.index, now.UnixNano(), s.cfg)
	removed := 0
	for _, k := range doomed {
		if s.mem == nil {
			if err := os.Remove(s.path(hex.EncodeToString(k[:]))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		s.total -= s.index[k].size
		delete(s.index, k)
		delete(s.mem, k)
		s.dropPendingLocked(k)
		removed++
	}
	return removed
}

// prune returns the pre-images of index a sweep at now removes, oldest
// first: those older than cfg.MaxAge, then, if what is left is beyond
// cfg.MaxBytes or cfg.MaxCount, the oldest until it is within 90% of both
// (so a store at its bound does not sort its index again on the next Put).
func prune(index map[sum]entry, now int64, cfg Config) []sum {
	type aged struct {
		k  sum
		at int64
	}
	all := make([]aged, 0, len(index))
	var total int64
	for k, e := range index {
		all = append(all, aged{k, e.at})
		total += e.size
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].at == all[j].at {
			return bytes.Compare(all[i].k[:], all[j].k[:]) < 0
		}
		return all[i].at < all[j].at
	})
	n := len(all)
	maxAge := int64(cfg.MaxAge)
	var out []sum
	for _, a := range all {
		old := maxAge > 0 && now-a.at > maxAge
		if !old {
			break // oldest first: the rest are younger
		}
		out = append(out, a.k)
		total -= index[a.k].size
		n--
	}
	if cfg.fits(total, n, false) {
		return out
	}
	for _, a := range all[len(out):] {
		if cfg.fits(total, n, true) {
			break
		}
		out = append(out, a.k)
		total -= index[a.k].size
		n--
	}
	return out
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// Ref names the pre-image of one file in a receipt: its content's digest
// and mode, or Absent when the write created the file.
type Ref struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
	Absent bool   `json:"absent,omitempty"`
	// Mode is the octal permission of the file before the write.
	Mode string `json:"mode,omitempty"`
	// Link is set when the file was a symbolic link: its pre-image is the
	// link's target text. A job's receipt keeps it and a revert makes the
	// link again; a patch's marks it NotKept.
	Link bool `json:"link,omitempty"`
	// NotKept says why the content was not stored (too large, I/O):
	// the receipt cannot be reverted.
	NotKept string `json:"not_kept,omitempty"`
	// Dir is set when the path was a directory (a job's receipt): a
	// revert makes it again with Mode, or removes it when Absent and empty.
	Dir bool `json:"dir,omitempty"`
}
