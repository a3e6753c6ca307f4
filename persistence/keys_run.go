package persistence

// Key prefixes of runs.
const (
	PrefixRun     = "run/"
	PrefixRunSpan = "runspan/"
)

// RunKey returns run/<run id>: a run's state snapshot.
func RunKey(runID string) []byte { return []byte(PrefixRun + runID) }

// RunSpanPrefix returns runspan/<run id>/, the prefix of a run's stored
// spans (mutations, jobs, checks, approvals, escalations).
func RunSpanPrefix(runID string) []byte { return []byte(PrefixRunSpan + runID + "/") }

// RunSpanKey returns runspan/<run id>/<seq as 8 big-endian bytes>, so a
// run's stored spans scan in order.
func RunSpanKey(runID string, seq uint64) []byte {
	return seqKey(PrefixRunSpan+runID+"/", seq)
}
