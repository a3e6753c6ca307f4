package mediate

import (
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/route"
)

// RiskAskThreshold is the score from which an operation needs approval.
const RiskAskThreshold = 80

// classBase is the risk base of each command class.
var classBase = map[string]int{
	"readonly":        5,
	"workspace_write": 30,
	"unknown":         45,
	"shell":           60,
	"remote":          75,
	"destructive":     95,
}

// The kinds of sensitive paths, in scoring order.
const (
	KindLockfile  = "lockfile"
	KindMigration = "migration"
	KindCI        = "ci"
	KindContainer = "container"
)

var sensitiveKinds = [...]string{KindLockfile, KindMigration, KindCI, KindContainer}

// lockNames are lockfiles whose names do not end in ".lock" (lower case).
var lockNames = map[string]bool{
	"go.sum": true, "go.work.sum": true, "package-lock.json": true, "npm-shrinkwrap.json": true,
	"pnpm-lock.yaml": true, "bun.lockb": true, "gradle.lockfile": true, "packages.lock.json": true,
	"pdm.lock": true, "requirements.lock": true,
}

var migrationDirs = []string{"migrations", "migration", "migrate"}

// ciPrefixes are CI configuration directories, matched at the root or below
// any directory.
var ciPrefixes = []string{".github/workflows/", ".github/actions/", ".circleci/", ".buildkite/", ".gitlab/ci/", ".woodpecker/"}

var ciNames = []string{".gitlab-ci.yml", ".gitlab-ci.yaml", "jenkinsfile", ".travis.yml", "azure-pipelines.yml",
	"azure-pipelines.yaml", "bitbucket-pipelines.yml", ".drone.yml", "appveyor.yml", "cloudbuild.yaml",
	"cloudbuild.yml", ".woodpecker.yml"}

// SensitiveKind returns the kind of sensitive path p is (KindLockfile,
// KindMigration, KindCI or KindContainer), or "" if it is none. Names are
// compared case-insensitively:
//
//   - lockfile: a base name ending in ".lock" (yarn.lock, Cargo.lock,
//     Gemfile.lock, poetry.lock, ...) or go.sum, go.work.sum,
//     package-lock.json, npm-shrinkwrap.json, pnpm-lock.yaml, bun.lockb,
//     gradle.lockfile, packages.lock.json, pdm.lock, requirements.lock;
//   - migration: a file under a directory named migrations, migration or
//     migrate;
//   - ci: a file under .github/workflows, .github/actions, .circleci,
//     .buildkite, .gitlab/ci or .woodpecker, or named .gitlab-ci.yml,
//     Jenkinsfile, .travis.yml, azure-pipelines.yml, bitbucket-pipelines.yml,
//     .drone.yml, appveyor.yml, cloudbuild.yaml or .woodpecker.yml;
//   - container: Dockerfile, Dockerfile.*, *.dockerfile, Containerfile,
//     docker-compose*.yml/yaml, compose.yml/yaml.
func SensitiveKind(p string) string {
	p = strings.TrimPrefix(p, "./")
	dir, base := "", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, base = p[:i+1], p[i+1:]
	}
	if base == "" {
		return ""
	}
	switch {
	case hasSuffixFold(base, ".lock") || lockNames[lowerASCII(base)]:
		return KindLockfile
	case hasDirFold(dir, migrationDirs):
		return KindMigration
	case isCI(p, base):
		return KindCI
	case isContainer(base):
		return KindContainer
	}
	return ""
}

func isCI(p, base string) bool {
	// Every CI directory starts with '.', so only segments starting with one
	// need a closer look.
	for start := 0; start < len(p); {
		if p[start] == '.' {
			for _, pre := range ciPrefixes {
				if hasPrefixFold(p[start:], pre) {
					return true
				}
			}
		}
		i := strings.IndexByte(p[start:], '/')
		if i < 0 {
			break
		}
		start += i + 1
	}
	for _, n := range ciNames {
		if strings.EqualFold(base, n) {
			return true
		}
	}
	return false
}

func isContainer(base string) bool {
	switch {
	case strings.EqualFold(base, "dockerfile"), strings.EqualFold(base, "containerfile"),
		hasPrefixFold(base, "dockerfile."), hasSuffixFold(base, ".dockerfile"):
		return true
	case hasPrefixFold(base, "docker-compose") && (hasSuffixFold(base, ".yml") || hasSuffixFold(base, ".yaml")):
		return true
	case strings.EqualFold(base, "compose.yml"), strings.EqualFold(base, "compose.yaml"):
		return true
	}
	return false
}

// hasDirFold reports whether dir ("a/b/", possibly "") has a component equal
// to one of names.
func hasDirFold(dir string, names []string) bool {
	for dir != "" {
		i := strings.IndexByte(dir, '/')
		if i < 0 {
			i = len(dir)
		}
		seg := dir[:i]
		for _, n := range names {
			if strings.EqualFold(seg, n) {
				return true
			}
		}
		if i == len(dir) {
			break
		}
		dir = dir[i+1:]
	}
	return false
}

func hasSuffixFold(s, suf string) bool {
	return len(s) >= len(suf) && strings.EqualFold(s[len(s)-len(suf):], suf)
}

func hasPrefixFold(s, pre string) bool {
	return len(s) >= len(pre) && strings.EqualFold(s[:len(pre)], pre)
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}

// History scoring: a refusal of this very command weighs
// HistoryCommandPoints, a refusal of another command of the same program
// and subcommand HistoryProgramPoints, each decayed with a half-life of
// HistoryHalfLife; the sum is rounded and capped at HistoryCap.
const (
	HistoryCommandPoints = 10
	HistoryProgramPoints = 5
	HistoryCap           = 20
	HistoryHalfLife      = 10 * time.Minute
)

// Decay returns what a weight of v noted age ago weighs now: v halves every
// HistoryHalfLife (a negative age counts as none).
func Decay(v float64, age time.Duration) float64 {
	if age <= 0 {
		return v
	}
	return v * math.Exp2(-float64(age)/float64(HistoryHalfLife))
}

// Subject names what refusal history is kept for. command is the exact
// command: its argv, whatever tool ran it (run_command, job_start,
// run_check, a batch step), or for an operation without argv its tool and
// paths. program is the program and its subcommand ("go vet" for
// ["go","vet","./..."], "python3" for ["python3","x.py"]: a subcommand is
// a second word made of letters, digits, '-', '_' and ':', starting with a
// letter), "" for an operation without argv.
func Subject(tool string, argv, paths []string) (command, program string) {
	if len(argv) == 0 {
		return tool + "\x00" + strings.Join(paths, "\x00"), ""
	}
	return "argv\x00" + strings.Join(argv, "\x00"), Program(argv)
}

// Program returns the program and subcommand of argv (see [Subject]).
func Program(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	prog := path.Base(argv[0])
	if len(argv) > 1 && isSubcommand(argv[1]) {
		return prog + " " + argv[1]
	}
	return prog
}

func isSubcommand(w string) bool {
	if w == "" || !isLetter(w[0]) {
		return false
	}
	for i := 1; i < len(w); i++ {
		if c := w[i]; !isLetter(c) && (c < '0' || c > '9') && c != '-' && c != '_' && c != ':' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// versionSubcommand lists the programs whose `version` subcommand only
// prints versions. For others `x version` may mean something else entirely
// (node and python3 run a file named version, make builds a target, npm
// and yarn bump the package's version, rm removes a file).
var versionSubcommand = map[string]bool{
	"go": true, "git": true, "docker": true, "podman": true, "kubectl": true, "helm": true, "terraform": true,
	"tofu": true, "cargo": true, "rustup": true, "dotnet": true, "dart": true, "flutter": true, "gh": true,
	"hugo": true, "bazel": true, "bazelisk": true, "buf": true, "golangci-lint": true, "goreleaser": true,
	"ruff": true, "poetry": true, "uv": true, "conda": true, "kind": true, "minikube": true,
}

// VersionQuery reports whether argv only asks a program for its version:
// exactly a program found on PATH (a bare name, no '/') and one of
// --version, -V or -version, or `version` for the programs whose version
// subcommand only prints versions (go, git, docker, kubectl, cargo, ...).
// A program given by path (./tool --version) runs the repository's code
// and is no version query.
func VersionQuery(argv []string) bool {
	if len(argv) != 2 || argv[0] == "" || argv[0][0] == '-' || strings.ContainsAny(argv[0], "/\x00") {
		return false
	}
	switch argv[1] {
	case "--version", "-V", "-version":
		return true
	case "version":
		return versionSubcommand[argv[0]]
	}
	return false
}

// The exemptions from risk asks.
const (
	ExemptReadOnly     = "read-only"
	ExemptVersionQuery = "version query"
)

// exemption says why an operation never asks because of its risk score
// ("" = it may): a version query, or an operation that writes nothing (no
// mutation, no declared writes, and no command or a readonly one). A
// rejected route is never exempt (it is blocked anyway).
func exemption(in *Input, r *route.Decision) string {
	switch {
	case r.Mode == route.Reject:
		return ""
	case VersionQuery(in.Argv):
		return ExemptVersionQuery
	case !r.Mutation && !in.Writes && (r.CommandClass == "" || r.CommandClass == "readonly"):
		return ExemptReadOnly
	}
	return ""
}

// Part is one term of a risk score.
type Part struct {
	// Name is "base", "mutation", "lockfile path", "migration path",
	// "ci path", "container path" or "history".
	Name   string `json:"name"`
	Points int    `json:"points"`
	Why    string `json:"why"`
}

// Score is a risk score with its parts, as route_explain shows it.
type Score struct {
	Risk  int    `json:"score"` // 0-100: the sum of the parts, clamped
	Parts []Part `json:"parts"`
	// AskAt is the score from which an operation asks (RiskAskThreshold).
	AskAt int `json:"ask_at"`
	// Exempt says why this operation never asks because of its score
	// (ExemptReadOnly, ExemptVersionQuery); only a policy ask rule can make
	// it ask.
	Exempt string `json:"exempt,omitempty"`
	// Asks says the score alone asks for a person: Risk >= AskAt and not
	// Exempt. A policy allow rule or an approval still lets it run, and a
	// policy rule, the route or a loop may decide first.
	Asks bool `json:"asks"`
	// Text is the one-line form the reason of a risk ask carries.
	Text string `json:"text"`
}

// riskParts is the breakdown of a risk score.
type riskParts struct {
	base      int
	baseWhat  string
	mutation  int
	sensitive []string // kinds touched, in scoring order
	history   int
	hist      History
	exempt    string
}

func (p riskParts) total() int {
	return min(max(p.base+p.mutation+10*len(p.sensitive)+p.history, 0), 100)
}

// String renders the breakdown, e.g. "unknown command 45 + mutation 15 +
// lockfile path 10 + history 20 (this command refused 2.0 times by this
// caller, decayed: 10 each)".
func (p riskParts) String() string {
	var b strings.Builder
	b.WriteString(p.baseWhat)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(p.base))
	if p.mutation > 0 {
		b.WriteString(" + mutation ")
		b.WriteString(strconv.Itoa(p.mutation))
	}
	for _, k := range p.sensitive {
		b.WriteString(" + ")
		b.WriteString(k)
		b.WriteString(" path 10")
	}
	if p.history > 0 {
		b.WriteString(" + history ")
		b.WriteString(strconv.Itoa(p.history))
		b.WriteString(" (")
		b.WriteString(p.hist.why())
		b.WriteByte(')')
	}
	return b.String()
}

// why says where history points come from.
func (h History) why() string {
	var parts []string
	if c := clean(h.Command); c > 0 {
		parts = append(parts, "this command refused "+strconv.FormatFloat(c, 'f', 1, 64)+" times by this caller, decayed: "+strconv.Itoa(HistoryCommandPoints)+" each")
	}
	if p := clean(h.Program); p > 0 {
		what := "other commands of this program"
		if h.ProgramName != "" {
			what = "other " + strconv.Quote(h.ProgramName) + " commands"
		}
		parts = append(parts, what+" refused "+strconv.FormatFloat(p, 'f', 1, 64)+" times by this caller, decayed: "+strconv.Itoa(HistoryProgramPoints)+" each")
	}
	if len(parts) == 0 {
		return "no recent refusals"
	}
	return strings.Join(parts, "; ") + "; capped at " + strconv.Itoa(HistoryCap) + ", half-life " + HistoryHalfLife.String()
}

// clean maps NaN, infinities and negative counts to 0 and caps huge ones.
func clean(v float64) float64 {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v > 1e6:
		return 1e6
	}
	return v
}

// points is the history part of the score.
func (h History) points() int {
	v := clean(h.Command)*HistoryCommandPoints + clean(h.Program)*HistoryProgramPoints
	return int(min(math.Round(v), HistoryCap))
}

// score renders the parts as a Score.
func (p riskParts) score() Score {
	s := Score{Risk: p.total(), AskAt: RiskAskThreshold, Exempt: p.exempt, Text: p.String()}
	s.Asks = s.Risk >= RiskAskThreshold && s.Exempt == ""
	s.Parts = append(s.Parts, Part{Name: "base", Points: p.base, Why: p.baseWhat})
	if p.mutation > 0 {
		s.Parts = append(s.Parts, Part{Name: "mutation", Points: p.mutation, Why: "the operation changes the workspace (a mutating route or declared writes)"})
	}
	for _, k := range p.sensitive {
		s.Parts = append(s.Parts, Part{Name: k + " path", Points: 10, Why: "it touches a " + k + " path"})
	}
	if p.history > 0 {
		s.Parts = append(s.Parts, Part{Name: "history", Points: p.history, Why: p.hist.why()})
	}
	return s
}

func computeRisk(in *Input, r *route.Decision) riskParts {
	var p riskParts
	switch base, ok := classBase[r.CommandClass]; {
	case ok:
		p.base, p.baseWhat = base, r.CommandClass+" command"
	case r.CommandClass != "":
		p.base, p.baseWhat = classBase["unknown"], "unrecognised command class "+strconv.Quote(r.CommandClass)
	case r.Mode == route.Reject:
		p.base, p.baseWhat = 45, "rejected operation"
	case r.Mutation:
		p.base, p.baseWhat = 30, "mutating operation"
	default:
		p.base, p.baseWhat = 5, "readonly operation"
	}
	if r.Mutation || in.Writes {
		p.mutation = 15
	}
	if len(in.Paths) > 0 {
		var seen [len(sensitiveKinds)]bool
		for _, path := range in.Paths {
			if k := SensitiveKind(path); k != "" {
				for i, s := range sensitiveKinds {
					if s == k {
						seen[i] = true
					}
				}
			}
		}
		for i, ok := range seen {
			if ok {
				p.sensitive = append(p.sensitive, sensitiveKinds[i])
			}
		}
	}
	p.hist = in.History
	p.history = in.History.points()
	p.exempt = exemption(in, r)
	return p
}

// Risk returns the 0-100 risk score of in routed as r (the formula is in the
// package documentation).
func Risk(in Input, r route.Decision) int {
	return computeRisk(&in, &r).total()
}

// Explain returns the risk score of in with its parts, routing it as
// Decide does when in.Route is nil. Paths are not scope-checked here.
func Explain(in Input) Score {
	var r route.Decision
	if in.Route != nil {
		r = *in.Route
	} else {
		r = route.Decide(route.Request{Tool: in.Tool, Kind: in.Kind, Argv: in.Argv, TimeoutMs: in.TimeoutMs, Writes: in.Writes, Confined: in.Confined})
	}
	return computeRisk(&in, &r).score()
}
