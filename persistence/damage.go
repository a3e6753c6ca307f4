package persistence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// DamageError reports a store that failed a check: at open, in `harness
// store verify`, or a write that found the store's directory gone. File
// names the damaged file (or directory); Recovery says what to do. Its
// ErrorCode is STORE_DAMAGED.
type DamageError struct {
	File     string
	Problem  string
	Recovery string
	cause    error
}

func (e *DamageError) Error() string {
	s := "store damaged: " + e.File + ": " + e.Problem
	if e.Recovery != "" {
		s += "; " + e.Recovery
	}
	return s
}

// ErrorCode is the stable code of contract/errs that this error maps to.
func (e *DamageError) ErrorCode() string { return "STORE_DAMAGED" }

func (e *DamageError) Unwrap() error { return e.cause }

// recoveryText is the advice every refusal at open carries.
func recoveryText(dir string) string {
	d := filepath.Dir(dir)
	return fmt.Sprintf("nothing was changed. Recover with `harness --data-dir %s store restore BACKUP` from a backup "+
		"(made with `harness store backup FILE`), or start fresh with `harness --data-dir %s store reset --yes`, which moves the store aside "+
		"and keeps the fencing high-water mark so tokens never go back; `harness --data-dir %s store verify` repeats this check",
		d, d, d)
}

// preflight checks the files of an existing store directory before Badger
// opens it, because Badger starts an empty store when MANIFEST is missing,
// skips a table whose checksum fails (with a log line, and its keys are
// gone), and panics in a goroutine of its own on a truncated table.
func preflight(dir string, m *marks) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		if m != nil && m.present && (m.Version > 0 || m.StoreID != "") {
			return &DamageError{File: dir, Problem: fmt.Sprintf("the store directory is missing, but %s says a store with %s was here",
				m.source(), m.summary()), Recovery: recoveryText(dir)}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read store directory %s: %w", dir, err)
	}
	var data []string
	manifest := false
	for _, e := range ents {
		n := e.Name()
		switch {
		case n == "MANIFEST":
			manifest = true
		case strings.HasSuffix(n, ".mem"):
			// A kill between Badger creating a memtable file and sizing
			// it leaves it empty, and Badger then refuses to open
			// (dgraph-io/badger#2207). An empty file holds no data.
			if info, err := e.Info(); err == nil && info.Size() == 0 {
				if err := os.Remove(filepath.Join(dir, n)); err != nil {
					return fmt.Errorf("remove the empty memtable file %s: %w", n, err)
				}
				continue
			}
			data = append(data, n)
		case strings.HasSuffix(n, ".sst"), strings.HasSuffix(n, ".vlog"):
			data = append(data, n)
		}
	}
	if !manifest && len(data) > 0 {
		sort.Strings(data)
		return &DamageError{File: filepath.Join(dir, "MANIFEST"),
			Problem: fmt.Sprintf("MANIFEST is missing beside %d data files (%s): Badger would start an empty store and "+
				"the ledger and fencing history would be lost", len(data), strings.Join(head(data, 4), ", ")),
			Recovery: recoveryText(dir)}
	}
	if !manifest && m != nil && m.present && m.Version > 0 {
		return &DamageError{File: dir, Problem: fmt.Sprintf("the store is empty, but %s says it held %s",
			m.source(), m.summary()), Recovery: recoveryText(dir)}
	}
	if _, err := os.Stat(filepath.Join(dir, "KEYREGISTRY")); err == nil {
		// Badger leaves goroutines behind when it refuses a garbled
		// registry; read it alone first.
		kr, err := badger.OpenKeyRegistry(badger.KeyRegistryOptions{Dir: dir, ReadOnly: true})
		if err != nil {
			return mapOpenErr(dir, err)
		}
		_ = kr.Close()
	}
	if !manifest {
		return nil
	}
	tables, err := manifestTables(dir)
	if err != nil {
		return &DamageError{File: filepath.Join(dir, "MANIFEST"), Problem: "the manifest cannot be read: " + err.Error(), Recovery: recoveryText(dir), cause: err}
	}
	// Only the tables the manifest lists hold data: a table a crash cut
	// while it was being written is not listed, and Badger removes it.
	for _, t := range tables {
		path := table.NewFilename(t.id, dir)
		if _, err := os.Stat(path); err != nil {
			return &DamageError{File: path, Problem: "the manifest lists this table, but it is missing", Recovery: recoveryText(dir), cause: err}
		}
		if err := verifyTable(path, t.compression); err != nil {
			return &DamageError{File: path, Problem: err.Error(), Recovery: recoveryText(dir), cause: err}
		}
	}
	return nil
}

type listedTable struct {
	id          uint64
	compression options.CompressionType
}

// manifestTables returns the tables MANIFEST lists, in id order.
func manifestTables(dir string) ([]listedTable, error) {
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
	if err != nil {
		return nil, err
	}
	out := make([]listedTable, 0, len(m.Tables))
	for id, t := range m.Tables {
		out = append(out, listedTable{id: id, compression: t.Compression})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}

// verifyTable opens one table read-only and checks every block's
// checksum. A table so damaged that Badger's decoder panics is an error
// here, not a crash.
func verifyTable(path string, compression options.CompressionType) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if i := strings.IndexByte(msg, '\n'); i > 0 {
				msg = msg[:i]
			}
			err = fmt.Errorf("the table cannot be decoded (truncated or overwritten): %s", msg)
		}
	}()
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if st, serr := mf.Fd.Stat(); serr == nil && st.Size() == 0 {
		_ = mf.Close(-1)
		return errors.New("the table is empty (0 bytes)")
	}
	t, err := table.OpenTable(mf, table.Options{
		ReadOnly: true, BlockSize: 4 << 10, BloomFalsePositive: 0.01,
		ChkMode: options.OnTableRead, Compression: compression,
	})
	if err != nil {
		return fmt.Errorf("checksum or format check failed: %v", err)
	}
	// Not t.DecrRef: at zero references it deletes the table's file.
	err = z.Munmap(t.MmapFile.Data)
	return errors.Join(err, t.MmapFile.Fd.Close())
}

// mapOpenErr turns what Badger says when it refuses to open into a
// DamageError that names the file and the recovery.
func mapOpenErr(dir string, err error) error {
	var de *DamageError
	switch {
	case errors.As(err, &de):
		return err
	case errors.Is(err, badger.ErrEncryptionKeyMismatch):
		return &DamageError{File: filepath.Join(dir, "KEYREGISTRY"),
			Problem:  "the key registry is garbled (Badger says \"Encryption key mismatch\"; harnessd never encrypts its store)",
			Recovery: "move KEYREGISTRY aside only if you know the store was never encrypted, or " + recoveryText(dir), cause: err}
	case strings.Contains(err.Error(), "MANIFEST"), strings.Contains(err.Error(), "manifest"):
		return &DamageError{File: filepath.Join(dir, "MANIFEST"), Problem: err.Error(), Recovery: recoveryText(dir), cause: err}
	case strings.Contains(err.Error(), ".mem"), strings.Contains(err.Error(), "wal"):
		return &DamageError{File: dir, Problem: "the write-ahead log cannot be replayed: " + err.Error(), Recovery: recoveryText(dir), cause: err}
	case strings.Contains(err.Error(), ".vlog"), strings.Contains(err.Error(), "value log"):
		return &DamageError{File: dir, Problem: "the value log cannot be read: " + err.Error(), Recovery: recoveryText(dir), cause: err}
	}
	return err
}
