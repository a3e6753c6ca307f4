package messages

// AuditRotateKey asks the audit actor to seal a key_rotation entry with the
// audit keyring's current key, handing the chain over from OldKeyID (the
// key that was current before the rotation; the head's key when the head is
// keyed). Answered with AuditAppended once the entry is durable.
type AuditRotateKey struct{ OldKeyID string }

// AuditGetHead asks the audit actor to flush and report its head.
type AuditGetHead struct{}

// AuditHeadInfo answers AuditGetHead: the last durable entry's seq, hash
// and key id (all zero for an empty log).
type AuditHeadInfo struct {
	Seq   uint64
	Hash  string
	KeyID string
}
