package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

var harnessdBin, harnessBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "harnessd-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	harnessdBin, harnessBin, err = testutil.BuildBinaries("../..", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The bridges the tests start serve every toolset (the default is
	// core): the tests call tools of them all over MCP.
	os.Setenv("HARNESSD_TOOLSETS", "all")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemonProc is a `harnessd serve` subprocess.
type daemonProc struct {
	cmd     *exec.Cmd
	dataDir string
	stderr  *syncBuffer
	done    chan struct{}
	err     error
}

type syncBuffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// withArea adds the tests' temp dir as an allowed area (where every
// test's repositories live), unless extra names areas itself: tests
// register as agents would, unasked, inside it.
func withArea(extra []string) []string {
	for _, a := range extra {
		if a == "--allow-root" || strings.HasPrefix(a, "--allow-root=") {
			return extra
		}
	}
	return append([]string{"--allow-root", os.TempDir()}, extra...)
}

func startDaemon(t *testing.T, dataDir string, extra ...string) *daemonProc {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--log-format", "json"}, withArea(extra)...)
	d := &daemonProc{cmd: exec.Command(harnessdBin, args...), dataDir: dataDir, stderr: &syncBuffer{}, done: make(chan struct{})}
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
	})
	c := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Healthy(ctx)
		cancel()
		if err == nil {
			return d
		}
		select {
		case <-d.done:
			t.Fatalf("daemon exited early: %v\n%s", d.err, d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon not healthy: %v\n%s", err, d.stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a subprocess, not an actor
	}
}

func (d *daemonProc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-d.done:
		return d.err
	case <-time.After(timeout):
		t.Fatalf("daemon did not exit within %s\n%s", timeout, d.stderr.String())
		return nil
	}
}

// mcpSession connects the go-sdk MCP client to `harnessd mcp`.
func mcpSession(t *testing.T, dataDir string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(harnessdBin, append([]string{"mcp", "--data-dir", dataDir, "--log-level", "warn"}, withArea(nil)...)...)
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect harnessd mcp: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type toolError struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// callTool calls a tool and decodes its structured content into out (or
// the error body when the tool failed). It returns whether the tool failed.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) (isError bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("decode %s result %s: %v", name, b, err)
		}
	}
	return res.IsError
}

func wantToolError(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, code string) {
	t.Helper()
	var te toolError
	if !callTool(t, s, name, args, &te) {
		t.Fatalf("%s(%v) succeeded, want %s", name, args, code)
	}
	if te.Error.Code != code {
		t.Fatalf("%s(%v) code = %q (%s), want %s", name, args, te.Error.Code, te.Error.Message, code)
	}
}

type repoResult struct {
	RepoID     string `json:"repo_id"`
	CheckoutID string `json:"checkout_id"`
	Root       string `json:"root"`
	Created    bool   `json:"created"`
	Route      string `json:"route"`
	Latency    struct {
		TotalMs float64 `json:"total_ms"`
	} `json:"latency"`
}

// The main scenario: register through `harnessd mcp`, kill -9 the
// daemon, start it again, the repository is listed with the same id.
func TestRegisterThroughMCPSurvivesKill9(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"README.md": "hi\n"})
	d := startDaemon(t, dataDir)

	s := mcpSession(t, dataDir)
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]bool{}
	for _, tl := range tools.Tools {
		b, _ := json.Marshal(tl.InputSchema)
		schemas[tl.Name] = strings.Contains(string(b), `"type":"object"`)
	}
	for _, name := range []string{"repository_register", "repository_list", "repository_unregister"} {
		if !schemas[name] {
			t.Errorf("tool %s missing or without an object input schema", name)
		}
	}

	var r repoResult
	if callTool(t, s, "repository_register", map[string]any{"path": repo}, &r) {
		t.Fatalf("register failed: %+v", r)
	}
	if !r.Created || r.Root != repo || !strings.HasPrefix(r.RepoID, "repo_") || r.Route != "fast" {
		t.Fatalf("register = %+v", r)
	}
	wantToolError(t, s, "repository_register", map[string]any{}, "INVALID_ARGUMENT")
	wantToolError(t, s, "repository_register", map[string]any{"path": t.TempDir()}, "NOT_A_GIT_REPOSITORY")
	wantToolError(t, s, "repository_unregister", map[string]any{"repo_id": "repo_ffffffffffffffff"}, "REPOSITORY_NOT_REGISTERED")

	// kill -9: no shutdown path runs.
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.wait(t, 10*time.Second)
	startDaemon(t, dataDir)

	s2 := mcpSession(t, dataDir)
	var l struct {
		Repositories []repoResult `json:"repositories"`
	}
	if callTool(t, s2, "repository_list", nil, &l) {
		t.Fatalf("list failed: %+v", l)
	}
	if len(l.Repositories) != 1 || l.Repositories[0].RepoID != r.RepoID || l.Repositories[0].CheckoutID != r.CheckoutID {
		t.Fatalf("after kill -9 and restart: %+v, want %s", l.Repositories, r.RepoID)
	}
}

func TestSecondDaemonRefused(t *testing.T) {
	dataDir := t.TempDir()
	d := startDaemon(t, dataDir)
	cmd := exec.Command(harnessdBin, "serve", "--data-dir", dataDir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("second daemon exited 0:\n%s", out)
	}
	want := fmt.Sprintf("already running on data dir %s (pid %d", dataDir, d.cmd.Process.Pid)
	if !strings.Contains(string(out), want) {
		t.Fatalf("second daemon said %q, want it to contain %q", out, want)
	}
}

func TestCleanShutdownIsFast(t *testing.T) {
	dataDir := t.TempDir()
	d := startDaemon(t, dataDir)
	repo := testutil.Repo(t, nil)
	c := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c.Close()
	if _, err := c.Call(context.Background(), "repository_register", map[string]any{"path": repo}); err != nil {
		t.Fatal(err)
	}
	// An open MCP stream must not hold shutdown up.
	s := mcpSession(t, dataDir)
	_ = s
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(t, 10*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.stderr.String())
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("shutdown took %s, want under 2s", took)
	}
	if !strings.Contains(d.stderr.String(), "stopped cleanly") {
		t.Fatalf("no clean stop in the log:\n%s", d.stderr.String())
	}
	if _, err := os.Stat(daemon.PathsOf(dataDir).Socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// Two `harnessd mcp` bridges started at once with no daemon running share
// one daemon and see the same registry.
func TestTwoBridgesShareOneDaemon(t *testing.T) {
	dataDir := t.TempDir()
	repo := testutil.Repo(t, nil)
	var s1, s2 *mcp.ClientSession
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s1 = mcpSessionNoFatal(t, dataDir) }()
	go func() { defer wg.Done(); s2 = mcpSessionNoFatal(t, dataDir) }()
	wg.Wait()
	if s1 == nil || s2 == nil {
		t.Fatal("a bridge failed to connect")
	}
	t.Cleanup(func() { stopDaemonOf(t, dataDir) })
	var r repoResult
	if callTool(t, s1, "repository_register", map[string]any{"path": repo}, &r) {
		t.Fatalf("register failed: %+v", r)
	}
	var l struct {
		Repositories []repoResult `json:"repositories"`
	}
	callTool(t, s2, "repository_list", nil, &l)
	if len(l.Repositories) != 1 || l.Repositories[0].RepoID != r.RepoID {
		t.Fatalf("second bridge sees %+v, want %s", l.Repositories, r.RepoID)
	}
}

func mcpSessionNoFatal(t *testing.T, dataDir string) *mcp.ClientSession {
	// The daemon this bridge may start has the tests' temp dir as an
	// allowed area (withArea).
	cmd := exec.Command(harnessdBin, append([]string{"mcp", "--data-dir", dataDir, "--log-level", "warn"}, withArea(nil)...)...)
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Errorf("connect: %v", err)
		return nil
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// stopDaemonOf stops the daemon a bridge started, by its pid file.
func stopDaemonOf(t *testing.T, dataDir string) {
	b, err := os.ReadFile(daemon.PathsOf(dataDir).Pid)
	if err != nil {
		return
	}
	var pid int
	fmt.Sscanf(string(b), "%d", &pid)
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling another process
	}
	if syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestTCPRequiresToken(t *testing.T) {
	dataDir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	startDaemon(t, dataDir, "--listen", addr)
	tok, err := daemon.ReadToken(daemon.PathsOf(dataDir))
	if err != nil || len(tok) < 32 {
		t.Fatalf("token %q, %v", tok, err)
	}
	st, _ := os.Stat(daemon.PathsOf(dataDir).Token)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("token mode %v, want 0600", st.Mode().Perm())
	}
	resp, err := http.Get("http://" + addr + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d, want 401", resp.StatusCode)
	}
	c := client.TCP(addr, tok)
	defer c.Close()
	if _, err := c.Get(context.Background(), "/v1/status"); err != nil {
		t.Fatalf("with token: %v", err)
	}
	bad := client.TCP(addr, "wrong")
	defer bad.Close()
	if _, err := bad.Get(context.Background(), "/v1/status"); err == nil {
		t.Fatal("wrong token accepted")
	}
}

func TestBadListenRefused(t *testing.T) {
	out, err := exec.Command(harnessdBin, "serve", "--data-dir", t.TempDir(), "--listen", "0.0.0.0:7000").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "only loopback") {
		t.Fatalf("non-loopback listen: err=%v out=%s", err, out)
	}
}
