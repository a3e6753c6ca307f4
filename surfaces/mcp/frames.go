package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Frame limits of the stream transport (docs/mcp-frames.md).
const (
	// DefaultMaxFrameBytes bounds one newline-delimited frame, without its
	// newline. A longer line is answered with CodeInvalidRequest and the
	// rest of it is read and discarded without being buffered.
	DefaultMaxFrameBytes = 16 << 20
	// MaxFrameDepth bounds how deeply a frame nests arrays and objects (the
	// frame's own object is depth 1). A deeper frame is answered with
	// CodeParseError. The go-sdk itself refuses depth 1000 and more.
	MaxFrameDepth = 512
	// maxIntID is the largest integer id magnitude the go-sdk echoes back
	// exactly: it decodes ids as float64.
	maxIntID = 1<<53 - 1
)

// FrameError is why a frame was refused: the JSON-RPC error to answer
// with, and the request id recovered from the frame (the zero ID, null on
// the wire, when there is none or it is not a valid id).
type FrameError struct {
	Code    int64
	Message string
	ID      jsonrpc.ID
	// Drop is set when the frame is a malformed response (it has "result"
	// or "error" and no "method"): it gets no answer, so that two peers
	// never trade error responses forever, and no id of the other side's
	// is taken for one of the client's own.
	Drop bool
}

func (e *FrameError) Error() string { return e.Message }

func parseError(msg string) *FrameError {
	return &FrameError{Code: jsonrpc.CodeParseError, Message: "parse error: " + msg}
}

func invalidRequest(id jsonrpc.ID, msg string) *FrameError {
	return &FrameError{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + msg, ID: id}
}

// CheckFrame validates one frame (a line without its newline) as a single
// JSON-RPC 2.0 message, as MCP frames it. It returns nil when the frame is
// a request, notification or response the go-sdk decodes, else the error
// to answer with:
//   - CodeParseError: not JSON (a NUL or other control byte in a string
//     counts), or nested deeper than MaxFrameDepth;
//   - CodeInvalidRequest: JSON but not a message: not an object (a batch
//     array included: MCP dropped batching), "jsonrpc" other than "2.0",
//     an id that is not a string or an integer of at most 2^53-1, a
//     missing or non-string "method", or "params" that is neither an
//     object nor an array.
//
// The recovered id is set when the frame is JSON and carries a valid id.
// A bad frame shaped as a response is to be dropped, not answered (Drop).
// CheckFrame does not look at the size of b: the reader bounds that.
func CheckFrame(b []byte) *FrameError {
	_, fe := checkFrame(b)
	return fe
}

// checkFrame is CheckFrame; for a frame it accepts, it also returns the
// frame's members as the one scan found them.
func checkFrame(b []byte) (frameFields, *FrameError) {
	var f frameFields
	if depthExceeds(b, MaxFrameDepth) {
		fe := parseError("nesting deeper than " + strconv.Itoa(MaxFrameDepth))
		if validDeep(b) {
			sh := shapeOf(b)
			fe.ID, fe.Drop = sh.ID, sh.Response
		}
		return f, fe
	}
	if !json.Valid(b) {
		// Unmarshal checks the whole input before it decodes: it returns
		// the SyntaxError at once.
		var se *json.SyntaxError
		if err := json.Unmarshal(b, &struct{}{}); errors.As(err, &se) {
			return f, parseError(se.Error() + " (at byte " + strconv.FormatInt(se.Offset, 10) + ")")
		}
		return f, parseError("not JSON")
	}
	switch firstByte(b) {
	case '{':
	case '[':
		return f, invalidRequest(jsonrpc.ID{}, "batch arrays are not supported")
	default:
		return f, invalidRequest(jsonrpc.ID{}, "a frame must be a JSON object")
	}
	// The frame is valid JSON: one scan picks out the members the go-sdk
	// reads, by their exact keys as it matches them (the last of a
	// duplicate wins, as in encoding/json), without decoding the rest.
	members(b, f.set)

	id, idErr := parseID(f.id)
	if f.method == nil && (f.result != nil || f.error != nil) {
		fe := checkResponse(f.version, id, idErr, f.id != nil)
		if fe == nil && f.error != nil {
			if why := errorMember(f.error); why != "" {
				fe = invalidRequest(id, why)
			}
		}
		if fe != nil {
			fe.Drop = true
		}
		return f, fe
	}

	if !isString(f.version, "2.0") {
		return f, invalidRequest(id, `"jsonrpc" must be "2.0"`)
	}
	if f.id != nil && idErr != "" {
		return f, invalidRequest(jsonrpc.ID{}, idErr)
	}
	if f.method == nil {
		return f, invalidRequest(id, `missing "method"`)
	}
	if !isString(f.method, "") {
		return f, invalidRequest(id, `"method" must be a string`)
	}
	if f.error != nil {
		if why := errorMember(f.error); why != "" {
			return f, invalidRequest(id, why)
		}
	}
	if f.params != nil {
		switch firstByte(f.params) {
		case '{', '[', 'n': // n: null, which the go-sdk reads as no params
		default:
			return f, invalidRequest(id, `"params" must be an object or an array`)
		}
	}
	return f, nil
}

// validDeep reports whether b is one JSON value at any depth.
// json.Valid refuses anything nested deeper than 10000 (encoding/json's
// own limit), which would lose the id of a frame that is JSON but too
// deep; the token stream has no depth limit and keeps one level per
// token, so a valid 20000-deep frame still has its id recovered.
func validDeep(b []byte) bool {
	if json.Valid(b) {
		return true
	}
	d := json.NewDecoder(bytes.NewReader(b))
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return false
		}
		if r, ok := t.(json.Delim); ok {
			if r == '{' || r == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			// One whole value: the rest must be white space.
			_, err := d.Token()
			return err == io.EOF
		}
	}
}

// frameFields are the raw members of a frame that the go-sdk decodes; nil
// when absent.
type frameFields struct {
	version, id, method, params, result, error []byte
}

func (f *frameFields) set(key, val []byte) bool {
	switch keyName(key) {
	case "jsonrpc":
		f.version = val
	case "id":
		f.id = val
	case "method":
		f.method = val
	case "params":
		f.params = val
	case "result":
		f.result = val
	case "error":
		f.error = val
	}
	return true
}

// checkResponse validates a response-shaped frame.
func checkResponse(version json.RawMessage, id jsonrpc.ID, idErr string, hasID bool) *FrameError {
	if !isString(version, "2.0") {
		return invalidRequest(id, `"jsonrpc" must be "2.0"`)
	}
	if !hasID {
		return invalidRequest(id, `a response needs an "id"`)
	}
	if idErr != "" {
		return invalidRequest(jsonrpc.ID{}, idErr)
	}
	return nil
}

// errorMember says why raw, the "error" member of a frame, is not one the
// go-sdk decodes (an object with an integer code and a string message,
// or null), or "".
func errorMember(raw json.RawMessage) string {
	if firstByte(raw) == 'n' {
		return ""
	}
	var e map[string]json.RawMessage
	if json.Unmarshal(raw, &e) != nil || e == nil {
		return `"error" must be an object`
	}
	if c, ok := e["code"]; !ok {
		return `"error.code" is missing`
	} else if _, ok := intText(c); !ok {
		return `"error.code" must be an integer`
	}
	if m, ok := e["message"]; ok && !isString(m, "") && firstByte(m) != 'n' {
		return `"error.message" must be a string`
	}
	return ""
}

// parseID reads a request id: a string, or an integer of magnitude at most
// 2^53-1 (the go-sdk decodes ids as float64 and answers with int64 of
// that). It returns a message saying why raw is not an id, or "".
func parseID(raw json.RawMessage) (jsonrpc.ID, string) {
	const why = `"id" must be a string or an integer of at most 2^53-1`
	switch c := firstByte(raw); {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, why
		}
		id, _ := jsonrpc.MakeID(s)
		return id, ""
	case c == '-' || (c >= '0' && c <= '9'):
		n, ok := intText(raw)
		if !ok {
			return jsonrpc.ID{}, why
		}
		id, _ := jsonrpc.MakeID(float64(n))
		return id, ""
	}
	return jsonrpc.ID{}, why
}

// intText parses raw, a JSON value, as an integer in plain integer syntax
// (no fraction, no exponent) of magnitude at most 2^53-1.
func intText(raw []byte) (int64, bool) {
	raw = trimSpace(raw)
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 16 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > maxIntID || n < -maxIntID {
		return 0, false
	}
	return n, true
}

// isString reports whether raw is a JSON string, equal to want unless want
// is "".
func isString(raw json.RawMessage, want string) bool {
	if firstByte(raw) != '"' {
		return false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	return want == "" || s == want
}

// depthExceeds reports whether b nests arrays and objects more than max
// deep, outside strings: one pass, no recursion, no validation.
func depthExceeds(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return false
			}
			i = end - 1
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// frameShape is what a scan of a frame's top-level members finds.
type frameShape struct {
	ID jsonrpc.ID // the "id", when it is a valid one
	// Response: "result" or "error" and no "method", as far as the scan
	// got. A bad response gets no answer (FrameError.Drop).
	Response bool
}

// shapeOf scans the top-level members of the object that b starts with,
// without recursion and without needing the whole object: it works on the
// first bytes of a frame too long to read, and on one too deep to decode.
// It does not validate b.
func shapeOf(b []byte) frameShape {
	var sh frameShape
	var method, result bool
	members(b, func(key, val []byte) bool {
		switch keyName(key) {
		case "id":
			if val != nil { // the last id wins, as in the go-sdk
				sh.ID, _ = parseID(val)
			}
		case "method":
			method = true
		case "result", "error":
			result = true
		}
		return true
	})
	sh.Response = result && !method
	return sh
}

// members calls visit with the raw key (quoted) and the raw value of each
// member of the object that b starts with, in order, while visit returns
// true. It trusts b only as far as it reads: at bytes that cannot be a
// member, or where b ends, it stops; a value cut short by the end of b is
// visited as nil, last. It does not validate the values it skips, and
// needs no recursion to skip them.
func members(b []byte, visit func(key, val []byte) bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		keyEnd := stringEnd(b, i)
		if keyEnd < 0 {
			return
		}
		colon := skipSpace(b, keyEnd)
		if colon >= len(b) || b[colon] != ':' {
			return
		}
		start := skipSpace(b, colon+1)
		end := valueEnd(b, start)
		if end < 0 {
			visit(b[i:keyEnd], nil)
			return
		}
		if !visit(b[i:keyEnd], b[start:end]) {
			return
		}
		if i = skipSpace(b, end); i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

// valueEnd returns the index just past the value that starts at b[i], or
// -1 when b ends first. A scalar ends at the first delimiter after it, so
// one cut short at the end of b is not taken for complete.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	if j == i || j == len(b) {
		return -1
	}
	return j
}

// keyName is the name a raw (quoted) key stands for.
func keyName(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1 : len(key)-1])
	}
	var s string
	_ = json.Unmarshal(key, &s)
	return s
}

// stringEnd returns the index just past the string that starts at b[i]
// (a '"'), or -1 when b ends first. It jumps from quote to quote, and a
// quote is escaped when an odd run of backslashes precedes it.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func trimSpace(b []byte) []byte {
	b = b[skipSpace(b, 0):]
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// firstByte is the first byte of b after JSON whitespace, or 0.
func firstByte(b []byte) byte {
	if i := skipSpace(b, 0); i < len(b) {
		return b[i]
	}
	return 0
}
