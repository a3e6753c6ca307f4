package persistence

// PrefixPreImage holds the durable copies of small pre-images:
// preimage/<sha256 hex> is the content a write's pre-image file holds
// while that file is not yet fsynced on its own. The write stores it in
// its one synced commit (with the ledger's completion, the audit entry
// and the receipt that names it), so the receipt is never durable without
// what its revert needs; the copy is deleted once the file is synced
// (op.SettlePreImages), and a copy left by a crash restores its file at
// the next start (op.RestorePreImages).
const PrefixPreImage = "preimage/"

// PreImageKey returns preimage/<digest>.
func PreImageKey(digest string) []byte { return []byte(PrefixPreImage + digest) }
