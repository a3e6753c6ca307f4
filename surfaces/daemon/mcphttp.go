package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
)

// MCP over streamable HTTP speaks two protocol generations at one path
// (/mcp), through two go-sdk handlers:
//
//   - 2026-07-28 and later (SEP-2575: no initialize, no session; every
//     request carries its protocol version, client info and capabilities in
//     _meta, the Mcp-Protocol-Version and Mcp-Method headers beside them)
//     goes to a stateless handler: each POST is a whole request, answered on
//     its own SSE stream (progress notifications included), on a server
//     shared by every request with the same options.
//   - Anything older (2025-11-25 down to 2024-11-05) goes to a stateful
//     handler: initialize opens a session (Mcp-Session-Id) with a server of
//     its own, GET opens its stream, DELETE ends it.
//
// go-sdk serves the new protocol only on a stateless handler and the
// session features (server-to-client requests, tools/list_changed on a
// standalone stream) only on a stateful one, so the split is by protocol.
// The version is read from the headers; the body is read only for a POST
// that names neither a version, a method nor a session (an initialize, or
// a new-protocol request missing its headers, which the stateless handler
// refuses with an error naming the header).

// newProtocol is the first protocol version of the stateless generation.
const newProtocol = "2026-07-28"

// The headers the router reads (spelled as go-sdk spells them).
const (
	hdrProtocolVersion = "Mcp-Protocol-Version"
	hdrMethod          = "Mcp-Method"
	hdrSession         = "Mcp-Session-Id"
	metaProtocol       = "io.modelcontextprotocol/protocolVersion"
	methodDiscover     = "server/discover"
)

// mcpServers is where the HTTP endpoint gets its MCP servers: one for each
// new stateful session, and the one shared by the stateless requests of a
// client's options. An error (options a request names that do not exist)
// is answered to the client.
type mcpServers struct {
	session func(*http.Request) (*mcp.Server, error)
	shared  func(*http.Request) (*mcp.Server, error)
	// probe answers go-sdk's version check on requests of a session that
	// exists (any server of the daemon supports the same versions).
	probe *mcp.Server
}

// mcpHTTP is the MCP endpoint over streamable HTTP: one http.Handler that
// routes each request to the stateless or the stateful go-sdk handler.
type mcpHTTP struct {
	servers             mcpServers
	stateful, stateless *mcp.StreamableHTTPHandler
}

// DefaultSessionIdle is how long a stateful MCP session may go without a
// request before the daemon closes it (Config.SessionIdle).
const DefaultSessionIdle = 10 * time.Minute

// newMCPHTTP returns the MCP endpoint over streamable HTTP. A stateful
// session that receives no request for idle is closed with everything it
// holds (a client that went away without DELETE leaves nothing behind); a
// later request with its id answers 404 and the client initializes again.
// An open GET stream does not count as activity (go-sdk pauses the timer
// only while a POST is in flight). idle <= 0 means DefaultSessionIdle.
func newMCPHTTP(s mcpServers, idle time.Duration) http.Handler {
	if idle <= 0 {
		idle = DefaultSessionIdle
	}
	m := &mcpHTTP{servers: s}
	m.stateful = mcp.NewStreamableHTTPHandler(m.server, &mcp.StreamableHTTPOptions{SessionTimeout: idle})
	m.stateless = mcp.NewStreamableHTTPHandler(m.server, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// A new-protocol request lives as long as its POST: a client that
		// hangs up has cancelled it (it has no session to send
		// notifications/cancelled on).
		PropagateRequestCancellation: true,
	})
	return m
}

func (m *mcpHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	stateless := speaksNewProtocol(r.Header)
	if !stateless && r.Method == http.MethodPost && r.Header.Get(hdrSession) == "" &&
		r.Header.Get(hdrProtocolVersion) == "" && r.Header.Get(hdrMethod) == "" {
		var err error
		if stateless, err = peekNewProtocol(r); err != nil {
			http.Error(w, "request body: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	var (
		srv *mcp.Server
		err error
	)
	switch {
	case stateless:
		srv, err = m.servers.shared(r)
	case r.Method == http.MethodPost && r.Header.Get(hdrSession) == "":
		srv, err = m.servers.session(r) // a new session (initialize)
	}
	if err != nil {
		writeMCPError(w, err)
		return
	}
	if srv != nil {
		r = r.WithContext(context.WithValue(r.Context(), serverKey{}, srv))
	}
	if stateless {
		m.stateless.ServeHTTP(w, r)
		return
	}
	m.stateful.ServeHTTP(w, r)
}

// serverKey carries the server the router chose for a request to the
// go-sdk handler's getServer (which the handler may call twice).
type serverKey struct{}

func (m *mcpHTTP) server(r *http.Request) *mcp.Server {
	if s, ok := r.Context().Value(serverKey{}).(*mcp.Server); ok {
		return s
	}
	return m.servers.probe
}

// speaksNewProtocol reports whether a request's headers say it speaks the
// stateless protocol: an Mcp-Protocol-Version of 2026-07-28 or later (dates
// compare as strings), or, without a version, an Mcp-Method header, which
// only new-protocol clients send.
func speaksNewProtocol(h http.Header) bool {
	if v := h.Get(hdrProtocolVersion); v != "" {
		return v >= newProtocol
	}
	return h.Get(hdrMethod) != ""
}

// peekNewProtocol reads a POST body that carries no MCP headers and
// reports whether it is a new-protocol request (server/discover, or a
// protocol version of 2026-07-28 or later in params._meta). The body is
// put back for the handler, which enforces the size limit; the peek reads
// at most that limit.
func peekNewProtocol(r *http.Request) (bool, error) {
	if r.Body == nil {
		return false, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, mcp.DefaultMaxRequestBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil {
		return false, err
	}
	return newProtocolBody(body), nil
}

// newProtocolBody reports whether a JSON-RPC message is a new-protocol
// request. A batch or anything unparsable is not (the stateful handler
// answers it as it answers any bad body).
func newProtocolBody(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	if msg.Method == methodDiscover {
		return true
	}
	var v string
	return json.Unmarshal(msg.Params.Meta[metaProtocol], &v) == nil && v >= newProtocol
}

// writeMCPError answers a request the router refuses before any handler
// sees it, as a JSON-RPC error whose data carries harnessd's code.
func writeMCPError(w http.ResponseWriter, err error) {
	code := errs.CodeOf(err)
	status, rpc := http.StatusBadRequest, -32602 // invalid params
	if code != errs.InvalidArgument {
		status, rpc = http.StatusInternalServerError, -32603 // internal error
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error": map[string]any{
			"code":    rpc,
			"message": err.Error(),
			"data":    map[string]any{"code": code},
		},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// oneServer serves every request, stateless or of any session, with srv.
func oneServer(srv *mcp.Server) mcpServers {
	get := func(*http.Request) (*mcp.Server, error) { return srv, nil }
	return mcpServers{session: get, shared: get, probe: srv}
}
