package lease

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// Visibility says whether a lease is persisted and shown in status.
type Visibility string

// The lease visibilities.
const (
	// Ephemeral leases (Fast Path) live only in the owning actors: not
	// persisted, no events. They are lost on restart.
	Ephemeral Visibility = "ephemeral"
	// Durable leases (jobs) are persisted by the owners, visible in status,
	// and restored at boot with Table.Restore.
	Durable Visibility = "durable"
)

// TTL bounds. A zero Request.TTL means DefaultTTL.
const (
	MinTTL     = 3 * time.Second
	MaxTTL     = 120 * time.Second
	DefaultTTL = 30 * time.Second
)

// MaxKeys is the most keys one request may claim.
const MaxKeys = 1024

// Request asks for a lease over Keys.
type Request struct {
	Owner     string        // who asks: an agent session or job id
	Operation string        // what for, e.g. "apply_patch"; named in MUTATION_BUSY
	Keys      []Key         // at least one; duplicates are ignored
	TTL       time.Duration // 0 means DefaultTTL, else MinTTL..MaxTTL
	// Visibility is Ephemeral or Durable; "" means Ephemeral.
	Visibility Visibility
}

// Lease is a granted (or prepared) lease. Keys is sorted and free of
// duplicates; Tokens holds the fencing token of each key. Treat a Lease as an
// immutable value: Commit and Restore keep its Keys and Tokens without copying
// (the Table decides on its own parsed copy, so changing them later corrupts
// only what Get and Leases report), and Get, Leases and Check return deep
// copies. Expires is the expiry the lease was granted (or restored) with; a
// Held moves it with each renewal, the Table never looks at it.
type Lease struct {
	ID         string         `json:"id"`
	Owner      string         `json:"owner"`
	Operation  string         `json:"operation"`
	Keys       []Key          `json:"keys"`
	Tokens     map[Key]uint64 `json:"tokens"`
	TTL        time.Duration  `json:"ttl"`
	Granted    time.Time      `json:"granted"`
	Expires    time.Time      `json:"expires"`
	Visibility Visibility     `json:"visibility"`
}

// Live reports whether l has not expired at now. A lease expires at Expires
// exactly.
func (l Lease) Live(now time.Time) bool { return now.Before(l.Expires) }

// clone returns a deep copy of l.
func (l Lease) clone() Lease {
	l.Keys = slices.Clone(l.Keys)
	l.Tokens = maps.Clone(l.Tokens)
	return l
}

// Table is the overlap index of one checkout (or several; keys of different
// checkouts never overlap): which keys are leased by which lease, and the
// newest fencing token of each key. A recorded lease holds its keys until
// it is released: the Table has no clock, because the lease's own holder
// (a Held, in its actor) decides when it expires and then releases it here.
// It is not safe for concurrent use: one actor owns it. The zero value is
// not usable; call NewTable.
type Table struct {
	leases    map[string]*entry
	highWater map[Key]uint64 // newest token ever issued (or restored) per key
	holder    map[Key]string // id of the lease that holds highWater[key]
	prepared  []parsedKey    // keys of the last Prepare, so Commit need not re-validate
	floor     uint64         // every new token is above it (a store reset or restore)
}

// SetFloor makes every token issued from now on greater than floor: after
// the store was reset or restored from a backup, the high-water marks it
// holds are older than tokens already handed out.
func (t *Table) SetFloor(floor uint64) { t.floor = floor }

// entry is a recorded lease with its keys split for fast overlap checks.
type entry struct {
	Lease
	parts []parsedKey // read-only; may be shared with Table.prepared
}

// parsedKey is a valid key with its parts and, once prepared, its token.
// The Table decides only on parsedKeys, never on a Lease's Keys and Tokens.
type parsedKey struct {
	key Key
	p   parts
	tok uint64
}

// NewTable returns an empty Table that continues from the persisted high-water
// marks, so it never issues a token at or below one issued before. highWater
// is copied and may be nil.
func NewTable(highWater map[Key]uint64) *Table {
	t := &Table{
		leases:    make(map[string]*entry),
		highWater: make(map[Key]uint64, len(highWater)),
		holder:    make(map[Key]string),
	}
	for k, v := range highWater {
		if v > 0 {
			t.highWater[k] = v
		}
	}
	return t
}

// Check returns a copy of a recorded lease that blocks req, or nil if req's
// keys overlap no recorded lease. Leases are not reentrant: a lease of the
// same owner blocks too. Check does not validate req; Prepare does.
func (t *Table) Check(req Request) (blocker *Lease) {
	ps := make([]parsedKey, 0, len(req.Keys))
	for _, k := range req.Keys {
		if p, ok := split(k); ok {
			ps = append(ps, parsedKey{key: k, p: p})
		}
	}
	b, _, _ := t.blocker(ps)
	if b == nil {
		return nil
	}
	c := b.clone()
	return &c
}

// blocker returns the recorded lease with the smallest ID that overlaps
// keys, with the held and requested keys that overlap.
func (t *Table) blocker(keys []parsedKey) (b *Lease, held, wanted Key) {
	for id, e := range t.leases {
		if b != nil && id >= b.ID {
			continue
		}
	scan:
		for _, h := range e.parts {
			for _, w := range keys {
				if overlapParts(h.p, w.p) {
					b, held, wanted = &e.Lease, h.key, w.key
					break scan
				}
			}
		}
	}
	return b, held, wanted
}

// overlapAny returns the first pair of overlapping keys of a and b.
func overlapAny(a, b []Key) (Key, Key, bool) {
	for _, x := range a {
		for _, y := range b {
			if Overlaps(x, y) {
				return x, y, true
			}
		}
	}
	return "", "", false
}

// Prepare validates req and returns the lease that Commit would record,
// without changing the Table: each key gets the token high-water+1, the lease
// is granted at now and expires TTL later (unless its holder renews it).
//
// Errors: errs.InvalidArgument for a bad TTL, visibility or key, or no keys;
// errs.MutationBusy when a recorded lease overlaps, with details
// holder_operation, holder_owner, lease_id, expires_at (RFC 3339, UTC: the
// blocker's Expires as recorded; see Busy), held_key and requested_key.
func (t *Table) Prepare(req Request, now time.Time) (Lease, error) {
	ttl := req.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return Lease{}, errs.New(errs.InvalidArgument, "lease ttl %v is outside %v..%v", req.TTL, MinTTL, MaxTTL)
	}
	vis := req.Visibility
	switch vis {
	case "":
		vis = Ephemeral
	case Ephemeral, Durable:
	default:
		return Lease{}, errs.New(errs.InvalidArgument, "lease visibility %q is not %q or %q", clip(string(vis)), Ephemeral, Durable)
	}
	keys, ps, err := normalizeKeys(req.Keys)
	if err != nil {
		return Lease{}, err
	}
	if b, held, wanted := t.blocker(ps); b != nil {
		return Lease{}, Busy(*b, held, wanted)
	}
	tokens := make(map[Key]uint64, len(keys))
	for i, k := range keys {
		hw := max(t.highWater[k], t.floor)
		if hw == math.MaxUint64 {
			return Lease{}, errs.New(errs.Internal, "fencing tokens of %q are exhausted", clip(string(k)))
		}
		tokens[k] = hw + 1
		ps[i].tok = hw + 1
	}
	id := leaseID(keys, tokens)
	if _, dup := t.leases[id]; dup {
		return Lease{}, errs.New(errs.Internal, "lease id %s is already in use", id)
	}
	t.prepared = ps
	return Lease{
		ID:         id,
		Owner:      req.Owner,
		Operation:  req.Operation,
		Keys:       keys,
		Tokens:     tokens,
		TTL:        ttl,
		Granted:    now,
		Expires:    now.Add(ttl),
		Visibility: vis,
	}, nil
}

// normalizeKeys validates keys and returns them sorted, without duplicates, in
// a new slice, with their parts.
func normalizeKeys(keys []Key) ([]Key, []parsedKey, error) {
	if len(keys) == 0 {
		return nil, nil, errs.New(errs.InvalidArgument, "a lease needs at least one key")
	}
	if len(keys) > MaxKeys {
		return nil, nil, errs.New(errs.InvalidArgument, "a lease may claim at most %d keys, got %d", MaxKeys, len(keys))
	}
	out := make([]Key, len(keys))
	copy(out, keys)
	slices.Sort(out)
	out = slices.Compact(out)
	ps := make([]parsedKey, len(out))
	for i, k := range out {
		p, err := parseKey(k)
		if err != nil {
			return nil, nil, err
		}
		ps[i] = parsedKey{key: k, p: p}
	}
	return out, ps, nil
}

// Busy builds the MUTATION_BUSY error for a request of wanted blocked by
// b's held key. The owner of the Table calls it again with b's current
// expiry (the Table knows only the recorded one) before it answers.
func Busy(b Lease, held, wanted Key) *errs.Error {
	exp := b.Expires.UTC().Format(time.RFC3339Nano)
	op := b.Operation
	if op == "" {
		op = "an unnamed operation"
	}
	return &errs.Error{
		Code: errs.MutationBusy,
		Message: "busy: " + op + " (owner " + strconv.Quote(b.Owner) + ", lease " + b.ID + ") holds " +
			clip(string(held)) + " until " + exp + "; retry after it finishes",
		Details: map[string]any{
			"holder_operation": b.Operation,
			"holder_owner":     b.Owner,
			"lease_id":         b.ID,
			"expires_at":       exp,
			"held_key":         string(held),
			"requested_key":    string(wanted),
		},
	}
}

// leaseID derives a lease id from the first key's token and a hash of the key
// set: "l-<token>-<16 hex>". A key's tokens are never reused, also across
// restarts, so two leases can share an id only if they have different first
// keys with the same token and the 64-bit hashes of their key sets collide.
func leaseID(keys []Key, tokens map[Key]uint64) string {
	var stack [512]byte
	in := stack[:0]
	for _, k := range keys {
		in = append(in, k...)
		in = append(in, '\n')
	}
	sum := sha256.Sum256(in)
	var idBuf [2 + 20 + 1 + 16]byte
	buf := append(idBuf[:0], "l-"...)
	buf = strconv.AppendUint(buf, tokens[keys[0]], 10)
	buf = append(buf, '-')
	buf = hex.AppendEncode(buf, sum[:8])
	return string(buf)
}

// HighWater returns a copy of the newest token issued per key. Keys never
// issued are absent.
func (t *Table) HighWater() map[Key]uint64 { return maps.Clone(t.highWater) }

// HighWaterWith returns the high-water marks as they will be after
// Commit(l): HighWater raised by l.Tokens. Persist these (or just l.Tokens,
// per key) before calling Commit.
func (t *Table) HighWaterWith(l Lease) map[Key]uint64 {
	hw := maps.Clone(t.highWater)
	if hw == nil {
		hw = make(map[Key]uint64, len(l.Tokens))
	}
	for k, tok := range l.Tokens {
		if tok > hw[k] {
			hw[k] = tok
		}
	}
	return hw
}

// Commit records a lease returned by Prepare and raises the high-water marks
// to its tokens. The caller must persist the new marks (l.Tokens or
// HighWaterWith(l)) before calling Commit and replying.
//
// Commit does not copy l.Keys and l.Tokens; do not modify them afterwards.
//
// Commit is a compare-and-set: if l is malformed, or became stale after
// Prepare (a token is no longer above the high-water mark, or an overlapping
// lease was committed meanwhile), the lease is not recorded — its tokens are
// never Current — though valid marks are still raised, since they may have
// been persisted. Get tells whether Commit recorded it.
func (t *Table) Commit(l Lease) {
	ps, ok := t.wellFormed(l)
	if !ok {
		return
	}
	stale := false
	for _, pk := range ps {
		if pk.tok <= t.highWater[pk.key] {
			stale = true
		} else {
			t.highWater[pk.key] = pk.tok
		}
	}
	if stale {
		return
	}
	if _, dup := t.leases[l.ID]; dup {
		return
	}
	if b, _, _ := t.blocker(ps); b != nil {
		return
	}
	t.insert(l, ps)
}

// wellFormed reports whether l has an id, valid sorted unique keys, a
// non-zero token for each key and nothing else, and a positive lifetime, and
// returns its parsed keys with their tokens. Keys and tokens equal to those of
// the last Prepare are not parsed again.
func (t *Table) wellFormed(l Lease) ([]parsedKey, bool) {
	if l.ID == "" || len(l.Keys) == 0 || len(l.Keys) > MaxKeys || len(l.Tokens) != len(l.Keys) || !l.Expires.After(l.Granted) {
		return nil, false
	}
	reuse := len(t.prepared) == len(l.Keys)
	for i, k := range l.Keys {
		if i > 0 && l.Keys[i-1] >= k {
			return nil, false
		}
		tok := l.Tokens[k]
		if tok == 0 {
			return nil, false
		}
		reuse = reuse && t.prepared[i].key == k && t.prepared[i].tok == tok
	}
	if reuse {
		return t.prepared, true
	}
	ps := make([]parsedKey, len(l.Keys))
	for i, k := range l.Keys {
		p, err := parseKey(k)
		if err != nil {
			return nil, false
		}
		ps[i] = parsedKey{key: k, p: p, tok: l.Tokens[k]}
	}
	return ps, true
}

// insert stores l with its parsed keys and makes it the holder of every key
// whose high-water mark is its token.
func (t *Table) insert(l Lease, ps []parsedKey) {
	t.leases[l.ID] = &entry{Lease: l, parts: ps}
	for _, pk := range ps {
		if t.highWater[pk.key] == pk.tok {
			t.holder[pk.key] = l.ID
		}
	}
}

// token returns the token e holds for key, or 0.
func (e *entry) token(key Key) uint64 {
	for _, pk := range e.parts {
		if pk.key == key {
			return pk.tok
		}
	}
	return 0
}

// remove deletes the lease with id and its holder entries.
func (t *Table) remove(id string) (*Lease, bool) {
	e, ok := t.leases[id]
	if !ok {
		return nil, false
	}
	delete(t.leases, id)
	for _, pk := range e.parts {
		if t.holder[pk.key] == id {
			delete(t.holder, pk.key)
		}
	}
	return &e.Lease, true
}

// Get returns a copy of the recorded lease with id.
func (t *Table) Get(id string) (Lease, bool) {
	l, ok := t.leases[id]
	if !ok {
		return Lease{}, false
	}
	return l.clone(), true
}

// Release removes the lease and returns it, or false if it is not recorded.
func (t *Table) Release(id string) (Lease, bool) {
	l, ok := t.remove(id)
	if !ok {
		return Lease{}, false
	}
	return *l, true
}

// Current is the fencing check of the index: it reports whether token is
// the newest issued for key and the lease holding it is still recorded.
// Whether that lease is still live is its holder's to say (Held.Fence): a
// write site needs both.
func (t *Table) Current(key Key, token uint64) bool {
	if token == 0 || t.highWater[key] != token {
		return false
	}
	id, ok := t.holder[key]
	if !ok {
		return false
	}
	e, ok := t.leases[id]
	return ok && e.token(key) == token
}

// Leases returns copies of all recorded leases, sorted by ID.
func (t *Table) Leases() []Lease {
	out := make([]Lease, 0, len(t.leases))
	for _, l := range t.leases {
		out = append(out, l.clone())
	}
	slices.SortFunc(out, byID)
	return out
}

func byID(a, b Lease) int {
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

// Restore re-inserts a persisted durable lease at boot, after NewTable and
// before serving; restore only leases still live at boot (Lease.Live), since
// an expired one has no holder left to release it. Its tokens should be at or
// below the restored high-water marks; a token above is taken as issued and
// raises the mark, so fencing never goes back. The lease holds a key only if
// its token is that key's high-water mark.
//
// Malformed leases (see Commit) and ids already present are ignored. If the
// lease overlaps a recorded one, the one granted later wins: the arbiter
// granted it, so the earlier one had ended by then. Get tells whether the
// lease was restored.
func (t *Table) Restore(l Lease) {
	ps, ok := t.wellFormed(l)
	if !ok {
		return
	}
	if _, dup := t.leases[l.ID]; dup {
		return
	}
	for _, pk := range ps {
		if pk.tok > t.highWater[pk.key] {
			t.highWater[pk.key] = pk.tok
		}
	}
	var older []string
	for id, o := range t.leases {
		if _, _, ok := overlapAny(o.Keys, l.Keys); !ok {
			continue
		}
		if !o.Granted.Before(l.Granted) {
			return
		}
		older = append(older, id)
	}
	for _, id := range older {
		t.remove(id)
	}
	t.insert(l, ps)
}
