// Package audit holds the pure rules of harnessd's hash-chained audit log:
// the Entry record, its redaction and size limits, sealing an entry onto the
// chain, verifying a chain and filtering entries.
//
// # The chain
//
// Entry N carries PrevHash = Hash of entry N-1 (the fixed Genesis value for
// entry 1) and Hash = "sha256:<hex>" of "harnessd/audit/v1\x00" followed by
// the entry's JSON encoding with Hash set to "" (encoding/json: fields in
// declaration order, map keys sorted). Editing, reordering or deleting an
// entry therefore breaks the chain at that entry, and Verify reports the
// first break.
//
// A hash chain detects edits made by someone who does not recompute the
// hashes; it cannot stop someone who rewrites the whole tail. The audit
// actor (actors/audit.go) keeps the head {seq, hash} in memory and in the
// store so that truncating the tail is detected too.
//
// Persistence and batching live in actors/audit.go; this package does no I/O.
package audit
