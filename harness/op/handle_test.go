package op

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/route"
)

type echoArgs struct {
	Text string `json:"text"`
}

type echoResult struct {
	Meta
	Echo string `json:"echo"`
}

type otherArgs struct {
	N int `json:"n"`
}

// handleOps are the operations of the handle tests: echo answers its text,
// bare names no Output.
func handleOps() []Op {
	return []Op{
		Def(Spec[echoArgs]{Name: "echo", Output: echoResult{}, ReadOnly: true,
			Prepare: func(_ context.Context, _ *Call, in echoArgs) (*Plan, error) {
				if in.Text == "" {
					return nil, errs.New(errs.InvalidArgument, "echo: text is required")
				}
				return &Plan{Gate: govern.Input{Route: fastRoute("echo")},
					Run: func(context.Context) (any, error) { return &echoResult{Echo: in.Text}, nil }}, nil
			}}),
		Def(Spec[otherArgs]{Name: "bare", Human: true, ReadOnly: true,
			Prepare: func(context.Context, *Call, otherArgs) (*Plan, error) {
				return &Plan{Gate: govern.Input{Route: fastRoute("bare")},
					Run: func(context.Context) (any, error) { return &echoResult{}, nil }}, nil
			}}),
	}
}

// fastRoute is the route of the test operations: the Fast Path, no risk.
func fastRoute(name string) *route.Decision {
	return &route.Decision{Mode: route.Fast, Reasons: []string{name + " is a test read"}, EstimatedClass: route.Short, Tier: route.Direct}
}

// handlePipeline is a pipeline of handleOps over a governor with the
// default policy; observed receives the gate's decisions.
func handlePipeline(t testing.TB, observed *[]govern.Decision) *Pipeline {
	t.Helper()
	gov, err := govern.New(govern.Config{Audit: &runtime.FakeAudit{}, LoopThreshold: -1,
		Observe: func(d govern.Decision) {
			if observed != nil {
				*observed = append(*observed, d)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return NewPipeline(NewRegistry(handleOps()), &Env{Gov: gov})
}

// mustPanic runs f and returns what it panicked with; it fails the test
// when f returns.
func mustPanic(t *testing.T, what string, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("%s: no panic", what)
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}

// TestHandleOfChecksTypes: a handle whose types are not its operation's
// panics when it is built (at Open for the facade), naming both types;
// so does an unknown name or an operation without an Output.
func TestHandleOfChecksTypes(t *testing.T) {
	reg := NewRegistry(handleOps())
	h := HandleOf[echoArgs, *echoResult](reg, "echo")
	if h.Name() != "echo" {
		t.Fatalf("Name() = %q", h.Name())
	}
	for _, c := range []struct {
		what string
		f    func()
		want []string
	}{
		{"result by value", func() { HandleOf[echoArgs, echoResult](reg, "echo") }, []string{`"echo" returns *op.echoResult, not op.echoResult`}},
		{"another result", func() { HandleOf[echoArgs, *Receipt](reg, "echo") }, []string{`"echo" returns *op.echoResult, not *op.Receipt`}},
		{"another input", func() { HandleOf[otherArgs, *echoResult](reg, "echo") }, []string{`"echo" takes op.echoArgs, not op.otherArgs`}},
		{"input by pointer", func() { HandleOf[*echoArgs, *echoResult](reg, "echo") }, []string{`takes op.echoArgs, not *op.echoArgs`}},
		{"unknown name", func() { HandleOf[echoArgs, *echoResult](reg, "ecco") }, []string{`no operation "ecco"`}},
		{"no Output", func() { HandleOf[otherArgs, *echoResult](reg, "bare") }, []string{`"bare" declares no Output`, "must name one"}},
	} {
		msg := mustPanic(t, c.what, c.f)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: panic %q does not say %q", c.what, msg, w)
			}
		}
	}
}

// TestHandleCallRunsThePipeline: a typed call crosses the same stages as
// a JSON call by name: prepare, the gate once, execute, the result's meta.
func TestHandleCallRunsThePipeline(t *testing.T) {
	var gated []govern.Decision
	p := handlePipeline(t, &gated)
	h := HandleOf[echoArgs, *echoResult](p.Registry(), "echo")
	ctx := context.Background()

	out, err := h.Call(ctx, p, echoArgs{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Echo != "hi" || out.Meta.Route != "fast" {
		t.Fatalf("result %+v: want echo hi on the fast route", out)
	}
	if len(gated) != 1 || gated[0].Tool != "echo" || gated[0].Outcome != "allow" {
		t.Fatalf("gate decisions %+v: want one allow of echo", gated)
	}
	raw, err := p.Call(ctx, "echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if byName := raw.(*echoResult); byName.Echo != out.Echo || byName.Route != out.Route || len(gated) != 2 {
		t.Fatalf("by name %+v after %d gate decisions: want what the handle answered, gated once more", byName, len(gated))
	}

	// Prepare's refusal comes back as it is, before the gate.
	if _, err := h.Call(ctx, p, echoArgs{}); errs.CodeOf(err) != errs.InvalidArgument || len(gated) != 2 {
		t.Fatalf("empty text: %v after %d gate decisions: want INVALID_ARGUMENT, not gated", err, len(gated))
	}

	// A closed pipeline refuses typed calls as it refuses the others.
	if !p.Close(ctx) {
		t.Fatal("close: work still in flight")
	}
	if _, err := h.Call(ctx, p, echoArgs{Text: "hi"}); errs.CodeOf(err) != errs.Unavailable {
		t.Fatalf("after Close: %v, want UNAVAILABLE", err)
	}
}

// TestHandleCallRefusesUnboundHandles: the zero Handle, or one of another
// registry than the pipeline's, answers INTERNAL instead of running.
func TestHandleCallRefusesUnboundHandles(t *testing.T) {
	var gated []govern.Decision
	p := handlePipeline(t, &gated)
	ctx := context.Background()
	var zero Handle[echoArgs, *echoResult]
	if zero.Name() != "" {
		t.Fatalf("zero handle named %q", zero.Name())
	}
	if _, err := zero.Call(ctx, p, echoArgs{Text: "hi"}); errs.CodeOf(err) != errs.Internal || !strings.Contains(err.Error(), "without HandleOf") {
		t.Fatalf("zero handle: %v, want INTERNAL naming HandleOf", err)
	}
	other := HandleOf[echoArgs, *echoResult](NewRegistry(handleOps()), "echo")
	if _, err := other.Call(ctx, p, echoArgs{Text: "hi"}); errs.CodeOf(err) != errs.Internal || !strings.Contains(err.Error(), "another registry") {
		t.Fatalf("foreign handle: %v, want INTERNAL naming the registry", err)
	}
	if len(gated) != 0 {
		t.Fatalf("refused handles reached the gate: %+v", gated)
	}
}

// BenchmarkHandleCall is the pipeline's own cost for a typed call of an
// operation that does nothing (the facade's dispatch: no lookup by name,
// no type check of the input).
func BenchmarkHandleCall(b *testing.B) {
	p := handlePipeline(b, nil)
	h := HandleOf[echoArgs, *echoResult](p.Registry(), "echo")
	ctx := context.Background()
	in := echoArgs{Text: "hi"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Call(ctx, p, in); err != nil {
			b.Fatal(err)
		}
	}
}
