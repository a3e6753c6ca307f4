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
	path    string   // the marks file
	copy    string   // its second copy, the data dir's identity (IdentityFile)
	present bool     // either file existed at open
	from    []string // the base names of the files that did

	mu sync.Mutex
	f  *os.File
	fc *os.File // the copy
}

func (m *marks) summary() string {
	return fmt.Sprintf("store %s, commit version %d, fencing tokens up to %d", m.StoreID, m.Version, max(m.FenceHigh, m.FenceFloor))
}

// loadMarks reads the marks file at path and its copy (IdentityFile
// beside it), merged (see readBoth); missing files are not an error.
func loadMarks(path string) (*marks, error) {
	m := &marks{path: path, copy: identityPath(path)}
	if err := m.readBoth(); err != nil {
		return nil, err
	}
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

// open keeps both files open for in-place rewrites and writes the
// current record to each with fsync (the first record, or the one
// reconciled at open).
func (m *marks) open() error {
	var err error
	if m.f, err = openMarksFile(m.path, m.Marks); err != nil {
		return err
	}
	if m.fc, err = openMarksFile(m.copy, m.Marks); err != nil {
		m.f.Close()
		m.f = nil
		return err
	}
	return nil
}

// raise records a higher synced version and fencing mark in both files.
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
	b := encodeMarks(m.Marks)
	_, err := m.f.WriteAt(b, 0)
	if _, cerr := m.fc.WriteAt(b, 0); err == nil {
		err = cerr
	}
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
	var errList []error
	for _, f := range []*os.File{m.f, m.fc} {
		errList = append(errList, f.Sync(), f.Close())
	}
	m.f, m.fc = nil, nil
	return errors.Join(errList...)
}

// WriteMarks replaces the marks file at path and its copy (for `harness
// store reset` and `restore`, with the daemon stopped).
func WriteMarks(path string, mk Marks) error {
	if err := replaceMarksFile(path, mk); err != nil {
		return err
	}
	return replaceMarksFile(identityPath(path), mk)
}

// ReadMarks returns what the marks file at path and its copy record
// (merged), and false when neither is there.
func ReadMarks(path string) (Marks, bool, error) {
	m, err := loadMarks(path)
	if err != nil {
		return Marks{}, false, err
	}
	return m.Marks, m.present, nil
}
