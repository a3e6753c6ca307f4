package persistence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Backup writes a full backup of the store to w in Badger's backup format
// (a stream of every live key at its version) and returns the version it
// covers. Safe while the store serves requests.
func (s *Store) Backup(w io.Writer) (uint64, error) {
	if !s.enter() {
		return 0, ErrClosed
	}
	defer s.leave()
	return s.db.Backup(w, 0)
}

// Report is what Verify found.
type Report struct {
	Dir      string   `json:"dir"`
	Identity Identity `json:"identity"`
	Marks    Marks    `json:"marks"`
	// Version is the version of the last synced commit the store holds.
	Version uint64 `json:"version"`
	// FenceHigh is the highest fencing mark in the store.
	FenceHigh uint64 `json:"fence_high"`
	Keys      int    `json:"keys"`
	LSMBytes  int64  `json:"lsm_bytes"`
	VlogBytes int64  `json:"vlog_bytes"`
}

// Verify checks every table's block checksums, the store's directory, and
// that it holds what its marks recorded, and reports what it holds.
func (s *Store) Verify() (Report, error) {
	if !s.enter() {
		return Report{}, ErrClosed
	}
	defer s.leave()
	r := Report{Marks: s.marks.snapshot()}
	if s.guard != nil {
		r.Dir = s.guard.dir
		if err := s.guard.same(); err != nil {
			return r, err
		}
	}
	if err := s.db.VerifyChecksum(); err != nil {
		return r, &DamageError{File: r.Dir, Problem: "a table fails its checksum: " + err.Error(), Recovery: recoveryText(r.Dir), cause: err}
	}
	err := s.db.View(func(txn *badger.Txn) error {
		if item, err := txn.Get(identityKey); err == nil {
			_ = item.Value(func(b []byte) error { return Decode(b, &r.Identity) })
		}
		if item, err := txn.Get(commitSeqKey); err == nil {
			r.Version = item.Version()
		}
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		for it.Rewind(); it.Valid(); it.Next() {
			r.Keys++
		}
		it.Close()
		high, err := fenceHigh(txn)
		if err != nil {
			return &DamageError{File: r.Dir, Problem: err.Error(), Recovery: recoveryText(r.Dir)}
		}
		r.FenceHigh = high
		return nil
	})
	if err != nil {
		return r, mapErr(err)
	}
	r.LSMBytes, r.VlogBytes = s.db.Size()
	if r.Marks.Version > r.Version {
		return r, &DamageError{File: r.Dir, Problem: fmt.Sprintf("acknowledged writes are missing: the store's last synced commit is version %d, the marks recorded %d",
			r.Version, r.Marks.Version), Recovery: recoveryText(r.Dir)}
	}
	return r, nil
}

// Restore replaces the store at o.Dir with the backup read from r. The
// store must not be open (the daemon stopped). The store there now, if
// any, is moved aside (never deleted) and its path returned. The marks
// file is rewritten for the restored store, with a fencing floor above
// every token the replaced store (or its marks) ever reserved: tokens
// never go back, though the ledger forgets the requests after the backup.
func Restore(o Options, r io.Reader) (moved string, m Marks, err error) {
	if o.Dir == "" || o.InMemory {
		return "", Marks{}, errors.New("persistence: restore: no directory")
	}
	floor, err := priorFence(o)
	if err != nil {
		return "", Marks{}, err
	}
	if moved, err = moveAside(o.Dir, "replaced"); err != nil {
		return "", Marks{}, err
	}
	s, err := Open(Options{Dir: o.Dir, Logger: o.Logger, Reserve: o.Reserve})
	if err != nil {
		return moved, Marks{}, fmt.Errorf("create the restored store: %w", err)
	}
	if err := s.db.Load(r, 256); err != nil {
		_ = s.Close()
		return moved, Marks{}, fmt.Errorf("load the backup (the replaced store is kept at %s): %w", moved, err)
	}
	rep, err := s.Verify()
	if err == nil {
		err = s.db.Sync()
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return moved, Marks{}, fmt.Errorf("check the restored store: %w", err)
	}
	m = Marks{StoreID: rep.Identity.StoreID, Version: rep.Version, FenceHigh: rep.FenceHigh, FenceFloor: max(floor, rep.FenceHigh)}
	if o.MarksPath != "" {
		if err := WriteMarks(o.MarksPath, m); err != nil {
			return moved, m, fmt.Errorf("write the marks file: %w", err)
		}
	}
	return moved, m, nil
}

// Reset moves the store at o.Dir aside (never deleting it) so the next
// Open starts an empty store, and rewrites the marks file so that store
// is accepted and its fencing tokens start above every token the old one
// reserved. The store must not be open.
func Reset(o Options) (moved string, m Marks, err error) {
	if o.Dir == "" || o.InMemory {
		return "", Marks{}, errors.New("persistence: reset: no directory")
	}
	floor, err := priorFence(o)
	if err != nil {
		return "", Marks{}, err
	}
	if moved, err = moveAside(o.Dir, "reset"); err != nil {
		return "", Marks{}, err
	}
	m = Marks{FenceFloor: floor}
	if o.MarksPath != "" {
		if err := WriteMarks(o.MarksPath, m); err != nil {
			return moved, m, fmt.Errorf("write the marks file: %w", err)
		}
	}
	return moved, m, nil
}

// priorFence is the highest fencing token the store at o.Dir or its marks
// ever reserved, read from the marks (and from the store when it still
// opens, without its checks: a damaged store is why one resets).
func priorFence(o Options) (uint64, error) {
	var floor uint64
	if o.MarksPath != "" {
		m, _, err := ReadMarks(o.MarksPath)
		var de *DamageError
		if err != nil && !errors.As(err, &de) {
			return 0, err
		}
		floor = max(m.FenceHigh, m.FenceFloor)
	}
	if _, err := os.Stat(o.Dir); err == nil && preflight(o.Dir, nil) == nil {
		if db, err := openBadger(badger.DefaultOptions(o.Dir).WithLogger(nil).WithReadOnly(true)); err == nil {
			_ = db.View(func(txn *badger.Txn) error {
				high, _ := fenceHigh(txn) // what decodes counts: the store is why one resets
				floor = max(floor, high)
				return nil
			})
			_ = db.Close()
		}
	}
	return floor, nil
}

// fenceHigh is the highest fencing mark under fence/. It reads every mark,
// and reports the first that does not decode (with the highest of the
// others).
func fenceHigh(txn *badger.Txn) (uint64, error) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(PrefixFence)
	it := txn.NewIterator(opts)
	defer it.Close()
	var high uint64
	var bad error
	for it.Seek(opts.Prefix); it.ValidForPrefix(opts.Prefix); it.Next() {
		var tok uint64
		if err := it.Item().Value(func(b []byte) error { return Decode(b, &tok) }); err != nil {
			if bad == nil {
				bad = fmt.Errorf("fencing mark %q does not decode: %v", it.Item().Key(), err)
			}
			continue
		}
		high = max(high, tok)
	}
	return high, bad
}

func moveAside(dir, why string) (string, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	to := fmt.Sprintf("%s.%s-%s", dir, why, time.Now().UTC().Format("20060102T150405Z"))
	if err := os.Rename(dir, to); err != nil {
		return "", fmt.Errorf("move the store aside: %w", err)
	}
	return to, nil
}
