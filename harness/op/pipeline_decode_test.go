package op_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
)

// Bad arguments never reach Prepare: each answers a stable code and a
// message that names the field and the fix, with the details a client
// reads (field, did_you_mean, valid_fields, valid_values).
func TestPipelineDecodeErrors(t *testing.T) {
	p := testPipeline(t, lookOp(), noteOp())
	tests := []struct {
		name    string
		op      string
		args    string
		code    errs.Code
		msg     []string       // the message contains each
		details map[string]any // details[k] equals v (lists compared as strings)
	}{
		{name: "unknown field", op: "look_up", args: `{"query":"a","modes":"exact"}`, code: errs.InvalidArgument,
			msg:     []string{`look_up: unknown field "modes": did you mean "mode"?`, "(valid fields: approval_id, items, kinds, limit, mode, query, run_id)"},
			details: map[string]any{"field": "modes", "did_you_mean": "mode"}},
		{name: "a transposition is too far to guess", op: "look_up", args: `{"query":"a","mdoe":"exact"}`, code: errs.InvalidArgument,
			msg: []string{`look_up: unknown field "mdoe" (valid fields: `}},
		{name: "another tool's name for a field", op: "look_up", args: `{"regexp":"a"}`, code: errs.InvalidArgument,
			msg: []string{`unknown field "regexp": did you mean "query"?`}, details: map[string]any{"did_you_mean": "query"}},
		{name: "repo_id where none is taken", op: "look_up", args: `{"query":"a","repo_id":"repo_1"}`, code: errs.InvalidArgument,
			msg: []string{`unknown field "repo_id": this tool does not take repo_id`}},
		{name: "unknown field in a nested object", op: "look_up", args: `{"query":"a","items":[{"name":"x"},{"nam":"y"}]}`, code: errs.InvalidArgument,
			msg: []string{`look_up: items[1]: unknown field "nam": did you mean "name"? (valid fields: name, side)`}, details: map[string]any{"field": "items[1].nam"}},
		{name: "missing required field", op: "look_up", args: `{"mode":"exact"}`, code: errs.InvalidArgument,
			msg: []string{`look_up: missing required field "query" (what to look for)`}, details: map[string]any{"field": "query"}},
		{name: "missing request_id", op: "note", args: `{"text":"x"}`, code: errs.RequestIDRequired,
			msg: []string{`note: missing required field "request_id"`, "a retry with the same request_id"}},
		{name: "value outside the enum", op: "look_up", args: `{"query":"a","mode":"exakt"}`, code: errs.InvalidArgument,
			msg:     []string{`look_up: mode: "exakt" is not a valid value: did you mean "exact"? (valid: exact, prefix, regex)`},
			details: map[string]any{"field": "mode", "valid_values": "[exact prefix regex]"}},
		{name: "item outside the enum", op: "look_up", args: `{"query":"a","kinds":["file","link"]}`, code: errs.InvalidArgument,
			msg: []string{`kinds[1]: "link" is not a valid value`, "(valid: file, dir)"}},
		{name: "wrong type", op: "look_up", args: `{"query":7}`, code: errs.InvalidArgument,
			msg: []string{"look_up: ", "query", "string"}},
		{name: "wrong type of an optional field", op: "look_up", args: `{"query":"a","limit":"ten"}`, code: errs.InvalidArgument,
			msg: []string{"look_up: ", "limit", "integer"}},
		{name: "not an object", op: "look_up", args: `["query"]`, code: errs.InvalidArgument,
			msg: []string{"look_up: arguments must be a JSON object"}},
		{name: "not JSON", op: "look_up", args: `{"query":`, code: errs.InvalidArgument,
			msg: []string{"look_up: arguments are not valid JSON"}},
		{name: "run_id to a person's operation", op: "note", args: `{"request_id":"r","run_id":"run_1"}`, code: errs.InvalidArgument,
			msg: []string{`note: unknown field "run_id"`}},
		{name: "Prepare's own refusal", op: "look_up", args: `{"query":"refuse"}`, code: errs.InvalidArgument,
			msg: []string{`look_up: query "refuse" is refused: ask for something else`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := p.Call(context.Background(), tt.op, json.RawMessage(tt.args))
			if err == nil {
				t.Fatalf("got %+v, want %s", out, tt.code)
			}
			e := errs.From(err)
			if e.Code != tt.code {
				t.Fatalf("code %s (%s), want %s", e.Code, e.Message, tt.code)
			}
			for _, m := range tt.msg {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q, want it to contain %q", e.Message, m)
				}
			}
			for k, want := range tt.details {
				got := e.Details[k]
				if s, ok := want.(string); ok && strings.HasPrefix(s, "[") {
					if l, ok := got.([]string); ok {
						got = "[" + strings.Join(l, " ") + "]"
					}
				}
				if got != want {
					t.Errorf("details[%s] = %v, want %v", k, got, want)
				}
			}
		})
	}
}

// What a strict decode still accepts: absent or null arguments are the
// empty object, a member sent as null is absent, and the run_id every
// agent operation takes does not reach its input type.
func TestPipelineDecodeAccepts(t *testing.T) {
	p := testPipeline(t, lookOp(), plainOp("ping"))
	o, _ := p.Registry().Lookup("look_up")
	for _, raw := range []string{`{"query":"a","mode":null,"limit":null}`, `{"query":"a","run_id":"run_1"}`, `{"query":"a","items":[{"name":"n","side":null}]}`} {
		in, err := o.Decode(json.RawMessage(raw))
		if err != nil {
			t.Errorf("Decode(%s): %v", raw, err)
			continue
		}
		if got := in.(lookArgs); got.Query != "a" || got.Mode != "" || got.Limit != nil {
			t.Errorf("Decode(%s) = %+v", raw, got)
		}
	}
	if err := o.Validate(json.RawMessage(`{"query":"a","limit":3,"kinds":["dir"]}`)); err != nil {
		t.Errorf("Validate of good arguments: %v", err)
	}
	if err := o.Validate(json.RawMessage(`{"limit":3}`)); errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("Validate without the required query: %v", err)
	}
	for _, raw := range []string{``, `null`, ` `, `{}`} {
		if out, err := p.Call(context.Background(), "ping", json.RawMessage(raw)); err != nil || out.(*noteResult).Text != "ping" {
			t.Errorf("ping with arguments %q: %+v, %v", raw, out, err)
		}
	}
}

// Every result carries its meta: the route and the latency, whose
// segments are reported only when the plan asks for the breakdown, and
// then sum to the total.
func TestPipelineResultMeta(t *testing.T) {
	p := testPipeline(t, lookOp())
	out, err := p.Call(context.Background(), "look_up", json.RawMessage(`{"query":"plain"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := out.(*lookResult)
	if r.Route != "fast" || r.Latency.TotalMs <= 0 || r.Latency.ExecutionMs != nil || r.Latency.RoutingMs != nil {
		t.Fatalf("meta %+v, want route fast, a total and no segments", r.Meta)
	}
	if !slices.Equal(r.Found, []string{"plain"}) {
		t.Fatalf("found %q", r.Found)
	}
	out, err = p.Call(context.Background(), "look_up", json.RawMessage(`{"query":"breakdown"}`))
	if err != nil {
		t.Fatal(err)
	}
	l := out.(*lookResult).Latency
	segs := []*float64{l.RoutingMs, l.PolicyMs, l.SnapshotMs, l.ExecutionMs, l.ReceiptMs, l.SandboxMs}
	sum := 0.0
	for i, s := range segs {
		if s == nil {
			t.Fatalf("segment %d missing from %+v", i, l)
		}
		sum += *s
	}
	if math.Abs(sum-l.TotalMs) > 1e-6 {
		t.Fatalf("segments sum to %v, total %v", sum, l.TotalMs)
	}
	b, _ := json.Marshal(out)
	for _, k := range []string{`"route":"fast"`, `"total_ms":`, `"routing_ms":`, `"sandbox_ms":`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("result JSON %s lacks %s", b, k)
		}
	}
}

// A trace charges each moment to one segment: moving time never takes
// more than the segment had, and the segments always sum to the total.
func TestTraceSegments(t *testing.T) {
	tr := op.StartTrace()
	tr.Mark(op.SegRouting)
	tr.Mark(op.SegExecution)
	tr.Move(op.SegRouting, op.SegSandbox, 1<<62) // more than routing took
	l := tr.Finish(op.SegReceipt, true)
	if *l.RoutingMs != 0 || *l.SandboxMs < 0 {
		t.Fatalf("after moving all of routing: %+v", l)
	}
	sum := *l.RoutingMs + *l.PolicyMs + *l.SnapshotMs + *l.ExecutionMs + *l.ReceiptMs + *l.SandboxMs
	if math.Abs(sum-l.TotalMs) > 1e-6 {
		t.Fatalf("segments sum to %v, total %v", sum, l.TotalMs)
	}
	for s, want := range map[op.Segment]string{op.SegRouting: "routing", op.SegSandbox: "sandbox", op.Segment(99): "unknown"} {
		if s.String() != want {
			t.Errorf("Segment(%d) = %q, want %q", int(s), s.String(), want)
		}
	}
}

// Progress reaches the function the context carries, in order; without
// one, Report does nothing.
func TestPipelineProgress(t *testing.T) {
	p := testPipeline(t, lookOp())
	var mu sync.Mutex
	var got []string
	ctx := op.WithProgress(context.Background(), func(progress, total float64, message string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s:%g/%g", message, progress, total))
	})
	if _, err := p.Call(ctx, "look_up", json.RawMessage(`{"query":"progress"}`)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"half:1/2", "done:2/2"}; !slices.Equal(got, want) {
		t.Fatalf("progress %q, want %q", got, want)
	}
	if _, err := p.Call(context.Background(), "look_up", json.RawMessage(`{"query":"progress"}`)); err != nil {
		t.Fatalf("progress without a function: %v", err)
	}
	op.Report(op.WithProgress(context.Background(), nil), 1, 1, "nobody listens") // a nil function is no function
}
