package persistence

import "time"

// PrefixRunSummary is the prefix of the run summaries kept per repository
// (FlowDeck L4): the next session in a repository reads the newest.
//
//	runsummary/<repo id>/<written at, unix ns as 8 big-endian bytes><run id>
//
// Repository ids never contain "/", so runsummary/<repo id>/ scans one
// repository's summaries, oldest first.
const PrefixRunSummary = "runsummary/"

// RunSummaryPrefix returns runsummary/<repo id>/.
func RunSummaryPrefix(repoID string) []byte { return []byte(PrefixRunSummary + repoID + "/") }

// RunSummaryKey returns the key of run runID's summary in repository
// repoID, written at at.
func RunSummaryKey(repoID string, at time.Time, runID string) []byte {
	return append(seqKey(PrefixRunSummary+repoID+"/", uint64(at.UnixNano())), runID...)
}
