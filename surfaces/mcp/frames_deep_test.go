package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// Frames nested deeper than encoding/json's own limit (10000) are still
// JSON: their id is recovered (docs/mcp-frames.md) with a scan that has no
// depth limit; a deep frame that is not JSON keeps a null id.
func TestCheckFrameDeepRecoversID(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	objs := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	tests := []struct {
		name  string
		frame string
		id    any
		drop  bool
	}{
		{"20k arrays", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":` + deep(20000) + `}}`, int64(7), false},
		{"30k objects, string id", `{"jsonrpc":"2.0","id":"deep-1","method":"x","params":` + objs(30000) + `}`, "deep-1", false},
		{"id after the deep member", `{"jsonrpc":"2.0","method":"x","params":` + deep(20000) + `,"id":8}`, int64(8), false},
		{"deep response", `{"jsonrpc":"2.0","id":9,"result":` + deep(20000) + `}`, int64(9), true},
		{"20k unclosed", `{"jsonrpc":"2.0","id":7,"method":"x","params":` + strings.Repeat("[", 20000), nil, false},
		{"20k, one bracket short", `{"jsonrpc":"2.0","id":7,"method":"x","params":` + strings.Repeat("[", 20000) + strings.Repeat("]", 19999) + `}`, nil, false},
		{"20k, then a second value", `{"jsonrpc":"2.0","id":7,"method":"x","params":` + deep(20000) + `} {}`, nil, false},
		{"20k, control byte in a string", `{"jsonrpc":"2.0","id":7,"method":"x\u0001","params":` + deep(20000) + `}`, int64(7), false},
		{"20k, raw control byte in a string", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\x01\",\"params\":" + deep(20000) + "}", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := mcpserver.CheckFrame([]byte(tt.frame))
			if fe == nil || fe.Code != jsonrpc.CodeParseError {
				t.Fatalf("CheckFrame = %v, want a parse error", fe)
			}
			if fe.ID.Raw() != tt.id || fe.Drop != tt.drop {
				t.Errorf("id, drop = %#v, %v (%s), want %#v, %v", fe.ID.Raw(), fe.Drop, fe.Message, tt.id, tt.drop)
			}
		})
	}
}
