package check

import "github.com/harnessd/harnessd/messages"

// NoteSpan names the check (and the job of a durable one) and counts its
// output.
func (r *RunCheckResult) NoteSpan(s *messages.RunSpan) {
	s.CheckID = r.Identity
	s.JobID = r.OriginalRun.JobID
	s.OutputBytes = int64(len(r.Stdout) + len(r.Stderr))
	if r.Escalated == nil { // an escalated check has no verdict yet
		s.Verdict = "fail"
		if r.Passed {
			s.Verdict = "pass"
		}
	}
}
