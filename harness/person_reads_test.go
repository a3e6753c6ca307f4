package harness_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/internal/testutil"
)

// Attacks on what people read: an agent writes a secret value of the
// checkout into its notes and claims (people read them in the console and
// `harness run show`, and they are stored), and files approval requests
// by the hundred to bury the one that matters.

// noteSecret is the value of the fixture's .env: no rule knows its shape,
// only the checkout's known-secret redaction does.
const noteSecret = "Zq8vN3wKp2Lm7Rt5Hx9c"

// otherSecret is the value of a second repository's .env.
const otherSecret = "Wd4nQ7zLs1Fy6Jb8Vk3m"

// askLsTree asks a person before `git ls-tree`.
const askLsTree = "version: 1\nrules:\n  - id: ask-ls-tree\n    tools: [run_command]\n    argv_prefix: [git, ls-tree]\n    decision: ask\n    justification: \"someone should look first\"\n"

// openAsking opens a harness on a fresh data dir with the ask-ls-tree policy,
// the given repositories in its allowed areas, and registers them.
func openAsking(t *testing.T, roots ...string) (*harness.Harness, []string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(askLsTree), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := harness.Open(context.Background(), harness.Config{DataDir: dir, AllowRoots: roots})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	var ids []string
	for _, root := range roots {
		r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return h, ids
}

func secretRepos(t *testing.T) (*harness.Harness, string, string) {
	t.Helper()
	a := testutil.Repo(t, map[string]string{"a.txt": "a\n", ".env": "DEPLOY_TOKEN=" + noteSecret + "\n"})
	b := testutil.Repo(t, map[string]string{"b.txt": "b\n", ".env": "OTHER=" + otherSecret + "\n"})
	h, ids := openAsking(t, a, b)
	return h, ids[0], ids[1]
}

// secretForm is a shape in which an agent hands a value back: form is
// what must not be stored, text the note that carries it.
type secretForm struct{ name, form, text string }

func forms(v string) []secretForm {
	b64, hx := base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v))
	return []secretForm{
		{"the value", v, "the deploy value is " + v + ", noted for later"},
		{"its base64", b64, "encoded: " + b64},
		{"its hex", hx, "hex " + hx + " done"},
		{"inside a word", v, "x" + v + "y"},
	}
}

// The rules alone miss every form: only the checkout's known values
// catch them (else these tests would prove nothing about that path).
func TestNoteSecretFormsEscapeTheRules(t *testing.T) {
	for _, f := range forms(noteSecret) {
		if out, n := redact.Default().String(f.text); n != 0 {
			t.Errorf("%s: the rules alone redact %q to %q; pick a value no rule knows", f.name, f.text, out)
		}
	}
}

func storedText(t *testing.T, h *harness.Harness) string {
	t.Helper()
	var b strings.Builder
	if _, err := h.DumpStore(context.Background(), "", &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRunObserveRedactsTheCheckoutsSecretValues(t *testing.T) {
	h, repo, _ := secretRepos(t)
	ctx := session("noter")
	st, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "notes", RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range forms(noteSecret) {
		got, err := h.RunObserve(ctx, harness.RunObserveArgs{RunID: st.RunID, Kind: "finding", Text: f.text})
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		o := got.Observations[len(got.Observations)-1]
		if strings.Contains(o.Text, f.form) || !strings.Contains(o.Text, "[REDACTED:known-secret]") {
			t.Errorf("%s: the note was stored as %q", f.name, o.Text)
		}
	}
	// The value as a note's kind.
	got, err := h.RunObserve(ctx, harness.RunObserveArgs{RunID: st.RunID, Kind: noteSecret, Text: "see the kind"})
	if err != nil {
		t.Fatal(err)
	}
	if k := got.Observations[len(got.Observations)-1].Kind; strings.Contains(k, noteSecret) {
		t.Errorf("the kind was stored as %q", k)
	}
	// Positive control: a note without secrets is stored verbatim.
	plain := "read internal/lease first; café ✓ — 3 tests fail (TestGrant, TestRevoke)\nsecond line"
	got, err = h.RunObserve(ctx, harness.RunObserveArgs{RunID: st.RunID, Kind: "plan", Text: plain})
	if err != nil {
		t.Fatal(err)
	}
	if o := got.Observations[len(got.Observations)-1]; o.Text != plain || o.Kind != "plan" {
		t.Errorf("a plain note was stored as %q / %q", o.Kind, o.Text)
	}
	if s := storedText(t, h); strings.Contains(s, noteSecret) || strings.Contains(s, base64.StdEncoding.EncodeToString([]byte(noteSecret))) {
		t.Error("the store holds the secret value")
	}
}

func TestRunClaimRedactsTheCheckoutsSecretValues(t *testing.T) {
	h, repo, other := secretRepos(t)
	ctx := session("claimer")
	st, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "claims", RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, claim, repo, secret string
	}{
		{"the run's checkout's value", "rotated the key, it was " + noteSecret, "", noteSecret},
		{"its base64", "posted " + base64.StdEncoding.EncodeToString([]byte(noteSecret)) + " to the wiki", "", noteSecret},
		{"another repository's value, claimed on it", "copied " + otherSecret + " over", other, otherSecret},
	}
	for _, c := range cases {
		res, err := h.RunClaim(ctx, harness.RunClaimArgs{RunID: st.RunID, Stage: "deploy", Claim: c.claim, RepoID: c.repo})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if strings.Contains(res.Claim.Claim, c.secret) || !strings.Contains(res.Claim.Claim, "[REDACTED:known-secret]") {
			t.Errorf("%s: the claim was stored as %q", c.name, res.Claim.Claim)
		}
	}
	got, err := h.RunStatus(ctx, harness.RunStatusArgs{RunID: st.RunID})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range got.Observations {
		if strings.Contains(o.Text, noteSecret) || strings.Contains(o.Text, otherSecret) {
			t.Errorf("the claim's note holds a secret: %q", o.Text)
		}
	}
	// Positive control: an ordinary claim is stored as written.
	plain := "go test ./... passes (42 tests); see check chk_1"
	res, err := h.RunClaim(ctx, harness.RunClaimArgs{RunID: st.RunID, Stage: "tests", Claim: plain})
	if err != nil || res.Claim.Claim != plain {
		t.Fatalf("a plain claim: %+v, %v", res, err)
	}
	if s := storedText(t, h); strings.Contains(s, noteSecret) || strings.Contains(s, otherSecret) {
		t.Error("the store holds a secret value")
	}
}

// The run's other texts a person reads: its goal, a blocked stage's reason,
// its end reason.
func TestRunReasonsRedactTheCheckoutsSecretValues(t *testing.T) {
	h, repo, _ := secretRepos(t)
	ctx := session("reasons")
	st, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "deploy with " + noteSecret, RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.Goal, noteSecret) {
		t.Errorf("goal stored as %q", st.Goal)
	}
	blocked, err := h.RunStage(ctx, harness.RunStageArgs{RunID: st.RunID, Stage: "deploy", Status: "blocked", Reason: "the token " + noteSecret + " is refused"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(blocked.BlockedReason, noteSecret) || !strings.Contains(blocked.BlockedReason, "is refused") {
		t.Errorf("blocked reason stored as %q", blocked.BlockedReason)
	}
	ended, err := h.RunEnd(ctx, harness.RunEndArgs{RunID: st.RunID, Reason: "done; " + noteSecret})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ended.EndReason, noteSecret) {
		t.Errorf("end reason stored as %q", ended.EndReason)
	}
	// Positive control.
	st2, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "fix the flaky test in internal/lease", RepoID: repo})
	if err != nil || st2.Goal != "fix the flaky test in internal/lease" {
		t.Fatalf("a plain goal: %+v, %v", st2, err)
	}
}

// ask files an approval request for `git ls-tree HEAD <path>` and returns
// its error.
func ask(ctx context.Context, h *harness.Harness, repo, path string) *errs.Error {
	_, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: repo, Argv: []string{"git", "ls-tree", "HEAD", path}})
	return errs.From(err)
}

func pendingOf(t *testing.T, h *harness.Harness, session string) []harness.Approval {
	t.Helper()
	l, err := h.Approvals(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []harness.Approval
	for _, a := range l.Approvals {
		if a.Session == session {
			out = append(out, a)
		}
	}
	return out
}

func TestApprovalFloodIsCappedPerSession(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	h, ids := openAsking(t, root)
	repo := ids[0]
	flood := session("flood")
	first := map[string]string{}
	for i := range govern.MaxPendingApprovals {
		e := ask(flood, h, repo, fmt.Sprintf("f%03d", i))
		id, _ := e.Details["approval_id"].(string)
		if e.Code != errs.ApprovalRequired || id == "" {
			t.Fatalf("ask %d of the first %d: %s %s, want APPROVAL_REQUIRED", i, govern.MaxPendingApprovals, e.Code, e.Message)
		}
		first[fmt.Sprintf("f%03d", i)] = id
	}
	for i := range 30 {
		e := ask(flood, h, repo, fmt.Sprintf("over%03d", i))
		if e.Code != errs.BudgetExceeded || e.Details["resource"] != "pending_approvals" || e.Details["scope"] != "session" {
			t.Fatalf("ask %d past the limit: %s %v, want BUDGET_EXCEEDED on pending_approvals", i, e.Code, e.Details)
		}
		if !strings.Contains(e.Message, "harness approvals") || !strings.Contains(e.Message, "expire") {
			t.Fatalf("the error does not name the way out: %s", e.Message)
		}
	}
	if n := len(pendingOf(t, h, "flood")); n != govern.MaxPendingApprovals {
		t.Fatalf("%d pending approvals of the session, want %d", n, govern.MaxPendingApprovals)
	}
	// Asking again for an input already pending answers that request:
	// nothing new is filed, so the limit does not stand in the way.
	if e := ask(flood, h, repo, "f007"); e.Code != errs.ApprovalRequired || e.Details["approval_id"] != first["f007"] {
		t.Fatalf("a retry of a pending input: %s %v, want APPROVAL_REQUIRED for %s", e.Code, e.Details, first["f007"])
	}
	// Another session is not held back by this one's requests.
	if e := ask(session("calm"), h, repo, "calm"); e.Code != errs.ApprovalRequired {
		t.Fatalf("another session's first ask: %s %s", e.Code, e.Message)
	}
	// A person's decision makes room for exactly one more.
	if _, err := h.DecideApproval(context.Background(), first["f000"], false, "tester", "no"); err != nil {
		t.Fatal(err)
	}
	if e := ask(flood, h, repo, "after-deny"); e.Code != errs.ApprovalRequired {
		t.Fatalf("after a person decided one: %s %s", e.Code, e.Message)
	}
	if e := ask(flood, h, repo, "after-deny-2"); e.Code != errs.BudgetExceeded {
		t.Fatalf("the next one: %s, want BUDGET_EXCEEDED", e.Code)
	}
	// The refusals are audited.
	a, err := h.Audit(context.Background(), harness.AuditArgs{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range a.Entries {
		if e.Kind == "rejection" && e.Code == string(errs.BudgetExceeded) && e.Session == "flood" {
			refused++
		}
	}
	if refused != 31 {
		t.Errorf("%d audited refusals, want 31", refused)
	}
}

// Concurrent asks all count below the limit before any is stored: the
// recount after storing keeps the session at the limit.
func TestApprovalFloodInParallelStaysAtTheCap(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	h, ids := openAsking(t, root)
	ctx := session("parallel")
	var wg sync.WaitGroup
	codes := make([]errs.Code, 3*govern.MaxPendingApprovals)
	for i := range codes {
		wg.Go(func() { codes[i] = ask(ctx, h, ids[0], fmt.Sprintf("p%03d", i)).Code })
	}
	wg.Wait()
	filed := 0
	for _, c := range codes {
		switch c {
		case errs.ApprovalRequired:
			filed++
		case errs.BudgetExceeded:
		default:
			t.Fatalf("an ask answered %s", c)
		}
	}
	pending := len(pendingOf(t, h, "parallel"))
	if pending > govern.MaxPendingApprovals || pending != filed || filed == 0 {
		t.Fatalf("%d filed, %d pending of a parallel flood; want the same number, at most %d", filed, pending, govern.MaxPendingApprovals)
	}
}

// A caller without a session (the JSON API, the library) is counted per
// repository.
func TestApprovalFloodWithoutASessionIsCappedPerRepository(t *testing.T) {
	a := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	b := testutil.Repo(t, map[string]string{"b.txt": "b\n"})
	h, ids := openAsking(t, a, b)
	ctx := context.Background()
	for i := range govern.MaxPendingApprovals {
		if e := ask(ctx, h, ids[0], fmt.Sprintf("r%03d", i)); e.Code != errs.ApprovalRequired {
			t.Fatalf("ask %d: %s %s", i, e.Code, e.Message)
		}
	}
	e := ask(ctx, h, ids[0], "one-more")
	if e.Code != errs.BudgetExceeded || e.Details["scope"] != "repository" {
		t.Fatalf("past the limit: %s %v, want BUDGET_EXCEEDED in the repository's scope", e.Code, e.Details)
	}
	if e := ask(ctx, h, ids[1], "other-repo"); e.Code != errs.ApprovalRequired {
		t.Fatalf("another repository: %s %s", e.Code, e.Message)
	}
	// A session's requests are its own.
	if e := ask(session("s"), h, ids[0], "in-a-session"); e.Code != errs.ApprovalRequired {
		t.Fatalf("a session on the same repository: %s %s", e.Code, e.Message)
	}
}
