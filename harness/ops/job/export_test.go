package job

// SetAfterSubmit sets the hook run once the jobs actor has stored a new
// job, before job_start answers (the crash test kills the process there).
func SetAfterSubmit(f func(jobID string)) { afterSubmit = f }
