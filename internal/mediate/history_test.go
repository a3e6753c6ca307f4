package mediate

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/route"
)

func TestVersionQuery(t *testing.T) {
	tests := []struct {
		argv []string
		want bool
	}{
		{[]string{"node", "--version"}, true},
		{[]string{"python3", "--version"}, true},
		{[]string{"python3", "-V"}, true},
		{[]string{"java", "-version"}, true},
		{[]string{"go", "version"}, true},
		{[]string{"git", "version"}, true},
		{[]string{"docker", "version"}, true},
		{[]string{"cargo", "version"}, true},
		{[]string{"node", "version"}, false},    // runs ./version
		{[]string{"python3", "version"}, false}, // runs ./version
		{[]string{"make", "version"}, false},    // builds the target "version"
		{[]string{"npm", "version"}, false},     // bumps the package's version with an argument
		{[]string{"rm", "version"}, false},      // removes a file
		{[]string{"./tool", "--version"}, false},
		{[]string{"bin/tool", "--version"}, false},
		{[]string{"/usr/bin/node", "--version"}, false},
		{[]string{"node", "--version", "x.js"}, false},
		{[]string{"node"}, false},
		{[]string{"--version", "--version"}, false},
		{[]string{"", "--version"}, false},
		{[]string{"node", "-v"}, false}, // verbose for many programs
		{nil, false},
	}
	for _, tt := range tests {
		if got := VersionQuery(tt.argv); got != tt.want {
			t.Errorf("VersionQuery(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

func TestSubject(t *testing.T) {
	tests := []struct {
		tool        string
		argv, paths []string
		wantCommand string
		wantProgram string
	}{
		{"job_start", []string{"go", "vet", "./..."}, nil, "argv\x00go\x00vet\x00./...", "go vet"},
		{"run_command", []string{"go", "vet", "./..."}, nil, "argv\x00go\x00vet\x00./...", "go vet"}, // the same command through another tool
		{"run_command", []string{"/usr/bin/git", "log", "-5"}, nil, "argv\x00/usr/bin/git\x00log\x00-5", "git log"},
		{"job_start", []string{"python3", "x.py", ".env"}, nil, "argv\x00python3\x00x.py\x00.env", "python3"},
		{"job_start", []string{"npm", "run", "test:unit"}, nil, "argv\x00npm\x00run\x00test:unit", "npm run"},
		{"job_start", []string{"grep", "-rn", "x"}, nil, "argv\x00grep\x00-rn\x00x", "grep"},
		{"job_start", []string{"node", "--version"}, nil, "argv\x00node\x00--version", "node"},
		{"read_file", nil, []string{".env"}, "read_file\x00.env", ""},
		{"git_status", nil, nil, "git_status\x00", ""},
	}
	for _, tt := range tests {
		c, p := Subject(tt.tool, tt.argv, tt.paths)
		if c != tt.wantCommand || p != tt.wantProgram {
			t.Errorf("Subject(%s, %q, %q) = %q, %q; want %q, %q", tt.tool, tt.argv, tt.paths, c, p, tt.wantCommand, tt.wantProgram)
		}
	}
}

func TestDecay(t *testing.T) {
	tests := []struct {
		age  time.Duration
		want float64
	}{
		{-time.Minute, 1},
		{0, 1},
		{10 * time.Minute, 0.5},
		{20 * time.Minute, 0.25},
		{5 * time.Minute, 1 / math.Sqrt2},
		{24 * time.Hour, math.Exp2(-144)},
	}
	for _, tt := range tests {
		if got := Decay(1, tt.age); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Decay(1, %v) = %v, want %v", tt.age, got, tt.want)
		}
	}
}

// The decisions of the corpus (issue 28): benign work never made a job
// ask; a command refused again and again raises its own risk.
func TestDecideStableDecisions(t *testing.T) {
	pol := mustPolicy(t, `version: 1
rules:
  - id: ask-node
    tools: [job_start]
    argv_prefix: [node]
    decision: ask
`)
	tests := []struct {
		name     string
		in       Input
		want     Outcome
		wantRule string
		wantRisk int
		reason   string // substring
	}{
		// 4 no-match greps and 2 secret-path refusals of other commands
		// leave go vet and node without history of their own.
		// go vet and node --version are read-only (internal/classify).
		{name: "go vet after benign work", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"go", "vet", "./..."}}, want: Allow, wantRisk: 5},
		{name: "node --version after benign work", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"node", "--version"}}, want: Allow, wantRisk: 5},
		{name: "an unknown program after benign work", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"python3", "tools/check.py"}}, want: Allow, wantRisk: 60},
		{name: "npx after benign work", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"npx", "tsc", "--noEmit"}}, want: Allow, wantRisk: 60},
		// Version queries and read-only commands never ask because of risk.
		{name: "version query with full history", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"terraform", "--version"}, History: History{Command: 3, Program: 5}}, want: Allow, wantRisk: 80, reason: "allowed"},
		{name: "go version with full history", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"go", "version"}, History: History{Command: 3}}, want: Allow, wantRisk: 25}, // classified readonly
		{name: "read-only job with full history", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"ls", "-la"}, History: History{Command: 9}}, want: Allow, wantRisk: 25},
		{name: "read-only job near a CI path", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"cat", "Dockerfile"}, Paths: []string{"Dockerfile", "go.sum", "migrations/1.sql", ".github/workflows/ci.yml"}, History: History{Command: 9}}, want: Allow, wantRisk: 65},
		{name: "only a policy ask makes a version query ask", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"node", "--version"}, Policy: pol}, want: Ask, wantRule: "ask-node"},
		// A command refused three times (the same argv) asks for itself.
		{name: "a command refused 3 times asks", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"python3", "tools/dump.py"}, History: History{Command: 3}}, want: Ask, wantRule: RuleRisk, wantRisk: 80,
			reason: "history 20 (this command refused 3.0 times by this caller"},
		{name: "one refusal ten minutes ago does not", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"python3", "tools/dump.py"}, History: History{Command: 0.5}}, want: Allow, wantRisk: 65},
		{name: "four refusals of the program ask for a variant", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"python3", "tools/other.py"}, History: History{Program: 4, ProgramName: "python3"}}, want: Ask, wantRule: RuleRisk, wantRisk: 80,
			reason: `other "python3" commands refused 4.0 times`},
		{name: "a program path is no version query", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"./tool", "--version"}, History: History{Command: 2}}, want: Ask, wantRule: RuleRisk, wantRisk: 80},
		{name: "declared writes are not read-only", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"python3", "tools/check.py"}, Writes: true, History: History{Command: 2}}, want: Ask, wantRule: RuleRisk, wantRisk: 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.in)
			if d.Outcome != tt.want {
				t.Fatalf("Decide = %s (rule %q, risk %d: %s), want %s", d.Outcome, d.RuleID, d.Risk, d.Reason, tt.want)
			}
			if tt.wantRule != "" && d.RuleID != tt.wantRule {
				t.Errorf("RuleID = %q, want %q", d.RuleID, tt.wantRule)
			}
			if tt.wantRisk != 0 && d.Risk != tt.wantRisk {
				t.Errorf("Risk = %d, want %d (%s)", d.Risk, tt.wantRisk, d.Reason)
			}
			if tt.reason != "" && !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("Reason = %q, want it to contain %q", d.Reason, tt.reason)
			}
			if d.Outcome == Ask && d.RuleID == RuleRisk && !strings.Contains(d.Reason, " + ") {
				t.Errorf("risk ask reason %q does not name the score's parts", d.Reason)
			}
		})
	}
	if d := Decide(Input{Tool: "job_start", Kind: route.Job, Argv: []string{"rm", "-rf", "/"}, History: History{}}); d.Outcome != Block || d.Code != errs.RouteRejected {
		t.Errorf("rm -rf / = %s %s, want a route rejection", d.Outcome, d.Code)
	}
}

func TestExplain(t *testing.T) {
	tests := []struct {
		name       string
		in         Input
		wantRisk   int
		wantParts  []string // name=points
		wantExempt string
		wantAsks   bool
	}{
		{name: "unknown tool job", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"npx", "tsc", "--noEmit"}}, wantRisk: 60,
			wantParts: []string{"base=45", "mutation=15"}},
		{name: "refused job", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"python3", "x.py"}, History: History{Command: 2}}, wantRisk: 80,
			wantParts: []string{"base=45", "mutation=15", "history=20"}, wantAsks: true},
		{name: "version query", in: Input{Tool: "job_start", Kind: route.Job, Argv: []string{"terraform", "--version"}, History: History{Command: 2}}, wantRisk: 80,
			wantParts: []string{"base=45", "mutation=15", "history=20"}, wantExempt: ExemptVersionQuery},
		{name: "read", in: Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{"go.sum"}}, wantRisk: 15,
			wantParts: []string{"base=5", "lockfile path=10"}, wantExempt: ExemptReadOnly},
		{name: "readonly command", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"git", "log"}}, wantRisk: 5,
			wantParts: []string{"base=5"}, wantExempt: ExemptReadOnly},
		{name: "patch", in: Input{Tool: "apply_patch", Kind: route.Mutation, Paths: []string{"a.go"}}, wantRisk: 45,
			wantParts: []string{"base=30", "mutation=15"}},
		{name: "rejected", in: Input{Tool: "run_command", Kind: route.Command, Argv: []string{"rm", "-rf", "/"}}, wantRisk: 100,
			wantParts: []string{"base=95", "mutation=15"}, wantAsks: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Explain(tt.in)
			var parts []string
			sum := 0
			for _, p := range s.Parts {
				parts = append(parts, p.Name+"="+strconv.Itoa(p.Points))
				sum += p.Points
				if p.Why == "" {
					t.Errorf("part %s has no why", p.Name)
				}
			}
			if strings.Join(parts, ",") != strings.Join(tt.wantParts, ",") {
				t.Errorf("parts = %v, want %v", parts, tt.wantParts)
			}
			if s.Risk != tt.wantRisk || s.Risk != min(sum, 100) {
				t.Errorf("score = %d (parts sum %d), want %d", s.Risk, sum, tt.wantRisk)
			}
			if s.Exempt != tt.wantExempt || s.Asks != tt.wantAsks || s.AskAt != RiskAskThreshold {
				t.Errorf("exempt %q asks %v ask_at %d, want %q %v %d", s.Exempt, s.Asks, s.AskAt, tt.wantExempt, tt.wantAsks, RiskAskThreshold)
			}
			if d := Decide(tt.in); d.Risk != s.Risk {
				t.Errorf("Explain says %d, Decide %d", s.Risk, d.Risk)
			}
			if s.Text == "" {
				t.Error("no text")
			}
		})
	}
}
