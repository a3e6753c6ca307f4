package op_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/route"
)

// The operations of the registry, schema and decode tests: lookArgs is a
// read with most of what a schema can say; noteArgs a person's operation
// (no run_id added).

type lookArgs struct {
	Query  string    `json:"query" jsonschema:"what to look for"`
	Mode   string    `json:"mode,omitempty" enum:"exact,prefix,regex"`
	Kinds  []string  `json:"kinds,omitempty" enum:"file,dir"`
	Limit  *int      `json:"limit,omitempty"`
	Items  []lookArg `json:"items,omitempty"`
	Hidden string    `json:"-"`
	op.Approval
}

type lookArg struct {
	Name string `json:"name"`
	Side string `json:"side,omitempty" enum:"left,right"`
}

type lookResult struct {
	op.Meta
	Found []string `json:"found"`
	// Progress is what the operation's progress function received.
	Progress []string `json:"progress,omitempty"`
}

type noteArgs struct {
	RequestID string `json:"request_id,omitempty" required:"true"`
	Text      string `json:"text,omitempty"`
}

type noteResult struct {
	op.Meta
	Text string `json:"text"`
}

// lookOp answers the query back; a query "breakdown" asks for the latency
// breakdown, "progress" reports twice on the way.
func lookOp() op.Op {
	return op.Def(op.Spec[lookArgs]{Name: "look_up", Description: "looks", ReadOnly: true, Output: lookResult{},
		Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles,
		Prepare: func(_ context.Context, _ *op.Call, in lookArgs) (*op.Plan, error) {
			if in.Query == "refuse" {
				return nil, errs.New(errs.InvalidArgument, "look_up: query %q is refused: ask for something else", in.Query)
			}
			return &op.Plan{Breakdown: in.Query == "breakdown", Run: func(ctx context.Context) (any, error) {
				r := &lookResult{Found: []string{in.Query}}
				if in.Query == "progress" {
					op.Report(ctx, 1, 2, "half")
					op.Report(ctx, 2, 2, "done")
				}
				return r, nil
			}}, nil
		}})
}

// noteOp is a person's operation whose input requires a request_id.
func noteOp() op.Op {
	return op.Def(op.Spec[noteArgs]{Name: "note", Human: true, ReadOnly: true, Output: noteResult{}, Route: route.Readonly,
		Prepare: func(_ context.Context, _ *op.Call, in noteArgs) (*op.Plan, error) {
			return &op.Plan{Run: func(context.Context) (any, error) { return &noteResult{Text: in.Text}, nil }}, nil
		}})
}

// plainOp is a read named name with no arguments.
func plainOp(name string) op.Op {
	return op.Def(op.Spec[struct{}]{Name: name, ReadOnly: true, Output: noteResult{}, Route: route.Readonly,
		Prepare: func(context.Context, *op.Call, struct{}) (*op.Plan, error) {
			return &op.Plan{Run: func(context.Context) (any, error) { return &noteResult{Text: name}, nil }}, nil
		}})
}

// testPipeline is a pipeline of ops over a governor with the default
// policy and no repository.
func testPipeline(t testing.TB, ops ...op.Op) *op.Pipeline {
	t.Helper()
	gov, err := govern.New(govern.Config{Audit: &runtime.FakeAudit{}, LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	return op.NewPipeline(op.NewRegistry(ops), &op.Env{Gov: gov})
}

// panicOf runs f and returns what it panicked with ("" when it returned).
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// The registry is sorted by name across its groups, finds each operation
// by name and nothing else.
func TestRegistryLookup(t *testing.T) {
	reg := op.NewRegistry([]op.Op{plainOp("zeta"), lookOp()}, []op.Op{plainOp("alpha")}, nil, []op.Op{noteOp()})
	var names []string
	for _, o := range reg.All() {
		names = append(names, o.Name)
	}
	if want := []string{"alpha", "look_up", "note", "zeta"}; !slices.Equal(names, want) {
		t.Fatalf("All() = %q, want %q", names, want)
	}
	for _, name := range names {
		o, ok := reg.Lookup(name)
		if !ok || o.Name != name {
			t.Errorf("Lookup(%q) = %v, %v", name, o, ok)
		}
	}
	// Lookup returns the registry's own entry, not a copy.
	a, _ := reg.Lookup("alpha")
	if b, _ := reg.Lookup("alpha"); a != b || a != &reg.All()[0] {
		t.Errorf("Lookup returned copies: %p %p %p", a, b, &reg.All()[0])
	}
	for _, name := range []string{"", "Alpha", "look", "look_up ", "unknown"} {
		if o, ok := reg.Lookup(name); ok {
			t.Errorf("Lookup(%q) found %s", name, o.Name)
		}
	}
}

// Two operations of one name, in one group or two, are a programming
// error: NewRegistry panics naming it; so does an operation without a name.
func TestRegistryPanicsOnDuplicates(t *testing.T) {
	tests := []struct {
		name   string
		groups [][]op.Op
		want   string
	}{
		{"same group", [][]op.Op{{plainOp("a"), lookOp(), plainOp("a")}}, `operation "a" is defined twice`},
		{"two groups", [][]op.Op{{lookOp()}, {plainOp("b"), lookOp()}}, `operation "look_up" is defined twice`},
		{"no name", [][]op.Op{{plainOp("a"), plainOp("")}}, "an operation has no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if msg := panicOf(func() { op.NewRegistry(tt.groups...) }); !strings.Contains(msg, tt.want) {
				t.Fatalf("panic %q, want one containing %q", msg, tt.want)
			}
		})
	}
}

// Def fills in what the spec leaves out and refuses a spec it cannot run.
func TestDefFillsTheOp(t *testing.T) {
	look, note := lookOp(), noteOp()
	if look.Title != "Look up" || !look.Agent || !look.Idempotent || !look.ReadOnly || look.Description != "looks" {
		t.Errorf("look_up: title %q agent %v idempotent %v read-only %v", look.Title, look.Agent, look.Idempotent, look.ReadOnly)
	}
	if note.Agent {
		t.Errorf("note is a person's operation: Agent = true")
	}
	titled := op.Def(op.Spec[struct{}]{Name: "git_status", Title: "Status of the work tree", Route: route.Readonly,
		Prepare: func(context.Context, *op.Call, struct{}) (*op.Plan, error) { return &op.Plan{}, nil }})
	if titled.Title != "Status of the work tree" || titled.Idempotent || titled.OutputSchema != nil {
		t.Errorf("git_status: title %q idempotent %v output schema %v", titled.Title, titled.Idempotent, titled.OutputSchema)
	}
	if msg := panicOf(func() { op.Def(op.Spec[struct{}]{Name: "nothing"}) }); !strings.Contains(msg, "op nothing: no Prepare") {
		t.Errorf("a spec without Prepare: panic %q, want it named", msg)
	}
	if msg := panicOf(func() {
		op.Def(op.Spec[struct{}]{Name: "listy", Output: []string{},
			Prepare: func(context.Context, *op.Call, struct{}) (*op.Plan, error) { return &op.Plan{}, nil }})
	}); !strings.Contains(msg, "op listy: output schema") || !strings.Contains(msg, "want object") {
		t.Errorf("an output that is no object: panic %q, want it named", msg)
	}
}

// An operation the registry does not hold is NOT_FOUND, naming it and
// where the names are; nothing is decoded or run.
func TestPipelineUnknownOperation(t *testing.T) {
	p := testPipeline(t, lookOp())
	_, err := p.Call(context.Background(), "look_upp", json.RawMessage(`{"query":"x"}`))
	e := errs.From(err)
	if e.Code != errs.NotFound || !strings.Contains(e.Message, `unknown operation "look_upp"`) || !strings.Contains(e.Message, "harness ops") {
		t.Fatalf("got %v, want NOT_FOUND naming the operation and where to find the names", err)
	}
	if e.Details["operation"] != "look_upp" {
		t.Errorf("details %v, want operation look_upp", e.Details)
	}
}
