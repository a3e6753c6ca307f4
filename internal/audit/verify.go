package audit

import (
	"errors"
	"strconv"
)

// Break is the first broken entry of a chain and why it is broken. Reasons:
//
//   - "hash mismatch": the entry's content does not hash to its Hash (it
//     was edited);
//   - "prev_hash does not match entry N-1" (or "prev_hash is not the genesis
//     value" for entry 1): the entry does not follow the one before it;
//   - "sequence gap after N": entry N+1 is missing (Seq is N+1);
//   - "sequence out of order after N": the next entry's Seq is not above N;
//   - "undecodable": the stored record is not a readable entry;
//   - "entry M stored under this seq": a readable entry sits under another
//     entry's key (reported by the store reader of actors/audit.go);
//   - "entries after N are missing (head is M)": the log ends before the
//     recorded head (see CheckHead).
//
// A *Break is also an error, so a Verify source can report an entry it
// cannot even decode.
type Break struct {
	Seq    uint64 `json:"seq"`
	Reason string `json:"reason"`
}

func (b *Break) Error() string {
	return "audit chain broken at entry " + strconv.FormatUint(b.Seq, 10) + ": " + b.Reason
}

// Undecodable returns the Break a Verify source reports for the record
// stored under seq that it cannot decode.
func Undecodable(seq uint64) *Break { return &Break{Seq: seq, Reason: "undecodable"} }

// Verify reads entries in ascending Seq order from next until it returns
// false, and checks that they form one chain starting at entry 1: no gaps,
// every Hash matches the entry's content and every PrevHash matches the
// Hash before it. It stops at the first broken entry and returns it.
//
// next returns the next entry and true, or false at the end. An error from
// next that is (or wraps) a *Break is reported as the first break; any other
// error aborts Verify and is returned as err. checked counts the entries
// read, including a broken one.
func Verify(next func() (Entry, bool, error)) (checked int, first *Break, err error) {
	r, err := VerifyWith(next, Options{})
	return r.Checked, r.Break, err
}

// Options are what VerifyWith checks a chain against.
type Options struct {
	// Keys are the keys keyed entries may name; nil = none (every keyed
	// entry breaks the chain) and every entry may be unkeyed.
	Keys *Keyring
	// Anchor, if its Seq is not 0, is a head recorded outside the store:
	// the chain must hold entry Anchor.Seq with Hash Anchor.Hash.
	Anchor Head
}

// Result is the outcome of VerifyWith.
type Result struct {
	// Checked counts the entries read, including a broken one.
	Checked int
	// Unkeyed counts the entries checked by their plain hash.
	Unkeyed int
	// Anchored is true when the anchor was found (and matched).
	Anchored bool
	// Last is the last entry accepted (zero if none).
	Last Entry
	// Break is the first broken entry; nil when the chain holds.
	Break *Break
}

// VerifyWith is Verify with keys and an anchor: see Verifier for the rules
// of keyed entries. At the end of the entries it also reports an anchor
// beyond the last one (a truncated chain).
func VerifyWith(next func() (Entry, bool, error), o Options) (Result, error) {
	return NewVerifier(o).Run(next)
}

// Run feeds the Verifier the entries next yields until they end or one
// breaks the chain, and returns its result. next may report a *Break (an
// undecodable record) as its error.
func (v *Verifier) Run(next func() (Entry, bool, error)) (Result, error) {
	for {
		e, ok, err := next()
		if err != nil {
			if b, isBreak := errors.AsType[*Break](err); isBreak {
				v.res.Checked++
				v.res.Break = b
				return v.res, nil
			}
			return v.res, err
		}
		if !ok {
			v.res.Break = v.End()
			return v.res, nil
		}
		if b := v.Next(e); b != nil {
			return v.res, nil
		}
	}
}

// Verifier checks a chain one entry at a time. Beyond Link's rules:
//
//   - an unkeyed entry (no KeyID) is checked by its plain hash, and only
//     below the keyring's KeyedFrom and before the first keyed entry
//     ("unkeyed entry in the keyed chain"): stripping the key ids and
//     rehashing with plain sha256 does not pass;
//   - a keyed entry must name a key of the keyring ("sealed with key K,
//     which is not in the keyring") and its Hash must be the HMAC under it
//     ("hash mismatch");
//   - the key may change only at a key_rotation entry ("key changed from
//     A to B without a key_rotation entry"), whose old_key_id must be the
//     previous entry's key and whose handover must be the previous head's
//     HMAC under that key ("key_rotation hand-over ...");
//   - the anchored entry must have the anchored hash ("does not match the
//     anchor").
type Verifier struct {
	o     Options
	prev  Entry
	keyed bool // a keyed entry was accepted
	res   Result
}

// NewVerifier returns a Verifier before entry 1.
func NewVerifier(o Options) *Verifier { return &Verifier{o: o} }

// Next checks e, the next entry, and returns the break it makes (the
// Verifier keeps it), or nil. After a break the Verifier accepts nothing.
func (v *Verifier) Next(e Entry) *Break {
	if v.res.Break != nil {
		return v.res.Break
	}
	v.res.Checked++
	b := v.check(e)
	if b != nil {
		v.res.Break = b
		return b
	}
	v.prev, v.res.Last = e, e
	return nil
}

// End returns the break of a chain that ends before the anchor, or nil.
func (v *Verifier) End() *Break {
	if v.res.Break != nil {
		return v.res.Break
	}
	if a := v.o.Anchor; a.Seq > v.prev.Seq {
		v.res.Break = &Break{Seq: v.prev.Seq + 1, Reason: "entries after " + strconv.FormatUint(v.prev.Seq, 10) +
			" are missing: the anchor names entry " + strconv.FormatUint(a.Seq, 10) + " (the chain was truncated below the anchor)"}
	}
	return v.res.Break
}

func (v *Verifier) check(e Entry) *Break {
	prev := v.prev
	if e.KeyID == "" {
		if b := Link(prev, e); b != nil {
			return b
		}
		if v.keyed {
			return &Break{Seq: e.Seq, Reason: "unkeyed entry in the keyed chain (entries after a keyed one must be keyed: rewritten without the key?)"}
		}
		if from := v.o.Keys.KeyedFrom(); from > 0 && e.Seq >= from {
			return &Break{Seq: e.Seq, Reason: "unkeyed entry in the keyed chain (the chain is keyed from entry " +
				strconv.FormatUint(from, 10) + ": rewritten without the key?)"}
		}
		v.res.Unkeyed++
		return v.anchor(e)
	}
	if b := seqLink(prev, e); b != nil {
		return b
	}
	k, ok := v.o.Keys.Lookup(e.KeyID)
	if !ok {
		return &Break{Seq: e.Seq, Reason: "sealed with key " + clip(e.KeyID, 64) +
			", which is not in the keyring (audit.key missing or replaced: restore it and its audit.key.<id> files from a backup)"}
	}
	if e.ComputeMAC(k) != e.Hash {
		return &Break{Seq: e.Seq, Reason: "hash mismatch"}
	}
	if b := prevLink(prev, e); b != nil {
		return b
	}
	if b := v.rotation(prev, e); b != nil {
		return b
	}
	v.keyed = true
	return v.anchor(e)
}

// rotation checks a key change and a key_rotation entry's hand-over.
func (v *Verifier) rotation(prev, e Entry) *Break {
	changed := prev.KeyID != "" && prev.KeyID != e.KeyID
	if e.Kind != KindKeyRotation {
		if changed {
			return &Break{Seq: e.Seq, Reason: "key changed from " + prev.KeyID + " to " + clip(e.KeyID, 64) + " without a key_rotation entry"}
		}
		return nil
	}
	oldID := e.Details[DetailOldKeyID]
	if prev.KeyID != "" && oldID != prev.KeyID {
		return &Break{Seq: e.Seq, Reason: "key_rotation names old key " + clip(oldID, 64) + ", but entry " +
			strconv.FormatUint(prev.Seq, 10) + " was sealed with " + prev.KeyID}
	}
	old, ok := v.o.Keys.Lookup(oldID)
	if !ok {
		return &Break{Seq: e.Seq, Reason: "key_rotation hand-over cannot be checked: old key " + clip(oldID, 64) + " is not in the keyring"}
	}
	if got := e.Details[DetailHandover]; got == "" || got != Handover(old, HeadOf(prev)) {
		return &Break{Seq: e.Seq, Reason: "key_rotation hand-over does not verify with old key " + old.ID}
	}
	return nil
}

func (v *Verifier) anchor(e Entry) *Break {
	if a := v.o.Anchor; a.Seq != 0 && e.Seq == a.Seq {
		if e.Hash != a.Hash {
			return &Break{Seq: e.Seq, Reason: "does not match the anchor (the chain was rewritten at or below the anchored entry)"}
		}
		v.res.Anchored = true
	}
	return nil
}

// Link checks one link of the chain: that e is the entry right after prev
// (the zero Entry before entry 1) and that e's Hash is the plain sha256 of
// its content (the rule of unkeyed entries). It returns nil when the link
// holds.: it is the rule of unkeyed entries.
func Link(prev, e Entry) *Break {
	if b := seqLink(prev, e); b != nil {
		return b
	}
	if e.ComputeHash() != e.Hash {
		return &Break{Seq: e.Seq, Reason: "hash mismatch"}
	}
	return prevLink(prev, e)
}

// seqLink checks that e's Seq follows prev's.
func seqLink(prev, e Entry) *Break {
	switch want := prev.Seq + 1; {
	case e.Seq > want:
		return &Break{Seq: want, Reason: "sequence gap after " + strconv.FormatUint(prev.Seq, 10)}
	case e.Seq < want:
		return &Break{Seq: want, Reason: "sequence out of order after " + strconv.FormatUint(prev.Seq, 10)}
	}
	return nil
}

// prevLink checks that e's PrevHash is prev's Hash (Genesis for entry 1).
func prevLink(prev, e Entry) *Break {
	if prev.Seq == 0 {
		if e.PrevHash != Genesis {
			return &Break{Seq: e.Seq, Reason: "prev_hash is not the genesis value"}
		}
		return nil
	}
	if e.PrevHash != prev.Hash {
		return &Break{Seq: e.Seq, Reason: "prev_hash does not match entry " + strconv.FormatUint(prev.Seq, 10)}
	}
	return nil
}

// Head is the position of the last persisted entry, stored beside the log
// in the same transaction as every batch.
type Head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// HeadOf returns the head after e.
func HeadOf(e Entry) Head { return Head{Seq: e.Seq, Hash: e.Hash} }

// CheckHead compares the last entry Verify accepted (the zero Entry for an
// empty log) with the expected head, and reports a log that ends early
// (truncated tail) or whose last entry is not the head.
func CheckHead(last Entry, head Head) *Break {
	switch {
	case last.Seq < head.Seq:
		return &Break{Seq: last.Seq + 1, Reason: "entries after " + strconv.FormatUint(last.Seq, 10) +
			" are missing (head is " + strconv.FormatUint(head.Seq, 10) + ")"}
	case last.Seq > head.Seq:
		return &Break{Seq: head.Seq + 1, Reason: "entries after the head " + strconv.FormatUint(head.Seq, 10)}
	case last.Seq != 0 && last.Hash != head.Hash:
		return &Break{Seq: last.Seq, Reason: "last entry does not match the head"}
	}
	return nil
}
