package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// everySet serves every toolset: the tests that call tools beyond core.
var everySet = mcpserver.Options{Toolsets: op.Toolsets()}

func TestParseToolsets(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []op.Toolset
		bad  bool
	}{
		{in: "", want: nil},
		{in: "core", want: []op.Toolset{op.Core}},
		{in: "runs", want: []op.Toolset{op.Core, op.Runs}},
		{in: "admin, runs,git,runs", want: []op.Toolset{op.Core, op.Git, op.Runs, op.Admin}},
		{in: "all", want: op.Toolsets()},
		{in: "core,all", want: op.Toolsets()},
		{in: "runs,nope", bad: true},
	} {
		got, err := mcpserver.ParseToolsets(tt.in)
		if tt.bad {
			if e := errs.From(err); err == nil || e.Code != errs.InvalidArgument || !strings.Contains(e.Message, "core, git") && !strings.Contains(e.Message, "core,git,jobs") {
				t.Errorf("ParseToolsets(%q) = %v, %v; want INVALID_ARGUMENT naming the sets", tt.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseToolsets(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestOptionsFromRequest(t *testing.T) {
	r := httptest.NewRequest("POST", "/mcp?toolsets=runs,git&role=reader", nil)
	o, err := mcpserver.OptionsFromRequest(r)
	if err != nil || !slices.Equal(o.Toolsets, []op.Toolset{op.Core, op.Git, op.Runs}) || o.Role != op.Reader {
		t.Fatalf("from the URL: %+v, %v", o, err)
	}
	r = httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set(mcpserver.ToolsetsHeader, "all")
	r.Header.Set(mcpserver.RoleHeader, "Editor")
	if o, err = mcpserver.OptionsFromRequest(r); err != nil || len(o.Toolsets) != len(op.Toolsets()) || o.Role != op.Editor {
		t.Fatalf("from the headers: %+v, %v", o, err)
	}
	if o, err = mcpserver.OptionsFromRequest(httptest.NewRequest("POST", "/mcp", nil)); err != nil || o.Toolsets != nil || o.Role != 0 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	for _, u := range []string{"/mcp?role=root", "/mcp?toolsets=core,shell"} {
		if _, err := mcpserver.OptionsFromRequest(httptest.NewRequest("POST", u, nil)); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", u, err)
		}
	}
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for name := range listTools(t, cs) {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// A session lists core (and the toolsets tool) by default; the toolsets
// tool lists the sets, enables one (the session's client gets
// tools/list_changed and sees its tools) and disables it again; another
// session of the same factory sees none of it. A call of a tool of a set
// not enabled names the set.
func TestToolsetsSwitchInOneSession(t *testing.T) {
	h := openHarness(t)
	f := mcpserver.NewFactory(mcpserver.Local(h), "test")
	changed := make(chan string, 8)
	watch := func(name string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- name }}
	}
	a, _ := connectWith(t, f.Session(mcpserver.Options{}), &mcp.Implementation{Name: "a", Version: "1"}, watch("a"))
	b, _ := connectWith(t, f.Session(mcpserver.Options{}), &mcp.Implementation{Name: "b", Version: "1"}, watch("b"))

	var core []string
	for _, o := range h.Registry().All() {
		if o.Agent && o.Toolset == op.Core {
			core = append(core, o.Name)
		}
	}
	core = append(core, mcpserver.ToolsetsTool)
	slices.Sort(core)
	if got := toolNames(t, a); !slices.Equal(got, core) {
		t.Fatalf("default tools %v, want core %v", got, core)
	}

	var list mcpserver.ToolsetsResult
	toolJSON(t, a, mcpserver.ToolsetsTool, map[string]any{}, &list)
	if len(list.Toolsets) != len(op.Toolsets()) || list.Role != "operator" {
		t.Fatalf("toolsets: %+v", list)
	}
	var runTools []string
	for _, s := range list.Toolsets {
		if s.Enabled != (s.Name == "core") || len(s.Tools) == 0 {
			t.Errorf("set %s: enabled %v, %d tools", s.Name, s.Enabled, len(s.Tools))
		}
		if s.Name == "runs" {
			runTools = s.Tools
		}
	}
	if !slices.Contains(runTools, "run_status") {
		t.Fatalf("runs tools %v, want run_status among them", runTools)
	}

	// A tool of a set not enabled: the answer names the set.
	e := errorOf(t, call(t, a, "run_status", map[string]any{}))
	if e.Code != errs.NotFound || !strings.Contains(e.Message, "toolset runs") || !strings.Contains(e.Message, `{"enable":["runs"]}`) {
		t.Fatalf("run_status before enabling: %s %s", e.Code, e.Message)
	}

	toolJSON(t, a, mcpserver.ToolsetsTool, map[string]any{"enable": []any{"runs"}}, &list)
	select {
	case who := <-changed:
		if who != "a" {
			t.Fatalf("session %s got tools/list_changed, want a", who)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after enabling runs")
	}
	got := toolNames(t, a)
	for _, n := range runTools {
		if !slices.Contains(got, n) {
			t.Errorf("after enabling runs the tools lack %s", n)
		}
	}
	toolJSON(t, a, "run_status", map[string]any{}, nil)
	if got := toolNames(t, b); !slices.Equal(got, core) {
		t.Fatalf("the other session's tools changed: %v", got)
	}
	select {
	case who := <-changed:
		t.Fatalf("session %s got a second tools/list_changed", who)
	default:
	}

	toolJSON(t, a, mcpserver.ToolsetsTool, map[string]any{"disable": []any{"runs"}}, &list)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after disabling runs")
	}
	if got := toolNames(t, a); !slices.Equal(got, core) {
		t.Fatalf("after disabling runs: %v, want core", got)
	}

	for _, args := range []map[string]any{{"enable": []any{"shell"}}, {"disable": []any{"core"}}, {"enable": []any{"runs"}, "disable": []any{"runs"}}, {"enabel": []any{"runs"}}} {
		if e := errorOf(t, call(t, a, mcpserver.ToolsetsTool, args)); e.Code != errs.InvalidArgument {
			t.Errorf("toolsets %v: %s, want INVALID_ARGUMENT", args, e.Code)
		}
	}
	e = errorOf(t, call(t, a, mcpserver.ToolsetsTool, map[string]any{"enable": []any{"nope"}}))
	if !strings.Contains(e.Message, "git,jobs,runs,targets,undo,provenance,admin") {
		t.Errorf("unknown set: %s, want the sets named", e.Message)
	}
}

// roleRig is a repository registered by an operator session, and a
// factory whose sessions act as other roles.
func roleRig(t *testing.T) (*harness.Harness, *mcpserver.Factory, string) {
	t.Helper()
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"a.txt": "hello\n"})
	f := mcpserver.NewFactory(mcpserver.Local(h), "test")
	ops, _ := connectAs(t, f.Session(everySet), "person", "1")
	var reg struct {
		ID string `json:"repo_id"`
	}
	toolJSON(t, ops, "repository_register", map[string]any{"path": root}, &reg)
	return h, f, reg.ID
}

// The gate enforces the session's role: a reader reads, is refused a
// patch, a read_lanes holding a command, and (with the admin set enabled)
// a registration, each with ROLE_DENIED and an audit entry; an editor
// patches.
func TestRolesOverMCP(t *testing.T) {
	h, f, repo := roleRig(t)
	reader, _ := connectAs(t, f.Session(mcpserver.Options{Toolsets: []op.Toolset{op.Git}, Role: op.Reader}), "reader-agent", "1")
	editor, _ := connectAs(t, f.Session(mcpserver.Options{Role: op.Editor}), "editor-agent", "1")

	toolJSON(t, reader, "read_file", map[string]any{"repo_id": repo, "path": "a.txt"}, nil)
	patch := map[string]any{"repo_id": repo, "request_id": "r1", "operations": []any{map[string]any{"op": "create", "path": "n.txt", "content": "x\n"}}}
	e := errorOf(t, call(t, reader, "apply_patch", patch))
	if e.Code != errs.RoleDenied || !strings.Contains(e.Message, "apply_patch needs the role editor or operator") || !strings.Contains(e.Message, "acts as reader") {
		t.Fatalf("a reader's apply_patch: %s %s", e.Code, e.Message)
	}
	lanes := map[string]any{"repo_id": repo, "lanes": []any{
		map[string]any{"kind": "search", "args": map[string]any{"query": "hello"}},
		map[string]any{"kind": "run_command", "args": map[string]any{"argv": []any{"git", "status"}}},
	}}
	if e := errorOf(t, call(t, reader, "read_lanes", lanes)); e.Code != errs.RoleDenied || !strings.Contains(e.Message, "run_command needs the role") {
		t.Fatalf("a reader's read_lanes with run_command: %s %s", e.Code, e.Message)
	}
	// Enabling admin shows repository_register; the role still refuses it.
	toolJSON(t, reader, mcpserver.ToolsetsTool, map[string]any{"enable": []any{"admin"}}, nil)
	if e := errorOf(t, call(t, reader, "repository_register", map[string]any{"path": t.TempDir()})); e.Code != errs.RoleDenied {
		t.Fatalf("a reader's repository_register with admin enabled: %s %s", e.Code, e.Message)
	}

	var wrote struct {
		ReceiptID string `json:"receipt_id"`
	}
	toolJSON(t, editor, "apply_patch", patch, &wrote)
	if _, err := h.ReadFile(context.Background(), harness.ReadFileArgs{RepoID: repo, Path: "n.txt"}); err != nil {
		t.Fatalf("the editor's patch: %v", err)
	}

	au, err := h.Audit(context.Background(), harness.AuditArgs{Kind: "rejection", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	denied := map[string]bool{}
	for _, en := range au.Entries {
		if en.Code == string(errs.RoleDenied) && en.RuleID == "role" && en.Client == "reader-agent 1" && en.Session != "" && en.Details["role"] == "reader" {
			denied[en.Operation] = true
		}
	}
	for _, o := range []string{"apply_patch", "run_command", "repository_register"} {
		if !denied[o] {
			t.Errorf("no ROLE_DENIED audit entry of the reader's %s (%v)", o, denied)
		}
	}
}

// Stateless requests of MCP 2026-07-28 carry no session: the calls of one
// client (its _meta clientInfo) share its implicit run, another client has
// its own, and an explicit run_id wins.
func TestStatelessCallsOfAClientShareItsRun(t *testing.T) {
	h := openHarness(t)
	f := mcpserver.NewFactory(mcpserver.Local(h), "test")
	handler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		o, err := mcpserver.OptionsFromRequest(r)
		if err != nil {
			return nil
		}
		return f.Shared(o)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := httptest.NewServer(handler)
	t.Cleanup(hs.Close)
	dial := func(name string) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "2"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "?toolsets=runs"}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		return cs
	}
	x, y := dial("agent-x"), dial("agent-y")
	var r1, r2, ry harness.RunStateResult
	toolJSON(t, x, "run_status", map[string]any{}, &r1)
	toolJSON(t, x, "run_status", map[string]any{}, &r2)
	toolJSON(t, y, "run_status", map[string]any{}, &ry)
	if r1.RunID == "" || r1.RunID != r2.RunID {
		t.Fatalf("two stateless calls of agent-x: runs %q and %q, want one", r1.RunID, r2.RunID)
	}
	if ry.RunID == r1.RunID || r1.Caller.Session != mcpserver.StatelessSession(harness.Client{Name: "agent-x", Version: "2"}) {
		t.Fatalf("agent-y's run %q (agent-x's %q, session %q)", ry.RunID, r1.RunID, r1.Caller.Session)
	}
	var own, in harness.RunStateResult
	toolJSON(t, x, "run_start", map[string]any{"goal": "separate"}, &own)
	toolJSON(t, x, "run_status", map[string]any{"run_id": own.RunID}, &in)
	if in.RunID != own.RunID || in.RunID == r1.RunID {
		t.Fatalf("explicit run_id: %q, want %q", in.RunID, own.RunID)
	}
	// The toolsets of a stateless request are the request's.
	if e := errorOf(t, call(t, x, mcpserver.ToolsetsTool, map[string]any{"enable": []any{"admin"}})); e.Code != errs.InvalidArgument || !strings.Contains(e.Message, "?toolsets=") {
		t.Fatalf("toolsets enable over stateless HTTP: %s %s", e.Code, e.Message)
	}
}

// BenchmarkFactorySession is what a stateful session's server costs: a
// lookup once the factory has the server of its Options; the factory
// (every tool made once) and a server's first build (every tool added)
// for comparison.
func BenchmarkFactorySession(b *testing.B) {
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	f := mcpserver.NewFactory(mcpserver.Local(h), "bench")
	_ = f.Session(mcpserver.Options{Role: op.Editor})
	b.Run("session", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = f.Session(mcpserver.Options{Role: op.Editor})
		}
	})
	b.Run("NewFactory", func(b *testing.B) {
		for b.Loop() {
			_ = mcpserver.NewFactory(mcpserver.Local(h), "bench")
		}
	})
	b.Run("first-server", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			g := mcpserver.NewFactory(mcpserver.Local(h), "bench")
			b.StartTimer()
			_ = g.Session(mcpserver.Options{})
		}
	})
}

// A call of a tool there is not answers the SDK's invalid-params error
// with the nearest tool names (of every set: a hidden one then answers
// how to enable it); a name near nothing still says where the list is.
func TestUnknownToolNamesTheNearestTools(t *testing.T) {
	h := openHarness(t)
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test"), nil) // core only
	for _, tt := range []struct {
		name string
		want []string // in order
	}{
		{"readfile", []string{"read_file"}},
		{"aply_patch", []string{"apply_patch"}},
		{"run_stat", []string{"run_start", "run_stage", "run_status"}}, // hidden (runs) tools too
		{"toolset", []string{"toolsets"}},
		{"xyzzy", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.name, Arguments: map[string]any{}})
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("call of %s: %v, want a JSON-RPC invalid-params error", tt.name, err)
			}
			if !strings.Contains(we.Message, `unknown tool "`+tt.name+`"`) || !strings.Contains(we.Message, "tools/list") {
				t.Errorf("message %q does not name the tool and where the list is", we.Message)
			}
			var data struct {
				Tool       string   `json:"tool"`
				DidYouMean []string `json:"did_you_mean"`
			}
			if err := json.Unmarshal(we.Data, &data); err != nil || data.Tool != tt.name {
				t.Fatalf("data %s: %v", we.Data, err)
			}
			if len(data.DidYouMean) > 3 || !slices.Equal(data.DidYouMean[:min(len(tt.want), len(data.DidYouMean))], tt.want) || len(data.DidYouMean) < len(tt.want) {
				t.Errorf("did_you_mean %q, want %q first", data.DidYouMean, tt.want)
			}
			if len(tt.want) > 0 && !strings.Contains(we.Message, "did you mean "+tt.want[0]) {
				t.Errorf("message %q does not offer %s", we.Message, tt.want[0])
			}
		})
	}
	// The offered hidden tool answers how to enable its set.
	if e := errorOf(t, call(t, cs, "run_start", map[string]any{})); e.Code != errs.NotFound || !strings.Contains(e.Message, "toolsets") {
		t.Errorf("the offered hidden tool: %s %s", e.Code, e.Message)
	}
}
