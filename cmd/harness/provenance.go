package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
)

const verifyCommitUsage = "usage: harness verify-commit REV [--repo ID]"

var verifyCommitCommand = command{name: "verify-commit", usage: "verify-commit REV [--repo ID]   check a commit's Harnessd- trailers against the receipts and the audit log", run: verifyCommit,
	help: `Usage:
  harness verify-commit REV [--repo ID]

Checks the provenance trailers git_commit wrote into commit REV
(Harnessd-Receipt, -Run, -Policy, -Approvals, -Verified, -Repo) against
harnessd's records: the receipt exists and names this commit, its parent
and its tree's blob digests; the fencing token is the one the audit log
recorded; the run exists; the approvals were used and decided by people;
the policy digest was in force; the audit chain verifies. Prints each
check. See docs/provenance.md.
  --repo ID   repository id (default: the registered repository holding
              the current directory)

Exit code: 0 when every check passed; 1 when one failed (a commit without
trailers was not made by harnessd); 2 usage; 3 daemon not running.
`,
	flags: []string{"--repo"}}

func verifyCommit(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("verify-commit", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	repo := fs.String("repo", "", "repository id")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() != 1 {
		return usageErr{verifyCommitUsage}
	}
	rev := fs.Arg(0)
	if *repo == "" {
		id, err := c.repoOfCwd(ctx)
		if err != nil {
			return err
		}
		*repo = id
	}
	raw, err := c.c.Call(ctx, "commit_verify", harness.CommitVerifyArgs{RepoID: *repo, Rev: rev})
	if err != nil {
		return err
	}
	var r harness.CommitVerifyResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("decode commit_verify result: %w", err)
	}
	if c.json {
		if err := c.printJSON(raw); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.stdout, "commit %s (%s)\n", esc(r.Commit), esc(r.Rev))
		for _, ch := range r.Checks {
			mark := "ok  "
			if !ch.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(c.stdout, "  %s %-14s %s\n", mark, esc(ch.Name), esc(ch.Detail))
		}
		if r.Verified {
			fmt.Fprintln(c.stdout, "verified")
		}
	}
	if !r.Verified {
		var failed []string
		for _, ch := range r.Checks {
			if !ch.OK {
				failed = append(failed, ch.Name)
			}
		}
		return silentFailure{fmt.Sprintf("commit %s failed verification: %s", r.Rev, strings.Join(failed, ", "))}
	}
	return nil
}

// repoOfCwd returns the registered repository whose root holds the
// current directory (the deepest, for nested checkouts).
func (c *cli) repoOfCwd(ctx context.Context) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", usageErr{"cannot tell the current directory: pass --repo ID"}
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	raw, err := c.c.Call(ctx, "repository_list", map[string]any{})
	if err != nil {
		return "", err
	}
	var l harness.ListResult
	if err := json.Unmarshal(raw, &l); err != nil {
		return "", fmt.Errorf("decode repository_list result: %w", err)
	}
	best, bestLen := "", -1
	for _, x := range l.Repositories {
		root := x.Root
		if r, err := filepath.EvalSymlinks(root); err == nil {
			root = r
		}
		rel, err := filepath.Rel(root, wd)
		inside := err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
		if inside && len(root) > bestLen {
			best, bestLen = x.ID, len(root)
		}
	}
	if best == "" {
		return "", usageErr{fmt.Sprintf("no registered repository holds %s: pass --repo ID (see 'harness repo ls')", wd)}
	}
	return best, nil
}
