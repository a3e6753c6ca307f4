package route

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func cmd(k Kind, tool string, argv ...string) Request {
	return Request{Tool: tool, Kind: k, Argv: argv}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name      string
		req       Request
		mode      Mode
		tier      Tier
		minRisk   int
		maxRisk   int
		mutation  bool
		recovery  bool
		isolation bool
		class     string // CommandClass, "" to skip
		est       Class  // "" to skip
		reason    string // substring of a reason, "" to skip
		suggest   string // SuggestedOperation when durable; "" = job_start
	}{
		{name: "read_file", req: Request{Tool: "read_file", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10, est: Short},
		{name: "context_assemble", req: Request{Tool: "context_assemble", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10, est: Short},
		{name: "search", req: Request{Tool: "search", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "git_status", req: Request{Tool: "git_status", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "git_diff", req: Request{Tool: "git_diff", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "route_explain", req: Request{Tool: "route_explain", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "repository_register", req: Request{Tool: "repository_register", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "repository_list", req: Request{Tool: "repository_list", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "repository_unregister", req: Request{Tool: "repository_unregister", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "job_status", req: Request{Tool: "job_status", Kind: Readonly}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "apply_patch", req: Request{Tool: "apply_patch", Kind: Mutation}, mode: Fast, tier: Direct, minRisk: 20, maxRisk: 40, mutation: true},
		{name: "git_stage", req: Request{Tool: "git_stage", Kind: IndexMutation}, mode: Fast, tier: Direct, minRisk: 20, maxRisk: 40, mutation: true},
		{name: "git_commit", req: Request{Tool: "git_commit", Kind: Mutation}, mode: Fast, tier: Direct, minRisk: 20, maxRisk: 40, mutation: true},
		{name: "unknown tool", req: Request{Tool: "frobnicate"}, mode: Reject, tier: Direct, reason: "unknown operation"},
		{name: "empty tool", req: Request{}, mode: Reject, reason: "unknown operation"},
		{name: "readonly command", req: cmd(Command, "run_command", "git", "status", "--short"), mode: Fast, tier: Direct, maxRisk: 10, class: "readonly", est: Short},
		{name: "readonly at max timeout", req: Request{Tool: "run_command", Kind: Command, Argv: []string{"ls"}, TimeoutMs: 15_000}, mode: Fast, class: "readonly"},
		{name: "readonly long timeout", req: Request{Tool: "run_command", Kind: Command, Argv: []string{"ls"}, TimeoutMs: 60_000}, mode: Durable, reason: "above the Fast Path maximum of 15 s", est: Long},
		{name: "readonly background", req: Request{Tool: "run_command", Kind: Command, Argv: []string{"ls"}, Background: true}, mode: Durable},
		{name: "negative timeout", req: Request{Tool: "run_command", Kind: Command, Argv: []string{"ls"}, TimeoutMs: -1}, mode: Reject},
		{name: "workspace write", req: cmd(Command, "run_command", "touch", "x"), mode: Durable, tier: BoundedWork, recovery: true, mutation: true, class: "workspace_write"},
		{name: "go test points to run_check", req: cmd(Command, "run_command", "go", "test", "./..."), mode: Durable, tier: BoundedWork, recovery: true, mutation: true, class: "workspace_write", suggest: SuggestRunCheck, reason: "run them with run_check"},
		{name: "npm test points to run_check", req: cmd(Command, "run_command", "npm", "test"), mode: Durable, suggest: SuggestRunCheck},
		{name: "npm run test:unit points to run_check", req: cmd(Command, "run_command", "npm", "run", "test:unit"), mode: Durable, suggest: SuggestRunCheck},
		{name: "pytest points to run_check", req: cmd(Command, "run_command", "pytest", "-k", "x"), mode: Durable, suggest: SuggestRunCheck},
		{name: "python -m unittest points to run_check", req: cmd(Command, "run_command", "python3", "-m", "unittest"), mode: Durable, suggest: SuggestRunCheck},
		{name: "cargo test points to run_check", req: cmd(Command, "run_command", "cargo", "test"), mode: Durable, suggest: SuggestRunCheck},
		{name: "make test points to run_check", req: cmd(Command, "run_command", "make", "test"), mode: Durable, suggest: SuggestRunCheck},
		{name: "jest points to run_check", req: cmd(Command, "run_command", "jest"), mode: Durable, suggest: SuggestRunCheck},
		{name: "mocha points to run_check", req: cmd(Command, "run_command", "mocha"), mode: Durable, suggest: SuggestRunCheck},
		{name: "make build stays a job", req: cmd(Command, "run_command", "make", "build"), mode: Durable, class: "workspace_write"},
		{name: "go test as a job stays a job", req: cmd(Job, "job_start", "go", "test", "./..."), mode: Durable},
		{name: "go vet", req: cmd(Command, "run_command", "go", "vet", "./..."), mode: Fast, class: "readonly", maxRisk: 10},
		{name: "go build to /dev/null", req: cmd(Command, "run_command", "go", "build", "-o", "/dev/null", "./..."), mode: Fast, class: "readonly"},
		{name: "go build in the checkout", req: cmd(Command, "run_command", "go", "build", "./..."), mode: Durable, class: "workspace_write", reason: "-o /dev/null"},
		{name: "go build -toolexec", req: cmd(Command, "run_command", "go", "build", "-toolexec", "./x", "-o", "/dev/null", "."), mode: Durable, class: "unknown"},
		{name: "go vet -vettool", req: cmd(Command, "run_command", "go", "vet", "-vettool=./x", "."), mode: Durable, class: "unknown"},
		{name: "go list", req: cmd(Command, "run_command", "go", "list", "./..."), mode: Fast, class: "readonly"},
		{name: "go doc", req: cmd(Command, "run_command", "go", "doc", "fmt"), mode: Fast, class: "readonly"},
		{name: "go env -w", req: cmd(Command, "run_command", "go", "env", "-w", "GOFLAGS=-toolexec=./x"), mode: Durable, class: "workspace_write"},
		{name: "node --version", req: cmd(Command, "run_command", "node", "--version"), mode: Fast, class: "readonly"},
		{name: "python3 --version", req: cmd(Command, "run_command", "python3", "--version"), mode: Fast, class: "readonly"},
		{name: "npm ls", req: cmd(Command, "run_command", "npm", "ls"), mode: Fast, class: "readonly"},
		{name: "unknown command", req: cmd(Command, "run_command", "python", "x.py"), mode: Durable, recovery: true, class: "unknown", minRisk: 50},
		{name: "sed -i", req: cmd(Command, "run_command", "sed", "-i", "s/a/b/", "f"), mode: Durable, class: "workspace_write"},
		{name: "destructive", req: cmd(Command, "run_command", "rm", "-rf", "/"), mode: Reject, minRisk: 90, class: "destructive"},
		{name: "reset hard", req: cmd(Command, "run_command", "git", "reset", "--hard"), mode: Durable, minRisk: 90, recovery: true, mutation: true, class: "destructive", reason: "behind a person's approval"},
		{name: "timeout wrapper", req: cmd(Command, "run_command", "timeout", "5", "rm", "-rf", "/"), mode: Reject, minRisk: 90},
		{name: "remote push", req: cmd(Command, "run_command", "git", "push"), mode: Durable, minRisk: 70, maxRisk: 89, class: "remote", reason: "git push writes to a remote", suggest: SuggestGitPush},
		{name: "remote curl", req: cmd(Command, "run_command", "curl", "-d", "x", "http://h"), mode: Reject, minRisk: 70, reason: "curl upload"},
		{name: "shell unsafe", req: cmd(Command, "run_command", "bash", "-c", "echo $(id)"), mode: Reject, class: "shell", reason: "cannot be proven safe"},
		{name: "shell readonly", req: cmd(Command, "run_command", "bash", "-c", "git log --oneline | head -5"), mode: Fast, class: "readonly"},
		{name: "empty argv", req: Request{Tool: "run_command", Kind: Command}, mode: Reject, reason: "argv is empty"},
		{name: "git -c", req: cmd(Command, "run_command", "git", "-c", "core.pager=x", "log"), mode: Durable, class: "unknown"},
		{name: "focused check", req: cmd(Check, "run_check", "go", "test", "./pkg/x"), mode: Fast, tier: BoundedWork, est: Short},
		{name: "focused check -run", req: cmd(Check, "run_check", "go", "test", "-run", "TestY", "./..."), mode: Fast},
		{name: "unfocused check", req: cmd(Check, "run_check", "go", "test", "./..."), mode: Durable, tier: BoundedWork, est: Long, reason: "unfocused"},
		{name: "unfocused make", req: cmd(Check, "run_check", "make", "test"), mode: Durable},
		{name: "focused check long timeout", req: Request{Tool: "run_check", Kind: Check, Argv: []string{"go", "test", "./x"}, TimeoutMs: 120_000}, mode: Durable},
		{name: "check empty argv", req: Request{Tool: "run_check", Kind: Check}, mode: Reject},
		{name: "check destructive", req: cmd(Check, "run_check", "rm", "-rf", "."), mode: Reject},
		{name: "job_start", req: cmd(Job, "job_start", "go", "test", "./..."), mode: Durable, recovery: true, mutation: true},
		{name: "job_start writes", req: Request{Tool: "job_start", Kind: Job, Argv: []string{"make"}, Writes: true}, mode: Durable, recovery: true, isolation: true, mutation: true},
		{name: "job_start readonly", req: cmd(Job, "job_start", "ls"), mode: Durable, recovery: true},
		{name: "job_start destructive", req: cmd(Job, "job_start", "git", "clean", "-fdx"), mode: Durable, minRisk: 90, recovery: true, mutation: true, reason: "untracked and ignored files"},
		{name: "job_start empty", req: Request{Tool: "job_start", Kind: Job}, mode: Reject},
		{name: "campaign", req: Request{Tool: "job_start", Kind: Job, Argv: []string{"make"}, Deliverables: 2}, mode: Durable, tier: Campaign},
		{name: "batch fast", req: Request{Tool: "batch", Kind: Batch, Steps: []Request{{Tool: "read_file", Kind: Readonly}, cmd(Command, "run_command", "ls")}}, mode: Fast, tier: BoundedWork},
		{name: "batch mutation", req: Request{Tool: "batch", Kind: Batch, Steps: []Request{{Tool: "read_file", Kind: Readonly}, {Tool: "apply_patch", Kind: Mutation}}}, mode: Fast, tier: BoundedWork, mutation: true},
		{name: "batch durable", req: Request{Tool: "batch", Kind: Batch, Steps: []Request{{Tool: "read_file", Kind: Readonly}, cmd(Command, "run_command", "make")}}, mode: Durable, reason: "step 1 (run_command)"},
		{name: "batch reject", req: Request{Tool: "batch", Kind: Batch, Steps: []Request{{Tool: "read_file", Kind: Readonly}, {Tool: "search", Kind: Readonly}, cmd(Command, "run_command", "rm", "-rf", "/")}}, mode: Reject, reason: "step 2 (run_command): ", minRisk: 90},
		{name: "batch empty", req: Request{Tool: "batch", Kind: Batch}, mode: Reject},
		{name: "batch nested", req: Request{Tool: "batch", Kind: Batch, Steps: []Request{{Tool: "batch", Kind: Batch, Steps: []Request{{Tool: "read_file", Kind: Readonly}}}}}, mode: Reject, reason: "step 0 (batch)"},
		{name: "batch too long", req: Request{Tool: "batch", Kind: Batch, Steps: make([]Request, MaxBatchSteps+1)}, mode: Reject},
		{name: "batch campaign", req: Request{Tool: "batch", Kind: Batch, Deliverables: 3, Steps: []Request{{Tool: "read_file", Kind: Readonly}}}, mode: Fast, tier: Campaign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.req)
			if d.Mode != tt.mode {
				t.Fatalf("Mode = %q (reasons %q), want %q", d.Mode, d.Reasons, tt.mode)
			}
			if tt.tier != "" && d.Tier != tt.tier {
				t.Errorf("Tier = %q, want %q", d.Tier, tt.tier)
			}
			if d.Risk < tt.minRisk || (tt.maxRisk > 0 && d.Risk > tt.maxRisk) || d.Risk < 0 || d.Risk > 100 {
				t.Errorf("Risk = %d, want in [%d, %d]", d.Risk, tt.minRisk, tt.maxRisk)
			}
			if tt.mutation && !d.Mutation {
				t.Errorf("Mutation = false, want true")
			}
			if tt.recovery && !d.RequiresRecovery {
				t.Errorf("RequiresRecovery = false, want true")
			}
			if d.RequiresIsolation != tt.isolation {
				t.Errorf("RequiresIsolation = %v, want %v", d.RequiresIsolation, tt.isolation)
			}
			if tt.class != "" && d.CommandClass != tt.class {
				t.Errorf("CommandClass = %q, want %q", d.CommandClass, tt.class)
			}
			if tt.est != "" && d.EstimatedClass != tt.est {
				t.Errorf("EstimatedClass = %q, want %q", d.EstimatedClass, tt.est)
			}
			want := map[Mode]string{Durable: SuggestJobStart}[d.Mode]
			if tt.suggest != "" {
				want = tt.suggest
			}
			if d.SuggestedOperation != want {
				t.Errorf("SuggestedOperation = %q, want %q", d.SuggestedOperation, want)
			}
			if len(d.Reasons) == 0 {
				t.Errorf("Reasons is empty, want at least one")
			}
			if tt.reason != "" && !strings.Contains(strings.Join(d.Reasons, "\n"), tt.reason) {
				t.Errorf("Reasons = %q, want one containing %q", d.Reasons, tt.reason)
			}
		})
	}
}

func TestDecisionErr(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want errs.Code
	}{
		{"fast", Request{Tool: "read_file", Kind: Readonly}, ""},
		{"durable", cmd(Command, "run_command", "make"), errs.RouteDurableRequired},
		{"test command", cmd(Command, "run_command", "go", "test", "./..."), errs.RouteDurableRequired},
		{"reject", cmd(Command, "run_command", "rm", "-rf", "/"), errs.RouteRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Decide(tt.req).Err()
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("CodeOf(Err()) = %q, want %q", got, tt.want)
			}
			if tt.want != "" && !errors.Is(err, errs.E(tt.want)) {
				t.Fatalf("errors.Is(%v, %s) = false, want true", err, tt.want)
			}
		})
	}
}

func TestDecisionJSON(t *testing.T) {
	b, err := json.Marshal(Decide(Request{Tool: "read_file", Kind: Readonly}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"mode":"fast"`, `"tier":"direct"`, `"estimated_class":"short"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("got %s, want it to contain %s", b, want)
		}
	}
	if strings.Contains(string(b), "suggested_operation") {
		t.Errorf("got %s, want suggested_operation omitted on the Fast Path", b)
	}
}

func BenchmarkDecideReadFile(b *testing.B) {
	req := Request{Tool: "read_file", Kind: Readonly}
	b.ReportAllocs()
	for b.Loop() {
		if Decide(req).Mode != Fast {
			b.Fatal("not fast")
		}
	}
}

func BenchmarkDecideRunCommand(b *testing.B) {
	req := Request{Tool: "run_command", Kind: Command, Argv: []string{"git", "status", "--short"}}
	b.ReportAllocs()
	for b.Loop() {
		if Decide(req).Mode != Fast {
			b.Fatal("not fast")
		}
	}
}

// The fixed classes decide by their kind alone: the tool only names the
// operation in the reason. These are the decisions the router's name
// switch gave before operations declared their kind (harness/op pins
// which operation has which).
func TestDecideByKind(t *testing.T) {
	tests := []struct {
		kind Kind
		want Decision
	}{
		{Readonly, Decision{Mode: Fast, Reasons: []string{"x_op is a readonly Fast Path operation"}, Risk: 5, EstimatedClass: Short, Tier: Direct}},
		{RunState, Decision{Mode: Fast, Reasons: []string{"x_op records run state; it touches no repository"}, Risk: 0, EstimatedClass: Short, Tier: Direct}},
		{Mutation, Decision{Mode: Fast, Reasons: []string{"x_op is a Fast Path mutation under a lease"}, Risk: 30, EstimatedClass: Short, Tier: Direct, Mutation: true}},
		{IndexMutation, Decision{Mode: Fast, Reasons: []string{"x_op is a Fast Path mutation under a lease"}, Risk: 20, EstimatedClass: Short, Tier: Direct, Mutation: true}},
		{Signal, Decision{Mode: Fast, Reasons: []string{"x_op signals a durable job"}, Risk: 20, EstimatedClass: Short, Tier: Direct}},
		{Registry, Decision{Mode: Fast, Reasons: []string{"x_op is a Fast Path registry operation"}, Risk: 10, EstimatedClass: Short, Tier: Direct}},
		{Unclassified, Decision{Mode: Reject, Reasons: []string{`unknown operation "x_op"`}, Risk: 50, EstimatedClass: UnknownClass, Tier: Direct}},
		{Kind(200), Decision{Mode: Reject, Reasons: []string{`unknown operation "x_op"`}, Risk: 50, EstimatedClass: UnknownClass, Tier: Direct}},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			got, _ := json.Marshal(Decide(Request{Tool: "x_op", Kind: tt.kind}))
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("Decide(%s) = %s, want %s", tt.kind, got, want)
			}
		})
	}
	// A kind without a tool is still no operation.
	if d := Decide(Request{Kind: Readonly}); d.Mode != Reject || d.Reasons[0] != "unknown operation: the tool is empty" {
		t.Errorf("Decide(readonly, no tool) = %+v, want a rejection of the empty tool", d)
	}
	// A name the old switch knew decides nothing without its kind.
	if d := Decide(Request{Tool: "read_file"}); d.Mode != Reject {
		t.Errorf("Decide(read_file, unclassified) = %s, want reject", d.Mode)
	}
}

func TestKindNames(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if !k.Valid() {
			t.Errorf("Kinds() holds %d, which is not Valid", k)
		}
		s := k.String()
		if s == "unknown" || s == "unclassified" || seen[s] {
			t.Errorf("kind %d is named %q (empty, reserved or repeated)", k, s)
		}
		seen[s] = true
	}
	if Unclassified.Valid() || Kind(200).Valid() {
		t.Error("Unclassified and out-of-range kinds must not be Valid")
	}
	if got := Kind(200).String(); got != "unknown" {
		t.Errorf("Kind(200).String() = %q, want unknown", got)
	}
	if b, _ := json.Marshal(Request{Tool: "git_stage", Kind: IndexMutation}); !strings.Contains(string(b), `"kind":"index_mutation"`) {
		t.Errorf("Request JSON = %s, want the kind by name", b)
	}
}
