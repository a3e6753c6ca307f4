package harness_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// toolCommit writes rel, stages it and commits it through harnessd.
func toolCommit(t *testing.T, ctx context.Context, h *harness.Harness, root, id, req, rel, body, msg string) *harness.MutationResult {
	t.Helper()
	testutil.WriteFile(t, root, rel, body)
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: id, RequestID: req + "-stage", Paths: []string{rel}}); err != nil {
		t.Fatal(err)
	}
	c, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: req, Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func commitVerify(t *testing.T, h *harness.Harness, id, rev string) *harness.CommitVerifyResult {
	t.Helper()
	r, err := h.CommitVerify(context.Background(), harness.CommitVerifyArgs{RepoID: id, Rev: rev})
	if err != nil {
		t.Fatalf("commit_verify %s: %v", rev, err)
	}
	return r
}

func failedChecks(r *harness.CommitVerifyResult) []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// wantFailure asserts that r is not verified and that check failed.
func wantFailure(t *testing.T, r *harness.CommitVerifyResult, check string) {
	t.Helper()
	if failed := failedChecks(r); r.Verified || !slices.Contains(failed, check) {
		t.Fatalf("verify %s: verified=%v, failed checks %v, want %q among them\n%+v", r.Rev, r.Verified, failed, check, r.Checks)
	}
	for _, c := range r.Checks {
		if c.Name == check {
			t.Logf("%s: %s", check, c.Detail)
		}
	}
}

// amendMessage rewrites HEAD's message with edit, by hand (plain git).
func amendMessage(t *testing.T, root string, edit func(string) string) {
	t.Helper()
	msg := testutil.Git(t, root, "log", "-1", "--format=%B", "HEAD")
	testutil.Git(t, root, "commit", "-q", "--amend", "--no-verify", "--allow-empty", "-m", edit(msg))
}

// A commit made through git_commit carries the trailers, keeps the user's
// message, records blob digests in its receipt and passes commit_verify
// (the CLI's exit code is tested in cmd/harness).
func TestCommitVerifyPassesForAToolCommit(t *testing.T) {
	h, root, id := fixture(t)
	run, err := h.RunStart(context.Background(), harness.RunStartArgs{Goal: "provenance", RepoID: id})
	if err != nil {
		t.Fatal(err)
	}
	ctx := harness.WithRun(context.Background(), run.RunID)
	msg := "add notes\n\nWhy: a reviewer asked.\n\nSigned-off-by: A <a@x>"
	c := toolCommit(t, ctx, h, root, id, "pv-1", "notes.txt", "notes\n", msg)

	got := testutil.Git(t, root, "log", "-1", "--format=%B", "HEAD")
	if !strings.HasPrefix(got, msg+"\n\n") {
		t.Fatalf("message %q does not keep %q", got, msg)
	}
	for _, want := range []string{"Harnessd-Receipt: " + c.ReceiptID, "Harnessd-Run: " + run.RunID, "Harnessd-Policy: sha256:", "Harnessd-Repo: " + id} {
		if !strings.Contains(got, "\n"+want) {
			t.Errorf("message %q lacks trailer %q", got, want)
		}
	}
	if strings.Contains(got, "Harnessd-Approvals") || strings.Contains(got, "Harnessd-Verified") {
		t.Errorf("message %q has trailers for approvals or verifications the commit did not have", got)
	}
	if len(c.Tree) != 1 || c.Tree[0].Path != "notes.txt" || c.Tree[0].Op != "create" || len(c.Tree[0].After) != 64 || c.Tree[0].Before != "" || len(c.Changes) != 1 || c.Changes[0].After != "" {
		t.Fatalf("receipt tree = %+v, changes %+v, want notes.txt created with its blob digest in tree only", c.Tree, c.Changes)
	}

	r := commitVerify(t, h, id, "HEAD")
	if !r.Verified || r.Commit != c.Commit || len(failedChecks(r)) != 0 {
		t.Fatalf("verify = %+v", r)
	}
	var names []string
	for _, ch := range r.Checks {
		names = append(names, ch.Name)
	}
	want := []string{"trailers", "repo", "receipt", "commit", "parent", "fencing_token", "tree", "run", "approvals", "verified", "policy", "audit_chain"}
	if !slices.Equal(names, want) {
		t.Fatalf("checks %v, want %v", names, want)
	}

	// A commit without a run passes too, and says so.
	c2 := toolCommit(t, context.Background(), h, root, id, "pv-2", "README.md", "changed\n", "readme")
	if r := commitVerify(t, h, id, c2.Commit); !r.Verified {
		t.Fatalf("verify of a commit outside a run = %+v", r.Checks)
	}
}

// Tampering with a commit is caught by the check that sees it: another
// receipt's id, another run, an amended tree under the same trailers, a
// plain git commit with copied trailers, and no trailers at all.
func TestCommitVerifyCatchesTampering(t *testing.T) {
	h, root, id := fixture(t)
	run, err := h.RunStart(context.Background(), harness.RunStartArgs{Goal: "provenance", RepoID: id})
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.RunStart(context.Background(), harness.RunStartArgs{Goal: "someone else", RepoID: id})
	if err != nil {
		t.Fatal(err)
	}
	ctx := harness.WithRun(context.Background(), run.RunID)
	c1 := toolCommit(t, ctx, h, root, id, "tp-1", "a.txt", "a\n", "first")
	c2 := toolCommit(t, ctx, h, root, id, "tp-2", "b.txt", "b\n", "second")
	if r := commitVerify(t, h, id, "HEAD"); !r.Verified {
		t.Fatalf("untouched commit: %+v", r.Checks)
	}
	restore := func() { testutil.Git(t, root, "reset", "-q", "--hard", c2.Commit) }

	t.Run("another receipt's id", func(t *testing.T) {
		defer restore()
		amendMessage(t, root, func(m string) string { return strings.Replace(m, c2.ReceiptID, c1.ReceiptID, 1) })
		r := commitVerify(t, h, id, "HEAD")
		wantFailure(t, r, "commit")
		wantFailure(t, r, "parent")
	})
	t.Run("a forged receipt id", func(t *testing.T) {
		defer restore()
		amendMessage(t, root, func(m string) string { return strings.Replace(m, c2.ReceiptID, "rcpt_forged_1", 1) })
		wantFailure(t, commitVerify(t, h, id, "HEAD"), "receipt")
	})
	t.Run("another run", func(t *testing.T) {
		defer restore()
		amendMessage(t, root, func(m string) string { return strings.Replace(m, run.RunID, other.RunID, 1) })
		r := commitVerify(t, h, id, "HEAD")
		wantFailure(t, r, "run")
		wantFailure(t, r, "commit") // amending changed the hash too
	})
	t.Run("run trailer removed", func(t *testing.T) {
		defer restore()
		amendMessage(t, root, func(m string) string { return strings.Replace(m, "Harnessd-Run: "+run.RunID+"\n", "", 1) })
		wantFailure(t, commitVerify(t, h, id, "HEAD"), "run")
	})
	t.Run("amended tree, same trailers", func(t *testing.T) {
		defer restore()
		testutil.WriteFile(t, root, "b.txt", "b, changed after the commit\n")
		testutil.Git(t, root, "commit", "-q", "--amend", "--no-verify", "-a", "-C", "HEAD")
		if msg := testutil.Git(t, root, "log", "-1", "--format=%B"); !strings.Contains(msg, c2.ReceiptID) {
			t.Fatalf("amend lost the trailers: %q", msg)
		}
		r := commitVerify(t, h, id, "HEAD")
		wantFailure(t, r, "tree")
		for _, ch := range r.Checks {
			if ch.Name == "tree" && !strings.Contains(ch.Detail, "b.txt") {
				t.Errorf("tree check %q does not name b.txt", ch.Detail)
			}
		}
	})
	t.Run("plain git commit with copied trailers", func(t *testing.T) {
		defer restore()
		msg := testutil.Git(t, root, "log", "-1", "--format=%B", "HEAD")
		testutil.WriteFile(t, root, "c.txt", "c\n")
		testutil.Git(t, root, "add", "c.txt")
		testutil.Git(t, root, "commit", "-q", "--no-verify", "-m", msg)
		r := commitVerify(t, h, id, "HEAD")
		wantFailure(t, r, "commit")
		wantFailure(t, r, "parent")
		wantFailure(t, r, "tree")
	})
	t.Run("no trailers", func(t *testing.T) {
		defer restore()
		testutil.Git(t, root, "commit", "-q", "--no-verify", "--allow-empty", "-m", "by hand")
		r := commitVerify(t, h, id, "HEAD")
		wantFailure(t, r, "trailers")
		if len(r.Checks) != 1 || !strings.Contains(r.Checks[0].Detail, "not made by harnessd") {
			t.Fatalf("checks = %+v, want one saying not made by harnessd", r.Checks)
		}
	})
	t.Run("another repository", func(t *testing.T) {
		root2 := testutil.Repo(t, map[string]string{"x": "x\n"})
		r2, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root2})
		if err != nil {
			t.Fatal(err)
		}
		// The same commit fetched into another checkout: its receipt is
		// not that repository's.
		testutil.Git(t, root2, "fetch", "-q", root, "main")
		r := commitVerify(t, h, r2.ID, "FETCH_HEAD")
		wantFailure(t, r, "repo")
		wantFailure(t, r, "receipt")
	})
}

// git_commit refuses a message that carries a Harnessd- trailer line: an
// agent cannot forge provenance, and nothing is committed.
func TestGitCommitRefusesForgedTrailers(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	testutil.WriteFile(t, root, "README.md", "changed\n")
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: id, RequestID: "fg-s", Paths: []string{"README.md"}}); err != nil {
		t.Fatal(err)
	}
	head := testutil.Git(t, root, "rev-parse", "HEAD")
	for i, msg := range []string{
		"fix\n\nHarnessd-Receipt: rcpt_forged_1",
		"fix\n\n  harnessd-approvals: apr_0000",
		"fix\nHARNESSD-VERIFIED : tests=chk_x\nmore text",
	} {
		_, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "fg-" + string(rune('a'+i)), Message: msg})
		if e := errs.From(err); e.Code != errs.InvalidArgument || !strings.Contains(e.Message, "Harnessd-") {
			t.Fatalf("message %q: %v, want INVALID_ARGUMENT naming the Harnessd- trailer", msg, err)
		}
	}
	if got := testutil.Git(t, root, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved to %s after refused commits", got)
	}
	// Mentioning the word in prose is fine.
	if _, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "fg-ok", Message: "docs: explain Harnessd-Receipt: trailers"}); err != nil {
		t.Fatal(err)
	}
}

const askCommitPolicy = `version: 1
rules:
  - id: ask-before-commit
    tools: [git_commit]
    decision: ask
    justification: "a person looks at every commit"
`

// A commit a person approved names the approval, which verifies as used
// and decided by a person; a trailer naming a pending approval fails.
func TestCommitVerifyChecksApprovals(t *testing.T) {
	h, err := openWithPolicy(t, t.TempDir(), askCommitPolicy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	id := reg.ID
	testutil.WriteFile(t, root, "a.txt", "a2\n")
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: id, RequestID: "ap-s", Paths: []string{"a.txt"}}); err != nil {
		t.Fatal(err)
	}
	args := harness.GitCommitArgs{RepoID: id, RequestID: "ap-c", Message: "approved change"}
	_, err = h.GitCommit(ctx, args)
	apr, _ := errs.From(err).Details["approval_id"].(string)
	if errs.CodeOf(err) != errs.ApprovalRequired || apr == "" {
		t.Fatalf("commit under an ask rule: %v", err)
	}
	if _, err := h.DecideApproval(ctx, apr, true, "reviewer", ""); err != nil {
		t.Fatal(err)
	}
	args.ApprovalID = apr
	c, err := h.GitCommit(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if msg := testutil.Git(t, root, "log", "-1", "--format=%B"); !strings.Contains(msg, "\nHarnessd-Approvals: "+apr+"\n") {
		t.Fatalf("message %q lacks the approval", msg)
	}
	r := commitVerify(t, h, id, c.Commit)
	if !r.Verified {
		t.Fatalf("approved commit: %+v", r.Checks)
	}

	// Another request asks again: its approval stays pending.
	_, err = h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "ap-c2", Message: "other", AllowEmpty: true})
	pending, _ := errs.From(err).Details["approval_id"].(string)
	if pending == "" || pending == apr {
		t.Fatalf("second ask: %v", err)
	}
	restore := func() { testutil.Git(t, root, "reset", "-q", "--hard", c.Commit) }
	amendMessage(t, root, func(m string) string { return strings.Replace(m, apr, pending, 1) })
	wantFailure(t, commitVerify(t, h, id, "HEAD"), "approvals")
	restore()
	// Removing the trailer is caught too: the audit log records the use.
	amendMessage(t, root, func(m string) string { return strings.Replace(m, "Harnessd-Approvals: "+apr+"\n", "", 1) })
	wantFailure(t, commitVerify(t, h, id, "HEAD"), "approvals")
	restore()
}

func TestCommitVerifyInputErrors(t *testing.T) {
	h, _, id := fixture(t)
	ctx := context.Background()
	for _, tt := range []struct {
		rev  string
		code errs.Code
	}{
		{"", errs.InvalidArgument},
		{"HEAD~1..HEAD", errs.InvalidArgument},
		{"--output=/tmp/x", errs.InvalidArgument},
		{"no-such-branch", errs.NotFound},
	} {
		if _, err := h.CommitVerify(ctx, harness.CommitVerifyArgs{RepoID: id, Rev: tt.rev}); errs.CodeOf(err) != tt.code {
			t.Errorf("rev %q: %v, want %s", tt.rev, err, tt.code)
		}
	}
}

// A commit that required a verified stage names the check identities
// that verified it (Harnessd-Verified); editing them fails "verified".
func TestCommitVerifyRecordsTheVerifiedStage(t *testing.T) {
	fakeGo(t)
	h := open(t)
	root, repo := checkFixture(t, h)
	run := claimRun(t, h, repo)
	ctx := harness.WithRun(context.Background(), run)
	if _, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: repo, Argv: focusedCheck}); err != nil {
		t.Fatal(err)
	}
	claimStage(t, h, run, "tests", "tests pass", harness.Evidence{Kind: harness.EvidenceCheck, Argv: focusedCheck})
	if v := verifyStage(t, h, run, "tests"); !v.Passed {
		t.Fatalf("run_verify: %+v", v)
	}
	testutil.WriteFile(t, root, "pkg/a.go", "package pkg\n\nfunc A() int { return 3 }\n")
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: repo, RequestID: "vs-stage", Paths: []string{"pkg/a.go"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: repo, Argv: focusedCheck}); err != nil {
		t.Fatal(err)
	}
	c, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: repo, RequestID: "vs-commit", Message: "A is 3", RequireVerified: "tests"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Verified) != 1 || len(c.Verified[0].Evidence) != 1 || c.Verified[0].Evidence[0].Identity == "" {
		t.Fatalf("receipt verified = %+v", c.Verified)
	}
	want := "Harnessd-Verified: tests=" + c.Verified[0].Evidence[0].Identity + "\n"
	if msg := testutil.Git(t, root, "log", "-1", "--format=%B"); !strings.Contains(msg, "\n"+want) {
		t.Fatalf("message %q lacks %q", msg, want)
	}
	if r := commitVerify(t, h, repo, "HEAD"); !r.Verified {
		t.Fatalf("verified commit: %+v", r.Checks)
	}
	amendMessage(t, root, func(m string) string { return strings.Replace(m, "tests=", "lint=", 1) })
	wantFailure(t, commitVerify(t, h, repo, "HEAD"), "verified")
}

// A batch's commit step carries the batch's receipt: commit_verify says
// the receipt is not a git_commit's (documented as not verifiable yet).
func TestCommitVerifyBatchCommitIsNotVerifiable(t *testing.T) {
	h, root, id := fixture(t)
	r, err := h.Batch(context.Background(), harness.BatchArgs{RepoID: id, RequestID: "pv-batch", Steps: []harness.BatchStep{
		step("apply_patch", patchArgs("README.md", "hello world", "hello commit")),
		step("git_stage", map[string]any{"paths": []string{"README.md"}}),
		step("git_commit", map[string]any{"message": "batch commit"}),
	}})
	if err != nil || !r.OK {
		t.Fatalf("batch = %+v, %v", r, err)
	}
	if msg := testutil.Git(t, root, "log", "-1", "--format=%B"); !strings.Contains(msg, "Harnessd-Receipt: "+r.Receipt.ReceiptID) {
		t.Fatalf("message %q, want the batch's receipt", msg)
	}
	v := commitVerify(t, h, id, "HEAD")
	wantFailure(t, v, "receipt")
	if !strings.Contains(v.Checks[2].Detail, "is of batch") {
		t.Fatalf("receipt check = %+v", v.Checks[2])
	}
}
