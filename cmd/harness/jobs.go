package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
)

func init() {
	register("jobs", command{usage: "jobs [--repo ID] [--state S] [--limit N]   list durable jobs, newest first", run: jobsList})
	register("job", command{usage: "job status ID [--wait S] | logs [-f] [--stderr] ID | cancel ID | clean [--older-than S]   one durable job", run: jobCmd})
}

func jobsList(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("jobs", pflag.ContinueOnError)
	repo := fs.String("repo", "", "only jobs of this repository")
	state := fs.String("state", "", "only jobs in this state")
	limit := fs.Int("limit", 50, "at most this many jobs")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.JobID, j.State, j.RepoID,
				jobDur(now.Sub(j.CreatedAt)), jobDur(time.Duration(j.DurationMs*float64(time.Millisecond))), jobClip(strings.Join(j.Argv, " "), 60))
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

func jobClip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func jobCmd(ctx context.Context, c *cli, args []string) error {
	const usage = "usage: harness job status ID [--wait S] | logs [-f] [--stderr] ID | cancel ID | clean [--older-than S]"
	if len(args) == 0 {
		return usageErr{usage}
	}
	fs := pflag.NewFlagSet("job "+args[0], pflag.ContinueOnError)
	wait := fs.Int("wait", 0, "wait up to this many seconds for the job to finish")
	follow := fs.BoolP("follow", "f", false, "follow the log until the job ends")
	stderr := fs.Bool("stderr", false, "read stderr instead of stdout")
	older := fs.Int("older-than", 0, "only worktrees of jobs that ended at least this many seconds ago")
	if err := fs.Parse(args[1:]); err != nil {
		return usageErr{usage}
	}
	rest := fs.Args()
	switch args[0] {
	case "status":
		if len(rest) != 1 {
			return usageErr{"usage: harness job status ID [--wait S]"}
		}
		return c.show(ctx, "job_status", harness.JobStatusArgs{JobID: rest[0], WaitS: *wait}, c.printJob)
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
				fmt.Fprintf(c.stdout, "removed %s\n", p)
			}
			fmt.Fprintf(c.stdout, "%d worktree(s) removed\n", len(r.Removed))
		})
	case "logs":
		if len(rest) != 1 {
			return usageErr{"usage: harness job logs [-f] [--stderr] ID"}
		}
		stream := "stdout"
		if *stderr {
			stream = "stderr"
		}
		return c.jobLogs(ctx, rest[0], stream, *follow)
	}
	return usageErr{fmt.Sprintf("unknown job subcommand %q", args[0])}
}

func (c *cli) printJob(raw json.RawMessage) {
	var j harness.JobResult
	_ = json.Unmarshal(raw, &j)
	w := c.stdout
	fmt.Fprintf(w, "job       %s (attempt %d)\n", j.JobID, j.Attempt)
	fmt.Fprintf(w, "state     %s\n", j.State)
	fmt.Fprintf(w, "repo      %s\n", j.RepoID)
	fmt.Fprintf(w, "argv      %s\n", strings.Join(j.Argv, " "))
	if j.ExitCode != nil {
		fmt.Fprintf(w, "exit      %d %s\n", *j.ExitCode, j.Signal)
	}
	fmt.Fprintf(w, "duration  %s\n", jobDur(time.Duration(j.DurationMs*float64(time.Millisecond))))
	fmt.Fprintf(w, "output    %d B stdout, %d B stderr, %d redaction(s)\n", j.StdoutBytes, j.StderrBytes, j.Redactions)
	if j.Worktree != "" {
		fmt.Fprintf(w, "worktree  %s (kept: %v)\n", j.Worktree, j.WorktreeKept)
	}
	if j.Error != nil {
		fmt.Fprintf(w, "error     %s: %s\n", j.Error.Code, j.Error.Message)
	}
	for _, s := range j.Summary {
		fmt.Fprintf(w, "  | %s\n", s)
	}
}

// jobLogs prints a job log; with follow it polls job_logs until eof.
func (c *cli) jobLogs(ctx context.Context, id, stream string, follow bool) error {
	var off int64
	for {
		raw, err := c.c.Call(ctx, "job_logs", harness.JobLogsArgs{JobID: id, Stream: stream, Offset: off})
		if err != nil {
			return err
		}
		var r harness.JobLogsResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if _, err := c.stdout.Write([]byte(r.Data)); err != nil {
			return err
		}
		off = r.NextOffset
		if r.EOF || (!follow && off >= r.Total) {
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
