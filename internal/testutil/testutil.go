// Package testutil holds helpers shared by harnessd's tests: throw-away git
// repositories and built binaries.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// GitEnv is the environment for git commands in tests: no user or system
// config, a fixed identity.
func GitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=harnessd test", "GIT_AUTHOR_EMAIL=test@harnessd.invalid",
		"GIT_COMMITTER_NAME=harnessd test", "GIT_COMMITTER_EMAIL=test@harnessd.invalid",
	)
}

// Git runs git in dir and returns its trimmed stdout.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = GitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo creates a git repository with the given files committed and returns
// its canonical root.
func Repo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", "main")
	// harnessd's own git calls do not see the test's environment identity.
	Git(t, dir, "config", "user.name", "harnessd test")
	Git(t, dir, "config", "user.email", "test@harnessd.invalid")
	for name, body := range files {
		WriteFile(t, dir, name, body)
	}
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	return dir
}

// WriteFile writes dir/name (creating parents).
func WriteFile(t testing.TB, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BuildBinaries builds ./cmd/harnessd and ./cmd/harness into dir and returns
// their paths. root is the module root.
func BuildBinaries(root, dir string) (harnessd, harness string, err error) {
	harnessd = filepath.Join(dir, "harnessd")
	harness = filepath.Join(dir, "harness")
	for bin, pkg := range map[string]string{harnessd: "./cmd/harnessd", harness: "./cmd/harness"} {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", &buildError{pkg: pkg, out: string(out), err: err}
		}
	}
	return harnessd, harness, nil
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

// PidByCmdline returns the pid of the process whose command line is
// cmdline (NUL-separated, as in /proc/<pid>/cmdline), or 0. Tests find a
// job's processes by it: in a pid namespace the pid a process prints means
// nothing outside.
func PidByCmdline(cmdline string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == cmdline {
			return pid
		}
	}
	return 0
}
