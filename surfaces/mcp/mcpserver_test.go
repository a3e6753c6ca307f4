package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of confined checks and jobs
	goleak.VerifyTestMain(m)
}

func openHarness(t *testing.T) *harness.Harness {
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
	return h
}

// connect serves srv over in-memory transports and returns a connected
// client session; both sessions close in t.Cleanup.
func connect(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, _ := connectWith(t, srv, &mcp.Implementation{Name: "test", Version: "v0"}, opts)
	return cs
}

// connectWith is connect as a client with the given clientInfo; it also
// returns the server's side of the session.
func connectWith(t *testing.T, srv *mcp.Server, impl *mcp.Implementation, opts *mcp.ClientOptions) (*mcp.ClientSession, *mcp.ServerSession) {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(impl, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() }) // runs before ss.Close
	return cs, ss
}

func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := tools[tool.Name]; dup {
			t.Errorf("tool %s listed twice", tool.Name)
		}
		tools[tool.Name] = tool
	}
	return tools
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// text returns the only content block of res, which must be text.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content block is %T, want text", res.Content[0])
	}
	return tc.Text
}

// structured returns the structured content of res re-encoded as JSON and
// checks that the text block holds the same JSON.
func structured(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	if res.StructuredContent == nil {
		t.Fatal("no structured content")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var fromText, fromStruct any
	if err := json.Unmarshal([]byte(text(t, res)), &fromText); err != nil {
		t.Fatalf("text block is not JSON: %v", err)
	}
	_ = json.Unmarshal(b, &fromStruct)
	if fmt.Sprint(fromText) != fmt.Sprint(fromStruct) {
		t.Errorf("text block %s differs from structured content %s", text(t, res), b)
	}
	return b
}

func errorOf(t *testing.T, res *mcp.CallToolResult) *errs.Error {
	t.Helper()
	if !res.IsError {
		t.Fatalf("result is not an error: %s", text(t, res))
	}
	var body mcpserver.ErrorBody
	if err := json.Unmarshal(structured(t, res), &body); err != nil || body.Error == nil {
		t.Fatalf("structured content is not {\"error\": ...}: %v", err)
	}
	if body.Error.Message == "" {
		t.Errorf("error %s has no message", body.Error.Code)
	}
	return body.Error
}

func TestToolsAreTheAgentOps(t *testing.T) {
	h := openHarness(t)
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)
	tools := listTools(t, cs)

	agent := 0
	for _, o := range h.Registry().All() {
		tool, ok := tools[o.Name]
		if !o.Agent {
			if ok {
				t.Errorf("%s is for people only but is a tool", o.Name)
			}
			continue
		}
		agent++
		if !ok {
			t.Errorf("agent op %s is not a tool", o.Name)
			continue
		}
		if tool.Description != o.Description {
			t.Errorf("%s: description %q, want %q", o.Name, tool.Description, o.Description)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		if schema["type"] != "object" {
			t.Errorf("%s: input schema %v, want an object schema", o.Name, tool.InputSchema)
		}
		for name := range mcpserver.CompactInput(o.InputSchema, o.ReadOnly).Properties { // the common parameters: Instructions
			props, _ := schema["properties"].(map[string]any)
			if _, ok := props[name]; !ok {
				t.Errorf("%s: input schema lacks property %s", o.Name, name)
			}
		}
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint != o.ReadOnly {
			t.Errorf("%s: annotations %+v, want readOnlyHint %v", o.Name, tool.Annotations, o.ReadOnly)
		}
	}
	if agent == 0 || len(tools) != agent+1 || tools[mcpserver.ToolsetsTool] == nil { // and the toolsets tool
		t.Errorf("%d tools for %d agent ops and the toolsets tool", len(tools), agent)
	}
	if !tools["read_file"].Annotations.ReadOnlyHint || tools["apply_patch"].Annotations.ReadOnlyHint {
		t.Errorf("read_file must be read-only and apply_patch not")
	}
}

func TestNoHumanToolsForAgents(t *testing.T) {
	h := openHarness(t)
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)
	for name := range listTools(t, cs) {
		for _, bad := range []string{"approv", "deny", "denial", "policy"} {
			if strings.Contains(name, bad) {
				t.Errorf("tool %s lets an agent reach approvals or policy", name)
			}
		}
	}
}

func TestReadFile(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n", ".env": "TOKEN=s3cret\n"})
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)

	res := call(t, cs, "repository_register", map[string]any{"path": root})
	if res.IsError {
		t.Fatalf("repository_register: %s", text(t, res))
	}
	var reg struct {
		RepoID string `json:"repo_id"`
	}
	if err := json.Unmarshal(structured(t, res), &reg); err != nil || reg.RepoID == "" {
		t.Fatalf("repository_register = %s, want a repo_id", text(t, res))
	}

	res = call(t, cs, "read_file", map[string]any{"repo_id": reg.RepoID, "path": "README.md"})
	if res.IsError {
		t.Fatalf("read_file: %s", text(t, res))
	}
	var rf struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		SHA256  string `json:"sha256"`
	}
	// read_file's text block is the file itself (and a note of the
	// window); the structured content has the rest.
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &rf) != nil {
		t.Fatalf("structured content: %v", err)
	}
	if rf.Path != "README.md" || rf.Content != "" || rf.SHA256 == "" { // the content is in the text block only
		t.Errorf("read_file = %+v", rf)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "hello\n" {
		t.Errorf("read_file's text block = %q, want the file", got)
	}

	res = call(t, cs, "read_file", map[string]any{"repo_id": reg.RepoID, "path": ".env"})
	if e := errorOf(t, res); e.Code != errs.SecretPathDenied {
		t.Errorf("read .env: code %s, want %s", e.Code, errs.SecretPathDenied)
	}
	if strings.Contains(text(t, res), "s3cret") {
		t.Errorf("denied read leaks the secret: %s", text(t, res))
	}
}

func TestToolErrors(t *testing.T) {
	h := openHarness(t)
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)
	tests := []struct {
		name string
		args any
		want errs.Code
	}{
		{"unknown repo", map[string]any{"repo_id": "nope", "path": "README.md"}, errs.RepositoryNotRegistered},
		{"wrong type", map[string]any{"repo_id": 5, "path": "README.md"}, errs.InvalidArgument},
		{"unknown field", map[string]any{"repo_id": "nope", "path": "README.md", "bogus": true}, errs.InvalidArgument},
		{"missing fields", map[string]any{}, errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := errorOf(t, call(t, cs, "read_file", tt.args))
			if e.Code != tt.want {
				t.Errorf("code %s (%s), want %s", e.Code, e.Message, tt.want)
			}
		})
	}
}

// fake is a Backend with one agent op, one people-only op, and an Exec
// that reports progress.
type fake struct{ ops []harness.Op }

type fakeArgs struct {
	N int `json:"n"`
}

func newFake() *fake {
	prep := func(context.Context, *op.Call, fakeArgs) (*op.Plan, error) { return nil, nil }
	return &fake{ops: []harness.Op{
		op.Def(op.Spec[fakeArgs]{Name: "count", Description: "counts", ReadOnly: true, Prepare: prep}),
		op.Def(op.Spec[fakeArgs]{Name: "decide", Description: "people only", Human: true, Prepare: prep}),
	}}
}

func (f *fake) Ops() []harness.Op { return f.ops }

func (f *fake) Exec(ctx context.Context, name string, args json.RawMessage) (any, error) {
	var a fakeArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, errs.New(errs.InvalidArgument, "%v", err)
	}
	op.Report(ctx, 5, 10, "half")
	op.Report(ctx, 3, 10, "less") // progress must still increase
	return map[string]any{"op": name, "n": a.N}, nil
}

func TestCustomBackendAndProgress(t *testing.T) {
	progress := make(chan *mcp.ProgressNotificationParams, 8)
	cs := connect(t, mcpserver.New(newFake(), "test"), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params
		},
	})
	tools := listTools(t, cs)
	if len(tools) != 2 || tools["count"] == nil || tools[mcpserver.ToolsetsTool] == nil {
		t.Fatalf("tools = %v, want only the agent op count and the toolsets tool", tools)
	}

	// Without a progress token nothing is reported.
	res := call(t, cs, "count", map[string]any{"n": 1})
	if res.IsError || !strings.Contains(text(t, res), `"n":1`) {
		t.Fatalf("count = %s", text(t, res))
	}

	params := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"n": 2}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("count with progress: %v %v", err, res)
	}
	var got []*mcp.ProgressNotificationParams
	timeout := time.After(5 * time.Second)
	for len(got) < 2 {
		select {
		case p := <-progress:
			got = append(got, p)
		case <-timeout:
			t.Fatalf("got %d progress notifications, want 2", len(got))
		}
	}
	if got[0].ProgressToken != "tok-1" || got[0].Progress != 5 || got[0].Total != 10 || got[0].Message != "half" {
		t.Errorf("first notification = %+v", got[0])
	}
	if got[1].Progress <= got[0].Progress || got[1].Message != "less" {
		t.Errorf("second notification = %+v, want progress above %v", got[1], got[0].Progress)
	}
	select {
	case p := <-progress:
		t.Errorf("unexpected notification %+v (the call without a token reported?)", p)
	default:
	}
}

func TestResult(t *testing.T) {
	res, err := mcpserver.Result(map[string]any{"a": 1, "b": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Error("Result is an error")
	}
	if got := text(t, res); got != `{"a":1,"b":"x"}` {
		t.Errorf("text = %s", got)
	}
	if raw, ok := res.StructuredContent.(json.RawMessage); !ok || string(raw) != `{"a":1,"b":"x"}` {
		t.Errorf("structured = %#v", res.StructuredContent)
	}

	// A value that cannot be encoded is an INTERNAL tool error, not a
	// protocol error.
	res, err = mcpserver.Result(map[string]any{"f": func() {}})
	if err != nil {
		t.Fatalf("Result of an unencodable value returned a protocol error: %v", err)
	}
	if e := errorOf(t, res); e.Code != errs.Internal {
		t.Errorf("code %s, want INTERNAL", e.Code)
	}
}

func TestErrorResult(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		code        errs.Code
		message     string
		detailKey   string
		detailValue any
	}{
		{"coded", errs.New(errs.PathOutsideRoot, "path %q escapes", "../x"), errs.PathOutsideRoot, `path "../x" escapes`, "", nil},
		{"with details", errs.New(errs.NotFound, "no").With("operation", "x"), errs.NotFound, "no", "operation", "x"},
		{"wrapped", fmt.Errorf("outer: %w", errs.New(errs.MutationBusy, "busy")), errs.MutationBusy, "busy", "", nil},
		{"uncoded", errors.New("boom"), errs.Internal, "boom", "", nil},
		{"cancelled", context.Canceled, errs.Cancelled, context.Canceled.Error(), "", nil},
		{"deadline", context.DeadlineExceeded, errs.Timeout, context.DeadlineExceeded.Error(), "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mcpserver.ErrorResult(tt.err)
			e := errorOf(t, res)
			if e.Code != tt.code || e.Message != tt.message {
				t.Errorf("error = %s: %q, want %s: %q", e.Code, e.Message, tt.code, tt.message)
			}
			if tt.detailKey != "" && e.Details[tt.detailKey] != tt.detailValue {
				t.Errorf("details = %v, want %s=%v", e.Details, tt.detailKey, tt.detailValue)
			}
			if tt.detailKey == "" && strings.Contains(text(t, res), "details") {
				t.Errorf("empty details are encoded: %s", text(t, res))
			}
		})
	}
}

// connectAs is connect with the client's name and version.
func connectAs(t *testing.T, srv *mcp.Server, name, version string) (*mcp.ClientSession, *mcp.ServerSession) {
	t.Helper()
	return connectWith(t, srv, &mcp.Implementation{Name: name, Version: version}, nil)
}

func toolJSON(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("%s: %s", name, res.Content[0].(*mcp.TextContent).Text)
	}
	if out != nil {
		if err := json.Unmarshal(structured(t, res), out); err != nil {
			t.Fatal(err)
		}
	}
}

// Every MCP session gets a run of its own without asking, named by its
// clientInfo; run_id on a call puts it in an explicit run; a closed
// session's run with a stage open waits to be resumed.
func TestImplicitRunsPerMCPSession(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"a.txt": "hello\n"})
	srv := mcpserver.New(mcpserver.Local(h), "test", everySet)
	a, ssA := connectAs(t, srv, "agent-a", "1.2.3")
	b, _ := connectAs(t, srv, "agent-b", "0.1")
	var reg struct {
		ID string `json:"repo_id"`
	}
	toolJSON(t, a, "repository_register", map[string]any{"path": root}, &reg)
	toolJSON(t, a, "read_file", map[string]any{"repo_id": reg.ID, "path": "a.txt"}, nil)
	toolJSON(t, b, "git_status", map[string]any{"repo_id": reg.ID}, nil)
	var ra, rb harness.RunStateResult
	toolJSON(t, a, "run_status", map[string]any{"include_spans": true}, &ra)
	toolJSON(t, b, "run_status", map[string]any{"include_spans": true}, &rb)
	if ra.RunID == "" || ra.RunID == rb.RunID {
		t.Fatalf("runs: %q %q", ra.RunID, rb.RunID)
	}
	if ra.Caller.Client.Name != "agent-a" || ra.Caller.Client.Version != "1.2.3" || rb.Caller.Client.Name != "agent-b" || ra.Caller.Session == "" {
		t.Fatalf("identity: %+v / %+v", ra.Caller, rb.Caller)
	}
	if len(ra.Spans) != 2 || ra.Spans[1].Op != "read_file" || len(rb.Spans) != 1 {
		t.Fatalf("spans: a=%+v b=%+v", ra.Spans, rb.Spans)
	}
	// An explicit run, passed as run_id to a tool.
	var x harness.RunStateResult
	toolJSON(t, b, "run_start", map[string]any{"goal": "look around", "parent_run_id": rb.RunID}, &x)
	toolJSON(t, b, "read_file", map[string]any{"repo_id": reg.ID, "path": "a.txt", "run_id": x.RunID}, nil)
	var xs harness.RunStateResult
	toolJSON(t, b, "run_status", map[string]any{"run_id": x.RunID, "include_spans": true}, &xs)
	if len(xs.Spans) != 1 || xs.Spans[0].Op != "read_file" || xs.ParentRunID != rb.RunID {
		t.Fatalf("explicit run: %+v", xs)
	}
	// A bad run_id is a clear error, not a call outside any run.
	res, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"repo_id": reg.ID, "path": "a.txt", "run_id": "run_nope"}})
	if err != nil || !res.IsError {
		t.Fatalf("unknown run_id: %v %+v", err, res)
	}
	if e := errorOf(t, res); e.Code != errs.NotFound {
		t.Fatalf("unknown run_id: %s", e.Code)
	}
	// Session a goes away with a stage of its run open: the run is
	// detached (not ended), then resumed by b.
	toolJSON(t, a, "run_stage", map[string]any{"run_id": ra.RunID, "stage": "look", "status": "started"}, nil)
	detached := make(chan struct{}, 1)
	cancel := h.SubscribeRuns(func(ev harness.RunEvent) {
		if ev.RunID == ra.RunID && ev.State != nil && !ev.State.DetachedAt.IsZero() {
			select {
			case detached <- struct{}{}:
			default:
			}
		}
	})
	defer cancel()
	_ = a.Close()
	_ = ssA.Wait()
	select {
	case <-detached:
	case <-time.After(10 * time.Second):
		t.Fatal("the closed session's run was not detached")
	}
	var resumed harness.RunStateResult
	toolJSON(t, b, "run_resume", map[string]any{"run_id": ra.RunID}, &resumed)
	if resumed.Caller.Client.Name != "agent-b" || !resumed.DetachedAt.IsZero() {
		t.Fatalf("resumed: %+v", resumed.RunState)
	}
	var now harness.RunStateResult
	toolJSON(t, b, "run_status", map[string]any{}, &now)
	if now.RunID != ra.RunID {
		t.Fatalf("after run_resume the session's run is %s, want %s", now.RunID, ra.RunID)
	}
}

// A one-shot client (connect, one call, close) leaves no active run: its
// implicit run ends with its session ("session ended"), and run_list
// answers the live runs first.
func TestOneShotSessionLeavesNoActiveRun(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"a.txt": "hello\n"})
	reg, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(mcpserver.Local(h), "test", everySet)
	ended := make(chan harness.RunEvent, 8)
	cancel := h.SubscribeRuns(func(ev harness.RunEvent) {
		if ev.Type == "end" {
			ended <- ev
		}
	})
	defer cancel()

	// A live explicit run of another client, started first.
	keeper, _ := connectAs(t, srv, "keeper", "1")
	var live harness.RunStateResult
	toolJSON(t, keeper, "run_start", map[string]any{"goal": "stay"}, &live)

	oneShot := map[string]bool{}
	for i := range 3 {
		cs, ss := connectAs(t, srv, "one-shot", strconv.Itoa(i))
		var st harness.RunStateResult
		toolJSON(t, cs, "read_file", map[string]any{"repo_id": reg.ID, "path": "a.txt"}, nil)
		toolJSON(t, cs, "run_status", map[string]any{}, &st)
		oneShot[st.RunID] = true
		_ = cs.Close()
		_ = ss.Wait()
		select {
		case ev := <-ended:
			if ev.RunID != st.RunID || ev.State.Status != "ended" || ev.State.EndReason != "session ended" {
				t.Fatalf("session %d: %s ended as %s (%s), want %s ended (session ended)", i, ev.RunID, ev.State.Status, ev.State.EndReason, st.RunID)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("session %d: its run %s did not end with it", i, st.RunID)
		}
	}
	l, err := h.RunList(context.Background(), harness.RunListArgs{})
	if err != nil {
		t.Fatal(err)
	}
	seenEnded, liveListed := false, false
	for _, r := range l.Runs {
		switch {
		case r.Status != "active":
			seenEnded = true
		case seenEnded:
			t.Errorf("active run %s listed after an ended one", r.RunID)
		case oneShot[r.RunID]:
			t.Errorf("the one-shot run %s is still active", r.RunID)
		}
		liveListed = liveListed || (r.RunID == live.RunID && r.Status == "active")
	}
	if !liveListed || len(l.Runs) < 4 {
		t.Errorf("run_list %+v: want the keeper's live run %s and the 3 ended ones", l.Runs, live.RunID)
	}
}
