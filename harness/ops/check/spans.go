package check

import "github.com/harnessd/harnessd/messages"

// NoteSpan names the check (and the job of a durable one) and counts its
// output and the CPU time it used.
func (r *RunCheckResult) NoteSpan(s *messages.RunSpan) {
	s.CheckID = r.Identity
	s.JobID = r.OriginalRun.JobID
	s.OutputBytes = int64(len(r.Stdout) + len(r.Stderr))
	// The CPU of a check that ran for this call counts in the run's
	// budget; a reused or joined one ran for another call, and a job's
	// is charged to the run when the job ends.
	if res := r.OriginalRun.Resources; res != nil && !r.Reused && !r.Joined && r.OriginalRun.JobID == "" {
		s.CPUMs = res.CPUMs
	}
	if r.Escalated == nil { // an escalated check has no verdict yet
		s.Verdict = "fail"
		if r.Passed {
			s.Verdict = "pass"
		}
	}
}
