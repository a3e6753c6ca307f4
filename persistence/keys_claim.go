package persistence

// PrefixClaim is the prefix of the claims of runs (FlowDeck L5): one record
// per stage of a run, holding its claims and its last verification.
//
//	claim/<run id>/<stage>   the stage's claims and verification
//
// Run ids never contain "/", so claim/<run id>/ scans exactly one run's
// stages; a stage name is taken as it is (any bytes but empty, at most
// 128), and only ever read back by its exact key or that run prefix.
const PrefixClaim = "claim/"

// ClaimRunPrefix returns claim/<run id>/, every stage record of a run.
func ClaimRunPrefix(runID string) []byte { return []byte(PrefixClaim + runID + "/") }

// ClaimKey returns claim/<run id>/<stage>: one stage's claims and its last
// verification.
func ClaimKey(runID, stage string) []byte { return []byte(PrefixClaim + runID + "/" + stage) }
