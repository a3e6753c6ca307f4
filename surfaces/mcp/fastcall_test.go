package mcpserver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// meta2026 is the _meta a 2026-07-28 client puts on every request.
const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"v0"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}`

// fastPair serves two raw connections of one factory with Options o: one
// connected by Factory.Connect (its plain calls are fast calls), one by
// the go-sdk alone; it returns both with the fast one's transport.
func fastPair(t *testing.T, f *mcpserver.Factory, o mcpserver.Options) (fast, sdk *rawClient, tr *mcpserver.StreamTransport) {
	t.Helper()
	tr = &mcpserver.StreamTransport{}
	fast = serveRawWith(t, func(tr *mcpserver.StreamTransport) (*mcp.ServerSession, error) {
		return f.Connect(context.Background(), o, tr)
	}, tr, false)
	sdk = serveRaw(t, f.Session(o), mcpserver.StreamTransport{}, false)
	return fast, sdk, tr
}

// stable is a tool result without what differs from call to call (the
// run, span, time and latency of the call; whether the live index or git
// answered).
func stable(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	volatile := func(o map[string]any) {
		for _, k := range []string{"run_id", "span_id", "at", "latency_ms", "latency", "index_reason", "source"} {
			delete(o, k)
		}
	}
	if sc, ok := m["structuredContent"].(map[string]any); ok {
		volatile(sc)
	}
	blocks, _ := m["content"].([]any)
	for i, b := range blocks { // a text block that is the result's JSON
		text, _ := b.(map[string]any)["text"].(string)
		var o map[string]any
		if json.Unmarshal([]byte(text), &o) == nil {
			volatile(o)
			blocks[i] = o
		}
	}
	return m
}

// A fast call answers what the go-sdk answers: the same content, the
// same structured content, the same error, with resultType for a
// 2026-07-28 client; what it does not take (a hidden tool, a progress
// token, the toolsets tool, an unknown tool) the go-sdk still answers.
func TestFastCallsAnswerAsTheGoSDKDoes(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"README.md": "hello <fast> & \"quoted\"\nline 2\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	f := mcpserver.NewFactory(mcpserver.Local(h), "test")
	fast, sdk, tr := fastPair(t, f, mcpserver.Options{})
	repo := `"repo_id":"` + r.ID + `"`

	calls := []struct {
		name, params string
		fast         bool // taken by the fast path
	}{
		{"read", `{"name":"read_file","arguments":{` + repo + `,"path":"README.md"}}`, true},
		{"read window", `{"arguments":{` + repo + `,"path":"README.md","offset_line":2},"name":"read_file"}`, true},
		{"missing file", `{"name":"read_file","arguments":{` + repo + `,"path":"nope.txt"}}`, true},
		{"bad argument", `{"name":"read_file","arguments":{` + repo + `,"path":5}}`, true},
		{"status", `{"name":"git_status","arguments":{` + repo + `}}`, true},
		{"null arguments", `{"name":"repository_list","arguments":null}`, true},
		{"hidden tool", `{"name":"run_start","arguments":{}}`, false},
		{"unknown tool", `{"name":"nope","arguments":{}}`, false},
		{"toolsets tool", `{"name":"toolsets","arguments":{}}`, false},
		{"progress token", `{"name":"read_file","arguments":{` + repo + `,"path":"README.md"},"_meta":{"progressToken":"p1"}}`, false},
		{"arguments not an object", `{"name":"read_file","arguments":[1]}`, false},
	}
	for i, c := range calls {
		before := mcpserver.FastCalls(tr)
		id := `"` + c.name + `"`
		frame := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + c.params + `}`
		fast.send(frame)
		got := fast.await(id)[id]
		sdk.send(frame)
		want := sdk.await(id)[id]
		if took := mcpserver.FastCalls(tr) - before; took != map[bool]int64{true: 1, false: 0}[c.fast] {
			t.Errorf("%d %s: fast calls +%d, want fast=%v", i, c.name, took, c.fast)
		}
		if (got.Error == nil) != (want.Error == nil) {
			t.Fatalf("%s: error %+v, the go-sdk's %+v", c.name, got.Error, want.Error)
		}
		if got.Error != nil {
			if got.Error.Code != want.Error.Code {
				t.Errorf("%s: error code %d, the go-sdk's %d", c.name, got.Error.Code, want.Error.Code)
			}
			continue
		}
		if g, w := stable(t, got.Result), stable(t, want.Result); !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n fast   %v\n go-sdk %v", c.name, g, w)
		}
	}
}

// On a 2026-07-28 session (initialized by its first request's _meta, as
// the go-sdk does) the plain calls are fast calls and carry resultType.
func TestFastCallsOfA2026Client(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	f := mcpserver.NewFactory(mcpserver.Local(h), "test")
	tr := &mcpserver.StreamTransport{}
	c := rawSession(t, f, mcpserver.Options{}, tr)
	call := `{"name":"read_file","arguments":{"repo_id":"` + r.ID + `","path":"README.md"},` + meta2026 + `}`
	for i, id := range []string{`"first"`, `"second"`, `"third"`} {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + call + `}`)
		m := c.await(id)[id]
		var res struct {
			ResultType string `json:"resultType"`
			Content    []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ResultType != "complete" || len(res.Content) == 0 || res.Content[0].Text != "hello\n" {
			t.Fatalf("call %d: %+v %s", i, m.Error, m.Result)
		}
	}
	// The first initialized the session through the go-sdk.
	if n := mcpserver.FastCalls(tr); n != 2 {
		t.Fatalf("fast calls %d, want 2", n)
	}
	// A request that declares an extension (tasks) goes to the go-sdk.
	ext := strings.Replace(call, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, 1)
	c.send(`{"jsonrpc":"2.0","id":"ext","method":"tools/call","params":` + ext + `}`)
	if m := c.await(`"ext"`)[`"ext"`]; m.Error != nil {
		t.Fatalf("ext: %+v", m.Error)
	}
	if n := mcpserver.FastCalls(tr); n != 2 {
		t.Fatalf("fast calls %d after a call declaring an extension, want 2", n)
	}
}

// rawSession is a raw connection through Factory.Connect that has not
// been initialized: its first 2026-07-28 request initializes it.
func rawSession(t *testing.T, f *mcpserver.Factory, o mcpserver.Options, tr *mcpserver.StreamTransport) *rawClient {
	t.Helper()
	return serveRawUninitialized(t, func(tr *mcpserver.StreamTransport) (*mcp.ServerSession, error) {
		return f.Connect(context.Background(), o, tr)
	}, tr)
}

// A fast call acts with the session's role, and notifications/cancelled
// ends one that waits: its answer comes at once, CANCELLED.
func TestFastCallsRoleAndCancel(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n"})
	ctx := context.Background()
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	f := mcpserver.NewFactory(mcpserver.Local(h), "test")
	tr := &mcpserver.StreamTransport{}
	reader := serveRawWith(t, func(tr *mcpserver.StreamTransport) (*mcp.ServerSession, error) {
		return f.Connect(ctx, mcpserver.Options{Role: op.Reader}, tr)
	}, tr, false)
	reader.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"apply_patch","arguments":{"repo_id":"` + r.ID + `","request_id":"r1","operations":[{"op":"write","path":"x.txt","content":"x"}]}}}`)
	m := reader.await("1")["1"]
	if m.Error != nil || !strings.Contains(string(m.Result), `"ROLE_DENIED"`) || mcpserver.FastCalls(tr) != 1 {
		t.Fatalf("a reader's apply_patch: %+v %s (fast calls %d), want ROLE_DENIED as a fast call", m.Error, m.Result, mcpserver.FastCalls(tr))
	}

	out, err := mcpserver.Local(h).Exec(ctx, "job_start", json.RawMessage(`{"repo_id":"`+r.ID+`","argv":["sleep","30"],"request_id":"j1"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var job struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(b, &job); err != nil || job.JobID == "" {
		t.Fatalf("job_start: %s %v", b, err)
	}
	t.Cleanup(func() {
		_, _ = mcpserver.Local(h).Exec(ctx, "job_cancel", json.RawMessage(`{"job_id":"`+job.JobID+`"}`))
	})
	tr2 := &mcpserver.StreamTransport{}
	c := serveRawWith(t, func(tr *mcpserver.StreamTransport) (*mcp.ServerSession, error) {
		return f.Connect(ctx, mcpserver.Options{}, tr)
	}, tr2, false)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"job_status","arguments":{"job_id":"` + job.JobID + `","wait_s":60}}}`)
	deadline := time.Now().Add(10 * time.Second)
	for mcpserver.FastCalls(tr2) == 0 { // the call is running as a fast call
		if time.Now().After(deadline) {
			t.Fatal("job_status never became a fast call")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`)
	m = c.await("7")["7"]
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the cancelled call answered after %s", took)
	}
	if m.Error != nil || !strings.Contains(string(m.Result), `"CANCELLED"`) {
		t.Fatalf("cancelled job_status: %+v %s, want a CANCELLED tool error", m.Error, m.Result)
	}
}

// Fast calls run on workers kept between calls: a burst of calls at once
// is answered in full, at most four workers stay to wait for the next,
// and later calls reuse them; the connection's end ends every worker (the
// package's goleak check).
func TestFastCallsReuseTheirWorkers(t *testing.T) {
	h := openHarness(t)
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	f := mcpserver.NewFactory(mcpserver.Local(h), "test")
	tr := &mcpserver.StreamTransport{}
	c := serveRawWith(t, func(tr *mcpserver.StreamTransport) (*mcp.ServerSession, error) {
		return f.Connect(context.Background(), mcpserver.Options{}, tr)
	}, tr, false)
	call := func(id int) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"read_file","arguments":{"repo_id":"` + r.ID + `","path":"README.md"}}}`
	}
	var ids []string
	for i := 1; i <= 24; i++ {
		c.send(call(i))
		ids = append(ids, strconv.Itoa(i))
	}
	for id, m := range c.await(ids...) {
		if m.Error != nil || !strings.Contains(string(m.Result), "hello") || strings.Contains(string(m.Result), `"isError":true`) {
			t.Fatalf("call %s of the burst: %+v %s", id, m.Error, m.Result)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for mcpserver.FastWorkers(tr) == 0 { // the burst's workers settle
		if time.Now().After(deadline) {
			t.Fatal("no worker waits after the burst")
		}
		time.Sleep(time.Millisecond)
	}
	if n := mcpserver.FastWorkers(tr); n > 4 {
		t.Fatalf("%d workers wait, want at most 4", n)
	}
	for i := 25; i <= 40; i++ {
		c.send(call(i))
		if m := c.await(strconv.Itoa(i))[strconv.Itoa(i)]; m.Error != nil || !strings.Contains(string(m.Result), "hello") {
			t.Fatalf("call %d: %+v %s", i, m.Error, m.Result)
		}
	}
	if n := mcpserver.FastCalls(tr); n != 40 {
		t.Fatalf("%d fast calls, want 40", n)
	}
}
