package harness

import (
	"context"

	"go.uber.org/zap"

	itarget "github.com/harnessd/harnessd/internal/target"
)

// sweepTargets removes the temp files a crash left in the roots of the
// write targets (each root once; only files older than this process).
func (h *Harness) sweepTargets(ctx context.Context) {
	grants, err := h.rt.Targets.List(ctx)
	if err != nil {
		h.lg.Warn("boot: list targets", zap.Error(err))
		return
	}
	swept := map[string]bool{}
	for _, g := range grants {
		if g.Access != "write" || swept[g.Root] {
			continue
		}
		swept[g.Root] = true
		if n, err := itarget.SweepTemp(g.Root); n > 0 || err != nil {
			h.lg.Info("boot: swept temp files a crash left", zap.String("target_id", g.TargetID), zap.Int("removed", n), zap.Error(err))
		}
	}
}
