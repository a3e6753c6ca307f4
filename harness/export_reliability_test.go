package harness

import (
	"context"

	"github.com/harnessd/harnessd/harness/op"
)

// OnCommitted makes f run as each commit's Committed hook begins, before
// it records what the commit changed: a test's way to act at the moment
// a git_commit has landed (cancel its request, say). Call it before any
// operation runs.
func OnCommitted(h *Harness, f func()) {
	orig := h.env.Hooks.Committed
	h.env.Hooks.Committed = func(ctx context.Context, c *op.Call, r *op.Receipt, commit string) {
		f()
		orig(ctx, c, r, commit)
	}
}
