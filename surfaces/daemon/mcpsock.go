package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// mcpSocket serves MCP sessions on a unix socket, one session per
// connection, newline-delimited JSON-RPC (the stdio framing). `harnessd mcp`
// hands its stdin and stdout over (stdiofds.go), or pipes them to it byte
// for byte, so an agent on stdio talks to the daemon's own MCP server: no
// second server, no HTTP hop, and the
// daemon's progress notifications reach the agent. Frames are read by
// mcpserver.StreamTransport: a bad frame gets a JSON-RPC error and the
// session goes on (docs/mcp-frames.md).
type mcpSocket struct {
	ln  net.Listener
	srv *mcp.Server
	lg  *zap.Logger

	mu       sync.Mutex // protects sessions, pending and closed
	sessions map[*mcp.ServerSession]io.Closer
	pending  map[net.Conn]bool // accepted, their first bytes not read yet
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
	m := &mcpSocket{ln: ln, srv: srv, lg: lg, sessions: map[*mcp.ServerSession]io.Closer{}, pending: map[net.Conn]bool{}}
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
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			conn.Close()
			continue
		}
		m.pending[conn] = true
		m.mu.Unlock()
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.serve(conn)
		}()
	}
}

// serve runs one connection's session: over the agent's pipes when a
// bridge hands them over (stdiofds.go), else over the connection.
func (m *mcpSocket) serve(conn net.Conn) {
	stream, err := acceptHandoff(conn)
	m.mu.Lock()
	delete(m.pending, conn)
	closed := m.closed
	m.mu.Unlock()
	if err != nil || closed {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			m.lg.Warn("mcp connection", zap.Error(err))
		}
		if stream != nil {
			stream.Close()
		}
		conn.Close()
		return
	}
	ss, err := m.srv.Connect(context.Background(), &mcpserver.StreamTransport{Conn: stream, Logger: m.lg}, nil)
	if err != nil {
		m.lg.Warn("mcp session", zap.Error(err))
		stream.Close()
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		ss.Close()
		stream.Close()
		return
	}
	m.sessions[ss] = stream
	m.mu.Unlock()
	if sc, ok := stream.(*stdioConn); ok {
		// The bridge's connection carries nothing more: its end (the
		// bridge exited, or was killed) ends the session.
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			_, _ = io.Copy(io.Discard, sc.ctl)
			ss.Close()
		}()
	}
	_ = ss.Wait()
	stream.Close()
	m.mu.Lock()
	delete(m.sessions, ss)
	m.mu.Unlock()
}

// close stops accepting and ends every session.
func (m *mcpSocket) close() {
	m.mu.Lock()
	m.closed = true
	for ss, stream := range m.sessions {
		ss.Close()
		stream.Close()
	}
	for conn := range m.pending {
		conn.Close()
	}
	m.mu.Unlock()
	m.ln.Close()
	m.wg.Wait()
}
