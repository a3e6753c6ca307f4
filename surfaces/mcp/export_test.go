package mcpserver

import "github.com/modelcontextprotocol/go-sdk/jsonrpc"

// Internals the external tests pin.
var EncodeErrorResponse = encodeErrorResponse

// ShapeOf is shapeOf with its result spread out.
func ShapeOf(b []byte) (id jsonrpc.ID, response bool) {
	sh := shapeOf(b)
	return sh.ID, sh.Response
}

// DecodeFrame is the stream transport's decoding of one frame.
var DecodeFrame = decodeFrame

// EncodeResult is the stream transport's encoding of a successful
// response.
var EncodeResult = encodeResult

// FastCalls is how many tool calls t's connection answered beside the
// go-sdk (fastcall.go).
func FastCalls(t *StreamTransport) int64 {
	if t.conn == nil {
		return 0
	}
	if fp := t.conn.fast.Load(); fp != nil {
		return fp.taken.Load()
	}
	return 0
}

// FastWorkers is how many workers of t's connection wait for a fast
// call.
func FastWorkers(t *StreamTransport) (idle int32) {
	if t.conn == nil {
		return 0
	}
	if fp := t.conn.fast.Load(); fp != nil {
		return fp.idle.Load()
	}
	return 0
}
