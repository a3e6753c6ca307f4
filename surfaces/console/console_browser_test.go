package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// chromium finds the browser: skipped when absent, unless
// HARNESSD_REQUIRE_CHROMIUM=1 (CI) makes its absence a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("HARNESSD_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("HARNESSD_REQUIRE_CHROMIUM=1 but no chromium on PATH: install Debian's chromium package (.ci/run does)")
	}
	t.Skip("no chromium on PATH (set HARNESSD_REQUIRE_CHROMIUM=1 to make this a failure)")
	return ""
}

// newBrowser starts headless Chromium with a 1200x800 window.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.WindowSize(1200, 800),
		chromedp.DisableGPU,
		// Only for this test: Chromium refuses to start as root with its
		// own sandbox (CI and this machine run tests as root), and the page
		// it opens is our own console on 127.0.0.1. A person's browser
		// keeps its sandbox.
		chromedp.NoSandbox,
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// step runs actions with a deadline.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitText waits until the element's text contains want. It asks the
// page again and again rather than with one Poll, because a click that
// submits a form replaces the page (and its JavaScript context) under a
// running Poll.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	js := `(document.querySelector(` + jsString(sel) + `) || {textContent: ""}).textContent`
	deadline := time.Now().Add(30 * time.Second)
	got := ""
	for time.Now().Before(deadline) {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := chromedp.Run(sctx, chromedp.Evaluate[string](js))
		cancel()
		if err == nil {
			if got = s; strings.Contains(s, want) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond) // polling the browser, not an actor
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	t.Fatalf("%s never showed %q (it shows %q); the browser is at %s:\n%.3000s", sel, want, got, loc, html)
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// screenshot writes the viewport as <HARNESSD_SCREENSHOTS>/<name>.png when
// that variable is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("HARNESSD_SCREENSHOTS")
	if dir == "" {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserApprovesAndTheAgentsRetrySucceeds drives headless Chromium
// through the console as a person would: a wrong token is refused; the
// login opens the approvals, which show the patch's diff and the command's
// argv; a click approves, and the agent's retry with the approval_id runs.
// A forged POST without the CSRF token is refused; a job's log lines
// arrive on its page over SSE while it runs; the runs, audit and status
// pages show what they should.
func TestBrowserApprovesAndTheAgentsRetrySucceeds(t *testing.T) {
	ctx := newBrowser(t)
	f := setup(t)
	base := f.srv.URL

	// The agent asks for two operations the policy sends to a person.
	aprCmd := f.askApproval(t, []string{"git", "ls-tree", "HEAD"})
	aprPatch, patchArgs := f.askPatch(t, "console-browser-patch", "Start here.", "Start with the console: <b>/ui</b>.")

	// Not logged in: every page leads to the login.
	step(t, ctx, "open the console", chromedp.Navigate(base+"/ui"), chromedp.WaitVisible(chromedp.ID("token")))
	screenshot(t, ctx, "login")
	// A wrong token is refused.
	step(t, ctx, "log in with a wrong token",
		chromedp.SendKeys(chromedp.ID("token"), "not-the-token"), chromedp.Click(chromedp.ID("login-submit")))
	waitText(t, ctx, "#flash", "Wrong token")
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(loc, "/ui/login") {
		t.Fatalf("after a wrong token the browser is at %s", loc)
	}
	// The right one opens the approvals.
	step(t, ctx, "log in", chromedp.SendKeys(chromedp.ID("token"), testToken), chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("approval-"+aprCmd)))
	cmdCard := text(t, ctx, "#approval-"+aprCmd)
	for _, want := range []string{"run_command", "git ls-tree HEAD", "ask-before-ls-tree", "risk"} {
		if !strings.Contains(cmdCard, want) {
			t.Fatalf("the command's approval does not show %q:\n%s", want, cmdCard)
		}
	}
	patchCard := text(t, ctx, "#approval-"+aprPatch+" .diff")
	for _, want := range []string{"replace docs/guide.md", "- Start here.", "+ Start with the console: <b>/ui</b>."} {
		if !strings.Contains(patchCard, want) {
			t.Fatalf("the patch's approval does not show %q:\n%s", want, patchCard)
		}
	}
	screenshot(t, ctx, "approvals")

	// An attacker's script in the page's origin without the CSRF token
	// (the session cookie goes along) is refused.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	status, err := chromedp.Run(sctx, chromedp.Evaluate[int](`fetch("/ui/approvals/`+aprCmd+`/approve", {method: "POST", body: new URLSearchParams({reason: "x"})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	cancel()
	if err != nil || status != 403 {
		t.Fatalf("a POST without the CSRF token: %d, %v, want 403", status, err)
	}
	if a := f.approval(t, aprCmd); a.Status != harness.ApprovalPending {
		t.Fatalf("after the forged POST the approval is %s", a.Status)
	}

	// Approve both by clicking; the agent's retries succeed.
	step(t, ctx, "approve the command", chromedp.Click(chromedp.ID("approve-"+aprCmd)))
	waitText(t, ctx, "#flash", aprCmd+" approved")
	step(t, ctx, "approve the patch", chromedp.Click(chromedp.ID("approve-"+aprPatch)))
	waitText(t, ctx, "#flash", aprPatch+" approved")
	if a := f.approval(t, aprCmd); a.Status != harness.ApprovalApproved || a.DecidedBy != "console" {
		t.Fatalf("approval = %s by %q, want approved by console", a.Status, a.DecidedBy)
	}
	res, e := f.agentCall(t, "run_command", map[string]any{"repo_id": f.repoID, "argv": []string{"git", "ls-tree", "HEAD"}, "approval_id": aprCmd})
	if e != nil {
		t.Fatalf("the agent's retry of run_command: %v", e)
	}
	if out, _ := res["stdout"].(map[string]any); !strings.Contains(out["text"].(string), "a.txt") {
		t.Fatalf("the retry's output: %v", res["stdout"])
	}
	patchArgs["approval_id"] = aprPatch
	if _, e := f.agentCall(t, "apply_patch", patchArgs); e != nil {
		t.Fatalf("the agent's retry of apply_patch: %v", e)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "docs/guide.md")); !strings.Contains(string(b), "Start with the console") {
		t.Fatalf("the approved patch was not applied: %q", b)
	}

	// A run with spans.
	bg := context.Background()
	run, err := f.h.RunStart(bg, harness.RunStartArgs{Goal: "tidy the docs"})
	if err != nil {
		t.Fatal(err)
	}
	rctx := harness.WithRun(bg, run.RunID)
	if _, err := f.h.GitStatus(rctx, harness.GitStatusArgs{RepoID: f.repoID}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.ReadFile(rctx, harness.ReadFileArgs{RepoID: f.repoID, Path: "docs/guide.md"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.GitDiff(rctx, harness.GitDiffArgs{RepoID: f.repoID}); err != nil {
		t.Fatal(err)
	}

	// A writing job that prints, then waits for a file the test creates
	// only after the page showed the first line: the second line can reach
	// the page only live.
	j, err := f.h.JobStart(bg, harness.JobStartArgs{RepoID: f.repoID, RequestID: "console-browser-job", Writes: true,
		Argv: []string{"sh", "-c", `echo "building step 1"; i=0; while [ ! -e go.flag ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo "building step 2"; echo "warning: done" >&2`}})
	if err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "open the jobs", chromedp.Navigate(base+"/ui/jobs"), chromedp.WaitVisible(chromedp.ID("jobs")))
	if s := text(t, ctx, "#jobs"); !strings.Contains(s, j.JobID) {
		t.Fatalf("the jobs page does not list %s:\n%s", j.JobID, s)
	}
	step(t, ctx, "open the job", chromedp.Navigate(base+"/ui/jobs/"+j.JobID), chromedp.WaitVisible(chromedp.ID("stdout")))
	waitText(t, ctx, "#stdout", "building step 1")
	if s := text(t, ctx, "#stdout"); strings.Contains(s, "building step 2") {
		t.Fatal("the second line is there before the job was let go on")
	}

	// While the job runs it holds the workspace lease.
	step(t, ctx, "open the status", chromedp.Navigate(base+"/ui/status"), chromedp.WaitVisible(chromedp.ID("sandbox")))
	if s := text(t, ctx, "#leases"); !strings.Contains(s, "workspace:") {
		t.Fatalf("the status page does not show the job's lease:\n%s", s)
	}
	if s := text(t, ctx, "#sandbox"); !strings.Contains(s, "read") || !strings.Contains(s, "job") {
		t.Fatalf("the status page does not show the sandbox profiles:\n%s", s)
	}
	screenshot(t, ctx, "status")

	step(t, ctx, "reopen the job", chromedp.Navigate(base+"/ui/jobs/"+j.JobID), chromedp.WaitVisible(chromedp.ID("stdout")))
	waitText(t, ctx, "#stdout", "building step 1")
	testutil.WriteFile(t, f.root, "go.flag", "")
	waitText(t, ctx, "#stdout", "building step 2")
	waitText(t, ctx, "#stderr", "warning: done")
	waitText(t, ctx, "#live", "ended: succeeded")
	screenshot(t, ctx, "job")
	step(t, ctx, "list the jobs", chromedp.Navigate(base+"/ui/jobs"), chromedp.WaitVisible(chromedp.ID("jobs")))
	screenshot(t, ctx, "jobs")

	// The run's timeline.
	step(t, ctx, "open the runs", chromedp.Navigate(base+"/ui/runs"), chromedp.WaitVisible(chromedp.ID("runs")))
	if s := text(t, ctx, "#runs"); !strings.Contains(s, run.RunID) || !strings.Contains(s, "tidy the docs") {
		t.Fatalf("the runs page does not list the run:\n%s", s)
	}
	screenshot(t, ctx, "runs")
	step(t, ctx, "open the run", chromedp.Navigate(base+"/ui/runs/"+run.RunID), chromedp.WaitVisible(chromedp.ID("timeline")))
	tl := text(t, ctx, "#timeline")
	for _, want := range []string{"git_status", "read_file", "git_diff"} {
		if !strings.Contains(tl, want) {
			t.Fatalf("the timeline lacks %s:\n%s", want, tl)
		}
	}
	// The page follows the run: a new span appears without a click.
	if _, err := f.h.GitStatus(rctx, harness.GitStatusArgs{RepoID: f.repoID}); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#span-count", "4 spans")
	screenshot(t, ctx, "run")

	// The audit log and its verification.
	step(t, ctx, "open the audit log", chromedp.Navigate(base+"/ui/audit"), chromedp.WaitVisible(chromedp.ID("audit")))
	if s := text(t, ctx, "#audit"); !strings.Contains(s, "approved") || !strings.Contains(s, "console") {
		t.Fatalf("the audit log does not show the console's decisions:\n%s", s)
	}
	step(t, ctx, "verify the chain", chromedp.Click(chromedp.ID("verify")), chromedp.WaitVisible(chromedp.ID("verify-result")))
	if s := text(t, ctx, "#verify-result"); !strings.Contains(s, "Chain intact") {
		t.Fatalf("verify: %s", s)
	}
	screenshot(t, ctx, "audit")

	// Log out: the pages lead to the login again.
	step(t, ctx, "log out", chromedp.Click(chromedp.CSS(".logout button")), chromedp.WaitVisible(chromedp.ID("token")))
	step(t, ctx, "open the approvals logged out", chromedp.Navigate(base+"/ui/approvals"), chromedp.WaitVisible(chromedp.ID("token")))
}
