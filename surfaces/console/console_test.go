package console_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/surfaces/console"
	httpapi "github.com/harnessd/harnessd/surfaces/http"
)

func TestLoginRefusesAWrongTokenAndGatesEveryPage(t *testing.T) {
	f := setup(t)
	b := f.browser(t)
	for _, tok := range []string{"", "wrong", testToken + "x", testToken[:len(testToken)-1]} {
		resp, body := b.post("/ui/login", url.Values{"token": {tok}})
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Fatalf("login with %q: %d, cookies %v, want 401 and no cookie", tok, resp.StatusCode, resp.Cookies())
		}
		if !strings.Contains(body, "Wrong token") {
			t.Fatalf("login with %q: the page does not say the token was wrong:\n%s", tok, body)
		}
	}
	for _, p := range []string{"/ui/approvals", "/ui/jobs", "/ui/runs", "/ui/audit", "/ui/status", "/ui/runs/run_x", "/ui/jobs/job_x", "/ui/clients", "/ui/policy"} {
		resp, _ := b.get(p)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
			t.Errorf("GET %s without a session: %d %q, want 303 to /ui/login", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// A made-up session cookie is no session.
	u, _ := url.Parse(f.srv.URL + "/ui/")
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "harnessd_console", Value: strings.Repeat("a", 64), Path: "/ui"}})
	if resp, _ := b.get("/ui/approvals"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a forged session cookie: %d, want 303 to the login", resp.StatusCode)
	}
	for _, p := range []string{"/ui/jobs/job_x/events", "/ui/runs/run_x/events", "/ui/events"} {
		if resp, _ := b.get(p); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d, want 401", p, resp.StatusCode)
		}
	}
}

func TestLoginSetsAStrictSessionCookie(t *testing.T) {
	f := setup(t)
	b := f.browser(t)
	resp, _ := b.post("/ui/login", url.Values{"token": {testToken}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/approvals" {
		t.Fatalf("login: %d %q, want 303 to /ui/approvals", resp.StatusCode, resp.Header.Get("Location"))
	}
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies = %v, want one", cs)
	}
	c := cs[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui" || len(c.Value) != 64 || c.MaxAge <= 0 {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/ui, a 32-byte random id and an expiry", c)
	}
	if strings.Contains(c.Value, testToken) {
		t.Fatal("the cookie carries the token")
	}
	resp, body := b.get("/ui/approvals")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Approvals") {
		t.Fatalf("approvals after login: %d", resp.StatusCode)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
	// A second login opens a second, independent session.
	b2 := f.browser(t)
	if b2.login(testToken) == b.csrf() {
		t.Fatal("two sessions share a CSRF token")
	}
}

func TestApproveRefusesWithoutTheSessionsCSRFToken(t *testing.T) {
	f := setup(t)
	apr := f.askApproval(t, []string{"git", "ls-tree", "HEAD"})
	victim := f.browser(t)
	csrf := victim.login(testToken)
	other := f.browser(t)
	otherCSRF := other.login(testToken)
	anon := f.browser(t)

	attacks := []struct {
		name string
		b    *browser
		form url.Values
		hdr  map[string]string
		want int
	}{
		{"no CSRF token", victim, url.Values{}, nil, http.StatusForbidden},
		{"a wrong CSRF token", victim, url.Values{"csrf": {strings.Repeat("0", 64)}}, nil, http.StatusForbidden},
		{"another session's CSRF token", victim, url.Values{"csrf": {otherCSRF}}, nil, http.StatusForbidden},
		{"the CSRF token in the query only", victim, nil, nil, http.StatusForbidden},
		{"a cross-origin form", victim, url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"no session", anon, url.Values{"csrf": {csrf}}, nil, http.StatusUnauthorized},
	}
	for _, a := range attacks {
		path := "/ui/approvals/" + apr + "/approve"
		if a.form == nil {
			path += "?csrf=" + csrf
		}
		resp, _ := a.b.do("POST", path, a.form, a.hdr)
		if resp.StatusCode != a.want {
			t.Errorf("%s: %d, want %d", a.name, resp.StatusCode, a.want)
		}
		if got := f.approval(t, apr).Status; got != harness.ApprovalPending {
			t.Fatalf("%s: the approval is %s, want still pending", a.name, got)
		}
	}
	// Logging out needs the token too (no forced logout).
	if resp, _ := victim.post("/ui/logout", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without CSRF: %d, want 403", resp.StatusCode)
	}

	resp, _ := victim.post("/ui/approvals/"+apr+"/approve", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d, want 303", resp.StatusCode)
	}
	if a := f.approval(t, apr); a.Status != harness.ApprovalApproved || a.DecidedBy != "console" {
		t.Fatalf("approval = %s by %q, want approved by console", a.Status, a.DecidedBy)
	}
	res, e := f.agentCall(t, "run_command", map[string]any{"repo_id": f.repoID, "argv": []string{"git", "ls-tree", "HEAD"}, "approval_id": apr})
	if e != nil {
		t.Fatalf("the agent's retry: %v", e)
	}
	if out, _ := res["stdout"].(map[string]any); !strings.Contains(out["text"].(string), "a.txt") {
		t.Fatalf("the agent's retry ran, but its output is %v", res["stdout"])
	}
	// Deciding twice is an error page, not a crash.
	resp, body := victim.post("/ui/approvals/"+apr+"/deny", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, string(errs.InvalidArgument)) {
		t.Fatalf("deny a used approval: %d\n%s", resp.StatusCode, body)
	}
}

func TestDenyRecordsTheReason(t *testing.T) {
	f := setup(t)
	apr := f.askApproval(t, []string{"git", "ls-tree", "-r", "HEAD"})
	b := f.browser(t)
	csrf := b.login(testToken)
	if resp, _ := b.post("/ui/approvals/"+apr+"/deny", url.Values{"csrf": {csrf}, "reason": {"not today"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("deny: %d", resp.StatusCode)
	}
	if a := f.approval(t, apr); a.Status != harness.ApprovalDenied || a.DecidedBy != "console" || a.DenyReason != "not today" {
		t.Fatalf("approval = %+v", a)
	}
	_, e := f.agentCall(t, "run_command", map[string]any{"repo_id": f.repoID, "argv": []string{"git", "ls-tree", "-r", "HEAD"}, "approval_id": apr})
	if e == nil || e.Code != errs.PolicyDenied {
		t.Fatalf("retry after a deny: %+v, want POLICY_DENIED", e)
	}
}

func TestLogoutEndsTheSession(t *testing.T) {
	f := setup(t)
	b := f.browser(t)
	csrf := b.login(testToken)
	cookie := b.c.Jar.Cookies(mustURL(t, f.srv.URL+"/ui/"))
	resp, _ := b.post("/ui/logout", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Fatalf("logout: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Replaying the old cookie gets nothing.
	replay := f.browser(t)
	replay.c.Jar.SetCookies(mustURL(t, f.srv.URL+"/ui/"), cookie)
	if resp, _ := replay.get("/ui/approvals"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the logged-out cookie still opens the approvals: %d", resp.StatusCode)
	}
}

func TestApprovalRendersEscapedAndRedacted(t *testing.T) {
	f := setup(t)
	const payload = `<script>alert("pwned")</script><img src=x onerror=alert(1)>`
	apr := f.askApproval(t, []string{"git", "ls-tree", payload, secretValue})
	b := f.browser(t)
	b.login(testToken)
	resp, body := b.get("/ui/approvals")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, apr) {
		t.Fatalf("approvals page: %d, approval %s missing", resp.StatusCode, apr)
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Fatalf("the page carries the operation's markup unescaped:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;") {
		t.Fatalf("the page does not show the argv escaped:\n%s", body)
	}
	if strings.Contains(body, secretValue) {
		t.Fatalf("the approvals page shows the secret value from .env")
	}
}

func TestPagesRender(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	run, err := f.h.RunStart(ctx, harness.RunStartArgs{Goal: "look <around> with " + secretValue})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.GitStatus(harness.WithRun(ctx, run.RunID), harness.GitStatusArgs{RepoID: f.repoID}); err != nil {
		t.Fatal(err)
	}
	b := f.browser(t)
	csrf := b.login(testToken)
	for _, tt := range []struct{ path, want string }{
		{"/ui/approvals?status=all", "Every approval request"},
		{"/ui/jobs", "Durable jobs"},
		{"/ui/runs", run.RunID},
		{"/ui/runs/" + run.RunID, "git_status"},
		{"/ui/audit", "Verify the hash chain"},
		{"/ui/status", "Sandbox"},
		{"/ui/static/console.css", "harnessd console"},
		{"/ui/static/console.js", "EventSource"},
	} {
		resp, body := b.get(tt.path)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s: %d, want 200 with %q in:\n%.2000s", tt.path, resp.StatusCode, tt.want, body)
		}
	}
	for _, p := range []string{"/ui/runs", "/ui/runs/" + run.RunID} {
		if _, body := b.get(p); !strings.Contains(body, "look &lt;around&gt; with [REDACTED") || strings.Contains(body, secretValue) {
			t.Errorf("%s: the run's goal is not shown escaped and redacted:\n%s", p, body)
		}
	}
	resp, body := b.post("/ui/audit/verify", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Chain intact") {
		t.Errorf("verify: %d\n%s", resp.StatusCode, body)
	}
	resp, body = b.get("/ui/runs/run_nope")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, string(errs.NotFound)) {
		t.Errorf("an unknown run: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := b.get("/ui/jobs/not-a-job"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed job id: %d, want 400", resp.StatusCode)
	}
	// /ui redirects into the console.
	if resp, _ := b.get("/ui"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /ui: %d, want a redirect", resp.StatusCode)
	}
}

// TestJobEventsStreamTheLog reads the job log's event stream as the
// page's EventSource does, and checks that a known secret printed by
// the job never comes through.
func TestJobEventsStreamTheLog(t *testing.T) {
	f := setup(t)
	j, err := f.h.JobStart(context.Background(), harness.JobStartArgs{RepoID: f.repoID, RequestID: "console-events-1",
		Argv: []string{"sh", "-c", "echo first; echo oops >&2; echo \"key $0\"; echo last", secretValue}})
	if err != nil {
		t.Fatal(err)
	}
	b := f.browser(t)
	b.login(testToken)
	req, _ := http.NewRequest("GET", f.srv.URL+"/ui/jobs/"+j.JobID+"/events", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := b.c.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		got.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "event: end") {
			sc.Scan()
			got.WriteString(sc.Text() + "\n")
			break
		}
	}
	s := got.String()
	for _, want := range []string{"event: stdout\n", "data: first\n", "data: last\n", "event: stderr\n", "data: oops\n", "event: end\ndata: succeeded\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("the stream lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, secretValue) {
		t.Errorf("the stream carries the secret value:\n%s", s)
	}
	for _, p := range []string{"/ui/jobs/" + j.JobID, "/ui/jobs"} {
		if _, body := b.get(p); !strings.Contains(body, j.JobID) || strings.Contains(body, secretValue) {
			t.Errorf("%s: shows the secret value or not the job:\n%s", p, body)
		}
	}
	// Resuming after the last event id sends no output again.
	req.Header.Set("Last-Event-ID", "1000000,1000000")
	resp2, err := b.c.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var again strings.Builder
	sc = bufio.NewScanner(resp2.Body)
	for sc.Scan() {
		again.WriteString(sc.Text() + "\n")
	}
	if strings.Contains(again.String(), "first") || !strings.Contains(again.String(), "event: end") {
		t.Errorf("a resumed stream:\n%s", again.String())
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPatchApprovalShowsTheDiffEscapedAndRedacted(t *testing.T) {
	f := setup(t)
	const evil = "<script>document.title='pwned'</script>"
	apr, args := f.askPatch(t, "console-patch-1", "Start here.", "Start "+evil+" here, key "+secretValue+".")
	b := f.browser(t)
	csrf := b.login(testToken)
	_, body := b.get("/ui/approvals")
	for _, want := range []string{
		`<span class="diff-op">replace</span> <code>docs/guide.md</code>`,
		`<span class="l del">- Start here.</span>`,
		"&#43; Start &lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt; here, key [REDACTED",
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("the approvals page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>document") {
		t.Fatal("the diff's markup reaches the page unescaped")
	}
	if strings.Contains(body, secretValue) {
		t.Fatal("the diff shows the secret value from .env")
	}
	if resp, _ := b.post("/ui/approvals/"+apr+"/approve", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	args["approval_id"] = apr
	if _, e := f.agentCall(t, "apply_patch", args); e != nil {
		t.Fatalf("the agent's retry: %v", e)
	}
}

// TestRouteKeepsTheAPIBehindTheBearerToken serves what the daemon's TCP
// listener should: the console reachable for its login, everything else
// still behind the bearer token.
func TestRouteKeepsTheAPIBehindTheBearerToken(t *testing.T) {
	f := setup(t)
	ui := console.Handler(f.h, testToken)
	api := httpapi.Handler(f.h, httpapi.Options{HumanToken: testToken, Console: ui})
	srv := httptest.NewServer(console.Route(ui, httpapi.RequireToken(testToken, api)))
	defer srv.Close()
	b := f.browser(t)
	b.url = srv.URL
	if resp, body := b.get("/ui/login"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="token"`) {
		t.Fatalf("the login page over the guarded listener: %d", resp.StatusCode)
	}
	b.login(testToken)
	if resp, _ := b.get("/ui/status"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a console page after login: %d", resp.StatusCode)
	}
	// The session cookie is no bearer token: the API stays closed.
	for _, p := range []string{"/v1/status", "/v1/approvals", "/uix", "/v1/ui/"} {
		if resp, _ := b.get(p); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a console session and no bearer token: %d, want 401", p, resp.StatusCode)
		}
	}
}
