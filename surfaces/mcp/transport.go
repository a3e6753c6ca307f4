package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// StreamTransport is an mcp.Transport over a byte stream of
// newline-delimited JSON-RPC frames (the MCP stdio framing), like the
// go-sdk's IOTransport, except that a bad frame does not end the session:
// it is answered with a JSON-RPC error (see CheckFrame; a line longer than
// MaxFrameBytes is answered with CodeInvalidRequest, and the rest of it is
// discarded as it streams in, never buffered) and the connection reads on.
// Requests in flight are not disturbed. The answers and the go-sdk's own
// frames are written under one mutex.
//
// Blank lines are skipped. A line holds exactly one message: pretty-printed
// JSON spread over lines is a parse error per line.
type StreamTransport struct {
	// Conn is the stream. Closing it must unblock a pending Read, as it
	// does for a net.Conn or a pipe.
	Conn io.ReadWriteCloser
	// MaxFrameBytes bounds one frame; 0 means DefaultMaxFrameBytes.
	MaxFrameBytes int
	// Logger gets a debug line per refused frame; nil logs nothing.
	Logger *zap.Logger
	// Tasks, when set, serves MCP tasks on the connection (tasks.go):
	// tasks/* requests are answered here, and task-eligible calls are
	// answered with a task handle.
	Tasks *Tasks
	// Role is the session's role for the job operations tasks/* requests
	// map to ("" = operator): the same role as the session's tool calls,
	// so a task never acts with more than its session may.
	Role string

	conn *streamConn // the connection Connect made (Factory.Connect gives it fast calls)
}

// Connect implements mcp.Transport. The connection reads its frames in
// Read, on the go-sdk's reading goroutine: no goroutine of its own, and no
// hand-over of every message from one goroutine to another.
func (t *StreamTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxFrameBytes
	if limit <= 0 {
		limit = DefaultMaxFrameBytes
	}
	lg := t.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	c := &streamConn{
		rwc:    t.Conn,
		lg:     lg,
		limit:  limit,
		fr:     &frameReader{br: bufio.NewReaderSize(t.Conn, readBufSize), limit: limit},
		closed: make(chan struct{}),
	}
	if t.Tasks != nil {
		c.tasks = newTaskConn(t.Tasks, c.writeFrame, t.Role)
	}
	t.conn = c
	return c, nil
}

const (
	readBufSize = 64 << 10
	// keepBufSize is the largest frame buffer kept for the next frame; a
	// larger one, grown by a large frame, is left to the GC.
	keepBufSize = 1 << 20
)

// streamConn is the mcp.Connection of a StreamTransport.
type streamConn struct {
	rwc   io.ReadWriteCloser
	lg    *zap.Logger
	limit int

	writeMu sync.Mutex // serializes frames on rwc: the sdk's writes and the error answers

	readMu  sync.Mutex // serializes Reads; protects fr and readErr
	fr      *frameReader
	readErr error // what ended the stream: every later Read returns it

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error

	tasks *taskConn                // nil: no tasks
	fast  atomic.Pointer[fastPath] // nil: every call goes to the go-sdk
}

func (c *streamConn) SessionID() string { return "" }

// Read implements mcp.Connection: the next well-formed message. It
// answers the bad frames before it (see CheckFrame) and reads on. ctx is
// checked before each frame; a Read waiting for input ends when the
// connection is closed (with io.EOF).
func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c.readErr != nil {
			return nil, c.readErr
		}
		select {
		case <-c.closed:
			return nil, io.EOF
		default:
		}
		frame, over, err := c.fr.next()
		var msg jsonrpc.Message
		if over || !isBlank(frame) {
			m, fe := c.decode(frame, over)
			if fe == nil {
				msg = m
				if req, ok := m.(*jsonrpc.Request); ok {
					if c.tasks != nil && c.tasks.incoming(req) {
						msg = nil // a tasks/* request, answered by c.tasks
					} else if fp := c.fast.Load(); fp != nil && (fp.take(req) || fp.cancelled(req)) {
						msg = nil // a fast call (fastcall.go), or its cancellation
					}
				}
			} else if werr := c.refuse(fe); werr != nil && err == nil {
				err = werr
			}
		}
		if err != nil {
			select {
			case <-c.closed:
				err = io.EOF // the read failed because of Close
			default:
			}
			c.readErr = err
		}
		if msg != nil {
			return msg, nil // a last frame without a newline comes before its error
		}
		if err != nil {
			return nil, err
		}
	}
}

// Write implements mcp.Connection.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.tasks != nil {
		msg = c.tasks.outgoing(ctx, msg)
	}
	data, ok := encodeResult(msg)
	if !ok {
		var err error
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return err
		}
	}
	return c.writeFrame(data)
}

// encodeResult writes a successful response as jsonrpc.EncodeMessage
// does, byte for byte (with room for the frame's newline), without
// encoding/json's second pass over the result: the go-sdk's connection
// marshalled it, valid and compact, the moment before (a result of any
// other origin would be written unchecked). It reports false for any
// other message, and for an id that needs escaping.
func encodeResult(msg jsonrpc.Message) ([]byte, bool) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 {
		return nil, false
	}
	var id string
	switch v := resp.ID.Raw().(type) {
	case int64:
		id = strconv.FormatInt(v, 10)
	case string:
		q := strconv.Quote(v)
		if _, ok := plainString([]byte(q)); !ok {
			return nil, false
		}
		id = q
	default:
		return nil, false
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	b := make([]byte, 0, len(head)+len(id)+len(mid)+len(resp.Result)+2)
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, mid...)
	b = append(b, resp.Result...)
	return append(b, '}'), true
}

// Close implements mcp.Connection. A Read waiting for input ends once the
// closed stream fails it.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = c.rwc.Close()
		if c.tasks != nil {
			c.tasks.close()
		}
		if fp := c.fast.Load(); fp != nil {
			fp.close()
		}
	})
	return c.closeErr
}

func (c *streamConn) writeFrame(data []byte) error {
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.rwc.Write(data)
	return err
}

// decode checks one frame (over: its line was longer than the limit, and
// frame holds the first bytes) and decodes it.
func (c *streamConn) decode(frame []byte, over bool) (jsonrpc.Message, *FrameError) {
	if over {
		sh := shapeOf(frame)
		fe := invalidRequest(sh.ID, "frame longer than "+strconv.Itoa(c.limit)+" bytes")
		fe.Drop = sh.Response
		return nil, fe
	}
	return decodeFrame(frame)
}

// decodeFrame checks one frame and decodes it to the message
// jsonrpc.DecodeMessage makes of it. A request whose method and id are
// plain ASCII (every request the go-sdk and the usual clients write) is
// built from the members CheckFrame's scan found, without a second parse
// of the frame: the go-sdk's decoder allocates a 32 KiB buffer for every
// value it decodes, twice per request. Anything else (a response, an
// escape or a non-ASCII byte in the method or id) is decoded by the
// go-sdk. FuzzDecodeFrame holds the two to the same message.
func decodeFrame(frame []byte) (jsonrpc.Message, *FrameError) {
	f, fe := checkFrame(frame)
	if fe != nil {
		return nil, fe
	}
	if req := plainRequest(&f); req != nil {
		return req, nil
	}
	msg, err := jsonrpc.DecodeMessage(frame)
	if err != nil {
		// CheckFrame and the go-sdk disagree (FuzzCheckFrame looks for
		// such frames); refuse the frame rather than end the session.
		sh := shapeOf(frame)
		fe := invalidRequest(sh.ID, err.Error())
		fe.Drop = sh.Response
		return nil, fe
	}
	return msg, nil
}

// plainRequest is the request of a frame CheckFrame accepted, or nil
// when it is not a request or its method or id is not plain ASCII.
// Params are copied: the frame's buffer is reused for the next frame.
func plainRequest(f *frameFields) *jsonrpc.Request {
	if f.method == nil {
		return nil
	}
	method, ok := plainString(f.method)
	if !ok {
		return nil
	}
	req := &jsonrpc.Request{Method: method}
	if f.id != nil {
		if firstByte(f.id) == '"' {
			s, ok := plainString(f.id)
			if !ok {
				return nil
			}
			req.ID, _ = jsonrpc.MakeID(s)
		} else {
			id, why := parseID(f.id)
			if why != "" {
				return nil
			}
			req.ID = id
		}
	}
	if f.params != nil {
		req.Params = bytes.Clone(f.params)
	}
	return req
}

// plainString is the value of raw, a JSON string, when it holds only
// printable ASCII and no escapes.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(raw[1 : len(raw)-1]), true
}

// refuse answers a bad frame, unless it is to be dropped. When the answer
// cannot be written the stream is broken: it closes the connection and
// returns the error.
func (c *streamConn) refuse(fe *FrameError) error {
	if ce := c.lg.Check(zap.DebugLevel, "refused an mcp frame"); ce != nil {
		ce.Write(zap.Int64("code", fe.Code), zap.String("reason", fe.Message), zap.Bool("dropped", fe.Drop))
	}
	if fe.Drop {
		return nil
	}
	data, err := encodeErrorResponse(fe)
	if err == nil {
		err = c.writeFrame(data)
	}
	if err != nil {
		c.Close()
	}
	return err
}

// errorResponse is a JSON-RPC error response whose id may be null, which
// jsonrpc.EncodeMessage cannot write (it omits a zero id).
type errorResponse struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      any            `json:"id"`
	Error   *jsonrpc.Error `json:"error"`
}

func encodeErrorResponse(fe *FrameError) ([]byte, error) {
	return json.Marshal(errorResponse{JSONRPC: "2.0", ID: fe.ID.Raw(), Error: &jsonrpc.Error{Code: fe.Code, Message: fe.Message}})
}

// frameReader splits a stream into lines of at most limit bytes without
// buffering more than that.
type frameReader struct {
	br    *bufio.Reader
	limit int
	buf   []byte
}

// next reads one line and returns it without its newline. A line longer
// than limit comes back with over set and only its first limit bytes; the
// rest of it is read and discarded as it streams by. err is what ended
// the stream (io.EOF at its end); a last line with no newline comes with
// it.
func (r *frameReader) next() (frame []byte, over bool, err error) {
	if cap(r.buf) > keepBufSize {
		r.buf = nil
	}
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		end := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if end {
			chunk = chunk[:len(chunk)-1]
		}
		if !over {
			if room := r.limit - len(r.buf); len(chunk) > room {
				over = true
				chunk = chunk[:room]
			}
			r.buf = append(r.buf, chunk...)
		}
		if end {
			return r.buf, over, nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return r.buf, over, err
		}
	}
}

func isBlank(b []byte) bool { return skipSpace(b, 0) == len(b) }
