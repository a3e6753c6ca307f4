package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/ops"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/internal/textsafe"
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
	help: "Usage:\n  harness policy [show]   the policy in force: source, digest, and each rule with its examples\n  harness policy reload   read the policy file again (also: SIGHUP to harnessd)\n",
	subHelp: map[string]string{
		"show": "Usage:\n  harness policy show [--json]\n\nPrints the policy in force: its source file and digest, then each rule: its id, decision\n" +
			"(or the stage it requires verified), the tools, argv prefix or pattern and paths it matches,\n" +
			"its justification and its examples (what it must match and must not). The rules are read from\n" +
			"the source file; when the file changed since the daemon loaded it, a note says to reload.\n" +
			"--json: the daemon's answer and the rules as they are in the file.\n",
		"reload": "Usage:\n  harness policy reload\n\nReads the policy file again; a bad file is refused and the old policy stays.\n",
	}}

var auditCommand = command{name: "audit", usage: "audit [verify|anchor|rotate-key] [--kind K] [--repo ID] [--run ID] [--limit N] [--oldest-first]   list (newest first), verify, anchor the audit log", run: auditCmd,
	help: `Usage:
  harness audit [--kind K] [--repo ID] [--operation OP] [--run ID] [--limit N] [--after SEQ] [--oldest-first]
  harness audit verify [--anchor JSON|@FILE]
  harness audit anchor [--file F] [--git-note REPO_ID]
  harness audit rotate-key

Lists the keyed hash-chained audit log, newest first, each entry with its
subject (the job, the paths, the rule, the request id); verifies the chain
(exit 1 when broken), prints its head to keep elsewhere, or rotates the key.
  --kind K        mutation, rejection, ask, approval, denial, policy_load, lease_lost, job, check, escalation, key_rotation
  --repo ID       entries of this repository
  --operation OP  entries of this operation
  --run ID        entries of this run
  --limit N       at most N entries (default 50): the newest N
  --after SEQ     entries after this sequence number (the oldest N of them)
  --oldest-first  oldest first, as the chain runs
`,
	subHelp: map[string]string{
		"verify": "Usage:\n  harness audit verify [--anchor JSON|@FILE]\n\nVerifies the audit log's keyed hash chain; exit 1 and the broken entry when it is not intact.\n" +
			"--anchor checks that the chain still holds a head printed by `harness audit anchor` (@FILE: the file's last line).\n",
		"anchor": "Usage:\n  harness audit anchor [--file F] [--git-note REPO_ID]\n\nPrints the audit head {seq, hash, key_id, at} as one JSON line to keep outside the store;\n" +
			"--file F appends it to F; --git-note REPO_ID adds it as a git note (refs/notes/harnessd-audit) to HEAD of that registered repository.\n",
		"rotate-key": "Usage:\n  harness audit rotate-key\n\nMakes a new audit key (the old one stays as <data-dir>/audit.key.<id>) and appends a key_rotation entry proving the hand-over.\n",
	},
	flags: []string{"--kind", "--repo", "--operation", "--run", "--limit", "--after", "--oldest-first"}}

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
	if c.json && sub == "reload" {
		return c.printJSON(raw)
	}
	var p harness.PolicyInfo
	_ = json.Unmarshal(raw, &p)
	rules, note := policyRules(p)
	if c.json {
		b, err := json.Marshal(map[string]any{"policy": json.RawMessage(raw), "rules": rules, "note": note})
		if err != nil {
			return err
		}
		return c.printJSON(b)
	}
	fmt.Fprintf(c.stdout, "policy %s: %d rules, digest %s\n", esc(p.Source), p.Rules, esc(p.Digest))
	if note != "" {
		fmt.Fprintf(c.stdout, "note: %s\n", esc(note))
	}
	if p.Rules == 0 && note == "" {
		fmt.Fprintln(c.stdout, "no rules: each operation takes its default route (see docs/governance.md to write a policy file)")
	}
	io.WriteString(c.stdout, formatRules(rules))
	return nil
}

// policyRules reads the rules of the policy in force from its source file
// (the CLI runs beside the daemon). note says why none could be read, or
// that the file changed since the daemon loaded it.
func policyRules(p harness.PolicyInfo) (rules []policy.Rule, note string) {
	if p.Source == "" || p.Source == policy.DefaultSource {
		if p.Rules == 0 {
			return nil, ""
		}
		return nil, "the rules' source is not a file this CLI can read"
	}
	pol, err := policy.Load(p.Source, policy.Verified(ops.Registry().Verified()...))
	if err != nil {
		return nil, fmt.Sprintf("cannot read the rules from %s: %v", p.Source, errs.From(err).Message)
	}
	if pol.Digest() != p.Digest {
		note = fmt.Sprintf("%s changed since the daemon loaded it (digest %s now): these are the file's rules; 'harness policy reload' puts them in force", p.Source, pol.Digest())
	}
	return pol.Rules(), note
}

// formatRules prints each rule: id and decision, what it matches, why,
// and its examples.
func formatRules(rules []policy.Rule) string {
	var b strings.Builder
	for _, r := range rules {
		effect := string(r.Decision)
		if r.RequireVerified != "" {
			effect = "require_verified " + r.RequireVerified
		}
		fmt.Fprintf(&b, "\n%s  %s\n", esc(r.ID), esc(effect))
		tools := "every tool"
		if len(r.Tools) > 0 {
			tools = strings.Join(r.Tools, ", ")
		}
		fmt.Fprintf(&b, "  tools        %s\n", esc(tools))
		if len(r.ArgvPrefix) > 0 {
			fmt.Fprintf(&b, "  argv_prefix  %s\n", textsafe.Argv(r.ArgvPrefix))
		}
		if r.ArgvPattern != "" {
			fmt.Fprintf(&b, "  argv_pattern %s\n", esc(r.ArgvPattern))
		}
		if len(r.Paths) > 0 {
			fmt.Fprintf(&b, "  paths        %s\n", esc(strings.Join(r.Paths, " ")))
		}
		if r.Justification != "" {
			fmt.Fprintf(&b, "  why          %s\n", esc(r.Justification))
		}
		for _, a := range r.Examples.Match {
			fmt.Fprintf(&b, "  matches      %s\n", esc(a.String()))
		}
		for _, a := range r.Examples.NotMatch {
			fmt.Fprintf(&b, "  not matches  %s\n", esc(a.String()))
		}
	}
	return b.String()
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
	oldestFirst := fs.Bool("oldest-first", false, "oldest first")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	q := url.Values{}
	for k, v := range map[string]string{"kind": *kind, "repo_id": *repo, "operation": *op, "run_id": *runID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if *limit < 1 {
		return usageErr{fmt.Sprintf("--limit %d: want at least 1", *limit)}
	}
	var r auditPage
	var err error
	if *after > 0 || *oldestFirst {
		r, err = c.auditPage(ctx, q, *after, *limit)
	} else {
		r, err = c.auditNewest(ctx, q, *limit)
	}
	if err != nil {
		return err
	}
	if c.json {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return c.printJSON(b)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tOPERATION\tOUTCOME\tCODE\tSUBJECT\tREASON")
	for _, e := range r.Entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.Local().Format(time.DateTime), esc(string(e.Kind)), esc(e.Operation), esc(e.Outcome),
			esc(orDash(e.Code)), clip(auditSubject(e), 60), clip(e.Reason, 70))
	}
	switch {
	case r.More && (*after > 0 || *oldestFirst):
		fmt.Fprintf(tw, "…\t(more: --after %d)\n", r.Entries[len(r.Entries)-1].Seq)
	case r.More:
		fmt.Fprintln(tw, "…\t(older ones: a larger --limit, or --oldest-first)")
	}
	return tw.Flush()
}

// auditPage is a page of the audit log, as GET /v1/audit answers it.
type auditPage struct {
	Entries []messages.AuditEntry `json:"entries"`
	More    bool                  `json:"more"`
}

// auditPage reads up to limit entries after seq after, oldest first.
func (c *cli) auditPage(ctx context.Context, q url.Values, after uint64, limit int) (auditPage, error) {
	q = maps.Clone(q)
	q.Set("limit", strconv.Itoa(limit))
	if after > 0 {
		q.Set("after_seq", strconv.FormatUint(after, 10))
	}
	raw, err := c.c.Get(ctx, "/v1/audit?"+q.Encode())
	if err != nil {
		return auditPage{}, err
	}
	var p auditPage
	if err := json.Unmarshal(raw, &p); err != nil {
		return auditPage{}, fmt.Errorf("decode the audit log: %w", err)
	}
	return p, nil
}

// auditPageMax is the most entries the daemon answers at once.
const auditPageMax = 1000

// auditNewest reads the query's entries forward, page by page (the daemon
// reads the log oldest first), and keeps the newest limit, newest first;
// More says older ones matched too.
func (c *cli) auditNewest(ctx context.Context, q url.Values, limit int) (auditPage, error) {
	var kept []messages.AuditEntry
	dropped := false
	var after uint64
	for {
		p, err := c.auditPage(ctx, q, after, auditPageMax)
		if err != nil {
			return auditPage{}, err
		}
		kept = append(kept, p.Entries...)
		if n := len(kept) - limit; n > 0 {
			kept, dropped = kept[n:], true
		}
		if !p.More || len(p.Entries) == 0 {
			break
		}
		after = p.Entries[len(p.Entries)-1].Seq
	}
	kept = slices.Clone(kept)
	slices.Reverse(kept)
	return auditPage{Entries: kept, More: dropped}, nil
}

// auditSubject is what an entry is about: its job, receipt, approval,
// run or target, the paths, the rule that decided, the request.
func auditSubject(e messages.AuditEntry) string {
	var parts []string
	for _, k := range []string{"job_id", "receipt_id", "approval_id", "run_id", "target_id"} {
		if v := e.Details[k]; v != "" {
			parts = append(parts, strings.TrimSuffix(k, "_id")+" "+v)
		}
	}
	if e.RunID != "" && e.Details["run_id"] == "" {
		parts = append(parts, "run "+e.RunID)
	}
	if len(e.Paths) > 0 {
		parts = append(parts, strings.Join(e.Paths, " "))
	}
	if e.RuleID != "" {
		parts = append(parts, "rule "+e.RuleID)
	}
	if e.RequestID != "" {
		parts = append(parts, "req "+e.RequestID)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
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
