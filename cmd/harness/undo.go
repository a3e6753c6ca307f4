package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/gitx"
)

var historyCommand = command{name: "history", usage: "history [--run ID] [--repo ID] [--limit N]   receipts of writes, newest first, and whether each can be reverted", run: historyCmd,
	help: `Usage:
  harness history [--run ID] [--repo ID] [--limit N]

Lists the receipts of harnessd's writes, newest first: the files each
changed, its fencing token, its run, and whether 'harness revert' can undo
it on its own now (REVERTABLE yes; otherwise why not, e.g. a later write
of the same files: revert with --cascade, or that one first).
  --run ID     only receipts of this run
  --repo ID    only receipts of this repository
  --limit N    at most N receipts (default 50, max 1000)
`,
	flags: []string{"--run", "--repo", "--limit"}}

var revertCommand = command{name: "revert", usage: "revert RECEIPT [--cascade] [--commit] [--request-id ID]   undo one write from its pre-images", run: revertCmd,
	help: `Usage:
  harness revert RECEIPT [--cascade] [--commit] [--request-id ID] [--approval-id ID]

Undoes the write of RECEIPT (from 'harness history'): every file it changed
is put back as it was before, all-or-nothing, under a lease on those files.
A later write of the same files refuses it with REVERT_CONFLICT naming the
later receipts, unless --cascade: then they are undone too, newest first.
The revert is a receipt of its own (and can be reverted).
A change already committed (its files are as in HEAD) is reverted in the work
tree only: a warning says so, and the revert is an uncommitted change unless
--commit, which commits the reverted files with the message "Revert RECEIPT".
  --cascade          also undo the later writes of the same files
  --commit           also commit the revert (git_commit of the reverted paths)
  --request-id ID    idempotency key (default: a new one, printed)
  --approval-id ID   after APPROVAL_REQUIRED: the approval a person granted
`,
	flags: []string{"--cascade", "--commit", "--request-id", "--approval-id"}}

func historyCmd(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("history", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := fs.String("run", "", "only receipts of this run")
	repo := fs.String("repo", "", "only receipts of this repository")
	limit := fs.Int("limit", 50, "at most this many receipts")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageErr{"usage: harness history [--run ID] [--repo ID] [--limit N]"}
	}
	in := harness.ReceiptListArgs{RepoID: *repo, RunID: *run, Limit: *limit}
	return c.show(ctx, "receipt_list", in, func(raw json.RawMessage) {
		var r harness.ReceiptListResult
		_ = json.Unmarshal(raw, &r)
		if len(r.Receipts) == 0 {
			fmt.Fprintln(c.stdout, "no receipts")
			return
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RECEIPT\tOPERATION\tTOKEN\tRUN\tAT\tREVERTABLE\tPATHS")
		for _, it := range r.Receipts {
			rev := "yes"
			if !it.Revertable {
				rev = "no: " + clip(it.NotRevertable, 60)
			}
			paths := make([]string, len(it.Paths))
			for i, p := range it.Paths {
				paths[i] = esc(p)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", esc(it.ReceiptID), esc(it.Operation), it.FencingToken, esc(orDash(it.RunID)),
				it.At.Local().Format("2006-01-02 15:04:05"), rev, clip(strings.Join(paths, " "), 60))
		}
		_ = tw.Flush()
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func revertCmd(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("revert", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cascade := fs.Bool("cascade", false, "also undo the later writes of the same files")
	commit := fs.Bool("commit", false, "also commit the revert")
	reqID := fs.String("request-id", "", "idempotency key")
	approval := fs.String("approval-id", "", "the approval a person granted")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() != 1 {
		return usageErr{"usage: harness revert RECEIPT [--cascade] [--commit] [--request-id ID]"}
	}
	receipt := fs.Arg(0)
	// The receipt names its repository: find it among the receipts.
	raw, err := c.c.Call(ctx, "receipt_list", harness.ReceiptListArgs{Limit: 1000})
	if err != nil {
		return err
	}
	var list harness.ReceiptListResult
	if err := json.Unmarshal(raw, &list); err != nil {
		return err
	}
	repo, paths := "", []string(nil)
	for _, it := range list.Receipts {
		if it.ReceiptID == receipt {
			repo, paths = it.RepoID, it.Paths
		}
	}
	if repo == "" {
		return usageErr{fmt.Sprintf("receipt %q is not among the newest 1000 receipts (see 'harness history')", receipt)}
	}
	committed, err := c.committedPaths(ctx, repo, paths)
	if err != nil {
		// The check is a courtesy: the revert does not depend on it.
		fmt.Fprintf(c.stderr, "harness: note: cannot tell whether %s is committed: %s\n", esc(receipt), esc(errs.From(err).Message))
	}
	if len(committed) > 0 {
		fmt.Fprint(c.stderr, committedWarning(receipt, committed, *commit))
	}
	*reqID = c.requestID(*reqID, "revert")
	in := harness.RevertArgs{RepoID: repo, ReceiptID: receipt, RequestID: *reqID, Cascade: *cascade, ApprovalID: *approval}
	raw, err = c.c.Call(ctx, "revert", in)
	if err != nil {
		return err
	}
	var r harness.MutationResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("decode revert: %w", err)
	}
	var commitRaw json.RawMessage
	if *commit {
		reverted := make([]string, 0, len(r.Changes))
		for _, ch := range r.Changes {
			reverted = append(reverted, ch.Path)
		}
		msg := "Revert " + receipt
		if len(r.Reverts) > 1 {
			msg = "Revert " + strings.Join(r.Reverts, ", ")
		}
		ci := harness.GitCommitArgs{RepoID: repo, RequestID: *reqID + "-commit", Message: msg, Paths: reverted}
		if commitRaw, err = c.c.Call(ctx, "git_commit", ci); err != nil {
			fmt.Fprintf(c.stderr, "harness: the revert is done (receipt %s) but not committed:\n", esc(r.ReceiptID))
			return err
		}
	}
	if c.json {
		if commitRaw == nil {
			return c.printJSON(raw)
		}
		b, _ := json.Marshal(map[string]json.RawMessage{"revert": raw, "commit": commitRaw})
		return c.printJSON(b)
	}
	fmt.Fprintf(c.stdout, "reverted %s\n  receipt  %s (token %d)\n", esc(strings.Join(r.Reverts, ", ")), esc(r.ReceiptID), r.FencingToken)
	for _, ch := range r.Changes {
		fmt.Fprintf(c.stdout, "  %-8s %s\n", esc(ch.Op), esc(ch.Path))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(c.stdout, "  warning: %s\n", esc(w))
	}
	if commitRaw != nil {
		var cr harness.MutationResult
		_ = json.Unmarshal(commitRaw, &cr)
		fmt.Fprintf(c.stdout, "committed %s\n  receipt  %s\n", esc(cr.Commit), esc(cr.ReceiptID))
	}
	return nil
}

// committedPaths are the paths of a receipt that git status shows
// unchanged: as they are in HEAD, so the receipt's change to them is
// committed (or was undone by hand).
func (c *cli) committedPaths(ctx context.Context, repo string, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	raw, err := c.c.Call(ctx, "git_status", harness.GitStatusArgs{RepoID: repo})
	if err != nil {
		return nil, err
	}
	var st harness.GitStatusResult
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("decode git_status: %w", err)
	}
	return unchangedPaths(paths, st.Status), nil
}

// unchangedPaths are the paths st does not list as changed in any way.
func unchangedPaths(paths []string, st gitx.Status) []string {
	changed := map[string]bool{}
	for _, l := range [][]gitx.Entry{st.Staged, st.Unstaged, st.Conflicted} {
		for _, e := range l {
			changed[e.Path] = true
			if e.OrigPath != "" {
				changed[e.OrigPath] = true
			}
		}
	}
	for _, p := range st.Untracked {
		changed[p] = true
	}
	var out []string
	for _, p := range paths {
		if !changed[p] {
			out = append(out, p)
		}
	}
	return out
}

// committedWarning says that a receipt's change is in HEAD and what the
// revert will be.
func committedWarning(receipt string, committed []string, commit bool) string {
	ps := make([]string, len(committed))
	for i, p := range committed {
		ps[i] = esc(p)
	}
	w := fmt.Sprintf("harness: warning: the change of %s is already committed (%s as in HEAD): ", esc(receipt), strings.Join(ps, " "))
	if commit {
		return w + "the revert is committed as a new commit\n"
	}
	return w + "the revert will be an uncommitted change in the work tree (--commit also commits it)\n"
}
