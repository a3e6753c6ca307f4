// Package lease is the pure, single-threaded lease arbiter of a checkout: it
// grants exclusive write leases over resource keys, detects overlap, and issues
// strictly increasing fencing tokens per key.
//
// A Table does no I/O, starts no goroutines and takes no locks; one actor owns
// it and passes the current time into every call. Granting is two-phase so
// that fencing tokens survive kill -9:
//
//  1. Prepare validates the request, finds any live overlapping lease and
//     computes the next token of every key, without changing the Table.
//  2. The owner persists the new high-water marks (Lease.Tokens, or
//     HighWaterWith) with sync, and the lease itself if it is durable.
//  3. Commit records the lease and raises the in-memory high-water marks.
//  4. Only then does the owner reply to the requester.
//
// At boot the owner calls NewTable with the persisted high-water marks,
// Restore for each persisted durable lease, and Expire(now) before serving.
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
