package op_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// An invalid value is never echoed whole: a 5 MiB value in the wrong
// place answers a few hundred bytes that name the field, the rule and the
// value's size (a 10 MiB answer used to overflow the client's buffer and
// end its session).
func TestInvalidValuesEchoedTruncated(t *testing.T) {
	p := testPipeline(t, lookOp(), noteOp())
	big := strings.Repeat("x", 5<<20)
	array := "[" + strings.Repeat(`"abcdefgh",`, 500000) + `"z"]`
	tests := []struct {
		name string
		args string
		msg  []string // the message contains each
	}{
		{"wrong-typed string", `{"query":"a","limit":"` + big + `"}`, []string{`look_up: limit: want integer, got a string "xxx`, "… (5.0 MiB)"}},
		{"wrong-typed array", `{"query":` + array + `}`, []string{`look_up: query: want string, got an array ["abcdefgh",`, "… (5.2 MiB)"}},
		{"wrong-typed object", `{"query":{"` + big + `":1}}`, []string{`look_up: query: want string, got an object {"xxx`, "… (5.0 MiB)"}},
		{"value outside the enum", `{"query":"a","mode":"` + big + `"}`, []string{`look_up: mode: "xxx`, `… (5.0 MiB) is not a valid value (valid: exact, prefix, regex)`}},
		{"unknown field", `{"query":"a","` + big + `":1}`, []string{`look_up: unknown field "xxx`, "… (5.0 MiB) (valid fields: approval_id,"}},
		{"nested unknown field", `{"query":"a","items":[{"` + big + `":1}]}`, []string{`look_up: items[0]: unknown field "xxx`, "(valid fields: name, side)"}},
		{"item of the wrong type", `{"query":"a","kinds":[` + array + `]}`, []string{`look_up: kinds[0]: want string, got an array`, "… (5.2 MiB)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Call(context.Background(), "look_up", json.RawMessage(tt.args))
			e := errs.From(err)
			if e.Code != errs.InvalidArgument {
				t.Fatalf("code %s, want INVALID_ARGUMENT", e.Code)
			}
			answer, _ := json.Marshal(e)
			if len(answer) > 1024 {
				t.Fatalf("answer is %d bytes, want at most 1 KiB: %.300s…", len(answer), answer)
			}
			for _, m := range tt.msg {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q, want it to contain %q", e.Message, m)
				}
			}
		})
	}
}
