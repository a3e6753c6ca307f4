package harness

import (
	"context"
	"path/filepath"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/ops/undo"
	"github.com/harnessd/harnessd/internal/preimage"
)

// The arguments and results of undo (see docs/undo.md).
type (
	RevertArgs        = undo.RevertArgs
	RunRevertArgs     = undo.RunRevertArgs
	ReceiptListArgs   = undo.ListArgs
	ReceiptListResult = undo.ListResult
	ReceiptItem       = undo.Item
)

// PreImageDir returns <dataDir>/preimages: the pre-images of writes.
func PreImageDir(dataDir string) string { return filepath.Join(dataDir, "preimages") }

// openPreImages opens the pre-image store of cfg: in the data dir, or in
// memory when the harness is InMemory.
func openPreImages(cfg Config) (*preimage.Store, error) {
	pc := preimage.Config{MaxAge: cfg.PreImageMaxAge, MaxBytes: cfg.PreImageMaxBytes, Now: cfg.Now}
	if !cfg.InMemory {
		pc.Dir = PreImageDir(cfg.DataDir)
	}
	s, err := preimage.Open(pc)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "open the pre-image store: %v", err)
	}
	return s, nil
}

// Revert undoes one write (its receipt) from its pre-images; see
// docs/undo.md.
func (h *Harness) Revert(ctx context.Context, args RevertArgs) (*MutationResult, error) {
	return call(ctx, h, h.handles.Revert, args)
}

// RunRevert undoes a run's writes after a span, newest first.
func (h *Harness) RunRevert(ctx context.Context, args RunRevertArgs) (*MutationResult, error) {
	return call(ctx, h, h.handles.RunRevert, args)
}

// ReceiptList lists receipts, newest first, with whether each can be
// reverted on its own.
func (h *Harness) ReceiptList(ctx context.Context, args ReceiptListArgs) (*ReceiptListResult, error) {
	return call(ctx, h, h.handles.ReceiptList, args)
}

// PreImageStats are the count and total size of the kept pre-images.
func (h *Harness) PreImageStats() preimage.Stats { return h.env.PreImages.Stats() }
