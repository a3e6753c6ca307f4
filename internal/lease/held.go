package lease

import (
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// End says why a held lease ended.
type End string

// The ends of a lease.
const (
	// Released: its owner gave it back.
	Released End = "released"
	// Expired: it was not renewed before its expiry.
	Expired End = "expired"
)

// Held is one granted lease as the actor that holds it keeps it: the lease,
// whose Expires each renewal moves, and how it ended. The Table records the
// lease from its grant until the holder reports that it ended; Held alone
// decides when that is. Like the Table it does no I/O and takes the time as
// an argument. The zero End means the lease is still held.
type Held struct {
	Lease
	// Ended is when the lease ended (zero while it is held); End says why.
	Ended time.Time
	End   End
}

// Hold returns the Held of a lease that was just granted (or restored).
func Hold(l Lease) Held { return Held{Lease: l.clone()} }

// Holding reports whether the lease has not ended. It may still be expired
// at a given time: Expire ends it.
func (h *Held) Holding() bool { return h.End == "" }

// Renew extends the lease to now+TTL and returns its new expiry; it never
// shortens it. A lease that ended, or expired at or before now, gives
// errs.LeaseLost: the owner must abort, because another lease may already
// hold its keys. Renew does not end an expired lease; Expire does.
func (h *Held) Renew(now time.Time) (time.Time, error) {
	if !h.Holding() {
		return time.Time{}, errs.New(errs.LeaseLost, "lease %s is not held (%s at %s)", clip(h.ID), h.End, h.Ended.UTC().Format(time.RFC3339Nano)).With("lease_id", h.ID)
	}
	if !h.Live(now) {
		return time.Time{}, errs.New(errs.LeaseLost, "lease %s expired at %s", h.ID, h.Expires.UTC().Format(time.RFC3339Nano)).With("lease_id", h.ID)
	}
	if exp := now.Add(h.TTL); exp.After(h.Expires) {
		h.Expires = exp
	}
	return h.Expires, nil
}

// Fence is the liveness half of the check a write site makes before it
// writes: nil while the lease is held and live at now, else errs.LeaseLost.
// (The other half, that its tokens are the newest, is the Table's Current.)
func (h *Held) Fence(now time.Time) error {
	if !h.Holding() || !h.Live(now) {
		return errs.New(errs.LeaseLost, "lease %s is no longer held (expired or released); nothing was written after the loss", h.ID).With("lease_id", h.ID)
	}
	return nil
}

// Expire ends the lease as Expired at now when it is held and not live at
// now, and reports whether it did.
func (h *Held) Expire(now time.Time) bool {
	if !h.Holding() || h.Live(now) {
		return false
	}
	h.Ended, h.End = now, Expired
	return true
}

// Release ends the lease as Released at now; it reports false when the
// lease had ended already. A lease past its expiry that Expire has not
// ended yet is released (its keys were never overtaken meanwhile).
func (h *Held) Release(now time.Time) bool {
	if !h.Holding() {
		return false
	}
	h.Ended, h.End = now, Released
	return true
}

// Adopt takes over what a predecessor of the same lease knew (the state an
// actor hands to its restarted instance): the later expiry, and the end if
// it had ended. Expiry only moves forward, so adopting twice, or adopting
// an older state, changes nothing.
func (h *Held) Adopt(prev Held) {
	if prev.ID != h.ID {
		return
	}
	if prev.Expires.After(h.Expires) {
		h.Expires = prev.Expires
	}
	if h.Holding() && !prev.Holding() {
		h.Ended, h.End = prev.Ended, prev.End
	}
}
