package op

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
)

// Op is one operation as every surface sees it: its name, description and
// input schema, and the typed functions the pipeline calls. Build one with
// Def.
type Op struct {
	Name        string
	Description string
	// ReadOnly is true when the operation never changes a repository.
	ReadOnly bool
	// Agent is false for operations people use but agents must not see as
	// MCP tools.
	Agent bool
	// Title is a short human name for the tool (MCP title).
	Title string
	// Destructive is true when the operation may delete or overwrite
	// (MCP destructiveHint); Idempotent when repeating the same call has
	// no further effect (idempotentHint: reads, and writes replayed by
	// their request_id).
	Destructive, Idempotent bool
	// InputSchema is the JSON schema of the arguments object.
	InputSchema *jsonschema.Schema
	// OutputSchema is the JSON schema of the result (nil when the spec
	// names no Output).
	OutputSchema *jsonschema.Schema
	// Descriptor is what the operation's consumers read of it (route,
	// toolset and roles, verification, context, batch and lanes, hash).
	Descriptor

	resolved *jsonschema.Resolved
	// step is the input schema as a step of a batch sees it: the batch's
	// request_id covers its steps, so a step does not require one.
	step         *jsonschema.Schema
	stepResolved *jsonschema.Resolved
	inType       reflect.Type
	outType      reflect.Type
	approval     []int // index of the input's ApprovalID field, nil = none
	draw         runs.Draw
	noRun        bool
	decode       func(raw json.RawMessage) (any, error)
	aliases      *aliasTable // the field aliases its input schema takes (alias.go)
	repoOf       func(in any) string
	prepare      func(ctx context.Context, c *Call, in any) (*Plan, error)

	// plain and stepPlain accept arguments the full check would accept
	// as they are (plainargs.go).
	plain, stepPlain *plainSchema
}

// Spec declares an operation for Def.
type Spec[In any] struct {
	Name        string
	Description string
	ReadOnly    bool
	// Human hides the operation from agents (no MCP tool).
	Human bool
	// Repo returns the repo_id of an input; nil for operations without a
	// repository. The pipeline resolves it (REPOSITORY_NOT_REGISTERED)
	// before Prepare.
	Repo func(In) string
	// Prepare validates the input and plans the operation: what the gate
	// sees and what runs once it allows. It must not change anything.
	Prepare func(ctx context.Context, c *Call, in In) (*Plan, error)
	// Draw is what one call takes from its run's budget (commands, jobs);
	// a plan with a Write draws a mutation on its own.
	Draw runs.Draw
	// OutsideRuns marks the operations about runs themselves (run_start,
	// run_status, ...): they record no span and draw no budget.
	OutsideRuns bool
	// Title is the tool's short human name; empty makes one of the name.
	Title string
	// Output is a value of the result type (e.g. ReadFileResult{}): its
	// schema is the tool's outputSchema. Every agent operation names one.
	Output any
	// Destructive: the operation may delete or overwrite what exists.
	// Idempotent: repeating the same call changes nothing more (reads are
	// idempotent by being read-only).
	Destructive, Idempotent bool

	// The operation's descriptor: what its consumers read of it (see
	// Descriptor, spec.go, for each field; Registry.Check says what an
	// operation must declare).
	Route           route.Kind // the route class the router decides by
	Toolset         Toolset    // the tool's set: Core or an opt-in one
	Roles           Roles      // the agent roles that may call it
	Verified        bool       // require_verified policy rules may name it
	Topics          []string   // the rule topics it touches (ctxasm.Topics)
	ChangesCheckout bool       // it changes (or prepares a change to) the checkout
	NoRepo          bool       // it touches no repository
	BatchStep, Lane bool       // a batch, or read_lanes, may run it as a step
	Composite       Composite  // it runs other operations as its steps
	HashIgnore      []string   // input fields the request hash leaves out
}

// Plan is a prepared operation.
type Plan struct {
	// Gate is what the gate sees. Tool defaults to the operation's name;
	// Repo and Root come from the call.
	Gate govern.Input
	// Steps are the prepared steps of a composite operation (batch,
	// read_lanes) that runs only when every step passes: the pipeline adds
	// their gate inputs to Gate.Steps, answers the first refused step's
	// error (naming its index and kind) before anything executes, and
	// gives each step its gate answer.
	Steps []*Step
	// Run executes the operation; nil for writes.
	Run func(ctx context.Context) (any, error)
	// Write executes the operation under the request ledger and a lease
	// (see Call.Write); nil for reads.
	Write *Txn
	// Breakdown reports the latency segments in the result.
	Breakdown bool
}

// Def builds an Op from a typed spec. It panics on a schema that cannot be
// built: a programming error caught by the registry's tests.
func Def[In any](s Spec[In]) Op {
	schema, err := inputSchema(reflect.TypeFor[In]())
	if err != nil {
		panic(fmt.Sprintf("op %s: schema: %v", s.Name, err))
	}
	var out *jsonschema.Schema
	if s.Output != nil {
		if out, err = outputSchema(reflect.TypeOf(s.Output)); err != nil {
			panic(fmt.Sprintf("op %s: output schema: %v", s.Name, err))
		}
	}
	title := s.Title
	if title == "" {
		title = titleOf(s.Name)
	}
	schema.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	// Every agent operation takes an optional run_id: the run the call
	// belongs to. Operations about a run have their own run_id field.
	_, ownRunID := schema.Properties["run_id"]
	if !s.Human && !ownRunID {
		if schema.Properties == nil {
			schema.Properties = map[string]*jsonschema.Schema{}
		}
		schema.Properties["run_id"] = &jsonschema.Schema{Type: "string",
			Description: "the run this call belongs to (from run_start); without it the call belongs to the implicit run of the MCP session"}
	}
	strip := !s.Human && !ownRunID
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("op %s: resolve schema: %v", s.Name, err))
	}
	step, stepResolved := schema, resolved
	if slices.Contains(schema.Required, "request_id") {
		cp := *schema
		cp.Required = slices.DeleteFunc(slices.Clone(schema.Required), func(r string) bool { return r == "request_id" })
		step = &cp
		if stepResolved, err = step.Resolve(nil); err != nil {
			panic(fmt.Sprintf("op %s: resolve step schema: %v", s.Name, err))
		}
	}
	if s.Prepare == nil {
		panic(fmt.Sprintf("op %s: no Prepare", s.Name))
	}
	o := Op{
		Name: s.Name, Description: s.Description, ReadOnly: s.ReadOnly, Agent: !s.Human, draw: s.Draw, noRun: s.OutsideRuns,
		Title: title, Destructive: s.Destructive, Idempotent: s.Idempotent || s.ReadOnly, Descriptor: s.descriptor(),
		InputSchema: schema, OutputSchema: out, resolved: resolved, step: step, stepResolved: stepResolved, inType: reflect.TypeFor[In](),
		aliases: compileAliases(schema), plain: plainOf(schema), stepPlain: plainOf(step),
		outType: reflect.TypeOf(s.Output),
		decode: func(raw json.RawMessage) (any, error) {
			var in In
			if strip {
				raw = stripRunID(raw)
			}
			if len(bytes.TrimSpace(raw)) > 0 {
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&in); err != nil {
					return nil, errs.New(errs.InvalidArgument, "%s: %v", s.Name, cleanJSONErr(err))
				}
			}
			return in, nil
		},
		prepare: func(ctx context.Context, c *Call, in any) (*Plan, error) { return s.Prepare(ctx, c, in.(In)) },
	}
	if s.Repo != nil {
		o.repoOf = func(in any) string { return s.Repo(in.(In)) }
	}
	if f, ok := o.inType.FieldByName("ApprovalID"); ok && f.Type.Kind() == reflect.String {
		o.approval = f.Index
	}
	return o
}

// Approval is embedded in the arguments of an operation: any operation the
// gate can ask about (a policy rule may ask about every one) can be retried
// with the approval a person granted.
type Approval struct {
	ApprovalID string `json:"approval_id,omitempty" jsonschema:"from APPROVAL_REQUIRED, once a person approved it"`
}

// approvalOf returns the input's approval_id, if it has the field.
func (o *Op) approvalOf(in any) string {
	if o.approval == nil || in == nil {
		return ""
	}
	v := reflect.ValueOf(in)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return v.FieldByIndex(o.approval).String()
}

// Decode validates raw against the input schema (unknown fields, wrong
// types and missing required fields are INVALID_ARGUMENT) and decodes it
// strictly into the operation's input type. Field aliases are rewritten
// first (alias.go).
func (o *Op) Decode(raw json.RawMessage) (any, error) {
	in, _, err := o.decodeCall(raw)
	return in, err
}

// decodeCall is Decode that also returns the arguments the call is: raw
// itself, or raw with its field aliases rewritten (what the run's span
// records, so a retry spelled canonically is the same call).
func (o *Op) decodeCall(raw json.RawMessage) (any, json.RawMessage, error) {
	args, aliased, err := o.checkAgainst(raw, o.InputSchema, o.resolved)
	if err != nil {
		return nil, nil, err
	}
	in, err := o.decode(args)
	if aliased {
		raw = args
	}
	return in, raw, err
}

// decodeStep is decodeCall for a step of a batch: the batch's request_id
// covers its steps, so a step's missing request_id is not an error.
func (o *Op) decodeStep(raw json.RawMessage) (any, json.RawMessage, error) {
	args, aliased, err := o.checkAgainst(raw, o.step, o.stepResolved)
	if err != nil {
		return nil, nil, err
	}
	in, err := o.decode(args)
	if aliased {
		raw = args
	}
	return in, raw, err
}

// Validate checks args against the input schema without running anything.
func (o *Op) Validate(args json.RawMessage) error {
	_, _, err := o.check(args)
	return err
}

// check validates args and returns them as decode should read them:
// members sent as null are dropped (an optional field sent as null is
// absent) and field aliases are rewritten (alias.go; aliased says whether
// any was). An unknown or missing field, or a value outside an enum, is
// INVALID_ARGUMENT naming the field and the fix (REQUEST_ID_REQUIRED for
// a missing request_id); other schema violations are INVALID_ARGUMENT
// with the validator's message.
func (o *Op) check(args json.RawMessage) (json.RawMessage, bool, error) {
	return o.checkAgainst(args, o.InputSchema, o.resolved)
}

// checkAgainst is check against the given schema (the input schema, or
// the step schema) and its resolved form.
func (o *Op) checkAgainst(args json.RawMessage, schema *jsonschema.Schema, resolved *jsonschema.Resolved) (json.RawMessage, bool, error) {
	args = normArgs(args)
	p := o.plain
	if schema == o.step && o.step != o.InputSchema {
		p = o.stepPlain
	}
	if p.accepts(args) {
		return args, false, nil
	}
	return o.checkFull(args, schema, resolved)
}

// checkFull is checkAgainst with the validator, for arguments that are
// not plain (args normalised).
func (o *Op) checkFull(args json.RawMessage, schema *jsonschema.Schema, resolved *jsonschema.Resolved) (json.RawMessage, bool, error) {
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return nil, false, errs.New(errs.InvalidArgument, "%s: arguments are not valid JSON: %v", o.Name, err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return nil, false, errs.New(errs.InvalidArgument, "%s: arguments must be a JSON object", o.Name)
	}
	dropped := dropNulls(inst)
	aliased, err := o.rewriteAliases(inst, schema)
	if err != nil {
		return nil, false, err
	}
	if dropped || aliased {
		b, err := json.Marshal(inst)
		if err != nil {
			return nil, false, errs.Wrap(errs.Internal, err, "%s: re-encode arguments: %v", o.Name, err)
		}
		args = b
	}
	if e := fieldError(o.Name, "", inst, schema); e != nil {
		return nil, false, e
	}
	if err := resolved.Validate(inst); err != nil {
		return nil, false, errs.New(errs.InvalidArgument, "%s: %s", o.Name, clipMessage(err.Error()))
	}
	return args, aliased, nil
}

// normArgs treats absent and null arguments as the empty object.
func normArgs(args json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}")
	}
	return args
}

// cleanJSONErr drops encoding/json's prefix from a decoding error.
func cleanJSONErr(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// Txn is a write: the mutation engine (Call.Write) records it in the
// request ledger, takes a lease over Keys, runs it fenced, and records the
// receipt.
type Txn struct {
	// Op names the operation in the ledger, the lease and the receipt.
	Op        string
	RequestID string
	// Hashed are the arguments the ledger hashes (without timing and
	// approval fields) to tell a replay from a conflict.
	Hashed any
	// Paths are the rel paths the write may touch (reported with current
	// digests when its outcome is unknown); Keys the resource keys to lease.
	Paths []string
	Keys  []string
	// Wait is how long to wait for busy keys (0 = MUTATION_BUSY at once).
	Wait time.Duration
	// Run writes under the lease l and records what it wrote in r.
	Run func(ctx context.Context, l runtime.Lease, r *Receipt) error
	// Result builds the operation's result around the finished receipt
	// and returns the receipt inside it; wrote false means nothing was
	// written (the request is recorded as failed, so a retry may run).
	Result func(r *Receipt) (out any, rec *Receipt, wrote bool)
	// Replay decodes the result stored by an earlier success.
	Replay func(stored json.RawMessage) (any, error)
	// OnBusy is the caller's on_busy ("" or OnBusyFail: MUTATION_BUSY;
	// OnBusyDurable: queue it as a write job, see queued.go), and Queued
	// builds the answer of a queued write around its empty receipt (nil:
	// the operation cannot be queued).
	OnBusy string
	Queued func(r Receipt, q *QueuedWrite) any
}
