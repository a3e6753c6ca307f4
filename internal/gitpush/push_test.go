package gitpush

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
)

func secretToken(t *testing.T) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "tok" + hex.EncodeToString(b)
}

// work makes a checkout with two commits on main and returns it, its
// object store and the commits.
func work(t *testing.T) (dir, objects, first, second string) {
	t.Helper()
	dir = testutil.Repo(t, map[string]string{"a.txt": "one\n"})
	first = strings.TrimSpace(testutil.Git(t, dir, "rev-parse", "HEAD"))
	testutil.WriteFile(t, dir, "a.txt", "two\n")
	testutil.Git(t, dir, "commit", "-qam", "two")
	second = strings.TrimSpace(testutil.Git(t, dir, "rev-parse", "HEAD"))
	return dir, filepath.Join(dir, ".git", "objects"), first, second
}

func scratch(t *testing.T, objects string) string {
	t.Helper()
	s := t.TempDir()
	if err := MakeScratch(s, objects, ""); err != nil {
		t.Fatal(err)
	}
	return s
}

func lsRemote(t *testing.T, url string, env ...string) string {
	t.Helper()
	cmd := exec.Command("git", "ls-remote", url)
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git ls-remote %s: %v\n%s", url, err, out)
	}
	return string(out)
}

// A push to a local bare remote lands exactly the ref, fast-forwards it,
// refuses a non-fast-forward with PUSH_REJECTED, and forces only when
// asked.
func TestPushLocal(t *testing.T) {
	dir, objects, first, second := work(t)
	remote := filepath.Join(t.TempDir(), "r.git")
	testutil.Git(t, dir, "init", "-q", "--bare", remote)
	r, err := ParseURL(remote, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	push := func(commit, ref string, force bool) (Result, error) {
		return Push(ctx, Request{Git: "git", Scratch: scratch(t, objects), Remote: r, Commit: commit, RemoteRef: ref, Force: force})
	}
	res, err := push(first, "refs/heads/main", false)
	if err != nil || res.Flag != "*" || res.New != first || res.Old != "" {
		t.Fatalf("new branch: %+v, %v", res, err)
	}
	res, err = push(second, "refs/heads/main", false)
	if err != nil || res.Flag != " " || res.Old != first || res.New != second {
		t.Fatalf("fast-forward: %+v, %v", res, err)
	}
	_, err = push(first, "refs/heads/main", false)
	if e := errs.From(err); errs.CodeOf(err) != errs.PushRejected || e.Details["reason"] != "non-fast-forward" || !strings.Contains(e.Message, "force: true") {
		t.Fatalf("non-fast-forward: %v, want PUSH_REJECTED naming force", err)
	}
	if got := lsRemote(t, remote); !strings.Contains(got, second+"\trefs/heads/main") {
		t.Fatalf("after the refused push: %s", got)
	}
	res, err = push(first, "refs/heads/main", true)
	if err != nil || res.Flag != "+" || res.Old != second || res.New != first {
		t.Fatalf("forced: %+v, %v", res, err)
	}
	if got := lsRemote(t, remote); strings.TrimSpace(got) != first+"\trefs/heads/main" {
		t.Fatalf("the remote holds %q, want exactly main at %s", got, first)
	}
}

// Over HTTP with basic auth, the credential comes from the user's helper
// (a store file named by the global config of the daemon's HOME) and
// reaches git through the pipe; without it the push is REMOTE_AUTH_FAILED
// naming git credential, never the token.
func TestPushHTTPWithTheUsersCredential(t *testing.T) {
	token := secretToken(t)
	srv := testutil.NewGitHTTPServer(t, "alice", token)
	url := srv.Bare(t, "app.git")
	dir, objects, _, second := work(t)
	home := t.TempDir()
	store := filepath.Join(home, ".git-credentials")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	testutil.WriteFile(t, home, ".gitconfig", "[credential]\n\thelper = store --file "+store+"\n")
	r, err := ParseURL(url, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := scratch(t, objects)

	// No credential stored yet: refused, with the fix.
	if c := FillCredential(ctx, "git", s, r); c != nil {
		t.Fatalf("a credential without a stored one: %+v", c)
	}
	_, err = Push(ctx, Request{Git: "git", Scratch: s, Remote: r, Commit: second, RemoteRef: "refs/heads/main"})
	if errs.CodeOf(err) != errs.RemoteAuthFailed || !strings.Contains(err.Error(), "git credential") {
		t.Fatalf("push without a credential: %v, want REMOTE_AUTH_FAILED naming git credential", err)
	}

	// A wrong one: refused, and the wrong token is not in the message.
	wrong := &Credential{Username: "alice", Password: "wrong-" + token}
	_, err = Push(ctx, Request{Git: "git", Scratch: s, Remote: r, Commit: second, RemoteRef: "refs/heads/main", Cred: wrong})
	if errs.CodeOf(err) != errs.RemoteAuthFailed || strings.Contains(err.Error(), token) {
		t.Fatalf("push with a wrong credential: %v", err)
	}

	// The user's helper knows it.
	testutil.WriteFile(t, home, ".git-credentials", strings.Replace(url, "http://", "http://alice:"+token+"@", 1)+"\n")
	c := FillCredential(ctx, "git", s, r)
	if c == nil || c.Username != "alice" || c.Password != token {
		t.Fatalf("FillCredential = %+v", c)
	}
	q := Request{Git: "git", Scratch: s, Remote: r, Commit: second, RemoteRef: "refs/heads/feature", Cred: c}
	if a := strings.Join(q.Args(), " "); strings.Contains(a, token) {
		t.Fatalf("the token is in git's arguments")
	}
	res, err := Push(ctx, q)
	if err != nil || res.Flag != "*" || res.New != second {
		t.Fatalf("push: %+v, %v", res, err)
	}
	got := lsRemote(t, strings.Replace(url, "http://", "http://alice:"+token+"@", 1))
	if strings.TrimSpace(got) != second+"\trefs/heads/feature" {
		t.Fatalf("the remote holds %q, want exactly refs/heads/feature at %s", got, second)
	}
}
