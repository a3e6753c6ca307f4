package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// corpus is testdata/corpus.json.
type corpus struct {
	Comment  []string  `json:"comment"`
	Projects []project `json:"projects"`
}

// project is one real project of the corpus.
type project struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`   // go or npm
	Module  string `json:"module"` // Go module path or npm package name
	Version string `json:"version"`
	Habits  string `json:"habits"`
	// Install runs npm install (devDependencies too) before harnessd
	// touches the project; Go projects always get `go mod download`.
	Install bool `json:"install,omitempty"`
	// Suite is the full suite's argv (default `go test ./...`).
	Suite []string `json:"suite,omitempty"`
	// Check is a focused test for run_check.
	Check  []string `json:"check"`
	Grep   string   `json:"grep"`
	Search []string `json:"search"`
	Wc     []string `json:"wc"`
	Patch  string   `json:"patch"`
	// DaemonArgs are options a person must give the daemon for this
	// project; every row shows them.
	DaemonArgs []string `json:"daemon_args,omitempty"`
	// SecretExceptions are paths a person takes off the denylist for this
	// repository (policy secret_exceptions): test fixtures.
	SecretExceptions *secretExceptions `json:"secret_exceptions,omitempty"`
	// Exceptions maps an action to the measured reason it differs.
	Exceptions map[string]string `json:"exceptions,omitempty"`
	// Varies maps an action to why its outcome varies from run to run or
	// machine to machine (load, running as root): it is shown, never
	// failed. The goal is none.
	Varies map[string]string `json:"varies,omitempty"`
}

type secretExceptions struct {
	Paths         []string `json:"paths"`
	Justification string   `json:"justification"`
}

// writePolicy writes the person's policy for p into the fresh data dir:
// its secret exceptions, if any.
func writePolicy(dataDir string, p project, root string) error {
	if p.SecretExceptions == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("version: 1\nsecret_exceptions:\n")
	fmt.Fprintf(&b, "  - repo: %q\n    paths: [", root)
	for i, g := range p.SecretExceptions.Paths {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", g)
	}
	fmt.Fprintf(&b, "]\n    justification: %q\n", p.SecretExceptions.Justification)
	return os.WriteFile(filepath.Join(dataDir, "policy.yaml"), []byte(b.String()), 0o600)
}

func loadCorpus(path string) (*corpus, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c corpus
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, p := range c.Projects {
		switch {
		case p.Name == "" || seen[p.Name]:
			return nil, fmt.Errorf("%s: project name %q empty or repeated", path, p.Name)
		case p.Kind != "go" && p.Kind != "npm":
			return nil, fmt.Errorf("%s: %s: kind %q, want go or npm", path, p.Name, p.Kind)
		case p.Module == "" || p.Version == "" || len(p.Check) == 0 || p.Grep == "" || len(p.Search) == 0 || len(p.Wc) == 0 || p.Patch == "":
			return nil, fmt.Errorf("%s: %s: module, version, check, grep, search, wc and patch are required", path, p.Name)
		}
		seen[p.Name] = true
		for _, m := range []map[string]string{p.Exceptions, p.Varies} {
			for a := range m {
				if !isAction(a) {
					return nil, fmt.Errorf("%s: %s: exception for unknown action %q (actions: %s)", path, p.Name, a, strings.Join(actionIDs(), ", "))
				}
			}
		}
		for a := range p.Varies {
			if _, both := p.Exceptions[a]; both {
				return nil, fmt.Errorf("%s: %s: %q is both an exception and varies", path, p.Name, a)
			}
		}
	}
	return &c, nil
}

func (p project) suiteArgv() []string {
	if len(p.Suite) > 0 {
		return p.Suite
	}
	if p.Kind == "npm" {
		return []string{"npm", "test"}
	}
	return []string{"go", "test", "./..."}
}

// checkVArgv is the focused check with -v (Go only).
func (p project) checkVArgv() []string {
	if p.Kind != "go" || len(p.Check) < 2 {
		return nil
	}
	return append([]string{p.Check[0], p.Check[1], "-v"}, p.Check[2:]...)
}

// errUnreachable marks a project whose registry could not be reached.
var errUnreachable = errors.New("registry unreachable")

// fixedGitEnv makes the initial commit the same object in every copy:
// no user or system config, a fixed identity and date.
func fixedGitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=compat corpus", "GIT_AUTHOR_EMAIL=corpus@harnessd.invalid",
		"GIT_COMMITTER_NAME=compat corpus", "GIT_COMMITTER_EMAIL=corpus@harnessd.invalid",
		"GIT_AUTHOR_DATE=2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2025-01-01T00:00:00Z",
	)
}

// run runs argv in dir with env and returns combined output on failure.
func run(ctx context.Context, dir string, env []string, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, tail(out.String(), 2000))
	}
	return out.String(), nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// prepare fetches p into dir/src/<name>, makes it a repository with one
// commit and gives it its dependencies directly. It returns the pristine
// copy's path.
func prepare(ctx context.Context, p project, dir string) (string, error) {
	src := filepath.Join(dir, "src", p.Name)
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return "", err
	}
	env := os.Environ()
	switch p.Kind {
	case "go":
		out, err := run(ctx, dir, env, "go", "mod", "download", "-json", p.Module+"@"+p.Version)
		if err != nil {
			return "", fmt.Errorf("%w: %v", errUnreachable, err)
		}
		var info struct{ Dir, Error string }
		if err := json.Unmarshal([]byte(out), &info); err != nil || info.Dir == "" {
			return "", fmt.Errorf("%w: go mod download %s@%s: %s %v", errUnreachable, p.Module, p.Version, info.Error, err)
		}
		if _, err := run(ctx, dir, env, "cp", "-R", info.Dir, src); err != nil {
			return "", err
		}
	case "npm":
		if _, err := exec.LookPath("npm"); err != nil {
			return "", fmt.Errorf("%w: npm is not installed (.ci/run installs it)", errUnreachable)
		}
		pack := filepath.Join(dir, "pack", p.Name)
		if err := os.MkdirAll(pack, 0o755); err != nil {
			return "", err
		}
		out, err := run(ctx, pack, env, "npm", "pack", "--silent", p.Module+"@"+p.Version)
		if err != nil {
			return "", fmt.Errorf("%w: %v", errUnreachable, err)
		}
		tgz := filepath.Join(pack, strings.TrimSpace(lastLine(out)))
		if err := os.MkdirAll(src, 0o755); err != nil {
			return "", err
		}
		if _, err := run(ctx, src, env, "tar", "-xzf", tgz, "--strip-components=1"); err != nil {
			return "", err
		}
	}
	if _, err := run(ctx, src, env, "chmod", "-R", "u+w", "."); err != nil {
		return "", err
	}
	genv := fixedGitEnv()
	for _, argv := range [][]string{
		{"git", "init", "-q", "-b", "main"},
		// The project's own identity: harnessd's git_commit and the direct
		// commit both commit as it.
		{"git", "config", "user.name", "compat corpus"},
		{"git", "config", "user.email", "corpus@harnessd.invalid"},
	} {
		if _, err := run(ctx, src, genv, argv...); err != nil {
			return "", err
		}
	}
	// Dependencies and test output stay out of the repository, as every
	// npm project's .gitignore would say.
	if err := os.WriteFile(filepath.Join(src, ".git", "info", "exclude"), []byte("node_modules/\n.nyc_output/\ncoverage/\n"), 0o644); err != nil {
		return "", err
	}
	for _, argv := range [][]string{
		{"git", "add", "-A"},
		{"git", "commit", "-q", "-m", p.Module + " " + p.Version},
	} {
		if _, err := run(ctx, src, genv, argv...); err != nil {
			return "", err
		}
	}
	switch p.Kind {
	case "go":
		// Everything the tests, vet and list need, into the module cache,
		// before harnessd sees the project (its sandbox has no network).
		if _, err := run(ctx, src, env, "go", "mod", "download"); err != nil {
			return "", fmt.Errorf("%w: %v", errUnreachable, err)
		}
		if _, err := run(ctx, src, env, "go", "list", "-deps", "-test", "./..."); err != nil {
			return "", fmt.Errorf("%w: %v", errUnreachable, err)
		}
	case "npm":
		if p.Install {
			if _, err := run(ctx, src, env, "npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-package-lock"); err != nil {
				return "", fmt.Errorf("%w: %v", errUnreachable, err)
			}
		}
	}
	return src, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// copyTree copies the pristine project to dst (same basename, so tests
// that look at their directory's name see the same one), keeping modes
// and times.
func copyTree(ctx context.Context, src, dst string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if _, err := run(ctx, filepath.Dir(dst), os.Environ(), "cp", "-a", src, dst); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dst)
}

// trackedFiles lists the repository's tracked files.
func trackedFiles(ctx context.Context, root string) ([]string, error) {
	return gitFiles(ctx, root, "ls-files", "-z")
}

// searchableFiles lists tracked and untracked non-ignored files: what
// harnessd's search covers.
func searchableFiles(ctx context.Context, root string) ([]string, error) {
	return gitFiles(ctx, root, "ls-files", "-z", "-co", "--exclude-standard")
}

func gitFiles(ctx context.Context, root string, args ...string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = root
	cmd.Env = fixedGitEnv()
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if st, err := os.Lstat(filepath.Join(root, f)); err != nil || !st.Mode().IsRegular() {
			continue // a symlink or a deleted file: not a file to read
		}
		files = append(files, f)
	}
	sort.Strings(files)
	return files, nil
}

// withTimeout is context.WithTimeout with a shorter name for the many
// bounded steps.
func withTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func TestManifest(t *testing.T) {
	c, err := loadCorpus(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	goMods, npms := 0, 0
	for _, p := range c.Projects {
		switch p.Kind {
		case "go":
			goMods++
		case "npm":
			npms++
		}
	}
	if goMods < 10 || npms < 1 {
		t.Fatalf("the corpus has %d Go modules and %d npm packages, want at least 10 and 1", goMods, npms)
	}
	bad := []struct{ name, json, want string }{
		{"unknown action", `{"projects":[{"name":"a","kind":"go","module":"m","version":"v1","check":["go"],"grep":"x","search":["x"],"wc":["a"],"patch":"a","exceptions":{"tests":"r"}}]}`, "unknown action"},
		{"both", `{"projects":[{"name":"a","kind":"go","module":"m","version":"v1","check":["go"],"grep":"x","search":["x"],"wc":["a"],"patch":"a","exceptions":{"suite":"r"},"varies":{"suite":"r"}}]}`, "both an exception and varies"},
		{"kind", `{"projects":[{"name":"a","kind":"pip","module":"m","version":"v1","check":["go"],"grep":"x","search":["x"],"wc":["a"],"patch":"a"}]}`, "kind"},
		{"repeated", `{"projects":[{"name":"a","kind":"go","module":"m","version":"v1","check":["go"],"grep":"x","search":["x"],"wc":["a"],"patch":"a"},{"name":"a","kind":"go","module":"m","version":"v1","check":["go"],"grep":"x","search":["x"],"wc":["a"],"patch":"a"}]}`, "repeated"},
		{"missing", `{"projects":[{"name":"a","kind":"go","module":"m","version":"v1"}]}`, "required"},
		{"unknown field", `{"projects":[{"name":"a","kind":"go","modul":"m"}]}`, "unknown field"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "corpus.json")
			if err := os.WriteFile(p, []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := loadCorpus(p); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("loadCorpus = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestCommitHelpers(t *testing.T) {
	if got := uniqueLine("# x\n\nA line that occurs once\nrepeated line\nrepeated line\n"); got != "A line that occurs once" {
		t.Fatalf("uniqueLine = %q", got)
	}
	msg := "compat: a benign edit\n\nbody\n\nHarnessd-Receipt: rcpt_1\nHarnessd-Repo: repo_1\n"
	if got := stripTrailers(msg); got != "compat: a benign edit\n\nbody" {
		t.Fatalf("stripTrailers = %q", got)
	}
}
