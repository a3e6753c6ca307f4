package op

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/search"
	"github.com/harnessd/harnessd/messages"
)

// DenyFor binds each root's list with the policy's exceptions for it, keeps
// it per root and policy digest, and follows a reload; Root and
// SearcherFor follow the list.
func TestDenyForFollowsThePolicy(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo, other := filepath.Join(base, "jwt"), filepath.Join(base, "other")
	for _, d := range []string{repo, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(base, "policy.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(pol, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("version: 1\nsecret_exceptions:\n  - repo: " + repo + "\n    paths: [\"test/*.pem\"]\n")
	gov, err := govern.New(govern.Config{PolicyPath: pol, Audit: &runtime.FakeAudit{}})
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Gov: gov, Searcher: &search.Searcher{}}
	d := e.DenyFor(repo)
	if _, ok := d.Match("test/key.pem"); ok {
		t.Errorf("the excepted fixture is a secret of %s", repo)
	}
	if _, ok := d.Match("test/.env"); !ok {
		t.Errorf("test/.env is no secret of %s", repo)
	}
	if _, ok := e.DenyFor(other).Match("test/key.pem"); !ok {
		t.Errorf("another repository got the exception")
	}
	if e.DenyFor(repo) != d {
		t.Errorf("DenyFor built a second list for the same root and policy")
	}
	root, err := e.Root(runtime.RepoEntry{Repo: messages.Repository{ID: "r1", Root: repo}})
	if err != nil {
		t.Fatal(err)
	}
	if root.Deny() != d {
		t.Errorf("Root does not decide with the root's list")
	}
	s := e.SearcherFor(repo)
	if s.Exclude("test/key.pem") || !s.Exclude("test/.env") {
		t.Errorf("SearcherFor: excludes the fixture %v, .env %v; want false, true", s.Exclude("test/key.pem"), s.Exclude("test/.env"))
	}
	if e.SearcherFor(repo) != s {
		t.Errorf("SearcherFor built a second Searcher for the same list")
	}

	// The person drops the exception: a new list, a new root checker, a
	// new Searcher.
	write("version: 1\n")
	if _, err := gov.ReloadPolicy(); err != nil {
		t.Fatal(err)
	}
	d2 := e.DenyFor(repo)
	if d2 == d {
		t.Fatalf("the list did not follow the reload")
	}
	if _, ok := d2.Match("test/key.pem"); !ok {
		t.Errorf("after the reload the fixture is still open")
	}
	root2, err := e.Root(runtime.RepoEntry{Repo: messages.Repository{ID: "r1", Root: repo}})
	if err != nil {
		t.Fatal(err)
	}
	if root2 == root || root2.Deny() != d2 {
		t.Errorf("Root kept the checker of the old list")
	}
	if s2 := e.SearcherFor(repo); s2 == s || !s2.Exclude("test/key.pem") {
		t.Errorf("SearcherFor kept the Searcher of the old list")
	}
}
