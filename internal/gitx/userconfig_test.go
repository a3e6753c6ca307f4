package gitx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// userHome makes a home with a global git config and returns it; the
// daemon's environment (HOME, XDG_CONFIG_HOME) points at it.
func userHome(t *testing.T, gitconfig string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	if gitconfig != "" {
		if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func plainRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	return dir
}

// An agent that once wrote the user's global config or attributes cannot
// make harnessd's own git run its program: the filter, the diff driver and
// the hooks path the global files name are never read.
func TestUserConfigRunsNothing(t *testing.T) {
	base := t.TempDir()
	marker := filepath.Join(base, "ran")
	script := filepath.Join(base, "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := userHome(t, "[user]\n\tname = Person\n\temail = person@example.com\n"+
		"[filter \"x\"]\n\tclean = "+script+"\n\tsmudge = "+script+"\n\trequired = true\n"+
		"[diff \"x\"]\n\ttextconv = "+script+"\n[core]\n\thooksPath = "+base+"\n\tfsmonitor = "+script+"\n\tpager = "+script+"\n")
	if err := os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "git", "attributes"), []byte("* filter=x diff=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "pre-commit"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := plainRepo(t)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Git{}
	ctx := context.Background()
	for _, args := range [][]string{{"add", "--all"}, {"status", "--porcelain"}, {"commit", "-q", "-m", "m"}, {"diff", "HEAD~0"}, {"log", "-p"}} {
		if _, _, err := g.Run(ctx, dir, 0, args...); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("harnessd's git ran a program the user's global config or attributes named")
	}
	// Positive control: the identity of the global config is kept.
	out, _, err := g.Run(ctx, dir, 0, "log", "-1", "--format=%an <%ae>")
	if err != nil || strings.TrimSpace(string(out)) != "Person <person@example.com>" {
		t.Fatalf("author = %q (%v), want the global config's identity", out, err)
	}
}

// A `git config --global` rewrites the file under a new inode: the next
// call sees the new value (nothing holds the old file), and an includeIf
// gitdir: applies where git would apply it.
func TestUserConfigFollowsTheFile(t *testing.T) {
	home := userHome(t, "[user]\n\tname = First\n\temail = a@example.com\n")
	dir := plainRepo(t)
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	g := &Git{}
	ctx := context.Background()
	ident := func(d string) string {
		t.Helper()
		out, _, err := g.Run(ctx, d, 0, "var", "GIT_AUTHOR_IDENT")
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		return s[:strings.Index(s, ">")+1]
	}
	if got := ident(dir); got != "First <a@example.com>" {
		t.Fatalf("ident %q", got)
	}
	// An atomic rewrite, as git config --global does.
	tmp := filepath.Join(home, ".gitconfig.lock")
	if err := os.WriteFile(tmp, []byte("[user]\n\tname = Second\n\temail = b@example.com\n[includeIf \"gitdir:~/work/\"]\n\tpath = ~/.gitconfig-work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(home, ".gitconfig")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig-work"), []byte("[user]\n\temail = work@example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ident(dir); got != "Second <b@example.com>" {
		t.Fatalf("after the rewrite: ident %q, want Second <b@example.com>", got)
	}
	wr := filepath.Join(work, "proj")
	cmd := exec.Command("git", "init", "-q", wr)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if got := ident(wr); got != "Second <work@example.com>" {
		t.Fatalf("in ~/work: ident %q, want the includeIf's email", got)
	}
}

// The user's globals keep the global scope: a repository's own identity
// wins over them, as it does for the user's git.
func TestUserConfigKeepsTheGlobalScope(t *testing.T) {
	userHome(t, "[user]\n\tname = Global\n\temail = global@example.com\n")
	dir := plainRepo(t)
	gitIn(t, dir, "config", "user.email", "local@example.com")
	out, _, err := (&Git{}).Run(context.Background(), dir, 0, "var", "GIT_AUTHOR_IDENT")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); !strings.HasPrefix(got, "Global <local@example.com>") {
		t.Fatalf("ident %q, want the global name and the repository's email", got)
	}
}
