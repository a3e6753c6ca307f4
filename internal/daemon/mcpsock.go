package daemon

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	mcpserver "github.com/harnessd/harnessd/internal/server/mcp"
)

// mcpSocket serves MCP sessions on a unix socket, one session per
// connection, newline-delimited JSON-RPC (the stdio framing). `harnessd mcp`
// pipes its stdin and stdout to it byte for byte, so an agent on stdio talks
// to the daemon's own MCP server: no second server, no HTTP hop, and the
// daemon's progress notifications reach the agent. Frames are read by
// mcpserver.StreamTransport: a bad frame gets a JSON-RPC error and the
// session goes on (docs/mcp-frames.md).
type mcpSocket struct {
	ln  net.Listener
	srv *mcp.Server
	lg  *zap.Logger

	mu       sync.Mutex // protects sessions and closed
	sessions map[*mcp.ServerSession]net.Conn
	closed   bool
	wg       sync.WaitGroup
}

func listenMCP(path string, srv *mcp.Server, lg *zap.Logger) (*mcpSocket, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	m := &mcpSocket{ln: ln, srv: srv, lg: lg, sessions: map[*mcp.ServerSession]net.Conn{}}
	m.wg.Add(1)
	go m.accept()
	return m, nil
}

func (m *mcpSocket) accept() {
	defer m.wg.Done()
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				m.lg.Warn("mcp socket accept", zap.Error(err))
			}
			return
		}
		ss, err := m.srv.Connect(context.Background(), &mcpserver.StreamTransport{Conn: conn, Logger: m.lg}, nil)
		if err != nil {
			m.lg.Warn("mcp session", zap.Error(err))
			conn.Close()
			continue
		}
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			ss.Close()
			conn.Close()
			continue
		}
		m.sessions[ss] = conn
		m.mu.Unlock()
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			_ = ss.Wait()
			conn.Close()
			m.mu.Lock()
			delete(m.sessions, ss)
			m.mu.Unlock()
		}()
	}
}

// close stops accepting and ends every session.
func (m *mcpSocket) close() {
	m.mu.Lock()
	m.closed = true
	for ss, conn := range m.sessions {
		ss.Close()
		conn.Close()
	}
	m.mu.Unlock()
	m.ln.Close()
	m.wg.Wait()
}
