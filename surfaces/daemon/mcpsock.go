package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
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
	ln    net.Listener
	mcp   *mcpserver.Factory
	tasks *mcpserver.Tasks // answers tasks/* on every session
	lg    *zap.Logger

	mu       sync.Mutex // protects sessions, pending and closed
	sessions map[*mcp.ServerSession]io.Closer
	pending  map[net.Conn]bool // accepted, their first bytes not read yet
	closed   bool
	wg       sync.WaitGroup
}

func listenMCP(path string, f *mcpserver.Factory, tasks *mcpserver.Tasks, lg *zap.Logger) (*mcpSocket, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	m := &mcpSocket{ln: ln, mcp: f, tasks: tasks, lg: lg, sessions: map[*mcp.ServerSession]io.Closer{}, pending: map[net.Conn]bool{}}
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
// bridge hands them over (stdiofds.go), else over the connection; with the
// toolsets and role the bridge's options line names (acceptSession).
func (m *mcpSocket) serve(conn net.Conn) {
	stream, opts, err := acceptSession(conn)
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
	ss, err := m.mcp.Connect(context.Background(), opts, &mcpserver.StreamTransport{Conn: stream, Logger: m.lg, Tasks: m.tasks, Role: opts.RoleName()})
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

// The session's options over the socket. `harnessd mcp --toolsets core,runs
// --role editor` sends one line before anything else on the connection:
// a JSON-RPC notification (optionsMethod) whose params name the toolsets
// and the role. A daemon that does not know it ignores it as an unknown
// notification (and the handoff after it fails, so the bridge copies
// bytes on a fresh connection, options line first again); a bridge that
// sends none gets the defaults (core, operator). The line is written
// apart from the handoff message that follows it, and read here one byte
// at a time, so the descriptors of that message are read only by
// acceptHandoff.

// optionsMethod is the notification that carries a session's options.
const optionsMethod = "notifications/harnessd/options"

// optionsPrefix starts the options line (its keys in this order): no
// client's first frame starts so (an initialize, a discover or a call).
const optionsPrefix = `{"method":"` + optionsMethod + `",`

// maxOptionsLine bounds the options line.
const maxOptionsLine = 4096

// sessionOptions are the params of the options line.
type sessionOptions struct {
	Toolsets string `json:"toolsets,omitempty"`
	Role     string `json:"role,omitempty"`
}

// OptionsLine is the line a bridge sends before the MCP stream to serve
// its session with o ("" when o is the defaults: old daemons get nothing
// new).
func OptionsLine(o mcpserver.Options) []byte {
	var p sessionOptions
	if len(o.Toolsets) > 0 {
		names := make([]string, len(o.Toolsets))
		for i, t := range o.Toolsets {
			names[i] = string(t)
		}
		p.Toolsets = strings.Join(names, ",")
	}
	if o.Role != 0 {
		p.Role = o.Role.String()
	}
	if p == (sessionOptions{}) {
		return nil
	}
	b, _ := json.Marshal(p) // strings only: cannot fail
	return append([]byte(optionsPrefix+`"jsonrpc":"2.0","params":`), append(b, "}\n"...)...)
}

// acceptSession reads the start of a new connection: an options line if
// one comes first, then the handoff or the MCP stream (acceptHandoff).
func acceptSession(conn net.Conn) (io.ReadWriteCloser, mcpserver.Options, error) {
	stream, err := acceptHandoff(conn)
	pc, ok := stream.(prefixConn)
	if err != nil || !ok {
		return stream, mcpserver.Options{}, err
	}
	line, isOpts, err := readOptionsLine(pc.Reader)
	if err != nil {
		return nil, mcpserver.Options{}, err
	}
	if !isOpts {
		// A client's own first frame: put back what was read.
		return prefixConn{Reader: io.MultiReader(bytes.NewReader(line), pc.Reader), Conn: conn}, mcpserver.Options{}, nil
	}
	o, err := parseOptionsLine(line)
	if err != nil {
		conn.Close()
		return nil, mcpserver.Options{}, err
	}
	// The stream, or the bridge's handoff, follows the line: the line was
	// read to its end and no further, so acceptHandoff reads the rest.
	stream, err = acceptHandoff(conn)
	return stream, o, err
}

// readOptionsLine reads from r one byte at a time while what it read can
// be the start of an options line: the whole line (isOpts), or the bytes
// read up to where it cannot.
func readOptionsLine(r io.Reader) (line []byte, isOpts bool, err error) {
	one := make([]byte, 1)
	for {
		if _, err := io.ReadFull(r, one); err != nil {
			return line, false, err
		}
		line = append(line, one[0])
		switch {
		case len(line) <= len(optionsPrefix):
			if one[0] != optionsPrefix[len(line)-1] {
				return line, false, nil
			}
		case one[0] == '\n':
			return line, true, nil
		case len(line) >= maxOptionsLine:
			return line, false, fmt.Errorf("mcp options line longer than %d bytes", maxOptionsLine)
		}
	}
}

// parseOptionsLine returns the Options an options line names.
func parseOptionsLine(line []byte) (mcpserver.Options, error) {
	var n struct {
		Params sessionOptions `json:"params"`
	}
	if err := json.Unmarshal(line, &n); err != nil {
		return mcpserver.Options{}, fmt.Errorf("mcp options line: %w", err)
	}
	var o mcpserver.Options
	var err error
	if o.Toolsets, err = mcpserver.ParseToolsets(n.Params.Toolsets); err != nil {
		return mcpserver.Options{}, fmt.Errorf("mcp options line: %w", err)
	}
	if o.Role, err = mcpserver.ParseRole(n.Params.Role); err != nil {
		return mcpserver.Options{}, fmt.Errorf("mcp options line: %w", err)
	}
	return o, nil
}
