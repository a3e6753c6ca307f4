package audit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// The audit key files of a data dir.
const (
	// KeyFile is the current audit key: 32 random bytes, mode 0600,
	// made on first open. It is never logged nor stored in the store.
	KeyFile = "audit.key"
	// keyedFromFile holds the first seq the chain is keyed from (the
	// entries below it were written before keys existed).
	keyedFromFile = "audit.keyed-from"
)

// KeyFiles owns the key files of one data dir ("" = in memory) and the
// keyring the audit actor seals with.
type KeyFiles struct {
	mu   sync.Mutex // one rotation at a time
	dir  string
	ring *Keyring
}

// Ring is the keyring the audit actor seals with.
func (k *KeyFiles) Ring() *Keyring { return k.ring }

// Lock holds rotations off while the caller hands a rotation to the
// audit actor; Unlock lets the next one in.
func (k *KeyFiles) Lock()   { k.mu.Lock() }
func (k *KeyFiles) Unlock() { k.mu.Unlock() }

func newKey() (Key, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return Key{}, errs.Wrap(errs.Internal, err, "make an audit key: %v", err)
	}
	return NewKey(b)
}

// LoadKeyFiles reads the audit keys of dataDir, making the key on first
// open ("" = an in-memory key). The keyed-from floor of a new key is after
// the last entry already in the store: those entries stay unkeyed.
func LoadKeyFiles(dataDir string, st *persistence.Store, lg *zap.Logger) (*KeyFiles, error) {
	if dataDir == "" {
		k, err := newKey()
		if err != nil {
			return nil, err
		}
		ring, err := NewKeyring(k, nil, 1)
		return &KeyFiles{ring: ring}, err
	}
	path := filepath.Join(dataDir, KeyFile)
	cur, err := readKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		cur, err = createKey(dataDir, st, lg)
	}
	if err != nil {
		return nil, err
	}
	old, err := oldKeys(dataDir, lg)
	if err != nil {
		return nil, err
	}
	from, err := readKeyedFrom(dataDir)
	if err != nil {
		return nil, err
	}
	ring, err := NewKeyring(cur, old, from)
	if err != nil {
		return nil, err
	}
	lg.Info("audit key loaded", zap.String("key_id", cur.ID), zap.Int("older_keys", len(old)), zap.Uint64("keyed_from", from))
	return &KeyFiles{dir: dataDir, ring: ring}, nil
}

// createKey makes the first key of a data dir and records the keyed-
// from floor (unless a lost key's floor is already there).
func createKey(dataDir string, st *persistence.Store, lg *zap.Logger) (Key, error) {
	k, err := newKey()
	if err != nil {
		return Key{}, err
	}
	fromPath := filepath.Join(dataDir, keyedFromFile)
	if _, err := os.Stat(fromPath); err == nil {
		lg.Error("the audit key is missing: a new one was made; entries sealed with the lost key no longer verify: restore audit.key from a backup to prove them",
			zap.String("file", filepath.Join(dataDir, KeyFile)))
	} else {
		last, err := lastSeq(st)
		if err != nil {
			return Key{}, err
		}
		var m messages.AuditEntry
		if last > 0 && st.Get(persistence.AuditKey(last), &m) == nil && m.KeyID != "" {
			lg.Error("the audit key files are missing but the log is keyed: a new key was made; entries sealed with the lost key no longer verify: restore audit.key and audit.keyed-from from a backup to prove them",
				zap.String("file", filepath.Join(dataDir, KeyFile)))
		}
		if err := writeFileSync(dataDir, keyedFromFile, []byte(strconv.FormatUint(last+1, 10)+"\n")); err != nil {
			return Key{}, err
		}
	}
	if err := writeFileSync(dataDir, KeyFile, k.Secret()); err != nil {
		return Key{}, err
	}
	lg.Info("audit key created", zap.String("key_id", k.ID))
	return k, nil
}

// lastSeq returns the highest seq in the store's audit log (0 if none).
func lastSeq(st *persistence.Store) (uint64, error) {
	var last uint64
	err := st.Scan([]byte(persistence.PrefixAudit), func(key []byte, _ func(any) error) error {
		if seq, ok := persistence.SeqOf(key); ok && seq > last {
			last = seq
		}
		return nil
	})
	if err != nil {
		return 0, errs.Wrap(errs.Internal, err, "read the audit log: %v", err)
	}
	return last, nil
}

func readKey(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Key{}, err
		}
		return Key{}, errs.Wrap(errs.Internal, err, "read the audit key %s: %v", path, err)
	}
	k, err := NewKey(b)
	if err != nil {
		return Key{}, errs.New(errs.Internal, "the audit key %s is %d bytes, want %d: restore it from a backup (or move it aside: a new key is made, and entries sealed with the old one no longer verify)",
			path, len(b), KeySize)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return Key{}, errs.Wrap(errs.Internal, err, "the audit key %s is readable by others and cannot be made 0600: %v", path, err)
		}
	}
	return k, nil
}

// oldKeys reads the audit.key.<id> files a rotation kept.
func oldKeys(dataDir string, lg *zap.Logger) ([]Key, error) {
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "read the data dir: %v", err)
	}
	var out []Key
	for _, e := range ents {
		id, ok := strings.CutPrefix(e.Name(), KeyFile+".")
		if !ok || !validKeyID(id) {
			continue
		}
		k, err := readKey(filepath.Join(dataDir, e.Name()))
		if err != nil {
			return nil, err
		}
		if k.ID != id {
			lg.Warn("an old audit key file does not hold the key its name says; ignored", zap.String("file", e.Name()))
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

func validKeyID(id string) bool {
	if len(id) != 16 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

func readKeyedFrom(dataDir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, keyedFromFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 1, nil // strict: every entry must be keyed
	}
	if err != nil {
		return 0, errs.Wrap(errs.Internal, err, "read %s: %v", keyedFromFile, err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n == 0 {
		return 0, errs.New(errs.Internal, "%s does not hold a sequence number: restore it from a backup, or write 1 in it (every entry must then be keyed)",
			filepath.Join(dataDir, keyedFromFile))
	}
	return n, nil
}

// writeFileSync writes name in dir atomically with mode 0600: a temp file,
// synced, renamed, and the directory synced.
func writeFileSync(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "write %s: %v", name, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return errs.Wrap(errs.Internal, err, "write %s: %v", name, err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return errs.Wrap(errs.Internal, err, "write %s: %v", name, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "sync %s: %v", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return errs.Wrap(errs.Internal, err, "sync %s: %v", dir, err)
	}
	return nil
}

// Rotate writes a new key file, keeping the old key as audit.key.<id>,
// and makes the new key current.
func (k *KeyFiles) Rotate() (old, next Key, err error) {
	next, err = newKey()
	if err != nil {
		return Key{}, Key{}, err
	}
	cur := k.ring.Current()
	if k.dir != "" {
		// The old key first: a crash between the two writes leaves both
		// keys on disk, and the actor hands over at its next entry.
		if err := writeFileSync(k.dir, KeyFile+"."+cur.ID, cur.Secret()); err != nil {
			return Key{}, Key{}, err
		}
		if err := writeFileSync(k.dir, KeyFile, next.Secret()); err != nil {
			return Key{}, Key{}, err
		}
	}
	old, err = k.ring.Rotate(next)
	return old, next, err
}
