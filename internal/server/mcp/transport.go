package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

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
}

// Connect implements mcp.Transport. It starts the goroutine that reads
// frames; it ends when Conn is closed or reaches its end.
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
		rwc:      t.Conn,
		lg:       lg,
		limit:    limit,
		incoming: make(chan jsonrpc.Message),
		closed:   make(chan struct{}),
	}
	go c.readLoop(&frameReader{br: bufio.NewReaderSize(t.Conn, readBufSize), limit: limit})
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

	// incoming carries decoded messages from readLoop to Read; readLoop
	// sets readErr and then closes incoming when the stream ends.
	incoming chan jsonrpc.Message
	readErr  error

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

func (c *streamConn) SessionID() string { return "" }

// Read implements mcp.Connection: the next well-formed message.
func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg, ok := <-c.incoming:
		if !ok {
			return nil, c.readErr
		}
		return msg, nil
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeFrame(data)
}

// Close implements mcp.Connection. It does not wait for readLoop, which
// ends once the closed stream fails its read.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = c.rwc.Close()
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

// readLoop reads frames until the stream ends: it hands well-formed
// messages to Read and answers bad frames itself.
func (c *streamConn) readLoop(fr *frameReader) {
	for {
		frame, over, err := fr.next()
		if over || !isBlank(frame) {
			msg, fe := c.decode(frame, over)
			if fe != nil {
				if werr := c.refuse(fe); werr != nil && err == nil {
					err = werr
				}
			} else {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.readErr = err
			close(c.incoming)
			return
		}
	}
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
	if fe := CheckFrame(frame); fe != nil {
		return nil, fe
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
