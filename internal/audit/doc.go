// Package audit holds the pure rules of harnessd's keyed, hash-chained audit
// log: the Entry record, its redaction and size limits, sealing an entry
// onto the chain, the audit keys, verifying a chain and filtering entries.
//
// # The chain
//
// Entry N carries PrevHash = Hash of entry N-1 (the fixed Genesis value for
// entry 1). Its canonical form is "harnessd/audit/v1\x00" followed by the
// entry's JSON encoding with Hash set to "" (encoding/json: fields in
// declaration order, map keys sorted). A keyed entry (SealWith) records the
// id of its key in KeyID and has Hash = "hmac-sha256:<hex>" of the canonical
// form under that key; an unkeyed one (Seal, the form written before keys
// existed) has Hash = "sha256:<hex>". Editing, reordering or deleting an
// entry breaks the chain at that entry, and Verify reports the first break.
//
// A plain hash chain cannot stop someone who rewrites the whole tail; the
// key can (VerifyWith with a Keyring): without it a rewritten entry is not
// its HMAC, and unkeyed entries are accepted only as a prefix below the
// keyring's KeyedFrom. A key_rotation entry hands the chain from one key to
// the next with the old key's HMAC of the previous head (Handover). Someone
// who holds the key is caught by an anchor: a head kept outside the store
// (Options.Anchor). The audit actor (actors/audit.go) keeps the head
// {seq, hash} in memory and in the store so that truncating the tail is
// detected too.
//
// Persistence and batching live in actors/audit.go, key files in
// harness/audit_key.go; this package does no I/O.
package audit
