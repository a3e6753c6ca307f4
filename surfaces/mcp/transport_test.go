package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// wireMsg is any frame the server sends.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rawClient writes frames to a server session and reads its answers.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	in   chan wireMsg
	mu   sync.Mutex // serializes writes
}

// byteWriter splits every write into one-byte writes, so unserialized
// writers would interleave their frames.
type byteWriter struct{ net.Conn }

func (w byteWriter) Write(p []byte) (int, error) {
	for i := range p {
		if _, err := w.Conn.Write(p[i : i+1]); err != nil {
			return i, err
		}
	}
	return len(p), nil
}

// serveRaw serves srv on a StreamTransport over a pipe and returns the
// client end, initialized.
func serveRaw(t *testing.T, srv *mcp.Server, tr mcpserver.StreamTransport, split bool) *rawClient {
	t.Helper()
	return serveRawWith(t, func(tr *mcpserver.StreamTransport) (*mcp.ServerSession, error) {
		return srv.Connect(context.Background(), tr, nil)
	}, &tr, split)
}

// serveRawWith is serveRaw with the session connected by connect (e.g.
// Factory.Connect, which gives the connection its fast calls).
func serveRawWith(t *testing.T, connect func(*mcpserver.StreamTransport) (*mcp.ServerSession, error), tr *mcpserver.StreamTransport, split bool) *rawClient {
	t.Helper()
	c := serveRawSplit(t, connect, tr, split)
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	if m := c.await(`"init"`)[`"init"`]; m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// serveRawUninitialized is a raw connection that sent nothing yet.
func serveRawUninitialized(t *testing.T, connect func(*mcpserver.StreamTransport) (*mcp.ServerSession, error), tr *mcpserver.StreamTransport) *rawClient {
	t.Helper()
	return serveRawSplit(t, connect, tr, false)
}

func serveRawSplit(t *testing.T, connect func(*mcpserver.StreamTransport) (*mcp.ServerSession, error), tr *mcpserver.StreamTransport, split bool) *rawClient {
	t.Helper()
	client, server := net.Pipe()
	tr.Conn = server
	if split {
		tr.Conn = byteWriter{server}
	}
	ss, err := connect(tr)
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, conn: client, in: make(chan wireMsg, 1024)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(c.in)
		sc := bufio.NewScanner(client)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m wireMsg
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("server wrote a bad frame %q: %v", sc.Bytes(), err)
				return
			}
			c.in <- m
		}
	}()
	t.Cleanup(func() {
		client.Close()
		_ = ss.Close()
		<-readDone
	})
	return c
}

func (c *rawClient) send(frame string) {
	c.t.Helper()
	if err := c.write(frame); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *rawClient) write(frame string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := io.WriteString(c.conn, frame+"\n")
	return err
}

// await reads answers until one has arrived for each id (raw JSON: `1`,
// `"a"`, `null`) and returns them by id; it fails on an answer it did not
// wait for. Notifications are skipped.
func (c *rawClient) await(ids ...string) map[string]wireMsg {
	c.t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := map[string]wireMsg{}
	deadline := time.After(20 * time.Second)
	for len(got) < len(want) {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("session ended; have %v, want %v", keys(got), ids)
			}
			if m.Method != "" {
				continue
			}
			id := string(m.ID)
			if id == "" {
				id = "null"
			}
			if !want[id] {
				c.t.Fatalf("unexpected answer for id %s: %+v (waiting for %v)", id, m, ids)
			}
			got[id] = m
		case <-deadline:
			c.t.Fatalf("no answer for %v; have %v", ids, keys(got))
		}
	}
	return got
}

func keys(m map[string]wireMsg) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// testServer has two tools: echo answers at once; slow tells started and
// waits for release.
func testServer(started chan<- struct{}, release <-chan struct{}) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "frames", Version: "v0"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: schema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow"}}}, nil
	})
	return srv
}

// The bad frames, each answered with an error while the session
// goes on answering the frames after it and a call in flight from before.
func TestStreamTransportSurvivesBadFrames(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	c := serveRaw(t, testServer(started, release), mcpserver.StreamTransport{}, false)

	c.send(`{"jsonrpc":"2.0","id":"inflight","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	<-started
	bad := []struct {
		name, frame string
		code        int64
		id          string
	}{
		{"not json", `this is not json`, parseErr, "null"},
		{"NUL byte", "{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"tools/\x00list\"}", parseErr, "null"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":41,"method":"tools/list"}`, invalidReq, "41"},
		{"batch", `[{"jsonrpc":"2.0","id":42,"method":"tools/list"}]`, invalidReq, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`, invalidReq, "null"},
		{"missing method", `{"jsonrpc":"2.0","id":"m"}`, invalidReq, `"m"`},
		{"depth 1000", `{"jsonrpc":"2.0","id":43,"method":"tools/call","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, parseErr, "43"},
		{"unclosed", `{"jsonrpc":"2.0","id":44,"method":"tools/list"`, parseErr, "null"},
	}
	for i, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			c.send(tt.frame)
			ok := fmt.Sprint(100 + i)
			c.send(`{"jsonrpc":"2.0","id":` + ok + `,"method":"tools/list"}`)
			c.send(`{"jsonrpc":"2.0","id":` + ok + `1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
			got := c.await(tt.id, ok, ok+"1")
			if e := got[tt.id].Error; e == nil || e.Code != tt.code {
				t.Errorf("answer to the bad frame = %+v, want code %d", got[tt.id], tt.code)
			}
			for _, id := range []string{ok, ok + "1"} {
				if got[id].Error != nil || len(got[id].Result) == 0 {
					t.Errorf("answer %s after the bad frame = %+v, want a result", id, got[id])
				}
			}
		})
	}
	c.t = t
	close(release)
	if m := c.await(`"inflight"`)[`"inflight"`]; m.Error != nil || !strings.Contains(string(m.Result), "slow") {
		t.Fatalf("the call in flight = %+v, want its result", m)
	}
}

// A malformed response gets no answer (two peers must not trade errors),
// and the session goes on.
func TestStreamTransportDropsBadResponses(t *testing.T) {
	c := serveRaw(t, testServer(nil, nil), mcpserver.StreamTransport{}, false)
	c.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
	c.send(`{"jsonrpc":"2.0","id":7,"error":"oops"}`)
	c.send(`{"jsonrpc":"2.0","id":99,"result":{}}`) // well-formed, for no call: ignored
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	// await fails on any answer but 1; the dropped frames came first.
	if m := c.await(`1`)[`1`]; m.Error != nil {
		t.Fatalf("tools/list = %+v", m.Error)
	}
}

// A line over the limit is answered (with the id, when it comes early
// in the line) and skipped while it streams in, without buffering it.
func TestStreamTransportDiscardsOversizedFrame(t *testing.T) {
	const limit = 1 << 20
	c := serveRaw(t, testServer(nil, nil), mcpserver.StreamTransport{MaxFrameBytes: limit}, false)

	// Exactly the limit is fine.
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`
	tail := `"}}`
	c.send(head + strings.Repeat("a", limit-len(head)-len(tail)) + tail)
	if m := c.await(`1`)[`1`]; m.Error != nil {
		t.Fatalf("a frame of exactly the limit = %+v", m.Error)
	}

	const size = 64 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sendStreamed(t, c, `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"pad":"`, size)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	got := c.await(`"big"`, `2`)
	runtime.ReadMemStats(&after)
	if e := got[`"big"`].Error; e == nil || e.Code != invalidReq || !strings.Contains(e.Message, "frame longer than 1048576 bytes") {
		t.Fatalf("answer to a %d-byte frame = %+v, want invalid request", size, got[`"big"`])
	}
	if got[`2`].Error != nil {
		t.Fatalf("tools/list after the big frame = %+v", got[`2`].Error)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("reading a %d MiB line allocated %d MiB, want it bounded by the %d MiB limit", size>>20, alloc>>20, limit>>20)
	} else {
		t.Logf("a %d MiB line with a %d MiB limit allocated %.1f MiB", size>>20, limit>>20, float64(alloc)/(1<<20))
	}

	// No id early in the line: null.
	sendStreamed(t, c, `{"params":{"pad":"`, 2*limit)
	if e := c.await(`null`)[`null`].Error; e == nil || e.Code != invalidReq {
		t.Fatalf("answer = %+v", e)
	}

	// A response too long to read gets no answer: its id is the server's.
	sendStreamed(t, c, `{"jsonrpc":"2.0","id":9,"result":{"pad":"`, 2*limit)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := c.await(`3`)[`3`]; m.Error != nil { // fails on an answer to 9
		t.Fatalf("tools/list after a long response = %+v", m.Error)
	}
}

// sendStreamed writes head, then pad bytes of 'a', then a newline, from
// one small buffer.
func sendStreamed(t *testing.T, c *rawClient, head string, pad int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.conn, head); err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("a", 64<<10))
	for n := 0; n < pad; n += len(chunk) {
		if _, err := c.conn.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := io.WriteString(c.conn, "\"}}}\n"); err != nil {
		t.Fatal(err)
	}
}

// Error answers and the sdk's own frames share one writer: with a stream
// that takes one byte per write, no frame interleaves with another.
func TestStreamTransportSerializesWrites(t *testing.T) {
	c := serveRaw(t, testServer(nil, nil), mcpserver.StreamTransport{}, true)
	const n = 50
	var ids []string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range n {
			if err := c.write(fmt.Sprintf(`{"jsonrpc":"1.0","id":"bad%d","method":"tools/list"}`, i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range n {
			if err := c.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":"ok%d","method":"tools/call","params":{"name":"echo","arguments":{}}}`, i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range n {
		ids = append(ids, fmt.Sprintf(`"bad%d"`, i), fmt.Sprintf(`"ok%d"`, i))
	}
	got := c.await(ids...) // the reader fails on any frame that is not JSON
	wg.Wait()
	for _, id := range ids {
		if isBad := strings.HasPrefix(id, `"bad`); isBad != (got[id].Error != nil) {
			t.Errorf("answer %s = %+v", id, got[id])
		}
	}
}

// rwc is a stream of fixed input whose output is kept.
type rwc struct {
	io.Reader
	out *strings.Builder
}

func (s rwc) Write(p []byte) (int, error) { return s.out.Write(p) }
func (rwc) Close() error                  { return nil }

// Blank lines are skipped, a bad frame is answered without reaching Read,
// and a last frame without a newline is read before io.EOF.
func TestStreamTransportBlankLinesAndEOF(t *testing.T) {
	var out strings.Builder
	in := "\r\n  \t\n\nnot json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"
	conn, err := (&mcpserver.StreamTransport{Conn: rwc{strings.NewReader(in), &out}}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg, err := conn.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "tools/list" || req.ID.Raw() != int64(1) {
		t.Fatalf("Read = %#v, want the tools/list request", msg)
	}
	if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Read at the end = %v, want io.EOF", err)
	}
	// The answer was written before the next message was handed over.
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character 'o' in literal null (expecting 'u') (at byte 2)"}}` + "\n"
	if out.String() != want {
		t.Fatalf("written %q, want %q", out.String(), want)
	}
}

// The go-sdk's own client works over the transport against the real
// server.
func TestStreamTransportWithSDKClient(t *testing.T) {
	h := openHarness(t)
	srv := mcpserver.New(mcpserver.Local(h), "test", everySet)
	a, b := net.Pipe()
	ss, err := srv.Connect(context.Background(), &mcpserver.StreamTransport{Conn: b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: a, Writer: a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if tools := listTools(t, cs); tools["read_file"] == nil {
		t.Fatalf("no read_file among %d tools", len(tools))
	}
}
