package route

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func cmd(tool string, argv ...string) Request { return Request{Tool: tool, Argv: argv} }

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
		{name: "read_file", req: Request{Tool: "read_file"}, mode: Fast, tier: Direct, maxRisk: 10, est: Short},
		{name: "context_assemble", req: Request{Tool: "context_assemble"}, mode: Fast, tier: Direct, maxRisk: 10, est: Short},
		{name: "search", req: Request{Tool: "search"}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "git_status", req: Request{Tool: "git_status"}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "git_diff", req: Request{Tool: "git_diff"}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "route_explain", req: Request{Tool: "route_explain"}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "repository_register", req: Request{Tool: "repository_register"}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "repository_list", req: Request{Tool: "repository_list"}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "repository_unregister", req: Request{Tool: "repository_unregister"}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "job_status", req: Request{Tool: "job_status"}, mode: Fast, tier: Direct, maxRisk: 10},
		{name: "apply_patch", req: Request{Tool: "apply_patch"}, mode: Fast, tier: BoundedWork, minRisk: 20, maxRisk: 40, mutation: true},
		{name: "git_stage", req: Request{Tool: "git_stage"}, mode: Fast, tier: BoundedWork, minRisk: 20, maxRisk: 40, mutation: true},
		{name: "git_commit", req: Request{Tool: "git_commit"}, mode: Fast, tier: BoundedWork, minRisk: 20, maxRisk: 40, mutation: true},
		{name: "unknown tool", req: Request{Tool: "frobnicate"}, mode: Reject, tier: Direct, reason: "unknown operation"},
		{name: "empty tool", req: Request{}, mode: Reject, reason: "unknown operation"},
		{name: "readonly command", req: cmd("run_command", "git", "status", "--short"), mode: Fast, tier: Direct, maxRisk: 10, class: "readonly", est: Short},
		{name: "readonly at max timeout", req: Request{Tool: "run_command", Argv: []string{"ls"}, TimeoutMs: 15_000}, mode: Fast, class: "readonly"},
		{name: "readonly long timeout", req: Request{Tool: "run_command", Argv: []string{"ls"}, TimeoutMs: 60_000}, mode: Durable, reason: "above the Fast Path maximum of 15 s", est: Long},
		{name: "readonly background", req: Request{Tool: "run_command", Argv: []string{"ls"}, Background: true}, mode: Durable},
		{name: "negative timeout", req: Request{Tool: "run_command", Argv: []string{"ls"}, TimeoutMs: -1}, mode: Reject},
		{name: "workspace write", req: cmd("run_command", "touch", "x"), mode: Durable, tier: BoundedWork, recovery: true, mutation: true, class: "workspace_write"},
		{name: "go test points to run_check", req: cmd("run_command", "go", "test", "./..."), mode: Durable, tier: BoundedWork, recovery: true, mutation: true, class: "workspace_write", suggest: SuggestRunCheck, reason: "run them with run_check"},
		{name: "npm test points to run_check", req: cmd("run_command", "npm", "test"), mode: Durable, suggest: SuggestRunCheck},
		{name: "npm run test:unit points to run_check", req: cmd("run_command", "npm", "run", "test:unit"), mode: Durable, suggest: SuggestRunCheck},
		{name: "pytest points to run_check", req: cmd("run_command", "pytest", "-k", "x"), mode: Durable, suggest: SuggestRunCheck},
		{name: "python -m unittest points to run_check", req: cmd("run_command", "python3", "-m", "unittest"), mode: Durable, suggest: SuggestRunCheck},
		{name: "cargo test points to run_check", req: cmd("run_command", "cargo", "test"), mode: Durable, suggest: SuggestRunCheck},
		{name: "make test points to run_check", req: cmd("run_command", "make", "test"), mode: Durable, suggest: SuggestRunCheck},
		{name: "jest points to run_check", req: cmd("run_command", "jest"), mode: Durable, suggest: SuggestRunCheck},
		{name: "mocha points to run_check", req: cmd("run_command", "mocha"), mode: Durable, suggest: SuggestRunCheck},
		{name: "make build stays a job", req: cmd("run_command", "make", "build"), mode: Durable, class: "workspace_write"},
		{name: "go test as a job stays a job", req: cmd("job_start", "go", "test", "./..."), mode: Durable},
		{name: "go vet", req: cmd("run_command", "go", "vet", "./..."), mode: Fast, class: "readonly", maxRisk: 10},
		{name: "go build to /dev/null", req: cmd("run_command", "go", "build", "-o", "/dev/null", "./..."), mode: Fast, class: "readonly"},
		{name: "go build in the checkout", req: cmd("run_command", "go", "build", "./..."), mode: Durable, class: "workspace_write", reason: "-o /dev/null"},
		{name: "go build -toolexec", req: cmd("run_command", "go", "build", "-toolexec", "./x", "-o", "/dev/null", "."), mode: Durable, class: "unknown"},
		{name: "go vet -vettool", req: cmd("run_command", "go", "vet", "-vettool=./x", "."), mode: Durable, class: "unknown"},
		{name: "go list", req: cmd("run_command", "go", "list", "./..."), mode: Fast, class: "readonly"},
		{name: "go doc", req: cmd("run_command", "go", "doc", "fmt"), mode: Fast, class: "readonly"},
		{name: "go env -w", req: cmd("run_command", "go", "env", "-w", "GOFLAGS=-toolexec=./x"), mode: Durable, class: "workspace_write"},
		{name: "node --version", req: cmd("run_command", "node", "--version"), mode: Fast, class: "readonly"},
		{name: "python3 --version", req: cmd("run_command", "python3", "--version"), mode: Fast, class: "readonly"},
		{name: "npm ls", req: cmd("run_command", "npm", "ls"), mode: Fast, class: "readonly"},
		{name: "unknown command", req: cmd("run_command", "python", "x.py"), mode: Durable, recovery: true, class: "unknown", minRisk: 50},
		{name: "sed -i", req: cmd("run_command", "sed", "-i", "s/a/b/", "f"), mode: Durable, class: "workspace_write"},
		{name: "destructive", req: cmd("run_command", "rm", "-rf", "/"), mode: Reject, minRisk: 90, class: "destructive"},
		{name: "reset hard", req: cmd("run_command", "git", "reset", "--hard"), mode: Reject, minRisk: 90},
		{name: "timeout wrapper", req: cmd("run_command", "timeout", "5", "rm", "-rf", "/"), mode: Reject, minRisk: 90},
		{name: "remote push", req: cmd("run_command", "git", "push"), mode: Reject, minRisk: 70, maxRisk: 89, class: "remote", reason: "git push writes to a remote"},
		{name: "remote curl", req: cmd("run_command", "curl", "-d", "x", "http://h"), mode: Reject, minRisk: 70, reason: "curl upload"},
		{name: "shell unsafe", req: cmd("run_command", "bash", "-c", "echo $(id)"), mode: Reject, class: "shell", reason: "cannot be proven safe"},
		{name: "shell readonly", req: cmd("run_command", "bash", "-c", "git log --oneline | head -5"), mode: Fast, class: "readonly"},
		{name: "empty argv", req: Request{Tool: "run_command"}, mode: Reject, reason: "argv is empty"},
		{name: "git -c", req: cmd("run_command", "git", "-c", "core.pager=x", "log"), mode: Durable, class: "unknown"},
		{name: "focused check", req: cmd("run_check", "go", "test", "./pkg/x"), mode: Fast, tier: BoundedWork, est: Short},
		{name: "focused check -run", req: cmd("run_check", "go", "test", "-run", "TestY", "./..."), mode: Fast},
		{name: "unfocused check", req: cmd("run_check", "go", "test", "./..."), mode: Durable, tier: BoundedWork, est: Long, reason: "unfocused"},
		{name: "unfocused make", req: cmd("run_check", "make", "test"), mode: Durable},
		{name: "focused check long timeout", req: Request{Tool: "run_check", Argv: []string{"go", "test", "./x"}, TimeoutMs: 120_000}, mode: Durable},
		{name: "check empty argv", req: Request{Tool: "run_check"}, mode: Reject},
		{name: "check destructive", req: cmd("run_check", "rm", "-rf", "."), mode: Reject},
		{name: "job_start", req: cmd("job_start", "go", "test", "./..."), mode: Durable, recovery: true, mutation: true},
		{name: "job_start writes", req: Request{Tool: "job_start", Argv: []string{"make"}, Writes: true}, mode: Durable, recovery: true, isolation: true, mutation: true},
		{name: "job_start readonly", req: cmd("job_start", "ls"), mode: Durable, recovery: true},
		{name: "job_start destructive", req: cmd("job_start", "git", "clean", "-fdx"), mode: Reject, minRisk: 90},
		{name: "job_start empty", req: Request{Tool: "job_start"}, mode: Reject},
		{name: "campaign", req: Request{Tool: "job_start", Argv: []string{"make"}, Deliverables: 2}, mode: Durable, tier: Campaign},
		{name: "batch fast", req: Request{Tool: "batch", Steps: []Request{{Tool: "read_file"}, cmd("run_command", "ls")}}, mode: Fast, tier: BoundedWork},
		{name: "batch mutation", req: Request{Tool: "batch", Steps: []Request{{Tool: "read_file"}, {Tool: "apply_patch"}}}, mode: Fast, tier: BoundedWork, mutation: true},
		{name: "batch durable", req: Request{Tool: "batch", Steps: []Request{{Tool: "read_file"}, cmd("run_command", "make")}}, mode: Durable, reason: "step 2 (run_command)"},
		{name: "batch reject", req: Request{Tool: "batch", Steps: []Request{{Tool: "read_file"}, {Tool: "search"}, cmd("run_command", "rm", "-rf", "/")}}, mode: Reject, reason: "step 3 (run_command): ", minRisk: 90},
		{name: "batch empty", req: Request{Tool: "batch"}, mode: Reject},
		{name: "batch nested", req: Request{Tool: "batch", Steps: []Request{{Tool: "batch", Steps: []Request{{Tool: "read_file"}}}}}, mode: Reject, reason: "step 1 (batch)"},
		{name: "batch too long", req: Request{Tool: "batch", Steps: make([]Request, MaxBatchSteps+1)}, mode: Reject},
		{name: "batch campaign", req: Request{Tool: "batch", Deliverables: 3, Steps: []Request{{Tool: "read_file"}}}, mode: Fast, tier: Campaign},
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
		{"fast", Request{Tool: "read_file"}, ""},
		{"durable", cmd("run_command", "make"), errs.RouteDurableRequired},
		{"test command", cmd("run_command", "go", "test", "./..."), errs.RouteDurableRequired},
		{"reject", cmd("run_command", "rm", "-rf", "/"), errs.RouteRejected},
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
	b, err := json.Marshal(Decide(Request{Tool: "read_file"}))
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
	req := Request{Tool: "read_file"}
	b.ReportAllocs()
	for b.Loop() {
		if Decide(req).Mode != Fast {
			b.Fatal("not fast")
		}
	}
}

func BenchmarkDecideRunCommand(b *testing.B) {
	req := Request{Tool: "run_command", Argv: []string{"git", "status", "--short"}}
	b.ReportAllocs()
	for b.Loop() {
		if Decide(req).Mode != Fast {
			b.Fatal("not fast")
		}
	}
}
