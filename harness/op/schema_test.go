package op_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/route"
)

// schemaJSON is a schema as clients receive it, decoded generically.
func schemaJSON(t *testing.T, s any) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks a decoded schema along keys ("properties", "query", ...).
func at(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func strs(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// An input schema is written for models: closed objects, one plain type
// per field, enums from the enum tag (on a list: on its items), the
// descriptions of the struct tags and of the fields every operation
// shares, required true to the contract, embedded structs flattened, and
// the run_id every agent operation takes.
func TestInputSchema(t *testing.T) {
	s := schemaJSON(t, lookOp().InputSchema)
	if at(s, "type") != "object" || at(s, "additionalProperties") != false {
		t.Errorf("type %v, additionalProperties %v; want a closed object", at(s, "type"), at(s, "additionalProperties"))
	}
	props, _ := at(s, "properties").(map[string]any)
	var names []string
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"approval_id", "items", "kinds", "limit", "mode", "query", "run_id"}; !slices.Equal(names, want) {
		t.Errorf("properties %q, want %q (json:\"-\" left out, the embedded Approval flattened, run_id added)", names, want)
	}
	if got := strs(at(s, "required")); !slices.Equal(got, []string{"query"}) {
		t.Errorf("required %q, want [query]", got)
	}
	checks := []struct {
		path []string
		want any
	}{
		{[]string{"properties", "query", "description"}, "what to look for"},
		{[]string{"properties", "query", "type"}, "string"},
		{[]string{"properties", "limit", "type"}, "integer"}, // *int is not ["null","integer"]
		{[]string{"properties", "items", "items", "additionalProperties"}, false},
		{[]string{"properties", "approval_id", "description"}, "from APPROVAL_REQUIRED, once a person approved it"},
		{[]string{"properties", "run_id", "type"}, "string"},
	}
	for _, c := range checks {
		if got := at(s, c.path...); got != c.want {
			t.Errorf("%s = %v, want %v", strings.Join(c.path, "."), got, c.want)
		}
	}
	for _, c := range []struct {
		path []string
		want []string
	}{
		{[]string{"properties", "mode", "enum"}, []string{"exact", "prefix", "regex"}},
		{[]string{"properties", "kinds", "items", "enum"}, []string{"file", "dir"}},
		{[]string{"properties", "items", "items", "properties", "side", "enum"}, []string{"left", "right"}},
		{[]string{"properties", "items", "items", "required"}, []string{"name"}},
	} {
		if got := strs(at(s, c.path...)); !slices.Equal(got, c.want) {
			t.Errorf("%s = %q, want %q", strings.Join(c.path, "."), got, c.want)
		}
	}
	if at(s, "properties", "kinds", "enum") != nil {
		t.Errorf("a list's enum is on its items, not on the list")
	}

	// A person's operation: no run_id; request_id required by its tag,
	// with the shared description.
	n := schemaJSON(t, noteOp().InputSchema)
	if at(n, "properties", "run_id") != nil {
		t.Errorf("a person's operation got a run_id")
	}
	if got := strs(at(n, "required")); !slices.Equal(got, []string{"request_id"}) {
		t.Errorf("note: required %q, want [request_id] (the required tag)", got)
	}
	if d, _ := at(n, "properties", "request_id", "description").(string); !strings.Contains(d, "a retry with the same request_id") {
		t.Errorf("request_id description %q, want the shared one", d)
	}
}

type level int

func (l level) MarshalText() ([]byte, error) { return []byte([]string{"low", "high"}[l]), nil }

type shapeResult struct {
	op.Meta
	At    time.Time       `json:"at"`
	Took  time.Duration   `json:"took"`
	Raw   json.RawMessage `json:"raw"`
	Level level           `json:"level"`
	Rows  []shapeRow      `json:"rows"`
}

type shapeRow struct {
	Path string `json:"path"`
}

// An output schema says the result's shape and types and stays open: no
// required list and no closed objects, so a client validating results
// never refuses those of a newer harnessd.
func TestOutputSchema(t *testing.T) {
	o := op.Def(op.Spec[struct{}]{Name: "shape", ReadOnly: true, Output: shapeResult{}, Route: route.Readonly,
		Prepare: func(context.Context, *op.Call, struct{}) (*op.Plan, error) { return &op.Plan{}, nil }})
	s := schemaJSON(t, o.OutputSchema)
	if at(s, "type") != "object" || at(s, "required") != nil || at(s, "additionalProperties") != nil {
		t.Errorf("type %v, required %v, additionalProperties %v; want an open object", at(s, "type"), at(s, "required"), at(s, "additionalProperties"))
	}
	if at(s, "properties", "rows", "items", "required") != nil || at(s, "properties", "rows", "items", "additionalProperties") != nil {
		t.Errorf("a nested object is closed or has a required list: %v", at(s, "properties", "rows", "items"))
	}
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"properties", "route", "type"}, "string"}, // Meta, embedded
		{[]string{"properties", "latency", "properties", "total_ms", "type"}, "number"},
		{[]string{"properties", "at", "type"}, "string"},
		{[]string{"properties", "at", "format"}, "date-time"},
		{[]string{"properties", "took", "type"}, "integer"},
		{[]string{"properties", "raw", "description"}, "any JSON value"},
		{[]string{"properties", "level", "type"}, "string"}, // its MarshalText decides
	} {
		if got := at(s, c.path...); got != c.want {
			t.Errorf("%s = %v, want %v", strings.Join(c.path, "."), got, c.want)
		}
	}
}

type stampArgs struct {
	RequestID string `json:"request_id,omitempty" required:"true"`
	Text      string `json:"text"`
}

// stampOp is an agent operation whose input requires a request_id.
func stampOp() op.Op {
	return op.Def(op.Spec[stampArgs]{Name: "stamp", ReadOnly: true, Output: noteResult{}, Route: route.Readonly, BatchStep: true,
		Prepare: func(_ context.Context, _ *op.Call, in stampArgs) (*op.Plan, error) {
			return &op.Plan{Run: func(context.Context) (any, error) { return &noteResult{Text: in.Text}, nil }}, nil
		}})
}

// A step of a batch is decoded against the step schema: the batch's
// request_id covers its steps, so a step needs none, though the same
// operation called alone does. Everything else is as strict.
func TestStepSchemaWithoutRequestID(t *testing.T) {
	p := testPipeline(t, stampOp(), noteOp())
	ctx := context.Background()
	parent := &op.Call{Env: p.Env()}
	step, err := p.PrepareStep(ctx, parent, 2, "stamp", json.RawMessage(`{"text":"a"}`))
	if err != nil {
		t.Fatalf("a step without request_id: %v", err)
	}
	if step.Index != 2 || step.Kind != "stamp" || !step.Call.InBatch || step.Plan.Run == nil {
		t.Fatalf("step %+v, want index 2 of kind stamp, in a batch, with its plan", step)
	}
	out, err := step.Run(ctx)
	if err != nil || out.(*noteResult).Text != "a" || out.(*noteResult).Route != "fast" {
		t.Fatalf("step.Run = %+v, %v", out, err)
	}
	if _, err := p.Call(ctx, "stamp", json.RawMessage(`{"text":"a"}`)); errs.CodeOf(err) != errs.RequestIDRequired {
		t.Fatalf("the operation alone without request_id: %v, want REQUEST_ID_REQUIRED", err)
	}
	if _, err := p.Call(ctx, "stamp", json.RawMessage(`{"text":"a","request_id":"r1"}`)); err != nil {
		t.Fatalf("the operation alone with request_id: %v", err)
	}
	if _, err := p.PrepareStep(ctx, parent, 0, "stamp", json.RawMessage(`{"txt":"a"}`)); errs.CodeOf(err) != errs.InvalidArgument ||
		!strings.Contains(err.Error(), `unknown field "txt": did you mean "text"?`) {
		t.Fatalf("a step with an unknown field: %v, want INVALID_ARGUMENT naming text", err)
	}
	if _, err := p.PrepareStep(ctx, parent, 0, "note", json.RawMessage(`{"request_id":"r"}`)); errs.CodeOf(err) != errs.InvalidArgument ||
		!strings.Contains(err.Error(), `unknown step kind "note"`) {
		t.Fatalf("a person's operation as a step: %v, want an unknown step kind", err)
	}
}
