// Package provenance holds commit_verify: it reads the Harnessd- trailers
// git_commit writes into a commit and checks them against harnessd's own
// records (the receipt in the store, the hash-chained audit log, the
// runs, the approvals and the policy), so a reviewer can tell a commit
// harnessd made, with what it passed, from one that only claims to be.
//
// It also holds what writes them, as hooks of the write path
// (op.WriteHooks, registered at Open): StampCommit, the trailer block
// (Trailers) of a commit git_commit writes, and RecordCommit, the paths
// and blob digests the commit changed (TreeChanges), recorded in the
// receipt and compared again by commit_verify.
package provenance
