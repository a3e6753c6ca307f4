package persistence

import (
	"crypto/sha256"
	"encoding/hex"
)

// Check evidence key layout (all under PrefixCheck):
//
//	check/<repo id>/sha256:<hex>           evidence of one identity
//	check/<repo id>/def/<definition digest> newest identity of one definition
//	check/common/<common dir hash>/<identity> repo id holding shareable evidence
//
// Repository ids start with "repo_", so "common" never collides with one.
const (
	// PrefixCheckShared is the prefix of the cross-checkout evidence index.
	PrefixCheckShared = PrefixCheck + "common/"
)

// CheckRepoPrefix returns check/<repo id>/, every check key of a repository.
func CheckRepoPrefix(repoID string) []byte { return []byte(PrefixCheck + repoID + "/") }

// CheckEvidencePrefix returns check/<repo id>/sha256:, the prefix of the
// repository's evidence (identities are "sha256:<hex>").
func CheckEvidencePrefix(repoID string) []byte {
	return []byte(PrefixCheck + repoID + "/sha256:")
}

// CheckEvidenceKey returns check/<repo id>/<identity>.
func CheckEvidenceKey(repoID, identity string) []byte {
	return []byte(PrefixCheck + repoID + "/" + identity)
}

// CheckDefKey returns check/<repo id>/def/<definition digest>: the identity of
// the newest evidence of one check definition, to explain a miss.
func CheckDefKey(repoID, definitionDigest string) []byte {
	return []byte(PrefixCheck + repoID + "/def/" + definitionDigest)
}

// CheckSharedKey returns check/common/<hash of common dir>/<identity>: which
// repository holds evidence that the checkouts sharing commonDir may reuse.
func CheckSharedKey(commonDir, identity string) []byte {
	return []byte(PrefixCheckShared + CommonDirHash(commonDir) + "/" + identity)
}

// CommonDirHash returns 16 hex digits of sha256(commonDir).
func CommonDirHash(commonDir string) string {
	sum := sha256.Sum256([]byte("commondir\x00" + commonDir))
	return hex.EncodeToString(sum[:8])
}
