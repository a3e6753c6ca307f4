package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/client"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// StartTimeout bounds how long EnsureDaemon waits for a daemon it started.
const StartTimeout = 20 * time.Second

// EnsureDaemon returns a client for the daemon of dataDir, starting one
// (detached, logging to <data-dir>/harnessd.log) when none answers. Two
// callers racing here both end up on the same daemon: the loser's daemon
// finds the data dir locked and exits. serveArgs are more flags for the
// daemon it starts (a running daemon keeps its own).
func EnsureDaemon(ctx context.Context, dataDir, exe string, lg *zap.Logger, serveArgs ...string) (*client.Client, error) {
	p := PathsOf(dataDir)
	c := client.Unix(p.Socket)
	if err := ping(ctx, c); err == nil {
		return c, nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	logf, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, append([]string{"serve", "--data-dir", dataDir, "--log-format", "json"}, serveArgs...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start harnessd serve: %w", err)
	}
	lg.Info("started harnessd", zap.Int("pid", cmd.Process.Pid), zap.String("log", p.Log))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	deadline := time.NewTimer(StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := ping(ctx, c); err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("harnessd did not answer on %s within %s (see %s)", p.Socket, StartTimeout, p.Log)
		case err := <-exited:
			// Lost a start race to another daemon, or it failed: give the
			// winner a moment, else report.
			if perr := waitHealthy(ctx, c, 5*time.Second); perr == nil {
				return c, nil
			}
			return nil, fmt.Errorf("harnessd exited (%v) before answering; see %s", err, p.Log)
		case <-tick.C:
		}
	}
}

func ping(ctx context.Context, c *client.Client) error {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return c.Healthy(pctx)
}

func waitHealthy(ctx context.Context, c *client.Client, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := ping(ctx, c)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// RunStdio connects stdin and stdout to an MCP session of the daemon of
// dataDir (its mcp.sock) until the client disconnects or ctx ends: when
// both are pipes or sockets it hands them to the daemon, which reads and
// writes them itself (stdiofds.go), else it copies bytes both ways.
// Stdout carries only MCP frames.
func RunStdio(ctx context.Context, dataDir string, stdin io.Reader, stdout io.Writer) error {
	return RunStdioWith(ctx, dataDir, stdin, stdout, mcpserver.Options{})
}

// RunStdioWith is RunStdio for a session served with o (its toolsets and
// role): the options line goes first on the connection (OptionsLine; none
// for the defaults).
func RunStdioWith(ctx context.Context, dataDir string, stdin io.Reader, stdout io.Writer, o mcpserver.Options) error {
	var d net.Dialer
	preamble := OptionsLine(o)
	dial := func() (net.Conn, error) {
		conn, err := d.DialContext(ctx, "unix", PathsOf(dataDir).MCPSocket)
		if err != nil {
			return nil, fmt.Errorf("connect to the daemon's MCP socket: %w", err)
		}
		if len(preamble) > 0 {
			if _, err := conn.Write(preamble); err != nil {
				conn.Close()
				return nil, fmt.Errorf("send the session's options to the daemon: %w", err)
			}
		}
		return conn, nil
	}
	conn, err := dial()
	if err != nil {
		return err
	}
	fin, okIn := stdin.(*os.File)
	fout, okOut := stdout.(*os.File)
	if uc, ok := conn.(*net.UnixConn); ok && okIn && okOut && passable(fin) && passable(fout) {
		took, _ := sendHandoff(uc, fin, fout) // not taken, for whatever reason: copy bytes
		if took {
			defer conn.Close()
			// The daemon serves the agent now; wait for it to end the
			// session (it closes the connection) or for a signal
			// (closing the connection ends the session).
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(io.Discard, conn)
				close(done)
			}()
			select {
			case <-done:
			case <-ctx.Done():
			}
			return nil
		}
		// Refused, or a daemon that does not know the handoff (it answered
		// with an error frame): copy bytes, on a fresh connection.
		conn.Close()
		if conn, err = dial(); err != nil {
			return err
		}
	}
	defer conn.Close()
	down := make(chan error, 1)
	go func() {
		_, err := io.Copy(stdout, conn) // daemon -> agent
		down <- err
	}()
	up := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, stdin) // agent -> daemon
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite() // the agent hung up: let the session end
		}
		up <- err
	}()
	select {
	case err := <-down:
		if err == nil || errors.Is(err, net.ErrClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
		return nil
	case err := <-up:
		if err != nil {
			return err
		}
		// Drain the daemon's last answers after the agent closed stdin.
		select {
		case <-down:
		case <-ctx.Done():
		}
		return nil
	}
}
