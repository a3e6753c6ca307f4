package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harnessd/harnessd/harness/errs"
)

// Op describes one operation for the generic surfaces (MCP, HTTP, CLI):
// its name, input schema and how to call it with raw JSON arguments.
type Op struct {
	Name        string
	Description string
	// ReadOnly is true when the operation never changes a repository.
	ReadOnly bool
	// Agent is false for operations people use but agents must not see
	// as MCP tools (none yet; approvals and policy will be).
	Agent bool
	// InputSchema is the JSON schema of the arguments object.
	InputSchema *jsonschema.Schema

	resolved *jsonschema.Resolved
	call     func(ctx context.Context, h *Harness, args json.RawMessage) (any, error)
}

// Call decodes args strictly (unknown fields, wrong types and missing
// required fields are INVALID_ARGUMENT) and runs the operation.
func (o *Op) Call(ctx context.Context, h *Harness, args json.RawMessage) (any, error) {
	args = normArgs(args)
	if err := o.Validate(args); err != nil {
		return nil, err
	}
	return o.call(ctx, h, args)
}

// Validate checks args against the input schema without running anything.
func (o *Op) Validate(args json.RawMessage) error {
	args = normArgs(args)
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return errs.New(errs.InvalidArgument, "%s: arguments are not valid JSON: %v", o.Name, err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return errs.New(errs.InvalidArgument, "%s: arguments must be a JSON object", o.Name)
	}
	if err := o.resolved.Validate(inst); err != nil {
		return errs.New(errs.InvalidArgument, "%s: %v", o.Name, err)
	}
	return nil
}

// def builds an Op from a typed method.
func def[In, Out any](name, desc string, readOnly bool, fn func(h *Harness, ctx context.Context, in In) (Out, error)) Op {
	schema, err := jsonschema.For[In](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("op %s: schema: %v", name, err))
	}
	schema.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("op %s: resolve schema: %v", name, err))
	}
	return Op{
		Name: name, Description: desc, ReadOnly: readOnly, Agent: true,
		InputSchema: schema, resolved: resolved,
		call: func(ctx context.Context, h *Harness, args json.RawMessage) (any, error) {
			var in In
			if len(bytes.TrimSpace(args)) > 0 {
				dec := json.NewDecoder(bytes.NewReader(args))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&in); err != nil {
					return nil, errs.New(errs.InvalidArgument, "%s: %v", name, cleanJSONErr(err))
				}
			}
			out, err := fn(h, ctx, in)
			if err != nil {
				return nil, err
			}
			if v := reflect.ValueOf(out); v.Kind() == reflect.Pointer && v.IsNil() {
				return nil, errs.New(errs.Internal, "%s returned no result", name)
			}
			return out, nil
		},
	}
}

// normArgs treats absent and null arguments as the empty object.
func normArgs(args json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}")
	}
	return args
}

func cleanJSONErr(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

var (
	opsOnce  sync.Once
	opsList  []Op
	opsIndex map[string]*Op
)

// Ops returns every operation, sorted by name.
func Ops() []Op {
	opsOnce.Do(buildOps)
	return opsList
}

// LookupOp returns the named operation.
func LookupOp(name string) (*Op, bool) {
	opsOnce.Do(buildOps)
	o, ok := opsIndex[name]
	return o, ok
}

// opGroups lists the functions that define operations. Files that add
// operations register theirs from init with registerOps.
var opGroups = []func() []Op{repoOps, fastOps, mutationOps}

func registerOps(f func() []Op) { opGroups = append(opGroups, f) }

func buildOps() {
	opsList = nil
	for _, g := range opGroups {
		opsList = append(opsList, g()...)
	}
	sort.Slice(opsList, func(i, j int) bool { return opsList[i].Name < opsList[j].Name })
	opsIndex = make(map[string]*Op, len(opsList))
	for i := range opsList {
		opsIndex[opsList[i].Name] = &opsList[i]
	}
}

func repoOps() []Op {
	return []Op{
		def("repository_register", "Register a git work tree with harnessd. Returns a stable repo_id (and checkout_id) used by every other tool. Idempotent.", false, (*Harness).RegisterRepository),
		def("repository_list", "List the registered repositories.", true, (*Harness).Repositories),
		def("repository_unregister", "Forget a registered repository (its files are not touched).", false, (*Harness).UnregisterRepository),
	}
}

// CallOp runs the named operation with raw JSON arguments.
func (h *Harness) CallOp(ctx context.Context, name string, args json.RawMessage) (any, error) {
	o, ok := LookupOp(name)
	if !ok {
		return nil, errs.New(errs.NotFound, "unknown operation %q", name).With("operation", name)
	}
	return o.Call(ctx, h, args)
}
