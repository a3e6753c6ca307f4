package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// abandonPost sends one raw JSON-RPC POST and returns the answer's status
// and session id; it never ends the session (the client that went away).
func abandonPost(t *testing.T, c *http.Client, url, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(hdrProtocolVersion, v20251125)
	if session != "" {
		req.Header.Set(hdrSession, session)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get(hdrSession)
}

// waitGoroutines waits until at most want goroutines run, or fails after
// the deadline with the count it last saw.
func waitGoroutines(t *testing.T, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines = %d after %s, want at most %d", n, within, want)
		}
		time.Sleep(20 * time.Millisecond) // polling the runtime, not waiting on an actor
	}
}

// Fifty sessions opened and abandoned without DELETE hold goroutines until
// the idle timeout closes them; afterwards nothing of them is left, and
// their ids answer 404 (the client initializes again).
func TestMCPHTTPAbandonedSessionsExpire(t *testing.T) {
	const idle = 300 * time.Millisecond
	newServer := func(*http.Request) (*mcp.Server, error) {
		return mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil), nil
	}
	probe := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	hs := httptest.NewServer(newMCPHTTP(mcpServers{session: newServer, shared: newServer, probe: probe}, idle))
	defer hs.Close()
	c := hs.Client()
	defer c.CloseIdleConnections()

	baseline := runtime.NumGoroutine()
	const sessions = 50
	ids := make([]string, 0, sessions)
	for range sessions {
		status, id := abandonPost(t, c, hs.URL, "",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+v20251125+`","capabilities":{},"clientInfo":{"name":"gone","version":"0"}}}`)
		if status != http.StatusOK || id == "" {
			t.Fatalf("initialize: HTTP %d, session %q", status, id)
		}
		if status, _ := abandonPost(t, c, hs.URL, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
			t.Fatalf("notifications/initialized: HTTP %d, want 202", status)
		}
		ids = append(ids, id)
	}
	c.CloseIdleConnections() // the client is gone: no connection of its own holds a goroutine
	if held := runtime.NumGoroutine() - baseline; held < sessions {
		t.Fatalf("%d open sessions hold %d goroutines, want at least one each (the test would prove nothing)", sessions, held)
	}

	waitGoroutines(t, baseline+2, 20*idle)
	for _, id := range ids[:3] {
		if status, _ := abandonPost(t, c, hs.URL, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != http.StatusNotFound {
			t.Errorf("expired session %s: HTTP %d, want 404", id, status)
		}
	}
}
