package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
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

var revertCommand = command{name: "revert", usage: "revert RECEIPT [--cascade] [--request-id ID]   undo one write from its pre-images", run: revertCmd,
	help: `Usage:
  harness revert RECEIPT [--cascade] [--request-id ID] [--approval-id ID]

Undoes the write of RECEIPT (from 'harness history'): every file it changed
is put back as it was before, all-or-nothing, under a lease on those files.
A later write of the same files refuses it with REVERT_CONFLICT naming the
later receipts, unless --cascade: then they are undone too, newest first.
The revert is a receipt of its own (and can be reverted).
  --cascade          also undo the later writes of the same files
  --request-id ID    idempotency key (default: a new one, printed)
  --approval-id ID   after APPROVAL_REQUIRED: the approval a person granted
`,
	flags: []string{"--cascade", "--request-id", "--approval-id"}}

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
	reqID := fs.String("request-id", "", "idempotency key")
	approval := fs.String("approval-id", "", "the approval a person granted")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() != 1 {
		return usageErr{"usage: harness revert RECEIPT [--cascade] [--request-id ID]"}
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
	repo := ""
	for _, it := range list.Receipts {
		if it.ReceiptID == receipt {
			repo = it.RepoID
		}
	}
	if repo == "" {
		return usageErr{fmt.Sprintf("receipt %q is not among the newest 1000 receipts (see 'harness history')", receipt)}
	}
	if *reqID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		*reqID = "cli-revert-" + hex.EncodeToString(b[:])
		fmt.Fprintf(c.stderr, "request_id %s\n", *reqID)
	}
	in := harness.RevertArgs{RepoID: repo, ReceiptID: receipt, RequestID: *reqID, Cascade: *cascade, ApprovalID: *approval}
	return c.show(ctx, "revert", in, func(raw json.RawMessage) {
		var r harness.MutationResult
		_ = json.Unmarshal(raw, &r)
		fmt.Fprintf(c.stdout, "reverted %s\n  receipt  %s (token %d)\n", esc(strings.Join(r.Reverts, ", ")), esc(r.ReceiptID), r.FencingToken)
		for _, ch := range r.Changes {
			fmt.Fprintf(c.stdout, "  %-8s %s\n", esc(ch.Op), esc(ch.Path))
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(c.stdout, "  warning: %s\n", esc(w))
		}
	})
}
