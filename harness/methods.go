package harness

import (
	"context"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops/batch"
	"github.com/harnessd/harnessd/harness/ops/check"
	"github.com/harnessd/harnessd/harness/ops/command"
	"github.com/harnessd/harnessd/harness/ops/job"
	"github.com/harnessd/harnessd/harness/ops/mutation"
	"github.com/harnessd/harnessd/harness/ops/proposal"
	"github.com/harnessd/harnessd/harness/ops/push"
	"github.com/harnessd/harnessd/harness/ops/read"
	"github.com/harnessd/harnessd/harness/ops/repo"
)

// The types of the operations' arguments and results, under the names of
// the embedding API. Each method below runs its operation through the
// request pipeline, like every other surface.
type (
	Meta           = op.Meta
	Latency        = op.Latency
	Receipt        = op.Receipt
	MutationResult = op.MutationResult
	ProgressFunc   = op.ProgressFunc

	Repository       = repo.Repository
	RegisterArgs     = repo.RegisterArgs
	RegisterResult   = repo.RegisterResult
	ListArgs         = repo.ListArgs
	ListResult       = repo.ListResult
	UnregisterArgs   = repo.UnregisterArgs
	UnregisterResult = repo.UnregisterResult

	ReadFileArgs    = read.ReadFileArgs
	ReadFileResult  = read.ReadFileResult
	SearchArgs      = read.SearchArgs
	SearchResult    = read.SearchResult
	GitStatusArgs   = read.GitStatusArgs
	GitStatusResult = read.GitStatusResult
	GitDiffArgs     = read.GitDiffArgs
	GitDiffResult   = read.GitDiffResult
	ListDirArgs     = read.ListDirArgs
	ListDirResult   = read.ListDirResult

	RunCommandArgs     = command.RunCommandArgs
	RunCommandResult   = command.RunCommandResult
	RouteExplainArgs   = command.RouteExplainArgs
	RouteExplainStep   = command.RouteExplainStep
	RouteExplainResult = command.RouteExplainResult

	ApplyPatchArgs = mutation.ApplyPatchArgs
	GitStageArgs   = mutation.GitStageArgs
	GitCommitArgs  = mutation.GitCommitArgs
	GitPushArgs    = push.Args

	BatchStep          = batch.Step
	BatchArgs          = batch.BatchArgs
	BatchResult        = batch.Result
	BatchStepResult    = batch.StepResult
	MutationStepResult = batch.MutationStepResult
	BatchResultArgs    = batch.ResultArgs
	BatchResultResult  = batch.ResultResult
	ReadLanesArgs      = batch.ReadLanesArgs
	ReadLanesResult    = batch.ReadLanesResult
	LaneResult         = batch.LaneResult

	RunCheckArgs   = check.RunCheckArgs
	RunCheckResult = check.RunCheckResult
	OriginalRun    = check.OriginalRun

	JobStartArgs   = job.JobStartArgs
	RetryPolicy    = job.RetryPolicy
	JobResult      = job.JobResult
	JobError       = job.JobError
	JobStatusArgs  = job.JobStatusArgs
	JobLogsArgs    = job.JobLogsArgs
	JobLogsResult  = job.JobLogsResult
	JobCancelArgs  = job.JobCancelArgs
	JobListArgs    = job.JobListArgs
	JobListResult  = job.JobListResult
	JobCleanArgs   = job.JobCleanArgs
	JobCleanResult = job.JobCleanResult

	Proposal                     = proposal.Proposal
	ProposalVerdict              = proposal.ProposalVerdict
	ProposalConflict             = proposal.ProposalConflict
	ProposalWarning              = proposal.ProposalWarning
	PatchProposalValidateArgs    = proposal.ValidateArgs
	PatchProposalValidateResult  = proposal.ValidateResult
	PatchProposalIntegrateArgs   = proposal.IntegrateArgs
	PatchProposalIntegrateResult = proposal.IntegrateResult
)

// handles are the facade's operations with their types, one per method,
// resolved once at Open (newHandles): a method runs its handle through the
// pipeline without looking its operation up by name. The fields are named
// after the methods.
type handles struct {
	// repositories, reads, commands, mutations, batches, checks, jobs, proposals
	RegisterRepository     op.Handle[RegisterArgs, *RegisterResult]
	Repositories           op.Handle[ListArgs, *ListResult]
	UnregisterRepository   op.Handle[UnregisterArgs, *UnregisterResult]
	ReadFile               op.Handle[ReadFileArgs, *ReadFileResult]
	Search                 op.Handle[SearchArgs, *SearchResult]
	GitStatus              op.Handle[GitStatusArgs, *GitStatusResult]
	GitDiff                op.Handle[GitDiffArgs, *GitDiffResult]
	ListDir                op.Handle[ListDirArgs, *ListDirResult]
	RunCommand             op.Handle[RunCommandArgs, *RunCommandResult]
	RouteExplain           op.Handle[RouteExplainArgs, *RouteExplainResult]
	ApplyPatch             op.Handle[ApplyPatchArgs, *MutationResult]
	GitStage               op.Handle[GitStageArgs, *MutationResult]
	GitCommit              op.Handle[GitCommitArgs, *MutationResult]
	GitPush                op.Handle[GitPushArgs, *MutationResult]
	Batch                  op.Handle[BatchArgs, *BatchResult]
	BatchResultGet         op.Handle[BatchResultArgs, *BatchResultResult]
	ReadLanes              op.Handle[ReadLanesArgs, *ReadLanesResult]
	RunCheck               op.Handle[RunCheckArgs, *RunCheckResult]
	JobStart               op.Handle[JobStartArgs, *JobResult]
	JobStatus              op.Handle[JobStatusArgs, *JobResult]
	JobLogs                op.Handle[JobLogsArgs, *JobLogsResult]
	JobCancel              op.Handle[JobCancelArgs, *JobResult]
	JobList                op.Handle[JobListArgs, *JobListResult]
	JobClean               op.Handle[JobCleanArgs, *JobCleanResult]
	PatchProposalValidate  op.Handle[PatchProposalValidateArgs, *PatchProposalValidateResult]
	PatchProposalIntegrate op.Handle[PatchProposalIntegrateArgs, *PatchProposalIntegrateResult]

	// claims (claims.go)
	RunClaim  op.Handle[RunClaimArgs, *RunClaimResult]
	RunVerify op.Handle[RunVerifyArgs, *RunVerifyResult]

	// context (context.go)
	ContextAssemble op.Handle[ContextArgs, *ContextResult]

	// provenance (provenance.go)
	CommitVerify op.Handle[CommitVerifyArgs, *CommitVerifyResult]

	// runs (runs.go)
	RunStart     op.Handle[RunStartArgs, *RunStateResult]
	RunObserve   op.Handle[RunObserveArgs, *RunStateResult]
	RunStage     op.Handle[RunStageArgs, *RunStateResult]
	RunStatus    op.Handle[RunStatusArgs, *RunStateResult]
	RunList      op.Handle[RunListArgs, *RunListResult]
	RunEnd       op.Handle[RunEndArgs, *RunStateResult]
	RunResume    op.Handle[RunResumeArgs, *RunStateResult]
	RunEscalate  op.Handle[RunEscalateArgs, *RunStateResult]
	RunAssess    op.Handle[RunAssessArgs, *RunAssessResult]
	RunReview    op.Handle[RunReviewArgs, *RunReviewResult]
	RunScorecard op.Handle[RunScorecardArgs, *RunScorecardResult]

	// targets (targets.go)
	RegisterTarget       op.Handle[TargetRegisterArgs, *TargetRegisterResult]
	Targets              op.Handle[TargetListArgs, *TargetListResult]
	UnregisterTarget     op.Handle[TargetUnregisterArgs, *TargetUnregisterResult]
	TargetReadFile       op.Handle[TargetReadFileArgs, *TargetReadFileResult]
	TargetListDir        op.Handle[TargetListDirArgs, *TargetListDirResult]
	TargetSearch         op.Handle[TargetSearchArgs, *TargetSearchResult]
	TargetWriteFile      op.Handle[TargetWriteFileArgs, *TargetMutationResult]
	TargetApplyPatch     op.Handle[TargetApplyPatchArgs, *TargetMutationResult]
	TargetCopy           op.Handle[TargetCopyArgs, *TargetMutationResult]
	TargetMove           op.Handle[TargetCopyArgs, *TargetMutationResult]
	TargetExecuteCommand op.Handle[TargetExecuteArgs, *TargetExecuteResult]
	PromoteTarget        op.Handle[TargetPromoteArgs, *TargetPromoteResult]

	// undo (undo.go)
	Revert      op.Handle[RevertArgs, *MutationResult]
	RunRevert   op.Handle[RunRevertArgs, *MutationResult]
	ReceiptList op.Handle[ReceiptListArgs, *ReceiptListResult]
}

// newHandles binds every handle to reg's operation of its name. A name
// reg does not know, or types that are not the operation's, panic: a
// programming error the first test that opens a Harness catches.
func newHandles(reg *op.Registry) *handles {
	hs := &handles{}
	bind(reg, &hs.RegisterRepository, "repository_register")
	bind(reg, &hs.Repositories, "repository_list")
	bind(reg, &hs.UnregisterRepository, "repository_unregister")
	bind(reg, &hs.ReadFile, "read_file")
	bind(reg, &hs.Search, "search")
	bind(reg, &hs.GitStatus, "git_status")
	bind(reg, &hs.GitDiff, "git_diff")
	bind(reg, &hs.ListDir, "list_dir")
	bind(reg, &hs.RunCommand, "run_command")
	bind(reg, &hs.RouteExplain, "route_explain")
	bind(reg, &hs.ApplyPatch, "apply_patch")
	bind(reg, &hs.GitStage, "git_stage")
	bind(reg, &hs.GitCommit, "git_commit")
	bind(reg, &hs.GitPush, "git_push")
	bind(reg, &hs.Batch, "batch")
	bind(reg, &hs.BatchResultGet, "batch_result")
	bind(reg, &hs.ReadLanes, "read_lanes")
	bind(reg, &hs.RunCheck, "run_check")
	bind(reg, &hs.JobStart, "job_start")
	bind(reg, &hs.JobStatus, "job_status")
	bind(reg, &hs.JobLogs, "job_logs")
	bind(reg, &hs.JobCancel, "job_cancel")
	bind(reg, &hs.JobList, "job_list")
	bind(reg, &hs.JobClean, "job_clean")
	bind(reg, &hs.PatchProposalValidate, "patch_proposal_validate")
	bind(reg, &hs.PatchProposalIntegrate, "patch_proposal_integrate")
	bind(reg, &hs.RunClaim, "run_claim")
	bind(reg, &hs.RunVerify, "run_verify")
	bind(reg, &hs.ContextAssemble, "context_assemble")
	bind(reg, &hs.CommitVerify, "commit_verify")
	bind(reg, &hs.RunStart, "run_start")
	bind(reg, &hs.RunObserve, "run_observe")
	bind(reg, &hs.RunStage, "run_stage")
	bind(reg, &hs.RunStatus, "run_status")
	bind(reg, &hs.RunList, "run_list")
	bind(reg, &hs.RunEnd, "run_end")
	bind(reg, &hs.RunResume, "run_resume")
	bind(reg, &hs.RunEscalate, "run_escalate")
	bind(reg, &hs.RunAssess, "run_assess")
	bind(reg, &hs.RunReview, "run_review")
	bind(reg, &hs.RunScorecard, "run_scorecard")
	bind(reg, &hs.RegisterTarget, "target_register")
	bind(reg, &hs.Targets, "target_list")
	bind(reg, &hs.UnregisterTarget, "target_unregister")
	bind(reg, &hs.TargetReadFile, "target_read_file")
	bind(reg, &hs.TargetListDir, "target_list_dir")
	bind(reg, &hs.TargetSearch, "target_search")
	bind(reg, &hs.TargetWriteFile, "target_write_file")
	bind(reg, &hs.TargetApplyPatch, "target_apply_patch")
	bind(reg, &hs.TargetCopy, "target_copy")
	bind(reg, &hs.TargetMove, "target_move")
	bind(reg, &hs.TargetExecuteCommand, "target_execute_command")
	bind(reg, &hs.PromoteTarget, "target_promote")
	bind(reg, &hs.Revert, "revert")
	bind(reg, &hs.RunRevert, "run_revert")
	bind(reg, &hs.ReceiptList, "receipt_list")
	return hs
}

// bind sets *dst to the handle of reg's operation name, with the handle's
// types taken from dst.
func bind[In, Out any](reg *op.Registry, dst *op.Handle[In, Out], name string) {
	*dst = op.HandleOf[In, Out](reg, name)
}

// EffectWorkspaceWrite is the declared effect of a check that writes to the
// work tree; such a check never reuses evidence across checkouts.
const EffectWorkspaceWrite = check.EffectWorkspaceWrite

// WithProgress returns a context whose long operations (job_status with
// wait_s, durable checks) report their progress to f.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return op.WithProgress(ctx, f)
}

// RegisterRepository registers the git work tree at args.Path and returns
// its stable repo_id and checkout_id. Registering the same work tree again
// returns the same ids with Created false.
func (h *Harness) RegisterRepository(ctx context.Context, args RegisterArgs) (*RegisterResult, error) {
	return call(ctx, h, h.handles.RegisterRepository, args)
}

// Repositories lists the registered repositories, sorted by root.
func (h *Harness) Repositories(ctx context.Context, args ListArgs) (*ListResult, error) {
	return call(ctx, h, h.handles.Repositories, args)
}

// UnregisterRepository forgets a repository. Its files are not touched.
func (h *Harness) UnregisterRepository(ctx context.Context, args UnregisterArgs) (*UnregisterResult, error) {
	return call(ctx, h, h.handles.UnregisterRepository, args)
}

// ReadFile reads a window of a file.
func (h *Harness) ReadFile(ctx context.Context, args ReadFileArgs) (*ReadFileResult, error) {
	return call(ctx, h, h.handles.ReadFile, args)
}

// ListDir lists a directory of the repository.
func (h *Harness) ListDir(ctx context.Context, args ListDirArgs) (*ListDirResult, error) {
	return call(ctx, h, h.handles.ListDir, args)
}

// Search searches the repository's files.
func (h *Harness) Search(ctx context.Context, args SearchArgs) (*SearchResult, error) {
	return call(ctx, h, h.handles.Search, args)
}

// GitStatus reports the work tree's status with one hardened git call.
func (h *Harness) GitStatus(ctx context.Context, args GitStatusArgs) (*GitStatusResult, error) {
	return call(ctx, h, h.handles.GitStatus, args)
}

// GitDiff returns a bounded, redacted diff.
func (h *Harness) GitDiff(ctx context.Context, args GitDiffArgs) (*GitDiffResult, error) {
	return call(ctx, h, h.handles.GitDiff, args)
}

// RunCommand runs a read-only command on the Fast Path.
func (h *Harness) RunCommand(ctx context.Context, args RunCommandArgs) (*RunCommandResult, error) {
	return call(ctx, h, h.handles.RunCommand, args)
}

// RouteExplain returns the routing decision for an operation; nothing runs.
func (h *Harness) RouteExplain(ctx context.Context, args RouteExplainArgs) (*RouteExplainResult, error) {
	return call(ctx, h, h.handles.RouteExplain, args)
}

// ApplyPatch applies edit operations all-or-nothing under a lease.
func (h *Harness) ApplyPatch(ctx context.Context, args ApplyPatchArgs) (*MutationResult, error) {
	return call(ctx, h, h.handles.ApplyPatch, args)
}

// GitStage stages exactly the named paths.
func (h *Harness) GitStage(ctx context.Context, args GitStageArgs) (*MutationResult, error) {
	return call(ctx, h, h.handles.GitStage, args)
}

// GitCommit commits the index (or only the named paths). Hooks do not run.
func (h *Harness) GitCommit(ctx context.Context, args GitCommitArgs) (*MutationResult, error) {
	return call(ctx, h, h.handles.GitCommit, args)
}

// GitPush pushes a local branch or tag to a configured remote: harnessd
// performs it with the user's credential, once a person approved exactly
// that push (the first call answers APPROVAL_REQUIRED).
func (h *Harness) GitPush(ctx context.Context, args GitPushArgs) (*MutationResult, error) {
	return call(ctx, h, h.handles.GitPush, args)
}

// Batch runs typed steps as one call, routed and checked as a whole first.
func (h *Harness) Batch(ctx context.Context, args BatchArgs) (*BatchResult, error) {
	return call(ctx, h, h.handles.Batch, args)
}

// BatchResultGet returns a step result a batch kept by reference.
func (h *Harness) BatchResultGet(ctx context.Context, args BatchResultArgs) (*BatchResultResult, error) {
	return call(ctx, h, h.handles.BatchResultGet, args)
}

// ReadLanes runs read-only steps concurrently on the lane actors.
func (h *Harness) ReadLanes(ctx context.Context, args ReadLanesArgs) (*ReadLanesResult, error) {
	return call(ctx, h, h.handles.ReadLanes, args)
}

// RunCheck runs a check with single-flight and evidence reuse by semantic
// identity.
func (h *Harness) RunCheck(ctx context.Context, args RunCheckArgs) (*RunCheckResult, error) {
	return call(ctx, h, h.handles.RunCheck, args)
}

// JobStart starts a durable job.
func (h *Harness) JobStart(ctx context.Context, args JobStartArgs) (*JobResult, error) {
	return call(ctx, h, h.handles.JobStart, args)
}

// JobStatus returns a job's state, waiting up to wait_s for it to finish.
func (h *Harness) JobStatus(ctx context.Context, args JobStatusArgs) (*JobResult, error) {
	return call(ctx, h, h.handles.JobStatus, args)
}

// JobLogs reads a job's log.
func (h *Harness) JobLogs(ctx context.Context, args JobLogsArgs) (*JobLogsResult, error) {
	return call(ctx, h, h.handles.JobLogs, args)
}

// JobCancel cancels a job and returns its final state.
func (h *Harness) JobCancel(ctx context.Context, args JobCancelArgs) (*JobResult, error) {
	return call(ctx, h, h.handles.JobCancel, args)
}

// JobList lists jobs, newest first.
func (h *Harness) JobList(ctx context.Context, args JobListArgs) (*JobListResult, error) {
	return call(ctx, h, h.handles.JobList, args)
}

// JobClean removes kept worktrees of finished jobs.
func (h *Harness) JobClean(ctx context.Context, args JobCleanArgs) (*JobCleanResult, error) {
	return call(ctx, h, h.handles.JobClean, args)
}

// PatchProposalValidate checks proposals without writing and stores the
// valid ones.
func (h *Harness) PatchProposalValidate(ctx context.Context, args PatchProposalValidateArgs) (*PatchProposalValidateResult, error) {
	return call(ctx, h, h.handles.PatchProposalValidate, args)
}

// PatchProposalIntegrate applies validated proposals together.
func (h *Harness) PatchProposalIntegrate(ctx context.Context, args PatchProposalIntegrateArgs) (*PatchProposalIntegrateResult, error) {
	return call(ctx, h, h.handles.PatchProposalIntegrate, args)
}
