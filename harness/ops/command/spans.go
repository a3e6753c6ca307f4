package command

import "github.com/harnessd/harnessd/messages"

// NoteSpan counts the output returned as the call's output.
func (r *RunCommandResult) NoteSpan(s *messages.RunSpan) {
	s.OutputBytes = int64(len(r.Stdout.Text) + len(r.Stderr.Text))
}
