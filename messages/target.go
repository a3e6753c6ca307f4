package messages

import "time"

// TargetGrant is one repository-free target: an authorized local directory
// (its canonical root) with the access it was granted. Grants are keyed by
// TargetID; every grant on one canonical root shares the root's target
// actor, so two grants cannot bypass each other's mutations.
type TargetGrant struct {
	TargetID    string `json:"target_id"`
	WorkspaceID string `json:"workspace_id"`
	Root        string `json:"canonical_root"`
	// Access is "read" or "write".
	Access string `json:"access"`
	Owner  string `json:"owner,omitempty"`
	// Identity is the root's device and inode at registration (GitDev and
	// GitIno stay zero): a directory swapped in under the same path is a
	// different target (TARGET_MOVED).
	Identity RootIdentity `json:"identity"`
	// Fingerprint is a stable digest of Identity.
	Fingerprint string    `json:"identity_fingerprint"`
	Registered  time.Time `json:"registered_at"`
	// PromotedRepo is the repo_id the target became (target_promote).
	PromotedRepo string `json:"promoted_repo_id,omitempty"`
	// Grant says who granted agents this root (see RootGrant).
	Grant RootGrant `json:"grant,omitzero"`
}

// GrantRank orders grants: a person's or an approval's (2) over an
// area's (1) over none (0). A registration replaces a root's grant by one
// of at least its rank.
func GrantRank(g RootGrant) int {
	switch {
	case g.By == "":
		return 0
	case len(g.By) > 5 && g.By[:5] == "area:":
		return 1
	}
	return 2
}

// TargetRegister asks the targets actor to record a grant. Root is
// canonical and Identity already read; the actor does no I/O but its own
// persistence.
type TargetRegister struct {
	Root     string
	Access   string
	Owner    string
	Identity RootIdentity
	Grant    RootGrant
	Now      time.Time
}

// TargetRegistered answers TargetRegister; Created is false for a grant
// that already existed (registration is idempotent).
type TargetRegistered struct {
	Grant   TargetGrant
	Created bool
}

// TargetUnregister asks the targets actor to forget a grant.
type TargetUnregister struct{ TargetID string }

// TargetUnregistered answers TargetUnregister.
type TargetUnregistered struct{ Grant TargetGrant }

// TargetList asks for every grant.
type TargetList struct{}

// TargetGrants answers TargetList, sorted by root then target id.
type TargetGrants struct{ Grants []TargetGrant }

// TargetPromote records that a target became the repository RepoID.
type TargetPromote struct {
	TargetID string
	RepoID   string
}

// TargetAcquire asks a root's target actor for the root's mutation slot:
// granted at once when the root is idle, else queued in mailbox order for
// up to Wait, then refused MUTATION_BUSY. The holder must send
// TargetRelease; a holder that never does loses the slot after Hold.
type TargetAcquire struct {
	Holder string
	Wait   time.Duration
	Hold   time.Duration
}

// TargetAcquired answers TargetAcquire: the root is the holder's until it
// releases. Seq is the grant's fencing token: it rises with every grant of
// the root's slot, across restarts too (receipts record it).
type TargetAcquired struct {
	Holder string
	Seq    uint64
}

// TargetRelease gives the slot back (or withdraws a queued request).
type TargetRelease struct{ Holder string }

// TargetReleased answers TargetRelease.
type TargetReleased struct{}
