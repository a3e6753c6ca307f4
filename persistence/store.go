package persistence

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// ErrNotFound reports a missing key.
var ErrNotFound = errors.New("persistence: not found")

// ErrClosed reports use of a closed Store.
var ErrClosed = errors.New("persistence: store closed")

// Options configures Open. Zero fields mean "use the default".
type Options struct {
	// Dir is the Badger directory. Required unless InMemory.
	Dir string
	// InMemory keeps everything in memory (tests).
	InMemory bool
	// Logger receives Badger's log lines (Info lowered to Debug). Nil = no logs.
	Logger *zap.Logger
	// GCInterval is how often the value log is garbage-collected; 0 = 5 min.
	GCInterval time.Duration
	// ReleaseEvery is how often the pages of the store's mapped files are
	// handed back to the kernel (release.go); 0 = DefaultReleaseEvery,
	// negative = never.
	ReleaseEvery time.Duration
	// MarksPath is the marks file (beside the store directory, not in
	// it) that lets Open detect a store that lost acknowledged writes;
	// its copy, IdentityFile, goes beside it. "" = no marks (tests,
	// throw-away stores).
	MarksPath string
	// Reserve is the free space kept on the store's file system: a
	// write that would leave less is refused with a *FullError. 0 =
	// DefaultReserve of the file system's size; negative = no check.
	Reserve int64
	// RetryWritesAfter is how long writes are refused at once, without
	// touching the disk, after the disk refused one (read-only, I/O
	// error): then one write is let through to see whether it was
	// repaired. 0 = 5 s.
	RetryWritesAfter time.Duration
	// CloseWait bounds Close: a store whose disk hangs (frozen, or Badger
	// retrying a flush into a read-only file system) is left to the
	// process's exit after it, like a crash (the synced writes are in the
	// write-ahead log). 0 = 15 s.
	CloseWait time.Duration
	// Faults injects a failing or slow disk (tests only).
	Faults *Faults
}

// Store is a typed key/value store over Badger. Safe for concurrent use.
type Store struct {
	db    *badger.DB
	stopc chan struct{}
	donec chan struct{}

	closeOnce sync.Once
	closeErr  error
	dbClosed  chan struct{} // closed once Close's work ended (it may outlive Close)

	// life counts the calls in flight so Close waits for them and every
	// call after Close answers ErrClosed: Badger panics when an iterator
	// is opened on a closed DB, and a late walk must not crash the daemon.
	life     sync.Mutex
	inflight int
	closed   bool
	drained  *sync.Cond

	writes atomic.Uint64 // committed read-write transactions
	reads  atomic.Uint64 // read calls (Get, Has, Scan, ScanRaw, Count)
	syncs  atomic.Uint64 // of them, those synced to disk (Update with sync)

	guard *guard // nil in memory
	marks *marks // nil without a marks file
	seq   atomic.Uint64

	dir       string
	faults    *Faults
	retry     time.Duration // Options.RetryWritesAfter
	closeWait time.Duration // Options.CloseWait

	// down is set while the disk refuses writes (downErr, since downAt);
	// probing while the one write let through to test it runs.
	downMu  sync.Mutex // protects downErr, downAt, probing
	downErr error
	downAt  time.Time
	probing bool
}

// commitSeqKey is rewritten (blindly, so it never conflicts) by every synced
// commit: the version of its newest value is the version of the last
// synced commit, which compaction never drops, and which the marks file
// remembers.
var commitSeqKey = MetaKey("seq")

// identityKey holds the store's identity, written once with sync.
var identityKey = MetaKey("identity")

// Identity is the store's identity record.
type Identity struct {
	StoreID string    `json:"store_id"`
	Created time.Time `json:"created"`
}

// Writes counts the read-write transactions committed so far: tests check
// with it that read-only work writes nothing.
func (s *Store) Writes() uint64 { return s.writes.Load() }

// Reads counts the read calls so far (Get, Has, Scan, ScanRaw, Count):
// tests check with it that a read of the work tree never waits on the
// store (Badger's reads wait for the commits in flight, which wait on
// the disk).
func (s *Store) Reads() uint64 { return s.reads.Load() }

// Syncs counts the synced commits so far (Update with sync, PutSync,
// DeleteSync): tests count what an operation makes durable with it.
func (s *Store) Syncs() uint64 { return s.syncs.Load() }

// enter admits one call unless the store is closed; leave ends it.
func (s *Store) enter() bool {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return false
	}
	s.inflight++
	return true
}

func (s *Store) leave() {
	s.life.Lock()
	s.inflight--
	if s.inflight == 0 && s.closed {
		s.drained.Broadcast()
	}
	s.life.Unlock()
}

// Open opens (creating if needed) the store and starts its value-log GC
// loop. An existing store is checked first: its files (MANIFEST present
// beside data, every table's checksums) and, with a marks file, that it
// holds every synced commit the marks recorded. A store that fails is
// refused with a *DamageError naming the file and the recovery.
func Open(o Options) (st *Store, err error) {
	if !o.InMemory && o.Dir == "" {
		return nil, errors.New("persistence: open: no directory")
	}
	var m *marks
	if !o.InMemory {
		if o.MarksPath != "" {
			if m, err = loadMarks(o.MarksPath); err != nil {
				return nil, err
			}
		}
		if err := preflight(o.Dir, m); err != nil {
			return nil, err
		}
	}
	bo := badger.DefaultOptions(o.Dir).
		WithInMemory(o.InMemory).
		WithLogger(nil).
		// Sized on purpose: harnessd stores small snapshots, not bulk data.
		WithMemTableSize(16 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithBlockCacheSize(16 << 20).
		WithIndexCacheSize(8 << 20).
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(2).
		WithCompactL0OnClose(true).
		WithMetricsEnabled(false)
	if o.InMemory {
		bo.Dir, bo.ValueDir = "", ""
	}
	if o.Logger != nil {
		bo = bo.WithLogger(badgerLogger{o.Logger.Named("badger").Sugar()})
	}
	db, err := openBadger(bo)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", o.Dir, mapOpenErr(o.Dir, err))
	}
	s := &Store{db: db, stopc: make(chan struct{}), donec: make(chan struct{}), dir: o.Dir, faults: o.Faults,
		retry: o.RetryWritesAfter, closeWait: o.CloseWait, dbClosed: make(chan struct{})}
	if s.retry <= 0 {
		s.retry = 5 * time.Second
	}
	if s.closeWait <= 0 {
		s.closeWait = 15 * time.Second
	}
	s.drained = sync.NewCond(&s.life)
	if !o.InMemory {
		if err := s.reconcile(o, m); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	interval := o.GCInterval
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	release := o.ReleaseEvery
	if release == 0 {
		release = DefaultReleaseEvery
	}
	if o.InMemory {
		close(s.donec)
	} else {
		go s.gcLoop(interval, release, o.Logger)
	}
	return s, nil
}

// openBadger opens Badger, turning a panic on its own goroutine (a
// damaged file it did not expect) into an error.
func openBadger(bo badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("badger panicked while opening: %v", r)
		}
	}()
	return badger.Open(bo)
}

// reconcile checks the opened store against its marks and its identity,
// then (re)writes both.
func (s *Store) reconcile(o Options, m *marks) error {
	var id Identity
	err := s.db.View(func(txn *badger.Txn) error { return txnGet(txn, identityKey, &id) })
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("read store identity: %w", err)
	}
	version, err := s.seqVersion()
	if err != nil {
		return err
	}
	if m != nil && m.present {
		switch {
		case id.StoreID == "" && m.Version > 0:
			return &DamageError{File: o.Dir, Problem: fmt.Sprintf("the store has no identity record, but %s says it is %s",
				m.source(), m.summary()), Recovery: recoveryText(o.Dir)}
		case id.StoreID != "" && m.StoreID != "" && id.StoreID != m.StoreID:
			return &DamageError{File: o.Dir, Problem: fmt.Sprintf("the store is %s, but %s belongs to store %s: another store was put in its place",
				id.StoreID, m.source(), m.StoreID), Recovery: recoveryText(o.Dir)}
		case version < m.Version:
			return &DamageError{File: o.Dir, Problem: fmt.Sprintf("acknowledged writes are missing: the store's last synced commit is version %d, "+
				"but %s recorded version %d (a write-ahead log (%s) garbled or truncated, or a table lost, after a crash); "+
				"answering from it would run acknowledged requests again", version, m.source(), m.Version, walFiles(o.Dir)),
				Recovery: recoveryText(o.Dir)}
		}
	}
	g, err := newGuard(o.Dir, o.Reserve)
	if err != nil {
		return err
	}
	if id.StoreID == "" {
		if err := g.check(); err != nil {
			return err
		}
		id = Identity{StoreID: newStoreID(), Created: time.Now().UTC()}
		if m != nil && m.StoreID != "" {
			id.StoreID = m.StoreID
		}
		err := s.db.Update(func(txn *badger.Txn) error {
			b, err := Encode(id)
			if err != nil {
				return err
			}
			return txn.Set(identityKey, b)
		})
		if err == nil {
			err = s.db.Sync()
		}
		if err != nil {
			return fmt.Errorf("write store identity: %w", mapErr(err))
		}
	}
	s.guard = g
	if m != nil {
		m.StoreID = id.StoreID
		m.Version = max(m.Version, version)
		if err := m.open(); err != nil {
			return err
		}
		s.marks = m
	}
	return nil
}

// seqVersion returns the version of meta/seq's newest value (0 if none).
func (s *Store) seqVersion() (uint64, error) {
	var v uint64
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(commitSeqKey)
		if err != nil {
			return err
		}
		v = item.Version()
		return nil
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	return v, mapErr(err)
}

func walFiles(dir string) string {
	ms, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	for i := range ms {
		ms[i] = filepath.Base(ms[i])
	}
	if len(ms) == 0 {
		return "no .mem file left"
	}
	return strings.Join(ms, ", ")
}

// Identity returns the store's identity (empty in memory).
func (s *Store) Identity() Identity {
	var id Identity
	_ = s.Get(identityKey, &id)
	return id
}

// Marks returns what the marks file records now (zero without one).
func (s *Store) Marks() Marks { return s.marks.snapshot() }

// FenceFloor is the fencing floor a reset kept: every new fencing token
// must be above it.
func (s *Store) FenceFloor() uint64 { return s.marks.snapshot().FenceFloor }

// DefaultReleaseEvery is how often an open store hands the pages of its
// mapped files back to the kernel (Options.ReleaseEvery).
const DefaultReleaseEvery = 10 * time.Second

// gcLoop garbage-collects the value log every interval and releases the
// store's mapped pages every release (release.go; never when negative, or
// once the kernel refused the advice).
func (s *Store) gcLoop(interval, release time.Duration, lg *zap.Logger) {
	defer close(s.donec)
	t := time.NewTicker(interval)
	defer t.Stop()
	var releaseC <-chan time.Time
	dir := mappedDir(s.dir)
	if release > 0 {
		r := time.NewTicker(release)
		defer r.Stop()
		releaseC = r.C
	}
	for {
		select {
		case <-s.stopc:
			return
		case <-releaseC:
			if _, err := releaseMapped(dir); err != nil {
				releaseC = nil
				if lg != nil {
					lg.Info("the store's mapped pages are left to the kernel", zap.Error(err))
				}
			}
		case <-t.C:
			// RunValueLogGC rewrites at most one file per call; loop until
			// it says there is nothing worth rewriting.
			for s.db.RunValueLogGC(0.5) == nil {
				select {
				case <-s.stopc:
					return
				default:
				}
			}
		}
	}
}

// Close refuses new calls, stops the GC loop, waits for the calls in
// flight and closes Badger. Safe to call more than once. It returns within
// CloseWait whatever the disk does:
//  1. a store whose directory was removed, or whose disk refused writes
//     (Down), is not closed at all: Badger's close would retry flushing
//     its memtable into it forever;
//  2. a close still running after CloseWait (a frozen disk) is left to
//     the process's exit.
//
// Either way nothing acknowledged is lost: every synced write is in
// Badger's write-ahead log, replayed at the next open, as after a crash.
// The error says what was left unflushed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.life.Lock()
		s.closed = true
		s.life.Unlock()
		done := make(chan error, 1)
		go func() {
			defer close(s.dbClosed)
			done <- s.closeDB()
		}()
		t := time.NewTimer(s.closeWait)
		defer t.Stop()
		select {
		case s.closeErr = <-done:
		case <-t.C:
			s.closeErr = fmt.Errorf("persistence: the store did not close within %s (its disk at %s hangs): "+
				"left to the process's exit; writes not synced since the last synced commit (run counters, unsynced spans) "+
				"may be lost, synced ones replay from the write-ahead log at the next start", s.closeWait, s.dir)
		}
	})
	return s.closeErr
}

// closeDB is Close's work, which may hang on a bad disk.
func (s *Store) closeDB() error {
	close(s.stopc)
	<-s.donec
	s.life.Lock()
	for s.inflight > 0 {
		s.drained.Wait()
	}
	s.life.Unlock()
	if err := s.guard.same(); err != nil {
		// The directory is gone: the process leaves Badger as it is (its
		// goroutines end with the process).
		return err
	}
	if err := s.Down(); err != nil && s.guard != nil { // (in memory there is no disk to hang on)
		return errors.Join(fmt.Errorf("persistence: the store was not flushed on close, its disk refuses writes "+
			"(writes not synced since the last synced commit may be lost; synced ones replay from the write-ahead log at the next start): %w", err),
			s.marks.close())
	}
	return errors.Join(s.db.Close(), s.marks.close())
}

// Down returns the error of the disk's last refusal while writes are
// refused at once (*UnavailableError, or a *FullError Badger met), nil
// while writes go to the disk.
func (s *Store) Down() error {
	s.downMu.Lock()
	defer s.downMu.Unlock()
	return s.downErr
}

// admit decides whether a write goes to the disk: not while it is down,
// except one probe every RetryWritesAfter.
func (s *Store) admit() (probe bool, err error) {
	s.downMu.Lock()
	defer s.downMu.Unlock()
	if s.downErr == nil {
		return false, nil
	}
	if s.probing || time.Since(s.downAt) < s.retry {
		return false, s.downErr
	}
	s.probing = true
	return true, nil
}

// settle records what a write that reached the disk met: a refusal of
// the disk puts the store down; a probe that went through brings it up.
// It returns err.
func (s *Store) settle(probe bool, err error) error {
	var ue *UnavailableError
	var fe *FullError
	refused := errors.As(err, &ue) || errors.As(err, &fe) && fe.cause != nil
	if ue != nil && ue.Dir == "" {
		ue.Dir = s.dir
	}
	if fe != nil && fe.Dir == "" {
		fe.Dir = s.dir
	}
	s.downMu.Lock()
	defer s.downMu.Unlock()
	if probe {
		s.probing = false
	}
	switch {
	case refused:
		s.downErr, s.downAt = err, time.Now()
	case probe && err == nil:
		s.downErr = nil
	}
	return err
}

// Get decodes the value at key into v.
func (s *Store) Get(key []byte, v any) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
	s.reads.Add(1)
	return s.db.View(func(txn *badger.Txn) error { return txnGet(txn, key, v) })
}

// Has reports whether key exists.
func (s *Store) Has(key []byte) (bool, error) {
	if !s.enter() {
		return false, ErrClosed
	}
	defer s.leave()
	s.reads.Add(1)
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(key)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, mapErr(err)
}

// Put stores v at key. It is durable once Badger flushes; use PutSync for
// writes that must survive a crash the moment Put returns.
func (s *Store) Put(key []byte, v any) error { return s.put(key, v, false) }

// PutSync stores v at key and fsyncs before returning.
func (s *Store) PutSync(key []byte, v any) error { return s.put(key, v, true) }

func (s *Store) put(key []byte, v any, sync bool) error {
	b, err := Encode(v)
	if err != nil {
		return err
	}
	return s.Update(sync, func(tx *Txn) error { return tx.setRaw(key, b) })
}

// Delete removes key (no error if absent).
func (s *Store) Delete(key []byte) error {
	return s.Update(false, func(tx *Txn) error { return tx.Delete(key) })
}

// DeleteSync removes key and fsyncs.
func (s *Store) DeleteSync(key []byte) error {
	return s.Update(true, func(tx *Txn) error { return tx.Delete(key) })
}

// Update runs fn in a read-write transaction, retrying on conflict, and
// fsyncs after commit when sync is true. A write is refused first when the
// store's file system is short of its reserve (*FullError) or its
// directory was removed or replaced (*DamageError).
func (s *Store) Update(sync bool, fn func(tx *Txn) error) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
	if err := s.guard.check(); err != nil {
		return err
	}
	probe, err := s.admit()
	if err != nil {
		return err
	}
	return s.settle(probe, s.update(sync, fn))
}

// update is Update's write to the disk.
func (s *Store) update(sync bool, fn func(tx *Txn) error) error {
	if err := s.faults.write(); err != nil {
		return mapErr(err)
	}
	var err error
	var fence uint64
	for attempt := 0; attempt < 8; attempt++ {
		err = s.db.Update(func(txn *badger.Txn) error {
			t := &Txn{txn: txn}
			if err := fn(t); err != nil {
				return err
			}
			fence = t.fence
			if sync && s.marks != nil {
				var b [8]byte
				binary.BigEndian.PutUint64(b[:], s.seq.Add(1))
				return txn.Set(commitSeqKey, b[:])
			}
			return nil
		})
		if !errors.Is(err, badger.ErrConflict) {
			break
		}
	}
	if err != nil {
		return mapErr(err)
	}
	s.writes.Add(1)
	if sync {
		s.syncs.Add(1)
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("persistence: sync: %w", mapErr(err))
		}
	}
	if s.marks != nil && (sync || fence > 0) {
		var v uint64
		if sync {
			if v, err = s.seqVersion(); err != nil {
				return err
			}
		}
		if err := s.marks.raise(v, fence); err != nil {
			return fmt.Errorf("persistence: write marks: %w", mapErr(err))
		}
	}
	return nil
}

// Scan calls fn for every key with the given prefix, in key order. decode
// unwraps the value; it is valid only during the call.
func (s *Store) Scan(prefix []byte, fn func(key []byte, decode func(v any) error) error) error {
	return s.ScanFrom(prefix, prefix, fn)
}

// ScanFrom is Scan starting at the first key at or after from (which
// should begin with prefix): an index lookup or a log's tail reads only
// what it needs, not the keys before it.
func (s *Store) ScanFrom(prefix, from []byte, fn func(key []byte, decode func(v any) error) error) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
	s.reads.Add(1)
	return mapErr(s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		if !bytes.Equal(from, prefix) {
			opts.PrefetchSize = 16 // a lookup: few values
		}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(from); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			key := item.KeyCopy(nil)
			err := fn(key, func(v any) error {
				return item.Value(func(b []byte) error { return Decode(b, v) })
			})
			if err != nil {
				return err
			}
		}
		return nil
	}))
}

// ScanRaw calls fn with every key and raw envelope under prefix.
func (s *Store) ScanRaw(prefix []byte, fn func(key, value []byte) error) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
	s.reads.Add(1)
	return mapErr(s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := fn(item.KeyCopy(nil), v); err != nil {
				return err
			}
		}
		return nil
	}))
}

// Count returns the number of keys under prefix.
func (s *Store) Count(prefix []byte) (int, error) {
	if !s.enter() {
		return 0, ErrClosed
	}
	defer s.leave()
	s.reads.Add(1)
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			n++
		}
		return nil
	})
	return n, mapErr(err)
}

// Size returns Badger's LSM and value-log sizes in bytes.
func (s *Store) Size() (lsm, vlog int64) {
	if !s.enter() {
		return 0, 0
	}
	defer s.leave()
	return s.db.Size()
}

// Txn is a read-write transaction handed to Update's function.
type Txn struct {
	txn   *badger.Txn
	fence uint64 // the highest fencing mark put
}

// Get decodes the value at key into v, or returns ErrNotFound.
func (t *Txn) Get(key []byte, v any) error { return txnGet(t.txn, key, v) }

// Put stores v at key. A fencing mark (a uint64 under fence/) raises the
// marks file's fencing high-water mark once the transaction commits.
func (t *Txn) Put(key []byte, v any) error {
	b, err := Encode(v)
	if err != nil {
		return err
	}
	if tok, ok := v.(uint64); ok && bytes.HasPrefix(key, []byte(PrefixFence)) {
		t.fence = max(t.fence, tok)
	}
	return t.setRaw(key, b)
}

// PutEncoded stores value, an envelope encoded elsewhere (Encode), at key:
// a record its owner decided, written in this transaction (one synced
// commit for the records of several owners). A value that is not a valid
// envelope of this build is refused, and so is a fencing mark (its
// high-water mark is raised only by Put).
func (t *Txn) PutEncoded(key, value []byte) error {
	if err := CheckEncoded(key, value); err != nil {
		return err
	}
	return t.setRaw(key, value)
}

// CheckEncoded reports why PutEncoded would refuse key and value: no key,
// a fencing mark, or a value that is not an envelope this build reads.
// A writer that takes records from others checks them when it takes them,
// so a bad one is refused alone, never failing the transaction it joins.
func CheckEncoded(key, value []byte) error {
	if len(key) == 0 {
		return errors.New("persistence: a record without a key")
	}
	if bytes.HasPrefix(key, []byte(PrefixFence)) {
		return fmt.Errorf("persistence: a fencing mark (%s) is written with Put, not as an encoded record", key)
	}
	var state json.RawMessage
	if err := Decode(value, &state); err != nil {
		return fmt.Errorf("persistence: record %s: %w", key, err)
	}
	return nil
}

// Delete removes key.
func (t *Txn) Delete(key []byte) error { return mapErr(t.txn.Delete(key)) }

func (t *Txn) setRaw(key, b []byte) error { return mapErr(t.txn.Set(key, b)) }

func txnGet(txn *badger.Txn, key []byte, v any) error {
	item, err := txn.Get(key)
	if err != nil {
		return mapErr(err)
	}
	return item.Value(func(b []byte) error { return Decode(b, v) })
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return ErrNotFound
	case errors.Is(err, badger.ErrDBClosed):
		return ErrClosed
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &FullError{cause: err}
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EIO):
		return &UnavailableError{cause: err}
	}
	// Badger joins some errors as text (its Sync combines the WAL's and
	// the value log's): the errno's text is all that is left of them.
	switch msg := err.Error(); {
	case strings.Contains(msg, syscall.ENOSPC.Error()), strings.Contains(msg, syscall.EDQUOT.Error()):
		return &FullError{cause: err}
	case strings.Contains(msg, syscall.EROFS.Error()), strings.Contains(msg, syscall.EIO.Error()):
		return &UnavailableError{cause: err}
	}
	return err
}

// badgerLogger adapts zap to badger.Logger; Badger's chatty Info goes to Debug.
type badgerLogger struct{ s *zap.SugaredLogger }

func (l badgerLogger) Errorf(f string, a ...any)   { l.s.Errorf(f, a...) }
func (l badgerLogger) Warningf(f string, a ...any) { l.s.Warnf(f, a...) }
func (l badgerLogger) Infof(f string, a ...any)    { l.s.Debugf(f, a...) }
func (l badgerLogger) Debugf(f string, a ...any)   { l.s.Debugf(f, a...) }

// PruneOldest deletes the first keys under prefix (in key order, the
// oldest for fixed-width sequence keys) beyond the newest keep. Deletes go
// in one unsynced transaction: a crash can only leave more than keep.
func (s *Store) PruneOldest(prefix []byte, keep int) error {
	n, err := s.Count(prefix)
	if err != nil || n <= keep {
		return err
	}
	extra := n - keep
	var old [][]byte
	if err := s.ScanRaw(prefix, func(k, _ []byte) error {
		if len(old) < extra {
			old = append(old, append([]byte(nil), k...))
		}
		return nil
	}); err != nil {
		return err
	}
	return s.Update(false, func(tx *Txn) error {
		for _, k := range old {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
