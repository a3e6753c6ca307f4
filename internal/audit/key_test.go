package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/messages"
)

func testKey(t testing.TB, b byte) Key {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// keyedChain seals n entries with k after the entries in prefix.
func keyedChain(prefix []Entry, n int, k Key) []Entry {
	out := append([]Entry(nil), prefix...)
	var prev Entry
	if len(out) > 0 {
		prev = out[len(out)-1]
	}
	for i := range n {
		prev = SealWith(prev, sample(len(prefix)+i), k)
		out = append(out, prev)
	}
	return out
}

// rotate appends the key_rotation entry from old to next and n entries
// sealed with next.
func rotate(es []Entry, old, next Key, n int) []Entry {
	prev := es[len(es)-1]
	r := SealWith(prev, Rotation(prev, old, old.ID, true), next)
	return keyedChain(append(append([]Entry(nil), es...), r), n, next)
}

// rewritePlain is the old attack: from entry i on, change entry i and
// recompute every later hash with plain sha256, keeping (or stripping)
// the key ids.
func rewritePlain(es []Entry, i int, strip bool) []Entry {
	out := append([]Entry(nil), es...)
	out[i].Reason = "nothing happened here"
	for j := i; j < len(out); j++ {
		if j > 0 {
			out[j].PrevHash = out[j-1].Hash
		}
		if strip {
			out[j].KeyID = ""
		}
		out[j].Hash = out[j].ComputeHash()
	}
	return out
}

// rewriteKeyed rewrites from entry i on with key k (recording k's id).
func rewriteKeyed(es []Entry, i int, k Key) []Entry {
	out := append([]Entry(nil), es...)
	out[i].Reason = "nothing happened here"
	for j := i; j < len(out); j++ {
		if j > 0 {
			out[j].PrevHash = out[j-1].Hash
		}
		out[j].KeyID = k.ID
		out[j].Hash = out[j].ComputeMAC(k)
	}
	return out
}

func ring(t testing.TB, cur Key, from uint64, old ...Key) *Keyring {
	t.Helper()
	r, err := NewKeyring(cur, old, from)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestVerifyKeyed(t *testing.T) {
	k1, k2, evil := testKey(t, 1), testKey(t, 2), testKey(t, 9)
	keyed := keyedChain(nil, 6, k1)
	legacy := chain(3)
	upgraded := keyedChain(legacy, 3, k1) // 3 unkeyed, then keyed from 4
	rotated := rotate(keyedChain(nil, 3, k1), k1, k2, 2)
	forgedHandover := append([]Entry(nil), rotated...)
	forgedHandover[3].Details = map[string]string{DetailOldKeyID: k1.ID, DetailHandover: Handover(evil, HeadOf(rotated[2]))}
	forgedHandover[3].Hash = forgedHandover[3].ComputeMAC(k2)
	forgedHandover = rewriteKeyed(forgedHandover, 4, k2)
	forgedHandover[4].Reason = sample(4).Reason // only the link fields change
	for j := 4; j < len(forgedHandover); j++ {
		forgedHandover[j].PrevHash = forgedHandover[j-1].Hash
		forgedHandover[j].Hash = forgedHandover[j].ComputeMAC(k2)
	}
	switched := keyedChain(keyedChain(nil, 2, k1), 0, k1)
	switched = append(switched, SealWith(switched[1], sample(2), k2))

	both := ring(t, k1, 1)
	tests := []struct {
		name    string
		es      []Entry
		o       Options
		checked int
		unkeyed int
		brk     *Break // nil = intact
		reason  string // substring of the break's reason
	}{
		{name: "keyed intact", es: keyed, o: Options{Keys: both}, checked: 6},
		{name: "old attack: plain rewrite from 3", es: rewritePlain(keyed, 2, false), o: Options{Keys: both},
			checked: 3, brk: &Break{Seq: 3}, reason: "hash mismatch"},
		{name: "old attack with key ids stripped from 3", es: rewritePlain(keyed, 2, true), o: Options{Keys: both},
			checked: 3, brk: &Break{Seq: 3}, reason: "unkeyed entry in the keyed chain"},
		{name: "old attack stripped from 1", es: rewritePlain(keyed, 0, true), o: Options{Keys: both},
			checked: 1, brk: &Break{Seq: 1}, reason: "keyed from entry 1"},
		{name: "rewrite with a wrong key, its own id", es: rewriteKeyed(keyed, 2, evil), o: Options{Keys: both},
			checked: 3, brk: &Break{Seq: 3}, reason: "not in the keyring"},
		{name: "rewrite with a wrong key, the real id", es: func() []Entry {
			out := rewriteKeyed(keyed, 2, evil)
			for j := 2; j < len(out); j++ {
				out[j].KeyID = k1.ID
			}
			return out
		}(), o: Options{Keys: both}, checked: 3, brk: &Break{Seq: 3}, reason: "hash mismatch"},
		{name: "no keyring for a keyed chain", es: keyed, o: Options{}, checked: 1, brk: &Break{Seq: 1}, reason: "not in the keyring"},
		{name: "a different key file", es: keyed, o: Options{Keys: ring(t, evil, 1)}, checked: 1, brk: &Break{Seq: 1}, reason: "audit.key missing or replaced"},
		{name: "legacy prefix then keyed", es: upgraded, o: Options{Keys: ring(t, k1, 4)}, checked: 6, unkeyed: 3},
		{name: "legacy only, no keys", es: legacy, o: Options{}, checked: 3, unkeyed: 3},
		{name: "legacy beyond the keyed-from floor", es: legacy, o: Options{Keys: ring(t, k1, 3)}, checked: 3, unkeyed: 2,
			brk: &Break{Seq: 3}, reason: "keyed from entry 3"},
		{name: "unkeyed after keyed", es: func() []Entry {
			out := append([]Entry(nil), upgraded...)
			return append(out, Seal(out[len(out)-1], sample(9)))
		}(), o: Options{Keys: ring(t, k1, 4)}, checked: 7, unkeyed: 3, brk: &Break{Seq: 7}, reason: "unkeyed entry in the keyed chain"},
		{name: "rotation verifies", es: rotated, o: Options{Keys: ring(t, k2, 1, k1)}, checked: 6},
		{name: "rotation without the old key", es: rotated, o: Options{Keys: ring(t, k2, 1)}, checked: 1, brk: &Break{Seq: 1}, reason: "not in the keyring"},
		{name: "rotation with a forged hand-over", es: forgedHandover, o: Options{Keys: ring(t, k2, 1, k1)}, checked: 4,
			brk: &Break{Seq: 4}, reason: "hand-over does not verify"},
		{name: "key switch without rotation", es: switched, o: Options{Keys: ring(t, k2, 1, k1)}, checked: 3,
			brk: &Break{Seq: 3}, reason: "without a key_rotation entry"},
		{name: "anchor held", es: keyed, o: Options{Keys: both, Anchor: HeadOf(keyed[3])}, checked: 6},
		{name: "anchor: rewritten with the key below it", es: rewriteKeyed(keyed, 1, k1), o: Options{Keys: both, Anchor: HeadOf(keyed[3])},
			checked: 4, brk: &Break{Seq: 4}, reason: "does not match the anchor"},
		{name: "anchor: truncated below it", es: keyed[:3], o: Options{Keys: both, Anchor: HeadOf(keyed[4])},
			checked: 3, brk: &Break{Seq: 4}, reason: "truncated below the anchor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := VerifyWith(source(tt.es), tt.o)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if r.Checked != tt.checked || r.Unkeyed != tt.unkeyed {
				t.Errorf("checked %d, unkeyed %d; want %d, %d (break %+v)", r.Checked, r.Unkeyed, tt.checked, tt.unkeyed, r.Break)
			}
			switch {
			case tt.brk == nil && r.Break != nil:
				t.Errorf("break = %+v, want intact", r.Break)
			case tt.brk != nil && r.Break == nil:
				t.Errorf("intact, want a break at %d (%s)", tt.brk.Seq, tt.reason)
			case tt.brk != nil && (r.Break.Seq != tt.brk.Seq || !strings.Contains(r.Break.Reason, tt.reason)):
				t.Errorf("break = %+v, want at %d containing %q", r.Break, tt.brk.Seq, tt.reason)
			}
			if tt.o.Anchor.Seq != 0 && r.Anchored != (r.Break == nil) {
				t.Errorf("anchored = %v with break %+v", r.Anchored, r.Break)
			}
		})
	}
}

func TestKeyNeverPrintsItsSecret(t *testing.T) {
	k := testKey(t, 0xAB)
	hexSecret := fmt.Sprintf("%x", k.Secret())
	js, _ := json.Marshal(struct{ K Key }{k})
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), fmt.Sprintf("%v", []Key{k}), string(js)} {
		if strings.Contains(s, hexSecret) || strings.Contains(s, string(k.Secret())) || strings.Contains(s, "171, 171") {
			t.Errorf("formatted key %q shows its secret", s)
		}
		if !strings.Contains(s, k.ID) {
			t.Errorf("formatted key %q does not name its id %s", s, k.ID)
		}
	}
	if len(k.ID) != 16 || k.ID != KeyID(k.Secret()) {
		t.Errorf("id = %q, want 16 hex of the key's sha256", k.ID)
	}
	if _, err := NewKey(make([]byte, 31)); err == nil {
		t.Error("NewKey accepted a 31-byte key")
	}
}

func TestKeyringRotate(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	r := ring(t, k1, 0)
	if r.KeyedFrom() != 1 {
		t.Errorf("keyed from = %d, want 1", r.KeyedFrom())
	}
	old, err := r.Rotate(k2)
	if err != nil || old.ID != k1.ID || r.Current().ID != k2.ID {
		t.Fatalf("rotate: old %v, current %v, err %v", old, r.Current(), err)
	}
	if _, ok := r.Lookup(k1.ID); !ok {
		t.Error("the old key is gone after a rotation")
	}
	if _, err := r.Rotate(k1); err == nil {
		t.Error("rotating back to a known key was accepted")
	}
}

func TestPrepareRefusesKeyRotation(t *testing.T) {
	if _, err := Prepare(Entry{Kind: KindKeyRotation, Details: map[string]string{DetailOldKeyID: "x"}}, t0); err == nil {
		t.Error("an appender could write a key_rotation entry")
	}
	e, err := Prepare(Entry{Kind: KindJob, KeyID: "forged"}, t0)
	if err != nil || e.KeyID != "" {
		t.Errorf("Prepare kept a caller's key id: %q, %v", e.KeyID, err)
	}
}

// FuzzVerifyKeyed replaces one entry of a keyed chain (with a rotation in
// it) by arbitrary bytes: Verify must not panic, and may accept the chain
// only if the replacement is the original entry.
func FuzzVerifyKeyed(f *testing.F) {
	k1, k2 := testKey(f, 1), testKey(f, 2)
	es := rotate(keyedChain(chain(2), 2, k1), k1, k2, 2)
	keys := ring(f, k2, 3, k1)
	for i, e := range es {
		b, _ := json.Marshal(messages.AuditEntry(e))
		f.Add(b, uint8(i))
		f.Add(bytes.Replace(b, []byte(`"key_id":"`), []byte(`"key_id":"0`), 1), uint8(i))
		f.Add(bytes.Replace(b, []byte(`hmac-sha256:`), []byte(`sha256:`), 1), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, idx uint8) {
		i := int(idx) % len(es)
		var m messages.AuditEntry
		if json.Unmarshal(data, &m) != nil {
			return
		}
		records := append([]Entry(nil), es...)
		records[i] = Entry(m)
		r, err := VerifyWith(source(records), Options{Keys: keys})
		if err != nil {
			t.Fatalf("err = %v", err)
		}
		if r.Break == nil {
			got, _ := json.Marshal(messages.AuditEntry(records[i]))
			want, _ := json.Marshal(messages.AuditEntry(es[i]))
			if !bytes.Equal(got, want) {
				t.Fatalf("changed entry accepted:\n got %s\nwant %s", got, want)
			}
			return
		}
		if r.Break.Seq != uint64(i+1) && r.Break.Seq != uint64(i+2) {
			t.Fatalf("break at %d (%s), want at %d", r.Break.Seq, r.Break.Reason, i+1)
		}
	})
}
