package actors

import (
	"context"
	"io"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/joblog"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/messages"
)

// JobNative performs, in place of a process, the jobs whose work harnessd
// does itself: git reset --hard, git branch -D, git tag -f write .git,
// which a job's processes never may, so harnessd's own confined git does
// it (harness/ops/job/gitstate.go). A dependency of the jobs actor, never
// part of a message. The job keeps everything else: its record, approval,
// audit entries, durable lease and undo receipt.
type JobNative interface {
	// Performs reports whether harnessd performs j itself.
	Performs(j messages.Job) bool
	// Perform does j's work in its checkout (the lease held), writing
	// what it did to out; an error is why it failed, with its code.
	Perform(ctx context.Context, j messages.Job, out io.Writer) error
}

// runNative is runJobProcess for a job harnessd performs itself: its
// logs, its work, its receipt, its exit (0, or 1 with the error).
func runNative(ctx context.Context, cfg *JobsConfig, job messages.Job, undo bool, send func(any)) {
	red := redact.Default()
	stdout, stderr, err := createJobLogs(job.LogDir, red)
	if err != nil {
		send(jobProcStarted{err: err})
		return
	}
	tail := &tailBuffer{n: JobTailBytes}
	began := time.Now()
	var out jobOutcome
	if perr := cfg.Native.Perform(ctx, job, fanout{stdout, tail}); perr != nil {
		e := errs.From(perr)
		_, _ = io.WriteString(fanout{stderr, tail}, "harnessd: "+string(e.Code)+": "+e.Message+"\n")
		out.res.ExitCode, out.err = 1, perr
	}
	out.res.DurationMs = float64(time.Since(began).Microseconds()) / 1000
	out.res.Cancelled = ctx.Err() != nil
	_ = stdout.Close()
	_ = stderr.Close()
	out.stdout, out.stderr = stdout.Written(), stderr.Written()
	out.redactions = stdout.Redactions() + stderr.Redactions()
	out.tail, _ = red.String(tail.String())
	out.summary = joblog.Summarize(out.tail, joblog.DefaultSummaryLines)
	if undo {
		var failed string
		if out.receiptID, failed = jobReceipt(cfg.Undo, cfg.Logger, job); failed != "" {
			out.summary = append(out.summary, failed)
		}
	}
	send(jobProcExited{out: out})
}

// createJobLogs creates a job's stdout and stderr logs in dir, both
// redacted by red: neither when one fails.
func createJobLogs(dir string, red *redact.Redactor) (stdout, stderr *joblog.Writer, err error) {
	stdout, err = joblog.CreateWith(dir, JobStdoutLog, 0, red)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Internal, err, "create job logs: %v", err)
	}
	stderr, err = joblog.CreateWith(dir, JobStderrLog, 0, red)
	if err != nil {
		_ = stdout.Close()
		return nil, nil, errs.Wrap(errs.Internal, err, "create job logs: %v", err)
	}
	return stdout, stderr, nil
}
