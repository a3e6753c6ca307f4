package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/textsafe"
)

var checkCommand = command{
	name:  "check",
	usage: "check [--repo ID] [--rerun] [--cwd DIR] [--timeout-ms N] [--effects E,...] -- ARGV...   run a check (single-flight, evidence reuse)",
	run:   runCheckCmd,
	help: `Usage:
  harness check [--repo ID] [--rerun] [--cwd DIR] [--timeout-ms N] [--effects E,...] -- ARGV...

Runs ARGV as a check of the repository of the current directory (or ID):
single-flight (identical checks in flight share one run) and evidence reuse
(an identical check of the same tree state is answered from its earlier
result, unless --rerun). ARGV runs in the current directory.
  --repo ID           repository id (from 'harness repo ls'); --cwd is then relative to its root
  --register          register the current git work tree first
  --rerun             run it even when an earlier pass could be reused
  --cwd DIR           working directory (default: the current directory)
  --timeout-ms N      kill the check after N milliseconds
  --effects E,...     what the check does besides reading, e.g. writes_build_cache

Exit code: 0 when the check passed, 1 when it failed or timed out (the
result is printed either way; with --json it says passed: false).
`,
	flags: []string{"--repo", "--register", "--rerun", "--cwd", "--timeout-ms", "--effects"},
}

func runCheckCmd(ctx context.Context, c *cli, args []string) error {
	fs, repo, register := whereFlagSet("check")
	rerun := fs.Bool("rerun", false, "")
	cwd := fs.String("cwd", "", "")
	timeoutMs := fs.Int("timeout-ms", 0, "")
	effects := fs.StringSlice("effects", nil, "")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageErr{"usage: harness check [--repo ID] [--rerun] [--cwd DIR] [--timeout-ms N] [--effects E,...] -- ARGV..."}
	}
	a := harness.RunCheckArgs{RepoID: *repo, Argv: argv, Cwd: *cwd, TimeoutMs: *timeoutMs, Effects: *effects, Rerun: *rerun}
	if *repo == "" {
		// The repository of the current directory; --cwd and the default
		// directory are the person's, made relative to its root.
		h, err := c.resolve(ctx, "", *register)
		if err != nil {
			return err
		}
		a.RepoID, a.Cwd = h.ID, h.Prefix
		if *cwd != "" {
			if a.Cwd, err = h.repoPath(*cwd); err != nil {
				return err
			}
		}
		if a.Cwd == "." {
			a.Cwd = ""
		}
	}
	raw, err := c.c.Call(ctx, "run_check", a)
	if err != nil {
		return err
	}
	var r harness.RunCheckResult
	if err := json.Unmarshal(raw, &r); err != nil || c.json {
		if perr := c.printJSON(raw); perr != nil {
			return perr
		}
		if err != nil {
			return nil
		}
	} else {
		printCheck(c.stdout, &r)
	}
	if !r.Passed {
		// Exit 1 for scripts, also with --json (where stdout is the result alone).
		return silentFailure{string(errs.CheckFailed) + ": the check did not pass"}
	}
	return nil
}

func printCheck(w io.Writer, r *harness.RunCheckResult) {
	verdict := "PASS"
	switch {
	case r.Escalated != nil:
		verdict = "CONTINUES AS JOB " + esc(r.Escalated.JobID) + " (" + esc(r.Escalated.Reason) + ")"
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
		orig = "job " + esc(r.OriginalRun.JobID)
	}
	where := esc(r.OriginalRun.RepoID)
	if f := r.Fleet; f != nil {
		// One run fleet-wide: the node that ran it names it.
		orig, where = "fleet run "+esc(f.RunID), fmt.Sprintf("node %s, token %d", esc(f.Node), f.Token)
	}
	fmt.Fprintf(w, "%s  %s on the %s path (%s, %s, finished %s)\n", verdict, how, esc(r.Path), orig, where,
		r.OriginalRun.FinishedAt.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(w, "identity %s\n", esc(r.Identity))
	for _, m := range r.MissReasons {
		fmt.Fprintf(w, "  not reused: %s\n", esc(m))
	}
	for _, s := range r.Summary {
		fmt.Fprintln(w, textsafe.Block(s, "  "))
	}
	if !r.Passed {
		// The output is the command's: its lines stay lines, its control
		// characters are escaped (--json has it exactly).
		if out := strings.TrimSpace(r.Stdout + "\n" + r.Stderr); out != "" {
			fmt.Fprintf(w, "--- output ---\n%s\n", textsafe.Text(out))
		}
	}
}
