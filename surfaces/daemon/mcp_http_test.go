package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// The protocol versions a client pins.
const (
	v20260728 = "2026-07-28"
	v20251125 = "2025-11-25"
)

// mcpEndpoint serves the daemon's MCP endpoint (as Serve composes it) over
// an in-memory harness on an httptest server.
func mcpEndpoint(t *testing.T) (*httptest.Server, *harness.Harness) {
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
	hs := httptest.NewServer(newMCPHTTP(oneServer(mcpserver.New(mcpserver.Local(h), "test")), 0))
	t.Cleanup(hs.Close)
	t.Cleanup(hs.Client().CloseIdleConnections)
	return hs, h
}

// exchanges records what went over the wire: the protocol version each
// request named and the session id each answer set.
type exchanges struct {
	next     http.RoundTripper
	mu       sync.Mutex // protects versions and sessions
	versions []string
	sessions []string
}

func (x *exchanges) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := x.next.RoundTrip(r)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.versions = append(x.versions, r.Header.Get(hdrProtocolVersion))
	if err == nil {
		if id := resp.Header.Get(hdrSession); id != "" {
			x.sessions = append(x.sessions, id)
		}
	}
	return resp, err
}

// connectHTTP connects a go-sdk client pinned to version to the endpoint.
func connectHTTP(t *testing.T, hs *httptest.Server, version string, opts *mcp.ClientOptions) (*mcp.ClientSession, *exchanges) {
	t.Helper()
	x := &exchanges{next: hs.Client().Transport}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pinned-" + version, Version: "v0"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: x}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect pinned to %s: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, x
}

func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil || json.Unmarshal(b, out) != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return res
}

// register registers root in process (repository_register is not among
// the tools a session lists by default) and returns its repo_id.
func register(t *testing.T, h *harness.Harness, root string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"path": root})
	out, err := h.CallOp(context.Background(), "repository_register", args)
	if err != nil {
		t.Fatalf("repository_register: %v", err)
	}
	var reg struct {
		RepoID string `json:"repo_id"`
	}
	if b, err := json.Marshal(out); err != nil || json.Unmarshal(b, &reg) != nil || reg.RepoID == "" {
		t.Fatalf("repository_register = %s (%v), want a repo_id", b, err)
	}
	return reg.RepoID
}

// readBack reads path through read_file and returns what the result
// carries of the file, in its text block or its structured content.
func readBack(t *testing.T, cs *mcp.ClientSession, repoID, path string) string {
	t.Helper()
	var rf struct {
		Content string `json:"content"`
	}
	res := callJSON(t, cs, "read_file", map[string]any{"repo_id": repoID, "path": path}, &rf)
	if res.IsError {
		t.Fatalf("read_file %s: %+v", path, res.StructuredContent)
	}
	var all strings.Builder
	all.WriteString(rf.Content)
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			all.WriteString(tc.Text)
		}
	}
	return all.String()
}

// Issue #30: a client pinned to 2026-07-28 negotiates 2026-07-28 over
// streamable HTTP (before, server/discover answered only the session
// generation and the client fell back to 2025-11-25, or failed with
// "Unsupported protocol version"), and a 2025-11-25 client keeps its
// session: both list, read, patch and see error codes.
func TestMCPHTTPBothProtocols(t *testing.T) {
	hs, h := mcpEndpoint(t)
	for _, version := range []string{v20260728, v20251125} {
		t.Run(version, func(t *testing.T) {
			root := testutil.Repo(t, map[string]string{"README.md": "hello\n"})
			cs, x := connectHTTP(t, hs, version, nil)
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "read_file" }) {
				t.Fatalf("tools/list lacks read_file (%d tools)", len(tools.Tools))
			}
			repoID := register(t, h, root)
			if got := readBack(t, cs, repoID, "README.md"); !strings.Contains(got, "hello\n") {
				t.Fatalf("read_file carries %q, want the file", got)
			}
			patch := map[string]any{"repo_id": repoID, "request_id": "p-" + version, "operations": []map[string]any{
				{"op": "replace", "path": "README.md", "old_text": "hello", "new_text": "bye"}}}
			if res := callJSON(t, cs, "apply_patch", patch, nil); res.IsError {
				t.Fatalf("apply_patch: %+v", res.StructuredContent)
			}
			if got := readBack(t, cs, repoID, "README.md"); !strings.Contains(got, "bye\n") {
				t.Fatalf("read_file after the patch carries %q, want bye", got)
			}
			var te struct {
				Error struct{ Code errs.Code } `json:"error"`
			}
			if res := callJSON(t, cs, "read_file", map[string]any{"repo_id": "nope", "path": "README.md"}, &te); !res.IsError || te.Error.Code != errs.RepositoryNotRegistered {
				t.Fatalf("read_file of an unknown repo: error %v code %q, want %s", res.IsError, te.Error.Code, errs.RepositoryNotRegistered)
			}

			x.mu.Lock()
			defer x.mu.Unlock()
			// The new protocol has no session; the old one has exactly one.
			want := 1
			if version == v20260728 {
				want = 0
			}
			if got := len(slices.Compact(slices.Clone(x.sessions))); got != want {
				t.Errorf("%d session ids in the answers (%v), want %d", got, x.sessions, want)
			}
			for i, v := range x.versions {
				if v != version && (i > 0 || v != "") { // initialize names its version in the body only
					t.Errorf("request %d named version %q, want %s", i, v, version)
				}
			}
		})
	}
}

// A long call's progress notifications reach a 2026-07-28 client on the
// POST's own stream (there is no session stream to carry them).
func TestMCPHTTPProgressReachesNewProtocol(t *testing.T) {
	hs, h := mcpEndpoint(t)
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	var notes atomic.Int32
	cs, _ := connectHTTP(t, hs, v20260728, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { notes.Add(1) },
	})
	repoID := register(t, h, root)
	var job struct {
		JobID string `json:"job_id"`
		State string `json:"state"`
	}
	if res := callJSON(t, cs, "job_start", map[string]any{"repo_id": repoID, "argv": []string{"sleep", "2"}, "request_id": "progress-1"}, &job); res.IsError {
		t.Fatalf("job_start: %+v", res.StructuredContent)
	}
	params := &mcp.CallToolParams{Name: "job_status", Arguments: map[string]any{"job_id": job.JobID, "wait_s": 20}}
	params.SetProgressToken("wait-1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &job); err != nil || res.IsError || job.State != "succeeded" {
		t.Fatalf("job_status = %s", b)
	}
	if n := notes.Load(); n < 1 {
		t.Fatalf("%d progress notifications during a 2 s wait, want at least 1", n)
	}
}

// rawPost sends one JSON-RPC message with the given headers and returns
// the status and the answer (the data of an SSE event, or the JSON body).
func rawPost(t *testing.T, hs *httptest.Server, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get(hdrSession); id != "" {
		t.Cleanup(func() { endSession(t, hs, id) })
	}
	b, _ := io.ReadAll(resp.Body)
	answer := string(b)
	for line := range strings.Lines(answer) {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			answer = strings.TrimSpace(data)
		}
	}
	return resp.StatusCode, answer
}

// endSession ends a session a raw initialize opened.
func endSession(t *testing.T, hs *httptest.Server, id string) {
	req, err := http.NewRequest(http.MethodDelete, hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(hdrSession, id)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE of session %s: HTTP %d", id, resp.StatusCode)
	}
}

const discoverBody = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}}}`

// server/discover answers both generations' versions; a new-protocol
// request that lacks its headers is refused with an error naming the
// header (not answered as a session request); Mcp-Method must match the
// body.
func TestMCPHTTPDiscoverAndHeaders(t *testing.T) {
	hs, _ := mcpEndpoint(t)
	newHeaders := map[string]string{hdrProtocolVersion: v20260728, hdrMethod: methodDiscover}
	status, answer := rawPost(t, hs, newHeaders, discoverBody)
	var disc struct {
		Result struct {
			SupportedVersions []string       `json:"supportedVersions"`
			Capabilities      map[string]any `json:"capabilities"`
			Instructions      string         `json:"instructions"`
			TTLMs             int            `json:"ttlMs"`
			CacheScope        string         `json:"cacheScope"`
		} `json:"result"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(answer), &disc) != nil {
		t.Fatalf("server/discover: HTTP %d %s", status, answer)
	}
	// Cacheable: fresh for an hour, private (what a client lists depends
	// on its toolsets and role).
	if disc.Result.TTLMs != int(mcpserver.ListTTL.Milliseconds()) || disc.Result.CacheScope != "private" {
		t.Errorf("server/discover: ttlMs %d, cacheScope %q; want %d, private", disc.Result.TTLMs, disc.Result.CacheScope, mcpserver.ListTTL.Milliseconds())
	}
	for _, v := range []string{v20260728, v20251125} {
		if !slices.Contains(disc.Result.SupportedVersions, v) {
			t.Errorf("server/discover supports %v, want %s among them", disc.Result.SupportedVersions, v)
		}
	}
	if disc.Result.Capabilities["tools"] == nil || disc.Result.Instructions == "" {
		t.Errorf("server/discover: capabilities %v, instructions %q; want tools and the instructions", disc.Result.Capabilities, disc.Result.Instructions)
	}

	tests := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		want    string // in the answer
	}{
		{"discover without headers", nil, discoverBody, http.StatusBadRequest, "Mcp-Protocol-Version header is required"},
		{"method header mismatch", map[string]string{hdrProtocolVersion: v20260728, hdrMethod: "tools/list"}, discoverBody, http.StatusBadRequest, "does not match"},
		{"no method header", map[string]string{hdrProtocolVersion: v20260728}, discoverBody, http.StatusBadRequest, "missing required Mcp-Method header"},
		{"initialize in the new protocol", map[string]string{hdrProtocolVersion: v20260728, hdrMethod: "initialize"},
			`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
			http.StatusNotFound, `method not found: \"initialize\"`},
		{"legacy initialize", nil,
			`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
			http.StatusOK, `"protocolVersion":"2025-11-25"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := rawPost(t, hs, tt.headers, tt.body)
			if status != tt.status || !strings.Contains(answer, tt.want) {
				t.Fatalf("HTTP %d %s, want %d with %q", status, answer, tt.status, tt.want)
			}
		})
	}
}

func TestSpeaksNewProtocol(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		want    bool
	}{
		{"nothing", nil, false},
		{"2026-07-28", map[string]string{hdrProtocolVersion: "2026-07-28"}, true},
		{"a later version", map[string]string{hdrProtocolVersion: "2027-01-01"}, true},
		{"2025-11-25", map[string]string{hdrProtocolVersion: "2025-11-25"}, false},
		{"2025-11-25 with a session", map[string]string{hdrProtocolVersion: "2025-11-25", hdrSession: "s"}, false},
		{"only Mcp-Method", map[string]string{hdrMethod: "tools/list"}, true},
		{"old version and Mcp-Method", map[string]string{hdrProtocolVersion: "2025-06-18", hdrMethod: "tools/list"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := speaksNewProtocol(h); got != tt.want {
				t.Errorf("speaksNewProtocol(%v) = %v, want %v", tt.headers, got, tt.want)
			}
		})
	}
}

func TestNewProtocolBody(t *testing.T) {
	tests := []struct {
		name, body string
		want       bool
	}{
		{"discover", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, true},
		{"meta version", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true},
		{"old meta version", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, false},
		{"meta version not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":2026}}}`, false},
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28"}}`, false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"server/discover"}]`, false},
		{"not json", `discover`, false},
		{"empty", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newProtocolBody([]byte(tt.body)); got != tt.want {
				t.Errorf("newProtocolBody(%s) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

// Options a request names that do not exist are refused before any
// handler runs, with harnessd's code; the body a peek read is handed on
// whole.
func TestMCPHTTPRouterRefusesAndPeeks(t *testing.T) {
	refuse := func(*http.Request) (*mcp.Server, error) {
		return nil, errs.New(errs.InvalidArgument, "unknown toolset %q; known: core, git", "bogus")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	hs := httptest.NewServer(newMCPHTTP(mcpServers{session: refuse, shared: refuse, probe: srv}, 0))
	defer hs.Close()
	defer hs.Client().CloseIdleConnections()
	for _, headers := range []map[string]string{nil, {hdrProtocolVersion: v20260728, hdrMethod: methodDiscover}} {
		status, answer := rawPost(t, hs, headers, discoverBody)
		var e struct {
			Error struct {
				Code    int
				Message string
				Data    struct{ Code errs.Code }
			}
		}
		if status != http.StatusBadRequest || json.Unmarshal([]byte(answer), &e) != nil ||
			e.Error.Data.Code != errs.InvalidArgument || !strings.Contains(e.Error.Message, "known: core") {
			t.Errorf("headers %v: HTTP %d %s, want 400 with INVALID_ARGUMENT naming the known toolsets", headers, status, answer)
		}
	}

	// A body the router peeked at reaches the handler whole.
	hs2, _ := mcpEndpoint(t)
	pad := strings.Repeat(" ", 64<<10) // past any single read
	status, answer := rawPost(t, hs2, nil, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`+pad)
	if status != http.StatusOK || !strings.Contains(answer, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("padded initialize: HTTP %d %s", status, answer)
	}
}
