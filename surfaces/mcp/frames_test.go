package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

const (
	parseErr   = jsonrpc.CodeParseError
	invalidReq = jsonrpc.CodeInvalidRequest
)

// nested is a request whose params nest depth levels deep in total.
func nested(id string, depth int) string {
	inner := strings.Repeat("[", depth-2) + strings.Repeat("]", depth-2)
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"a":` + inner + `}}`
}

type frameCase struct {
	name  string
	frame string
	code  int64  // 0: the frame is fine
	id    any    // the recovered id: nil, int64 or string
	drop  bool   // a malformed response: no answer
	msg   string // part of the message
}

var frameCases = []frameCase{
	{name: "request", frame: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	{name: "string id", frame: `{"jsonrpc":"2.0","id":"a-1","method":"tools/list","params":{}}`},
	{name: "notification", frame: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	{name: "params array", frame: `{"jsonrpc":"2.0","id":2,"method":"x","params":[1,2]}`},
	{name: "params null", frame: `{"jsonrpc":"2.0","id":2,"method":"x","params":null}`},
	{name: "whitespace", frame: " \t{ \"jsonrpc\" : \"2.0\" , \"id\" : 7 , \"method\" : \"x\" }\r"},
	{name: "largest id", frame: `{"jsonrpc":"2.0","id":9007199254740991,"method":"x"}`},
	{name: "negative id", frame: `{"jsonrpc":"2.0","id":-9007199254740991,"method":"x"}`},
	{name: "result", frame: `{"jsonrpc":"2.0","id":3,"result":{"roots":[]}}`},
	{name: "error response", frame: `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no","data":[1]}}`},
	{name: "case differs", frame: `{"jsonrpc":"2.0","id":1,"method":"x","ID":{},"JSONRPC":1}`},
	{name: "depth at the limit", frame: nested("4", mcpserver.MaxFrameDepth)},
	{name: "escaped keys", frame: `{"json\u0072pc":"2.0","i\u0064":1,"method":"x"}`},

	{name: "not json", frame: `hello`, code: parseErr},
	{name: "empty", frame: ``, code: parseErr},
	{name: "truncated", frame: `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, code: parseErr},
	{name: "NUL in a string", frame: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\x00list\"}", code: parseErr, msg: "invalid character"},
	{name: "NUL outside strings", frame: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\x00", code: parseErr},
	{name: "two values", frame: `{"jsonrpc":"2.0","id":1,"method":"x"} {"jsonrpc":"2.0","id":2,"method":"x"}`, code: parseErr},
	{name: "trailing comma", frame: `{"jsonrpc":"2.0","id":1,"method":"x",}`, code: parseErr},
	{name: "too deep, id recovered", frame: nested("4", mcpserver.MaxFrameDepth+1), code: parseErr, id: int64(4), msg: "nesting deeper than 512"},
	{name: "depth 1000", frame: strings.Repeat("[", 1000) + strings.Repeat("]", 1000), code: parseErr},
	{name: "deep and unclosed", frame: `{"jsonrpc":"2.0","id":9,"params":` + strings.Repeat(`{"a":`, 100000), code: parseErr},

	{name: "jsonrpc 1.0", frame: `{"jsonrpc":"1.0","id":2,"method":"tools/list"}`, code: invalidReq, id: int64(2), msg: `"jsonrpc" must be "2.0"`},
	{name: "jsonrpc missing", frame: `{"id":"s","method":"tools/list"}`, code: invalidReq, id: "s"},
	{name: "jsonrpc a number", frame: `{"jsonrpc":2.0,"id":2,"method":"tools/list"}`, code: invalidReq, id: int64(2)},
	{name: "batch", frame: `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, code: invalidReq, msg: "batch"},
	{name: "empty batch", frame: `[]`, code: invalidReq, msg: "batch"},
	{name: "object id", frame: `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`, code: invalidReq, msg: `"id" must be`},
	{name: "array id", frame: `{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, code: invalidReq},
	{name: "bool id", frame: `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, code: invalidReq},
	{name: "null id", frame: `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, code: invalidReq},
	{name: "fractional id", frame: `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, code: invalidReq},
	{name: "exponent id", frame: `{"jsonrpc":"2.0","id":1e3,"method":"tools/list"}`, code: invalidReq},
	{name: "id past 2^53", frame: `{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/list"}`, code: invalidReq},
	{name: "missing method", frame: `{"jsonrpc":"2.0","id":5}`, code: invalidReq, id: int64(5), msg: `missing "method"`},
	{name: "method a number", frame: `{"jsonrpc":"2.0","id":5,"method":5}`, code: invalidReq, id: int64(5)},
	{name: "params a number", frame: `{"jsonrpc":"2.0","id":5,"method":"x","params":5}`, code: invalidReq, id: int64(5)},
	{name: "error member on a request", frame: `{"jsonrpc":"2.0","id":5,"method":"x","error":5}`, code: invalidReq, id: int64(5)},
	{name: "a number", frame: `5`, code: invalidReq},
	{name: "a string", frame: `"x"`, code: invalidReq},
	{name: "null", frame: `null`, code: invalidReq},

	{name: "response with null id", frame: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, code: invalidReq, drop: true},
	{name: "response without id", frame: `{"jsonrpc":"2.0","result":{}}`, code: invalidReq, drop: true},
	{name: "response jsonrpc 1.0", frame: `{"jsonrpc":"1.0","id":1,"result":{}}`, code: invalidReq, id: int64(1), drop: true},
	{name: "response error a string", frame: `{"jsonrpc":"2.0","id":1,"error":"x"}`, code: invalidReq, id: int64(1), drop: true},
	{name: "response too deep", frame: `{"jsonrpc":"2.0","id":6,"result":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, code: parseErr, id: int64(6), drop: true},
	{name: "response error code a float", frame: `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, code: invalidReq, id: int64(1), drop: true},
}

func TestCheckFrame(t *testing.T) {
	for _, tt := range frameCases {
		t.Run(tt.name, func(t *testing.T) {
			fe := mcpserver.CheckFrame([]byte(tt.frame))
			if tt.code == 0 {
				if fe != nil {
					t.Fatalf("CheckFrame = %d %q, want ok", fe.Code, fe.Message)
				}
				if _, err := jsonrpc.DecodeMessage([]byte(tt.frame)); err != nil {
					t.Fatalf("the go-sdk refuses a frame CheckFrame accepts: %v", err)
				}
				return
			}
			if fe == nil {
				t.Fatalf("CheckFrame = ok, want code %d", tt.code)
			}
			if fe.Code != tt.code || fe.Drop != tt.drop {
				t.Errorf("code, drop = %d, %v (%s), want %d, %v", fe.Code, fe.Drop, fe.Message, tt.code, tt.drop)
			}
			if fe.ID.Raw() != tt.id {
				t.Errorf("id = %#v, want %#v", fe.ID.Raw(), tt.id)
			}
			if !strings.Contains(fe.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", fe.Message, tt.msg)
			}
		})
	}
}

func TestShapeOf(t *testing.T) {
	tests := []struct {
		name, prefix string
		id           any
		response     bool
	}{
		{"first", `{"id":3,"method":"x","params":{"a":"`, int64(3), false},
		{"after params", `{"jsonrpc":"2.0","params":{"id":1,"b":["}",{"id":2}]},"id":"x","method":`, "x", false},
		{"escaped quote in a key", `{"a\"id":1,"id":2,`, int64(2), false},
		{"escaped key", `{"i\u0064":5}`, int64(5), false},
		{"the last id", `{"id":1,"id":2}`, int64(2), false},
		{"nested only", `{"params":{"id":1}}`, nil, false},
		{"cut in the id", `{"id":12`, nil, false},
		{"cut in a string id", `{"id":"ab`, nil, false},
		{"object id", `{"id":{},"method":"x"}`, nil, false},
		{"float id", `{"id":1.5}`, nil, false},
		{"array frame", `[{"id":1}]`, nil, false},
		{"not json", `id:1`, nil, false},
		{"empty", ``, nil, false},
		{"response cut in its result", `{"jsonrpc":"2.0","id":5,"result":{"content":[{"text":"`, int64(5), true},
		{"error response", `{"id":5,"error":{"code":1`, int64(5), true},
		{"method after result", `{"id":5,"result":1,"method":"x"`, int64(5), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, response := mcpserver.ShapeOf([]byte(tt.prefix))
			if id.Raw() != tt.id || response != tt.response {
				t.Fatalf("ShapeOf = %#v, %v, want %#v, %v", id.Raw(), response, tt.id, tt.response)
			}
		})
	}
}

// refDepth is the nesting depth of valid JSON, by encoding/json's tokens.
func refDepth(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
				deepest = max(deepest, depth)
			default:
				depth--
			}
		}
	}
}

// FuzzCheckFrame: CheckFrame never panics; it calls a frame a parse error
// exactly when encoding/json says it is not JSON or it nests too deep;
// every frame it accepts the go-sdk decodes, to the id the frame carries;
// and its answer is a JSON-RPC error response with the recovered id.
func FuzzCheckFrame(f *testing.F) {
	for _, tt := range frameCases {
		if len(tt.frame) < 10000 {
			f.Add([]byte(tt.frame))
		}
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\ud800\xff"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fe := mcpserver.CheckFrame(b)
		valid := json.Valid(b)
		tooDeep := valid && refDepth(b) > mcpserver.MaxFrameDepth
		if isParse := fe != nil && fe.Code == parseErr; isParse != (!valid || tooDeep) {
			t.Fatalf("parse error = %v (%v), but json.Valid = %v, too deep = %v", isParse, fe, valid, tooDeep)
		}
		if fe == nil {
			msg, err := jsonrpc.DecodeMessage(b)
			if err != nil {
				t.Fatalf("CheckFrame accepts what the go-sdk refuses: %v", err)
			}
			var probe map[string]json.RawMessage
			_ = json.Unmarshal(b, &probe)
			if raw, ok := probe["id"]; ok {
				var want any
				_ = json.Unmarshal(raw, &want)
				if f, ok := want.(float64); ok {
					want = int64(f)
				}
				var got jsonrpc.ID
				switch m := msg.(type) {
				case *jsonrpc.Request:
					got = m.ID
				case *jsonrpc.Response:
					got = m.ID
				}
				if got.Raw() != want {
					t.Fatalf("the go-sdk decodes id %#v, the frame says %s", got.Raw(), raw)
				}
			}
			return
		}
		if fe.Code != parseErr && fe.Code != invalidReq {
			t.Fatalf("code %d", fe.Code)
		}
		if fe.ID.IsValid() && !valid {
			t.Fatalf("id %#v recovered from a frame that is not JSON", fe.ID.Raw())
		}
		if fe.Drop && !valid {
			t.Fatalf("dropped a frame that is not JSON")
		}
		out, err := mcpserver.EncodeErrorResponse(fe)
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   jsonrpc.Error   `json:"error"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || resp.JSONRPC != "2.0" || resp.Error.Code != fe.Code {
			t.Fatalf("answer %s: %v", out, err)
		}
		if !fe.ID.IsValid() && string(resp.ID) != "null" {
			t.Fatalf("answer %s: id is not null", out)
		}
	})
}
