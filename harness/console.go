package harness

import "context"

// Redact returns s with secrets replaced, as the operations redact their
// output: the redaction rules, plus the exact values of the secret files
// of repository repoID ("" or an unknown repository = the rules only).
// The web console shows agent-supplied text that no operation redacted
// (a job's argv, a run's goal) through it.
func (h *Harness) Redact(ctx context.Context, repoID, s string) string {
	if s == "" {
		return s
	}
	r := h.env.Redactor
	if leave, err := h.enter(); err == nil {
		defer leave()
	} else {
		repoID = "" // closing: the rules only, no secret-file walk
	}
	if repoID != "" {
		if e, err := h.env.Repo(repoID); err == nil {
			r = h.env.RedactorFor(ctx, e.Repo.Root)
		}
	}
	if r == nil {
		return s
	}
	out, _ := r.String(s)
	return out
}
