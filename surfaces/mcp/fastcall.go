package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/jsonx"
)

// A fast call is a tools/call that a stream connection (the daemon's MCP
// socket: `harnessd mcp`) answers itself, beside the go-sdk: the same
// tool handler, the same caller, role, toolsets and approvals, without
// the go-sdk's per-request work (it decodes the params three times, each
// with a fresh 32 KiB buffer, and re-encodes the result twice): about
// half of what an MCP call cost over the operation itself.
//
// Only the plainest calls take it: a call whose params hold just name,
// arguments and, from a 2026-07-28 client, the _meta every request of
// that revision carries (its protocol version — the session's own —,
// client info and capabilities, with no extension declared: no task),
// but no progress token; on an initialized session; of an operation's
// tool the session has enabled. Everything else — other methods, the
// toolsets tool, a hidden or unknown tool (its error is the go-sdk
// path's), a session's first 2026-07-28 request (the go-sdk initializes
// the session from its _meta) — goes to the go-sdk as before, and so do
// notifications/cancelled for any request but a fast call's.
type fastPath struct {
	v     *served
	ss    *mcp.ServerSession
	write func([]byte) error

	ctx    context.Context // ends with the connection
	cancel context.CancelFunc

	mu       sync.Mutex // protects inflight and closed
	inflight map[any]context.CancelFunc
	closed   bool
	wg       sync.WaitGroup
	taken    atomic.Int64 // calls answered here (tests)

	// Calls run on workers that outlive them (at most maxIdleWorkers wait
	// for the next): a new goroutine's 8 KiB stack grows, copied each
	// time, to the depth of a call (the pipeline, the JSON codecs), about
	// a tenth of a small read's cost; a worker's stack is already grown.
	jobs    chan func() // unbuffered: a send succeeds only to a waiting worker
	idle    atomic.Int32
	workers sync.WaitGroup
}

// maxIdleWorkers bounds the workers of a connection that wait for a call.
const maxIdleWorkers = 4

func newFastPath(v *served, ss *mcp.ServerSession, write func([]byte) error) *fastPath {
	ctx, cancel := context.WithCancel(context.Background())
	return &fastPath{v: v, ss: ss, write: write, ctx: ctx, cancel: cancel, inflight: map[any]context.CancelFunc{}, jobs: make(chan func())}
}

// spawn runs f on a waiting worker, or on a new one.
func (p *fastPath) spawn(f func()) {
	select {
	case p.jobs <- f:
	default:
		p.workers.Add(1)
		go p.work(f)
	}
}

// work runs f, then the calls spawn hands it while it is one of the
// maxIdleWorkers waiting; it ends with the connection.
func (p *fastPath) work(f func()) {
	defer p.workers.Done()
	for {
		f()
		if p.idle.Add(1) > maxIdleWorkers {
			p.idle.Add(-1)
			return
		}
		select {
		case f = <-p.jobs:
			p.idle.Add(-1)
		case <-p.ctx.Done():
			p.idle.Add(-1)
			return
		}
	}
}

// plainCall reads the params of a tools/call: its name and arguments,
// the protocol version its _meta names ("" without _meta), and false when
// they hold anything else.
func plainCall(params json.RawMessage) (name string, args json.RawMessage, protocol string, ok bool) {
	if firstByte(params) != '{' || depthExceeds(params, 64) {
		return "", nil, "", false
	}
	ok = true
	members(params, func(key, val []byte) bool {
		switch keyName(key) {
		case "name":
			name, ok = plainString(val)
		case "arguments":
			args = json.RawMessage(trimSpace(val))
		case "_meta":
			protocol, ok = plainMeta(val)
		default:
			ok = false
		}
		return ok
	})
	if !ok || name == "" {
		return "", nil, "", false
	}
	if len(args) > 0 && (firstByte(args) != '{' && !bytes.Equal(args, []byte("null"))) {
		return "", nil, "", false // the go-sdk's error for arguments that are no object
	}
	return name, args, protocol, true
}

// plainMeta reads a request's _meta: the protocol version of a
// 2026-07-28 request that carries nothing but the revision's three
// members, with capabilities that declare no extension; false otherwise.
func plainMeta(meta []byte) (protocol string, ok bool) {
	ok = firstByte(meta) == '{'
	var caps bool
	members(meta, func(key, val []byte) bool {
		switch keyName(key) {
		case "io.modelcontextprotocol/protocolVersion":
			protocol, ok = plainString(val)
		case "io.modelcontextprotocol/clientInfo":
			ok = firstByte(val) == '{'
		case "io.modelcontextprotocol/clientCapabilities":
			caps = firstByte(val) == '{'
			members(val, func(key, _ []byte) bool {
				if keyName(key) == "extensions" {
					caps = false
				}
				return caps
			})
			ok = caps
		default:
			ok = false // a progress token, a log level, anything else
		}
		return ok
	})
	if !ok || !caps || protocol < protocol2026 {
		return "", false
	}
	return protocol, true
}

// take reports whether req is a fast call, and if so runs it: its answer
// is written when the operation ends.
func (p *fastPath) take(req *jsonrpc.Request) bool {
	if req.Method != "tools/call" || !req.IsCall() {
		return false
	}
	key := req.ID.Raw()
	switch key.(type) {
	case int64, string:
	default:
		return false
	}
	name, args, protocol, ok := plainCall(req.Params)
	if !ok {
		return false
	}
	// A request of the session's own revision: without _meta before
	// 2026-07-28, with it from then on.
	ip := p.ss.InitializeParams()
	if ip == nil || (protocol != "") != (ip.ProtocolVersion >= protocol2026) || protocol != "" && protocol != ip.ProtocolVersion {
		return false
	}
	modern := protocol != ""
	h, ok := p.v.handlers[name]
	if !ok {
		return false
	}
	if _, hidden := p.v.hidden(p.ss, name); hidden {
		return false
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	if _, dup := p.inflight[key]; dup {
		p.mu.Unlock()
		return false // the go-sdk answers a duplicate id as it does
	}
	ctx, cancel := context.WithCancel(p.ctx)
	p.inflight[key] = cancel
	p.wg.Add(1)
	p.mu.Unlock()
	p.taken.Add(1)
	id := req.ID
	p.spawn(func() {
		defer p.wg.Done()
		defer func() {
			p.mu.Lock()
			delete(p.inflight, key)
			p.mu.Unlock()
			cancel()
		}()
		res, err := h(ctx, &mcp.CallToolRequest{Session: p.ss, Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args}})
		if err != nil {
			res = ErrorResult(errs.Wrap(errs.Internal, err, "%s: %v", name, err))
		}
		data, ok := encodeFastAnswer(id, res, modern)
		if !ok { // never left unanswered
			data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode the result of " + name}})
		}
		_ = p.write(data)
	})
	return true
}

// cancelled ends the fast call a notifications/cancelled names; false
// when it names none (the go-sdk gets it).
func (p *fastPath) cancelled(req *jsonrpc.Request) bool {
	if req.Method != "notifications/cancelled" || req.IsCall() {
		return false
	}
	var n struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &n) != nil {
		return false
	}
	var key any
	if s, ok := plainString(n.RequestID); ok && firstByte(n.RequestID) == '"' {
		key = s
	} else if v, ok := intText(n.RequestID); ok {
		key = v
	} else {
		return false
	}
	p.mu.Lock()
	cancel, ok := p.inflight[key]
	p.mu.Unlock()
	if ok {
		cancel() // its handler answers (CANCELLED) when it stops
	}
	return ok
}

// close ends the fast calls still running and waits for them.
func (p *fastPath) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	p.workers.Wait()
}

// encodeFastAnswer is the response frame to a fast call: the result as
// the go-sdk writes a CallToolResult (an empty content list, never null;
// resultType "complete" for a 2026-07-28 client: modern).
func encodeFastAnswer(id jsonrpc.ID, res *mcp.CallToolResult, modern bool) ([]byte, bool) {
	var b []byte
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch v := id.Raw().(type) {
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case string:
		q, err := jsonx.Marshal(v)
		if err != nil {
			return nil, false
		}
		b = append(b, q...)
	default:
		return nil, false
	}
	b = append(b, `,"result":`...)
	body, err := encodeToolResult(res)
	if err != nil || firstByte(body) != '{' {
		return nil, false
	}
	if modern { // body is {"content":[...]...}: never an empty object
		b = append(b, `{"resultType":"complete",`...)
		body = body[1:]
	}
	b = append(b, body...)
	return append(b, '}'), true
}

// encodeToolResult writes res as the go-sdk's CallToolResult.MarshalJSON
// does for the results harnessd makes (text blocks, raw structured
// content), without its two passes; any other result goes through it.
func encodeToolResult(res *mcp.CallToolResult) ([]byte, error) {
	structured, rawOK := res.StructuredContent.(json.RawMessage)
	plain := res.Meta == nil && (rawOK || res.StructuredContent == nil)
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); !ok || tc.Meta != nil || tc.Annotations != nil {
			plain = false
		}
	}
	if !plain {
		if res.Content == nil {
			r := *res
			r.Content = []mcp.Content{}
			res = &r
		}
		return json.Marshal(res)
	}
	b := append(make([]byte, 0, 64+len(structured)), `{"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			b = append(b, ',')
		}
		t, err := jsonx.Marshal(c.(*mcp.TextContent).Text)
		if err != nil {
			return nil, err
		}
		b = append(b, `{"type":"text","text":`...)
		b = append(b, t...)
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(structured) > 0 {
		b = append(b, `,"structuredContent":`...)
		b = append(b, structured...)
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), nil
}
