package secrets

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
)

func newTestCache(t *testing.T, rewalk time.Duration) *Cache {
	c := NewCache(Config{Deny: defaultDeny(t), Git: testGit, Rewalk: rewalk})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCacheRelearnsChangedFile(t *testing.T) {
	root := testutil.Repo(t, nil)
	first, second := "first-"+fake(50, 12), "second-"+fake(51, 20)
	writeFile(t, root, ".env", "K="+first+"\n") // untracked
	c := newTestCache(t, time.Hour)
	ctx := testCtx(t)
	s1, err := c.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if !redacts(s1.Known, first) || s1.Gen == 0 || !slices.Equal(s1.Files, []string{".env"}) {
		t.Fatalf("first Get: redacts %v, Gen %d, Files %q", redacts(s1.Known, first), s1.Gen, s1.Files)
	}
	s2, err := c.Get(ctx, root)
	if err != nil || s2.Gen != s1.Gen || s2.Known != s1.Known {
		t.Fatalf("unchanged Get: Gen %d, same Known %v, %v", s2.Gen, s2.Known == s1.Known, err)
	}
	writeFile(t, root, ".env", "K="+second+"\n")
	s3, err := c.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if !redacts(s3.Known, second) || redacts(s3.Known, first) || s3.Gen <= s2.Gen {
		t.Fatalf("after the change: redacts new %v, old %v, Gen %d (was %d)", redacts(s3.Known, second), redacts(s3.Known, first), s3.Gen, s2.Gen)
	}
}

// TestCacheRacyRewrite rewrites a file with the same size and mtime right
// after it was learned (the ctime or the racy check tells).
func TestCacheRacyRewrite(t *testing.T) {
	root := t.TempDir()
	a, b := "aaaa-"+fake(52, 12), "bbbb-"+fake(53, 12)
	p := filepath.Join(root, ".env")
	writeFile(t, root, ".env", "K="+a+"\n")
	fi, _ := os.Stat(p)
	c := newTestCache(t, time.Hour)
	ctx := testCtx(t)
	if _, err := c.Get(ctx, root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("K="+b+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	s, err := c.Get(ctx, root)
	if err != nil || !redacts(s.Known, b) {
		t.Fatalf("rewrite with the same stamp not relearned: %v", err)
	}
}

func TestCacheGitChanges(t *testing.T) {
	committed := "committed-" + fake(54, 12)
	root := testutil.Repo(t, map[string]string{"config/.env": "K=" + committed + "\n", "main.go": "package main\n"})
	os.Remove(filepath.Join(root, "config/.env"))
	c := newTestCache(t, time.Hour)
	ctx := testCtx(t)
	s, err := c.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 0 || !slices.Equal(s.Tracked, []string{"config/.env"}) || !redacts(s.Known, committed) {
		t.Fatalf("deleted from the work tree: Files %q, Tracked %q, redacts %v", s.Files, s.Tracked, redacts(s.Known, committed))
	}
	// A new commit changes the index and the branch ref.
	next := "next-" + fake(55, 12)
	writeFile(t, root, "other/.env", "K="+next+"\n")
	testutil.Git(t, root, "add", "other/.env")
	testutil.Git(t, root, "commit", "-q", "-m", "more")
	os.Remove(filepath.Join(root, "other/.env"))
	s2, err := c.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if !redacts(s2.Known, next) || !slices.Equal(s2.Tracked, []string{"config/.env", "other/.env"}) || s2.Gen <= s.Gen {
		t.Fatalf("after a commit: redacts %v, Tracked %q, Gen %d", redacts(s2.Known, next), s2.Tracked, s2.Gen)
	}
}

func TestCacheSecretDirs(t *testing.T) {
	root := t.TempDir()
	key := fake(56, 40)
	writeFile(t, root, ".ssh/deploy_key", key+"\n")
	c := newTestCache(t, time.Hour)
	s, err := c.Get(testCtx(t), root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Dirs, []string{".ssh"}) || len(s.Files) != 0 || !redacts(s.Known, key) {
		t.Errorf("Dirs %q, Files %q, redacts the key below .ssh %v", s.Dirs, s.Files, redacts(s.Known, key))
	}
}

// TestCacheRewalk: a new secret file appears after a background walk. Get
// is called until it knows the value, bounded by a timeout.
func TestCacheRewalk(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"README": "x\n"})
	c := newTestCache(t, time.Nanosecond)
	walked := make(chan struct{}, 1)
	c.walkDone = func(string) {
		select {
		case walked <- struct{}{}:
		default:
		}
	}
	ctx := testCtx(t)
	s, err := c.Get(ctx, root)
	if err != nil || s.Gen == 0 || len(s.Files) != 0 {
		t.Fatalf("first Get: %+v, %v", s, err)
	}
	v := "appeared-" + fake(57, 12)
	writeFile(t, root, "new/.env", "K="+v+"\n")
	deadline := time.After(20 * time.Second)
	for {
		s, err = c.Get(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		if redacts(s.Known, v) {
			break
		}
		select {
		case <-walked:
		case <-deadline:
			t.Fatal("the new .env was not learned")
		}
	}
	if !slices.Equal(s.Files, []string{"new/.env"}) || s.Gen < 2 {
		t.Errorf("after the re-walk: Files %q, Gen %d", s.Files, s.Gen)
	}
}

// TestCacheGetDoesNotWaitForWalk blocks a background walk and checks that
// Get still serves, and that Close waits for the walk.
func TestCacheGetDoesNotWaitForWalk(t *testing.T) {
	root := t.TempDir()
	v := "served-" + fake(58, 12)
	writeFile(t, root, ".env", "K="+v+"\n")
	c := NewCache(Config{Rewalk: time.Nanosecond})
	started, release := make(chan struct{}), make(chan struct{})
	var finished bool // written by the walk, read after Close
	var once sync.Once
	c.walkHook = func(string) {
		once.Do(func() { close(started) })
		<-release
	}
	c.walkDone = func(string) { finished = true }
	ctx := testCtx(t)
	if _, err := c.Get(ctx, root); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, root); err != nil { // starts the walk
		t.Fatal(err)
	}
	<-started
	for range 3 {
		s, err := c.Get(ctx, root) // must not wait for the blocked walk
		if err != nil || !redacts(s.Known, v) {
			t.Fatalf("Get during a walk: %v", err)
		}
	}
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a walk was running")
	default:
	}
	close(release)
	<-closed
	if !finished {
		t.Fatal("Close returned before the walk finished")
	}
	if _, err := c.Get(ctx, root); errs.CodeOf(err) != errs.Unavailable {
		t.Errorf("Get after Close: %v, want UNAVAILABLE", err)
	}
}

func TestCacheConcurrent(t *testing.T) {
	roots := []string{t.TempDir(), t.TempDir()}
	vals := []string{"one-" + fake(59, 12), "two-" + fake(60, 12)}
	for i, r := range roots {
		writeFile(t, r, ".env", "K="+vals[i]+"\n")
	}
	c := newTestCache(t, time.Nanosecond)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 20 {
				i := g % 2
				s, err := c.Get(ctx, roots[i])
				if err != nil || !redacts(s.Known, vals[i]) {
					t.Errorf("Get(%d): %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	c.Forget(roots[0])
	fresh, err := newTestCache(t, time.Hour).Get(ctx, roots[0])
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.Get(ctx, roots[0]); err != nil || s.Gen != fresh.Gen {
		t.Errorf("Get after Forget: Gen %d, %v; want a fresh %d", s.Gen, err, fresh.Gen)
	}
}

func TestCacheErrors(t *testing.T) {
	c := newTestCache(t, time.Hour)
	if _, err := c.Get(testCtx(t), filepath.Join(t.TempDir(), "missing")); errs.CodeOf(err) != errs.NotFound {
		t.Errorf("Get of a missing root: %v", err)
	}
}

func TestRacy(t *testing.T) {
	at := time.Unix(1_700_000_000, 500_000_000)
	ns := func(d time.Duration) int64 { return at.Add(d).UnixNano() }
	for _, tc := range []struct {
		name string
		st   stamp
		want bool
	}{
		{"absent", stamp{}, false},
		{"fine, old", stamp{exists: true, mtime: ns(-time.Second), ctime: ns(-time.Second)}, false},
		{"fine, within a tick", stamp{exists: true, mtime: ns(-10 * time.Millisecond), ctime: ns(-10 * time.Millisecond)}, true},
		{"fine mtime set back, fresh ctime", stamp{exists: true, mtime: ns(-time.Hour), ctime: ns(-time.Millisecond)}, true},
		{"fine, after the learning", stamp{exists: true, mtime: ns(time.Millisecond), ctime: ns(time.Millisecond)}, true},
		{"whole seconds, 2 s old", stamp{exists: true, mtime: time.Unix(1_699_999_998, 0).UnixNano(), ctime: time.Unix(1_699_999_998, 0).UnixNano()}, true},
		{"whole seconds, 4 s old", stamp{exists: true, mtime: time.Unix(1_699_999_996, 0).UnixNano(), ctime: time.Unix(1_699_999_996, 0).UnixNano()}, false},
	} {
		if got := racy(at, []stamp{{}, tc.st}); got != tc.want {
			t.Errorf("%s: racy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A value rotated out of HEAD (and a secret file deleted since) is still in
// the history, where `git log -p` or `git cat-file` of the old blob shows
// it: the cache learns it in the background, and the first Get of a root
// waits for that learning (an agent's first command may be `git cat-file`
// of the old blob).
func TestCacheLearnsValuesFromHistory(t *testing.T) {
	old, gone, cur := "rotated-"+fake(60, 16), "deleted-"+fake(61, 16), "current-"+fake(62, 16)
	root := testutil.Repo(t, map[string]string{".env": "K=" + old + "\n", "deploy/prod.key": gone + "\n", "main.go": "package main\n"})
	writeFile(t, root, ".env", "K="+cur+"\n")
	testutil.Git(t, root, "rm", "-q", "deploy/prod.key")
	testutil.Git(t, root, "commit", "-q", "-am", "rotate")
	c := NewCache(Config{Deny: defaultDeny(t), Git: testGit, Rewalk: time.Hour, HistoryWait: time.Minute})
	t.Cleanup(func() { c.Close() })
	s, err := c.Get(testCtx(t), root)
	if err != nil {
		t.Fatal(err)
	}
	if s.HistoryPending {
		t.Error("the first Get returned before the history was learned")
	}
	for _, v := range []string{old, gone, cur} {
		if !redacts(s.Known, v) {
			t.Errorf("the first Get does not know %q", v)
		}
	}
	if len(s.Blobs) < 3 {
		t.Errorf("Blobs = %v, want the blobs of both .env versions and the deleted key", s.Blobs)
	}
}

// A history that takes longer to learn than Config.HistoryWait leaves the
// Set HistoryPending (callers starting processes fail closed); the next Get
// after the learning finished knows its values and clears it.
func TestCacheHistoryPendingPastTheWait(t *testing.T) {
	old, cur := "rotated-"+fake(63, 16), "current-"+fake(64, 16)
	root := testutil.Repo(t, map[string]string{".env": "K=" + old + "\n", "main.go": "package main\n"})
	writeFile(t, root, ".env", "K="+cur+"\n")
	testutil.Git(t, root, "commit", "-q", "-am", "rotate")
	c := NewCache(Config{Deny: defaultDeny(t), Git: testGit, Rewalk: time.Hour, HistoryWait: 20 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	release, done := make(chan struct{}), make(chan struct{}, 4)
	c.histHook = func(string) { <-release }
	c.histDone = func(string) { done <- struct{}{} }
	ctx := testCtx(t)
	s, err := c.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if !s.HistoryPending || redacts(s.Known, old) || !redacts(s.Known, cur) {
		t.Fatalf("while the history is learned: pending %v, knows the old value %v, the current %v",
			s.HistoryPending, redacts(s.Known, old), redacts(s.Known, cur))
	}
	gen := s.Gen
	close(release)
	<-done
	s, err = c.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if s.HistoryPending || !redacts(s.Known, old) || s.Gen == gen {
		t.Errorf("after the learning: pending %v, knows the old value %v, gen %d (was %d)", s.HistoryPending, redacts(s.Known, old), s.Gen, gen)
	}
}

// The locator answers as gitFiles does, across a branch switch, a HEAD
// rewritten in place within the racy window, and a .git that becomes a
// gitdir file.
func TestGitLocatorAgreesWithGitFiles(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	var l gitLocator
	check := func(step string) {
		t.Helper()
		for range 2 { // a fresh find, then the remembered answer
			if got, want := l.find(root), gitFiles(root); !slices.Equal(got, want) {
				t.Fatalf("%s: find = %q, gitFiles = %q", step, got, want)
			}
		}
	}
	check("start")
	testutil.Git(t, root, "checkout", "-q", "-b", "other")
	check("branch switch")
	// Same size, same second: only the racy rule tells it apart.
	head := filepath.Join(root, ".git", "HEAD")
	if err := os.WriteFile(head, []byte("ref: refs/heads/abcde\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("HEAD rewritten in place")
	moved := filepath.Join(t.TempDir(), "gitdir")
	if err := os.Rename(filepath.Join(root, ".git"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: "+moved+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(".git became a gitdir file")
	if got := l.find(root); !slices.Contains(got, filepath.Join(moved, "index")) {
		t.Fatalf("find = %q, want the moved git dir's index", got)
	}
}

// A secret file with another name in the tree: the other name is closed
// like the file (a grep -r names no link); a file linked to something that
// is not a secret is not.
func TestCacheFindsHardLinksOfSecretFiles(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"main.go": "package main\n"})
	writeFile(t, root, ".env", "K="+fake(65, 16)+"\n")
	writeFile(t, root, "docs/plain.txt", "plain\n")
	for _, l := range [][2]string{{".env", "docs/copy.txt"}, {".env", "a/b/again"}, {"docs/plain.txt", "docs/plain-link.txt"}} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, l[1])), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(root, l[0]), filepath.Join(root, l[1])); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
	}
	s, err := newTestCache(t, time.Hour).Get(testCtx(t), root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/b/again", "docs/copy.txt"}; !slices.Equal(s.Links, want) {
		t.Errorf("Links = %q, want %q", s.Links, want)
	}
}

// Credentials in the repository's config (a token in a remote URL, an
// Authorization extra header as actions/checkout writes it) are known
// values: git needs the config, so confined processes may read it.
func TestCacheLearnsCredentialsOfTheGitConfig(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"main.go": "package main\n"})
	urlTok, hdrTok, later := "ghp_"+fake(66, 20), "ghs_"+fake(67, 20), "glpat-"+fake(68, 20)
	testutil.Git(t, root, "remote", "add", "origin", "https://bob:"+urlTok+"@github.com/x/y.git")
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + hdrTok))
	testutil.Git(t, root, "config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic "+basic)
	c := newTestCache(t, time.Hour)
	ctx := testCtx(t)
	s, err := c.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{urlTok, hdrTok, basic} {
		if !redacts(s.Known, v) {
			t.Errorf("%q from the git config is not known", v)
		}
	}
	testutil.Git(t, root, "remote", "set-url", "origin", "https://bob:"+later+"@gitlab.com/x/y.git")
	if s, err = c.Get(ctx, root); err != nil || !redacts(s.Known, later) {
		t.Errorf("a token set in the config later is not known: %v", err)
	}
}

// Current answers before the history is learned: the values of the work
// tree, the index and HEAD, HistoryPending, and a channel closed when the
// history is learned; a Get after it knows the history's values.
func TestCacheCurrentDoesNotWaitForTheHistory(t *testing.T) {
	old, cur := "rotated-"+fake(65, 16), "current-"+fake(66, 16)
	root := testutil.Repo(t, map[string]string{".env": "K=" + old + "\n", "main.go": "package main\n"})
	writeFile(t, root, ".env", "K="+cur+"\n")
	testutil.Git(t, root, "commit", "-q", "-am", "rotate")
	c := NewCache(Config{Deny: defaultDeny(t), Git: testGit, Rewalk: time.Hour, HistoryWait: time.Minute})
	t.Cleanup(func() { c.Close() })
	release := make(chan struct{})
	c.histHook = func(string) { <-release }
	ctx := testCtx(t)
	s, pending, err := c.Current(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if pending == nil || !s.HistoryPending || redacts(s.Known, old) || !redacts(s.Known, cur) {
		t.Fatalf("while the history is learned: channel %v, pending %v, knows the old value %v, the current %v",
			pending != nil, s.HistoryPending, redacts(s.Known, old), redacts(s.Known, cur))
	}
	close(release)
	<-pending
	s, err = c.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if s.HistoryPending || !redacts(s.Known, old) {
		t.Errorf("after the learning: pending %v, knows the old value %v", s.HistoryPending, redacts(s.Known, old))
	}
	if _, pending, err := c.Current(ctx, root); err != nil || pending != nil {
		t.Errorf("Current after the learning: channel %v, err %v", pending != nil, err)
	}
}
