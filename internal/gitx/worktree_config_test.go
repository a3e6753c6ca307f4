package gitx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

// A repository config that moves the work tree elsewhere (an agent that
// wrote .git/config) makes harnessd's git refuse, instead of staging or
// reading files outside the checkout; the work tree itself is fine.
func TestCoreWorktreeElsewhereRefused(t *testing.T) {
	userHome(t, "")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "loot.txt"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, worktree string
		ok             bool
	}{{"outside", outside, false}, {"relative outside", "../../" + filepath.Base(outside), false}, {"itself", "..", true}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := plainRepo(t)
			gitIn(t, dir, "config", "core.worktree", tt.worktree)
			out, _, err := (&Git{}).Run(context.Background(), dir, 0, "status", "--porcelain")
			if tt.ok {
				if err != nil {
					t.Fatalf("control: %v", err)
				}
				return
			}
			if errs.CodeOf(err) != errs.PolicyDenied || strings.Contains(string(out), "loot") {
				t.Fatalf("got %q, %v; want POLICY_DENIED naming core.worktree", out, err)
			}
		})
	}
}

// A repository's comment character does not strip harnessd's trailers.
func TestCommentCharKeepsTrailers(t *testing.T) {
	userHome(t, "[user]\n\tname = P\n\temail = p@example.com\n")
	dir := plainRepo(t)
	gitIn(t, dir, "config", "core.commentChar", "H")
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Git{}
	ctx := context.Background()
	if _, _, err := g.Run(ctx, dir, 0, "add", "a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Run(ctx, dir, 0, "commit", "-q", "--cleanup=strip", "-m", "subject\n\nHarnessd-Receipt: rcpt_1"); err != nil {
		t.Fatal(err)
	}
	out, _, err := g.Run(ctx, dir, 0, "log", "-1", "--format=%B")
	if err != nil || !strings.Contains(string(out), "Harnessd-Receipt: rcpt_1") {
		t.Fatalf("message %q (%v): the trailer was stripped", out, err)
	}
}
