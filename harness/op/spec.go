package op

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/internal/ctxasm"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/route"
)

// Descriptor is every fact about an operation that a consumer outside its
// own Prepare reads: the router, the gate and the policy loader, the
// context assembler, batch and read_lanes, the request ledger, and the
// surfaces' toolsets and roles. Each fact lives here once, set from the
// operation's Spec by Def; no consumer keeps a list of operation names.
// Registry.Check says what a complete descriptor needs.
type Descriptor struct {
	// Route is the operation's route class: the router decides by it
	// (route.Decide), never by the name.
	Route route.Kind
	// Toolset is the set the tool belongs to: Core, or one a client opts
	// into (Toolsets).
	Toolset Toolset
	// Roles are the agent roles that may call it (Reader, Editor,
	// Reviewer, Operator). Operator may call everything.
	Roles Roles
	// Verified says the operation checks, right after the gate, that its
	// run has the stages a require_verified policy rule names verified:
	// only such operations may be named by one (Registry.Verified).
	Verified bool
	// Topics are the rule topics the operation touches (ctxasm.Topics):
	// context_assemble chooses rules by them.
	Topics []string
	// ChangesCheckout says the operation changes the checkout, or prepares
	// a change to it: CONTRIBUTING.md applies to it.
	ChangesCheckout bool
	// NoRepo says the operation touches no repository: asking for context
	// before it is trivial chat.
	NoRepo bool
	// BatchStep says a batch may run the operation as a step; Lane that
	// read_lanes may (read-only steps only).
	BatchStep, Lane bool
	// Composite, on an operation that runs others as its steps, says
	// where the steps are and which operations may be one.
	Composite Composite
	// HashIgnore are the input's top-level fields the request hash leaves
	// out beyond request_id, include_latency_breakdown and approval_id
	// (ledger.CommonIgnored): fields that change nothing the operation
	// does (wait_ms), so a retry changing only them replays.
	HashIgnore []string
}

// Composite describes an operation that runs other operations as steps
// (batch, read_lanes).
type Composite struct {
	// Field is the input's list of steps ({kind, args} each); "" = the
	// operation runs no steps.
	Field string
	// Lanes: the steps are the operations with Lane, else those with
	// BatchStep. The registry gives the steps' kind its enum.
	Lanes bool
}

// eligible reports whether o may be a step of an operation described by c.
func (c Composite) eligible(o *Op) bool {
	if c.Lanes {
		return o.Lane
	}
	return o.BatchStep
}

// Toolset names a set of tools a client exposes: the small Core every
// agent loop needs, and the sets a client opts into.
type Toolset string

// The toolsets.
const (
	// Core: read, search, git status and diff, patch, run a command or a
	// check, commit, start and follow a job.
	Core Toolset = "core"
	// Git: the rest of the repository work: staging, patch proposals,
	// batches and read lanes.
	Git Toolset = "git"
	// Jobs: the durable jobs beyond starting and following one.
	Jobs Toolset = "jobs"
	// Runs: runs, their stages, claims and verification, and the context
	// assembled for them.
	Runs Toolset = "runs"
	// Targets: repository-free directories.
	Targets Toolset = "targets"
	// Undo: receipts and reverts.
	Undo Toolset = "undo"
	// Provenance: checking a commit's trailers against the records.
	Provenance Toolset = "provenance"
	// Admin: registering repositories and explaining routes.
	Admin Toolset = "admin"
)

// Toolsets returns every toolset, Core first.
func Toolsets() []Toolset {
	return []Toolset{Core, Git, Jobs, Runs, Targets, Undo, Provenance, Admin}
}

// Valid reports whether t is one of Toolsets.
func (t Toolset) Valid() bool { return slices.Contains(Toolsets(), t) }

// Roles is a set of agent roles: the profiles a session may act as. The
// descriptor says which roles may call an operation; the gate enforces
// them (issue #30).
type Roles uint8

// The roles.
const (
	// Reader reads: files, search, status, diffs, lists.
	Reader Roles = 1 << iota
	// Editor reads, writes, and runs commands and checks.
	Editor
	// Reviewer reads, runs checks, and verifies runs.
	Reviewer
	// Operator may call everything: grants, registrations, cleanup.
	Operator

	allRoles = Reader | Editor | Reviewer | Operator
)

// The usual role sets of an operation, by the work it does.
const (
	// ReadRoles: reads, which every role may make.
	ReadRoles = Reader | Editor | Reviewer | Operator
	// WriteRoles: writes and commands.
	WriteRoles = Editor | Operator
	// CheckRoles: checks and the run's own bookkeeping and verification.
	CheckRoles = Editor | Reviewer | Operator
	// OperatorRoles: grants, registrations and cleanup.
	OperatorRoles = Operator
)

// roleName is a role and its name.
type roleName struct {
	r    Roles
	name string
}

// roleNames returns the roles with their names, in order.
func roleNames() [4]roleName {
	return [4]roleName{{Reader, "reader"}, {Editor, "editor"}, {Reviewer, "reviewer"}, {Operator, "operator"}}
}

// RoleNames returns the names of the roles, in order.
func RoleNames() []string {
	var out []string
	for _, rn := range roleNames() {
		out = append(out, rn.name)
	}
	return out
}

// ParseRole returns the role named name, or INVALID_ARGUMENT naming the
// roles there are.
func ParseRole(name string) (Roles, error) {
	for _, rn := range roleNames() {
		if rn.name == name {
			return rn.r, nil
		}
	}
	return 0, errs.New(errs.InvalidArgument, "unknown role %q: one of %s", name, strings.Join(RoleNames(), ", "))
}

// Has reports whether r holds every role of o.
func (r Roles) Has(o Roles) bool { return o != 0 && r&o == o }

// Names returns the names of the roles in r, in order.
func (r Roles) Names() []string {
	var out []string
	for _, rn := range roleNames() {
		if r&rn.r != 0 {
			out = append(out, rn.name)
		}
	}
	return out
}

// String is the roles' names joined by "|", "none" for no role and
// "unknown" when r holds a bit that is no role.
func (r Roles) String() string {
	switch {
	case r&^allRoles != 0:
		return "unknown"
	case r == 0:
		return "none"
	}
	return strings.Join(r.Names(), "|")
}

// descriptor returns the facts s declares.
func (s *Spec[In]) descriptor() Descriptor {
	return Descriptor{Route: s.Route, Toolset: s.Toolset, Roles: s.Roles, Verified: s.Verified,
		Topics: slices.Clone(s.Topics), ChangesCheckout: s.ChangesCheckout, NoRepo: s.NoRepo,
		BatchStep: s.BatchStep, Lane: s.Lane, Composite: s.Composite, HashIgnore: slices.Clone(s.HashIgnore)}
}

// ContextFacts are the facts context_assemble reads of the operation.
func (d *Descriptor) ContextFacts() ctxasm.OpFacts {
	return ctxasm.OpFacts{Topics: d.Topics, ChangesCheckout: d.ChangesCheckout, NoRepo: d.NoRepo}
}

// InputHash is the request hash of args for the call's operation (name
// is what the ledger records it as): the ledger's, leaving out the fields
// its descriptor's HashIgnore names as well as the common ones. A call
// outside any operation (NewCall) leaves out only the common ones.
func (c *Call) InputHash(name string, args any) (string, error) {
	var ignore []string
	if c.Op != nil {
		ignore = c.Op.HashIgnore
	}
	return ledger.InputHashIgnoring(name, args, ignore)
}

// fillGate gives the gate what the descriptor says of the operation g is
// for, and of each of g's steps that is the same operation (a proposal of
// patch_proposal_validate): its route class and the fields its hash
// leaves out. A gate input for another operation is left alone.
func (o *Op) fillGate(g *govern.Input) {
	if o == nil || g.Tool != o.Name {
		return
	}
	if g.Kind == route.Unclassified {
		g.Kind = o.Route
	}
	if g.HashIgnore == nil {
		g.HashIgnore = o.HashIgnore
	}
	for i := range g.Steps {
		if g.Steps[i].Tool == o.Name {
			o.fillGate(&g.Steps[i])
		}
	}
}

// RouteKind returns the route class of the named operation, Unclassified
// when there is none (route.Decide then rejects it as unknown).
func (r *Registry) RouteKind(name string) route.Kind {
	if o, ok := r.Lookup(name); ok {
		return o.Route
	}
	return route.Unclassified
}

// Names returns the names of the operations keep selects, sorted.
func (r *Registry) Names(keep func(*Op) bool) []string {
	var out []string
	for i := range r.list {
		if keep(&r.list[i]) {
			out = append(out, r.list[i].Name)
		}
	}
	return out
}

// Verified returns the operations a require_verified policy rule may
// name: those whose descriptor says Verified (the policy's vocabulary,
// govern.Config.Verified).
func (r *Registry) Verified() []string {
	return r.Names(func(o *Op) bool { return o.Verified })
}

// StepKinds returns the operations that may be steps of the composite
// operation o (its Composite), sorted; nil when o runs no steps.
func (r *Registry) StepKinds(o *Op) []string {
	if o == nil || o.Composite.Field == "" {
		return nil
	}
	return r.Names(func(s *Op) bool { return s.Agent && o.Composite.eligible(s) })
}

// composites gives each composite operation's step kind its enum from the
// descriptors (the operations that may be its steps), so the input schema
// lists exactly them. A composite whose input has no such list of steps
// panics: a programming error the registry's tests catch.
func (r *Registry) composites() {
	for i := range r.list {
		o := &r.list[i]
		if o.Composite.Field == "" {
			continue
		}
		kinds := r.StepKinds(o)
		if len(kinds) == 0 {
			panic(fmt.Sprintf("op %s: no operation may be one of its %s", o.Name, o.Composite.Field))
		}
		kind := stepKindSchema(o, o.Composite.Field)
		if kind == nil {
			panic(fmt.Sprintf("op %s: input field %q is not a list of steps with a kind", o.Name, o.Composite.Field))
		}
		kind.Enum = make([]any, len(kinds))
		for j, k := range kinds {
			kind.Enum[j] = k
		}
		var err error
		if o.resolved, err = o.InputSchema.Resolve(nil); err != nil {
			panic(fmt.Sprintf("op %s: resolve schema: %v", o.Name, err))
		}
		if o.stepResolved, err = o.step.Resolve(nil); err != nil {
			panic(fmt.Sprintf("op %s: resolve step schema: %v", o.Name, err))
		}
	}
}

// Check reports every operation whose descriptor lacks a fact a consumer
// needs, or states one that contradicts the operation, one error per
// problem. Every operation needs a route class; an agent operation also a
// known toolset and roles (Operator among them; Reader only for a
// read-only operation); a Verified operation is a write; an operation that
// changes the checkout names topics, and every repository mutation,
// batch and job changes the checkout; batch and lane steps run in a
// repository, lanes only read; HashIgnore names fields of the input
// beyond the common ones, and every input with wait_ms leaves it out. (A
// composite whose steps field or step operations are missing panics in
// NewRegistry already.)
func (r *Registry) Check() error {
	var problems []error
	for i := range r.list {
		for _, p := range r.list[i].descriptorProblems() {
			problems = append(problems, fmt.Errorf("op %s: %s", r.list[i].Name, p))
		}
	}
	return errors.Join(problems...)
}

func (o *Op) descriptorProblems() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	d := &o.Descriptor
	if !d.Route.Valid() {
		bad("Route: no route class (one of %s)", kindList())
	}
	if o.Agent {
		switch {
		case d.Toolset == "":
			bad("Toolset is empty (one of %s)", toolsetList())
		case !d.Toolset.Valid():
			bad("Toolset %q is none of %s", d.Toolset, toolsetList())
		}
		switch {
		case d.Roles == 0:
			bad("Roles: no role may call it (give at least Operator)")
		case d.Roles&^allRoles != 0:
			bad("Roles %d holds a bit that is no role", d.Roles)
		case !d.Roles.Has(Operator):
			bad("Roles %s: Operator may call every operation", d.Roles)
		case d.Roles.Has(Reader) && !o.ReadOnly:
			bad("Roles %s: a Reader only reads, and the operation is not ReadOnly", d.Roles)
		}
	}
	mutates := d.Route == route.Mutation || d.Route == route.IndexMutation
	if d.Verified && (o.ReadOnly || !mutates) {
		bad("Verified on an operation that is no write (a verified stage is checked by writes)")
	}
	if (mutates || d.Route == route.Batch || d.Route == route.Job) && d.Toolset != Targets && !d.ChangesCheckout {
		bad("a %s of a repository must say ChangesCheckout", d.Route)
	}
	if d.ChangesCheckout && len(d.Topics) == 0 {
		bad("ChangesCheckout without Topics: name the rule topics it touches (%s)", strings.Join(ctxasm.Topics(), ", "))
	}
	for _, t := range d.Topics {
		if !slices.Contains(ctxasm.Topics(), t) {
			bad("topic %q is none of %s", t, strings.Join(ctxasm.Topics(), ", "))
		}
	}
	if d.NoRepo && (d.ChangesCheckout || o.repoOf != nil && !o.ReadOnly) {
		bad("NoRepo on an operation that changes a repository")
	}
	if d.BatchStep || d.Lane {
		if o.repoOf == nil {
			bad("a batch or lane step runs in the batch's repository: the operation needs Repo")
		}
		switch d.Route {
		case route.Readonly, route.Command, route.Check, route.Mutation, route.IndexMutation:
		default:
			bad("a %s cannot be a batch or lane step", d.Route)
		}
	}
	if d.Lane && (!o.ReadOnly || !d.BatchStep) {
		bad("Lane on an operation that is not a ReadOnly batch step (lanes only read)")
	}
	props := o.InputSchema.Properties
	for _, f := range d.HashIgnore {
		switch {
		case slices.Contains(ledger.CommonIgnored(), f):
			bad("HashIgnore %q: every hash leaves it out already", f)
		case props[f] == nil:
			bad("HashIgnore %q is no field of the input", f)
		}
	}
	if props["wait_ms"] != nil && !slices.Contains(d.HashIgnore, "wait_ms") {
		bad("HashIgnore: wait_ms changes nothing the operation does, leave it out of the hash")
	}
	return out
}

func kindList() string {
	var names []string
	for _, k := range route.Kinds() {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

func toolsetList() string {
	var names []string
	for _, t := range Toolsets() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// stepKindSchema returns the schema of the kind of each step in o's input
// field (a list of {kind, args} objects), or nil when the field is no such
// list.
func stepKindSchema(o *Op, field string) *jsonschema.Schema {
	list := o.InputSchema.Properties[field]
	if list == nil || list.Items == nil {
		return nil
	}
	return list.Items.Properties["kind"]
}
