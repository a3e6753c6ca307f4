package secrets

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/testutil"
)

// A person's exception takes exactly its paths out of the Set: the fixture
// is neither closed nor learned (its value, old or current, is no known
// secret), while the other secrets of the repository stay. When the list
// of the root changes (a policy reload), the Set is built again.
func TestCacheHonoursTheRootsList(t *testing.T) {
	fixtureOld, fixture := "fixture-old-"+fake(70, 16), "fixture-"+fake(71, 16)
	env, other := "envvalue-"+fake(72, 16), "otherkey-"+fake(73, 16)
	root := testutil.Repo(t, map[string]string{
		"test/key.pem":  "K=" + fixtureOld + "\n",
		"test/.env":     "K=" + env + "\n",
		"other/key.pem": "K=" + other + "\n",
		"main.go":       "package main\n",
	})
	writeFile(t, root, "test/key.pem", "K="+fixture+"\n")
	testutil.Git(t, root, "commit", "-q", "-am", "rotate the fixture")
	excepted, err := defaultDeny(t).ForRoot(root, []string{"test/*.pem"})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := defaultDeny(t).ForRoot(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cur atomic.Pointer[pathsafe.Denylist]
	cur.Store(excepted)
	c := NewCache(Config{DenyFor: func(string) *pathsafe.Denylist { return cur.Load() }, Git: testGit, Rewalk: time.Hour, HistoryWait: time.Minute})
	t.Cleanup(func() { c.Close() })
	s, err := c.Get(testCtx(t), root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"other/key.pem", "test/.env"}; !slices.Equal(s.Files, want) {
		t.Errorf("Files = %q, want %q (the fixture is no secret)", s.Files, want)
	}
	if slices.Contains(s.Tracked, "test/key.pem") {
		t.Errorf("Tracked = %q names the excepted fixture", s.Tracked)
	}
	for _, v := range []string{fixture, fixtureOld} {
		if redacts(s.Known, v) {
			t.Errorf("the excepted fixture's value %q is a known secret", v)
		}
	}
	for _, v := range []string{env, other} {
		if !redacts(s.Known, v) {
			t.Errorf("a secret beside the fixture is not known: %q", v)
		}
	}
	// The exception is withdrawn: the fixture is a secret again.
	cur.Store(plain)
	s, err = c.Get(testCtx(t), root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Files, "test/key.pem") {
		t.Errorf("after the exception went: Files = %q, want test/key.pem back", s.Files)
	}
	for _, v := range []string{fixture, fixtureOld, env, other} {
		if !redacts(s.Known, v) {
			t.Errorf("after the exception went: %q is not a known secret", v)
		}
	}
}

// A root that is itself a credential directory (<tmp>/home/.aws): its
// credentials file is a secret by the absolute path, closed and learned,
// its history included, though no name below the root says so.
func TestCacheRootInsideACredentialDirectory(t *testing.T) {
	old, cur := "awsold-"+fake(74, 16), "awscur-"+fake(75, 16)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "home", ".aws")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, root, "init", "-q", "-b", "main")
	testutil.Git(t, root, "config", "user.name", "t")
	testutil.Git(t, root, "config", "user.email", "t@example.invalid")
	writeFile(t, root, "credentials", "aws_secret_access_key = "+old+"\n")
	writeFile(t, root, "notes.txt", "nothing here\n")
	testutil.Git(t, root, "add", "-A")
	testutil.Git(t, root, "commit", "-q", "-m", "one")
	writeFile(t, root, "credentials", "aws_secret_access_key = "+cur+"\n")
	testutil.Git(t, root, "commit", "-q", "-am", "rotate")
	list, err := defaultDeny(t).ForRoot(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(Config{DenyFor: func(string) *pathsafe.Denylist { return list }, Git: testGit, Rewalk: time.Hour, HistoryWait: time.Minute})
	t.Cleanup(func() { c.Close() })
	s, err := c.Get(testCtx(t), root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Files, "credentials") || slices.Contains(s.Files, "notes.txt") {
		t.Errorf("Files = %q, want credentials (and not notes.txt)", s.Files)
	}
	for _, v := range []string{old, cur} {
		if !redacts(s.Known, v) {
			t.Errorf("%q of <root>/.aws/credentials is not a known secret", v)
		}
	}
	// The root-relative list alone misses it: the blind spot this closes.
	s0, err := Find(root, defaultDeny(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(s0.Files, "credentials") {
		t.Errorf("the unbound list found credentials: the test no longer shows the blind spot")
	}
}
