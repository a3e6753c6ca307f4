package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/textsafe"
	"github.com/harnessd/harnessd/messages"
)

const jobStartUsage = "usage: harness job start --repo ID [--cwd DIR] [--timeout-s N] [--isolation none|worktree] [--writes] [--network] [--retry N] [--request-id ID] [--approval-id ID] [--wait S] -- ARGV..."

var jobsCommand = command{name: "jobs", usage: "jobs [--repo ID] [--state S] [--limit N]   list durable jobs, newest first", run: jobsList,
	help: `Usage:
  harness jobs [--repo ID] [--state S] [--limit N]

Lists durable jobs, newest first.
  --repo ID     only jobs of this repository
  --state S     only jobs in this state: queued, running, succeeded, failed, timed_out, cancelled, interrupted
  --limit N     at most N jobs (default 50)
`,
	flags: []string{"--repo", "--state", "--limit"}}

var jobCommand = command{name: "job", usage: "job start --repo ID -- ARGV... | status ID [--wait S] | logs [-f] [--stderr] ID | cancel ID | clean [--older-than S]   one durable job", run: jobCmd,
	help: `Usage:
  harness job start --repo ID [flags] -- ARGV...   start a durable job
  harness job status ID [--wait S]                 a job's state (exit 1 when it failed)
  harness job logs [-f] [--stderr] ID              its output (-f: until it ends)
  harness job cancel ID                            cancel it
  harness job clean [--older-than S]               remove the worktrees of ended jobs

Run 'harness job SUBCOMMAND --help' for the flags of each.
`,
	subHelp: map[string]string{
		"start": `Usage:
  harness job start --repo ID [flags] -- ARGV...

Starts ARGV (no shell: pass sh -c '...' for one) as a durable job of the
repository ID and prints the job. The job survives a daemon restart.
  --repo ID            repository id (from 'harness repo ls')
  --cwd DIR            working directory relative to the repository root
  --timeout-s N        kill the process tree after N seconds (default 600)
  --isolation MODE     none (the main checkout, default) or worktree
  --writes             the job writes files (holds the workspace lease with isolation none)
  --network            the job needs the network (policy or approval decides)
  --retry N            re-run it up to N times when a restart interrupted it
  --request-id ID      idempotency key (default: a new one, printed); retrying with the same id and input returns the same job
  --approval-id ID     after APPROVAL_REQUIRED: the approval a person granted
  --wait S             wait up to S seconds for the job to end; then exit like 'job status'
`,
		"status": `Usage:
  harness job status ID [--wait S]

Prints a job's state, exit code, duration, output sizes and summary.
  --wait S   wait up to S seconds for the job to end

Exit code: 0 when the job succeeded and also while it is still queued or
running (check the state line, or use --wait); 1 when it failed, timed out,
was cancelled or interrupted; 2 usage; 3 daemon not running.
`,
		"logs": `Usage:
  harness job logs [-f] [--stderr] [--raw] ID

Prints a job's stdout (or stderr with --stderr), redacted. On a terminal
its control characters (escape sequences, carriage returns, bidi
overrides) are shown escaped (\x1b, \r, \u202e; a backslash as \\);
into a pipe or a file, and with --raw, the output is written exactly.
  -f, --follow   follow the log until the job ends
  --raw          write the output exactly, also on a terminal
`,
		"cancel": `Usage:
  harness job cancel ID

Cancels a queued or running job (its process tree is killed).
`,
		"clean": `Usage:
  harness job clean [--older-than S]

Removes the worktrees kept by ended jobs.
  --older-than S   only those of jobs that ended at least S seconds ago
`,
	},
	flags: []string{"--repo", "--cwd", "--timeout-s", "--isolation", "--writes", "--network", "--retry", "--request-id", "--approval-id", "--wait", "--follow", "-f", "--stderr", "--raw", "--older-than"}}

func jobsList(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("jobs", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	repo := fs.String("repo", "", "only jobs of this repository")
	state := fs.String("state", "", "only jobs in this state")
	limit := fs.Int("limit", 50, "at most this many jobs")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageErr{"usage: harness jobs [--repo ID] [--state S] [--limit N]"}
	}
	in := harness.JobListArgs{RepoID: *repo, State: *state, Limit: *limit}
	return c.show(ctx, "job_list", in, func(raw json.RawMessage) {
		var r harness.JobListResult
		_ = json.Unmarshal(raw, &r)
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tREPO\tAGE\tDURATION\tARGV")
		now := time.Now()
		for _, j := range r.Jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", esc(j.JobID), esc(j.State), esc(j.RepoID),
				jobDur(now.Sub(j.CreatedAt)), jobDur(time.Duration(j.DurationMs*float64(time.Millisecond))), clipArgv(j.Argv, 60))
		}
		_ = tw.Flush()
	})
}

func jobDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// clipArgv is an argv as a shell reads it back (textsafe.Argv), cut to n
// characters.
func clipArgv(argv []string, n int) string {
	s := textsafe.Argv(argv)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func jobCmd(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usageErr{"job needs a subcommand: start, status, logs, cancel, clean"}
	}
	if args[0] == "start" {
		return jobStart(ctx, c, args[1:])
	}
	fs := pflag.NewFlagSet("job "+args[0], pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	wait := fs.Int("wait", 0, "wait up to this many seconds for the job to finish")
	follow := fs.BoolP("follow", "f", false, "follow the log until the job ends")
	stderr := fs.Bool("stderr", false, "read stderr instead of stdout")
	raw := fs.Bool("raw", false, "write the log exactly, also on a terminal")
	older := fs.Int("older-than", 0, "only worktrees of jobs that ended at least this many seconds ago")
	if err := fs.Parse(args[1:]); err != nil {
		return usageErr{err.Error()}
	}
	rest := fs.Args()
	switch args[0] {
	case "status":
		if len(rest) != 1 {
			return usageErr{"usage: harness job status ID [--wait S]"}
		}
		return c.jobStatus(ctx, rest[0], *wait)
	case "cancel":
		if len(rest) != 1 {
			return usageErr{"usage: harness job cancel ID"}
		}
		return c.show(ctx, "job_cancel", harness.JobCancelArgs{JobID: rest[0]}, c.printJob)
	case "clean":
		if len(rest) != 0 {
			return usageErr{"usage: harness job clean [--older-than S]"}
		}
		return c.show(ctx, "job_clean", harness.JobCleanArgs{OlderThanS: *older}, func(raw json.RawMessage) {
			var r harness.JobCleanResult
			_ = json.Unmarshal(raw, &r)
			for _, p := range r.Removed {
				fmt.Fprintf(c.stdout, "removed %s\n", esc(p))
			}
			fmt.Fprintf(c.stdout, "%d worktree(s) removed\n", len(r.Removed))
		})
	case "logs":
		if len(rest) != 1 {
			return usageErr{"usage: harness job logs [-f] [--stderr] [--raw] ID"}
		}
		stream := "stdout"
		if *stderr {
			stream = "stderr"
		}
		return c.jobLogs(ctx, rest[0], stream, *follow, *raw || !terminal(c.stdout))
	}
	return usageErr{fmt.Sprintf("unknown job subcommand %q (want start, status, logs, cancel or clean)", args[0])}
}

// jobStart starts a durable job; with --wait it waits and exits like
// job status.
func jobStart(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("job start", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	repo := fs.String("repo", "", "")
	cwd := fs.String("cwd", "", "")
	timeoutS := fs.Int("timeout-s", 0, "")
	isolation := fs.String("isolation", "", "")
	writes := fs.Bool("writes", false, "")
	network := fs.Bool("network", false, "")
	retry := fs.Int("retry", 0, "")
	reqID := fs.String("request-id", "", "")
	approval := fs.String("approval-id", "", "")
	wait := fs.Int("wait", 0, "")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	argv := fs.Args()
	if *repo == "" || len(argv) == 0 {
		return usageErr{jobStartUsage}
	}
	if fs.ArgsLenAtDash() != 0 {
		return usageErr{"put the command after --: " + jobStartUsage}
	}
	if *reqID == "" {
		*reqID = newRequestID()
		fmt.Fprintf(c.stderr, "harness: request_id %s (retry with --request-id %s to get the same job)\n", *reqID, *reqID)
	}
	in := map[string]any{"repo_id": *repo, "argv": argv, "request_id": *reqID}
	for k, v := range map[string]string{"cwd": *cwd, "isolation": *isolation, "approval_id": *approval} {
		if v != "" {
			in[k] = v
		}
	}
	if *timeoutS > 0 {
		in["timeout_s"] = *timeoutS
	}
	if *writes {
		in["writes"] = true
	}
	if *network {
		in["network"] = true
	}
	if *retry > 0 {
		in["retry"] = map[string]int{"max": *retry}
	}
	raw, err := c.c.Call(ctx, "job_start", in)
	if err != nil {
		return err
	}
	if *wait <= 0 {
		if c.json {
			return c.printJSON(raw)
		}
		c.printJob(raw)
		return nil
	}
	var j harness.JobResult
	if err := json.Unmarshal(raw, &j); err != nil {
		return err
	}
	return c.jobStatus(ctx, j.JobID, *wait)
}

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "cli-" + hex.EncodeToString(b)
}

// jobStatus prints a job and fails (exit 1) when it ended without success.
func (c *cli) jobStatus(ctx context.Context, id string, wait int) error {
	raw, err := c.c.Call(ctx, "job_status", harness.JobStatusArgs{JobID: id, WaitS: wait})
	if err != nil {
		return err
	}
	if c.json {
		if err := c.printJSON(raw); err != nil {
			return err
		}
	} else {
		c.printJob(raw)
	}
	var j harness.JobResult
	if err := json.Unmarshal(raw, &j); err != nil {
		return err
	}
	return jobOutcome(j.JobID, j.State)
}

// jobOutcome is nil for a job that succeeded or has not ended yet, else a
// failure (exit 1) naming the state.
func jobOutcome(id, state string) error {
	switch state {
	case messages.JobSucceeded, messages.JobQueued, messages.JobRunning:
		return nil
	}
	return silentFailure{fmt.Sprintf("job %s %s", id, state)}
}

func (c *cli) printJob(raw json.RawMessage) {
	var j harness.JobResult
	_ = json.Unmarshal(raw, &j)
	w := c.stdout
	fmt.Fprintf(w, "job       %s (attempt %d)\n", esc(j.JobID), j.Attempt)
	fmt.Fprintf(w, "state     %s\n", esc(j.State))
	fmt.Fprintf(w, "repo      %s\n", esc(j.RepoID))
	fmt.Fprintf(w, "argv      %s\n", textsafe.Argv(j.Argv))
	if j.Cwd != "" {
		fmt.Fprintf(w, "cwd       %s\n", esc(j.Cwd))
	}
	if j.ExitCode != nil {
		fmt.Fprintf(w, "exit      %d %s\n", *j.ExitCode, esc(j.Signal))
	}
	fmt.Fprintf(w, "duration  %s\n", jobDur(time.Duration(j.DurationMs*float64(time.Millisecond))))
	fmt.Fprintf(w, "output    %d B stdout, %d B stderr, %d redaction(s)\n", j.StdoutBytes, j.StderrBytes, j.Redactions)
	if r := j.Resources; r != nil {
		fmt.Fprintf(w, "usage     %s CPU, %s peak RSS, %s read, %s written, %d process(es)\n",
			jobDur(time.Duration(r.CPUMs)*time.Millisecond), humanBytes(r.PeakRSSBytes), humanBytes(r.IOReadBytes), humanBytes(r.IOWriteBytes), r.Processes)
	}
	if j.PerformedBy != "" {
		fmt.Fprintf(w, "by        %s\n", esc(j.PerformedBy))
	}
	if j.ReceiptID != "" {
		fmt.Fprintf(w, "receipt   %s (undo: harness revert %s)\n", esc(j.ReceiptID), esc(j.ReceiptID))
	}
	if j.Worktree != "" {
		fmt.Fprintf(w, "worktree  %s (kept: %v)\n", esc(j.Worktree), j.WorktreeKept)
	}
	if j.Error != nil {
		fmt.Fprintf(w, "error     %s: %s\n", esc(string(j.Error.Code)), esc(j.Error.Message))
	}
	for _, s := range j.Summary {
		fmt.Fprintln(w, textsafe.Block(s, "  | "))
	}
}

// jobLogs prints a job log; with follow it polls job_logs until eof.
// Unless exact, its control characters are escaped (see logEscaper).
func (c *cli) jobLogs(ctx context.Context, id, stream string, follow, exact bool) error {
	var off int64
	var le logEscaper
	for {
		raw, err := c.c.Call(ctx, "job_logs", harness.JobLogsArgs{JobID: id, Stream: stream, Offset: off})
		if err != nil {
			return err
		}
		var r harness.JobLogsResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		off = r.NextOffset
		done := r.EOF || (!follow && off >= r.Total)
		data := []byte(r.Data)
		if !exact {
			data = le.chunk(data, done)
		}
		if _, err := c.stdout.Write(data); err != nil {
			return err
		}
		if done {
			return nil
		}
		if r.Data == "" {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}
