package harness_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/internal/verify"
	"github.com/harnessd/harnessd/persistence"
)

// claimRun starts a run on repo and returns its id.
func claimRun(t *testing.T, h *harness.Harness, repo string) string {
	t.Helper()
	st, err := h.RunStart(context.Background(), harness.RunStartArgs{Goal: "claims", RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	return st.RunID
}

func claimStage(t *testing.T, h *harness.Harness, run, stage, text string, ev ...harness.Evidence) *harness.RunClaimResult {
	t.Helper()
	c, err := h.RunClaim(context.Background(), harness.RunClaimArgs{RunID: run, Stage: stage, Claim: text, Evidence: ev})
	if err != nil {
		t.Fatalf("run_claim: %v", err)
	}
	return c
}

func verifyStage(t *testing.T, h *harness.Harness, run, stage string) *harness.RunVerifyResult {
	t.Helper()
	v, err := h.RunVerify(context.Background(), harness.RunVerifyArgs{RunID: run, Stage: stage})
	if err != nil {
		t.Fatalf("run_verify: %v", err)
	}
	if len(v.Warnings) > 0 {
		t.Fatalf("run_verify warnings: %v", v.Warnings)
	}
	return v
}

// blockerText joins the reasons and changed files of blockers.
func blockerText(bs []verify.Blocker) string {
	var b strings.Builder
	for _, x := range bs {
		b.WriteString(x.Reason + " [" + strings.Join(x.ChangedFiles, ",") + "] fix: " + x.Fix + "\n")
	}
	return b.String()
}

func storedStage(t *testing.T, h *harness.Harness, run, stage string) verify.Stage {
	t.Helper()
	var st verify.Stage
	if err := h.Store().Get(persistence.ClaimKey(run, stage), &st); err != nil {
		t.Fatalf("stored stage %s/%s: %v", run, stage, err)
	}
	return st
}

func TestClaimWithoutEvidenceStaysClaimed(t *testing.T) {
	h, _, repo := fixture(t)
	ctx := context.Background()
	run := claimRun(t, h, repo)

	none := verifyStage(t, h, run, "review")
	if none.Passed || none.Status != harness.ClaimClaimed || len(none.Blockers) != 1 || !strings.Contains(none.Blockers[0].Reason, "no claim") {
		t.Fatalf("a stage without claims: %+v", none)
	}

	c := claimStage(t, h, run, "review", "I read the whole diff")
	if c.Status != harness.ClaimClaimed || c.StageStatus != harness.ClaimClaimed || c.ClaimID == "" || c.Claims != 1 {
		t.Fatalf("run_claim: %+v", c)
	}
	for range 2 {
		v := verifyStage(t, h, run, "review")
		if v.Passed || v.Status != harness.ClaimClaimed || len(v.Claims) != 1 || v.Claims[0].Status != harness.ClaimClaimed {
			t.Fatalf("run_verify of a claim without evidence: %+v", v)
		}
		if len(v.Blockers) != 1 || !strings.Contains(v.Blockers[0].Reason, "no evidence") || v.Blockers[0].Fix == "" {
			t.Fatalf("blockers %+v, want one naming the missing evidence and its fix", v.Blockers)
		}
	}
	if st := storedStage(t, h, run, "review"); st.Status != harness.ClaimClaimed || st.Verification == nil || st.Verification.Passed {
		t.Fatalf("stored stage: %+v", st)
	}

	// Bad claims are refused with stable codes.
	bad := []struct {
		args harness.RunClaimArgs
		code errs.Code
	}{
		{harness.RunClaimArgs{Stage: "s", Claim: "c"}, errs.InvalidArgument},
		{harness.RunClaimArgs{RunID: run, Stage: "s"}, errs.InvalidArgument},
		{harness.RunClaimArgs{RunID: run, Stage: "s", Claim: "c", Evidence: []harness.Evidence{{Kind: "hunch"}}}, errs.InvalidArgument},
		{harness.RunClaimArgs{RunID: run, Stage: "s", Claim: "c", Evidence: []harness.Evidence{{Kind: "check"}}}, errs.InvalidArgument},
		{harness.RunClaimArgs{RunID: "run_nope", Stage: "s", Claim: "c"}, errs.NotFound},
		{harness.RunClaimArgs{RunID: run, Stage: "s", Claim: "c", RepoID: "repo_nope"}, errs.RepositoryNotRegistered},
	}
	for i, b := range bad {
		if _, err := h.RunClaim(ctx, b.args); errs.CodeOf(err) != b.code {
			t.Errorf("bad claim %d: %v, want %s", i, err, b.code)
		}
	}
	if _, err := h.RunEnd(ctx, harness.RunEndArgs{RunID: run}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.RunClaim(ctx, harness.RunClaimArgs{RunID: run, Stage: "review", Claim: "late"}); errs.CodeOf(err) != errs.RunEnded {
		t.Fatalf("a claim on an ended run: %v, want RUN_ENDED", err)
	}
}

// Check evidence is verified by passing evidence of the current content
// only: missing before run_check, verified after it, stale (naming the
// file) after an edit, verified again after a fresh run_check. run_verify
// never runs the check.
func TestCheckEvidenceFollowsTheContent(t *testing.T) {
	counter := fakeGo(t)
	// Unconfined: the fake go's runs are counted in a file a confined
	// check could not write, and run_verify's runs would say nothing.
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, Sandbox: "off"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	root, repo := checkFixture(t, h)
	ctx := context.Background()
	run := claimRun(t, h, repo)
	ev := harness.Evidence{Kind: harness.EvidenceCheck, Argv: focusedCheck}
	claimStage(t, h, run, "tests", "the focused tests pass", ev)

	missing := verifyStage(t, h, run, "tests")
	if missing.Passed || len(missing.Evidence) != 1 || missing.Evidence[0].Verified || !strings.Contains(missing.Evidence[0].Reason, "no passing run") {
		t.Fatalf("before run_check: %+v", missing)
	}
	if !strings.Contains(missing.Blockers[0].Fix, "run_check") || !strings.Contains(missing.Blockers[0].Fix, "run_verify") {
		t.Fatalf("fix %q, want run_check then run_verify", missing.Blockers[0].Fix)
	}
	if runs(t, counter) != 0 {
		t.Fatal("run_verify ran the check")
	}

	rc, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: repo, Argv: focusedCheck})
	if err != nil || !rc.Passed {
		t.Fatalf("run_check: %+v, %v", rc, err)
	}
	ok := verifyStage(t, h, run, "tests")
	if !ok.Passed || ok.Status != harness.ClaimVerified || !ok.Evidence[0].Verified || ok.Evidence[0].Identity != rc.Identity || len(ok.Blockers) != 0 {
		t.Fatalf("after run_check: %+v", ok)
	}
	if ok.Claims[0].Status != harness.ClaimVerified || len(ok.Revisions) != 1 || ok.Revisions[0].RepoID != repo || ok.Revisions[0].Revision == "" {
		t.Fatalf("claims %+v, revisions %+v", ok.Claims, ok.Revisions)
	}
	if st := storedStage(t, h, run, "tests"); st.Status != harness.ClaimVerified || st.Claims[0].Status != harness.ClaimVerified || st.Verification == nil || !st.Verification.Passed {
		t.Fatalf("stored stage: %+v", st)
	}

	testutil.WriteFile(t, root, "pkg/a.go", "package pkg\n\nfunc A() int { return 2 }\n")
	stale := verifyStage(t, h, run, "tests")
	if stale.Passed || stale.Status != harness.ClaimClaimed || stale.Evidence[0].Verified || stale.Claims[0].Status != harness.ClaimClaimed {
		t.Fatalf("after an edit: %+v\n%s", stale, blockerText(stale.Blockers))
	}
	b := stale.Blockers[0]
	if !strings.Contains(b.Reason, "stale") || !strings.Contains(b.Reason, "pkg/a.go") || strings.Join(b.ChangedFiles, ",") != "pkg/a.go" || b.Kind != harness.EvidenceCheck {
		t.Fatalf("blocker %+v, want a stale check naming pkg/a.go", b)
	}
	if st := storedStage(t, h, run, "tests"); st.Status != harness.ClaimClaimed {
		t.Fatalf("stored stage after an edit: %+v", st)
	}
	// run_status shows what was claimed beside what was verified.
	rs, err := h.RunStatus(ctx, harness.RunStatusArgs{RunID: run})
	if err != nil || len(rs.Verification) != 1 {
		t.Fatalf("run_status verification: %+v, %v", rs.Verification, err)
	}
	if v := rs.Verification[0]; v.Stage != "tests" || v.Status != harness.ClaimClaimed || v.Claims != 1 || v.Verified != 0 || len(v.Blockers) == 0 {
		t.Fatalf("run_status stage: %+v", v)
	}
	if runs(t, counter) != 1 {
		t.Fatal("run_verify ran the check")
	}

	if rc, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: repo, Argv: focusedCheck}); err != nil || rc.Reused || !rc.Passed {
		t.Fatalf("fresh run_check: %+v, %v", rc, err)
	}
	again := verifyStage(t, h, run, "tests")
	if !again.Passed || again.Revisions[0].Revision == ok.Revisions[0].Revision {
		t.Fatalf("after a fresh run_check: %+v", again)
	}

	// Reverting the edit brings the first evidence back.
	testutil.WriteFile(t, root, "pkg/a.go", "package pkg\n\nfunc A() int { return 1 }\n")
	if back := verifyStage(t, h, run, "tests"); !back.Passed || back.Revisions[0].Revision != ok.Revisions[0].Revision {
		t.Fatalf("after the revert: %+v", back)
	}
	// A definition that never ran (another timeout is another identity).
	other := harness.Evidence{Kind: harness.EvidenceCheck, Argv: focusedCheck, TimeoutMs: 5000}
	claimStage(t, h, run, "tests", "with a timeout", other)
	v := verifyStage(t, h, run, "tests")
	if v.Passed || len(v.Blockers) != 1 || v.Blockers[0].Claim != 1 || v.Claims[0].Status != harness.ClaimVerified || v.Claims[1].Status != harness.ClaimClaimed {
		t.Fatalf("a second claim with evidence that never ran: %+v\n%s", v, blockerText(v.Blockers))
	}
}

// Receipt evidence holds while the files it wrote keep the digests it
// wrote; an edit afterwards makes it stale, naming the file.
func TestReceiptEvidenceGoesStale(t *testing.T) {
	h, root, repo := fixture(t)
	ctx := context.Background()
	run := claimRun(t, h, repo)
	w, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo, RequestID: "claim-p1", Operations: []patch.Op{
		{Op: "replace", Path: "README.md", OldText: "hello", NewText: "hi"},
		{Op: "replace", Path: "README.md", OldText: "hi", NewText: "hey"},
		{Op: "create", Path: "docs/new.md", Content: "new\n"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	claimStage(t, h, run, "edit", "README says hey", harness.Evidence{Kind: harness.EvidenceReceipt, ReceiptID: w.ReceiptID})
	if v := verifyStage(t, h, run, "edit"); !v.Passed || !strings.Contains(v.Evidence[0].Reason, "(2)") {
		t.Fatalf("right after the write: %+v", v)
	}
	testutil.WriteFile(t, root, "docs/new.md", "edited by hand\n")
	v := verifyStage(t, h, run, "edit")
	if v.Passed || len(v.Blockers) != 1 || strings.Join(v.Blockers[0].ChangedFiles, ",") != "docs/new.md" || !strings.Contains(v.Blockers[0].Reason, "docs/new.md changed after the write") {
		t.Fatalf("after an edit: %+v", v)
	}
	testutil.WriteFile(t, root, "docs/new.md", "new\n")
	if v := verifyStage(t, h, run, "edit"); !v.Passed {
		t.Fatalf("content restored: %+v", v)
	}

	// A commit's receipt wrote no contents; an unknown receipt is no evidence.
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: repo, RequestID: "claim-s1", Paths: []string{"."}}); err != nil {
		t.Fatal(err)
	}
	cm, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: repo, RequestID: "claim-c1", Message: "edit"})
	if err != nil {
		t.Fatal(err)
	}
	claimStage(t, h, run, "commit", "committed", harness.Evidence{Kind: harness.EvidenceReceipt, ReceiptID: cm.ReceiptID},
		harness.Evidence{Kind: harness.EvidenceReceipt, ReceiptID: "rcpt_unknown_1"})
	v = verifyStage(t, h, run, "commit")
	if v.Passed || len(v.Blockers) != 2 || !strings.Contains(v.Blockers[0].Reason, "wrote no file contents") || !strings.Contains(v.Blockers[1].Reason, "not stored") {
		t.Fatalf("commit and unknown receipts: %+v", v)
	}
}

func TestFileEvidence(t *testing.T) {
	h, root, repo := fixture(t)
	ctx := context.Background()
	run := claimRun(t, h, repo)
	f, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: repo, Path: "src/main.go"})
	if err != nil {
		t.Fatal(err)
	}
	claimStage(t, h, run, "docs", "main.go is as read", harness.Evidence{Kind: harness.EvidenceFile, Path: "./src/main.go", SHA256: "sha256:" + strings.ToUpper(f.SHA256)})
	v := verifyStage(t, h, run, "docs")
	if !v.Passed || v.Evidence[0].Path != "src/main.go" || v.Evidence[0].RepoID != repo {
		t.Fatalf("file evidence: %+v", v)
	}
	testutil.WriteFile(t, root, "src/main.go", "package main\n")
	if v := verifyStage(t, h, run, "docs"); v.Passed || !strings.Contains(v.Blockers[0].Reason, "not the claimed") {
		t.Fatalf("after an edit: %+v", v)
	}
	claimStage(t, h, run, "absent", "a file that is not there", harness.Evidence{Kind: harness.EvidenceFile, Path: "nope.txt", SHA256: f.SHA256})
	if v := verifyStage(t, h, run, "absent"); v.Passed || !strings.Contains(v.Blockers[0].Reason, "does not exist") {
		t.Fatalf("absent file: %+v", v)
	}
	// The repository's path rules: secret paths and escapes are refused.
	for path, code := range map[string]errs.Code{".env": errs.SecretPathDenied, "../outside": errs.PathOutsideRoot, ".git/config": errs.PathNotAllowed} {
		_, err := h.RunClaim(ctx, harness.RunClaimArgs{RunID: run, Stage: "x", Claim: "c", Evidence: []harness.Evidence{{Kind: harness.EvidenceFile, Path: path, SHA256: f.SHA256}}})
		if errs.CodeOf(err) != code {
			t.Errorf("file evidence %s: %v, want %s", path, err, code)
		}
	}
	// Without a repository anywhere, file evidence cannot be claimed.
	bare, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "no repo"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.RunClaim(ctx, harness.RunClaimArgs{RunID: bare.RunID, Stage: "x", Claim: "c", Evidence: []harness.Evidence{{Kind: harness.EvidenceFile, Path: "README.md", SHA256: f.SHA256}}})
	if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "repo_id") {
		t.Errorf("file evidence without a repository: %v", err)
	}
	if c, err := h.RunClaim(ctx, harness.RunClaimArgs{RunID: bare.RunID, Stage: "x", Claim: "c", RepoID: repo,
		Evidence: []harness.Evidence{{Kind: harness.EvidenceFile, Path: "README.md", SHA256: f.SHA256}}}); err != nil || c.Evidence[0].RepoID != repo {
		t.Errorf("file evidence with the claim's repo_id: %+v, %v", c, err)
	}
}

// git_commit with require_verified re-verifies the stage at commit time:
// stale check evidence refuses the commit with VERIFICATION_REQUIRED and
// its blockers; after a fresh run_check the same request commits, and the
// receipt records the verification it passed.
func TestCommitRequiresAVerifiedStage(t *testing.T) {
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
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: repo, RequestID: "rv-stage", Paths: []string{"pkg/a.go"}}); err != nil {
		t.Fatal(err)
	}
	commit := harness.GitCommitArgs{RepoID: repo, RequestID: "rv-commit", Message: "A is 3", RequireVerified: "tests"}

	// No run: the argument cannot be honoured.
	if _, err := h.GitCommit(context.Background(), commit); errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "run_id") {
		t.Fatalf("require_verified without a run: %v, want INVALID_ARGUMENT naming run_id", err)
	}

	_, err := h.GitCommit(ctx, commit)
	e := errs.From(err)
	if e.Code != errs.VerificationRequired {
		t.Fatalf("commit on stale evidence: %v, want VERIFICATION_REQUIRED", err)
	}
	blockers, _ := e.Details["blockers"].([]verify.Blocker)
	if len(blockers) != 1 || strings.Join(blockers[0].ChangedFiles, ",") != "pkg/a.go" || e.Details["stage"] != "tests" || e.Details["run_id"] != run {
		t.Fatalf("details %+v, want the stale check naming pkg/a.go", e.Details)
	}
	for _, want := range []string{"tests", "pkg/a.go", "run_check", "run_verify", "retry git_commit"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q, want it to name %q", e.Message, want)
		}
	}
	if st := storedStage(t, h, run, "tests"); st.Status != harness.ClaimClaimed {
		t.Fatalf("the stage after a refused commit: %+v", st)
	}

	if rc, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: repo, Argv: focusedCheck}); err != nil || rc.Reused {
		t.Fatalf("fresh run_check: %+v, %v", rc, err)
	}
	done, err := h.GitCommit(ctx, commit)
	if err != nil {
		t.Fatalf("commit after a fresh check: %v", err)
	}
	if len(done.Verified) != 1 {
		t.Fatalf("receipt %+v, want one verification", done.Receipt)
	}
	s := done.Verified[0]
	if s.RunID != run || s.Stage != "tests" || s.Rule != "require_verified" || s.At.IsZero() || len(s.Evidence) != 1 || !s.Evidence[0].Verified || len(s.Revisions) != 1 {
		t.Fatalf("verification on the receipt: %+v", s)
	}
	// The stored receipt carries it too.
	found := false
	prefix := persistence.ReceiptKey(repo, 0)
	_ = h.Store().Scan(prefix[:len(prefix)-8], func(_ []byte, decode func(any) error) error {
		var r harness.MutationResult
		if decode(&r.Receipt) == nil && r.ReceiptID == done.ReceiptID {
			found = len(r.Verified) == 1 && r.Verified[0].Stage == "tests"
		}
		return nil
	})
	if !found {
		t.Fatal("the stored receipt does not record the verification")
	}
	if again, err := h.GitCommit(ctx, commit); err != nil || !again.Replayed || len(again.Verified) != 1 {
		t.Fatalf("replay: %+v, %v", again, err)
	}
}

// A require_verified policy rule makes the matched writes of a run need
// the stage verified, through the same decision path: a commit outside any
// run or without a verified stage is refused, a batch's commit step too,
// and a verified stage lets it through with the rule on the receipt.
func TestPolicyRequiresAVerifiedStage(t *testing.T) {
	fakeGo(t)
	dir := t.TempDir()
	h, err := openWithPolicy(t, dir, `version: 1
rules:
  - id: tests-before-commit
    tools: [git_commit, patch_proposal_integrate]
    require_verified: tests
    justification: commits need passing tests
`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	root, repo := checkFixture(t, h)
	testutil.WriteFile(t, root, "pkg/b.go", "package pkg\n")
	bg := context.Background()
	if _, err := h.GitStage(bg, harness.GitStageArgs{RepoID: repo, RequestID: "pol-stage", Paths: []string{"pkg/b.go"}}); err != nil {
		t.Fatalf("git_stage is not matched by the rule: %v", err)
	}
	commit := harness.GitCommitArgs{RepoID: repo, RequestID: "pol-commit", Message: "add b"}
	_, err = h.GitCommit(bg, commit)
	if e := errs.From(err); e.Code != errs.VerificationRequired || e.Details["rule_id"] != "tests-before-commit" || !strings.Contains(e.Message, "run_start") {
		t.Fatalf("commit outside a run: %v, want VERIFICATION_REQUIRED naming the rule and run_start", err)
	}

	run := claimRun(t, h, repo)
	ctx := harness.WithRun(bg, run)
	_, err = h.GitCommit(ctx, commit)
	if e := errs.From(err); e.Code != errs.VerificationRequired || !strings.Contains(e.Message, `policy rule "tests-before-commit"`) || !strings.Contains(e.Message, "run_claim") {
		t.Fatalf("commit without a claim: %v", err)
	}
	claimStage(t, h, run, "tests", "tests pass", harness.Evidence{Kind: harness.EvidenceCheck, Argv: focusedCheck})

	// A commit step of a batch crosses the same requirement.
	b, err := h.Batch(ctx, harness.BatchArgs{RepoID: repo, RequestID: "pol-batch", Steps: []harness.BatchStep{
		{Kind: "git_commit", Args: map[string]any{"message": "add b in a batch"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if b.OK || b.Steps[0].Error == nil || b.Steps[0].Error.Code != errs.VerificationRequired {
		t.Fatalf("batch commit step without verification: %+v", b.Steps)
	}

	if _, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: repo, Argv: focusedCheck}); err != nil {
		t.Fatal(err)
	}
	done, err := h.GitCommit(ctx, commit)
	if err != nil {
		t.Fatalf("commit with the stage verified: %v", err)
	}
	if len(done.Verified) != 1 || done.Verified[0].Rule != "tests-before-commit" || done.Verified[0].Stage != "tests" {
		t.Fatalf("receipt verification: %+v", done.Verified)
	}

	// The commit moved HEAD: the content revision changed, so the check's
	// evidence no longer covers it, and an integration is refused until
	// the check ran on the new content.
	val, err := h.PatchProposalValidate(ctx, harness.PatchProposalValidateArgs{RepoID: repo, Proposals: []harness.Proposal{
		{ID: "p", Operations: []patch.Op{{Op: "replace", Path: "pkg/b.go", OldText: "package pkg", NewText: "package pkg // p"}}}}})
	if err != nil || !val.Proposals[0].Valid {
		t.Fatalf("validate: %+v, %v", val, err)
	}
	integrate := harness.PatchProposalIntegrateArgs{RepoID: repo, RequestID: "pol-integrate", ProposalIDs: []string{val.Proposals[0].ProposalID}}
	_, err = h.PatchProposalIntegrate(ctx, integrate)
	if e := errs.From(err); e.Code != errs.VerificationRequired || !strings.Contains(e.Message, "stale") {
		t.Fatalf("integrate after the commit: %v, want VERIFICATION_REQUIRED on stale evidence", err)
	}
	if _, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: repo, Argv: focusedCheck}); err != nil {
		t.Fatal(err)
	}
	in, err := h.PatchProposalIntegrate(ctx, integrate)
	if err != nil || len(in.Verified) != 1 || in.Verified[0].Rule != "tests-before-commit" {
		t.Fatalf("integrate with the stage verified: %+v, %v", in, err)
	}
}
