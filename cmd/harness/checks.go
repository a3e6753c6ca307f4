package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/errs"
)

func init() {
	register("check", command{
		usage: "check --repo ID [--cwd DIR] [--timeout-ms N] [--effects E,...] -- ARGV...   run a check (single-flight, evidence reuse)",
		run:   runCheckCmd,
	})
}

func runCheckCmd(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("check", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	repo := fs.String("repo", "", "")
	cwd := fs.String("cwd", "", "")
	timeoutMs := fs.Int("timeout-ms", 0, "")
	effects := fs.StringSlice("effects", nil, "")
	if err := fs.Parse(args); err != nil {
		return usageErr{"check: " + err.Error()}
	}
	argv := fs.Args()
	if *repo == "" || len(argv) == 0 {
		return usageErr{"usage: harness check --repo ID [--cwd DIR] [--timeout-ms N] [--effects E,...] -- ARGV..."}
	}
	a := harness.RunCheckArgs{RepoID: *repo, Argv: argv, Cwd: *cwd, TimeoutMs: *timeoutMs, Effects: *effects}
	var failed bool
	err := c.show(ctx, "run_check", a, func(raw json.RawMessage) {
		var r harness.RunCheckResult
		if err := json.Unmarshal(raw, &r); err != nil {
			_ = c.printJSON(raw)
			return
		}
		failed = !r.Passed
		printCheck(c.stdout, &r)
	})
	if err != nil {
		return err
	}
	if failed {
		// Exit 1 for scripts (with --json the result alone says passed: false).
		return errs.New(errs.Code("CHECK_FAILED"), "the check did not pass")
	}
	return nil
}

func printCheck(w io.Writer, r *harness.RunCheckResult) {
	verdict := "PASS"
	switch {
	case r.TimedOut:
		verdict = "TIMEOUT"
	case !r.Passed:
		verdict = fmt.Sprintf("FAIL (exit %d)", r.ExitCode)
	}
	how := "ran"
	switch {
	case r.Reused:
		how = "reused evidence"
	case r.Joined:
		how = "joined a run in flight"
	}
	orig := fmt.Sprintf("pid %d", r.OriginalRun.Pid)
	if r.OriginalRun.JobID != "" {
		orig = "job " + r.OriginalRun.JobID
	}
	fmt.Fprintf(w, "%s  %s on the %s path (%s, %s, finished %s)\n", verdict, how, r.Path, orig, r.OriginalRun.RepoID,
		r.OriginalRun.FinishedAt.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(w, "identity %s\n", r.Identity)
	for _, m := range r.MissReasons {
		fmt.Fprintf(w, "  not reused: %s\n", m)
	}
	for _, s := range r.Summary {
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(s, "\n", "\n  "))
	}
	if !r.Passed {
		if out := strings.TrimSpace(r.Stdout + "\n" + r.Stderr); out != "" {
			fmt.Fprintf(w, "--- output ---\n%s\n", out)
		}
	}
}
