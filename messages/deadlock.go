package messages

import "time"

// The conversation of the checkouts with the deadlock detector (the
// "deadlocks" child of the root). A checkout reports only when a request of
// a run waits: never for a grant that did not wait.

// DeadlockWaits is a checkout's report of its waiting requests that belong
// to a run and are blocked by a lease of another run. It replaces whatever
// the checkout reported before (an empty Waits withdraws everything): the
// checkout sends it when a request starts waiting, when a waiter is granted,
// times out or is failed, when a lease is released or expires while someone
// waits, when the detector asks (DeadlockResync) and when it stops. The
// detector replies nothing; it sends DeadlockBreak to the sender.
type DeadlockWaits struct {
	CheckoutID string
	Waits      []DeadlockWait
}

// DeadlockWait is one waiting lease request.
type DeadlockWait struct {
	ID         string // unique at its checkout: "<checkout>/<seq>"
	RunID      string
	Owner      string // the request's lease owner (a request id, a job id)
	Operation  string
	CheckoutID string
	Keys       []string  // the keys it asked for
	Since      time.Time // when it started waiting
	Holders    []DeadlockHolder
}

// DeadlockHolder is a run whose leases block a wait: they overlap its keys,
// or the keys of a waiter queued ahead of it that it may not overtake.
type DeadlockHolder struct {
	RunID string
	Keys  []string // the held keys
}

// DeadlockResync asks a checkout to report its waits again (the detector
// restarted and lost its in-memory graph).
type DeadlockResync struct{}

// DeadlockBreak tells a checkout to fail its waiting request WaitID with
// DEADLOCK: it is the youngest waiter of Cycle. A waiter that is gone
// (granted or timed out meanwhile) is not looked for.
type DeadlockBreak struct {
	WaitID string
	Cycle  []DeadlockEdge
}

// DeadlockEdge is one step of a cycle: run RunID (its request Owner,
// Operation, at CheckoutID, waiting since Since) waits for WaitsFor, held by
// run HolderRunID as HolderKeys.
type DeadlockEdge struct {
	RunID       string
	Owner       string
	Operation   string
	CheckoutID  string
	WaitsFor    []string
	Since       time.Time
	HolderRunID string
	HolderKeys  []string
}

// DeadlockStats asks the detector for its figures. Answered with
// DeadlockStatsReply.
type DeadlockStats struct{}

// DeadlockStatsReply answers DeadlockStats: the waits in the graph (those
// with an edge to another run) and the cycles broken since it started.
type DeadlockStatsReply struct {
	Waits  int    `json:"waits"`
	Broken uint64 `json:"broken"`
}
