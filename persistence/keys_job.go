package persistence

// JobKey returns job/<job id>: a durable job's record.
func JobKey(jobID string) []byte { return []byte(PrefixJob + jobID) }
