// Package preimage keeps the pre-images of the files harnessd writes: the
// bytes a file had before a write, content-addressed by their SHA-256, so
// a receipt can name them and a revert can put them back.
//
// On disk the store is <dir>/<first two hex digits>/<the other 62>, each
// file 0600, written to a temp file in the same directory, fsynced and
// renamed into place; the same content is stored once. The store is bounded
// by age and by total size: Sweep removes what is older than MaxAge, then
// the oldest until the total fits in MaxBytes. Storing content that is
// already there refreshes its age. With no directory the store lives in
// memory (an in-memory harness).
//
// The store never sees paths: the caller decides what may be kept (secret
// paths are never passed to it).
package preimage

import (
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
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// Defaults of the bounds.
const (
	DefaultMaxAge   = 7 * 24 * time.Hour
	DefaultMaxBytes = 1 << 30
	// sweepEvery is how often Put sweeps for age (size is checked on every Put).
	sweepEvery = time.Hour
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
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// Store is a bounded, content-addressed store of pre-images. Safe for
// concurrent use.
type Store struct {
	cfg Config

	mu        sync.Mutex
	mem       map[string]*entry // in memory: digest -> content
	index     map[string]*entry // on disk: digest -> size and age
	total     int64
	lastSweep time.Time
}

type entry struct {
	data []byte // in memory only
	size int64
	at   time.Time
}

// Open opens (creating) the store and sweeps it once.
func Open(cfg Config) (*Store, error) {
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{cfg: cfg, index: map[string]*entry{}}
	if cfg.Dir == "" {
		s.mem = map[string]*entry{}
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
		if !ValidDigest(name) {
			if strings.HasPrefix(d.Name(), ".tmp-") {
				_ = os.Remove(p) // left by a crash mid-write
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		s.index[name] = &entry{size: fi.Size(), at: fi.ModTime()}
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
	if len(d) != 64 {
		return false
	}
	for _, c := range d {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Put stores data and returns its digest. Content already stored is not
// written again; its age is refreshed. Content larger than MaxBytes is not
// kept (an error names the setting).
func (s *Store) Put(data []byte) (string, error) {
	d := Digest(data)
	size := int64(len(data))
	if s.cfg.MaxBytes > 0 && size > s.cfg.MaxBytes {
		return d, errs.New(errs.InvalidArgument, "pre-image of %d bytes is larger than PreImageMaxBytes (%d): not kept", size, s.cfg.MaxBytes)
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		if e, ok := s.mem[d]; ok {
			e.at = now
		} else {
			s.mem[d] = &entry{data: append([]byte(nil), data...), size: size, at: now}
			s.total += size
		}
	} else if e, ok := s.index[d]; ok {
		e.at = now
		_ = os.Chtimes(s.path(d), now, now)
	} else {
		if err := s.write(d, data); err != nil {
			return d, err
		}
		s.index[d] = &entry{size: size, at: now}
		s.total += size
	}
	if (s.cfg.MaxBytes > 0 && s.total > s.cfg.MaxBytes) || now.Sub(s.lastSweep) >= sweepEvery {
		s.sweepLocked()
	}
	return d, nil
}

// write stores data under d: temp file, fsync, rename, fsync of the dir.
func (s *Store) write(d string, data []byte) error {
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
	if err := f.Sync(); err != nil {
		return errs.Wrap(errs.Internal, err, "preimage: fsync: %v", err)
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
	if s.mem != nil {
		e, ok := s.mem[d]
		if !ok {
			return nil, missing()
		}
		return append([]byte(nil), e.data...), nil
	}
	if _, ok := s.index[d]; !ok {
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

// Has reports whether d is stored.
func (s *Store) Has(d string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		_, ok := s.mem[d]
		return ok
	}
	_, ok := s.index[d]
	return ok
}

// Stats are the store's count and total size.
type Stats struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// Stats returns the count and total size of what is stored.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		return Stats{Count: len(s.mem), Bytes: s.total}
	}
	return Stats{Count: len(s.index), Bytes: s.total}
}

// Sweep removes the pre-images older than MaxAge, then the oldest until
// the total fits in MaxBytes. It returns how many it removed.
func (s *Store) Sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweepLocked()
}

func (s *Store) sweepLocked() int {
	now := s.cfg.Now()
	s.lastSweep = now
	m := s.index
	if s.mem != nil {
		m = s.mem
	}
	type aged struct {
		d  string
		at time.Time
	}
	all := make([]aged, 0, len(m))
	for d, e := range m {
		all = append(all, aged{d, e.at})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].at.Equal(all[j].at) {
			return all[i].d < all[j].d
		}
		return all[i].at.Before(all[j].at)
	})
	removed := 0
	for _, a := range all {
		old := s.cfg.MaxAge > 0 && now.Sub(a.at) > s.cfg.MaxAge
		big := s.cfg.MaxBytes > 0 && s.total > s.cfg.MaxBytes
		if !old && !big {
			break // oldest first: the rest are younger and the total fits
		}
		if s.mem == nil {
			if err := os.Remove(s.path(a.d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		s.total -= m[a.d].size
		delete(m, a.d)
		removed++
	}
	return removed
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
	// link's target text, which a revert does not recreate.
	Link bool `json:"link,omitempty"`
	// NotKept says why the content was not stored (too large, I/O):
	// the receipt cannot be reverted.
	NotKept string `json:"not_kept,omitempty"`
}
