package op

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/secrets"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	goleak.VerifyTestMain(m)
}

// harnessd's own read-only git runs confined: a repository program that
// got past the config neutralisation could write nothing but its tmp and
// read nothing of the data dir, while the checkout and its git dir stay
// readable.
func TestConfineGitAsAnAttacker(t *testing.T) {
	testutil.NeedSandbox(t, testutil.Landlock, sandbox.Probe().LandlockABI > 0, "the kernel has no Landlock")
	base := t.TempDir()
	root, data := filepath.Join(base, "repo"), filepath.Join(base, "data")
	for _, d := range []string{root + "/.git", data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{root + "/a.txt": "checkout-file\n", root + "/.git/HEAD": "ref: refs/heads/main\n", data + "/token": "daemon-token\n"} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Config{Hidden: []string{data}, TmpRoot: filepath.Join(base, "tmp")})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	env := &Env{Sandbox: sb}
	start, done, err := env.ConfineGit(context.Background(), filepath.Join(root, "sub"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	script := "cat a.txt .git/HEAD; cat " + data + "/token; echo x > a.txt; echo x > .git/config; echo x > " + base + "/marker"
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = root
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := start(cmd); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	got := out.String()
	if !strings.Contains(got, "checkout-file") || !strings.Contains(got, "refs/heads/main") {
		t.Fatalf("the checkout and .git were not readable: %q", got)
	}
	if strings.Contains(got, "daemon-token") {
		t.Fatalf("the data dir leaked: %q", got)
	}
	if b, _ := os.ReadFile(root + "/a.txt"); string(b) != "checkout-file\n" {
		t.Fatal("the checkout was written")
	}
	for _, m := range []string{root + "/.git/config", base + "/marker"} {
		if _, err := os.Stat(m); err == nil {
			t.Fatalf("%s was written", m)
		}
	}
}

type fakeSecrets struct{ set secrets.Set }

func (f fakeSecrets) Get(context.Context, string) (secrets.Set, error) { return f.set, nil }

// A process may start only once the values of the history are known: while
// they are not, git cat-file of a rotated secret's blob would print it.
func TestPolicyFailsClosedWhileTheHistoryIsLearned(t *testing.T) {
	root := t.TempDir()
	r := runtime.RepoEntry{Repo: messages.Repository{Root: root}}
	for _, tc := range []struct {
		name    string
		set     secrets.Set
		wantErr errs.Code
	}{
		{"learned", secrets.Set{Files: []string{".env"}, Links: []string{"docs/env-copy.txt"}, Gen: 2}, ""},
		{"pending", secrets.Set{Files: []string{".env"}, HistoryPending: true, Gen: 1}, errs.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{Secrets: fakeSecrets{tc.set}}
			p, err := env.Policy(context.Background(), sandbox.Read, r)
			if errs.CodeOf(err) != tc.wantErr {
				t.Fatalf("Policy: %v, want code %q", err, tc.wantErr)
			}
			if err == nil && (!slices.Contains(p.Secrets, ".env") || !slices.Contains(p.Secrets, "docs/env-copy.txt")) {
				t.Errorf("Policy.Secrets = %q, want .env and its hard link closed", p.Secrets)
			}
		})
	}
}
