package harness

import (
	"context"

	ctxop "github.com/harnessd/harnessd/harness/ops/context"
)

// The types of context_assemble (FlowDeck L1, see docs/context.md).
type (
	ContextArgs   = ctxop.Args
	ContextResult = ctxop.Result
)

// ContextAssemble assembles what to read first in a repository, within a
// token budget.
func (h *Harness) ContextAssemble(ctx context.Context, args ContextArgs) (*ContextResult, error) {
	return call(ctx, h, h.handles.ContextAssemble, args)
}
