package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// benchHarness opens an in-memory harness with one registered repository
// holding README.md, and returns it with the repository's id.
func benchHarness(b *testing.B) (*harness.Harness, string) {
	b.Helper()
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true, AllowRoots: []string{os.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close(context.Background()) })
	dir := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Fatal(err, string(out))
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: dir})
	if err != nil {
		b.Fatal(err)
	}
	return h, r.ID
}

// BenchmarkMCPReadFile measures one read_file tool call through the go-sdk
// client and server over in-memory transports: the MCP layer's own cost,
// both sides of it.
func BenchmarkMCPReadFile(b *testing.B) {
	ctx := context.Background()
	h, repo := benchHarness(b)
	ct, st := mcp.NewInMemoryTransports()
	srv := mcpserver.New(mcpserver.Local(h), "bench", everySet)
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
	params := &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"repo_id": repo, "path": "README.md"}}
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// cpuClock starts a clock of the process's CPU time (user and system,
// all goroutines: client and server); the function it returns reports it
// per iteration as cpu-ns/op. On a shared machine it varies less than the
// wall time does. Use: defer cpuClock(b)() before the loop.
func cpuClock(b *testing.B) func() {
	start := cpuNow()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// socketPair is a connected pair of unix stream sockets: the transport of
// the daemon's MCP socket, without the file system.
func socketPair(b *testing.B) (net.Conn, net.Conn) {
	b.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "mcp-bench")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

// callFrame is a tools/call frame for read_file as the go-sdk's client
// (v1.8, protocol 2026-07-28) writes it, with its per-request _meta.
func callFrame(id int, repo string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"_meta":{` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"v0"},` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28"},` +
		`"name":"read_file","arguments":{"path":"README.md","repo_id":"` + repo + `"}}}` + "\n")
}

// Where an MCP call's time and memory go (go-sdk v1.8.0, read_file of a
// 6-byte file, -benchmem): the go-sdk's internal/json.Unmarshal decodes
// every value through segmentio's streaming Decoder over a bytes.Reader,
// which allocates a 32 KiB read buffer each time. A tools/call costs the
// server one for the _meta of the request, two for the clientInfo and
// clientCapabilities it re-marshals and decodes again, one for the params,
// and (before the stream transport decoded its own frames) two for the
// frame itself; the client spends about six more on the answer. Decoding
// from the slice instead (segmentio's json.Parse with
// DontMatchCaseInsensitiveStructFields, a change to that one function in
// the go-sdk) takes the server's allocations from ≈ 162 KB to ≈ 31 KB a
// call and both sides' from ≈ 300 KB to ≈ 41 KB (measured with a patched
// copy of the go-sdk through a go.work replace; not in this tree).

// BenchmarkMCPStreamReadFile measures read_file over the daemon's MCP
// socket transport (StreamTransport on a unix socket pair): "inproc" is
// the call without MCP (the floor), "server" the server side alone (the
// client writes the go-sdk's frame and reads the answer line), "sdk" the
// go-sdk client on top (what `harnessd mcp` clients such as the bench
// suite pay, less the stdio bridge).
func BenchmarkMCPStreamReadFile(b *testing.B) {
	ctx := context.Background()
	h, repo := benchHarness(b)
	f := mcpserver.NewFactory(mcpserver.Local(h), "bench")
	serve := func(b *testing.B) net.Conn {
		c, s := socketPair(b)
		ss, err := f.Connect(ctx, everySet, &mcpserver.StreamTransport{Conn: s})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close(); _ = ss.Close() })
		return c
	}
	b.Run("inproc", func(b *testing.B) {
		args := json.RawMessage(`{"path":"README.md","repo_id":"` + repo + `"}`)
		b.ReportAllocs()
		defer cpuClock(b)()
		for b.Loop() {
			if _, err := h.CallOp(ctx, "read_file", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("server", func(b *testing.B) {
		c := serve(b)
		br := bufio.NewReader(c)
		id := 0
		b.ReportAllocs()
		defer cpuClock(b)()
		for b.Loop() {
			id++
			if _, err := c.Write(callFrame(id, repo)); err != nil {
				b.Fatal(err)
			}
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(string(line), `"id":`+strconv.Itoa(id)+`,"result"`) || strings.Contains(string(line), `"isError":true`) {
				b.Fatalf("answer %s", line)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		c := serve(b)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).
			Connect(ctx, &mcp.IOTransport{Reader: c, Writer: c}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		params := &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"repo_id": repo, "path": "README.md"}}
		b.ReportAllocs()
		defer cpuClock(b)()
		for b.Loop() {
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}

// BenchmarkMCPHTTPReadFile measures read_file through the go-sdk client
// over streamable HTTP (the daemon's handler, on a loopback test server):
// the mcp-http surface, in one process.
func BenchmarkMCPHTTPReadFile(b *testing.B) {
	ctx := context.Background()
	h, repo := benchHarness(b)
	srv := mcpserver.New(mcpserver.Local(h), "bench", everySet)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	defer hs.Client().CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hs.Client(), MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"repo_id": repo, "path": "README.md"}}
	b.ReportAllocs()
	defer cpuClock(b)()
	for b.Loop() {
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
