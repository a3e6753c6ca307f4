package harness_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// codePayload is a program an attacker hands to a build (-toolexec,
// -vettool, -exec, an external linker, a Makefile): it says it ran, leaves
// a marker outside the target, renames .env to a readable name and plants
// a hook in a nested repository, then runs what it wraps.
func codePayload(outside string) string {
	return "#!/bin/sh\n" +
		"d=$(cd \"$(dirname \"$0\")\" && pwd)\n" +
		"echo PAYLOAD-RAN >&2\n" +
		"touch \"" + outside + "/pwned-$(basename \"$d\")\" 2>/dev/null\n" +
		"mv \"$d/.env\" \"$d/env.txt\" 2>/dev/null\n" +
		"printf '#!/bin/sh\\n' > \"$d/nested/.git/hooks/pre-commit\" 2>/dev/null\n" +
		"[ $# -gt 0 ] && exec \"$@\"\n" +
		"exit 0\n"
}

// codeTarget makes a Go module with a payload, a .env and a nested
// repository's hooks directory; it returns the directory and the
// payload's path.
func codeTarget(t *testing.T, outside string) (string, string) {
	t.Helper()
	dir := targetDir(t, map[string]string{
		"go.mod":              "module example.com/t\n\ngo 1.21\n",
		"main.go":             "package main\n\nfunc main() {}\n",
		"main_test.go":        "package main\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
		".env":                "TOKEN=s3cret-value\n",
		"nested/.git/HEAD":    "ref: refs/heads/main\n",
		"nested/.git/hooks/x": "",
		"Makefile":            "all:\n\t./evil.sh true\n",
	})
	evil := filepath.Join(dir, "evil.sh")
	if err := os.WriteFile(evil, []byte(codePayload(outside)), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, evil
}

// ranNothing asserts the payload left no trace in dir.
func ranNothing(t *testing.T, dir, outside string) {
	t.Helper()
	noFile(t, filepath.Join(outside, "pwned-"+filepath.Base(dir)))
	noFile(t, filepath.Join(dir, "env.txt"))
	noFile(t, filepath.Join(dir, "nested/.git/hooks/pre-commit"))
	if _, err := os.Stat(filepath.Join(dir, ".env")); err != nil {
		t.Fatalf(".env is gone: %v", err)
	}
}

// TestTargetBuildsRunNoCode: a write target runs code only where the
// repository Fast Path would. Builds, tests and flags that hand the build
// a program (-toolexec, -vettool, -exec, an external linker, GOFLAGS
// through go env -w or the environment, a Makefile) are a job: refused
// with the suggestion to promote, and the payload leaves no trace. The
// controls: the payload does run when the same command runs directly and
// as a repository's durable job, and read-only go commands do run in the
// target.
func TestTargetBuildsRunNoCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	h := open(t)
	ctx := context.Background()
	outside := t.TempDir()
	dir, evil := codeTarget(t, outside)
	id := addTarget(t, h, dir, "write", "").TargetID

	attacks := []struct {
		name string
		argv []string
	}{
		{"go build -toolexec", []string{"go", "build", "-toolexec=" + evil, "-o", "/dev/null", "."}},
		{"go build -toolexec into the target", []string{"go", "build", "-toolexec", evil, "."}},
		{"go vet -vettool", []string{"go", "vet", "-vettool=" + evil, "."}},
		{"go list -toolexec -export", []string{"go", "list", "-toolexec=" + evil, "-export", "."}},
		{"go test -exec", []string{"go", "test", "-exec=" + evil, "."}},
		{"go test -toolexec", []string{"go", "test", "-toolexec", evil, "-run", "TestX", "."}},
		{"go env -w GOFLAGS", []string{"go", "env", "-w", "GOFLAGS=-toolexec=" + evil}},
		{"GOFLAGS in the environment", []string{"env", "GOFLAGS=-toolexec=" + evil, "go", "vet", "."}},
		{"external linker", []string{"go", "build", "-ldflags=-linkmode=external -extld=" + evil, "-o", "/dev/null", "."}},
		{"vettool through a script", []string{"sh", "-c", "go vet -vettool=" + evil + " ."}},
		{"a Makefile", []string{"make", "all"}},
		{"cargo build (build.rs)", []string{"cargo", "build"}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			_, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: a.argv, TimeoutMs: 30_000})
			if err == nil {
				t.Fatalf("%q ran on a write target", a.argv)
			}
			e := errs.From(err)
			if e.Code != errs.RouteDurableRequired || e.Details["suggested_operation"] != "target_promote" {
				t.Fatalf("%q: %v, want ROUTE_DURABLE_REQUIRED suggesting target_promote", a.argv, err)
			}
			ranNothing(t, dir, outside)
		})
	}

	t.Run("control: go env -w refused, so a later go vet runs no toolexec", func(t *testing.T) {
		res, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"go", "vet", "."}, TimeoutMs: 30_000})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || strings.Contains(res.Stderr.Text, "PAYLOAD-RAN") {
			t.Fatalf("go vet = exit %d, stderr %q: want a clean vet", res.ExitCode, res.Stderr.Text)
		}
		ranNothing(t, dir, outside)
	})
	t.Run("control: read-only go commands run in the target", func(t *testing.T) {
		for _, argv := range [][]string{{"go", "version"}, {"go", "list", "-f", "{{.Name}}", "."}, {"go", "env", "GOOS"}} {
			res, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: argv, TimeoutMs: 30_000})
			if err != nil || res.ExitCode != 0 || res.Kind != "" || res.Receipt != nil {
				t.Fatalf("%q = %+v, %v: want a read-only run", argv, res, err)
			}
		}
		ranNothing(t, dir, outside)
	})
	t.Run("control: the payload runs when the same command runs directly", func(t *testing.T) {
		ctl, ctlEvil := codeTarget(t, outside)
		cmd := exec.Command("go", "build", "-toolexec="+ctlEvil, "-o", os.DevNull, ".")
		cmd.Dir = ctl
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build -toolexec directly: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(outside, "pwned-"+filepath.Base(ctl))); err != nil {
			t.Fatalf("the payload left no marker when run directly: the attacks above prove nothing (%v)", err)
		}
		if _, err := os.Stat(filepath.Join(ctl, "env.txt")); err != nil {
			t.Fatalf("the payload did not rename .env when run directly: %v", err)
		}
	})
	t.Run("control: the payload runs as a durable job of a repository", func(t *testing.T) {
		root := testutil.Repo(t, map[string]string{
			"go.mod":  "module example.com/r\n\ngo 1.21\n",
			"main.go": "package main\n\nfunc main() {}\n",
			"evil.sh": codePayload(outside),
		})
		if err := os.Chmod(filepath.Join(root, "evil.sh"), 0o755); err != nil {
			t.Fatal(err)
		}
		r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
		if err != nil {
			t.Fatal(err)
		}
		argv := []string{"go", "build", "-toolexec=" + filepath.Join(root, "evil.sh"), "-o", "/dev/null", "."}
		if _, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: argv}); errs.CodeOf(err) != errs.RouteDurableRequired {
			t.Fatalf("run_command %q: %v, want ROUTE_DURABLE_REQUIRED (the repository Fast Path refuses it too)", argv, err)
		}
		job := startJob(t, h, harness.JobStartArgs{RepoID: r.ID, Argv: argv})
		waitJob(t, h, job.JobID)
		if got := logs(t, h, job.JobID, "stderr"); !strings.Contains(got, "PAYLOAD-RAN") {
			t.Fatalf("the job's stderr %q: want the payload's line (a durable job runs it, confined)", got)
		}
	})
}
