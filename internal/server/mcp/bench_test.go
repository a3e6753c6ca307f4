package mcpserver_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
	mcpserver "github.com/harnessd/harnessd/internal/server/mcp"
)

// BenchmarkMCPReadFile measures one read_file tool call through the go-sdk
// client and server over in-memory transports: the MCP layer's own cost.
func BenchmarkMCPReadFile(b *testing.B) {
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	dir := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Fatal(err, string(out))
	}
	if err := exec.Command("sh", "-c", "echo hello > "+filepath.Join(dir, "README.md")).Run(); err != nil {
		b.Fatal(err)
	}
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: dir})
	if err != nil {
		b.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	srv := mcpserver.New(mcpserver.Local(h), "bench")
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"repo_id": r.ID, "path": "README.md"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkCheckFrame measures the validation of one 16 MiB frame (the
// largest the stream transport reads) and of a small tools/call frame.
func BenchmarkCheckFrame(b *testing.B) {
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"`
	tail := `"}}}`
	frames := map[string][]byte{
		"small": []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"repo_id":"repo_1","path":"README.md"}}}`),
		"16MiB": []byte(head + strings.Repeat("a", mcpserver.DefaultMaxFrameBytes-len(head)-len(tail)) + tail),
	}
	for _, name := range []string{"small", "16MiB"} {
		frame := frames[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if fe := mcpserver.CheckFrame(frame); fe != nil {
					b.Fatal(fe)
				}
			}
		})
	}
}
