package checkid

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
)

// baseRepo is a committed repository with a few files and a .gitignore.
func baseRepo(t testing.TB) string {
	t.Helper()
	dir := newRepo(t)
	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 1\n")
	writeFile(t, dir, "src/b.go", "package src\n\nvar B = 1\n")
	writeFile(t, dir, "README.md", "# test\n")
	writeFile(t, dir, ".gitignore", "*.log\nbuild/\n")
	commitAll(t, dir, "base")
	return dir
}

func contentRev(t testing.TB, dir string, o Options) Revision {
	t.Helper()
	var g gitx.Git
	rev, err := ContentRevision(testCtx(t), &g, dir, o)
	if err != nil {
		t.Fatalf("ContentRevision: %v", err)
	}
	if rev.Dirty == nil {
		t.Fatal("Dirty is nil, want a non-nil map")
	}
	if got := rev.ComputeDigest(); rev.Digest != got {
		t.Fatalf("Digest = %s, want ComputeDigest() = %s", rev.Digest, got)
	}
	if rev.Clean != (len(rev.Dirty) == 0) {
		t.Fatalf("Clean = %v with %d dirty paths", rev.Clean, len(rev.Dirty))
	}
	return rev
}

func wantDirty(t *testing.T, rev Revision, want map[string]string) {
	t.Helper()
	if !maps.Equal(rev.Dirty, want) {
		t.Fatalf("Dirty = %v, want %v", rev.Dirty, want)
	}
}

func TestContentRevisionClean(t *testing.T) {
	dir := baseRepo(t)
	rev := contentRev(t, dir, Options{})
	if !rev.Clean || len(rev.Dirty) != 0 {
		t.Fatalf("got Clean=%v Dirty=%v, want clean", rev.Clean, rev.Dirty)
	}
	head := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	tree := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD^{tree}"))
	if rev.Head != head || rev.Tree != tree {
		t.Fatalf("got head %s tree %s, want %s %s", rev.Head, rev.Tree, head, tree)
	}
	// The same content at another commit is the same revision digest.
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "empty")
	again := contentRev(t, dir, Options{})
	if again.Head == rev.Head || again.Digest != rev.Digest {
		t.Fatalf("empty commit: head %s digest %s, want new head and digest %s", again.Head, again.Digest, rev.Digest)
	}
}

// TestContentRevisionRevert is the key property: editing a file changes the
// digest and reverting the edit gives the original digest back.
func TestContentRevisionRevert(t *testing.T) {
	dir := baseRepo(t)
	orig := contentRev(t, dir, Options{})

	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 2\n")
	mod := contentRev(t, dir, Options{})
	if mod.Digest == orig.Digest || mod.Clean {
		t.Fatalf("modified: digest unchanged (%s) or clean", mod.Digest)
	}
	wantDirty(t, mod, map[string]string{"src/a.go": sha("package src\n\nvar A = 2\n")})

	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 3\n")
	mod2 := contentRev(t, dir, Options{})
	if mod2.Digest == mod.Digest {
		t.Fatal("a second edit gave the same digest")
	}

	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 1\n")
	back := contentRev(t, dir, Options{})
	if back.Digest != orig.Digest || !back.Clean {
		t.Fatalf("reverted: got digest %s clean %v, want %s clean", back.Digest, back.Clean, orig.Digest)
	}

	// Staged, then edited back to HEAD's content: the work tree equals
	// HEAD, so the revision does too.
	writeFile(t, dir, "src/a.go", "staged\n")
	gitT(t, dir, "add", "src/a.go")
	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 1\n")
	if got := contentRev(t, dir, Options{}); got.Digest != orig.Digest {
		t.Fatalf("staged then reverted: got %v, want the original digest", got.Dirty)
	}
}

func TestContentRevisionUntrackedIgnoredExclude(t *testing.T) {
	dir := baseRepo(t)
	orig := contentRev(t, dir, Options{})

	writeFile(t, dir, "debug.log", "ignored\n")
	writeFile(t, dir, "build/out.bin", "ignored\n")
	if got := contentRev(t, dir, Options{}); got.Digest != orig.Digest {
		t.Fatalf("ignored files changed the digest: %v", got.Dirty)
	}

	writeFile(t, dir, "src/new.go", "package src\n")
	writeFile(t, dir, "deep/er/x.txt", "x\n")
	rev := contentRev(t, dir, Options{})
	wantDirty(t, rev, map[string]string{"src/new.go": sha("package src\n"), "deep/er/x.txt": sha("x\n")})

	excl := func(rel string) bool { return strings.HasPrefix(rel, "deep/") }
	rev = contentRev(t, dir, Options{Exclude: excl})
	wantDirty(t, rev, map[string]string{"src/new.go": sha("package src\n")})

	// Excluding every dirty path gives the clean digest.
	all := func(string) bool { return true }
	if got := contentRev(t, dir, Options{Exclude: all}); got.Digest != orig.Digest || !got.Clean {
		t.Fatalf("everything excluded: got %v, want the clean digest", got.Dirty)
	}
}

func TestContentRevisionStagedDeletedRenamed(t *testing.T) {
	dir := baseRepo(t)

	// Staged and then modified again: the work tree content counts.
	writeFile(t, dir, "src/a.go", "staged\n")
	gitT(t, dir, "add", "src/a.go")
	writeFile(t, dir, "src/a.go", "worktree\n")
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"src/a.go": sha("worktree\n")})

	// Staged only.
	writeFile(t, dir, "src/a.go", "staged\n")
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"src/a.go": sha("staged\n")})
	gitT(t, dir, "reset", "-q", "--hard")

	// Deleted in the work tree, and deleted in the index.
	if err := os.Remove(filepath.Join(dir, "src/b.go")); err != nil {
		t.Fatal(err)
	}
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"src/b.go": DirtyDeleted})
	// Removed from the index only: the work tree (what a check sees)
	// still has HEAD's content, so it is not dirty; changed, it is.
	gitT(t, dir, "rm", "-q", "--cached", "README.md")
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"src/b.go": DirtyDeleted})
	writeFile(t, dir, "README.md", "# changed\n")
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"src/b.go": DirtyDeleted, "README.md": sha("# changed\n")})
	gitT(t, dir, "reset", "-q", "--hard")

	// Renamed: both paths.
	gitT(t, dir, "mv", "src/a.go", "src/renamed.go")
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{
		"src/a.go":       DirtyDeleted,
		"src/renamed.go": sha("package src\n\nvar A = 1\n"),
	})
	gitT(t, dir, "reset", "-q", "--hard")

	// Added to the index, then removed from the work tree: nothing left.
	writeFile(t, dir, "tmp.txt", "x\n")
	gitT(t, dir, "add", "tmp.txt")
	if err := os.Remove(filepath.Join(dir, "tmp.txt")); err != nil {
		t.Fatal(err)
	}
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{})
}

func TestContentRevisionModesAndLinks(t *testing.T) {
	dir := baseRepo(t)
	if err := os.Symlink("src/a.go", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	// A dangling link and one pointing outside the root: never followed.
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "outside")); err != nil {
		t.Fatal(err)
	}
	rev := contentRev(t, dir, Options{})
	wantDirty(t, rev, map[string]string{
		"link":    DirtySymlinkPrefix + sha("src/a.go"),
		"outside": DirtySymlinkPrefix + sha("/etc/passwd"),
	})
	commitAll(t, dir, "links")

	// Retargeting a committed link, and back.
	clean := contentRev(t, dir, Options{})
	os.Remove(filepath.Join(dir, "link"))
	if err := os.Symlink("src/b.go", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"link": DirtySymlinkPrefix + sha("src/b.go")})
	os.Remove(filepath.Join(dir, "link"))
	if err := os.Symlink("src/a.go", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if got := contentRev(t, dir, Options{}); got.Digest != clean.Digest {
		t.Fatalf("link restored: got %v, want clean", got.Dirty)
	}

	// The executable bit is part of a file's state.
	if err := os.Chmod(filepath.Join(dir, "README.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"README.md": DirtyExecPrefix + sha("# test\n")})
	if err := os.Chmod(filepath.Join(dir, "README.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := contentRev(t, dir, Options{}); got.Digest != clean.Digest {
		t.Fatalf("mode restored: got %v, want clean", got.Dirty)
	}
}

func TestContentRevisionOddNames(t *testing.T) {
	dir := baseRepo(t)
	names := []string{"with space.txt", "tab\there", "new\nline", "ünï.txt", "-dash", "q\"uote", "back\\slash"}
	want := map[string]string{}
	for i, n := range names {
		c := "content " + strconv.Itoa(i) + "\n"
		writeFile(t, dir, "odd/"+n, c)
		want["odd/"+n] = sha(c)
	}
	wantDirty(t, contentRev(t, dir, Options{}), want)
}

func TestContentRevisionManyFilesConcurrent(t *testing.T) {
	dir := baseRepo(t)
	want := map[string]string{}
	for i := 0; i < 200; i++ {
		c := strings.Repeat("line "+strconv.Itoa(i)+"\n", i*37)
		p := "gen/d" + strconv.Itoa(i%7) + "/f" + strconv.Itoa(i) + ".txt"
		writeFile(t, dir, p, c)
		want[p] = sha(c)
	}
	// One file bigger than the read buffer.
	big := strings.Repeat("0123456789abcdef", 50000)
	writeFile(t, dir, "gen/big.bin", big)
	want["gen/big.bin"] = sha(big)
	wantDirty(t, contentRev(t, dir, Options{}), want)
}

func TestContentRevisionUnborn(t *testing.T) {
	dir := newRepo(t)
	rev := contentRev(t, dir, Options{})
	if rev.Head != "" || rev.Tree != "" || !rev.Clean {
		t.Fatalf("empty unborn: got %+v, want no head, no tree, clean", rev)
	}
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "b.txt", "b\n")
	gitT(t, dir, "add", "a.txt")
	rev = contentRev(t, dir, Options{})
	wantDirty(t, rev, map[string]string{"a.txt": sha("a\n"), "b.txt": sha("b\n")})
}

func TestContentRevisionSubmoduleAndNestedRepo(t *testing.T) {
	sub := baseRepo(t)
	dir := baseRepo(t)
	gitT(t, dir, "submodule", "add", "-q", sub, "mod")
	commitAll(t, dir, "add submodule")
	clean := contentRev(t, dir, Options{})
	if !clean.Clean {
		t.Fatalf("fresh submodule: got %v, want clean", clean.Dirty)
	}

	// A new commit checked out in the submodule.
	modDir := filepath.Join(dir, "mod")
	writeFile(t, modDir, "src/a.go", "changed in submodule\n")
	commitAll(t, modDir, "sub change")
	subHead := strings.TrimSpace(gitT(t, modDir, "rev-parse", "HEAD"))
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"mod": DirtySubmodulePrefix + subHead})

	// Uncommitted changes inside it are flagged, not hashed.
	writeFile(t, modDir, "README.md", "dirty\n")
	writeFile(t, modDir, "untracked.txt", "u\n")
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"mod": DirtySubmodulePrefix + subHead + "+modified+untracked"})

	// Back to the recorded commit and clean: the original digest.
	gitT(t, modDir, "reset", "-q", "--hard", "HEAD~1")
	os.Remove(filepath.Join(modDir, "untracked.txt"))
	if got := contentRev(t, dir, Options{}); got.Digest != clean.Digest {
		t.Fatalf("submodule restored: got %v, want clean", got.Dirty)
	}

	// An untracked nested repository is recorded by its HEAD.
	nested := filepath.Join(dir, "nested")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, nested, "init", "-q")
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"nested": DirtyRepoPrefix + "unborn"})
	writeFile(t, nested, "n.txt", "n\n")
	commitAll(t, nested, "nested")
	nestedHead := strings.TrimSpace(gitT(t, nested, "rev-parse", "HEAD"))
	wantDirty(t, contentRev(t, dir, Options{}), map[string]string{"nested": DirtyRepoPrefix + nestedHead})
}

func TestContentRevisionLimits(t *testing.T) {
	dir := baseRepo(t)
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "b.txt", "b\n")
	writeFile(t, dir, "c.txt", strings.Repeat("c", 100))
	var g gitx.Git
	ctx := testCtx(t)

	tests := []struct {
		name string
		o    Options
		code errs.Code
	}{
		{"too many files", Options{MaxDirtyFiles: 2}, errs.PolicyDenied},
		{"exclude brings it under the limit", Options{MaxDirtyFiles: 2, Exclude: func(p string) bool { return p == "c.txt" }}, ""},
		{"file too big", Options{MaxFileBytes: 50}, errs.PolicyDenied},
		{"big file excluded", Options{MaxFileBytes: 50, Exclude: func(p string) bool { return p == "c.txt" }}, ""},
		{"exactly at the limits", Options{MaxDirtyFiles: 3, MaxFileBytes: 100}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ContentRevision(ctx, &g, dir, tt.o)
			if got := errs.CodeOf(err); got != tt.code {
				t.Fatalf("got %q (%v), want %q", got, err, tt.code)
			}
		})
	}
}

func TestContentRevisionErrors(t *testing.T) {
	repo := baseRepo(t)
	plain := t.TempDir()
	var g gitx.Git
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	writeFile(t, repo, "dirty.txt", "d\n")

	tests := []struct {
		name string
		ctx  context.Context
		root string
		code errs.Code
	}{
		{"empty root", testCtx(t), "", errs.InvalidArgument},
		{"missing directory", testCtx(t), filepath.Join(plain, "nope"), errs.NotFound},
		{"not a repository", testCtx(t), plain, errs.NotAGitRepository},
		{"subdirectory", testCtx(t), filepath.Join(repo, "src"), errs.InvalidArgument},
		{"cancelled", cancelled, repo, errs.Cancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ContentRevision(tt.ctx, &g, tt.root, Options{})
			if got := errs.CodeOf(err); got != tt.code {
				t.Fatalf("got %q (%v), want %q", got, err, tt.code)
			}
		})
	}
	// A nil *gitx.Git means the default git.
	if _, err := ContentRevision(testCtx(t), nil, repo, Options{}); err != nil {
		t.Fatalf("nil git: got %v, want success", err)
	}
}

func TestParseStatus(t *testing.T) {
	const oid = "1111111111111111111111111111111111111111"
	const zero = "0000000000000000000000000000000000000000"
	z := func(recs ...string) []byte { return []byte(strings.Join(recs, "\x00") + "\x00") }
	tests := []struct {
		name    string
		in      []byte
		head    string
		entries []dirtyEntry
		wantErr bool
	}{
		{name: "empty", in: nil},
		{name: "unborn", in: z("# branch.oid (initial)", "# branch.head main"), head: ""},
		{name: "head and ab", in: z("# branch.oid "+oid, "# branch.ab +? -?"), head: oid},
		{
			name: "ordinary", in: z("1 .M N... 100644 100644 100644 " + oid + " " + oid + " dir/a b.go"),
			entries: []dirtyEntry{{path: "dir/a b.go", sub: "N...", headKnown: true, headMode: "100644", headOID: oid, indexOID: oid}},
		},
		{
			name: "rename pair", in: z("2 R. N... 100644 100644 100644 "+oid+" "+oid+" R100 new", "old"),
			entries: []dirtyEntry{
				{path: "new", sub: "N...", indexOID: oid},
				{path: "old", sub: "N...", headKnown: true, headMode: "100644", headOID: oid},
			},
		},
		{
			name: "staged deletion merged with untracked",
			in:   z("1 D. N... 100644 000000 000000 "+oid+" "+zero+" a", "? a", "? dir/", "! ignored"),
			entries: []dirtyEntry{
				{path: "a", sub: "N...", headKnown: true, headMode: "100644", headOID: oid, indexOID: zero},
				{path: "dir", untracked: true, dir: true},
			},
		},
		{
			name:    "unmerged",
			in:      z("u UU N... 100644 100644 100644 100644 " + oid + " " + oid + " " + oid + " c.txt"),
			entries: []dirtyEntry{{path: "c.txt", sub: "N..."}},
		},
		{name: "unknown record", in: z("x what"), wantErr: true},
		{name: "short ordinary", in: z("1 .M N... 100644"), wantErr: true},
		{name: "bad xy", in: z("1 ZZ N... 100644 100644 100644 " + oid + " " + oid + " a"), wantErr: true},
		{name: "bad oid", in: z("1 .M N... 100644 100644 100644 xyz " + oid + " a"), wantErr: true},
		{name: "rename without orig", in: []byte("2 R. N... 100644 100644 100644 " + oid + " " + oid + " R100 new\x00"), wantErr: true},
		{name: "escaping path", in: z("? ../x"), wantErr: true},
		{name: "absolute path", in: z("? /etc/passwd"), wantErr: true},
		{name: "unclean path", in: z("? a/./b"), wantErr: true},
		{name: "bad branch oid", in: z("# branch.oid nothex"), wantErr: true},
		{name: "short untracked", in: z("?"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := parseStatus(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				if errs.CodeOf(err) != errs.InvalidArgument {
					t.Fatalf("got code %s, want INVALID_ARGUMENT", errs.CodeOf(err))
				}
				return
			}
			if st.head != tt.head {
				t.Errorf("head = %q, want %q", st.head, tt.head)
			}
			if len(st.entries) != len(tt.entries) {
				t.Fatalf("got %d entries %+v, want %+v", len(st.entries), st.entries, tt.entries)
			}
			for i := range tt.entries {
				if st.entries[i] != tt.entries[i] {
					t.Errorf("entry %d = %+v, want %+v", i, st.entries[i], tt.entries[i])
				}
			}
		})
	}
}

func FuzzParseStatus(f *testing.F) {
	const oid = "1111111111111111111111111111111111111111"
	for _, s := range []string{
		"# branch.oid " + oid + "\x00# branch.head main\x00",
		"1 .M N... 100644 100644 100644 " + oid + " " + oid + " a b\x00",
		"2 R. N... 100644 100644 100644 " + oid + " " + oid + " R100 new\x00old\x00",
		"u UU N... 100644 100644 100644 100644 " + oid + " " + oid + " " + oid + " c\x00",
		"? dir/\x00? x\x00! y\x00",
		"1 D. S.MU 160000 000000 000000 " + oid + " " + oid + " mod\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStatus(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, e := range st.entries {
			if _, err := cleanStatusPath(e.path); err != nil {
				t.Fatalf("accepted bad path %q", e.path)
			}
			if seen[e.path] {
				t.Fatalf("path %q listed twice", e.path)
			}
			seen[e.path] = true
		}
	})
}

// TestIdentityEndToEnd computes full identities from a real repository and
// a real environment probe: an edit changes the identity, its revert gives
// the original identity back.
func TestIdentityEndToEnd(t *testing.T) {
	dir := baseRepo(t)
	bin := t.TempDir()
	fakeTool(t, bin, "go", `echo "go version go9.9.9 fake/arch"`)
	p := NewEnvProbe(nil)
	environ := []string{"PATH=" + bin}
	def := Definition{Argv: []string{"go", "test", "./..."}, Effects: []string{"workspace_write"}, TimeoutMs: 60000}
	identity := func(environ []string) Identity {
		t.Helper()
		env := fingerprint(t, p, def.Argv, environ)
		return Compute(contentRev(t, dir, Options{}), def, env)
	}
	orig := identity(environ)
	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 42\n")
	edited := identity(environ)
	if edited.Digest == orig.Digest || edited.Definition != orig.Definition || edited.Env != orig.Env {
		t.Fatalf("edit: got %+v, want only the revision to change from %+v", edited, orig)
	}
	writeFile(t, dir, "src/a.go", "package src\n\nvar A = 1\n")
	if back := identity(environ); back != orig {
		t.Fatalf("revert: got %+v, want %+v", back, orig)
	}
	if withFlags := identity(append(environ, "GOFLAGS=-race")); withFlags.Digest == orig.Digest {
		t.Fatal("GOFLAGS did not change the identity")
	}
}

func TestContentRevisionConcurrentCallers(t *testing.T) {
	dir := baseRepo(t)
	writeFile(t, dir, "src/a.go", "changed\n")
	writeFile(t, dir, "new.txt", "new\n")
	want := contentRev(t, dir, Options{}).Digest
	var g gitx.Git
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			rev, err := ContentRevision(testCtx(t), &g, dir, Options{})
			if err != nil || rev.Digest != want {
				t.Errorf("caller %d: got %s (%v), want %s", i, rev.Digest, err, want)
			}
		})
	}
	wg.Wait()
}
