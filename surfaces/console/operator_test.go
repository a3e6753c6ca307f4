package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/console"
)

// waitJob waits (with a deadline) until the job reaches state.
func (f *fixture) waitJob(t *testing.T, id, state string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := f.h.JobStatus(context.Background(), harness.JobStatusArgs{JobID: id})
		if err == nil && j.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never reached %s (last %+v, %v)", id, state, j, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the job's record, not an actor's mailbox
	}
}

// longJob starts a job that runs until cancelled (at most a minute).
func (f *fixture) longJob(t *testing.T, ctx context.Context, requestID string) string {
	t.Helper()
	j, err := f.h.JobStart(ctx, harness.JobStartArgs{RepoID: f.repoID, RequestID: requestID, Argv: []string{"sh", "-c", "sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	f.waitJob(t, j.JobID, "running")
	t.Cleanup(func() { _, _ = f.h.JobCancel(context.Background(), harness.JobCancelArgs{JobID: j.JobID}) })
	return j.JobID
}

// runWrite starts a run and makes one write in it (a.txt: a -> b).
func (f *fixture) runWrite(t *testing.T, goal string) (runID, receiptID string) {
	t.Helper()
	ctx := context.Background()
	run, err := f.h.RunStart(ctx, harness.RunStartArgs{Goal: goal})
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.h.ApplyPatch(harness.WithRun(ctx, run.RunID), harness.ApplyPatchArgs{RepoID: f.repoID, RequestID: "write-" + run.RunID,
		Operations: []patch.Op{{Op: "replace", Path: "a.txt", OldText: "a", NewText: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	return run.RunID, w.ReceiptID
}

// TestEveryNewActionRefusesWithoutTheSessionAndItsCSRFToken posts each
// new action as an attacker would: without the CSRF token, with another
// session's, from another origin, and without a session. Nothing changes.
func TestEveryNewActionRefusesWithoutTheSessionAndItsCSRFToken(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	apr := f.askApproval(t, []string{"git", "ls-tree", "HEAD"})
	job := f.longJob(t, ctx, "csrf-job")
	runID, receipt := f.runWrite(t, "csrf run")

	victim := f.browser(t)
	csrf := victim.login(testToken)
	other := f.browser(t)
	otherCSRF := other.login(testToken)
	anon := f.browser(t)
	actions := []struct {
		path string
		form url.Values
	}{
		{"/ui/approvals/bulk", url.Values{"ids": {apr}, "decision": {"approve"}}},
		{"/ui/jobs/" + job + "/cancel", url.Values{}},
		{"/ui/runs/" + runID + "/end", url.Values{"reason": {"x"}}},
		{"/ui/receipts/" + receipt + "/revert", url.Values{"repo_id": {f.repoID}, "run_id": {runID}}},
	}
	with := func(v url.Values, k, val string) url.Values {
		out := url.Values{}
		for kk, vv := range v {
			out[kk] = vv
		}
		if k != "" {
			out.Set(k, val)
		}
		return out
	}
	for _, a := range actions {
		for _, at := range []struct {
			name string
			b    *browser
			form url.Values
			hdr  map[string]string
			want int
		}{
			{"no CSRF token", victim, with(a.form, "", ""), nil, http.StatusForbidden},
			{"another session's token", victim, with(a.form, "csrf", otherCSRF), nil, http.StatusForbidden},
			{"a cross-origin form", victim, with(a.form, "csrf", csrf), map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
			{"no session", anon, with(a.form, "csrf", csrf), nil, http.StatusUnauthorized},
		} {
			if resp, _ := at.b.do("POST", a.path, at.form, at.hdr); resp.StatusCode != at.want {
				t.Errorf("POST %s with %s: %d, want %d", a.path, at.name, resp.StatusCode, at.want)
			}
		}
	}
	if a := f.approval(t, apr); a.Status != harness.ApprovalPending {
		t.Errorf("the approval is %s", a.Status)
	}
	if j, _ := f.h.JobStatus(ctx, harness.JobStatusArgs{JobID: job}); j.State != "running" {
		t.Errorf("the job is %s", j.State)
	}
	if st, _ := f.h.RunStatus(ctx, harness.RunStatusArgs{RunID: runID}); st.Status != "active" {
		t.Errorf("the run is %s", st.Status)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "b\n" {
		t.Errorf("a.txt = %q: the write was reverted", b)
	}
}

var resultRE = regexp.MustCompile(`(?s)<ul class="results" id="results">(.*?)</ul>`)

// TestActionsShowTheirResultOrError runs each action over HTTP as the
// page's forms do and reads what the page says.
func TestActionsShowTheirResultOrError(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	b := f.browser(t)
	csrf := b.login(testToken)

	// Cancel a job.
	job := f.longJob(t, ctx, "action-job")
	resp, _ := b.post("/ui/jobs/"+job+"/cancel", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	f.waitJob(t, job, "cancelled")
	if _, body := b.get(resp.Header.Get("Location")); !strings.Contains(body, job+" cancelled.") {
		t.Errorf("the job page does not say it was cancelled:\n%.2000s", body)
	}
	// Revert a write, then end its run.
	runID, receipt := f.runWrite(t, "write then undo")
	resp, body := b.post("/ui/receipts/"+receipt+"/revert", url.Values{"csrf": {csrf}, "repo_id": {f.repoID}, "run_id": {runID}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/runs/"+runID+"?done=reverted:"+receipt {
		t.Fatalf("revert: %d %q\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "a\n" {
		t.Fatalf("after the revert a.txt = %q", b)
	}
	if _, body := b.get(resp.Header.Get("Location")); !strings.Contains(body, receipt+" reverted") {
		t.Errorf("the run page does not say the write was reverted:\n%.3000s", body)
	}
	resp, _ = b.post("/ui/runs/"+runID+"/end", url.Values{"csrf": {csrf}, "reason": {"done by hand"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("end: %d", resp.StatusCode)
	}
	if st, _ := f.h.RunStatus(ctx, harness.RunStatusArgs{RunID: runID}); st.Status != "ended" || st.EndReason != "done by hand" {
		t.Fatalf("the run is %s (%q)", st.Status, st.EndReason)
	}
	// Errors show their stable code and message.
	for _, tt := range []struct {
		path string
		form url.Values
		code errs.Code
	}{
		{"/ui/receipts/rcpt_nope_1/revert", url.Values{"repo_id": {f.repoID}}, errs.NotFound},
		{"/ui/jobs/not-a-job/cancel", url.Values{}, errs.InvalidArgument},
		{"/ui/approvals/bulk", url.Values{"decision": {"approve"}}, errs.InvalidArgument},
		{"/ui/approvals/bulk", url.Values{"decision": {"maybe"}, "ids": {"apr_00"}}, errs.InvalidArgument},
		{"/ui/approvals/bulk", url.Values{"decision": {"deny"}, "ids": {"apr_00"}}, errs.InvalidArgument}, // no reason
	} {
		tt.form.Set("csrf", csrf)
		resp, body := b.post(tt.path, tt.form)
		if resp.StatusCode < 400 || !strings.Contains(body, `<code class="code">`+string(tt.code)+`</code>`) {
			t.Errorf("POST %s %v: %d, want the %s error shown:\n%.1500s", tt.path, tt.form, resp.StatusCode, tt.code, body)
		}
	}
	// Bulk: two approved, one denied, each with the one reason; an id
	// decided already shows its own error beside the others' outcome.
	a1 := f.askApproval(t, []string{"git", "ls-tree", "HEAD"})
	a2 := f.askApproval(t, []string{"git", "ls-tree", "-r", "HEAD"})
	a3 := f.askApproval(t, []string{"git", "ls-tree", "--name-only", "HEAD"})
	resp, body = b.post("/ui/approvals/bulk", url.Values{"csrf": {csrf}, "ids": {a1, a2}, "decision": {"approve"}, "reason": {"reviewed together"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bulk approve: %d", resp.StatusCode)
	}
	m := resultRE.FindStringSubmatch(body)
	if m == nil || !strings.Contains(m[1], a1+"</code> approved") || !strings.Contains(m[1], a2+"</code> approved") {
		t.Fatalf("bulk results:\n%.3000s", body)
	}
	for _, id := range []string{a1, a2} {
		if a := f.approval(t, id); a.Status != harness.ApprovalApproved || a.DecidedBy != "console" {
			t.Errorf("%s = %s by %s", id, a.Status, a.DecidedBy)
		}
	}
	_, body = b.post("/ui/approvals/bulk", url.Values{"csrf": {csrf}, "ids": {a3, a1}, "decision": {"deny"}, "reason": {"not now"}})
	m = resultRE.FindStringSubmatch(body)
	if m == nil || !strings.Contains(m[1], a3+"</code> denied") || !strings.Contains(m[1], string(errs.InvalidArgument)) {
		t.Fatalf("bulk deny with one decided already:\n%.3000s", body)
	}
	if a := f.approval(t, a3); a.Status != harness.ApprovalDenied || a.DenyReason != "not now" {
		t.Errorf("%s = %+v", a3, a)
	}
	if a := f.approval(t, a1); a.Status != harness.ApprovalApproved {
		t.Errorf("a denial after the approval changed %s to %s", a1, a.Status)
	}
}

// TestRunPageShowsWritesObservationsApprovalsAndJobs opens a run that
// observed, wrote, asked and started a job.
func TestRunPageShowsWritesObservationsApprovalsAndJobs(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	runID, receipt := f.runWrite(t, "the whole run")
	rctx := harness.WithRun(ctx, runID)
	if _, err := f.h.RunObserve(ctx, harness.RunObserveArgs{RunID: runID, Kind: "finding", Text: "key " + secretValue + " <b>found</b>"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.h.RunCommand(rctx, harness.RunCommandArgs{RepoID: f.repoID, Argv: []string{"git", "ls-tree", "HEAD"}})
	var apr string
	if e := errs.From(err); e.Code == errs.ApprovalRequired {
		apr, _ = e.Details["approval_id"].(string)
	}
	if apr == "" {
		t.Fatalf("run_command in the run: %v, want APPROVAL_REQUIRED", err)
	}
	j, err := f.h.JobStart(rctx, harness.JobStartArgs{RepoID: f.repoID, RequestID: "run-page-job", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	b := f.browser(t)
	b.login(testToken)
	resp, body := b.get("/ui/runs/" + runID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run page: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`id="observations"`, "finding", "&lt;b&gt;found&lt;/b&gt;",
		`id="receipt-` + receipt + `"`, `<span class="l del">-a</span>`, `<span class="l add">&#43;b</span>`, `id="revert-` + receipt + `"`,
		`id="approval-` + apr + `"`, `<a href="/ui/jobs/` + j.JobID + `">`,
		`id="end-run"`, `title="` + f.repoID,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if strings.Contains(body, secretValue) {
		t.Error("the run page shows the secret value")
	}
}

// TestFiltersAreLinks filters each list page by repository name, state,
// client and time with query parameters.
func TestFiltersAreLinks(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	otherRoot := testutil.Repo(t, map[string]string{"z.txt": "z\n"})
	other, err := f.h.RegisterRepository(ctx, harness.RegisterArgs{Path: otherRoot})
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := filepath.Base(f.root), filepath.Base(otherRoot)
	claude := harness.WithCaller(ctx, harness.Caller{Client: harness.Client{Name: "claude-code", Version: "1.0"}})
	codex := harness.WithCaller(ctx, harness.Caller{Client: harness.Client{Name: "codex", Version: "0.5"}})
	r1, err := f.h.RunStart(claude, harness.RunStartArgs{Goal: "claude's run", RepoID: f.repoID})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := f.h.RunStart(codex, harness.RunStartArgs{Goal: "codex's run", RepoID: other.ID})
	if err != nil {
		t.Fatal(err)
	}
	j1, err := f.h.JobStart(harness.WithRun(claude, r1.RunID), harness.JobStartArgs{RepoID: f.repoID, RequestID: "flt-1", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	j2, err := f.h.JobStart(harness.WithRun(codex, r2.RunID), harness.JobStartArgs{RepoID: other.ID, RequestID: "flt-2", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	f.waitJob(t, j1.JobID, "succeeded")
	f.waitJob(t, j2.JobID, "succeeded")
	apr := f.askApproval(t, []string{"git", "ls-tree", "HEAD"})
	_, err = f.h.RunCommand(harness.WithRun(codex, r2.RunID), harness.RunCommandArgs{RepoID: other.ID, Argv: []string{"git", "ls-tree", "HEAD"}})
	codexApr, _ := errs.From(err).Details["approval_id"].(string)
	if codexApr == "" {
		t.Fatalf("codex's run_command: %v, want APPROVAL_REQUIRED", err)
	}
	b := f.browser(t)
	b.login(testToken)
	q := url.QueryEscape
	for _, tt := range []struct {
		path        string
		want, avoid []string
	}{
		{"/ui/jobs?repo=" + q(mine), []string{j1.JobID}, []string{j2.JobID}},
		{"/ui/jobs?repo=" + q(other.ID), []string{j2.JobID}, []string{j1.JobID}},
		{"/ui/jobs?client=codex", []string{j2.JobID}, []string{j1.JobID}},
		{"/ui/jobs?state=failed", nil, []string{j1.JobID, j2.JobID}},
		{"/ui/jobs?since=1h", []string{j1.JobID, j2.JobID}, nil},
		{"/ui/jobs?until=2000-01-01", nil, []string{j1.JobID, j2.JobID}},
		{"/ui/runs?client=claude", []string{r1.RunID}, []string{r2.RunID}},
		{"/ui/runs?repo=" + q(theirs), []string{r2.RunID}, []string{r1.RunID}},
		{"/ui/runs?state=ended", nil, []string{r1.RunID, r2.RunID}},
		{"/ui/approvals?repo=" + q(mine), []string{apr}, []string{codexApr}},
		{"/ui/approvals?repo=" + q(theirs), []string{codexApr}, []string{apr}},
		{"/ui/approvals?client=codex", []string{codexApr}, []string{apr}},
		{"/ui/approvals?state=pending&since=10m", []string{apr, codexApr}, nil},
		{"/ui/approvals?state=denied", nil, []string{apr, codexApr}},
		{"/ui/audit?client=codex", []string{"codex 0.5", "ask-before-ls-tree"}, []string{"job_start"}},
		{"/ui/audit?kind=ask&repo=" + q(mine), []string{"ask-before-ls-tree"}, []string{"codex 0.5", "job_start"}},
		{"/ui/clients?client=codex", []string{"codex 0.5", r2.RunID}, []string{r1.RunID}},
	} {
		resp, body := b.get(tt.path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", tt.path, resp.StatusCode)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %s", tt.path, w)
			}
		}
		for _, a := range tt.avoid {
			if strings.Contains(body, a) {
				t.Errorf("GET %s shows %s", tt.path, a)
			}
		}
		// The filter stays in the form: the view is a link.
		if u, _ := url.Parse(tt.path); u.RawQuery != "" {
			for k, v := range u.Query() {
				if k != "kind" && !strings.Contains(body, `name="`+k+`" value="`+v[0]+`"`) {
					t.Errorf("GET %s: the form does not keep %s=%s", tt.path, k, v[0])
				}
			}
		}
	}
	// Repositories are named by their root, the id in the title.
	if _, body := b.get("/ui/jobs"); !strings.Contains(body, `<span class="repo" title="`+f.repoID+` · `+f.root+`">`+mine+`</span>`) {
		t.Errorf("the jobs page does not name the repository by its root:\n%.3000s", body)
	}
	for _, p := range []string{"/ui/jobs?since=yesterday", "/ui/runs?since=2h&until=3h", "/ui/audit?before_seq=x", "/ui/approvals?until=soon"} {
		resp, body := b.get(p)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, string(errs.InvalidArgument)) {
			t.Errorf("GET %s: %d, want 400 INVALID_ARGUMENT", p, resp.StatusCode)
		}
	}
}

var seqRE = regexp.MustCompile(`<tr><td>([0-9]+)</td>`)

func auditSeqs(body string) []int {
	var out []int
	for _, m := range seqRE.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// TestAuditNewestFirst reads the audit page newest first, its next page
// and the oldest-first view.
func TestAuditNewestFirst(t *testing.T) {
	f := setup(t)
	for i := range 5 {
		f.askApproval(t, []string{"git", "ls-tree", "HEAD", strconv.Itoa(i)})
	}
	b := f.browser(t)
	b.login(testToken)
	_, body := b.get("/ui/audit")
	seqs := auditSeqs(body)
	if len(seqs) < 5 {
		t.Fatalf("audit page: %v", seqs)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] >= seqs[i-1] {
			t.Fatalf("not newest first: %v", seqs)
		}
	}
	if !strings.Contains(body, `href="/ui/audit?order=oldest"`) {
		t.Error("no link to oldest first")
	}
	_, body = b.get("/ui/audit?order=oldest")
	old := auditSeqs(body)
	if len(old) != len(seqs) || old[0] != seqs[len(seqs)-1] || old[len(old)-1] != seqs[0] {
		t.Fatalf("oldest first %v, newest first %v", old, seqs)
	}
	_, body = b.get("/ui/audit?before_seq=" + strconv.Itoa(seqs[1]))
	if page := auditSeqs(body); len(page) == 0 || page[0] != seqs[2] {
		t.Fatalf("the page before #%d: %v", seqs[1], page)
	}
}

// TestPolicyAndAgentsPages shows the rules with their examples and each
// agent with its runs.
func TestPolicyAndAgentsPages(t *testing.T) {
	f := setup(t)
	b := f.browser(t)
	b.login(testToken)
	_, body := b.get("/ui/policy")
	for _, want := range []string{`id="rule-ask-before-ls-tree"`, "someone should look first", `<span class="badge decision-ask">ask</span>`,
		"git ls-tree HEAD", "does not match", "git status", `id="rule-ask-before-docs"`, "docs/**", "sha256:"} {
		if !strings.Contains(body, want) {
			t.Errorf("the policy page lacks %q", want)
		}
	}
	ctx := harness.WithCaller(context.Background(), harness.Caller{Client: harness.Client{Name: "cursor", Version: "3"}})
	run, err := f.h.RunStart(ctx, harness.RunStartArgs{Goal: "cursor's goal"})
	if err != nil {
		t.Fatal(err)
	}
	_, body = b.get("/ui/clients")
	for _, want := range []string{"cursor 3", run.RunID, "cursor&#39;s goal", "1 active"} {
		if !strings.Contains(body, want) {
			t.Errorf("the agents page lacks %q:\n%.3000s", want, body)
		}
	}
}

// TestLoginNamesTheTokenFile: the login page names the real token path.
func TestLoginNamesTheTokenFile(t *testing.T) {
	f := setup(t)
	const path = "/var/lib/harnessd/token"
	srv := httptest.NewServer(console.New(f.h, testToken, console.Options{TokenPath: path}))
	defer srv.Close()
	b := f.browser(t)
	b.url = srv.URL
	if _, body := b.get("/ui/login"); !strings.Contains(body, `<code id="token-path">`+path+`</code>`) {
		t.Fatalf("the login page does not name %s:\n%s", path, body)
	}
	resp, body := b.post("/ui/login", url.Values{"token": {"wrong"}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Paste the contents of "+path) {
		t.Fatalf("a wrong token's page does not name %s:\n%s", path, body)
	}
}

// nextEvent reads the next event of a stream, skipping comments.
func nextEvent(t *testing.T, sc *bufio.Scanner) (name, data string) {
	t.Helper()
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			name = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			data += strings.TrimPrefix(l, "data: ")
		case l == "" && name != "":
			return name, data
		}
	}
	t.Fatalf("the stream ended: %v", sc.Err())
	return "", ""
}

// TestEventsStreamNewApprovals reads /ui/events as the page does: the
// pending count at once, then each new approval.
func TestEventsStreamNewApprovals(t *testing.T) {
	f := setup(t)
	srv := httptest.NewServer(console.New(f.h, testToken, console.Options{Poll: 50 * time.Millisecond}))
	defer srv.Close()
	b := f.browser(t)
	b.url = srv.URL
	b.login(testToken)
	if resp, _ := f.browser(t).get("/ui/events"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("events without a session: %d, want 401", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/events", nil)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %s", resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	type ev struct {
		Pending int      `json:"pending"`
		IDs     []string `json:"ids"`
		New     []struct{ ID, Operation, Summary string }
	}
	read := func() ev {
		name, data := nextEvent(t, sc)
		var e ev
		if name != "approvals" || json.Unmarshal([]byte(data), &e) != nil {
			t.Fatalf("event %s %q", name, data)
		}
		return e
	}
	if e := read(); e.Pending != 0 {
		t.Fatalf("first event: %+v", e)
	}
	apr := f.askApproval(t, []string{"git", "ls-tree", "HEAD", secretValue})
	e := read()
	if e.Pending != 1 || len(e.New) != 1 || e.New[0].ID != apr || e.New[0].Operation != "run_command" || !strings.Contains(e.New[0].Summary, "ls-tree") {
		t.Fatalf("after a new approval: %+v", e)
	}
	if strings.Contains(e.New[0].Summary, secretValue) {
		t.Fatal("the event carries the secret value")
	}
	if _, err := f.h.DecideApproval(context.Background(), apr, false, "test", "not now"); err != nil {
		t.Fatal(err)
	}
	if e := read(); e.Pending != 0 || len(e.IDs) != 0 {
		t.Fatalf("after the decision: %+v", e)
	}
}
