package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/messages"
)

var approvalsCommand = command{name: "approvals", usage: "approvals [--all]     list pending approval requests", run: approvalsCmd,
	help:  "Usage:\n  harness approvals [--all]\n\nLists the approval requests waiting for a person (--all: every request, also decided and expired ones).\n",
	flags: []string{"--all"}}

var approveCommand = command{name: "approve", usage: "approve ID            approve a pending request (single use, bound to its exact input)", run: func(ctx context.Context, c *cli, args []string) error {
	return decideCmd(ctx, c, args, true)
}, help: "Usage:\n  harness approve ID [--reason R]\n\nApproves a pending request: single use, bound to its exact input; the agent retries with approval_id ID.\n",
	flags: []string{"--reason"}}

var denyCommand = command{name: "deny", usage: "deny ID --reason R    deny a pending request", run: func(ctx context.Context, c *cli, args []string) error {
	return decideCmd(ctx, c, args, false)
}, help: "Usage:\n  harness deny ID --reason R\n\nDenies a pending request; the reason is shown to the agent and kept in the audit log.\n",
	flags: []string{"--reason"}}

var policyCommand = command{name: "policy", usage: "policy [show|reload]  show or reload the policy file", run: policyCmd,
	help: "Usage:\n  harness policy [show]   the policy in force: source, rules, digest\n  harness policy reload   read the policy file again (also: SIGHUP to harnessd)\n",
	subHelp: map[string]string{
		"show":   "Usage:\n  harness policy show\n\nPrints the policy in force: its source file, number of rules and digest.\n",
		"reload": "Usage:\n  harness policy reload\n\nReads the policy file again; a bad file is refused and the old policy stays.\n",
	}}

var auditCommand = command{name: "audit", usage: "audit [verify|anchor|rotate-key] [--kind K] [--repo ID] [--run ID] [--limit N]   list, verify, anchor the audit log", run: auditCmd,
	help: `Usage:
  harness audit [--kind K] [--repo ID] [--operation OP] [--run ID] [--limit N] [--after SEQ]
  harness audit verify [--anchor JSON|@FILE]
  harness audit anchor [--file F] [--git-note REPO_ID]
  harness audit rotate-key

Lists the keyed hash-chained audit log, verifies the chain (exit 1 when broken),
prints its head to keep elsewhere, or rotates the audit key.
  --kind K        mutation, rejection, ask, approval, denial, policy_load, lease_lost, job, check, escalation, key_rotation
  --repo ID       entries of this repository
  --operation OP  entries of this operation
  --run ID        entries of this run
  --limit N       at most N entries (default 50)
  --after SEQ     entries after this sequence number
`,
	subHelp: map[string]string{
		"verify": "Usage:\n  harness audit verify [--anchor JSON|@FILE]\n\nVerifies the audit log's keyed hash chain; exit 1 and the broken entry when it is not intact.\n" +
			"--anchor checks that the chain still holds a head printed by `harness audit anchor` (@FILE: the file's last line).\n",
		"anchor": "Usage:\n  harness audit anchor [--file F] [--git-note REPO_ID]\n\nPrints the audit head {seq, hash, key_id, at} as one JSON line to keep outside the store;\n" +
			"--file F appends it to F; --git-note REPO_ID adds it as a git note (refs/notes/harnessd-audit) to HEAD of that registered repository.\n",
		"rotate-key": "Usage:\n  harness audit rotate-key\n\nMakes a new audit key (the old one stays as <data-dir>/audit.key.<id>) and appends a key_rotation entry proving the hand-over.\n",
	},
	flags: []string{"--kind", "--repo", "--operation", "--run", "--limit", "--after"}}

func whoami() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "person"
}

func approvalsCmd(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("approvals", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	all := fs.Bool("all", false, "list every approval, not only pending ones")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	path := "/v1/approvals"
	if *all {
		path += "?status=all"
	}
	raw, err := c.c.Get(ctx, path)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	var l harness.ApprovalList
	if err := json.Unmarshal(raw, &l); err != nil {
		return err
	}
	if len(l.Approvals) == 0 {
		fmt.Fprintln(c.stdout, "no approval requests")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	// The summary is what a person approves: last and whole (escaped), so
	// that no part of an argv hides past a clipped column.
	fmt.Fprintln(tw, "ID\tSTATUS\tRISK\tOPERATION\tEXPIRES\tREASON\tSUMMARY")
	for _, a := range l.Approvals {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", esc(a.ID), esc(a.Status), a.Risk, esc(a.Operation), a.ExpiresAt.Local().Format(time.DateTime),
			clip(a.Reason, 60), esc(a.Summary))
	}
	return tw.Flush()
}

func decideCmd(ctx context.Context, c *cli, args []string, approve bool) error {
	fs := pflag.NewFlagSet("decide", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	reason := fs.String("reason", "", "why (required to deny)")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() != 1 {
		return usageErr{"usage: harness approve ID | harness deny ID --reason R"}
	}
	if !approve && *reason == "" {
		return usageErr{"deny needs --reason"}
	}
	verb := "approve"
	if !approve {
		verb = "deny"
	}
	body := map[string]string{"by": whoami(), "reason": *reason}
	raw, err := c.c.Post(ctx, "/v1/approvals/"+url.PathEscape(fs.Arg(0))+"/"+verb, body)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	var a harness.Approval
	_ = json.Unmarshal(raw, &a)
	fmt.Fprintf(c.stdout, "%s %s (%s)\n", esc(a.ID), esc(a.Status), esc(a.Summary))
	return nil
}

func policyCmd(ctx context.Context, c *cli, args []string) error {
	sub := "show"
	if len(args) > 0 {
		sub = args[0]
	}
	if len(args) > 1 {
		return usageErr{"usage: harness policy [show|reload]"}
	}
	var raw json.RawMessage
	var err error
	switch sub {
	case "show":
		raw, err = c.c.Get(ctx, "/v1/policy")
	case "reload":
		raw, err = c.c.Post(ctx, "/v1/policy/reload", nil)
	default:
		return usageErr{"usage: harness policy [show|reload]"}
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	var p harness.PolicyInfo
	_ = json.Unmarshal(raw, &p)
	fmt.Fprintf(c.stdout, "policy %s: %d rules, digest %s\n", esc(p.Source), p.Rules, esc(p.Digest))
	return nil
}

func auditCmd(ctx context.Context, c *cli, args []string) error {
	if len(args) > 0 && args[0] == "anchor" {
		return auditAnchorCmd(ctx, c, args[1:])
	}
	if len(args) > 0 && args[0] == "rotate-key" {
		return auditRotateCmd(ctx, c, args[1:])
	}
	if len(args) > 0 && args[0] == "verify" {
		path, err := auditVerifyPath(args[1:])
		if err != nil {
			return err
		}
		raw, err := c.c.Get(ctx, path)
		if err != nil {
			return err
		}
		var v harness.AuditVerifyResult
		_ = json.Unmarshal(raw, &v)
		if c.json {
			_ = c.printJSON(raw)
		} else if v.OK {
			fmt.Fprintf(c.stdout, "audit chain intact: %d entries verified (%d unkeyed, key %s)", v.Checked, v.Unkeyed, esc(v.KeyID))
			if v.Anchored {
				fmt.Fprint(c.stdout, "; holds the anchor")
			}
			fmt.Fprintln(c.stdout)
		} else {
			fmt.Fprintf(c.stdout, "audit chain BROKEN at entry %d: %s (%d entries checked)\n", v.BrokenSeq, esc(v.BrokenReason), v.Checked)
		}
		if !v.OK {
			return auditBroken(v.BrokenSeq)
		}
		return nil
	}
	fs := pflag.NewFlagSet("audit", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	kind := fs.String("kind", "", "mutation, rejection, ask, approval, denial, policy_load, lease_lost, job, check, escalation, key_rotation")
	repo := fs.String("repo", "", "repository id")
	op := fs.String("operation", "", "operation name")
	runID := fs.String("run", "", "run id: the entries of one run")
	limit := fs.Int("limit", 50, "entries to show")
	after := fs.Uint64("after", 0, "show entries after this sequence number")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	q := url.Values{}
	for k, v := range map[string]string{"kind": *kind, "repo_id": *repo, "operation": *op, "run_id": *runID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set("limit", fmt.Sprint(*limit))
	if *after > 0 {
		q.Set("after_seq", fmt.Sprint(*after))
	}
	raw, err := c.c.Get(ctx, "/v1/audit?"+q.Encode())
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	var r struct {
		Entries []messages.AuditEntry `json:"entries"`
		More    bool                  `json:"more"`
	}
	_ = json.Unmarshal(raw, &r)
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tOPERATION\tOUTCOME\tCODE\tREASON")
	for _, e := range r.Entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.Local().Format(time.DateTime), esc(string(e.Kind)), esc(e.Operation), esc(e.Outcome), esc(e.Code), clip(e.Reason, 70))
	}
	if r.More {
		fmt.Fprintln(tw, "…\t(more: --after N)")
	}
	return tw.Flush()
}

type auditBroken uint64

// auditVerifyPath parses `audit verify [--anchor JSON|@FILE]`.
func auditVerifyPath(args []string) (string, error) {
	fs := pflag.NewFlagSet("audit verify", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	anchor := fs.String("anchor", "", "a head printed by `harness audit anchor`, or @FILE")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return "", usageErr{"usage: harness audit verify [--anchor JSON|@FILE]"}
	}
	if *anchor == "" {
		return "/v1/audit/verify", nil
	}
	s := *anchor
	if f, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", usageErr{"--anchor: " + err.Error()}
		}
		s = string(b)
	}
	a, err := harness.ParseAuditAnchor(s)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(a)
	return "/v1/audit/verify?" + url.Values{"anchor": {string(b)}}.Encode(), nil
}

func auditAnchorCmd(ctx context.Context, c *cli, args []string) error {
	fs := pflag.NewFlagSet("audit anchor", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("file", "", "append the anchor to this file")
	note := fs.String("git-note", "", "add the anchor as a git note to HEAD of this registered repository")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageErr{"usage: harness audit anchor [--file F] [--git-note REPO_ID]"}
	}
	raw, err := c.c.Post(ctx, "/v1/audit/anchor", harness.AuditAnchorArgs{GitNoteRepo: *note})
	if err != nil {
		return err
	}
	var r harness.AuditAnchorResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("audit anchor: %w", err)
	}
	line, _ := json.Marshal(r.Anchor)
	if *file != "" {
		f, err := os.OpenFile(*file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		_, werr := f.Write(append(line, '\n'))
		serr := f.Sync()
		if err := errors.Join(werr, serr, f.Close()); err != nil {
			return err
		}
	}
	if c.json {
		return c.printJSON(raw)
	}
	fmt.Fprintln(c.stdout, string(line))
	return nil
}

func auditRotateCmd(ctx context.Context, c *cli, args []string) error {
	if len(args) > 0 {
		return usageErr{"usage: harness audit rotate-key"}
	}
	raw, err := c.c.Post(ctx, "/v1/audit/rotate-key", nil)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	var r harness.AuditRotateResult
	_ = json.Unmarshal(raw, &r)
	fmt.Fprintf(c.stdout, "audit key rotated: %s -> %s (key_rotation entry %d)\n", esc(r.OldKeyID), esc(r.KeyID), r.Seq)
	return nil
}

func (a auditBroken) Error() string { return fmt.Sprintf("audit chain broken at entry %d", uint64(a)) }
