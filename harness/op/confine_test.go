package op

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/internal/sandbox"
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
	if sandbox.Probe().LandlockABI == 0 {
		t.Skip("the kernel has no Landlock")
	}
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
	start, done, err := env.ConfineGit(context.Background(), filepath.Join(root, "sub"))
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
