package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
)

const targetUsage = "usage: harness target add PATH [--write] [--owner NAME] | ls | rm ID | promote ID [--approval-id ID]"

var targetCommand = command{name: "target", usage: "target add PATH [--write] | ls | rm ID | promote ID   repository-free targets (local directories without git)", run: targetCmd,
	help: `Usage:
  harness target add PATH [--write] [--owner NAME]   grant a directory (read, or read and write with --write)
  harness target ls                                  list the grants
  harness target rm ID                               forget a grant (files are not touched)
  harness target promote ID [--approval-id ID]       turn a target into a registered repository
                                                     (git init needs a person's approval: harness approve ID)

PATH is made absolute before it is sent; harnessd canonicalises it (realpath)
and records its device and inode. See docs/targets.md.
`,
	flags: []string{"--write", "--owner", "--approval-id"}}

func targetCmd(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usageErr{targetUsage}
	}
	fs := pflag.NewFlagSet("target "+args[0], pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	write := fs.Bool("write", false, "grant read and write access")
	owner := fs.String("owner", "", "who the grant is for")
	approval := fs.String("approval-id", "", "the approval a person granted for the promotion's git init")
	if err := fs.Parse(args[1:]); err != nil {
		return usageErr{err.Error()}
	}
	rest := fs.Args()
	switch args[0] {
	case "add":
		if len(rest) != 1 {
			return usageErr{targetUsage}
		}
		abs, err := filepath.Abs(rest[0])
		if err != nil {
			return usageErr{fmt.Sprintf("path %q: %v", rest[0], err)}
		}
		access := "read"
		if *write {
			access = "write"
		}
		return c.show(ctx, "target_register", harness.TargetRegisterArgs{Path: abs, Access: access, Owner: *owner}, func(raw json.RawMessage) {
			var r harness.TargetRegisterResult
			_ = json.Unmarshal(raw, &r)
			verb := "registered"
			if !r.Created {
				verb = "already registered"
			}
			fmt.Fprintf(c.stdout, "%s %s (%s) %s\n", verb, esc(r.TargetID), esc(r.Access), esc(r.CanonicalRoot))
		})
	case "ls":
		if len(rest) != 0 {
			return usageErr{targetUsage}
		}
		return c.show(ctx, "target_list", harness.TargetListArgs{}, func(raw json.RawMessage) {
			var r harness.TargetListResult
			_ = json.Unmarshal(raw, &r)
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tACCESS\tOWNER\tROOT\tPROMOTED")
			for _, g := range r.Targets {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", esc(g.TargetID), esc(g.Access), esc(dash(g.Owner)), esc(g.Root), esc(dash(g.PromotedRepo)))
			}
			_ = tw.Flush()
		})
	case "rm":
		if len(rest) != 1 {
			return usageErr{targetUsage}
		}
		return c.show(ctx, "target_unregister", harness.TargetUnregisterArgs{TargetID: rest[0]}, func(raw json.RawMessage) {
			var r harness.TargetUnregisterResult
			_ = json.Unmarshal(raw, &r)
			fmt.Fprintf(c.stdout, "unregistered %s %s\n", esc(r.TargetID), esc(r.Root))
		})
	case "promote":
		if len(rest) != 1 {
			return usageErr{targetUsage}
		}
		return c.show(ctx, "target_promote", harness.TargetPromoteArgs{TargetID: rest[0], ApprovalID: *approval}, func(raw json.RawMessage) {
			var r harness.TargetPromoteResult
			_ = json.Unmarshal(raw, &r)
			how := "promoted"
			if r.Initialized {
				how = "git init and promoted"
			}
			fmt.Fprintf(c.stdout, "%s %s to repository %s (%d receipts copied)\n", how, esc(r.TargetID), esc(r.Repo.ID), r.ReceiptsCopied)
		})
	}
	return usageErr{targetUsage}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
