package messages

import "time"

// LeaseInfo describes a granted lease. Keys are resource keys such as
// "path:<checkout>:<rel>"; Tokens holds the fencing token of each key.
type LeaseInfo struct {
	ID         string            `json:"lease_id"`
	CheckoutID string            `json:"checkout_id"`
	Owner      string            `json:"owner"`
	Operation  string            `json:"operation"`
	Keys       []string          `json:"keys"`
	Tokens     map[string]uint64 `json:"tokens"`
	TTL        time.Duration     `json:"ttl_ns"`
	Granted    time.Time         `json:"granted_at"`
	Expires    time.Time         `json:"expires_at"`
	Visibility string            `json:"visibility"`
	// RunID is the run the lease was taken for ("" = outside any run); the
	// deadlock detector's wait-for graph is over these.
	RunID string `json:"run_id,omitempty"`
}

// Acquire asks a checkout for a write lease over Keys. When a key is busy
// it fails at once with MUTATION_BUSY, or, with Wait > 0, waits in mailbox
// order up to Wait for the holders to go. The granted lease gets an actor
// of its own (lease-<id>, a child of the checkout) that keeps its TTL.
type Acquire struct {
	Owner      string
	Operation  string
	Keys       []string
	TTL        time.Duration
	Visibility string // "ephemeral" (default) or "durable"
	Wait       time.Duration
	// RunID is the run the request belongs to ("" = none): a waiting
	// request of a run takes part in deadlock detection (messages/deadlock.go).
	RunID string
	// NotifyLost says the requester is an actor that wants LeaseLost when
	// the lease expires before its Release, so it aborts its work at once
	// rather than at its next renewal.
	NotifyLost bool
}

// Acquired answers Acquire.
type Acquired struct{ Lease LeaseInfo }

// Renew extends a lease by its TTL. Sent to the checkout, which hands it
// to the lease's actor; that actor answers.
type Renew struct {
	LeaseID string
	// NotifyLost: as in Acquire; a lease restored at boot learns its owner
	// from the first renewal that asks.
	NotifyLost bool
}

// Renewed answers Renew.
type Renewed struct{ Expires time.Time }

// Release gives a lease back. Releasing an unknown lease is not an error.
// The checkout hands it to the lease's actor, which answers once the
// checkout has been told (a request sent after Released finds the keys
// free).
type Release struct{ LeaseID string }

// Released answers Release.
type Released struct{ Known bool }

// Fence asks whether a lease's tokens are still the newest for their keys
// and the lease is live: every write site asks before it writes. The
// checkout checks the tokens and hands it to the lease's actor, which
// checks the expiry and answers.
type Fence struct{ LeaseID string }

// Fenced answers Fence when the lease may still write.
type Fenced struct{}

// ListLeases asks a checkout for its live leases.
type ListLeases struct{}

// LeaseList answers ListLeases, sorted by ID.
type LeaseList struct{ Leases []LeaseInfo }

// LeaseTick makes a lease actor check its expiry at Now; sent to a
// checkout, it goes to every lease actor of the checkout. A lease actor's
// own timer ticks it with the time of its clock; tests send ticks with a
// chosen time.
type LeaseTick struct{ Now time.Time }

// LeaseLost tells the owner that asked for it (Acquire.NotifyLost) that its
// lease expired at Expired before it was renewed: another lease may hold
// its keys by now, so the owner aborts its work.
type LeaseLost struct {
	LeaseID string
	Expired time.Time
}

// LeaseDrain tells a checkout that harnessd is shutting down: every queued
// Acquire is answered UNAVAILABLE at once (nothing of it was written; the
// error's details say nothing_written), and so is every later Acquire that
// would have to wait. Grants that need no wait, renewals, fences and
// releases go on, so the holders finish. Answered with LeaseDrained.
type LeaseDrain struct{}

// LeaseDrained answers LeaseDrain: how many queued requests it answered.
type LeaseDrained struct{ Refused int }

// LeaseHistory asks a checkout for every lease held at some moment since
// Since: the live ones and those that ended since then (released or
// expired, from a bounded memory of ended leases). Answered with LeaseHeld.
type LeaseHistory struct{ Since time.Time }

// LeaseHeld answers LeaseHistory, oldest grant first. Complete is false
// when the memory of ended leases no longer reaches back to Since (some
// may be missing).
type LeaseHeld struct {
	Leases   []HeldLease
	Complete bool
}

// HeldLease is a lease of LeaseHeld; Ended is zero while it is held.
type HeldLease struct {
	LeaseInfo
	Ended time.Time `json:"ended_at,omitzero"`
}
