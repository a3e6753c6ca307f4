package persistence

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// Key prefixes. Each prefix scans on its own.
const (
	PrefixRepo     = "reg/repo/"
	PrefixFence    = "fence/"
	PrefixLedger   = "ledger/"
	PrefixJob      = "job/"
	PrefixCheck    = "check/"
	PrefixApproval = "approval/"
	PrefixAudit    = "audit/"
	PrefixReceipt  = "receipt/"
	PrefixLease    = "lease/"
	PrefixMeta     = "meta/"
	// PrefixAuditIndex holds the audit log's secondary index:
	// auditidx/<term digest>/<seq>, written in the entry's transaction.
	PrefixAuditIndex = "auditidx/"
	// PrefixTarget holds the grants of repository-free targets:
	// target/<target id>, each a TargetGrant in the versioned envelope.
	PrefixTarget = "target/"
)

// TargetKey returns target/<target id>: one repository-free target grant.
func TargetKey(targetID string) []byte { return []byte(PrefixTarget + targetID) }

// RepoKey returns reg/repo/<repo id>.
func RepoKey(repoID string) []byte { return []byte(PrefixRepo + repoID) }

// FenceKey returns fence/<checkout id>/<resource key>: the fencing
// high-water mark of one resource key.
func FenceKey(checkoutID, resourceKey string) []byte {
	return []byte(PrefixFence + checkoutID + "/" + resourceKey)
}

// FencePrefix returns fence/<checkout id>/, the prefix of a checkout's marks.
func FencePrefix(checkoutID string) []byte { return []byte(PrefixFence + checkoutID + "/") }

// LeasePrefix returns lease/<checkout id>/, the prefix of its durable leases.
func LeasePrefix(checkoutID string) []byte { return []byte(PrefixLease + checkoutID + "/") }

// LeaseKey returns lease/<checkout id>/<lease id>: a durable lease.
func LeaseKey(checkoutID, leaseID string) []byte {
	return []byte(PrefixLease + checkoutID + "/" + leaseID)
}

// LedgerKey returns ledger/<request id>.
func LedgerKey(requestID string) []byte { return []byte(PrefixLedger + requestID) }

// ReceiptKey returns receipt/<repo id>/<seq as 8 big-endian bytes>, so a
// repository's receipts scan in order.
func ReceiptKey(repoID string, seq uint64) []byte {
	return seqKey(PrefixReceipt+repoID+"/", seq)
}

// ReceiptPrefix returns receipt/<owner id>/, the prefix of the receipts of
// a repository or a target.
func ReceiptPrefix(ownerID string) []byte { return []byte(PrefixReceipt + ownerID + "/") }

// AuditKey returns audit/<seq as 8 big-endian bytes>.
func AuditKey(seq uint64) []byte { return seqKey(PrefixAudit, seq) }

// AuditIndexPrefix returns auditidx/<digest of term>/, the prefix of the
// audit entries indexed under term (audit.IndexTerms); the digest keeps
// every term's prefix the same length, so no term's prefix is another's.
func AuditIndexPrefix(term string) []byte {
	sum := sha256.Sum256([]byte(term))
	return []byte(PrefixAuditIndex + hex.EncodeToString(sum[:16]) + "/")
}

// AuditIndexKey returns auditidx/<digest of term>/<seq as 8 big-endian
// bytes>: audit entry seq is indexed under term.
func AuditIndexKey(term string, seq uint64) []byte {
	return seqKey(string(AuditIndexPrefix(term)), seq)
}

// MetaKey returns meta/<name>, for small singletons (schema version, counters).
func MetaKey(name string) []byte { return []byte(PrefixMeta + name) }

func seqKey(prefix string, seq uint64) []byte {
	k := make([]byte, len(prefix)+8)
	copy(k, prefix)
	binary.BigEndian.PutUint64(k[len(prefix):], seq)
	return k
}

// SeqOf returns the trailing 8-byte sequence number of a key built by
// ReceiptKey or AuditKey, and false if the key is too short.
func SeqOf(key []byte) (uint64, bool) {
	if len(key) < 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[len(key)-8:]), true
}

// Readable renders a key for dumps: printable bytes as-is, a trailing 8-byte
// sequence as #<n>.
func Readable(key []byte) string {
	s := string(key)
	for _, p := range []string{PrefixAudit, PrefixReceipt} {
		if strings.HasPrefix(s, p) {
			if n, ok := SeqOf(key); ok && len(key) >= len(p)+8 {
				return string(key[:len(key)-8]) + "#" + uitoa(n)
			}
		}
	}
	return s
}

func uitoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
