package persistence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// IdentityFile is the data dir's identity: a second copy of the marks
// file (the same 64-byte record: the store's id, its last synced commit
// version, its fencing high-water mark and floor), beside it and written
// with it. Either file alone lets Open catch a store that is empty,
// replaced or rolled back (a lost write-ahead log): deleting store.marks
// no longer lets a lost store start silently with tokens from 1 and old
// request ids running again. The commit version covers the ledger's and
// the audit log's own high-water marks: every acknowledged ledger record
// and audit entry is in a synced commit, which raises it.
const IdentityFile = "harnessd.identity"

// identityPath is the identity file that goes with the marks file at
// marksPath.
func identityPath(marksPath string) string {
	return filepath.Join(filepath.Dir(marksPath), IdentityFile)
}

// readBoth reads the marks file and its copy and merges what they record:
// the highest version and fencing marks of the two, and the store id they
// share. A copy that fails its checksum, or two files naming different
// stores, refuse the open.
func (m *marks) readBoth() error {
	for _, p := range []string{m.path, m.copy} {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		mk, err := decodeMarks(b)
		if err != nil {
			return &DamageError{File: p, Problem: err.Error(), Recovery: "this file (with " + m.other(p) + " beside it) guards against a store " +
				"that lost acknowledged writes; if the store itself is intact, move the file aside and start again (it is rewritten), or restore a backup"}
		}
		if m.present && mk.StoreID != "" && m.StoreID != "" && mk.StoreID != m.StoreID {
			return &DamageError{File: p, Problem: fmt.Sprintf("it belongs to store %s, but %s to store %s: one of them was copied from another data dir",
				mk.StoreID, filepath.Base(m.path), m.StoreID),
				Recovery: "move aside the one that does not belong to the store here (`harness store verify` names the store's id once it opens), or restore a backup"}
		}
		if mk.StoreID != "" {
			m.StoreID = mk.StoreID
		}
		m.Version = max(m.Version, mk.Version)
		m.FenceHigh = max(m.FenceHigh, mk.FenceHigh)
		m.FenceFloor = max(m.FenceFloor, mk.FenceFloor)
		m.present = true
		m.from = append(m.from, filepath.Base(p))
	}
	return nil
}

// other names the file of the pair that is not p.
func (m *marks) other(p string) string {
	if p == m.path {
		return filepath.Base(m.copy)
	}
	return filepath.Base(m.path)
}

// source names the files the record was read from, for refusals.
func (m *marks) source() string {
	if len(m.from) == 0 {
		return filepath.Base(m.path)
	}
	return strings.Join(m.from, " and ")
}

// openMarksFile opens (creating) the file at path for in-place rewrites
// and writes mk to it with fsync.
func openMarksFile(path string, mk Marks) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open marks file: %w", err)
	}
	if _, err := f.WriteAt(encodeMarks(mk), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write marks file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync marks file %s: %w", path, err)
	}
	return f, nil
}

// replaceMarksFile replaces the file at path with mk: a temp file written
// with fsync, then renamed over it.
func replaceMarksFile(path string, mk Marks) error {
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
