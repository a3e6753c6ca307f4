package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// rpcMsg is any frame `harnessd mcp` writes.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rawMCP drives `harnessd mcp` with raw frames on its stdin.
type rawMCP struct {
	t     *testing.T
	stdin io.WriteCloser
	in    chan rpcMsg
}

func startRawMCP(t *testing.T, dataDir string) *rawMCP {
	t.Helper()
	cmd := exec.Command(harnessdBin, "mcp", "--data-dir", dataDir, "--log-level", "warn")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rawMCP{t: t, stdin: stdin, in: make(chan rpcMsg, 256)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(c.in)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var m rpcMsg
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("harnessd mcp wrote a bad frame %q: %v", sc.Bytes(), err)
				return
			}
			c.in <- m
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-readDone:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-readDone
		}
		if err := cmd.Wait(); err != nil {
			t.Logf("harnessd mcp: %v\n%s", err, stderr.String())
		}
	})
	return c
}

func (c *rawMCP) send(frame string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, frame+"\n"); err != nil {
		c.t.Fatalf("write to harnessd mcp: %v", err)
	}
}

// sendPadded writes head, pad bytes of 'a' and tail plus a newline,
// streaming the padding from one small buffer.
func (c *rawMCP) sendPadded(head string, pad int, tail string) {
	c.t.Helper()
	chunk := []byte(strings.Repeat("a", 64<<10))
	if _, err := io.WriteString(c.stdin, head); err != nil {
		c.t.Fatal(err)
	}
	for n := 0; n < pad; n += len(chunk) {
		if _, err := c.stdin.Write(chunk[:min(len(chunk), pad-n)]); err != nil {
			c.t.Fatal(err)
		}
	}
	if _, err := io.WriteString(c.stdin, tail+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// await reads until an answer has arrived for each id (raw JSON: `1`,
// `"a"`, `null`) and returns them by id; an answer to any other id
// fails the test. Notifications are skipped.
func (c *rawMCP) await(ids ...string) map[string]rpcMsg {
	c.t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := map[string]rpcMsg{}
	deadline := time.After(60 * time.Second)
	for len(got) < len(want) {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("harnessd mcp ended the session; have %d of %v", len(got), ids)
			}
			if m.Method != "" {
				continue
			}
			id := string(m.ID)
			if id == "" {
				id = "null"
			}
			if !want[id] {
				c.t.Fatalf("unexpected answer for id %s: %+v %s (waiting for %v)", id, m.Error, m.Result, ids)
			}
			got[id] = m
		case <-deadline:
			c.t.Fatalf("no answer for %v within 60s; have %d", ids, len(got))
		}
	}
	return got
}

// call sends a tools/call and returns its structured content.
func (c *rawMCP) call(id, tool string, args map[string]any, out any) {
	c.t.Helper()
	c.send(toolCall(id, tool, args))
	m := c.await(id)[id]
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.IsError {
		c.t.Fatalf("%s: %+v %s", tool, m.Error, m.Result)
	}
	if err := json.Unmarshal(res.StructuredContent, out); err != nil {
		c.t.Fatal(err)
	}
}

func toolCall(id, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// The malformed frames, through `harnessd mcp`: each gets a
// JSON-RPC error, the valid requests after each are answered, and a call
// in flight when they arrive (job_status waiting on a job) is answered
// at the end.
func TestMCPSessionSurvivesBadFrames(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	startDaemon(t, dataDir)
	c := startRawMCP(t, dataDir)
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	if m := c.await(`"init"`)[`"init"`]; m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	var r repoResult
	c.call(`"reg"`, "repository_register", map[string]any{"path": repo}, &r)
	var job struct {
		JobID string `json:"job_id"`
		State string `json:"state"`
	}
	c.call(`"start"`, "job_start", map[string]any{"repo_id": r.RepoID, "argv": []string{"sleep", "600"}, "request_id": "frames-1"}, &job)
	// In flight until the job ends, which only the job_cancel below does.
	c.send(toolCall(`"inflight"`, "job_status", map[string]any{"job_id": job.JobID, "wait_s": 600}))

	const big = 20 << 20
	bad := []struct {
		name       string
		frame      string // or, with pad > 0, head + pad bytes + tail
		pad        int
		tail       string
		code       int64
		id         string
		msgContain string
	}{
		{name: "not json", frame: `this is not json`, code: -32700, id: "null"},
		{name: "NUL byte", frame: "{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"tools/\x00list\"}", code: -32700, id: "null"},
		{name: "jsonrpc 1.0", frame: `{"jsonrpc":"1.0","id":41,"method":"tools/list"}`, code: -32600, id: "41"},
		{name: "batch", frame: `[{"jsonrpc":"2.0","id":42,"method":"tools/list"},{"jsonrpc":"2.0","id":43,"method":"tools/list"}]`, code: -32600, id: "null", msgContain: "batch"},
		{name: "object id", frame: `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`, code: -32600, id: "null"},
		{name: "missing method", frame: `{"jsonrpc":"2.0","id":"m"}`, code: -32600, id: `"m"`},
		{name: "depth 1000", frame: `{"jsonrpc":"2.0","id":44,"method":"tools/call","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, code: -32700, id: "44", msgContain: "nesting deeper than 512"},
		{name: "20 MiB frame", frame: `{"jsonrpc":"2.0","id":45,"method":"tools/call","params":{"name":"read_file","arguments":{"pad":"`, pad: big, tail: `"}}}`, code: -32600, id: "45", msgContain: "frame longer than 16777216 bytes"},
		{name: "20 MiB garbage", frame: `garbage`, pad: big, code: -32600, id: "null"},
	}
	for i, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			if tt.pad > 0 {
				c.sendPadded(tt.frame, tt.pad, tt.tail)
			} else {
				c.send(tt.frame)
			}
			list, call := fmt.Sprint(100+i), fmt.Sprint(200+i)
			c.send(`{"jsonrpc":"2.0","id":` + list + `,"method":"tools/list"}`)
			c.send(toolCall(call, "repository_list", map[string]any{}))
			got := c.await(tt.id, list, call)
			if e := got[tt.id].Error; e == nil || e.Code != tt.code || !strings.Contains(e.Message, tt.msgContain) {
				t.Errorf("answer to the bad frame = %+v, want code %d with %q", e, tt.code, tt.msgContain)
			}
			if m := got[list]; m.Error != nil || !strings.Contains(string(m.Result), "repository_register") {
				t.Errorf("tools/list after the bad frame = %+v", m.Error)
			}
			if m := got[call]; m.Error != nil || !strings.Contains(string(m.Result), r.RepoID) {
				t.Errorf("repository_list after the bad frame = %+v %s", m.Error, m.Result)
			}
		})
	}
	c.t = t

	// job_cancel answers once the job is dead, job_status once it ended:
	// either may come first.
	c.send(toolCall(`"cancel"`, "job_cancel", map[string]any{"job_id": job.JobID}))
	got := c.await(`"cancel"`, `"inflight"`)
	if m := got[`"cancel"`]; m.Error != nil {
		t.Fatalf("job_cancel = %+v", m.Error)
	}
	if m := got[`"inflight"`]; m.Error != nil || !strings.Contains(string(m.Result), `"state":"cancelled"`) {
		t.Fatalf("the call in flight during the bad frames = %+v %s, want the cancelled job", m.Error, m.Result)
	}
}

// The daemon's streamable HTTP endpoint refuses bad POST bodies with a
// 4xx and its session goes on.
func TestMCPHTTPSessionSurvivesBadBodies(t *testing.T) {
	dataDir := t.TempDir()
	startDaemon(t, dataDir)
	sock := daemon.PathsOf(dataDir).Socket
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	defer hc.CloseIdleConnections()
	const endpoint = "http://harnessd/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	bodies := []string{
		`this is not json`,
		"{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"tools/\x00list\"}",
		`{"jsonrpc":"1.0","id":41,"method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":42,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":{},"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":43,"method":"tools/call","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
	}
	for _, body := range bodies {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode > 499 {
			t.Errorf("POST %.40q: HTTP %d, want 4xx", body, resp.StatusCode)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list after POST %.40q: %v", body, err)
		}
	}
}
