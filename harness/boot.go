package harness

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/messages"
)

// afterBoot finishes what the restored registry cannot do without I/O,
// before any request is served: temp files a crash left in a checkout
// or a write target are swept (no patch is in flight yet), and repositories registered
// before root identities were kept get theirs recorded (from then on a
// moved or replaced root answers REPOSITORY_MOVED).
func (h *Harness) afterBoot(ctx context.Context) {
	defer h.checkGrants(ctx) // grants outside the rules are reported and suspended
	h.sweepTargets(ctx)
	repos, err := h.rt.Registry.List(ctx)
	if err != nil {
		h.lg.Warn("boot: list repositories", zap.Error(err))
		return
	}
	for _, r := range repos {
		if n, err := patch.SweepTemp(r.Root); n > 0 || err != nil {
			h.lg.Info("boot: swept temp files a crash left", zap.String("repo_id", r.ID), zap.Int("removed", n), zap.Error(err))
		}
		if r.Identity != (messages.RootIdentity{}) {
			continue
		}
		id, err := pathsafe.IdentityOf(r.Root)
		if err != nil {
			h.lg.Warn("boot: a registered root is not there; its operations answer errors until it is registered again",
				zap.String("repo_id", r.ID), zap.String("root", r.Root), zap.Error(err))
			continue
		}
		if _, err := h.rt.Registry.Register(ctx, r.Root, r.CommonDir, id, time.Now()); err != nil {
			h.lg.Warn("boot: record a root's identity", zap.String("repo_id", r.ID), zap.Error(err))
		}
	}
}
