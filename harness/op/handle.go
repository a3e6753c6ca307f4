package op

import (
	"context"
	"fmt"
	"reflect"

	"github.com/harnessd/harnessd/contract/errs"
)

// Handle is one operation of a registry with its types: its input is In
// and its result is Out. HandleOf resolves the name and checks the types
// once, so a call neither looks the operation up nor checks its input's
// type; it runs the same pipeline as every other surface (gate, ledger,
// trace, receipt). The embedding facade holds one per method, built at
// Open.
type Handle[In, Out any] struct {
	op  *Op
	reg *Registry
}

// HandleOf returns the handle of reg's operation name. It panics when reg
// has no such operation, or when the operation's input type is not In or
// its result type is not Out (the pointer to its Spec's Output): a
// programming error that fails the first test that opens a Harness.
func HandleOf[In, Out any](reg *Registry, name string) Handle[In, Out] {
	o, ok := reg.Lookup(name)
	if !ok {
		panic(fmt.Sprintf("op: HandleOf: no operation %q in the registry", name))
	}
	if err := o.typesAre(reflect.TypeFor[In](), reflect.TypeFor[Out]()); err != nil {
		panic("op: HandleOf: " + err.Error())
	}
	return Handle[In, Out]{op: o, reg: reg}
}

// typesAre reports, as an error naming both sides, where in and out differ
// from the operation's input and result types.
func (o *Op) typesAre(in, out reflect.Type) error {
	if in != o.inType {
		return fmt.Errorf("operation %q takes %v, not %v", o.Name, o.inType, in)
	}
	res := resultType(o.outType)
	if res == nil {
		return fmt.Errorf("operation %q declares no Output: its Spec must name one for a typed handle", o.Name)
	}
	if out != res {
		return fmt.Errorf("operation %q returns %v, not %v", o.Name, res, out)
	}
	return nil
}

// resultType is the type an operation whose Spec names an Output of type t
// returns: a pointer to it (the pipeline sets the result's meta through
// the pointer); nil when there is no Output.
func resultType(t reflect.Type) reflect.Type {
	if t == nil || t.Kind() == reflect.Pointer {
		return t
	}
	return reflect.PointerTo(t)
}

// Name returns the operation's name ("" for the zero Handle).
func (h Handle[In, Out]) Name() string {
	if h.op == nil {
		return ""
	}
	return h.op.Name
}

// Call runs the operation with in through p, as Pipeline.Call runs a named
// one with JSON arguments: the same stages, the same gate. p must be a
// pipeline of the registry the handle came from.
func (h Handle[In, Out]) Call(ctx context.Context, p *Pipeline, in In) (Out, error) {
	var zero Out
	if h.op == nil {
		return zero, errs.New(errs.Internal, "a typed operation handle was used without HandleOf")
	}
	if p.reg != h.reg {
		return zero, errs.New(errs.Internal, "the handle of %s belongs to another registry than the pipeline's", h.op.Name).With("operation", h.op.Name)
	}
	v, err := p.run(ctx, h.op, in, nil, "")
	if err != nil {
		return zero, err
	}
	out, ok := v.(Out)
	if !ok {
		return zero, errs.New(errs.Internal, "%s returned %T, not the %T its Spec's Output declares", h.op.Name, v, zero).With("operation", h.op.Name)
	}
	return out, nil
}
