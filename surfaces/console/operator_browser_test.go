package console_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/harnessd/harnessd/harness"
)

// TestBrowserOperatorLivesInTheConsole drives headless Chromium through
// what an operator does all day: approvals arrive while a page is open
// (the nav badge and the title count them, the approvals page inserts the
// card without a reload), several are denied at once with one reason, a
// job is cancelled, a write is reverted and a run ended from its page;
// the agents and policy pages show what they should.
func TestBrowserOperatorLivesInTheConsole(t *testing.T) {
	ctx := newBrowser(t)
	f := setup(t)
	base := f.srv.URL
	bg := context.Background()
	job := f.longJob(t, bg, "browser-long-job")

	step(t, ctx, "log in", chromedp.Navigate(base+"/ui/login"), chromedp.WaitVisible(chromedp.ID("token")))
	if s := text(t, ctx, "#token-path"); s == "" {
		t.Fatal("the login page names no token file")
	}
	step(t, ctx, "submit the token", chromedp.SendKeys(chromedp.ID("token"), testToken), chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("no-approvals")))

	// On another page, a new approval shows in the badge and the title.
	step(t, ctx, "open the jobs", chromedp.Navigate(base+"/ui/jobs"), chromedp.WaitVisible(chromedp.ID("jobs")))
	waitText(t, ctx, "#pending-count", "0")
	a1 := f.askApproval(t, []string{"git", "ls-tree", "HEAD"})
	waitText(t, ctx, "#pending-count", "1")
	waitText(t, ctx, "title", "(1) Jobs")

	// On the approvals page, the next one appears without a reload.
	step(t, ctx, "open the approvals", chromedp.Navigate(base+"/ui/approvals"), chromedp.WaitVisible(chromedp.ID("approval-"+a1)))
	step(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.notReloaded = "yes"`))
	a2 := f.askApproval(t, []string{"git", "ls-tree", "-r", "HEAD"})
	waitText(t, ctx, "#approval-"+a2, "git ls-tree -r HEAD")
	waitText(t, ctx, "title", "(2) Approvals")
	if s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.notReloaded)`)); err != nil || s != "yes" {
		t.Fatalf("the page reloaded to show the new approval (%q, %v)", s, err)
	}
	screenshot(t, ctx, "approvals-live")

	// Deny both at once with one reason.
	step(t, ctx, "select both and deny", chromedp.Click(chromedp.ID("pick-"+a1)), chromedp.Click(chromedp.ID("pick-"+a2)),
		chromedp.SendKeys(chromedp.ID("bulk-reason"), "not in this sprint"), chromedp.Click(chromedp.ID("bulk-deny")))
	waitText(t, ctx, "#results", a2+" denied")
	waitText(t, ctx, "#results", a1+" denied")
	for _, id := range []string{a1, a2} {
		if a := f.approval(t, id); a.Status != harness.ApprovalDenied || a.DenyReason != "not in this sprint" {
			t.Fatalf("%s = %s (%q)", id, a.Status, a.DenyReason)
		}
	}
	waitText(t, ctx, "#pending-count", "0")

	// Cancel the job from its page.
	step(t, ctx, "open the job", chromedp.Navigate(base+"/ui/jobs/"+job), chromedp.WaitVisible(chromedp.ID("cancel-job")))
	step(t, ctx, "cancel it", chromedp.Click(chromedp.ID("cancel-job")))
	waitText(t, ctx, "#flash", job+" cancelled.")
	f.waitJob(t, job, "cancelled")
	waitText(t, ctx, "#job-state", "cancelled")

	// A run that wrote: its page shows the write's diff; revert it, then
	// end the run.
	runID, receipt := f.runWrite(t, "rename the greeting")
	if _, err := f.h.RunObserve(bg, harness.RunObserveArgs{RunID: runID, Kind: "decision", Text: "a.txt should say b"}); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "open the run", chromedp.Navigate(base+"/ui/runs/"+runID), chromedp.WaitVisible(chromedp.ID("receipts")))
	waitText(t, ctx, "#receipt-"+receipt, "+b")
	waitText(t, ctx, "#observations", "a.txt should say b")
	screenshot(t, ctx, "run-detail")
	step(t, ctx, "revert the write", chromedp.Click(chromedp.ID("revert-"+receipt)))
	waitText(t, ctx, "#flash", receipt+" reverted")
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "a\n" {
		t.Fatalf("after the revert a.txt = %q", b)
	}
	step(t, ctx, "end the run", chromedp.SendKeys(chromedp.CSS("#end-run-form input[name=reason]"), "handled by a person"),
		chromedp.Click(chromedp.ID("end-run")))
	waitText(t, ctx, "#run-status", "ended")
	waitText(t, ctx, "#flash", runID+" ended.")
	if st, _ := f.h.RunStatus(bg, harness.RunStatusArgs{RunID: runID}); st.EndReason != "handled by a person" {
		t.Fatalf("the run ended with %q", st.EndReason)
	}

	// The runs list follows a run that starts while it is open.
	step(t, ctx, "open the runs", chromedp.Navigate(base+"/ui/runs"), chromedp.WaitVisible(chromedp.ID("runs")))
	claude := harness.WithCaller(bg, harness.Caller{Client: harness.Client{Name: "claude-code", Version: "1.0"}})
	live, err := f.h.RunStart(claude, harness.RunStartArgs{Goal: "arrives while the list is open"})
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#runs", live.RunID)

	step(t, ctx, "open the agents", chromedp.Navigate(base+"/ui/clients"), chromedp.WaitVisible(chromedp.ID("clients")))
	waitText(t, ctx, "#clients", "claude-code 1.0")
	screenshot(t, ctx, "clients")
	step(t, ctx, "open the policy", chromedp.Navigate(base+"/ui/policy"), chromedp.WaitVisible(chromedp.ID("rules")))
	waitText(t, ctx, "#rule-ask-before-ls-tree", "does not match")
	screenshot(t, ctx, "policy")
}
