package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// modulePath is the harnessd module, whose root holds ./cmd/harnessd.
const modulePath = "github.com/harnessd/harnessd"

// moduleRoot returns the harnessd module root above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory (run from the harnessd checkout or pass --harnessd)", modulePath)
		}
		dir = parent
	}
}

func isModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == modulePath {
			return true
		}
	}
	return false
}

// goTool returns the go command: $GOROOT/bin/go when GOROOT is set (as
// under go run and go test), else the go in PATH.
func goTool() string {
	if r := os.Getenv("GOROOT"); r != "" {
		if p := filepath.Join(r, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// buildHarnessd builds ./cmd/harnessd into dir and returns the binary.
func buildHarnessd(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "harnessd")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", bin, "./cmd/harnessd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/harnessd: %v\n%s", err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex // protects b
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}

// daemonProc is a `harnessd serve` the suite started, listening on its
// unix socket and on a loopback TCP port.
type daemonProc struct {
	bin     string
	paths   daemon.Paths
	addr    string // 127.0.0.1:PORT
	token   string
	cmd     *exec.Cmd
	log     *tailBuffer
	done    chan struct{}
	waitErr error
}

// startDaemon starts `harnessd serve` on dataDir with a loopback listener
// and waits until it is healthy.
func startDaemon(ctx context.Context, bin, dataDir string, extra ...string) (*daemonProc, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		d, err := startDaemonOn(ctx, bin, dataDir, addr, extra...)
		if err == nil {
			return d, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago (the daemon binds it itself; startDaemon retries on a lost race).
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free loopback port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

func startDaemonOn(ctx context.Context, bin, dataDir, addr string, extra ...string) (*daemonProc, error) {
	d := &daemonProc{bin: bin, paths: daemon.PathsOf(dataDir), addr: addr, log: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	// Loop detection off: the bench repeats identical calls on purpose.
	d.cmd = exec.Command(bin, append([]string{"serve", "--data-dir", dataDir, "--listen", addr, "--log-level", "warn", "--log-format", "json", "--loop-threshold", "0"}, extra...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start harnessd serve: %w", err)
	}
	go func() { d.waitErr = d.cmd.Wait(); close(d.done) }()

	c := client.Unix(d.paths.Socket)
	defer c.Close()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Healthy(hctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-d.done:
			return nil, fmt.Errorf("harnessd serve exited before answering (%v): %s", d.waitErr, d.log.String())
		case <-ctx.Done():
			_ = d.Stop()
			return nil, ctx.Err()
		case <-deadline.C:
			_ = d.Stop()
			return nil, fmt.Errorf("harnessd serve not healthy within 20s: %v: %s", err, d.log.String())
		case <-tick.C:
		}
	}
	tok, err := daemon.ReadToken(d.paths)
	if err != nil || tok == "" {
		_ = d.Stop()
		return nil, fmt.Errorf("read the daemon token: %v", err)
	}
	d.token = tok
	return d, nil
}

// Pid returns the daemon's process id.
func (d *daemonProc) Pid() int { return d.cmd.Process.Pid }

// Stop sends SIGTERM, waits up to 10 s, then kills the daemon.
func (d *daemonProc) Stop() error {
	select {
	case <-d.done:
		return nil
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-d.done:
		if d.waitErr != nil {
			return fmt.Errorf("harnessd serve: %v: %s", d.waitErr, d.log.String())
		}
		return nil
	case <-t.C:
	}
	_ = d.cmd.Process.Kill()
	<-d.done
	return fmt.Errorf("harnessd serve did not stop within 10s of SIGTERM; killed: %s", d.log.String())
}

// Goroutines returns the daemon's goroutine count from GET /v1/status.
func (d *daemonProc) Goroutines(ctx context.Context) (int, error) {
	c := client.Unix(d.paths.Socket)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := c.Get(ctx, "/v1/status")
	if err != nil {
		return 0, err
	}
	var st struct {
		Goroutines     int `json:"goroutines"`
		SandboxThreads int `json:"sandbox_threads"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return 0, fmt.Errorf("decode /v1/status: %w", err)
	}
	return st.Goroutines - st.SandboxThreads, nil // the pooled confined threads are not a leak
}

// stdio connects through `harnessd mcp --data-dir D` (which bridges to this
// daemon over its unix socket).
func (d *daemonProc) stdio(ctx context.Context) (*mcpSurface, error) {
	cmd := exec.Command(d.bin, "mcp", "--data-dir", d.paths.DataDir, "--toolsets", benchToolsets, "--log-level", "warn", "--log-format", "json")
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	s, err := connectMCP(ctx, SurfaceMCPStdio, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		if msg := stderr.String(); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	return s, nil
}

// bearer adds the daemon's token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// httpTransport returns a loopback-only transport for the daemon.
func httpTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil, // loopback only: never a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     30 * time.Second,
	}
}

// http connects over streamable HTTP to the daemon's loopback listener.
// The transport tr may be shared by several sessions; the caller closes
// its idle connections.
func (d *daemonProc) http(ctx context.Context, tr *http.Transport) (*mcpSurface, error) {
	hc := &http.Client{Transport: &bearer{token: d.token, base: tr}}
	t := &mcp.StreamableClientTransport{Endpoint: "http://" + d.addr + "/mcp?toolsets=" + benchToolsets, HTTPClient: hc, MaxRetries: -1}
	return connectMCP(ctx, SurfaceMCPHTTP, t, nil)
}

// benchToolsets are the toolsets the bench's MCP sessions ask for: every
// set, since the cases register a repository (admin) and call batch and
// read_lanes.
const benchToolsets = "all"

// errNoDaemon is the reason daemon surfaces are skipped when no harnessd
// binary can be had.
var errNoDaemon = errors.New("harnessd binary not available")
