package provenance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/trailer"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Ops returns commit_verify.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[VerifyArgs]{Name: "commit_verify", Output: VerifyResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Provenance, Roles: op.ReadRoles,
			Description: "Check that a commit is what harnessd recorded, before you trust or merge an agent's commit: its Harnessd- trailers against the write's receipt, tree, run, approvals, policy and audit chain. " +
				"verified is false when any check fails; a commit without trailers was not made by git_commit. " +
				"Example: {\"rev\":\"HEAD\"}",
			Repo: func(a VerifyArgs) string { return a.RepoID }, Prepare: prepare}),
	}
}

// VerifyArgs are the arguments of commit_verify.
type VerifyArgs struct {
	RepoID string `json:"repo_id" jsonschema:"from repository_list"`
	Rev    string `json:"rev" jsonschema:"a commit: hash, branch, tag or e.g. HEAD~1 (no range)"`
	op.Approval
}

// Check is one verification step.
type Check struct {
	Name   string `json:"name" jsonschema:"trailers, repo, receipt, commit, parent, fencing_token, tree, run, approvals, verified, policy or audit_chain"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// VerifyResult is the result of commit_verify.
type VerifyResult struct {
	Rev string `json:"rev"`
	// Commit is the full hash rev names.
	Commit   string  `json:"commit"`
	Verified bool    `json:"verified"`
	Checks   []Check `json:"checks"`
	// Trailers are the commit's trailers, in order (harnessd's and others).
	Trailers []trailer.Trailer `json:"trailers"`
	op.Meta
}

func prepare(_ context.Context, c *op.Call, a VerifyArgs) (*op.Plan, error) {
	if strings.TrimSpace(a.Rev) == "" {
		return nil, errs.New(errs.InvalidArgument, "rev is required (a commit hash, branch, tag or HEAD~n)")
	}
	if strings.Contains(a.Rev, "..") {
		return nil, errs.New(errs.InvalidArgument, "rev %q is a range: name one commit", a.Rev).With("rev", a.Rev)
	}
	if err := gitx.CheckRev("rev", a.Rev); err != nil {
		return nil, err
	}
	return &op.Plan{Run: func(ctx context.Context) (any, error) { return verifyCommit(ctx, c, a.Rev) }}, nil
}

// verifier gathers the checks of one commit.
type verifier struct {
	c      *op.Call
	res    *VerifyResult
	failed bool
}

func (v *verifier) add(name string, ok bool, format string, args ...any) {
	v.res.Checks = append(v.res.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	if !ok {
		v.failed = true
	}
}

func verifyCommit(ctx context.Context, c *op.Call, rev string) (*VerifyResult, error) {
	git, dir := c.Env.Git, c.Repo.Repo.Root
	out, _, err := git.Run(ctx, dir, 0, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return nil, errs.New(errs.NotFound, "rev %q names no commit of repository %s (see git_status, or `git log`)", rev, c.Repo.Repo.ID).With("rev", rev)
	}
	hash := strings.TrimSpace(string(out))
	raw, _, err := git.Run(ctx, dir, 0, "cat-file", "commit", hash)
	if err != nil {
		return nil, err
	}
	obj, err := trailer.SplitCommit(raw)
	if err != nil {
		return nil, errs.New(errs.Internal, "read commit %s: %v", hash, err)
	}
	res := &VerifyResult{Rev: rev, Commit: hash, Checks: []Check{}, Trailers: trailer.Parse(obj.Message)}
	if res.Trailers == nil {
		res.Trailers = []trailer.Trailer{}
	}
	v := &verifier{c: c, res: res}
	defer func() { res.Verified = !v.failed }()
	th := trailer.Harnessd(res.Trailers)
	receiptID := th[trailer.Receipt]
	if receiptID == "" {
		v.add("trailers", false, "not made by harnessd: the commit has no Harnessd-Receipt trailer")
		return res, nil
	}
	v.add("trailers", true, "%d Harnessd- trailers", len(th))
	repoID := c.Repo.Repo.ID
	v.add("repo", th[trailer.Repo] == repoID, "Harnessd-Repo %q, verifying in repository %s", th[trailer.Repo], repoID)

	rec, found, err := findReceipt(c.Env.Store, repoID, receiptID)
	switch {
	case err != nil:
		v.add("receipt", false, "read receipts: %v", err)
	case !found:
		v.add("receipt", false, "no receipt %s in repository %s (never written here, or pruned: the newest 1000 are kept)", receiptID, repoID)
	case rec.Operation != "git_commit":
		v.add("receipt", false, "receipt %s is of %s, not git_commit", receiptID, rec.Operation)
		found = false
	default:
		v.add("receipt", true, "receipt %s of git_commit (request %s)", receiptID, rec.RequestID)
	}
	var entry *messages.AuditEntry
	if found {
		parent := ""
		if len(obj.Parents) > 0 {
			parent = obj.Parents[0]
		}
		v.add("commit", rec.Commit == hash, "receipt's commit %s, rev is %s", short(rec.Commit), short(hash))
		v.add("parent", rec.HeadBefore == parent, "receipt's head_before %s, rev's parent %s", orNone(short(rec.HeadBefore)), orNone(short(parent)))
		entry, err = writeEntry(ctx, c.Env.Gov, repoID, rec)
		switch {
		case err != nil:
			v.add("fencing_token", false, "read the audit log: %v", errs.From(err).Message)
		case entry == nil:
			v.add("fencing_token", false, "no audit entry records the write of receipt %s", receiptID)
		default:
			v.add("fencing_token", entry.FencingToken == rec.FencingToken, "receipt's fencing token %d, audit entry %d recorded %d", rec.FencingToken, entry.Seq, entry.FencingToken)
		}
		changes, err := TreeChanges(ctx, c.Env.Git, dir, hash)
		if err != nil {
			v.add("tree", false, "read the commit's tree: %v", errs.From(err).Message)
		} else {
			ok, detail := sameChanges(rec.Tree, changes)
			v.add("tree", ok, "%s", detail)
		}
	} else {
		for _, n := range []string{"commit", "parent", "fencing_token", "tree"} {
			v.add(n, false, "not checked: no git_commit receipt %s", receiptID)
		}
	}
	v.checkRun(ctx, th[trailer.Run], entry, found)
	if entry == nil {
		v.checkApprovals(trailer.List(th[trailer.Approvals]), repoID, nil, false)
	} else if used, err := usedApprovals(ctx, c.Env.Gov, repoID, rec, entry.InputHash); err != nil {
		v.add("approvals", false, "read the audit log: %v", errs.From(err).Message)
	} else {
		v.checkApprovals(trailer.List(th[trailer.Approvals]), repoID, used, true)
	}
	if found {
		want := VerifiedValue(rec.Verified)
		v.add("verified", th[trailer.Verified] == want, "Harnessd-Verified %q, receipt verified %q", th[trailer.Verified], want)
	} else {
		v.add("verified", false, "not checked: no git_commit receipt %s", receiptID)
	}
	v.checkPolicy(ctx, th[trailer.Policy], entry)
	if av, err := verifyChain(ctx, c.Env); err != nil {
		v.add("audit_chain", false, "verify the audit chain: %v", errs.From(err).Message)
	} else if !av.OK {
		v.add("audit_chain", false, "the audit chain is broken at entry %d: %s", av.BrokenSeq, av.BrokenReason)
	} else {
		v.add("audit_chain", true, "%d entries chain correctly", av.Checked)
	}
	return res, nil
}

func (v *verifier) checkRun(ctx context.Context, runID string, entry *messages.AuditEntry, found bool) {
	if entry != nil && entry.RunID != runID {
		v.add("run", false, "Harnessd-Run %q, the audit entry of the write recorded run %q", runID, entry.RunID)
		return
	}
	if runID == "" {
		v.add("run", entry != nil, "no run (%s)", map[bool]string{true: "the write was made outside a run", false: "unconfirmed: no audit entry of the write"}[entry != nil])
		return
	}
	if v.c.Env.Runs == nil {
		v.add("run", false, "runs are off in this harness: run %s cannot be looked up", runID)
		return
	}
	got, err := v.c.Env.Runs.Get(ctx, runID, false)
	if err != nil {
		v.add("run", false, "run %s: %s", runID, errs.From(err).Message)
		return
	}
	v.add("run", found && entry != nil, "run %s exists (%s); the audit entry of the write names it: %v", runID, got.State.Status, entry != nil)
}

// checkApprovals checks the approvals the trailer names: each was used
// and decided by a person, and (known, when the write's audit entry was
// found) they are exactly the ones the gate recorded as used for this
// write's input.
func (v *verifier) checkApprovals(ids []string, repoID string, used []string, known bool) {
	var bad []string
	if known {
		a, b := slices.Clone(ids), slices.Clone(used)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			bad = append(bad, fmt.Sprintf("Harnessd-Approvals names %q, the audit log records %q as used by this write", strings.Join(ids, ","), strings.Join(used, ",")))
		}
	}
	if len(ids) == 0 && len(bad) == 0 {
		v.add("approvals", true, "no approvals named, none used")
		return
	}
	for _, id := range ids {
		a, err := v.c.Env.Gov.Approval(id)
		switch {
		case err != nil:
			bad = append(bad, id+": "+errs.From(err).Message)
		case a.Status != govern.ApprovalUsed:
			bad = append(bad, id+": status "+a.Status+", not used")
		case a.DecidedBy == "" || strings.HasPrefix(a.DecidedBy, "agent"):
			bad = append(bad, id+": not decided by a person")
		case a.Operation != "git_commit" || a.RepoID != repoID:
			bad = append(bad, id+": granted for "+a.Operation+" on "+a.RepoID)
		}
	}
	if len(bad) > 0 {
		v.add("approvals", false, "%s", strings.Join(bad, "; "))
		return
	}
	v.add("approvals", true, "%s used, decided by people", strings.Join(ids, ", "))
}

// checkPolicy compares the trailer's digest with the one the audit entry
// of the write recorded; without that entry, with the current policy and
// the policies loaded (policy_load entries, found by digest through the
// audit index), saying which matched.
func (v *verifier) checkPolicy(ctx context.Context, digest string, entry *messages.AuditEntry) {
	if digest == "" {
		v.add("policy", false, "no Harnessd-Policy trailer")
		return
	}
	if entry != nil {
		v.add("policy", entry.PolicyDigest == digest, "Harnessd-Policy %s, the audit entry of the write recorded %s", digest, entry.PolicyDigest)
		return
	}
	if cur := v.c.Env.Gov.Policy().Digest; cur == digest {
		v.add("policy", true, "%s is the current policy (no audit entry of the write to compare with)", digest)
		return
	}
	// By digest: the audit index reads the loads of this policy, not the
	// log (a failed load is stamped with the policy it left in force).
	q := messages.AuditQuery{Kind: audit.KindPolicyLoad, PolicyDigest: digest, Limit: 100}
	for {
		page, err := v.c.Env.Gov.Audit(ctx, q)
		if err != nil {
			v.add("policy", false, "%s is not the current policy, and the audit log could not be read: %v", digest, errs.From(err).Message)
			return
		}
		for _, e := range page.Entries {
			if e.Outcome == "loaded" && e.PolicyDigest == digest {
				v.add("policy", true, "%s was loaded (audit entry %d)", digest, e.Seq)
				return
			}
		}
		if !page.More || len(page.Entries) == 0 {
			break
		}
		q.AfterSeq = page.Entries[len(page.Entries)-1].Seq
	}
	v.add("policy", false, "%s is neither the current policy nor one the audit log records as loaded", digest)
}

// findReceipt returns the receipt id of repository repoID.
func findReceipt(store *persistence.Store, repoID, id string) (op.Receipt, bool, error) {
	prefix := persistence.ReceiptKey(repoID, 0)
	prefix = prefix[:len(prefix)-8]
	needle := []byte(`"receipt_id":"` + id + `"`)
	errFound := errors.New("found")
	var rec op.Receipt
	err := store.ScanRaw(prefix, func(_, value []byte) error {
		if !bytes.Contains(value, needle) {
			return nil
		}
		var r op.Receipt
		if persistence.Decode(value, &r) != nil || r.ReceiptID != id || r.RepoID != repoID {
			return nil
		}
		rec = r
		return errFound
	})
	if errors.Is(err, errFound) {
		return rec, true, nil
	}
	return op.Receipt{}, false, err
}

// usedApprovals returns the approvals the gate recorded as used (audit
// entries of kind approval, outcome used) for the write's input hash,
// which covers its request_id: single use, so exactly this write's.
func usedApprovals(ctx context.Context, gov *govern.Governor, repoID string, rec op.Receipt, inputHash string) ([]string, error) {
	// By input hash: the audit index reads this write's approvals, not the log.
	q := messages.AuditQuery{Kind: audit.KindApproval, RepoID: repoID, Operation: rec.Operation, InputHash: inputHash, Limit: 1000}
	if !rec.At.IsZero() {
		q.Since = rec.At.Add(-2 * govern.ApprovalTTL) // an approval is usable for its TTL only
	}
	var ids []string
	for {
		page, err := gov.Audit(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, e := range page.Entries {
			if e.Outcome == "used" && e.InputHash == inputHash && e.Details["approval_id"] != "" {
				ids = append(ids, e.Details["approval_id"])
			}
		}
		if !page.More || len(page.Entries) == 0 {
			return ids, nil
		}
		q.AfterSeq = page.Entries[len(page.Entries)-1].Seq
	}
}

// verifyChain checks the audit chain: incrementally (the entries appended
// since the last check that held) when the runtime's audit actor serves
// it, so a commit_verify does not read the whole log each time.
func verifyChain(ctx context.Context, env *op.Env) (messages.AuditVerified, error) {
	if env.RT == nil {
		return env.Gov.AuditVerify(ctx)
	}
	return env.RT.Audit.VerifyAnchored(ctx, messages.AuditVerify{Incremental: true})
}

// writeEntry finds the audit entry of the successful write of rec (by
// request id: the audit index reads that request's entries, not the log).
func writeEntry(ctx context.Context, gov *govern.Governor, repoID string, rec op.Receipt) (*messages.AuditEntry, error) {
	q := messages.AuditQuery{Kind: audit.KindMutation, RepoID: repoID, RequestID: rec.RequestID, Limit: 1000}
	for {
		page, err := gov.Audit(ctx, q)
		if err != nil {
			return nil, err
		}
		for i := range page.Entries {
			e := page.Entries[i]
			if e.Outcome == "succeeded" && e.Details["receipt_id"] == rec.ReceiptID {
				return &e, nil
			}
		}
		if !page.More || len(page.Entries) == 0 {
			return nil, nil
		}
		q.AfterSeq = page.Entries[len(page.Entries)-1].Seq
	}
}

// sameChanges compares the receipt's changes with the commit's tree.
func sameChanges(rec, tree []patch.Change) (bool, string) {
	key := func(ch patch.Change) string { return ch.Path + "\x00" + ch.Op + "\x00" + ch.Before + "\x00" + ch.After }
	byPath := func(cs []patch.Change) map[string]patch.Change {
		m := make(map[string]patch.Change, len(cs))
		for _, ch := range cs {
			m[ch.Path] = ch
		}
		return m
	}
	rm, tm := byPath(rec), byPath(tree)
	var diffs []string
	paths := make([]string, 0, len(rm)+len(tm))
	for p := range rm {
		paths = append(paths, p)
	}
	for p := range tm {
		if _, ok := rm[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		r, inR := rm[p]
		t, inT := tm[p]
		switch {
		case !inR:
			diffs = append(diffs, p+": changed by the commit, not in the receipt")
		case !inT:
			diffs = append(diffs, p+": in the receipt, not changed by the commit")
		case key(r) != key(t):
			diffs = append(diffs, fmt.Sprintf("%s: receipt %s %s→%s, commit %s %s→%s", p, r.Op, orNone(short(r.Before)), orNone(short(r.After)), t.Op, orNone(short(t.Before)), orNone(short(t.After))))
		}
	}
	if len(diffs) == 0 {
		return true, fmt.Sprintf("%d paths, their blob digests match the receipt", len(tree))
	}
	const show = 5
	if len(diffs) > show {
		diffs = append(slices.Clip(diffs[:show]), fmt.Sprintf("and %d more", len(diffs)-show))
	}
	return false, strings.Join(diffs, "; ")
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
