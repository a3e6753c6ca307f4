package job

import "github.com/harnessd/harnessd/messages"

// NoteSpan names the job the call started or looked at.
func (r *JobResult) NoteSpan(s *messages.RunSpan) { s.JobID = r.JobID }
