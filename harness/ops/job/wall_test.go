package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/secrets"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/internal/wall"
	"github.com/harnessd/harnessd/messages"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of the job profile
	goleak.VerifyTestMain(m)
}

// fixedSecrets closes the same files in every checkout.
type fixedSecrets []string

func (f fixedSecrets) Get(context.Context, string) (secrets.Set, error) {
	return secrets.Set{Files: f}, nil
}

// confinedRun runs argv in root confined with profile (tweak as the
// operation adjusts it) and returns what Walls makes of its failure.
func confinedRun(t *testing.T, env *op.Env, tool string, profile sandbox.Profile, root string, tweak func(*sandbox.Policy), argv ...string) (proc.Result, []wall.Diagnosis) {
	t.Helper()
	ctx := context.Background()
	e := runtime.RepoEntry{Repo: messages.Repository{ID: "repo_x", Root: root}}
	spec := proc.Spec{Argv: argv, Dir: root, Timeout: 20 * time.Second}
	prep, err := env.Confine(ctx, profile, e, tweak)
	if err != nil {
		t.Fatal(err)
	}
	op.ApplyConfinement(&spec, prep)
	res, err := proc.Run(ctx, spec)
	if err != nil {
		prep.Done()
		t.Fatal(err)
	}
	return res, Walls(ctx, env, tool, profile, e, tweak, root, res.ExitCode, res.Stderr.Text+"\n"+res.Stdout.Text)
}

// TestWallsOfRealFailures confines real commands, lets them run into the
// walls, and checks that the answer names the wall, what it stopped and
// the fix: the Fast Path's Landlock (a write to the checkout, a closed
// secret file) and the mount namespace of a job ($HOME outside the
// caches).
func TestWallsOfRealFailures(t *testing.T) {
	testutil.NeedSandbox(t, testutil.Landlock, sandbox.Probe().LandlockABI > 0, "the kernel has no Landlock")
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".config", "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(home, ".config", "app", "settings.json")
	if err := os.WriteFile(settings, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for name, body := range map[string]string{"README.md": "hello\n", "key.pem": "-----BEGIN PRIVATE KEY-----\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Config{TmpRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	env := &op.Env{Sandbox: sb, Secrets: fixedSecrets{"key.pem"}, Hidden: []string{t.TempDir()}}

	t.Run("write to the checkout on the Fast Path", func(t *testing.T) {
		res, got := confinedRun(t, env, wall.ToolRunCommand, sandbox.Read, root, nil, "touch", filepath.Join(root, "new.txt"))
		if len(got) != 1 || got[0].Layer != wall.Landlock || got[0].What != filepath.Join(root, "new.txt") || !strings.Contains(got[0].Fix, "run_check") {
			t.Fatalf("exit %d, stderr %q: got %+v, want Landlock on new.txt with run_check's fix", res.ExitCode, res.Stderr.Text, got)
		}
	})
	t.Run("a closed secret file", func(t *testing.T) {
		res, got := confinedRun(t, env, wall.ToolRunCommand, sandbox.Read, root, nil, "cat", "key.pem")
		if len(got) != 1 || got[0].Layer != wall.Landlock || !strings.Contains(got[0].Fix, "denylist exception") {
			t.Fatalf("exit %d, stderr %q: got %+v, want Landlock on key.pem with the denylist's fix", res.ExitCode, res.Stderr.Text, got)
		}
	})
	t.Run("an ordinary failure", func(t *testing.T) {
		res, got := confinedRun(t, env, wall.ToolRunCommand, sandbox.Read, root, nil, "grep", "-q", "absent", "README.md")
		if res.ExitCode != 1 || len(got) != 0 {
			t.Fatalf("exit %d, stderr %q: got %+v, want exit 1 and no diagnosis", res.ExitCode, res.Stderr.Text, got)
		}
	})
	t.Run("home in a job's mount namespace", func(t *testing.T) {
		testutil.NeedSandbox(t, testutil.UserNS, sb.Namespaced(sandbox.Job), sandbox.Probe().UserNSReason)
		res, got := confinedRun(t, env, wall.ToolJobStart, sandbox.Job, root, nil, "cat", settings)
		if len(got) != 1 || got[0].Layer != wall.MountNamespace || got[0].What != settings || !strings.Contains(got[0].Fix, "tool caches") {
			t.Fatalf("exit %d, stderr %q: got %+v, want the mount namespace on %s", res.ExitCode, res.Stderr.Text, got, settings)
		}
	})
	t.Run("sandbox off", func(t *testing.T) {
		offEnv := &op.Env{Hidden: env.Hidden}
		e := runtime.RepoEntry{Repo: messages.Repository{ID: "repo_x", Root: root}}
		if got := Walls(context.Background(), offEnv, wall.ToolRunCommand, sandbox.Read, e, nil, root, 1,
			"touch: cannot touch '"+root+"/new.txt': Permission denied\n"); got != nil {
			t.Fatalf("got %+v, want none without a sandbox", got)
		}
	})
}
