package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/surfaces/daemon"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// The toolsets and role `harnessd mcp --toolsets … --role …` asks for reach
// the daemon's session, over a handoff of the agent's pipes and over bytes
// copied both ways; a connection without the options line (an older
// bridge, a direct client) gets core and operator.
func TestMCPSocketSessionOptions(t *testing.T) {
	dir := dataDir(t)
	r := start(t, daemon.Config{DataDir: dir})
	ctx := context.Background()
	opts := mcpserver.Options{Toolsets: []op.Toolset{op.Runs}, Role: op.Reader}

	check := func(t *testing.T, cs *mcp.ClientSession, wantRuns bool, wantRole string) {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if slices.Contains(names, "run_status") != wantRuns || !slices.Contains(names, "read_file") {
			t.Fatalf("tools %v: run_status listed %v, want %v", names, !wantRuns, wantRuns)
		}
		got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolsetsTool, Arguments: map[string]any{}})
		if err != nil || got.IsError {
			t.Fatalf("toolsets: %v %+v", err, got)
		}
		var list mcpserver.ToolsetsResult
		b, _ := json.Marshal(got.StructuredContent)
		if err := json.Unmarshal(b, &list); err != nil || list.Role != wantRole {
			t.Fatalf("toolsets: %s, want role %s", b, wantRole)
		}
		if wantRole == "reader" {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "repository_register", Arguments: map[string]any{"path": t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			var body mcpserver.ErrorBody
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &body)
			// admin is not enabled: the call names the set (the role would refuse it too).
			if !res.IsError || body.Error == nil || body.Error.Code != errs.NotFound {
				t.Fatalf("a reader's repository_register: %s", b)
			}
		}
	}

	t.Run("handoff", func(t *testing.T) {
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		bridged := make(chan error, 1)
		go func() {
			bridged <- daemon.RunStdioWith(ctx, dir, inR, outW, opts)
			inR.Close()
			outW.Close()
		}()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, cs, true, "reader")
		cs.Close()
		select {
		case err := <-bridged:
			if err != nil {
				t.Fatalf("RunStdioWith = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the bridge did not return after the agent closed stdin")
		}
		outR.Close()
	})

	// stdin and stdout that are no files: the bridge copies bytes.
	t.Run("copied", func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		bridged := make(chan error, 1)
		go func() {
			bridged <- daemon.RunStdioWith(ctx, dir, inR, outW, opts)
			outW.Close()
		}()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, cs, true, "reader")
		cs.Close()
		select {
		case err := <-bridged:
			if err != nil {
				t.Fatalf("RunStdioWith = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the bridge did not return after the agent closed stdin")
		}
	})

	t.Run("no options line", func(t *testing.T) {
		conn, err := net.Dial("unix", r.p.MCPSocket)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
		if err != nil {
			conn.Close()
			t.Fatal(err)
		}
		defer cs.Close()
		check(t, cs, false, "operator")
	})

	// A bad options line ends the connection: a narrowed role never widens.
	t.Run("bad options line", func(t *testing.T) {
		conn, err := net.Dial("unix", r.p.MCPSocket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte(`{"method":"notifications/harnessd/options","jsonrpc":"2.0","params":{"role":"root"}}` + "\n")); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		if b, err := io.ReadAll(conn); err != nil || len(b) != 0 {
			t.Fatalf("after a bad options line: %q, %v; want the connection closed", b, err)
		}
	})
}
