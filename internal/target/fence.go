package target

// FenceBlock is how many fencing tokens of a root's slot one persisted
// reservation covers: one synced write per FenceBlock grants, and a
// restart skips at most FenceBlock-1 tokens.
const FenceBlock = 1024

// Fence issues the fencing tokens of one target root's mutation slot (the
// hold numbers a receipt records as fencing_token and hold_seqs). Like a
// checkout's lease table it is two-phase: Next says which token comes
// next and, when that token is above what was reserved, the reservation
// to persist with sync first; Commit records the token once that is
// done. A Fence rebuilt from the persisted reservation (NewFence) after
// any restart, kill -9 included, issues only tokens above every token
// issued before, because no token is ever issued above a reservation
// that is not yet durable.
//
// The zero value issues from 1 and persists nothing yet.
type Fence struct {
	issued   uint64 // the newest token issued, or the mark it continues from
	reserved uint64 // every token up to this one is covered by a persisted reservation
}

// NewFence returns the Fence of a root whose persisted reservation is
// reserved, in a store whose fencing floor (after `harness store reset`
// or `restore`) is floor: every token it issues is above both.
func NewFence(reserved, floor uint64) Fence {
	hw := max(reserved, floor)
	return Fence{issued: hw, reserved: hw}
}

// Next returns the next token and, when it lies above the reservation,
// the new reservation that must be persisted (with sync) before the
// token is handed out; reserve is 0 when none is needed. Next changes
// nothing: a failed persist leaves the Fence as it was.
func (f Fence) Next() (tok, reserve uint64) {
	tok = f.issued + 1
	if tok > f.reserved {
		reserve = tok + FenceBlock - 1
	}
	return tok, reserve
}

// Commit records that tok (from Next) was issued, under reserve (from the
// same Next, persisted) when Next asked for one.
func (f *Fence) Commit(tok, reserve uint64) {
	f.issued = max(f.issued, tok)
	f.reserved = max(f.reserved, reserve)
}

// Issued returns the newest token issued (or the mark it continues from).
func (f Fence) Issued() uint64 { return f.issued }
