package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// badBodies are the bad frames as POST bodies.
var badBodies = []struct{ name, body string }{
	{"not json", `this is not json`},
	{"NUL byte", "{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"tools/\x00list\"}"},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":41,"method":"tools/list"}`},
	{"batch", `[{"jsonrpc":"2.0","id":42,"method":"tools/list"}]`},
	{"object id", `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`},
	{"depth 1000", `{"jsonrpc":"2.0","id":43,"method":"tools/call","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`},
	{"over the body limit", `{"jsonrpc":"2.0","id":44,"method":"tools/list","params":{"pad":"` + strings.Repeat("a", mcp.DefaultMaxRequestBodyBytes) + `"}}`},
}

// On streamable HTTP (configured as the daemon configures it) a bad POST
// body is refused with a 4xx and the session goes on: it already does, so
// this pins it.
func TestStreamableHTTPSurvivesBadBodies(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	srv := testServer(started, release)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	defer hs.Client().CloseIdleConnections()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http", Version: "v0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hs.Client()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	inflight := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		inflight <- err
	}()
	<-started
	for _, tt := range badBodies {
		t.Run(tt.name, func(t *testing.T) {
			status, body := postRaw(t, hs.Client(), hs.URL, cs.ID(), cs.InitializeResult().ProtocolVersion, tt.body)
			if status < 400 || status > 499 {
				t.Fatalf("HTTP %d (%s), want 4xx", status, body)
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatalf("tools/list after the bad body: %v", err)
			}
		})
	}
	close(release)
	if err := <-inflight; err != nil {
		t.Fatalf("the call in flight: %v", err)
	}
}

// postRaw POSTs body to an MCP session and returns the status and the
// start of the answer.
func postRaw(t *testing.T, c *http.Client, url, session, version, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", version)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, string(b)
}
