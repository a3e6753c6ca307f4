package harness

import (
	"context"

	"github.com/harnessd/harnessd/harness/ops/target"
)

// The types of the target operations (repository-free targets, see
// docs/targets.md).
type (
	Target                 = target.Target
	TargetRegisterArgs     = target.RegisterArgs
	TargetRegisterResult   = target.RegisterResult
	TargetListArgs         = target.ListArgs
	TargetListResult       = target.ListResult
	TargetUnregisterArgs   = target.UnregisterArgs
	TargetUnregisterResult = target.UnregisterResult
	TargetReadFileArgs     = target.ReadFileArgs
	TargetReadFileResult   = target.ReadFileResult
	TargetListDirArgs      = target.ListDirArgs
	TargetListDirResult    = target.ListDirResult
	TargetDirEntry         = target.DirEntry
	TargetSearchArgs       = target.SearchArgs
	TargetSearchResult     = target.SearchResult
	TargetWriteFileArgs    = target.WriteFileArgs
	TargetApplyPatchArgs   = target.ApplyPatchArgs
	TargetCopyArgs         = target.CopyArgs
	TargetMutationResult   = target.MutationResult
	TargetReceipt          = target.Receipt
	TargetExecuteArgs      = target.ExecuteArgs
	TargetExecuteResult    = target.ExecuteResult
	TargetPromoteArgs      = target.PromoteArgs
	TargetPromoteResult    = target.PromoteResult
)

// RegisterTarget grants a local directory as a repository-free target.
// Registering the same root with the same access and owner again returns
// the same target_id with Created false.
func (h *Harness) RegisterTarget(ctx context.Context, args TargetRegisterArgs) (*TargetRegisterResult, error) {
	return call(ctx, h, h.handles.RegisterTarget, args)
}

// Targets lists the target grants.
func (h *Harness) Targets(ctx context.Context, args TargetListArgs) (*TargetListResult, error) {
	return call(ctx, h, h.handles.Targets, args)
}

// UnregisterTarget forgets a target grant. Its files are not touched.
func (h *Harness) UnregisterTarget(ctx context.Context, args TargetUnregisterArgs) (*TargetUnregisterResult, error) {
	return call(ctx, h, h.handles.UnregisterTarget, args)
}

// TargetReadFile reads a window of a file of a target.
func (h *Harness) TargetReadFile(ctx context.Context, args TargetReadFileArgs) (*TargetReadFileResult, error) {
	return call(ctx, h, h.handles.TargetReadFile, args)
}

// TargetListDir lists a directory of a target, bounded.
func (h *Harness) TargetListDir(ctx context.Context, args TargetListDirArgs) (*TargetListDirResult, error) {
	return call(ctx, h, h.handles.TargetListDir, args)
}

// TargetSearch searches a target's files.
func (h *Harness) TargetSearch(ctx context.Context, args TargetSearchArgs) (*TargetSearchResult, error) {
	return call(ctx, h, h.handles.TargetSearch, args)
}

// TargetWriteFile writes a whole file of a write target.
func (h *Harness) TargetWriteFile(ctx context.Context, args TargetWriteFileArgs) (*TargetMutationResult, error) {
	return call(ctx, h, h.handles.TargetWriteFile, args)
}

// TargetApplyPatch applies edit operations to a write target, all or
// nothing.
func (h *Harness) TargetApplyPatch(ctx context.Context, args TargetApplyPatchArgs) (*TargetMutationResult, error) {
	return call(ctx, h, h.handles.TargetApplyPatch, args)
}

// TargetCopy copies a file within a target or into another write target.
func (h *Harness) TargetCopy(ctx context.Context, args TargetCopyArgs) (*TargetMutationResult, error) {
	return call(ctx, h, h.handles.TargetCopy, args)
}

// TargetMove moves a file within a write target or into another.
func (h *Harness) TargetMove(ctx context.Context, args TargetCopyArgs) (*TargetMutationResult, error) {
	return call(ctx, h, h.handles.TargetMove, args)
}

// TargetExecuteCommand runs a bounded, classified command in a target.
func (h *Harness) TargetExecuteCommand(ctx context.Context, args TargetExecuteArgs) (*TargetExecuteResult, error) {
	return call(ctx, h, h.handles.TargetExecuteCommand, args)
}

// PromoteTarget turns a target into a registered repository.
func (h *Harness) PromoteTarget(ctx context.Context, args TargetPromoteArgs) (*TargetPromoteResult, error) {
	return call(ctx, h, h.handles.PromoteTarget, args)
}
