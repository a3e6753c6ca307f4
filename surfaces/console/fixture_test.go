package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/console"
	httpapi "github.com/harnessd/harnessd/surfaces/http"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of confined commands and jobs
	goleak.VerifyTestMain(m)
}

// testToken is the human token of the fixtures.
const testToken = "tok-0123456789abcdef0123456789abcdef"

// secretValue is in the fixture repository's .env: no page may show it.
const secretValue = "sk_live_9f8e7d6c5b4a39281706"

// askPolicy asks a person before `git ls-tree`.
const askPolicy = `version: 1
rules:
  - id: ask-before-ls-tree
    tools: [run_command]
    argv_prefix: [git, ls-tree]
    decision: ask
    justification: "someone should look first"
    examples:
      match:     [{tool: run_command, argv: [git, ls-tree, HEAD]}]
      not_match: [{tool: run_command, argv: [git, status]}]
  - id: ask-before-docs
    tools: [apply_patch]
    paths: ["docs/**"]
    decision: ask
    justification: "docs are reviewed"
`

type fixture struct {
	h      *harness.Harness
	srv    *httptest.Server
	repoID string
	root   string
}

// setup opens a harness whose policy asks before `git ls-tree`, registers
// a repository with a commit and serves the daemon's HTTP handler with the
// console mounted on 127.0.0.1.
func setup(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(askPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := harness.Open(context.Background(), harness.Config{DataDir: dir, AllowRoots: []string{os.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Handler(h, httpapi.Options{HumanToken: testToken, Console: console.Handler(h, testToken)}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close harness: %v", err)
		}
	})
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n", ".env": "API_KEY=" + secretValue + "\n", "docs/guide.md": "# Guide\n\nStart here.\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{h: h, srv: srv, repoID: r.ID, root: root}
}

// agentCall is an agent calling an operation over the JSON API; it
// returns the result or the error's code and details.
func (f *fixture) agentCall(t *testing.T, op string, args any) (map[string]any, *errs.Error) {
	t.Helper()
	b, _ := json.Marshal(args)
	resp, err := http.Post(f.srv.URL+"/v1/"+op, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error *errs.Error `json:"error"`
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s: %d %s", op, resp.StatusCode, body)
	}
	if out.Error != nil {
		return nil, out.Error
	}
	var res map[string]any
	_ = json.Unmarshal(body, &res)
	return res, nil
}

// askApproval makes the agent call an operation the policy asks about and
// returns the approval id it gets.
func (f *fixture) askApproval(t *testing.T, argv []string) string {
	t.Helper()
	_, e := f.agentCall(t, "run_command", map[string]any{"repo_id": f.repoID, "argv": argv})
	if e == nil || e.Code != errs.ApprovalRequired {
		t.Fatalf("run_command %v: %+v, want APPROVAL_REQUIRED", argv, e)
	}
	id, _ := e.Details["approval_id"].(string)
	if id == "" {
		t.Fatalf("APPROVAL_REQUIRED without an approval_id: %+v", e)
	}
	return id
}

// askPatch makes the agent call apply_patch on docs/guide.md (the policy
// asks) and returns the approval id and the arguments to retry with.
func (f *fixture) askPatch(t *testing.T, requestID, oldText, newText string) (string, map[string]any) {
	t.Helper()
	args := map[string]any{"repo_id": f.repoID, "request_id": requestID,
		"operations": []map[string]any{{"op": "replace", "path": "docs/guide.md", "old_text": oldText, "new_text": newText}}}
	_, e := f.agentCall(t, "apply_patch", args)
	if e == nil || e.Code != errs.ApprovalRequired {
		t.Fatalf("apply_patch: %+v, want APPROVAL_REQUIRED", e)
	}
	id, _ := e.Details["approval_id"].(string)
	if id == "" {
		t.Fatalf("APPROVAL_REQUIRED without an approval_id: %+v", e)
	}
	return id, args
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t   *testing.T
	c   *http.Client
	url string
}

func (f *fixture) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, url: f.srv.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *browser) do(method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.url+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

func (b *browser) get(path string) (*http.Response, string) { return b.do("GET", path, nil, nil) }

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	return b.do("POST", path, form, nil)
}

// login logs in with the token and returns the CSRF token of the session.
func (b *browser) login(token string) string {
	b.t.Helper()
	resp, _ := b.post("/ui/login", url.Values{"token": {token}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("login: %d, want 303", resp.StatusCode)
	}
	return b.csrf()
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf reads the CSRF token from a page's forms.
func (b *browser) csrf() string {
	b.t.Helper()
	resp, body := b.get("/ui/approvals")
	m := csrfRE.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		b.t.Fatalf("approvals page: %d, no CSRF token in it:\n%s", resp.StatusCode, body)
	}
	return m[1]
}

func (f *fixture) approval(t *testing.T, id string) harness.Approval {
	t.Helper()
	l, err := f.h.Approvals(context.Background(), "all")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range l.Approvals {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("approval %s not found", id)
	return harness.Approval{}
}
