package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
)

// requireConfined skips where the kernel cannot confine the Fast Path (the
// test proves the ruleset, not the classifier).
func requireConfined(t *testing.T, h *harness.Harness) {
	t.Helper()
	for _, l := range h.SandboxStatus() {
		if l.Profile == sandbox.Read {
			testutil.NeedSandbox(t, testutil.Landlock, l.LandlockABI > 0, "the Fast Path runs without Landlock")
		}
	}
}

// Rulesets follow the tree: a secret file created after a root's first
// command is closed to the very next one, in a target (walked for every
// command) and in a repository (its watcher marks the secret set stale).
// The value is a bare token no redaction rule knows: only the ruleset
// (and the known-value redaction of the same secret set) can keep it.
func TestRulesetsFollowTheTree(t *testing.T) {
	h := open(t)
	requireConfined(t, h)
	ctx := context.Background()
	value := "q7Zr2xWv9Lm4Kp8Tn3Bd6Hs1Fy5Jc0Ga"

	t.Run("target", func(t *testing.T) {
		dir := targetDir(t, map[string]string{"notes.txt": "notes\n", "sub/readme.txt": "readme\n"})
		id := addTarget(t, h, dir, "read", "").TargetID
		grep := func() string {
			res, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"grep", "-r", "-h", "", "."}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Stdout.Text + res.Stderr.Text
		}
		if out := grep(); !strings.Contains(out, "readme") {
			t.Fatalf("control: %q", out)
		}
		if err := os.WriteFile(filepath.Join(dir, "sub", ".env"), []byte(value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := grep(); strings.Contains(out, value) || !strings.Contains(out, "readme") {
			t.Fatalf("a .env created after the first command was read (or the control failed): %q", out)
		}
	})

	t.Run("repository", func(t *testing.T) {
		root := testutil.Repo(t, map[string]string{"a.txt": "a\n", "sub/readme.txt": "readme\n", "empty/.keep": ""})
		r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
		if err != nil {
			t.Fatal(err)
		}
		run := func(argv ...string) string {
			res, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: argv})
			if err != nil {
				t.Fatal(err)
			}
			return res.Stdout.Text + res.Stderr.Text
		}
		// status is the untracked paths and who answered: the live index
		// ("index": its watcher delivered the change, and marked the
		// secret set stale before) or git ("exec": proves nothing of the
		// watcher, which may not have seen the file yet).
		status := func() (string, string) {
			st, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: r.ID})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(st.Untracked, "\n"), st.Source
		}
		status()
		// diff -rN prints every line of a file the other side lacks: it
		// reads what the ruleset lets it read, names it never sees.
		if out := run("diff", "-r", "-N", "sub", "empty"); !strings.Contains(out, "readme") {
			t.Fatalf("control: %q", out)
		}
		if err := os.WriteFile(filepath.Join(root, "sub", ".env.local"), []byte(value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			untracked, source := status()
			if strings.Contains(untracked, ".env.local") && source == "index" {
				break
			}
			if i > 5000 {
				t.Fatalf("the live index never showed the new file (last answer by %q: %q)", source, untracked)
			}
		}
		if out := run("diff", "-r", "-N", "sub", "empty"); strings.Contains(out, value) || !strings.Contains(out, "readme") {
			t.Fatalf("a .env.local created after the first command was read (or the control failed): %q", out)
		}
	})
}
