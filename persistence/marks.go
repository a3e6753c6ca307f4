package persistence

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
)

// The marks file lives beside the store directory (not in it) and records
// what the store has acknowledged: its identity, the version of the last
// synced commit, and the fencing high-water mark. At open the store must
// hold at least what the marks say; a store that lost acknowledged writes
// (a WAL garbled or truncated after a crash, a table dropped, a store
// replaced by another or emptied) is refused instead of silently answering
// old request_ids again and issuing fencing tokens that go back.
//
// The record is one 64-byte block rewritten in place with pwrite after
// every synced commit. It is not fsynced per write: the page cache keeps
// it across a kill -9, and after a power loss it can only be older than
// the store (it is written after the store's own sync), never newer.
const marksSize = 64

var marksMagic = [8]byte{'H', 'D', 'M', 'A', 'R', 'K', 'S', '1'}

// Marks is what the marks file records.
type Marks struct {
	// StoreID identifies the store the marks belong to (meta/identity).
	StoreID string
	// Version is the highest synced commit version seen (of meta/seq).
	Version uint64
	// FenceHigh is the highest fencing token ever reserved.
	FenceHigh uint64
	// FenceFloor: after a reset, every new fencing token is above it.
	FenceFloor uint64
}

type marks struct {
	Marks
	path    string
	present bool // the file existed at open

	mu sync.Mutex
	f  *os.File
}

func (m *marks) summary() string {
	return fmt.Sprintf("store %s, commit version %d, fencing tokens up to %d", m.StoreID, m.Version, max(m.FenceHigh, m.FenceFloor))
}

// loadMarks reads the marks file at path; a missing file is not an error.
func loadMarks(path string) (*marks, error) {
	m := &marks{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	mk, err := decodeMarks(b)
	if err != nil {
		return nil, &DamageError{File: path, Problem: err.Error(),
			Recovery: "the marks file guards against a store that lost acknowledged writes; if the store itself is intact, move the file aside and start again (it is rewritten), or restore a backup"}
	}
	m.Marks, m.present = mk, true
	return m, nil
}

func decodeMarks(b []byte) (Marks, error) {
	if len(b) != marksSize {
		return Marks{}, fmt.Errorf("the marks file is %d bytes, want %d", len(b), marksSize)
	}
	if [8]byte(b[:8]) != marksMagic {
		return Marks{}, errors.New("the marks file does not start with its magic number")
	}
	if crc32.ChecksumIEEE(b[:60]) != binary.BigEndian.Uint32(b[60:]) {
		return Marks{}, errors.New("the marks file fails its checksum")
	}
	var m Marks
	if [16]byte(b[8:24]) != [16]byte{} { // zero: a reset store, not yet opened
		m.StoreID = hex.EncodeToString(b[8:24])
	}
	m.Version = binary.BigEndian.Uint64(b[24:32])
	m.FenceHigh = binary.BigEndian.Uint64(b[32:40])
	m.FenceFloor = binary.BigEndian.Uint64(b[40:48])
	return m, nil
}

func encodeMarks(m Marks) []byte {
	b := make([]byte, marksSize)
	copy(b, marksMagic[:])
	id, _ := hex.DecodeString(m.StoreID)
	copy(b[8:24], id)
	binary.BigEndian.PutUint64(b[24:32], m.Version)
	binary.BigEndian.PutUint64(b[32:40], m.FenceHigh)
	binary.BigEndian.PutUint64(b[40:48], m.FenceFloor)
	binary.BigEndian.PutUint32(b[60:], crc32.ChecksumIEEE(b[:60]))
	return b
}

func newStoreID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// open keeps the file open for in-place rewrites and writes the current
// record with fsync (the first record, or the one reconciled at open).
func (m *marks) open() error {
	f, err := os.OpenFile(m.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open marks file: %w", err)
	}
	if _, err := f.WriteAt(encodeMarks(m.Marks), 0); err != nil {
		f.Close()
		return fmt.Errorf("write marks file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync marks file: %w", err)
	}
	m.f = f
	return nil
}

// raise records a higher synced version and fencing mark.
func (m *marks) raise(version, fence uint64) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if version <= m.Version && fence <= m.FenceHigh || m.f == nil {
		return nil
	}
	m.Version = max(m.Version, version)
	m.FenceHigh = max(m.FenceHigh, fence)
	_, err := m.f.WriteAt(encodeMarks(m.Marks), 0)
	return err
}

func (m *marks) snapshot() Marks {
	if m == nil {
		return Marks{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Marks
}

func (m *marks) close() error {
	if m == nil || m.f == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.f.Sync()
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	m.f = nil
	return err
}

// WriteMarks replaces the marks file at path (for `harness store reset`
// and `restore`, with the daemon stopped).
func WriteMarks(path string, mk Marks) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(encodeMarks(mk)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadMarks returns the marks file at path, and false when there is none.
func ReadMarks(path string) (Marks, bool, error) {
	m, err := loadMarks(path)
	if err != nil {
		return Marks{}, false, err
	}
	return m.Marks, m.present, nil
}
