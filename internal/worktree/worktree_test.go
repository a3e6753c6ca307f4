package worktree

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var gitEnv = []string{
	"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
	"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
}

// git runs the real git for test setup and returns its stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, stderr.String())
	}
	return out.String()
}

func write(t testing.TB, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository with one commit of a few files.
func newRepo(t testing.TB) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir()) // gitx keeps HOME; keep user config out
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "a.txt"), "alpha\n", 0o644)
	write(t, filepath.Join(dir, "b.txt"), "bravo\n", 0o644)
	write(t, filepath.Join(dir, "c.txt"), "charlie\n", 0o644)
	write(t, filepath.Join(dir, "old.txt"), "to be renamed\n", 0o644)
	write(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho hi\n", 0o644)
	write(t, filepath.Join(dir, "bin.dat"), "\x00\x01\x02binary\x00", 0o644)
	write(t, filepath.Join(dir, "sub/deep.txt"), "deep\n", 0o644)
	write(t, filepath.Join(dir, ".gitignore"), "*.log\nbuild/\n", 0o644)
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// dirty applies every kind of change to the main checkout.
func dirty(t testing.TB, dir string) {
	t.Helper()
	write(t, filepath.Join(dir, "a.txt"), "alpha modified\n", 0o644)           // unstaged
	write(t, filepath.Join(dir, "b.txt"), "bravo staged\n", 0o644)             // staged
	git(t, dir, "add", "b.txt")                                                //
	write(t, filepath.Join(dir, "b.txt"), "bravo staged then edited\n", 0o644) // staged + unstaged
	git(t, dir, "rm", "-q", "c.txt")                                           // staged deletion
	os.Remove(filepath.Join(dir, "sub/deep.txt"))                              // unstaged deletion
	git(t, dir, "mv", "old.txt", "new.txt")                                    // rename
	os.Chmod(filepath.Join(dir, "run.sh"), 0o755)                              // mode change
	write(t, filepath.Join(dir, "bin.dat"), "\x00\xff\xfechanged\x00\x01", 0o644)
	os.Remove(filepath.Join(dir, "link"))
	os.Symlink("b.txt", filepath.Join(dir, "link")) // symlink retarget
	write(t, filepath.Join(dir, "untracked.txt"), "new file\n", 0o600)
	write(t, filepath.Join(dir, "tools/gen.sh"), "#!/bin/sh\n", 0o750)
	os.Symlink("../a.txt", filepath.Join(dir, "tools/link-to-a"))
	write(t, filepath.Join(dir, "added.bin"), "\x00\x00new binary", 0o644)
	git(t, dir, "add", "added.bin")
	write(t, filepath.Join(dir, "debug.log"), "ignored\n", 0o644) // ignored: not carried
	write(t, filepath.Join(dir, "build/out"), "ignored\n", 0o644)
}

// snapshot maps each path (but .git) to mode + content or link target.
func snapshot(t testing.TB, root string, skip ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a linked worktree's .git file
		}
		for _, s := range skip {
			if rel == s || strings.HasPrefix(rel, s+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if rel == "." || d.IsDir() {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			m[rel] = "link -> " + target
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m[rel] = info.Mode().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func diffSnapshots(got, want map[string]string) []string {
	var d []string
	for k, v := range want {
		if got[k] != v {
			d = append(d, k+": got "+quote(got[k])+", want "+quote(v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			d = append(d, k+": got "+quote(v)+", want absent")
		}
	}
	sort.Strings(d)
	return d
}

func quote(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return "\"" + strings.ReplaceAll(s, "\n", "\\n") + "\""
}

func TestCreateClean(t *testing.T) {
	repo := newRepo(t)
	g := &gitx.Git{}
	ctx := context.Background()
	dest := filepath.Join(t.TempDir(), "jobs", "wt1")
	wt, err := Create(ctx, g, repo, dest)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
	if wt.Path != dest || wt.Base != head || wt.Dirty {
		t.Errorf("got %+v, want path %s base %s clean", wt, dest, head)
	}
	if d := diffSnapshots(snapshot(t, dest), snapshot(t, repo)); len(d) > 0 {
		t.Errorf("worktree differs from the checkout:\n%s", strings.Join(d, "\n"))
	}
	st, _ := os.Stat(filepath.Dir(dest))
	if st.Mode().Perm() != 0o700 {
		t.Errorf("parent mode: got %o, want 700", st.Mode().Perm())
	}
	if out := git(t, dest, "status", "--porcelain"); out != "" {
		t.Errorf("worktree status: got %q, want clean", out)
	}
	if err := Remove(ctx, g, repo, dest); err != nil {
		t.Fatal(err)
	}
}

func TestCreateCarriesDirtyState(t *testing.T) {
	repo := newRepo(t)
	dirty(t, repo)
	g := &gitx.Git{}
	ctx := context.Background()
	statusBefore := git(t, repo, "status", "--porcelain", "--untracked-files=all")
	filesBefore := snapshot(t, repo)
	indexBefore, _ := os.ReadFile(filepath.Join(repo, ".git", "index"))

	dest := filepath.Join(t.TempDir(), "wt")
	wt, err := Create(ctx, g, repo, dest)
	if err != nil {
		t.Fatal(err)
	}
	if !wt.Dirty {
		t.Errorf("Dirty: got false, want true")
	}
	// The worktree's files equal the main checkout's (ignored files aside).
	want := snapshot(t, repo, "debug.log", "build")
	if d := diffSnapshots(snapshot(t, dest), want); len(d) > 0 {
		t.Errorf("worktree differs from the checkout:\n%s", strings.Join(d, "\n"))
	}
	// The main checkout is untouched.
	if got := git(t, repo, "status", "--porcelain", "--untracked-files=all"); got != statusBefore {
		t.Errorf("main status changed:\ngot  %q\nwant %q", got, statusBefore)
	}
	if d := diffSnapshots(snapshot(t, repo), filesBefore); len(d) > 0 {
		t.Errorf("main checkout changed:\n%s", strings.Join(d, "\n"))
	}
	indexAfter, _ := os.ReadFile(filepath.Join(repo, ".git", "index"))
	if !bytes.Equal(indexBefore, indexAfter) {
		t.Errorf("main index changed")
	}
	if got := git(t, repo, "stash", "list"); got != "" {
		t.Errorf("stash list: got %q, want empty", got)
	}
	// The tracked changes are staged in the worktree: diff HEAD agrees.
	if got, want := git(t, dest, "diff", "--binary", "--cached", "HEAD", "--stat"), git(t, repo, "diff", "--binary", "HEAD", "--stat"); got != want {
		t.Errorf("worktree staged changes:\ngot  %s\nwant %s", got, want)
	}

	// Edits in the worktree do not reach the main checkout.
	write(t, filepath.Join(dest, "a.txt"), "edited in the worktree\n", 0o644)
	write(t, filepath.Join(dest, "only-in-wt.txt"), "x\n", 0o644)
	os.Remove(filepath.Join(dest, "untracked.txt"))
	if d := diffSnapshots(snapshot(t, repo), filesBefore); len(d) > 0 {
		t.Errorf("worktree edits leaked into the checkout:\n%s", strings.Join(d, "\n"))
	}
	if got := git(t, repo, "status", "--porcelain", "--untracked-files=all"); got != statusBefore {
		t.Errorf("main status changed after worktree edits")
	}

	if err := Remove(ctx, g, repo, dest); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dest); !os.IsNotExist(err) {
		t.Errorf("worktree dir after Remove: %v, want gone", err)
	}
	if err := Remove(ctx, g, repo, dest); err != nil {
		t.Errorf("second Remove: got %v, want nil", err)
	}
	paths, err := List(ctx, g, repo)
	if err != nil || len(paths) != 1 {
		t.Errorf("List after Remove: got %q, %v, want only the main worktree", paths, err)
	}
	if got := git(t, repo, "status", "--porcelain", "--untracked-files=all"); got != statusBefore {
		t.Errorf("main status changed after Remove")
	}
}

// Skipped paths (a job's secret files and their other names) are carried
// over neither as dirty changes nor as untracked files.
func TestCreateSkipping(t *testing.T) {
	repo := newRepo(t)
	dirty(t, repo)
	write(t, filepath.Join(repo, ".env"), "TOKEN=never-copied\n", 0o600)
	if err := os.Link(filepath.Join(repo, ".env"), filepath.Join(repo, "env-copy.txt")); err != nil {
		t.Skipf("no hard links: %v", err)
	}
	headA := git(t, repo, "show", "HEAD:a.txt")
	dest := filepath.Join(t.TempDir(), "wt")
	write(t, filepath.Join(repo, "left-out.txt"), "x\n", 0o644)
	skip := Skip{Paths: []string{".env", "env-copy.txt", "a.txt", "tools"}, File: func(rel string, fi fs.FileInfo) bool {
		return rel == "left-out.txt" && fi.Mode().IsRegular()
	}}
	if _, err := CreateSkipping(context.Background(), &gitx.Git{}, repo, dest, skip); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dest)
	for _, p := range []string{".env", "env-copy.txt", "tools/gen.sh", "tools/link-to-a", "left-out.txt"} {
		if _, ok := got[p]; ok {
			t.Errorf("%s was carried into the worktree", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dest, "a.txt")); err != nil || string(b) != headA {
		t.Errorf("a.txt = %q, %v; want HEAD's %q (its change skipped)", b, err, headA)
	}
	// Everything else is carried as Create carries it.
	want := snapshot(t, repo, "debug.log", "build", ".env", "env-copy.txt", "a.txt", "tools", "left-out.txt")
	if d := diffSnapshots(snapshot(t, dest, "a.txt"), want); len(d) > 0 {
		t.Errorf("worktree differs from the checkout beyond the skipped paths:\n%s", strings.Join(d, "\n"))
	}
}

func TestCreateRejects(t *testing.T) {
	repo := newRepo(t)
	g := &gitx.Git{}
	ctx := context.Background()
	existing := t.TempDir()
	tests := []struct {
		name, repo, dest string
		want             errs.Code
	}{
		{"relative dest", repo, "rel/wt", errs.InvalidArgument},
		{"dest exists", repo, existing, errs.InvalidArgument},
		{"dest inside repo", repo, filepath.Join(repo, "wt"), errs.InvalidArgument},
		{"relative repo", "repo", filepath.Join(t.TempDir(), "wt"), errs.InvalidArgument},
		{"not a repo", t.TempDir(), filepath.Join(t.TempDir(), "wt"), errs.NotAGitRepository},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Create(ctx, g, tt.repo, tt.dest)
			if got := errs.CodeOf(err); got != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
}

func TestCreateFailureCleansUp(t *testing.T) {
	repo := newRepo(t)
	g := &gitx.Git{}
	ctx := context.Background()
	dest := filepath.Join(t.TempDir(), "wt")
	ctx2, cancel := context.WithCancel(ctx)
	cancel() // a cancelled context fails the first git step
	if _, err := Create(ctx2, g, repo, dest); errs.CodeOf(err) != errs.Cancelled {
		t.Errorf("cancelled: got %v, want CANCELLED", err)
	}
	if _, err := os.Lstat(dest); !os.IsNotExist(err) {
		t.Errorf("dest after failed Create: %v, want absent", err)
	}
	// A patch that does not apply (simulated by a git wrapper whose apply
	// fails) fails Create after the worktree was added.
	fake := filepath.Join(t.TempDir(), "git")
	real, _ := exec.LookPath("git")
	write(t, fake, "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = apply ] && { echo 'error: patch failed: a.txt:1' >&2; exit 1; }; done\nexec "+real+" \"$@\"\n", 0o755)
	write(t, filepath.Join(repo, "a.txt"), "changed\n", 0o644)
	_, err := Create(ctx, &gitx.Git{Bin: fake}, repo, dest)
	if errs.CodeOf(err) != errs.PatchConflict || !strings.Contains(err.Error(), "patch failed") {
		t.Errorf("apply failure: got %v, want PATCH_CONFLICT with git's message", err)
	}
	if _, err := os.Lstat(dest); !os.IsNotExist(err) {
		t.Errorf("dest after failed apply: %v, want absent", err)
	}
	if paths, _ := List(ctx, g, repo); len(paths) != 1 {
		t.Errorf("worktrees after failed Create: got %q, want only main", paths)
	}
	if got := git(t, repo, "status", "--porcelain"); got != " M a.txt\n" {
		t.Errorf("main status: got %q, want %q", got, " M a.txt\n")
	}
}

func TestConcurrentCreate(t *testing.T) {
	repo := newRepo(t)
	dirty(t, repo)
	g := &gitx.Git{}
	ctx := context.Background()
	base := t.TempDir()
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := Create(ctx, g, repo, filepath.Join(base, "wt", string(rune('a'+i))))
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Errorf("concurrent Create: %v", err)
		}
	}
	paths, err := List(ctx, g, repo)
	if err != nil || len(paths) != 5 {
		t.Fatalf("List: got %d paths (%v), want 5", len(paths), err)
	}
	removed, err := Prune(ctx, g, repo, filepath.Join(base, "wt"), nil)
	if err != nil || len(removed) != 4 {
		t.Errorf("Prune: got %q, %v, want 4 removed", removed, err)
	}
}

func TestPruneKeep(t *testing.T) {
	repo := newRepo(t)
	g := &gitx.Git{}
	ctx := context.Background()
	jobs := filepath.Join(t.TempDir(), "jobs")
	other := filepath.Join(t.TempDir(), "elsewhere")
	var made []string
	for _, name := range []string{"keep-1", "drop-1", "drop-2"} {
		wt, err := Create(ctx, g, repo, filepath.Join(jobs, name))
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, wt.Path)
	}
	if _, err := Create(ctx, g, repo, other); err != nil {
		t.Fatal(err)
	}
	// A worktree whose directory vanished is pruned by git.
	os.RemoveAll(made[2])
	removed, err := Prune(ctx, g, repo, jobs, func(p string) bool { return strings.HasPrefix(filepath.Base(p), "keep-") })
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(removed)
	if len(removed) != 2 || filepath.Base(removed[0]) != "drop-1" || filepath.Base(removed[1]) != "drop-2" {
		t.Errorf("removed: got %q, want drop-1 and drop-2", removed)
	}
	paths, _ := List(ctx, g, repo)
	var names []string
	for _, p := range paths[1:] {
		names = append(names, filepath.Base(p))
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "elsewhere,keep-1" {
		t.Errorf("left: got %q, want elsewhere,keep-1", names)
	}
	if _, err := os.Stat(made[0]); err != nil {
		t.Errorf("kept worktree missing: %v", err)
	}
	// Prune never touches the main worktree, even when under covers it.
	removed, err = Prune(ctx, g, repo, filepath.Dir(repo), func(p string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "a.txt")); err != nil || len(removed) != 0 {
		t.Errorf("main checkout touched: removed %q, stat %v", removed, err)
	}
}

func TestRemoveRefusesForeignDirectory(t *testing.T) {
	repo := newRepo(t)
	g := &gitx.Git{}
	ctx := context.Background()
	foreign := t.TempDir()
	write(t, filepath.Join(foreign, "precious.txt"), "keep me", 0o644)
	err := Remove(ctx, g, repo, foreign)
	if errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("got %v, want INVALID_ARGUMENT", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, "precious.txt")); err != nil {
		t.Errorf("foreign directory damaged: %v", err)
	}
	if err := Remove(ctx, g, repo, repo); errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("removing the repository itself: got %v, want INVALID_ARGUMENT", err)
	}
	if err := Remove(ctx, g, repo, filepath.Dir(repo)); errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("removing the repository's parent: got %v, want INVALID_ARGUMENT", err)
	}
}

func TestParseList(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"main only", "worktree /r\x00HEAD abc\x00branch refs/heads/main\x00\x00", []string{"/r"}},
		{"linked", "worktree /r\x00HEAD abc\x00branch refs/heads/main\x00\x00worktree /w/x y\x00HEAD abc\x00detached\x00\x00", []string{"/r", "/w/x y"}},
		{"bare main", "worktree /r.git\x00bare\x00\x00worktree /w\x00HEAD abc\x00detached\x00\x00", []string{"/w"}},
		{"prunable", "worktree /r\x00HEAD a\x00\x00worktree /gone\x00HEAD a\x00detached\x00prunable gitdir file points to non-existent location\x00\x00", []string{"/r", "/gone"}},
		{"newline in path", "worktree /r\x00\x00worktree /a\nb\x00detached\x00\x00", []string{"/r", "/a\nb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseList([]byte(tt.in))
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func BenchmarkCreateRemoveDirty(b *testing.B) {
	repo := newRepo(b)
	dirty(b, repo)
	g := &gitx.Git{}
	ctx := context.Background()
	base := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dest := filepath.Join(base, "wt")
		if _, err := Create(ctx, g, repo, dest); err != nil {
			b.Fatal(err)
		}
		if err := Remove(ctx, g, repo, dest); err != nil {
			b.Fatal(err)
		}
	}
}
