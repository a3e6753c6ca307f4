package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// decodeCases are frames the stream transport accepts, beyond frameCases:
// the shapes its own decoding takes (plain method and id) and the ones it
// leaves to the go-sdk (escapes, non-ASCII).
var decodeCases = []string{
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"read_file","arguments":{"path":"README.md","repo_id":"r"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params": { "a" : [ 1 , 2 ] } }`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1},"params":{"b":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}`,
	`{"jsonrpc":"2.0","id":1,"id":"two","method":"x"}`,
	`{"jsonrpc":"2.0","id":0,"method":"x"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"x"}`,
	`{"jsonrpc":"2.0","id":"","method":""}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"x"}`,
	`{"jsonrpc":"2.0","id":"é","method":"tööls/call"}`,
	`{"jsonrpc":"2.0","id":"\u0041","method":"tools\/call"}`,
	`{"jsonrpc":"2.0","id":7,"method":"x","params":{"s":"\ud800\u2028<>&"}}`,
	`{"params":[true],"method":"notifications/progress","jsonrpc":"2.0"}`,
	`{"jsonrpc":"2.0","id":3,"result":{"roots":[]}}`,
	`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":8,"method":"x","result":{},"extra":[1,{"id":9}]}`,
}

// checkDecode fails unless the stream transport decodes b to what the
// go-sdk makes of it (both refuse it, or both give the same message).
func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	got, fe := mcpserver.DecodeFrame(b)
	if fe != nil {
		if fe2 := mcpserver.CheckFrame(b); fe2 == nil || *fe2 != *fe {
			t.Fatalf("DecodeFrame refuses %q with %v, CheckFrame says %v", b, fe, fe2)
		}
		return
	}
	want, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		t.Fatalf("DecodeFrame accepts %q, the go-sdk refuses it: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeFrame(%q) = %#v, the go-sdk decodes %#v", b, got, want)
	}
}

func TestDecodeFrameAsTheSDKDoes(t *testing.T) {
	for _, tt := range frameCases {
		checkDecode(t, []byte(tt.frame))
	}
	for _, frame := range decodeCases {
		checkDecode(t, []byte(frame))
	}
}

// The decoded params do not alias the frame: the reader reuses its buffer.
func TestDecodeFrameCopiesParams(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1}}`)
	msg, fe := mcpserver.DecodeFrame(frame)
	if fe != nil {
		t.Fatal(fe)
	}
	copy(frame, bytes.Repeat([]byte("#"), len(frame)))
	if p := string(msg.(*jsonrpc.Request).Params); p != `{"a":1}` {
		t.Fatalf("params = %q after the frame's buffer was overwritten", p)
	}
}

// FuzzDecodeFrame: for every frame, the stream transport's decoding and
// the go-sdk's agree (and neither panics).
func FuzzDecodeFrame(f *testing.F) {
	for _, tt := range frameCases {
		if len(tt.frame) < 10000 {
			f.Add([]byte(tt.frame))
		}
	}
	for _, frame := range decodeCases {
		f.Add([]byte(frame))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b) })
}

func TestEncodeResultAsTheSDKDoes(t *testing.T) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"a <b> & \"c\"\n\u2028"}],"structuredContent":{"x":[1,2.5,null]}}`)
	id := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	tests := []struct {
		name string
		msg  jsonrpc.Message
		fast bool // encoded without the go-sdk
	}{
		{"int id", &jsonrpc.Response{ID: id(float64(42)), Result: result}, true},
		{"largest id", &jsonrpc.Response{ID: id(float64(1<<53 - 1)), Result: result}, true},
		{"negative id", &jsonrpc.Response{ID: id(float64(-7)), Result: result}, true},
		{"string id", &jsonrpc.Response{ID: id("req-1"), Result: result}, true},
		{"string id with a quote", &jsonrpc.Response{ID: id(`a"b`), Result: result}, false},
		{"string id, non-ASCII", &jsonrpc.Response{ID: id("é<"), Result: result}, false},
		{"error", &jsonrpc.Response{ID: id(float64(1)), Error: &jsonrpc.Error{Code: -32602, Message: "bad"}}, false},
		{"no result", &jsonrpc.Response{ID: id(float64(1))}, false},
		{"request", &jsonrpc.Request{ID: id(float64(1)), Method: "ping"}, false},
		{"notification", &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progress":1}`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := mcpserver.EncodeResult(tt.msg)
			if ok != tt.fast {
				t.Fatalf("encoded without the go-sdk: %v, want %v", ok, tt.fast)
			}
			if !ok {
				return
			}
			want, err := jsonrpc.EncodeMessage(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n%s\nthe go-sdk encodes\n%s", got, want)
			}
		})
	}
}

// Bad arguments get the same answer over the stream transport whichever
// way it decodes the frame (its own decoding of a plain request, or the
// go-sdk's when the method is written with an escape), and the same as
// over the go-sdk's in-memory transport: the operation's stable code and
// message. A frame that is not JSON is refused before any decoding.
func TestBadArgumentsOverTheStreamTransport(t *testing.T) {
	h := openHarness(t)
	srv := mcpserver.New(mcpserver.Local(h), "test", everySet)
	root := testutil.Repo(t, map[string]string{"a.txt": "alpha\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	raw := serveRaw(t, srv, mcpserver.StreamTransport{}, false)
	cs := connect(t, srv, nil)
	repo := `"repo_id":"` + r.ID + `"`
	tests := []struct {
		name, args, code string
	}{
		{"wrong type", `{` + repo + `,"path":5}`, "INVALID_ARGUMENT"},
		{"unknown field", `{` + repo + `,"path":"a.txt","lines":3}`, "INVALID_ARGUMENT"},
		{"missing field", `{` + repo + `}`, "INVALID_ARGUMENT"},
		{"an array", `[1]`, "INVALID_ARGUMENT"},
		{"a string", `"a.txt"`, "INVALID_ARGUMENT"},
		{"escaped key", `{"repo_\u0069d":"` + r.ID + `","path":5}`, "INVALID_ARGUMENT"},
		{"not a repo", `{"repo_id":"repo_nope","path":"a.txt"}`, "REPOSITORY_NOT_REGISTERED"},
		{"fine", `{` + repo + `,"path":"a.txt"}`, ""},
	}
	answer := func(id, method, args string) (code, msg string) {
		t.Helper()
		raw.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + method + `","params":{"name":"read_file","arguments":` + args + `}}`)
		m := raw.await(`"` + id + `"`)[`"`+id+`"`]
		if m.Error != nil {
			t.Fatalf("%s: JSON-RPC error %d %s", id, m.Error.Code, m.Error.Message)
		}
		var res struct {
			IsError           bool                `json:"isError"`
			StructuredContent mcpserver.ErrorBody `json:"structuredContent"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			return "", ""
		}
		return string(res.StructuredContent.Error.Code), res.StructuredContent.Error.Message
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := answer("plain"+strconv.Itoa(i), "tools/call", tt.args)
			if code != tt.code {
				t.Fatalf("code %q (%s), want %q", code, msg, tt.code)
			}
			if code2, msg2 := answer("escaped"+strconv.Itoa(i), `tools\/call`, tt.args); code2 != code || msg2 != msg {
				t.Errorf("decoded by the go-sdk: %s %q; by the transport: %s %q", code2, msg2, code, msg)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			if code == "" {
				if res.IsError {
					t.Fatalf("in memory: %s", text(t, res))
				}
				return
			}
			if e := errorOf(t, res); string(e.Code) != code || e.Message != msg {
				t.Errorf("in memory: %s %q; over the stream: %s %q", e.Code, e.Message, code, msg)
			}
		})
	}
	raw.send(`{"jsonrpc":"2.0","id":"bad","method":"tools/call","params":{"name":"read_file","arguments":{"path":}}}`)
	if m := raw.await(`null`)[`null`]; m.Error == nil || m.Error.Code != jsonrpc.CodeParseError {
		t.Fatalf("a frame that is not JSON: %+v, want a parse error", m)
	}
}
