package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
	httpapi "github.com/harnessd/harnessd/surfaces/http"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of confined checks and jobs
	goleak.VerifyTestMain(m)
}

type fixture struct {
	h       *harness.Harness
	handler http.Handler
}

func setup(t *testing.T) *fixture {
	t.Helper()
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, AllowRoots: []string{os.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close harness: %v", err)
		}
	})
	return &fixture{h: h, handler: httpapi.Handler(h, httpapi.Options{})}
}

// do serves one request and returns the recorded response.
func (f *fixture) do(t *testing.T, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

// register registers a fresh repository with files over the API and
// returns its repo_id.
func (f *fixture) register(t *testing.T, files map[string]string) string {
	t.Helper()
	root := testutil.Repo(t, files)
	rec := f.do(t, "POST", "/v1/repository_register", mustJSON(t, map[string]string{"path": root}))
	if rec.Code != http.StatusOK {
		t.Fatalf("repository_register: %d %s", rec.Code, rec.Body)
	}
	var out struct {
		RepoID string `json:"repo_id"`
		Root   string `json:"root"`
	}
	decode(t, rec, &out)
	if out.RepoID == "" || out.Root != root {
		t.Fatalf("repository_register = %s, want a repo_id and root %s", rec.Body, root)
	}
	return out.RepoID
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func decode(t *testing.T, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
}

// wantError checks an error response: its status and error code.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code errs.Code) *errs.Error {
	t.Helper()
	var body struct {
		Error *errs.Error `json:"error"`
	}
	decode(t, rec, &body)
	if rec.Code != status || body.Error == nil || body.Error.Code != code {
		t.Fatalf("got %d %s, want %d with code %s", rec.Code, rec.Body, status, code)
	}
	if body.Error.Message == "" {
		t.Errorf("error %s has no message", rec.Body)
	}
	return body.Error
}

func TestHealthz(t *testing.T) {
	f := setup(t)
	rec := f.do(t, "GET", "/healthz", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /healthz = %d %s", rec.Code, rec.Body)
	}
	var body map[string]any
	decode(t, rec, &body)
	if body["status"] != "ok" {
		t.Errorf("GET /healthz = %s, want status ok", rec.Body)
	}
}

func TestRegisterAndReadFile(t *testing.T) {
	f := setup(t)
	id := f.register(t, map[string]string{"README.md": "hello\n"})

	rec := f.do(t, "POST", "/v1/read_file", mustJSON(t, map[string]string{"repo_id": id, "path": "README.md"}))
	if rec.Code != http.StatusOK {
		t.Fatalf("read_file: %d %s", rec.Code, rec.Body)
	}
	var out struct {
		Path       string `json:"path"`
		Content    string `json:"content"`
		TotalLines int    `json:"total_lines"`
	}
	decode(t, rec, &out)
	if out.Path != "README.md" || out.Content != "hello\n" || out.TotalLines != 1 {
		t.Errorf("read_file = %s, want README.md with hello", rec.Body)
	}

	// GET /v1/repositories is repository_list.
	rec = f.do(t, "GET", "/v1/repositories", "")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), id) {
		t.Errorf("GET /v1/repositories = %d %s, want it to list %s", rec.Code, rec.Body, id)
	}
}

func TestErrors(t *testing.T) {
	f := setup(t)
	id := f.register(t, map[string]string{"README.md": "hello\n", ".env": "TOKEN=s3cret\n"})
	read := func(extra string) string {
		return `{"repo_id":"` + id + `","path":"README.md"` + extra + `}`
	}
	tests := []struct {
		name   string
		path   string
		body   string
		status int
		code   errs.Code
	}{
		{"unknown operation", "/v1/no_such_op", "{}", 404, errs.NotFound},
		{"bad JSON", "/v1/read_file", `{"repo_id":`, 400, errs.InvalidArgument},
		{"not an object", "/v1/read_file", `["README.md"]`, 400, errs.InvalidArgument},
		{"unknown field", "/v1/read_file", read(`,"bogus":1`), 400, errs.InvalidArgument},
		{"wrong type", "/v1/read_file", `{"repo_id":"` + id + `","path":7}`, 400, errs.InvalidArgument},
		{"missing field", "/v1/read_file", `{"repo_id":"` + id + `"}`, 400, errs.InvalidArgument},
		{"unregistered repo", "/v1/read_file", `{"repo_id":"nope","path":"README.md"}`, 404, errs.RepositoryNotRegistered},
		{"secret path", "/v1/read_file", `{"repo_id":"` + id + `","path":".env"}`, 403, errs.SecretPathDenied},
		{"outside root", "/v1/read_file", `{"repo_id":"` + id + `","path":"../x"}`, 403, errs.PathOutsideRoot},
		{"missing file", "/v1/read_file", `{"repo_id":"` + id + `","path":"nope.txt"}`, 404, errs.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := f.do(t, "POST", tt.path, tt.body)
			e := wantError(t, rec, tt.status, tt.code)
			if tt.code == errs.SecretPathDenied && strings.Contains(rec.Body.String(), "s3cret") {
				t.Errorf("denied response leaks the secret: %s", rec.Body)
			}
			if tt.name == "unknown operation" && e.Details["operation"] != "no_such_op" {
				t.Errorf("details = %v, want operation no_such_op", e.Details)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	f := setup(t)
	body := `{"path":"` + strings.Repeat("a", httpapi.MaxBody) + `"}`
	rec := f.do(t, "POST", "/v1/repository_register", body)
	wantError(t, rec, 400, errs.InvalidArgument)
}

func TestOps(t *testing.T) {
	f := setup(t)
	rec := f.do(t, "GET", "/v1/ops", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/ops = %d %s", rec.Code, rec.Body)
	}
	var body struct {
		Operations []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			ReadOnly    bool           `json:"read_only"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"operations"`
	}
	decode(t, rec, &body)
	want := map[string]bool{} // name -> read only
	for _, o := range f.h.Registry().All() {
		want[o.Name] = o.ReadOnly
	}
	if len(body.Operations) != len(want) || len(want) == 0 {
		t.Fatalf("GET /v1/ops lists %d operations, the registry has %d", len(body.Operations), len(want))
	}
	for _, o := range body.Operations {
		ro, ok := want[o.Name]
		if !ok {
			t.Errorf("GET /v1/ops lists %q, not in the registry", o.Name)
			continue
		}
		if o.ReadOnly != ro {
			t.Errorf("%s: read_only = %v, want %v", o.Name, o.ReadOnly, ro)
		}
		if o.Description == "" {
			t.Errorf("%s: no description", o.Name)
		}
		if o.InputSchema["type"] != "object" {
			t.Errorf("%s: input_schema = %v, want an object schema", o.Name, o.InputSchema)
		}
	}
	if !strings.Contains(rec.Body.String(), `"name":"read_file"`) {
		t.Errorf("GET /v1/ops does not list read_file")
	}
}

func TestStatus(t *testing.T) {
	f := setup(t)
	f.register(t, map[string]string{"README.md": "hello\n"})
	rec := f.do(t, "GET", "/v1/status", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/status = %d %s", rec.Code, rec.Body)
	}
	var st harness.StatusResult
	decode(t, rec, &st)
	if st.Pid == 0 || !st.InMemory || st.Repositories != 1 || st.Version == "" {
		t.Errorf("GET /v1/status = %s, want pid, in_memory, 1 repository and a version", rec.Body)
	}
}

func TestMetricsCountOperations(t *testing.T) {
	f := setup(t)
	f.do(t, "POST", "/v1/repository_list", "{}")
	f.do(t, "POST", "/v1/read_file", `{"repo_id":"nope","path":"x"}`)
	f.do(t, "POST", "/v1/no_such_op", "{}")

	rec := f.do(t, "GET", "/metrics", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d", rec.Code)
	}
	m := rec.Body.String()
	for _, s := range []string{
		`harnessd_operations_total{code="OK",operation="repository_list",surface="http"} 1`,
		`harnessd_operations_total{code="REPOSITORY_NOT_REGISTERED",operation="read_file",surface="http"} 1`,
		`harnessd_operation_seconds_count{operation="repository_list",surface="http"} 1`,
		`harnessd_runs_active 0`,
		`harnessd_jobs{state="running"} 0`,
		`harnessd_approvals_pending 0`,
		`harnessd_leases 0`,
		"go_goroutines",
	} {
		if !strings.Contains(m, s) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
	// Unknown operation names are not labels: a client cannot grow the
	// metric without bound.
	if strings.Contains(m, "no_such_op") {
		t.Errorf("/metrics has a series for an unknown operation")
	}
}

func TestJobLogsBadOffset(t *testing.T) {
	f := setup(t)
	rec := f.do(t, "GET", "/v1/jobs/j1/logs?offset=-1", "")
	wantError(t, rec, 400, errs.InvalidArgument)
}

// TestOverHTTP runs a few calls through a real HTTP server and client.
func TestOverHTTP(t *testing.T) {
	f := setup(t)
	srv := httptest.NewServer(f.handler)
	t.Cleanup(srv.Close)
	c := srv.Client()
	resp, err := c.Post(srv.URL+"/v1/repository_list", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !json.Valid(b) {
		t.Fatalf("repository_list = %d %s", resp.StatusCode, b)
	}
	resp, err = c.Post(srv.URL+"/v1/no_such_op", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !bytes.Contains(b, []byte(`"code":"NOT_FOUND"`)) {
		t.Fatalf("no_such_op = %d %s", resp.StatusCode, b)
	}
}

func TestRequireToken(t *testing.T) {
	const token = "t0k3n-abc"
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, "inner handler body")
	})
	tests := []struct {
		name   string
		token  string // configured
		header string // Authorization; "" = none
		pass   bool
	}{
		{"right token", token, "Bearer " + token, true},
		{"right token, padded", token, "  Bearer " + token + " ", true},
		{"no header", token, "", false},
		{"wrong token", token, "Bearer nope", false},
		{"token without scheme", token, token, false},
		{"other scheme", token, "Basic " + token, false},
		{"scheme in lower case", token, "bearer " + token, true},
		{"prefix of the token", token, "Bearer " + token[:4], false},
		{"token with a suffix", token, "Bearer " + token + "x", false},
		{"empty token, no header", "", "", false},
		{"empty token, empty bearer", "", "Bearer ", false},
		{"empty token, bare scheme", "", "Bearer", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/v1/status", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			httpapi.RequireToken(tt.token, inner).ServeHTTP(rec, req)
			body := rec.Body.String()
			if tt.pass {
				if rec.Code != http.StatusTeapot || body != "inner handler body" {
					t.Fatalf("got %d %q, want the inner handler's answer", rec.Code, body)
				}
				return
			}
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401", rec.Code)
			}
			if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
			}
			if strings.Contains(body, "inner handler body") {
				t.Errorf("401 body leaks the inner handler's answer: %q", body)
			}
			if strings.Contains(body, token) {
				t.Errorf("401 body leaks the token: %q", body)
			}
			var eb struct {
				Error *errs.Error `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error == nil || eb.Error.Code == "" {
				t.Errorf("401 body %q is not a coded JSON error", body)
			}
		})
	}
}

func TestStatusOf(t *testing.T) {
	tests := []struct {
		code errs.Code
		want int
	}{
		{errs.InvalidArgument, 400},
		{errs.RequestIDRequired, 400},
		{errs.NotAGitRepository, 400},
		{errs.IsDirectory, 400},
		{errs.NotFound, 404},
		{errs.RepositoryNotRegistered, 404},
		{errs.PathOutsideRoot, 403},
		{errs.SecretPathDenied, 403},
		{errs.PathNotAllowed, 403},
		{errs.PolicyDenied, 403},
		{errs.RoleDenied, 403},
		{errs.ApprovalRequired, 403},
		{errs.RouteRejected, 422},
		{errs.RouteDurableRequired, 422},
		{errs.LoopDetected, 422},
		{errs.MutationBusy, 409},
		{errs.LeaseLost, 409},
		{errs.RequestConflict, 409},
		{errs.RequestInProgress, 409},
		{errs.RequestOutcomeUnknown, 409},
		{errs.PatchConflict, 409},
		{errs.PatchRollbackIncomplete, 500},
		{errs.Timeout, 504},
		{errs.Cancelled, 499},
		{errs.Unavailable, 503},
		{errs.Internal, 500},
		{errs.Unauthenticated, 401},
		{errs.BudgetExceeded, 429},
		{errs.RunEnded, 410},
		{errs.Deadlock, 409},
		{errs.VerificationRequired, 412},
		{errs.RetryLimit, 429},
		{errs.StorageFull, 507},
		{errs.StoreDamaged, 503},
		{errs.StorageUnavailable, 503},
		{errs.RepositoryMoved, 409},
		{errs.ConcurrentModification, 409},
		{errs.GitIdentityRequired, 412},
		{errs.JobFailed, 422},
		{errs.CheckFailed, 422},
		{errs.TargetMoved, 409},
		{errs.RevertConflict, 409},
		{errs.PushRejected, 409},
		{errs.RemoteAuthFailed, 502},
		{"", 500},
		{"NO_SUCH_CODE", 500},
	}
	covered := map[errs.Code]bool{}
	for _, tt := range tests {
		covered[tt.code] = true
	}
	for _, c := range declaredCodes(t) {
		if !covered[c] {
			t.Errorf("code %s of contract/errs is not in this table", c)
		}
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			if got := httpapi.StatusOf(tt.code); got != tt.want {
				t.Errorf("StatusOf(%q) = %d, want %d", tt.code, got, tt.want)
			}
		})
	}
}

// declaredCodes returns the values of the Code constants of contract/errs.
func declaredCodes(t *testing.T) []errs.Code {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "contract", "errs", "errs.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []errs.Code
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("a Code constant is not a string literal")
				}
				c, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, errs.Code(c))
			}
		}
	}
	if len(codes) < 20 {
		t.Fatalf("found %d codes in errs.go: the parser is not looking at the right file", len(codes))
	}
	return codes
}
