package op_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
)

// The decision of every role against every role set an operation
// declares: a role may call an operation whose roles hold it, nothing
// else; the refusal names the roles needed and how to get one.
func TestRoleDecision(t *testing.T) {
	sets := []struct {
		name string
		may  op.Roles
	}{
		{"ReadRoles", op.ReadRoles}, {"WriteRoles", op.WriteRoles}, {"CheckRoles", op.CheckRoles}, {"OperatorRoles", op.OperatorRoles},
	}
	want := map[op.Roles]map[string]bool{
		op.Reader:   {"ReadRoles": true},
		op.Editor:   {"ReadRoles": true, "WriteRoles": true, "CheckRoles": true},
		op.Reviewer: {"ReadRoles": true, "CheckRoles": true},
		op.Operator: {"ReadRoles": true, "WriteRoles": true, "CheckRoles": true, "OperatorRoles": true},
	}
	for role, allowed := range want {
		for _, s := range sets {
			t.Run(role.String()+"/"+s.name, func(t *testing.T) {
				err := op.RoleDecision("some_op", role, s.may)
				if allowed[s.name] {
					if err != nil {
						t.Fatalf("%s calling an op of %s: %v, want allowed", role, s.may, err)
					}
					return
				}
				e := errs.From(err)
				if err == nil || e.Code != errs.RoleDenied {
					t.Fatalf("%s calling an op of %s: %v, want ROLE_DENIED", role, s.may, err)
				}
				for _, w := range []string{"some_op needs the role " + strings.Join(s.may.Names(), " or "), "acts as " + role.String(), "--role " + s.may.Names()[0], "HARNESSD_ROLE", "cannot raise its own role"} {
					if !strings.Contains(e.Message, w) {
						t.Errorf("message %q, want it to contain %q", e.Message, w)
					}
				}
				if e.Details["role"] != role.String() || e.Details["roles"] != s.may.String() {
					t.Errorf("details %v, want role %s and roles %s", e.Details, role, s.may)
				}
			})
		}
	}
	if err := op.RoleDecision("x", 0, op.ReadRoles); errs.CodeOf(err) != errs.RoleDenied {
		t.Errorf("no role: %v, want ROLE_DENIED", err)
	}
}

// A caller naming no role acts as operator; an unknown name is refused.
func TestCallerRole(t *testing.T) {
	for _, tt := range []struct {
		role string
		want op.Roles
		code errs.Code
	}{
		{"", op.Operator, ""}, {"reader", op.Reader, ""}, {"editor", op.Editor, ""}, {"reviewer", op.Reviewer, ""}, {"operator", op.Operator, ""},
		{"admin", 0, errs.InvalidArgument},
	} {
		got, err := op.CallerRole(messages.Caller{Role: tt.role})
		if got != tt.want || errs.CodeOf(err) != tt.code && !(err == nil && tt.code == "") {
			t.Errorf("CallerRole(%q) = %v, %v; want %v, %q", tt.role, got, err, tt.want, tt.code)
		}
	}
}

// The pipeline refuses a call outside the caller's role before Prepare
// runs, audits it, and lets the same call through for a role that may
// make it and for a caller naming no role (operator).
func TestPipelineRefusesACallOutsideTheRole(t *testing.T) {
	prepared := 0
	write := op.Def(op.Spec[struct{}]{Name: "write_thing", Output: noteResult{}, Route: route.Readonly,
		Toolset: op.Core, Roles: op.WriteRoles,
		Prepare: func(context.Context, *op.Call, struct{}) (*op.Plan, error) {
			prepared++
			return &op.Plan{Run: func(context.Context) (any, error) { return &noteResult{Text: "written"}, nil }}, nil
		}})
	au := &runtime.FakeAudit{}
	gov, err := govern.New(govern.Config{Audit: au, LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := op.NewPipeline(op.NewRegistry([]op.Op{write}), &op.Env{Gov: gov})
	reader := op.WithCaller(context.Background(), messages.Caller{Session: "s1", Role: "reader", Client: messages.Client{Name: "agent"}})
	_, err = p.Call(reader, "write_thing", json.RawMessage(`{}`))
	if e := errs.From(err); err == nil || e.Code != errs.RoleDenied {
		t.Fatalf("a reader's write: %v, want ROLE_DENIED", err)
	}
	if prepared != 0 {
		t.Fatalf("Prepare ran %d times for a refused call, want 0", prepared)
	}
	var found bool
	for _, e := range au.Entries() {
		if e.Operation == "write_thing" && e.Code == string(errs.RoleDenied) && e.RuleID == govern.RuleRole && e.Session == "s1" && e.Details["role"] == "reader" {
			found = true
		}
	}
	if !found {
		t.Fatalf("audit %+v, want a ROLE_DENIED rejection of write_thing by session s1", au.Entries())
	}
	for _, ctx := range []context.Context{
		op.WithCaller(context.Background(), messages.Caller{Session: "s2", Role: "editor"}),
		op.WithCaller(context.Background(), messages.Caller{Session: "s3"}),
		context.Background(),
	} {
		if _, err := p.Call(ctx, "write_thing", json.RawMessage(`{}`)); err != nil {
			t.Fatalf("an editor's or operator's write: %v", err)
		}
	}
	if prepared != 3 {
		t.Fatalf("Prepare ran %d times, want 3", prepared)
	}
}
