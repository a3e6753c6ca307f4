package audit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// KeySize is the length of an audit key in bytes.
const KeySize = 32

// MACPrefix starts the Hash of a keyed entry: "hmac-sha256:<hex>".
const MACPrefix = "hmac-sha256:"

// handoverDomain prefixes the bytes a key_rotation entry's hand-over MAC
// covers: the head the old key hands over.
const handoverDomain = "harnessd/audit/handover/v1\x00"

// Details keys of a key_rotation entry.
const (
	// DetailOldKeyID names the key that sealed the entries before the
	// rotation.
	DetailOldKeyID = "old_key_id"
	// DetailHandover is the HMAC, made with the old key, of the head it
	// hands over (see Handover).
	DetailHandover = "handover"
)

// Key is one audit HMAC key. Its secret never leaves the package except
// through Secret (for writing the key file): String, GoString and the JSON
// form show the id only, so a key that reaches a log shows no secret.
type Key struct {
	ID     string
	secret []byte
}

// KeyID returns the id of a key: the hex of the first 8 bytes of its
// sha256.
func KeyID(secret []byte) string {
	sum := sha256.Sum256(secret)
	return hex.EncodeToString(sum[:8])
}

// NewKey returns the Key of secret, which must be KeySize bytes.
func NewKey(secret []byte) (Key, error) {
	if len(secret) != KeySize {
		return Key{}, errs.New(errs.InvalidArgument, "audit key is %d bytes, want %d", len(secret), KeySize)
	}
	return Key{ID: KeyID(secret), secret: append([]byte(nil), secret...)}, nil
}

// Secret returns a copy of the key's bytes.
func (k Key) Secret() []byte { return append([]byte(nil), k.secret...) }

// Valid reports whether k holds a secret.
func (k Key) Valid() bool { return len(k.secret) == KeySize }

func (k Key) String() string   { return "audit key " + k.ID }
func (k Key) GoString() string { return "audit.Key{ID: " + strconv.Quote(k.ID) + "}" }

// MarshalJSON encodes the id only.
func (k Key) MarshalJSON() ([]byte, error) { return json.Marshal(map[string]string{"id": k.ID}) }

func (k Key) mac(parts ...[]byte) string {
	m := hmac.New(sha256.New, k.secret)
	for _, p := range parts {
		m.Write(p)
	}
	var sum [sha256.Size]byte
	return MACPrefix + hex.EncodeToString(m.Sum(sum[:0]))
}

// Keyring holds the current audit key, the older ones (so that entries
// they sealed still verify) and the first seq the chain is keyed from.
// It is safe for concurrent use.
type Keyring struct {
	mu        sync.RWMutex
	cur       Key
	keys      map[string]Key
	keyedFrom uint64
}

// NewKeyring returns a keyring whose current key is current, which also
// knows the keys in old. keyedFrom is the first seq that must be keyed
// (entries below it may be unkeyed ones written before keys existed); 0 is
// taken as 1.
func NewKeyring(current Key, old []Key, keyedFrom uint64) (*Keyring, error) {
	if !current.Valid() {
		return nil, errs.New(errs.InvalidArgument, "audit keyring: no current key")
	}
	r := &Keyring{cur: current, keys: map[string]Key{current.ID: current}, keyedFrom: max(keyedFrom, 1)}
	for _, k := range old {
		if k.Valid() {
			r.keys[k.ID] = k
		}
	}
	return r, nil
}

// Current returns the key new entries are sealed with.
func (r *Keyring) Current() Key {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur
}

// Lookup returns the key with the given id.
func (r *Keyring) Lookup(id string) (Key, bool) {
	if r == nil {
		return Key{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.keys[id]
	return k, ok
}

// KeyedFrom returns the first seq that must be keyed (1 for a chain keyed
// from its start).
func (r *Keyring) KeyedFrom() uint64 {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.keyedFrom
}

// Rotate makes next the current key, keeping the previous one for
// verification, and returns the previous one.
func (r *Keyring) Rotate(next Key) (Key, error) {
	if !next.Valid() {
		return Key{}, errs.New(errs.InvalidArgument, "audit keyring: invalid new key")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.keys[next.ID]; dup {
		return Key{}, errs.New(errs.InvalidArgument, "audit keyring: key %s is already known", next.ID)
	}
	old := r.cur
	r.keys[next.ID], r.cur = next, next
	return old, nil
}

// canonical returns the bytes an entry's hash or MAC covers: the hash
// domain followed by e's JSON encoding with Hash set to "".
func (e Entry) canonical() []byte {
	e.Hash = ""
	b, err := json.Marshal(messages.AuditEntry(e))
	if err != nil {
		// Entry holds only strings, numbers, a string slice, a string map
		// and a time; encoding/json cannot fail on it.
		panic("audit: encode entry: " + err.Error())
	}
	return append([]byte(hashDomain), b...)
}

// ComputeMAC returns "hmac-sha256:<hex>" of e's canonical form under k.
// The canonical form includes e.KeyID, so an entry's MAC also binds the id
// of the key that sealed it.
func (e Entry) ComputeMAC(k Key) string { return k.mac(e.canonical()) }

// SealWith chains e after prev like Seal, but records k's id in KeyID and
// sets Hash to the HMAC of the canonical form under k.
func SealWith(prev Entry, e Entry, k Key) Entry {
	e = link(prev, e)
	e.KeyID = k.ID
	e.Hash = e.ComputeMAC(k)
	return e
}

// Handover returns the MAC, under the old key, of the head it hands over
// to the next key: a key_rotation entry carries it in
// Details[DetailHandover], so only a holder of the old key could have
// written the hand-over.
func Handover(old Key, prev Head) string {
	return old.mac([]byte(handoverDomain), []byte(strconv.FormatUint(prev.Seq, 10)), []byte{0}, []byte(prev.Hash))
}

// Rotation returns the key_rotation entry (not yet sealed) that hands the
// chain ending at prev over from old to the next key. Without the old key
// (ok false: it was lost) the entry records the old key id only and says
// the hand-over cannot be proven.
func Rotation(prev Entry, old Key, oldID string, ok bool) Entry {
	e := Entry{Kind: KindKeyRotation, Operation: "audit_rotate_key", Actor: "daemon", Outcome: "rotated",
		Details: map[string]string{DetailOldKeyID: oldID}}
	if ok {
		e.Details[DetailHandover] = Handover(old, HeadOf(prev))
	} else {
		e.Reason = "the previous key is not available: the hand-over cannot be proven"
	}
	return e
}
