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
	var prev Entry // zero: before entry 1
	for {
		e, ok, err := next()
		if err != nil {
			if b, isBreak := errors.AsType[*Break](err); isBreak {
				return checked + 1, b, nil
			}
			return checked, nil, err
		}
		if !ok {
			return checked, nil, nil
		}
		checked++
		if b := Link(prev, e); b != nil {
			return checked, b, nil
		}
		prev = e
	}
}

// Link checks one link of the chain: that e is the entry right after prev
// (the zero Entry before entry 1) and that e's Hash matches its content. It
// returns nil when the link holds.
func Link(prev, e Entry) *Break {
	switch want := prev.Seq + 1; {
	case e.Seq > want:
		return &Break{Seq: want, Reason: "sequence gap after " + strconv.FormatUint(prev.Seq, 10)}
	case e.Seq < want:
		return &Break{Seq: want, Reason: "sequence out of order after " + strconv.FormatUint(prev.Seq, 10)}
	}
	if e.ComputeHash() != e.Hash {
		return &Break{Seq: e.Seq, Reason: "hash mismatch"}
	}
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
