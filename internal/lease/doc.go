// Package lease is the pure, single-threaded lease logic of a checkout, in
// two parts that two kinds of actor own:
//
//   - Table, the overlap index the checkout keeps: it grants exclusive write
//     leases over resource keys, refuses overlapping ones, and issues
//     strictly increasing fencing tokens per key. A recorded lease holds its
//     keys until it is released; the Table has no clock.
//   - Held, one granted lease as its own actor keeps it: its TTL, its
//     renewals, and its end (released, or expired when not renewed in
//     time). When a Held ends, its actor tells the checkout, which releases
//     it from the Table; until then its keys stay taken, so a lease the
//     Table still records may be expired but is never overtaken.
//
// Neither does I/O, starts goroutines or takes locks; the actor that owns one
// passes the current time into every call that needs it. Granting is
// two-phase so that fencing tokens survive kill -9:
//
//  1. Prepare validates the request, finds any recorded overlapping lease
//     and computes the next token of every key, without changing the Table.
//  2. The owner persists the new high-water marks (Lease.Tokens, or
//     HighWaterWith) with sync, and the lease itself if it is durable.
//  3. Commit records the lease and raises the in-memory high-water marks.
//  4. Only then does the owner reply to the requester (and start the
//     lease's own actor, which holds it as a Held).
//
// A write site fences twice over: the Table's Current (its token is still
// the newest of its key) and the Held's Fence (the lease is still live).
//
// At boot the owner calls NewTable with the persisted high-water marks and
// Restore for each persisted durable lease still live at that time.
//
// # Resource keys
//
//	workspace:<checkout>          the whole checkout
//	path:<checkout>:<relpath>     a file or directory, clean and slash-separated
//	git-index:<checkout>          the index (staging area)
//	git-head:<checkout>           HEAD
//	git-ref:<checkout>:<ref>      one ref, e.g. refs/heads/main
//
// Overlap rules (see Overlaps): keys of different checkouts never overlap;
// workspace overlaps every key of its checkout; path keys overlap when one is
// the other or a directory prefix of it; git-index overlaps git-index;
// git-head overlaps git-head and every git-ref, because a commit moves HEAD and
// the branch ref it points to at once; git-ref keys overlap when equal or when
// one is a directory prefix of the other, because git cannot hold both
// refs/heads/a and refs/heads/a/b. Path keys never overlap git keys: an
// operation that stages or commits claims the paths and the git keys it needs.
package lease
