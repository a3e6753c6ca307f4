package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// The audit key files of a data dir.
const (
	// AuditKeyFile is the current audit key: 32 random bytes, mode 0600,
	// made on first open. It is never logged nor stored in the store.
	AuditKeyFile = "audit.key"
	// auditKeyedFromFile holds the first seq the chain is keyed from (the
	// entries below it were written before keys existed).
	auditKeyedFromFile = "audit.keyed-from"
)

// auditKeys owns the key files of one data dir ("" = in memory) and the
// keyring the audit actor seals with.
type auditKeys struct {
	mu   sync.Mutex // one rotation at a time
	dir  string
	ring *audit.Keyring
}

func newAuditKey() (audit.Key, error) {
	b := make([]byte, audit.KeySize)
	if _, err := rand.Read(b); err != nil {
		return audit.Key{}, errs.Wrap(errs.Internal, err, "make an audit key: %v", err)
	}
	return audit.NewKey(b)
}

// loadAuditKeys reads the audit keys of dataDir, making the key on first
// open ("" = an in-memory key). The keyed-from floor of a new key is after
// the last entry already in the store: those entries stay unkeyed.
func loadAuditKeys(dataDir string, st *persistence.Store, lg *zap.Logger) (*auditKeys, error) {
	if dataDir == "" {
		k, err := newAuditKey()
		if err != nil {
			return nil, err
		}
		ring, err := audit.NewKeyring(k, nil, 1)
		return &auditKeys{ring: ring}, err
	}
	path := filepath.Join(dataDir, AuditKeyFile)
	cur, err := readAuditKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		cur, err = createAuditKey(dataDir, st, lg)
	}
	if err != nil {
		return nil, err
	}
	old, err := oldAuditKeys(dataDir, lg)
	if err != nil {
		return nil, err
	}
	from, err := readKeyedFrom(dataDir)
	if err != nil {
		return nil, err
	}
	ring, err := audit.NewKeyring(cur, old, from)
	if err != nil {
		return nil, err
	}
	lg.Info("audit key loaded", zap.String("key_id", cur.ID), zap.Int("older_keys", len(old)), zap.Uint64("keyed_from", from))
	return &auditKeys{dir: dataDir, ring: ring}, nil
}

// createAuditKey makes the first key of a data dir and records the keyed-
// from floor (unless a lost key's floor is already there).
func createAuditKey(dataDir string, st *persistence.Store, lg *zap.Logger) (audit.Key, error) {
	k, err := newAuditKey()
	if err != nil {
		return audit.Key{}, err
	}
	fromPath := filepath.Join(dataDir, auditKeyedFromFile)
	if _, err := os.Stat(fromPath); err == nil {
		lg.Error("the audit key is missing: a new one was made; entries sealed with the lost key no longer verify: restore audit.key from a backup to prove them",
			zap.String("file", filepath.Join(dataDir, AuditKeyFile)))
	} else {
		last, err := lastAuditSeq(st)
		if err != nil {
			return audit.Key{}, err
		}
		var m messages.AuditEntry
		if last > 0 && st.Get(persistence.AuditKey(last), &m) == nil && m.KeyID != "" {
			lg.Error("the audit key files are missing but the log is keyed: a new key was made; entries sealed with the lost key no longer verify: restore audit.key and audit.keyed-from from a backup to prove them",
				zap.String("file", filepath.Join(dataDir, AuditKeyFile)))
		}
		if err := writeFileSync(dataDir, auditKeyedFromFile, []byte(strconv.FormatUint(last+1, 10)+"\n")); err != nil {
			return audit.Key{}, err
		}
	}
	if err := writeFileSync(dataDir, AuditKeyFile, k.Secret()); err != nil {
		return audit.Key{}, err
	}
	lg.Info("audit key created", zap.String("key_id", k.ID))
	return k, nil
}

// lastAuditSeq returns the highest seq in the store's audit log (0 if none).
func lastAuditSeq(st *persistence.Store) (uint64, error) {
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

func readAuditKey(path string) (audit.Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return audit.Key{}, err
		}
		return audit.Key{}, errs.Wrap(errs.Internal, err, "read the audit key %s: %v", path, err)
	}
	k, err := audit.NewKey(b)
	if err != nil {
		return audit.Key{}, errs.New(errs.Internal, "the audit key %s is %d bytes, want %d: restore it from a backup (or move it aside: a new key is made, and entries sealed with the old one no longer verify)",
			path, len(b), audit.KeySize)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return audit.Key{}, errs.Wrap(errs.Internal, err, "the audit key %s is readable by others and cannot be made 0600: %v", path, err)
		}
	}
	return k, nil
}

// oldAuditKeys reads the audit.key.<id> files a rotation kept.
func oldAuditKeys(dataDir string, lg *zap.Logger) ([]audit.Key, error) {
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "read the data dir: %v", err)
	}
	var out []audit.Key
	for _, e := range ents {
		id, ok := strings.CutPrefix(e.Name(), AuditKeyFile+".")
		if !ok || !validKeyID(id) {
			continue
		}
		k, err := readAuditKey(filepath.Join(dataDir, e.Name()))
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
	b, err := os.ReadFile(filepath.Join(dataDir, auditKeyedFromFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 1, nil // strict: every entry must be keyed
	}
	if err != nil {
		return 0, errs.Wrap(errs.Internal, err, "read %s: %v", auditKeyedFromFile, err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n == 0 {
		return 0, errs.New(errs.Internal, "%s does not hold a sequence number: restore it from a backup, or write 1 in it (every entry must then be keyed)",
			filepath.Join(dataDir, auditKeyedFromFile))
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

// rotate writes a new key file, keeping the old key as audit.key.<id>,
// and makes the new key current.
func (k *auditKeys) rotate() (old, next audit.Key, err error) {
	next, err = newAuditKey()
	if err != nil {
		return audit.Key{}, audit.Key{}, err
	}
	cur := k.ring.Current()
	if k.dir != "" {
		// The old key first: a crash between the two writes leaves both
		// keys on disk, and the actor hands over at its next entry.
		if err := writeFileSync(k.dir, AuditKeyFile+"."+cur.ID, cur.Secret()); err != nil {
			return audit.Key{}, audit.Key{}, err
		}
		if err := writeFileSync(k.dir, AuditKeyFile, next.Secret()); err != nil {
			return audit.Key{}, audit.Key{}, err
		}
	}
	old, err = k.ring.Rotate(next)
	return old, next, err
}

// AuditRotateResult reports a key rotation.
type AuditRotateResult struct {
	KeyID    string `json:"key_id"`
	OldKeyID string `json:"old_key_id"`
	// Seq and Hash are the key_rotation entry's.
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// AuditRotateKey makes a new audit key (the old one is kept as
// <data-dir>/audit.key.<old id>, so the entries it sealed still verify) and
// appends a key_rotation entry sealed with it whose details carry the old
// key id and the previous head's HMAC under the old key. For people (CLI,
// HTTP), never an MCP tool.
func (h *Harness) AuditRotateKey(ctx context.Context) (*AuditRotateResult, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	h.akeys.mu.Lock()
	defer h.akeys.mu.Unlock()
	old, next, err := h.akeys.rotate()
	if err != nil {
		return nil, err
	}
	r, err := h.rt.Audit.RotateKey(ctx, old.ID)
	if err != nil {
		// The key files are rotated: the actor hands over at its next
		// entry, so the chain stays verifiable.
		return nil, err
	}
	h.lg.Info("audit key rotated", zap.String("key_id", next.ID), zap.String("old_key_id", old.ID), zap.Uint64("seq", r.Seq))
	return &AuditRotateResult{KeyID: next.ID, OldKeyID: old.ID, Seq: r.Seq, Hash: r.Hash}, nil
}

// AuditAnchor is the audit head to record outside the store. Printed as one
// JSON line, kept in a file, a git note or a ticket, it lets `audit verify
// --anchor` catch a chain rewritten or truncated below it, even by someone
// who holds the key.
type AuditAnchor struct {
	Seq   uint64    `json:"seq"`
	Hash  string    `json:"hash"`
	KeyID string    `json:"key_id,omitempty"`
	At    time.Time `json:"at"`
}

// AuditAnchorArgs say where else harnessd writes the anchor.
type AuditAnchorArgs struct {
	// GitNoteRepo, if set, is a registered repository: the anchor is added
	// as a git note (ref refs/notes/harnessd-audit) to its HEAD commit.
	GitNoteRepo string `json:"git_note_repo_id,omitempty"`
}

// AuditAnchorResult is an anchor and where it was written.
type AuditAnchorResult struct {
	Anchor AuditAnchor `json:"anchor"`
	// GitNote names the commit the note was added to, if one was.
	GitNote string `json:"git_note_commit,omitempty"`
}

// auditNotesRef is the notes ref of anchors.
const auditNotesRef = "harnessd-audit"

// AuditAnchorHead flushes the audit log and returns its head as an anchor,
// also written as a git note when a.GitNoteRepo is set.
func (h *Harness) AuditAnchorHead(ctx context.Context, a AuditAnchorArgs) (*AuditAnchorResult, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	hd, err := h.rt.Audit.Head(ctx)
	if err != nil {
		return nil, err
	}
	out := &AuditAnchorResult{Anchor: AuditAnchor{Seq: hd.Seq, Hash: hd.Hash, KeyID: hd.KeyID, At: h.cfg.Now().UTC().Truncate(time.Second)}}
	if a.GitNoteRepo == "" {
		return out, nil
	}
	e, ok := h.rt.Registry.Lookup(a.GitNoteRepo)
	if !ok {
		return nil, errs.New(errs.NotFound, "repository %q is not registered: see `harness repos`", a.GitNoteRepo).With("repo_id", a.GitNoteRepo)
	}
	line, err := json.Marshal(out.Anchor)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "encode the anchor: %v", err)
	}
	root := e.Repo.Root
	rev, _, err := h.env.Git.Run(ctx, root, 4096, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, err
	}
	if _, _, err := h.env.Git.Run(ctx, root, 4096, "notes", "--ref="+auditNotesRef, "add", "-f", "-m", string(line), "HEAD"); err != nil {
		return nil, err
	}
	out.GitNote = strings.TrimSpace(string(rev))
	return out, nil
}

// ParseAuditAnchor reads an anchor: one JSON object, or the last non-empty
// line of several (a file anchors were appended to).
func ParseAuditAnchor(s string) (AuditAnchor, error) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	var a AuditAnchor
	if err := json.Unmarshal([]byte(last), &a); err != nil {
		return AuditAnchor{}, errs.New(errs.InvalidArgument, "anchor: want the JSON line `harness audit anchor` prints: %v", err)
	}
	if a.Seq == 0 || a.Hash == "" {
		return AuditAnchor{}, errs.New(errs.InvalidArgument, "anchor: want seq > 0 and a hash (the JSON line `harness audit anchor` prints)")
	}
	return a, nil
}

// AuditVerifyAnchored is AuditVerify that also checks the chain still holds
// the anchored head (same seq and hash); nil = no anchor.
func (h *Harness) AuditVerifyAnchored(ctx context.Context, anchor *AuditAnchor) (*AuditVerifyResult, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var m messages.AuditVerify
	if anchor != nil {
		m.AnchorSeq, m.AnchorHash = anchor.Seq, anchor.Hash
	}
	r, err := h.rt.Audit.VerifyAnchored(ctx, m)
	if err != nil {
		return nil, err
	}
	return &AuditVerifyResult{OK: r.OK, Checked: r.Checked, BrokenSeq: r.BrokenSeq, BrokenReason: r.BrokenReason,
		Unkeyed: r.Unkeyed, KeyID: h.akeys.ring.Current().ID, Anchored: r.Anchored}, nil
}
