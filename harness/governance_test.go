package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

const testPolicy = `version: 1
rules:
  - id: no-log-grep
    tools: [run_command]
    argv_prefix: [git, log]
    argv_pattern: "--grep"
    decision: deny
    justification: "history searches are too slow here"
    examples:
      match: [{tool: run_command, argv: [git, log, --grep, x]}]
      not_match: [{tool: run_command, argv: [git, log]}]
  - id: ask-for-ls-tree
    tools: [run_command]
    argv_prefix: [git, ls-tree]
    decision: ask
    justification: "someone should look first"
`

func openWithPolicy(t *testing.T, dir, pol string) (*harness.Harness, error) {
	t.Helper()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	return harness.Open(context.Background(), harness.Config{DataDir: dir})
}

func TestPolicyWithFailingExampleRefusesToLoad(t *testing.T) {
	bad := strings.Replace(testPolicy, "not_match: [{tool: run_command, argv: [git, log]}]", "not_match: [{tool: run_command, argv: [git, log, --grep, y]}]", 1)
	_, err := openWithPolicy(t, t.TempDir(), bad)
	if err == nil || !strings.Contains(err.Error(), "no-log-grep") {
		t.Fatalf("open with a failing example: %v, want an error naming rule no-log-grep", err)
	}
}

func TestPolicyDenyAskApproveAndAudit(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h, err := openWithPolicy(t, dir, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	id := r.ID
	_, err = h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"git", "log", "--grep", "fix"}})
	if e := errs.From(err); e.Code != errs.PolicyDenied || e.Details["rule_id"] != "no-log-grep" {
		t.Fatalf("denied command: %v %+v", err, e.Details)
	}
	if _, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"git", "log"}}); err != nil {
		t.Fatalf("allowed command: %v", err)
	}

	// ask -> approval -> single use, bound to the input.
	args := harness.RunCommandArgs{RepoID: id, Argv: []string{"git", "ls-tree", "HEAD"}}
	_, err = h.RunCommand(ctx, args)
	e := errs.From(err)
	apr, _ := e.Details["approval_id"].(string)
	if e.Code != errs.ApprovalRequired || apr == "" {
		t.Fatalf("ask: %v %+v", err, e.Details)
	}
	args.ApprovalID = apr
	if _, err := h.RunCommand(ctx, args); errs.CodeOf(err) != errs.ApprovalRequired {
		t.Fatalf("pending approval: %v, want APPROVAL_REQUIRED", err)
	}
	l, err := h.Approvals(ctx, "")
	if err != nil || len(l.Approvals) != 1 || l.Approvals[0].ID != apr || !strings.Contains(l.Approvals[0].Summary, "ls-tree") {
		t.Fatalf("approvals = %+v, %v", l, err)
	}
	if _, err := h.DecideApproval(ctx, apr, true, "tester", ""); err != nil {
		t.Fatal(err)
	}
	other := args
	other.Argv = []string{"git", "ls-tree", "-r", "HEAD"}
	if _, err := h.RunCommand(ctx, other); errs.CodeOf(err) != errs.ApprovalRequired {
		t.Fatalf("approval applied to different input: %v, want APPROVAL_REQUIRED", err)
	}
	res, err := h.RunCommand(ctx, args)
	if err != nil || !strings.Contains(res.Stdout.Text, "a.txt") {
		t.Fatalf("approved command: %+v, %v", res, err)
	}
	if _, err := h.RunCommand(ctx, args); errs.CodeOf(err) != errs.ApprovalRequired {
		t.Fatalf("approval reused: %v, want APPROVAL_REQUIRED", err)
	}
	if _, err := h.DecideApproval(ctx, apr, true, "tester", ""); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("deciding a used approval: %v", err)
	}

	// Reload: a broken file keeps the old policy.
	before := h.Policy()
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte("version: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReloadPolicy(ctx); err == nil {
		t.Fatal("reload of a bad policy succeeded")
	}
	if h.Policy() != before {
		t.Fatal("a failed reload replaced the policy")
	}

	a, err := h.Audit(ctx, harness.AuditArgs{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[messages.AuditKind]int{}
	for _, x := range a.Entries {
		kinds[x.Kind]++
		if x.PolicyDigest != before.Digest {
			t.Fatalf("entry %d has policy digest %q, want %q", x.Seq, x.PolicyDigest, before.Digest)
		}
	}
	for _, k := range []messages.AuditKind{"rejection", "ask", "approval", "policy_load"} {
		if kinds[k] == 0 {
			t.Errorf("no %s entry in the audit log: %v", k, kinds)
		}
	}
	if v, err := h.AuditVerify(ctx); err != nil || !v.OK {
		t.Fatalf("verify = %+v, %v", v, err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestApprovalsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h, err := openWithPolicy(t, dir, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, nil)
	r, _ := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	args := harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"git", "ls-tree", "HEAD"}}
	_, err = h.RunCommand(ctx, args)
	apr, _ := errs.From(err).Details["approval_id"].(string)
	if apr == "" {
		t.Fatalf("no approval: %v", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h, err = harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if _, err := h.DecideApproval(ctx, apr, true, "tester", ""); err != nil {
		t.Fatal(err)
	}
	args.ApprovalID = apr
	if _, err := h.RunCommand(ctx, args); err != nil {
		t.Fatalf("approved after restart: %v", err)
	}
}

func TestLoopDetected(t *testing.T) {
	h, _, id := fixture(t)
	ctx := context.Background()
	args := harness.RunCommandArgs{RepoID: id, Argv: []string{"cat", "missing-file"}}
	var earlier string
	for i := 0; i < 2; i++ {
		r, err := h.RunCommand(ctx, args)
		if err != nil || r.ExitCode == 0 {
			t.Fatalf("try %d: %+v, %v", i, r, err)
		}
		if i == 0 {
			earlier = r.RunID
		}
	}
	_, err := h.RunCommand(ctx, args)
	e := errs.From(err)
	if e.Code != errs.LoopDetected || e.Details["earlier_receipt"] != earlier || e.Details["hint"] == "" {
		t.Fatalf("third identical failure on an unchanged tree: %v %+v, want LOOP_DETECTED naming %s", err, e.Details, earlier)
	}
}

// Editing one audit entry directly in the store makes verify report exactly
// that entry.
func TestAuditTamperDetected(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, map[string]string{"a.txt": "0\n"})
	r, _ := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	for i := 0; i < 5; i++ {
		if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: r.ID, Path: ".env"}); err == nil {
			t.Fatal("secret read allowed")
		}
	}
	a, err := h.Audit(ctx, harness.AuditArgs{})
	if err != nil || len(a.Entries) < 5 {
		t.Fatalf("audit = %+v, %v", a, err)
	}
	victim := a.Entries[2].Seq
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := persistence.Open(persistence.Options{Dir: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	var e messages.AuditEntry
	if err := st.Get(persistence.AuditKey(victim), &e); err != nil {
		t.Fatal(err)
	}
	e.Reason = "nothing to see here"
	if err := st.PutSync(persistence.AuditKey(victim), e); err != nil {
		t.Fatal(err)
	}
	st.Close()
	h, err = harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	v, err := h.AuditVerify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.OK || v.BrokenSeq != victim {
		t.Fatalf("verify = %+v, want broken at %d", v, victim)
	}
}

// Governance knows who asked: audit entries carry the run, the MCP session
// and the client, and an approval request shows the run that raised it.
func TestAuditAndApprovalsCarryTheRun(t *testing.T) {
	dir := t.TempDir()
	h, err := openWithPolicy(t, dir, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	ctx := harness.WithCaller(context.Background(), harness.Caller{Session: "s-gov", Client: harness.Client{Name: "claude-code", Version: "2.0"}})
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	run, err := h.RunStatus(ctx, harness.RunStatusArgs{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"git", "log", "--grep", "x"}})
	if errs.CodeOf(err) != errs.PolicyDenied {
		t.Fatalf("denied: %v", err)
	}
	_, err = h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"git", "ls-tree", "HEAD"}})
	if errs.CodeOf(err) != errs.ApprovalRequired {
		t.Fatalf("ask: %v", err)
	}
	l, err := h.Approvals(context.Background(), "")
	if err != nil || len(l.Approvals) != 1 {
		t.Fatalf("approvals: %+v %v", l, err)
	}
	if a := l.Approvals[0]; a.RunID != run.RunID || a.Session != "s-gov" || a.Client != "claude-code 2.0" {
		t.Fatalf("approval does not say who asked: %+v", a)
	}
	au, err := h.Audit(context.Background(), harness.AuditArgs{RunID: run.RunID})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[messages.AuditKind]bool{}
	for _, e := range au.Entries {
		if e.RunID != run.RunID || e.Session != "s-gov" || e.Client != "claude-code 2.0" {
			t.Fatalf("entry without identity: %+v", e)
		}
		kinds[e.Kind] = true
	}
	if !kinds["rejection"] || !kinds["ask"] {
		t.Fatalf("the run's audit entries: %+v", au.Entries)
	}
	if v, err := h.AuditVerify(context.Background()); err != nil || !v.OK {
		t.Fatalf("the chain with identity fields: %+v %v", v, err)
	}
	// The run's state notes the approval request.
	st, err := h.RunStatus(ctx, harness.RunStatusArgs{RunID: run.RunID, IncludeSpans: true})
	if err != nil {
		t.Fatal(err)
	}
	var noted bool
	for _, o := range st.Observations {
		noted = noted || o.Kind == "approval"
	}
	if !noted {
		t.Fatalf("no approval observation: %+v", st.Observations)
	}
}

// The policy's max_retries bounds the retries of every new run (implicit
// ones too); run_start's max_retries overrides it.
func TestPolicyMaxRetriesBoundsRuns(t *testing.T) {
	dir := t.TempDir()
	h, err := openWithPolicy(t, dir, "version: 1\nmax_retries: 1\n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	ctx := harness.WithCaller(context.Background(), harness.Caller{Session: "s-retry"})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	missing := harness.ReadFileArgs{RepoID: r.ID, Path: "missing.txt"}
	for i := range 2 { // the call and its one retry run
		if _, err := h.ReadFile(ctx, missing); errs.CodeOf(err) != errs.NotFound {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if _, err := h.ReadFile(ctx, missing); errs.CodeOf(err) != errs.RetryLimit {
		t.Fatalf("second retry under max_retries 1: %v, want RETRY_LIMIT", err)
	}
	three := 3
	run, err := h.RunStart(context.Background(), harness.RunStartArgs{MaxRetries: &three})
	if err != nil {
		t.Fatal(err)
	}
	in := harness.WithRun(context.Background(), run.RunID)
	for i := range 4 {
		if _, err := h.ReadFile(in, missing); errs.CodeOf(err) != errs.NotFound {
			t.Fatalf("run_start max_retries 3, attempt %d: %v", i+1, err)
		}
	}
}
