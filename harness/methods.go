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

	RunCommandArgs     = command.RunCommandArgs
	RunCommandResult   = command.RunCommandResult
	RouteExplainArgs   = command.RouteExplainArgs
	RouteExplainStep   = command.RouteExplainStep
	RouteExplainResult = command.RouteExplainResult

	ApplyPatchArgs = mutation.ApplyPatchArgs
	GitStageArgs   = mutation.GitStageArgs
	GitCommitArgs  = mutation.GitCommitArgs

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
	return invoke[*RegisterResult](ctx, h, "repository_register", args)
}

// Repositories lists the registered repositories, sorted by root.
func (h *Harness) Repositories(ctx context.Context, args ListArgs) (*ListResult, error) {
	return invoke[*ListResult](ctx, h, "repository_list", args)
}

// UnregisterRepository forgets a repository. Its files are not touched.
func (h *Harness) UnregisterRepository(ctx context.Context, args UnregisterArgs) (*UnregisterResult, error) {
	return invoke[*UnregisterResult](ctx, h, "repository_unregister", args)
}

// ReadFile reads a window of a file.
func (h *Harness) ReadFile(ctx context.Context, args ReadFileArgs) (*ReadFileResult, error) {
	return invoke[*ReadFileResult](ctx, h, "read_file", args)
}

// Search searches the repository's files.
func (h *Harness) Search(ctx context.Context, args SearchArgs) (*SearchResult, error) {
	return invoke[*SearchResult](ctx, h, "search", args)
}

// GitStatus reports the work tree's status with one hardened git call.
func (h *Harness) GitStatus(ctx context.Context, args GitStatusArgs) (*GitStatusResult, error) {
	return invoke[*GitStatusResult](ctx, h, "git_status", args)
}

// GitDiff returns a bounded, redacted diff.
func (h *Harness) GitDiff(ctx context.Context, args GitDiffArgs) (*GitDiffResult, error) {
	return invoke[*GitDiffResult](ctx, h, "git_diff", args)
}

// RunCommand runs a read-only command on the Fast Path.
func (h *Harness) RunCommand(ctx context.Context, args RunCommandArgs) (*RunCommandResult, error) {
	return invoke[*RunCommandResult](ctx, h, "run_command", args)
}

// RouteExplain returns the routing decision for an operation; nothing runs.
func (h *Harness) RouteExplain(ctx context.Context, args RouteExplainArgs) (*RouteExplainResult, error) {
	return invoke[*RouteExplainResult](ctx, h, "route_explain", args)
}

// ApplyPatch applies edit operations all-or-nothing under a lease.
func (h *Harness) ApplyPatch(ctx context.Context, args ApplyPatchArgs) (*MutationResult, error) {
	return invoke[*MutationResult](ctx, h, "apply_patch", args)
}

// GitStage stages exactly the named paths.
func (h *Harness) GitStage(ctx context.Context, args GitStageArgs) (*MutationResult, error) {
	return invoke[*MutationResult](ctx, h, "git_stage", args)
}

// GitCommit commits the index (or only the named paths). Hooks do not run.
func (h *Harness) GitCommit(ctx context.Context, args GitCommitArgs) (*MutationResult, error) {
	return invoke[*MutationResult](ctx, h, "git_commit", args)
}

// Batch runs typed steps as one call, routed and checked as a whole first.
func (h *Harness) Batch(ctx context.Context, args BatchArgs) (*BatchResult, error) {
	return invoke[*BatchResult](ctx, h, "batch", args)
}

// BatchResultGet returns a step result a batch kept by reference.
func (h *Harness) BatchResultGet(ctx context.Context, args BatchResultArgs) (*BatchResultResult, error) {
	return invoke[*BatchResultResult](ctx, h, "batch_result", args)
}

// ReadLanes runs read-only steps concurrently on the lane actors.
func (h *Harness) ReadLanes(ctx context.Context, args ReadLanesArgs) (*ReadLanesResult, error) {
	return invoke[*ReadLanesResult](ctx, h, "read_lanes", args)
}

// RunCheck runs a check with single-flight and evidence reuse by semantic
// identity.
func (h *Harness) RunCheck(ctx context.Context, args RunCheckArgs) (*RunCheckResult, error) {
	return invoke[*RunCheckResult](ctx, h, "run_check", args)
}

// JobStart starts a durable job.
func (h *Harness) JobStart(ctx context.Context, args JobStartArgs) (*JobResult, error) {
	return invoke[*JobResult](ctx, h, "job_start", args)
}

// JobStatus returns a job's state, waiting up to wait_s for it to finish.
func (h *Harness) JobStatus(ctx context.Context, args JobStatusArgs) (*JobResult, error) {
	return invoke[*JobResult](ctx, h, "job_status", args)
}

// JobLogs reads a job's log.
func (h *Harness) JobLogs(ctx context.Context, args JobLogsArgs) (*JobLogsResult, error) {
	return invoke[*JobLogsResult](ctx, h, "job_logs", args)
}

// JobCancel cancels a job and returns its final state.
func (h *Harness) JobCancel(ctx context.Context, args JobCancelArgs) (*JobResult, error) {
	return invoke[*JobResult](ctx, h, "job_cancel", args)
}

// JobList lists jobs, newest first.
func (h *Harness) JobList(ctx context.Context, args JobListArgs) (*JobListResult, error) {
	return invoke[*JobListResult](ctx, h, "job_list", args)
}

// JobClean removes kept worktrees of finished jobs.
func (h *Harness) JobClean(ctx context.Context, args JobCleanArgs) (*JobCleanResult, error) {
	return invoke[*JobCleanResult](ctx, h, "job_clean", args)
}

// PatchProposalValidate checks proposals without writing and stores the
// valid ones.
func (h *Harness) PatchProposalValidate(ctx context.Context, args PatchProposalValidateArgs) (*PatchProposalValidateResult, error) {
	return invoke[*PatchProposalValidateResult](ctx, h, "patch_proposal_validate", args)
}

// PatchProposalIntegrate applies validated proposals together.
func (h *Harness) PatchProposalIntegrate(ctx context.Context, args PatchProposalIntegrateArgs) (*PatchProposalIntegrateResult, error) {
	return invoke[*PatchProposalIntegrateResult](ctx, h, "patch_proposal_integrate", args)
}
