package mediate

import (
	"strconv"
	"strings"

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

// riskParts is the breakdown of a risk score.
type riskParts struct {
	base      int
	baseWhat  string
	mutation  int
	sensitive []string // kinds touched, in scoring order
	history   int
}

func (p riskParts) total() int {
	return min(max(p.base+p.mutation+10*len(p.sensitive)+p.history, 0), 100)
}

// String renders the breakdown, e.g. "unknown command 45 + mutation 15 +
// lockfile 10 + history 20".
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
	}
	return b.String()
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
	h := in.History
	f := min(max(h.RecentFailures, 0), 4)
	rj := min(max(h.RecentRejections, 0), 2)
	p.history = min(f*5+rj*10, 20)
	return p
}

// Risk returns the 0-100 risk score of in routed as r (the formula is in the
// package documentation).
func Risk(in Input, r route.Decision) int {
	return computeRisk(&in, &r).total()
}
