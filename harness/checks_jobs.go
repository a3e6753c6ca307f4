package harness

import (
	"context"
	"time"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/messages"
)

func init() { durableCheck = runCheckJob }

// runCheckJob runs an unfocused check as a durable job (job_start, then
// job_status until it ends) and reports the job as the check's outcome. When
// ctx ends first (the check actor stops), the job is cancelled.
func runCheckJob(ctx context.Context, h *Harness, req durableCheckRequest) (messages.CheckOutcome, error) {
	started := time.Now().UTC()
	j, err := h.JobStart(ctx, JobStartArgs{RepoID: req.RepoID, Argv: req.Argv, Cwd: req.Cwd, TimeoutS: req.TimeoutS, Writes: req.Writes, RequestID: req.RequestID})
	if err != nil {
		return messages.CheckOutcome{}, err
	}
	for !j.Finished() {
		if err := ctx.Err(); err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = h.JobCancel(cctx, JobCancelArgs{JobID: j.JobID})
			cancel()
			return messages.CheckOutcome{JobID: j.JobID, StartedAt: started, FinishedAt: time.Now().UTC(), ExitCode: -1, Cancelled: true}, nil
		}
		next, err := h.JobStatus(ctx, JobStatusArgs{JobID: j.JobID, WaitS: 60})
		if err != nil {
			if ctx.Err() != nil {
				continue // cancel the job on the next turn
			}
			return messages.CheckOutcome{}, errs.Wrap(errs.CodeOf(err), err, "wait for check job %s: %v", j.JobID, err)
		}
		j = next
	}
	o := messages.CheckOutcome{JobID: j.JobID, Pid: j.Pid, StartedAt: started, FinishedAt: time.Now().UTC(), ExitCode: -1,
		TimedOut: j.TimedOut, Cancelled: j.State == messages.JobCancelled, Stdout: j.Tail, Summary: j.Summary}
	if j.StartedAt != nil {
		o.StartedAt = j.StartedAt.UTC()
	}
	if j.FinishedAt != nil {
		o.FinishedAt = j.FinishedAt.UTC()
	}
	if j.ExitCode != nil {
		o.ExitCode = *j.ExitCode
	}
	o.Passed = j.State == messages.JobSucceeded && o.ExitCode == 0 && !o.TimedOut
	if j.Error != nil && o.Stderr == "" {
		o.Stderr = j.Error.Code + ": " + j.Error.Message
	}
	return o, nil
}
