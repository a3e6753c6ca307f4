package recovery

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// everyCode lists every code of harness/errs with the type and plan it
// gets on a first failure of run_command under the default bound (3).
// TestEveryCodeIsListed keeps it complete.
var everyCode = []struct {
	code      errs.Code
	typ       Type
	retryable bool
	action    Action
}{
	{errs.InvalidArgument, Contract, false, Abort},
	{errs.NotFound, Contract, false, Abort},
	{errs.NotAGitRepository, Contract, false, Abort},
	{errs.RepositoryNotRegistered, Contract, false, Abort},
	{errs.PathOutsideRoot, Contract, false, Abort},
	{errs.SecretPathDenied, Contract, false, Abort},
	{errs.PathNotAllowed, Contract, false, Abort},
	{errs.IsDirectory, Contract, false, Abort},
	{errs.RouteRejected, Contract, false, Abort},
	{errs.RouteDurableRequired, Contract, false, EscalateDurable},
	{errs.PolicyDenied, Contract, false, Abort},
	{errs.RoleDenied, Contract, false, Abort},
	{errs.ApprovalRequired, Contract, false, AskHuman},
	{errs.LoopDetected, Loop, false, Abort},
	{errs.MutationBusy, Transient, true, RetryAfter},
	{errs.LeaseLost, Transient, true, RetryAfter},
	{errs.RequestIDRequired, Contract, false, Abort},
	{errs.RequestConflict, Contract, false, Abort},
	{errs.RequestInProgress, Transient, true, RetryAfter},
	{errs.RequestOutcomeUnknown, Unknown, false, AskHuman},
	{errs.PatchConflict, Contract, false, Abort},
	{errs.PatchRollbackIncomplete, Unknown, false, AskHuman},
	{errs.Timeout, Transient, true, EscalateDurable}, // a command's timeout: the Durable Path
	{errs.Cancelled, Transient, true, Retry},
	{errs.Unavailable, Transient, true, RetryAfter},
	{errs.Internal, Unknown, true, Retry},
	{errs.Unauthenticated, Contract, false, Abort},
	{errs.BudgetExceeded, Budget, false, AskHuman},
	{errs.RunEnded, Contract, false, Abort},
	{errs.Deadlock, Deadlock, true, RetryAfter},
	{errs.VerificationRequired, Contract, false, Abort},
	{errs.RetryLimit, Budget, false, Abort},
	{errs.StorageFull, Transient, false, AskHuman},
	{errs.StorageUnavailable, Transient, false, AskHuman},
	{errs.StoreDamaged, Unknown, false, AskHuman},
	{errs.RepositoryMoved, Contract, false, Abort},
	{errs.ConcurrentModification, Transient, true, RetryAfter},
	{errs.GitIdentityRequired, Contract, false, Abort},
	{errs.JobFailed, Contract, false, Abort},
	{errs.CheckFailed, Contract, false, Abort},
	{errs.TargetMoved, Contract, false, Abort},
	{errs.RevertConflict, Contract, false, Abort},
	{errs.PushRejected, Contract, false, Abort},
	{errs.RemoteAuthFailed, Contract, false, Abort},
}

// TestEveryCodeIsListed reads the constants of harness/errs from its
// source, so that a new code fails here until it has its row above.
func TestEveryCodeIsListed(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "..", "contract", "errs", "errs.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, c := range everyCode {
		listed[string(c.code)] = true
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					continue
				}
				code, _ := strconv.Unquote(lit.Value)
				n++
				if !listed[code] {
					t.Errorf("code %s of harness/errs is not in everyCode (and maybe not in classes): add it", code)
				}
				if _, ok := classes[errs.Code(code)]; !ok {
					t.Errorf("code %s has no class", code)
				}
			}
		}
	}
	if n < 30 || n != len(everyCode) {
		t.Errorf("harness/errs declares %d codes, everyCode lists %d", n, len(everyCode))
	}
}

func TestAssessAndPlanEveryCode(t *testing.T) {
	for _, c := range everyCode {
		t.Run(string(c.code), func(t *testing.T) {
			s := messages.RunSpan{SpanID: "sp_1", Op: "run_command", Outcome: "error", ErrorCode: string(c.code)}
			a := Assess(Facts{Span: s})
			if a.Type != c.typ || a.Retryable != c.retryable || a.Code != string(c.code) || a.Attempts != 1 {
				t.Errorf("Assess = %+v, want type %s retryable %v", a, c.typ, c.retryable)
			}
			if len(a.Evidence) == 0 || !strings.Contains(a.Evidence[0], "run_command failed with "+string(c.code)+" (span sp_1)") {
				t.Errorf("evidence %q", a.Evidence)
			}
			p := Plan(a, 1, 3)
			if p.Action != c.action || p.Reason == "" {
				t.Errorf("Plan = %+v, want %s", p, c.action)
			}
			switch p.Action {
			case AskHuman, Abort:
				if p.MaxAttempts != 0 {
					t.Errorf("%s lets %d attempts", p.Action, p.MaxAttempts)
				}
			case RetryAfter:
				if p.AfterMs <= 0 || p.MaxAttempts != 3 {
					t.Errorf("retry_after: %+v", p)
				}
			}
		})
	}
}

func TestAssess(t *testing.T) {
	fail := func(code string, ms float64) messages.RunAttempt {
		return messages.RunAttempt{SpanID: "sp", ErrorCode: code, DurationMs: ms}
	}
	span := func(op, code string, ms float64) messages.RunSpan {
		return messages.RunSpan{SpanID: "sp_9", Op: op, Outcome: "error", ErrorCode: code, DurationMs: ms, Stage: "fix"}
	}
	loopNote := messages.RunObservation{Source: "harnessd", Kind: "loop", Text: "run_command repeated an identical call and result: LOOP_DETECTED"}
	cases := []struct {
		name      string
		f         Facts
		typ       Type
		retryable bool
		evidence  []string // substrings, in any evidence line
	}{
		{"a first busy resource is transient",
			Facts{Span: span("apply_patch", "MUTATION_BUSY", 3)}, Transient, true, nil},
		{"one wait that stayed busy is still transient",
			Facts{Span: span("apply_patch", "MUTATION_BUSY", 5000), Attempts: []messages.RunAttempt{fail("MUTATION_BUSY", 3), fail("MUTATION_BUSY", 5000)}},
			Transient, true, []string{"failed twice in stage \"fix\": MUTATION_BUSY, MUTATION_BUSY"}},
		{"waits that stay busy are a deadlock",
			Facts{Span: span("apply_patch", "MUTATION_BUSY", 5000), Attempts: []messages.RunAttempt{fail("MUTATION_BUSY", 5000), fail("MUTATION_BUSY", 5000)}},
			Deadlock, true, []string{"waited for the lease twice and the resource stayed busy"}},
		{"a wait in a cycle is a deadlock",
			Facts{Span: span("apply_patch", "MUTATION_BUSY", 10), Details: map[string]any{"cycle": []string{"run_a", "run_b", "run_a"}, "holder_operation": "git_commit"}},
			Deadlock, true, []string{"part of a cycle: run_a -> run_b -> run_a"}},
		{"a cycle of objects names their runs",
			Facts{Span: span("apply_patch", "DEADLOCK", 10), Details: map[string]any{"cycle": []any{map[string]any{"run_id": "run_a", "holds": "x"}, map[string]any{"run_id": "run_b"}}}},
			Deadlock, true, []string{"the wait cycle: run_a -> run_b"}},
		{"the holder is named",
			Facts{Span: span("apply_patch", "MUTATION_BUSY", 10), Details: map[string]any{"holder_operation": "git_commit"}},
			Transient, true, []string{"the holder is git_commit"}},
		{"a lost lease is transient",
			Facts{Span: span("apply_patch", "LEASE_LOST", 10)}, Transient, true, nil},
		{"a deadlock names its cycle",
			Facts{Span: span("apply_patch", "DEADLOCK", 10), Details: map[string]any{"cycle": "run_a -> run_b -> run_a"}},
			Deadlock, true, []string{"the wait cycle: run_a -> run_b -> run_a"}},
		{"a loop quotes the loop detector",
			Facts{Span: span("run_command", "LOOP_DETECTED", 1), State: messages.RunState{Observations: []messages.RunObservation{loopNote}}, Details: map[string]any{"hint": "change the input"}},
			Loop, false, []string{"the loop detector noted: run_command repeated", "its hint: change the input"}},
		{"a budget refusal names the spent limit",
			Facts{Span: span("run_command", "BUDGET_EXCEEDED", 1), State: messages.RunState{Budget: messages.RunBudget{Commands: 2, Mutations: 5},
				Counters: messages.RunCounters{Commands: 1, Mutations: 1}, Drawn: messages.RunCounters{Commands: 1}}},
			Budget, false, []string{"the run's commands budget is used up (2 of 2)"}},
		{"a spent budget shows with any failure",
			Facts{Span: span("read_file", "TIMEOUT", 1), State: messages.RunState{Budget: messages.RunBudget{OutputBytes: 10}, Counters: messages.RunCounters{OutputBytes: 12}}},
			Transient, true, []string{"output_bytes budget is used up (12 of 10)"}},
		{"an unknown code",
			Facts{Span: span("run_command", "COMMAND_FAILED", 1)}, Unknown, false, []string{`does not know the code "COMMAND_FAILED"`}},
		{"no code at all",
			Facts{Span: span("run_command", "", 1)}, Unknown, false, []string{"without an error code"}},
		{"three attempts outside a stage",
			Facts{Span: messages.RunSpan{Op: "read_file", ErrorCode: "NOT_FOUND"}, Attempts: []messages.RunAttempt{fail("NOT_FOUND", 1), fail("NOT_FOUND", 1), fail("NOT_FOUND", 1)}},
			Contract, false, []string{"failed 3 times outside any stage: NOT_FOUND, NOT_FOUND, NOT_FOUND"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := Assess(c.f)
			if a.Type != c.typ || a.Retryable != c.retryable {
				t.Errorf("Assess = %s retryable %v, want %s %v (evidence %q)", a.Type, a.Retryable, c.typ, c.retryable, a.Evidence)
			}
			all := strings.Join(a.Evidence, "\n")
			for _, e := range c.evidence {
				if !strings.Contains(all, e) {
					t.Errorf("evidence lacks %q:\n%s", e, all)
				}
			}
			if want := max(len(c.f.Attempts), 1); a.Attempts != want {
				t.Errorf("attempts %d, want %d", a.Attempts, want)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	as := func(typ Type, code, op string, retryable bool) Assessment {
		return Assessment{Type: typ, Code: code, Op: op, Retryable: retryable}
	}
	cases := []struct {
		name            string
		a               Assessment
		attempts, bound int
		action          Action
		maxAttempts     int
		afterMs         int64
		reason          string // substring
	}{
		{"durable route escalates", as(Contract, "ROUTE_DURABLE_REQUIRED", "run_command", false), 1, 3, EscalateDurable, 1, 0, "job_start"},
		{"an approval asks a person", as(Contract, "APPROVAL_REQUIRED", "apply_patch", false), 1, 3, AskHuman, 0, 0, "approval_id"},
		{"a command's timeout escalates", as(Transient, "TIMEOUT", "run_check", true), 1, 3, EscalateDurable, 1, 0, "durable job"},
		{"a read's timeout retries after a pause", as(Transient, "TIMEOUT", "search", true), 1, 3, RetryAfter, 3, 500, "retry"},
		{"the pause doubles", as(Transient, "UNAVAILABLE", "search", true), 3, 3, RetryAfter, 1, 2000, ""},
		{"the pause is capped", as(Transient, "UNAVAILABLE", "search", true), 12, 20, RetryAfter, 9, MaxBackoffMs, ""},
		{"past the bound a transient failure asks a person", as(Transient, "UNAVAILABLE", "search", true), 4, 3, AskHuman, 0, 0, "failed 4 times, and the run allows 3 retries"},
		{"no retries allowed", as(Transient, "UNAVAILABLE", "search", true), 1, 0, AskHuman, 0, 0, "allows 0 retries"},
		{"a negative bound is none", as(Transient, "UNAVAILABLE", "search", true), 1, -2, AskHuman, 0, 0, "allows 0 retries"},
		{"zero attempts count as one", as(Transient, "UNAVAILABLE", "search", true), 0, 1, RetryAfter, 1, 500, ""},
		{"a deadlock backs off longer", as(Deadlock, "DEADLOCK", "apply_patch", true), 2, 3, RetryAfter, 2, 2000, "release"},
		{"a deadlock past the bound asks", as(Deadlock, "MUTATION_BUSY", "apply_patch", true), 5, 3, AskHuman, 0, 0, ""},
		{"a loop aborts", as(Loop, "LOOP_DETECTED", "run_command", false), 1, 3, Abort, 0, 0, "change the input"},
		{"a contract failure aborts", as(Contract, "PATCH_CONFLICT", "apply_patch", false), 1, 3, Abort, 0, 0, "fix the input"},
		{"a spent budget asks a person", as(Budget, "BUDGET_EXCEEDED", "run_command", false), 1, 3, AskHuman, 0, 0, "raise"},
		{"the retry limit aborts", as(Budget, "RETRY_LIMIT", "read_file", false), 5, 3, Abort, 0, 0, "new stage"},
		{"an ended run aborts", as(Contract, "RUN_ENDED", "read_file", false), 1, 3, Abort, 0, 0, "run_start"},
		{"verification first", as(Contract, "VERIFICATION_REQUIRED", "git_commit", false), 1, 3, Abort, 0, 0, "verify"},
		{"an unknown outcome asks", as(Unknown, "REQUEST_OUTCOME_UNKNOWN", "apply_patch", false), 1, 3, AskHuman, 0, 0, "digests"},
		{"an internal error retries once", as(Unknown, "INTERNAL", "read_file", true), 1, 3, Retry, 1, 0, "once"},
		{"an internal error past the bound asks", as(Unknown, "INTERNAL", "read_file", true), 4, 3, AskHuman, 0, 0, ""},
		{"an unknown code asks", as(Unknown, "COMMAND_FAILED", "run_command", false), 1, 3, AskHuman, 0, 0, "cannot tell"},
		{"a cancelled call retries at once", as(Transient, "CANCELLED", "search", true), 2, 3, Retry, 2, 0, "cancelled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Plan(c.a, c.attempts, c.bound)
			if p.Action != c.action || p.MaxAttempts != c.maxAttempts || p.AfterMs != c.afterMs || !strings.Contains(p.Reason, c.reason) {
				t.Errorf("Plan = %+v, want %s max %d after %d reason ~%q", p, c.action, c.maxAttempts, c.afterMs, c.reason)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	if typ, r := Classify("TIMEOUT"); typ != Transient || !r {
		t.Errorf("TIMEOUT: %s %v", typ, r)
	}
	if typ, r := Classify("NO_SUCH_CODE"); typ != Unknown || r {
		t.Errorf("unknown: %s %v", typ, r)
	}
}
