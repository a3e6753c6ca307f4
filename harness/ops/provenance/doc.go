// Package provenance holds commit_verify: it reads the Harnessd- trailers
// git_commit writes into a commit and checks them against harnessd's own
// records (the receipt in the store, the hash-chained audit log, the
// runs, the approvals and the policy), so a reviewer can tell a commit
// harnessd made, with what it passed, from one that only claims to be.
//
// It also holds what git_commit uses to write them: Trailers (the block)
// and TreeChanges (the paths and blob digests a commit changed, recorded
// in the receipt and compared again by commit_verify).
package provenance
