package read

import "github.com/harnessd/harnessd/messages"

// NoteSpan counts the content returned as the call's output.
func (r *ReadFileResult) NoteSpan(s *messages.RunSpan) { s.OutputBytes = int64(len(r.Content)) }

// NoteSpan counts the matched lines returned as the call's output.
func (r *SearchResult) NoteSpan(s *messages.RunSpan) {
	var n int
	for _, m := range r.Matches {
		n += len(m.Path) + len(m.Text)
	}
	s.OutputBytes = int64(n)
}

// NoteSpan counts the patch returned as the call's output.
func (r *GitDiffResult) NoteSpan(s *messages.RunSpan) { s.OutputBytes = int64(len(r.Patch)) }
