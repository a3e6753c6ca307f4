package op_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/route"
)

// TestEveryOperationHasADescriptor walks the whole registry: an operation
// added without a fact a consumer needs (a route class, a toolset, roles,
// topics for a write, wait_ms left in the hash, ...) fails here, naming
// the operation and the fact.
func TestEveryOperationHasADescriptor(t *testing.T) {
	reg := ops.Registry()
	if err := reg.Check(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			t.Error(line)
		}
	}
	if len(reg.All()) < 50 {
		t.Fatalf("the registry holds %d operations, want them all", len(reg.All()))
	}
}

// describedOp is an operation for Check's own tests: read-only, in a
// repository, with the descriptor spec gives.
func describedOp(name string, spec func(*op.Spec[readArgs])) op.Op {
	s := op.Spec[readArgs]{Name: name, Output: readResult{}, ReadOnly: true,
		Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles,
		Repo:    func(a readArgs) string { return a.RepoID },
		Prepare: func(context.Context, *op.Call, readArgs) (*op.Plan, error) { return &op.Plan{}, nil }}
	if spec != nil {
		spec(&s)
	}
	return op.Def(s)
}

type readArgs struct {
	RepoID string `json:"repo_id"`
	WaitMs int    `json:"wait_ms,omitempty"`
}

type readResult struct {
	op.Meta
}

type gateArgs struct {
	Text string `json:"text,omitempty"`
}

// Check names each missing or contradictory fact: blanking any one field a
// consumer needs fails the registry test above.
func TestCheckNamesWhatIsMissing(t *testing.T) {
	tests := []struct {
		name string
		spec func(*op.Spec[readArgs])
		want string // "" = complete
	}{
		{"complete", func(s *op.Spec[readArgs]) { s.HashIgnore = []string{"wait_ms"} }, ""},
		{"no route class", func(s *op.Spec[readArgs]) { s.Route = route.Unclassified; s.HashIgnore = []string{"wait_ms"} }, "Route: no route class (one of readonly, run_state"},
		{"no toolset", func(s *op.Spec[readArgs]) { s.Toolset = ""; s.HashIgnore = []string{"wait_ms"} }, "Toolset is empty (one of core, git, jobs, runs, targets, undo, provenance, admin)"},
		{"unknown toolset", func(s *op.Spec[readArgs]) { s.Toolset = "misc"; s.HashIgnore = []string{"wait_ms"} }, `Toolset "misc" is none of core`},
		{"no role", func(s *op.Spec[readArgs]) { s.Roles = 0; s.HashIgnore = []string{"wait_ms"} }, "Roles: no role may call it"},
		{"no operator", func(s *op.Spec[readArgs]) { s.Roles = op.Reader; s.HashIgnore = []string{"wait_ms"} }, "Operator may call every operation"},
		{"a bit that is no role", func(s *op.Spec[readArgs]) { s.Roles = op.ReadRoles | 64; s.HashIgnore = []string{"wait_ms"} }, "holds a bit that is no role"},
		{"a reader that writes", func(s *op.Spec[readArgs]) {
			s.ReadOnly, s.Route, s.Topics, s.ChangesCheckout, s.HashIgnore = false, route.Mutation, []string{"test"}, true, []string{"wait_ms"}
		}, "a Reader only reads"},
		{"a write without ChangesCheckout", func(s *op.Spec[readArgs]) {
			s.ReadOnly, s.Route, s.Roles, s.HashIgnore = false, route.Mutation, op.WriteRoles, []string{"wait_ms"}
		}, "a mutation of a repository must say ChangesCheckout"},
		{"a write without topics", func(s *op.Spec[readArgs]) {
			s.ReadOnly, s.Route, s.Roles, s.ChangesCheckout, s.HashIgnore = false, route.Mutation, op.WriteRoles, true, []string{"wait_ms"}
		}, "ChangesCheckout without Topics"},
		{"an unknown topic", func(s *op.Spec[readArgs]) { s.Topics = []string{"tests"}; s.HashIgnore = []string{"wait_ms"} }, `topic "tests" is none of build, commit`},
		{"verified read", func(s *op.Spec[readArgs]) { s.Verified = true; s.HashIgnore = []string{"wait_ms"} }, "Verified on an operation that is no write"},
		{"wait_ms hashed", nil, "HashIgnore: wait_ms changes nothing"},
		{"ignoring a common field", func(s *op.Spec[readArgs]) { s.HashIgnore = []string{"wait_ms", "request_id"} }, `HashIgnore "request_id": every hash leaves it out already`},
		{"ignoring no field", func(s *op.Spec[readArgs]) { s.HashIgnore = []string{"wait_ms", "wait_s"} }, `HashIgnore "wait_s" is no field of the input`},
		{"a lane that writes", func(s *op.Spec[readArgs]) {
			s.ReadOnly, s.Roles, s.Lane, s.BatchStep, s.HashIgnore = false, op.WriteRoles, true, true, []string{"wait_ms"}
		}, "Lane on an operation that is not a ReadOnly batch step"},
		{"a step without a repository", func(s *op.Spec[readArgs]) { s.Repo, s.BatchStep, s.HashIgnore = nil, true, []string{"wait_ms"} }, "the operation needs Repo"},
		{"a batch step that runs a job", func(s *op.Spec[readArgs]) {
			s.ReadOnly, s.Route, s.Roles, s.Topics, s.ChangesCheckout, s.BatchStep, s.HashIgnore = false, route.Job, op.WriteRoles, []string{"test"}, true, true, []string{"wait_ms"}
		}, "a job cannot be a batch or lane step"},
		{"no repository but writes", func(s *op.Spec[readArgs]) {
			s.ReadOnly, s.Route, s.Roles, s.Topics, s.ChangesCheckout, s.NoRepo, s.HashIgnore = false, route.Mutation, op.WriteRoles, []string{"test"}, true, true, []string{"wait_ms"}
		}, "NoRepo on an operation that changes a repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := op.NewRegistry([]op.Op{describedOp("x_read", tt.spec)}).Check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "op x_read: ") || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check = %v, want it to say %q", err, tt.want)
			}
		})
	}
	// A human operation needs only its route class.
	human := op.Def(op.Spec[readArgs]{Name: "x_human", Human: true, ReadOnly: true, Route: route.Readonly, HashIgnore: []string{"wait_ms"},
		Prepare: func(context.Context, *op.Call, readArgs) (*op.Plan, error) { return &op.Plan{}, nil }})
	if err := op.NewRegistry([]op.Op{human}).Check(); err != nil {
		t.Errorf("Check(human operation with a route class) = %v, want nil", err)
	}
	// A composite with no operation to run, or without a list of steps,
	// panics at NewRegistry, naming it.
	comp := func(field string) op.Op {
		return op.Def(op.Spec[stepsArgs]{Name: "x_batch", Output: readResult{}, Route: route.Batch, Toolset: op.Git, Roles: op.WriteRoles,
			Composite: op.Composite{Field: field}, ChangesCheckout: true, Topics: []string{"test"}, Repo: func(a stepsArgs) string { return a.RepoID },
			Prepare: func(context.Context, *op.Call, stepsArgs) (*op.Plan, error) { return &op.Plan{}, nil }})
	}
	mustPanic := func(want string, ops ...op.Op) {
		t.Helper()
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
				t.Errorf("NewRegistry panicked with %v, want %q", r, want)
			}
		}()
		op.NewRegistry(ops)
	}
	mustPanic("op x_batch: no operation may be one of its steps", comp("steps"))
	step := describedOp("x_read", func(s *op.Spec[readArgs]) { s.BatchStep, s.HashIgnore = true, []string{"wait_ms"} })
	mustPanic(`op x_batch: input field "repo_id" is not a list of steps with a kind`, comp("repo_id"), step)
	reg := op.NewRegistry([]op.Op{comp("steps"), step})
	if err := reg.Check(); err != nil {
		t.Errorf("Check(a batch of one step kind) = %v, want nil", err)
	}
	b, _ := reg.Lookup("x_batch")
	if got := b.InputSchema.Properties["steps"].Items.Properties["kind"].Enum; len(got) != 1 || got[0] != "x_read" {
		t.Errorf("the enum of x_batch's steps = %v, want [x_read]", got)
	}
	if err := b.Validate(json.RawMessage(`{"repo_id":"r","steps":[{"kind":"x_other"}]}`)); errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("a step kind outside the enum: %v, want INVALID_ARGUMENT", err)
	}
	if err := b.Validate(json.RawMessage(`{"repo_id":"r","steps":[{"kind":"x_read"}]}`)); err != nil {
		t.Errorf("a step kind in the enum: %v, want nil", err)
	}
}

type stepsArgs struct {
	RepoID string `json:"repo_id"`
	Steps  []struct {
		Kind string `json:"kind"`
	} `json:"steps"`
}

// oldRoute is what the router's name switch (internal/route before the
// descriptors) decided for the operations it named with a fixed decision.
// The descriptors must route each exactly so.
func oldRoute(tool string) (route.Decision, bool) {
	switch tool {
	case "read_file", "search", "git_status", "git_diff", "route_explain", "job_status", "job_logs", "job_list",
		"read_lanes", "patch_proposal_validate", "batch_result", "repository_register", "repository_list", "repository_unregister", "job_clean",
		"context_assemble", "commit_verify":
		return route.Decision{Mode: route.Fast, Reasons: []string{tool + " is a readonly Fast Path operation"},
			Risk: 5, EstimatedClass: route.Short, Tier: route.Direct}, true
	case "run_start", "run_observe", "run_stage", "run_status", "run_list", "run_end", "run_resume", "run_claim", "run_verify", "run_assess", "run_escalate", "run_review", "run_scorecard":
		return route.Decision{Mode: route.Fast, Reasons: []string{tool + " records run state; it touches no repository"},
			Risk: 0, EstimatedClass: route.Short, Tier: route.Direct}, true
	case "apply_patch", "git_stage", "git_commit", "patch_proposal_integrate":
		risk := 30
		if tool == "git_stage" {
			risk = 20
		}
		return route.Decision{Mode: route.Fast, Reasons: []string{tool + " is a Fast Path mutation under a lease"},
			Risk: risk, EstimatedClass: route.Short, Tier: route.Direct, Mutation: true}, true
	case "job_cancel":
		return route.Decision{Mode: route.Fast, Reasons: []string{"job_cancel signals a durable job"},
			Risk: 20, EstimatedClass: route.Short, Tier: route.Direct}, true
	}
	return route.Decision{}, false
}

// The router's decisions from the descriptors are the name switch's: the
// fixed decisions word for word, and the operations it decided by their
// arguments (run_command, run_check, job_start, batch) in the class that
// does. The operations it did not know (they route themselves) have a
// class now, and their own routing decides at the gate.
func TestRouteClassesAgreeWithTheOldSwitch(t *testing.T) {
	reg := ops.Registry()
	byArgs := map[string]route.Kind{"run_command": route.Command, "run_check": route.Check, "job_start": route.Job, "batch": route.Batch}
	selfRouted := map[string]route.Kind{
		"receipt_list": route.Readonly, "revert": route.Mutation, "run_revert": route.Mutation,
		"target_register": route.Registry, "target_unregister": route.Registry, "target_promote": route.Registry, "target_list": route.Readonly,
		"target_read_file": route.Readonly, "target_list_dir": route.Readonly, "target_search": route.Readonly,
		"target_write_file": route.Mutation, "target_apply_patch": route.Mutation, "target_copy": route.Mutation, "target_move": route.Mutation,
		"target_execute_command": route.Command,
		"git_push":               route.RemoteWrite,
		"list_dir":               route.Readonly,
	}
	for _, o := range reg.All() {
		got := route.Decide(route.Request{Tool: o.Name, Kind: o.Route})
		if want, ok := oldRoute(o.Name); ok {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Errorf("%s (%s): Decide = %s, want the old %s", o.Name, o.Route, g, w)
			}
			continue
		}
		if k, ok := byArgs[o.Name]; ok {
			if o.Route != k {
				t.Errorf("%s: route class %s, want %s", o.Name, o.Route, k)
			}
			continue
		}
		if k, ok := selfRouted[o.Name]; !ok || o.Route != k {
			t.Errorf("%s: route class %s, want %s (an operation the old switch did not know)", o.Name, o.Route, k)
		}
	}
	// A few argument-routed decisions end to end, by class.
	for _, c := range []struct {
		tool string
		argv []string
		mode route.Mode
	}{{"run_command", []string{"git", "status"}, route.Fast}, {"run_command", []string{"make"}, route.Durable},
		{"run_check", []string{"go", "test", "./x"}, route.Fast}, {"job_start", []string{"make"}, route.Durable}} {
		if d := route.Decide(route.Request{Tool: c.tool, Kind: reg.RouteKind(c.tool), Argv: c.argv}); d.Mode != c.mode {
			t.Errorf("%s %v: mode %s (%v), want %s", c.tool, c.argv, d.Mode, d.Reasons, c.mode)
		}
	}
	if k := reg.RouteKind("frobnicate"); k != route.Unclassified {
		t.Errorf("RouteKind(unknown) = %s, want unclassified", k)
	}
}

// The lists the descriptors replace, as they were: the context topics,
// the writes CONTRIBUTING.md applies to, the operations that touch no
// repository, the require_verified vocabulary, and the batch and lane
// step kinds.
var (
	oldTopics = map[string][]string{
		"run_check": {"test", "build"}, "job_start": {"test", "build"}, "apply_patch": {"style", "test"},
		"patch_proposal_validate": {"style", "test"}, "patch_proposal_integrate": {"style", "test", "commit"},
		"git_stage": {"commit", "style"}, "git_commit": {"commit", "style"}, "batch": {"style", "test"},
		"run_claim": {"test"}, "run_verify": {"test"},
		// New with the descriptors: a write names its topics.
		"revert": {"test"}, "run_revert": {"test"},
	}
	oldWrites = []string{"apply_patch", "git_stage", "git_commit", "patch_proposal_integrate", "patch_proposal_validate", "job_start", "batch", "revert", "run_revert"}
	oldNoRepo = []string{"route_explain", "repository_list", "job_list", "job_status", "job_logs", "batch_result", "run_start", "run_observe",
		"run_stage", "run_status", "run_list", "run_end", "run_resume", "run_claim", "run_verify", "run_assess", "run_escalate", "run_review", "run_scorecard", "context_assemble"}
	oldVerified  = []string{"apply_patch", "git_stage", "git_commit", "patch_proposal_integrate"}
	oldStepKinds = []string{"read_file", "search", "git_status", "git_diff", "apply_patch", "run_command", "run_check", "git_stage", "git_commit"}
	oldLaneKinds = []string{"search", "read_file", "git_status", "git_diff", "run_command"}
)

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func TestDescriptorsAgreeWithTheOldLists(t *testing.T) {
	reg := ops.Registry()
	for _, name := range append(append(slices.Clone(oldWrites), oldNoRepo...), oldStepKinds...) {
		if _, ok := reg.Lookup(name); !ok {
			t.Errorf("%s: no such operation", name)
		}
	}
	for _, o := range reg.All() {
		f := o.ContextFacts()
		if !slices.Equal(f.Topics, oldTopics[o.Name]) {
			t.Errorf("%s: topics %v, want %v", o.Name, f.Topics, oldTopics[o.Name])
		}
		if want := slices.Contains(oldWrites, o.Name); f.ChangesCheckout != want {
			t.Errorf("%s: ChangesCheckout %v, want %v", o.Name, f.ChangesCheckout, want)
		}
		if want := slices.Contains(oldNoRepo, o.Name); f.NoRepo != want {
			t.Errorf("%s: NoRepo %v, want %v", o.Name, f.NoRepo, want)
		}
	}
	if got := reg.Verified(); !slices.Equal(got, sorted(oldVerified)) {
		t.Errorf("Verified() = %v, want %v", got, sorted(oldVerified))
	}
	for _, c := range []struct {
		name, field string
		want        []string
	}{{"batch", "steps", oldStepKinds}, {"read_lanes", "lanes", oldLaneKinds}} {
		o, _ := reg.Lookup(c.name)
		got := reg.StepKinds(o)
		if !slices.Equal(got, sorted(c.want)) {
			t.Errorf("StepKinds(%s) = %v, want %v", c.name, got, sorted(c.want))
		}
		// The schema's enum is the registry's, and the description names
		// every kind.
		var enum []string
		for _, v := range o.InputSchema.Properties[c.field].Items.Properties["kind"].Enum {
			enum = append(enum, v.(string))
		}
		if !slices.Equal(enum, got) {
			t.Errorf("%s: the enum of %s[].kind is %v, want %v", c.name, c.field, enum, got)
		}
		for _, k := range got {
			if !strings.Contains(o.Description, k) {
				t.Errorf("%s: the description does not name the step kind %s", c.name, k)
			}
		}
		// A kind outside the enum is refused by the schema, naming the field.
		err := o.Validate(json.RawMessage(`{"repo_id":"r","` + c.field + `":[{"kind":"job_start"}]}`))
		if errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("%s with a job_start step: %v, want INVALID_ARGUMENT", c.name, err)
		}
	}
	if got := reg.StepKinds(nil); got != nil {
		t.Errorf("StepKinds(nil) = %v, want nil", got)
	}
	if o, _ := reg.Lookup("read_file"); reg.StepKinds(o) != nil {
		t.Error("StepKinds(read_file) is not nil: read_file runs no steps")
	}
}

// The fields a descriptor leaves out of the hash change no hash.
func TestHashIgnoreLeavesFieldsOut(t *testing.T) {
	reg := ops.Registry()
	n := 0
	for _, o := range reg.All() {
		if len(o.HashIgnore) == 0 {
			continue
		}
		n++
		base := map[string]any{"repo_id": "r", "path": "a.go"}
		with := map[string]any{"repo_id": "r", "path": "a.go"}
		for _, f := range o.HashIgnore {
			with[f] = 1234
		}
		a, err1 := ledger.InputHashIgnoring(o.Name, base, o.HashIgnore)
		b, err2 := ledger.InputHashIgnoring(o.Name, with, o.HashIgnore)
		if err1 != nil || err2 != nil || a != b {
			t.Errorf("%s: the hash changes with %v (%v, %v)", o.Name, o.HashIgnore, err1, err2)
		}
	}
	if n < 10 {
		t.Errorf("%d operations leave fields out of the hash, want every write with wait_ms", n)
	}
}

// The core toolset is the everyday loop; every operation is in one set.
func TestToolsets(t *testing.T) {
	reg := ops.Registry()
	core := reg.Names(func(o *op.Op) bool { return o.Toolset == op.Core })
	want := sorted([]string{"repository_list", "read_file", "list_dir", "search", "git_status", "git_diff", "apply_patch", "run_command", "run_check", "git_commit", "job_start", "job_status"})
	if !slices.Equal(core, want) {
		t.Errorf("core = %v, want %v", core, want)
	}
	for _, ts := range op.Toolsets() {
		if !ts.Valid() {
			t.Errorf("%s is not Valid", ts)
		}
		if len(reg.Names(func(o *op.Op) bool { return o.Toolset == ts })) == 0 {
			t.Errorf("toolset %s has no operation", ts)
		}
	}
	if op.Toolset("misc").Valid() {
		t.Error(`Toolset("misc") is Valid`)
	}
	if testing.Verbose() {
		for _, o := range reg.All() {
			t.Logf("%-26s %-10s %s", o.Name, o.Toolset, o.Roles)
		}
	}
}

func TestRoles(t *testing.T) {
	if got := op.RoleNames(); !slices.Equal(got, []string{"reader", "editor", "reviewer", "operator"}) {
		t.Errorf("RoleNames() = %v", got)
	}
	for _, name := range op.RoleNames() {
		r, err := op.ParseRole(name)
		if err != nil || r.String() != name {
			t.Errorf("ParseRole(%q) = %v, %v; want the role named so", name, r, err)
		}
		if !op.ReadRoles.Has(r) {
			t.Errorf("ReadRoles lacks %s: every role reads", name)
		}
		if !op.OperatorRoles.Has(op.Operator) || (r != op.Operator && op.OperatorRoles.Has(r)) {
			t.Errorf("OperatorRoles = %s, want the operator alone", op.OperatorRoles)
		}
	}
	if _, err := op.ParseRole("admin"); errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "one of reader, editor, reviewer, operator") {
		t.Errorf("ParseRole(admin) = %v, want INVALID_ARGUMENT naming the roles", err)
	}
	for r, want := range map[op.Roles]string{0: "none", op.WriteRoles: "editor|operator", op.CheckRoles: "editor|reviewer|operator", 64: "unknown"} {
		if got := r.String(); got != want {
			t.Errorf("Roles(%d).String() = %q, want %q", r, got, want)
		}
	}
	if op.WriteRoles.Has(op.Reader) || op.WriteRoles.Has(0) || !op.WriteRoles.Has(op.Editor|op.Operator) {
		t.Error("Has answers wrongly for WriteRoles")
	}
}

// The gate routes an operation by its descriptor: a plan that gives no
// route of its own is decided by the class (and one without a class is
// refused as unknown), so no operation needs to route itself.
func TestGateRoutesByTheDescriptor(t *testing.T) {
	var seen []govern.Decision
	gov, err := govern.New(govern.Config{Audit: &runtime.FakeAudit{}, LoopThreshold: -1,
		Observe: func(d govern.Decision) { seen = append(seen, d) }})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, k route.Kind) op.Op {
		return op.Def(op.Spec[gateArgs]{Name: name, Output: readResult{}, Route: k, Toolset: op.Core, Roles: op.ReadRoles, ReadOnly: true,
			Prepare: func(context.Context, *op.Call, gateArgs) (*op.Plan, error) {
				return &op.Plan{Run: func(context.Context) (any, error) { return &readResult{}, nil }}, nil
			}})
	}
	p := op.NewPipeline(op.NewRegistry([]op.Op{mk("x_read", route.Readonly), mk("x_write", route.Mutation), mk("x_none", route.Unclassified)}), &op.Env{Gov: gov})
	ctx := context.Background()
	if _, err := p.Call(ctx, "x_read", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("x_read: %v", err)
	}
	if _, err := p.Call(ctx, "x_write", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("x_write: %v", err)
	}
	_, err = p.Call(ctx, "x_none", json.RawMessage(`{}`))
	if errs.CodeOf(err) != errs.RouteRejected || !strings.Contains(err.Error(), `unknown operation "x_none"`) {
		t.Fatalf("x_none: %v, want ROUTE_REJECTED as an unknown operation", err)
	}
	if len(seen) != 3 || seen[0].Outcome != "allow" || seen[0].Risk != 5 || seen[1].Outcome != "allow" || seen[1].Risk != 45 || seen[2].Outcome != "block" {
		t.Errorf("gate decisions = %+v, want allow at risk 5 (readonly), allow at risk 45 (a mutation), block", seen)
	}
}
