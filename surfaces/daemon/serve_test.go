package daemon_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of confined checks and jobs
	goleak.VerifyTestMain(m)
}

// dataDir returns a fresh data dir path (not yet created), short enough
// for unix socket paths whatever the test's name.
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "data")
}

type running struct {
	p      daemon.Paths
	stop   context.CancelFunc
	done   chan error
	waited bool
}

// start runs Serve in a goroutine and waits for its Ready callback. The
// daemon is stopped at the end of the test if the test did not stop it.
func start(t *testing.T, cfg daemon.Config) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan daemon.Paths, 1)
	cfg.Ready = func(p daemon.Paths) { ready <- p }
	r := &running{stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- daemon.Serve(ctx, cfg, zap.NewNop()) }()
	t.Cleanup(func() {
		if !r.waited {
			cancel()
			<-r.done
		}
	})
	select {
	case r.p = <-ready:
	case err := <-r.done:
		r.waited = true
		t.Fatalf("Serve returned before Ready: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve was not ready within 20s")
	}
	return r
}

// shutdown cancels Serve's context and returns what Serve returned.
func (r *running) shutdown(t *testing.T) error {
	t.Helper()
	r.stop()
	select {
	case err := <-r.done:
		r.waited = true
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of cancellation")
		return nil
	}
}

func unixClient(t *testing.T, socket string) *client.Client {
	t.Helper()
	c := client.Unix(socket)
	t.Cleanup(c.Close)
	return c
}

func wantMode(t *testing.T, path string, socket bool) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode()&fs.ModeSocket != 0; got != socket {
		t.Errorf("%s: socket = %v, want %v", path, got, socket)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
	}
}

func wantGone(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still exists after shutdown (%v)", p, err)
		}
	}
}

func TestPathsOf(t *testing.T) {
	p := daemon.PathsOf("/d")
	for got, want := range map[string]string{
		p.DataDir:   "/d",
		p.Socket:    "/d/harnessd.sock",
		p.MCPSocket: "/d/mcp.sock",
		p.Lock:      "/d/harnessd.lock",
		p.Pid:       "/d/harnessd.pid",
		p.Token:     "/d/token",
		p.Log:       "/d/harnessd.log",
	} {
		if got != want {
			t.Errorf("path %q, want %q", got, want)
		}
	}
}

func TestServeLifecycle(t *testing.T) {
	dir := dataDir(t)
	p := daemon.PathsOf(dir)
	// A leftover socket file of a daemon that died is replaced.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Socket, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := start(t, daemon.Config{DataDir: dir})
	if r.p != p {
		t.Errorf("Ready got %+v, want %+v", r.p, p)
	}
	wantMode(t, p.Socket, true)
	wantMode(t, p.MCPSocket, true)
	b, err := os.ReadFile(p.Pid)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid file = %q (%v), want %d", b, err, os.Getpid())
	}
	// The human credential exists from the first start (not only with
	// --listen): people's endpoints need it on the unix socket too.
	wantMode(t, p.Token, false)

	ctx := context.Background()
	c := unixClient(t, p.Socket)
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("Healthy: %v", err)
	}
	if _, err := c.Get(ctx, "/v1/approvals"); errs.CodeOf(err) != errs.Unauthenticated {
		t.Fatalf("approvals over the unix socket without the token: %v, want UNAUTHENTICATED", err)
	}
	token, err := daemon.ReadToken(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WithToken(token).Get(ctx, "/v1/approvals"); err != nil {
		t.Fatalf("approvals with the token: %v", err)
	}
	raw, err := c.Call(ctx, "repository_list", nil)
	if err != nil || !strings.Contains(string(raw), "repositories") {
		t.Fatalf("repository_list = %s, %v", raw, err)
	}

	t.Run("mcp socket", func(t *testing.T) {
		conn, err := net.Dial("unix", p.MCPSocket)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
			Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
		if err != nil {
			conn.Close()
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tool := range res.Tools {
			found = found || tool.Name == "read_file"
		}
		if !found {
			t.Errorf("the MCP socket's tools lack read_file: %d tools", len(res.Tools))
		}
	})

	// A bridge whose stdin and stdout are pipes hands them to the daemon,
	// which serves the agent on them; the agent closing stdin ends the
	// session and the bridge.
	t.Run("stdio handoff", func(t *testing.T) {
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
			bridged <- daemon.RunStdio(ctx, dir, inR, outW)
			inR.Close()
			outW.Close()
		}()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
			Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) == 0 {
			t.Fatalf("tools over handed-over pipes: %v", err)
		}
		cs.Close() // closes the agent's ends
		select {
		case err := <-bridged:
			if err != nil {
				t.Fatalf("RunStdio = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the bridge did not return after the agent closed stdin")
		}
		outR.Close()
	})

	// Descriptors of anything but pipes and sockets are refused: the daemon
	// never writes into a file handed to it, and closes what it got.
	t.Run("handoff of a file refused", func(t *testing.T) {
		victim := filepath.Join(t.TempDir(), "victim")
		f, err := os.OpenFile(victim, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		conn, err := net.Dial("unix", p.MCPSocket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		rights := unix.UnixRights(int(f.Fd()), int(f.Fd()))
		if _, _, err := conn.(*net.UnixConn).WriteMsgUnix([]byte("harnessd-stdio-fds v1\n"), rights, nil); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		answer, _ := io.ReadAll(conn)
		if !strings.HasPrefix(string(answer), "harnessd-stdio-fds refused: ") {
			t.Fatalf("answer %q, want a refusal", answer)
		}
		if b, _ := os.ReadFile(victim); len(b) != 0 {
			t.Fatalf("the daemon wrote %q into a handed-over file", b)
		}
	})

	t.Run("second daemon", func(t *testing.T) {
		err := daemon.Serve(ctx, daemon.Config{DataDir: dir, Ready: func(daemon.Paths) {
			t.Error("second Serve became ready")
		}}, zap.NewNop())
		if !errors.Is(err, daemon.ErrAlreadyRunning) {
			t.Fatalf("second Serve = %v, want ErrAlreadyRunning", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(msg, p.Socket) {
			t.Errorf("error %q does not name the running pid and socket", msg)
		}
		// The first daemon is untouched.
		if err := c.Healthy(ctx); err != nil {
			t.Errorf("first daemon after a second Serve: %v", err)
		}
		wantMode(t, p.Socket, true)
	})

	c.Close() // idle keep-alive connections
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Serve returned %v after cancellation, want nil", err)
	}
	wantGone(t, p.Socket, p.MCPSocket, p.Pid)
	if err := c.Healthy(ctx); !client.IsUnavailable(err) {
		t.Errorf("Healthy after shutdown = %v, want UNAVAILABLE", err)
	}
}

// reservePort returns a loopback address that was free a moment ago
// (Ready reports paths only, so the test picks the port).
func reservePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestServeTCPNeedsToken(t *testing.T) {
	dir := dataDir(t)
	p := daemon.PathsOf(dir)
	addr := reservePort(t)
	r := start(t, daemon.Config{DataDir: dir, Listen: addr})
	wantMode(t, p.Token, false)
	token, err := daemon.ReadToken(p)
	if err != nil || len(token) != 64 {
		t.Fatalf("token %q (%v), want 64 hex digits", token, err)
	}

	ctx := context.Background()
	good := client.TCP(addr, token)
	defer good.Close()
	if err := good.Healthy(ctx); err != nil {
		t.Fatalf("Healthy with the token: %v", err)
	}
	if _, err := good.Call(ctx, "repository_list", nil); err != nil {
		t.Fatalf("repository_list with the token: %v", err)
	}
	for _, tok := range []string{"", "wrong", token + "x"} {
		bad := client.TCP(addr, tok)
		_, err := bad.Call(ctx, "repository_list", nil)
		bad.Close()
		if err == nil || client.IsUnavailable(err) {
			t.Errorf("token %q: err = %v, want a refusal", tok, err)
		}
	}
	// The unix socket needs no token.
	if err := unixClient(t, p.Socket).Healthy(ctx); err != nil {
		t.Errorf("unix Healthy: %v", err)
	}
	good.Close()
	if err := r.shutdown(t); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	wantGone(t, p.Socket, p.Pid)

	// A restart keeps the token and tightens loose permissions on it.
	if err := os.Chmod(p.Token, 0o644); err != nil {
		t.Fatal(err)
	}
	addr = reservePort(t)
	r = start(t, daemon.Config{DataDir: dir, Listen: addr})
	wantMode(t, p.Token, false)
	if again, err := daemon.ReadToken(p); err != nil || again != token {
		t.Errorf("token after restart = %q (%v), want the first one", again, err)
	}
	c := client.TCP(addr, token)
	defer c.Close()
	if err := c.Healthy(ctx); err != nil {
		t.Errorf("Healthy after restart: %v", err)
	}
	c.Close()
	if err := r.shutdown(t); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func TestServeRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  daemon.Config // DataDir is filled in unless noDir
		want string
		// noDir leaves DataDir empty.
		noDir bool
	}{
		{name: "no data dir", noDir: true, want: "data dir is empty"},
		{name: "any address", cfg: daemon.Config{Listen: "0.0.0.0:1"}, want: "only loopback addresses are allowed"},
		{name: "any v6 address", cfg: daemon.Config{Listen: "[::]:1"}, want: "only loopback addresses are allowed"},
		{name: "LAN address", cfg: daemon.Config{Listen: "192.168.1.10:8080"}, want: "only loopback addresses are allowed"},
		{name: "host name", cfg: daemon.Config{Listen: "example.com:8080"}, want: "only loopback addresses are allowed"},
		{name: "no host", cfg: daemon.Config{Listen: ":8080"}, want: "only loopback addresses are allowed"},
		{name: "no port", cfg: daemon.Config{Listen: "127.0.0.1:"}, want: "no port"},
		{name: "not host:port", cfg: daemon.Config{Listen: "127.0.0.1"}, want: "--listen"},
		{name: "negative shutdown wait", cfg: daemon.Config{ShutdownWait: -time.Second}, want: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if !tt.noDir {
				cfg.DataDir = dataDir(t)
			}
			cfg.Ready = func(daemon.Paths) { t.Error("Serve became ready") }
			err := daemon.Serve(context.Background(), cfg, zap.NewNop())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Serve = %v, want an error containing %q", err, tt.want)
			}
			if tt.cfg.Listen != "" && !strings.Contains(err.Error(), tt.cfg.Listen) {
				t.Errorf("error %q does not name the address", err)
			}
			if !tt.noDir {
				if _, err := os.Stat(cfg.DataDir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Serve created the data dir before refusing (%v)", err)
				}
			}
		})
	}
}
