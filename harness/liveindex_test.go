package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// TestLiveIndexStatusFollowsEdits: after each edit made behind harnessd's
// back, git_status answers in process (source index) and equals git's own.
func TestLiveIndexStatusFollowsEdits(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	want := func() gitx.Status {
		st, err := (&gitx.Git{}).Status(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	check := func(step, wantSource string) {
		t.Helper()
		got, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
		if err != nil {
			t.Fatal(err)
		}
		w := want()
		if !equalStatus(got.Status, w) {
			t.Fatalf("%s: live status %+v, git %+v", step, got.Status, w)
		}
		if wantSource != "" && got.Source != wantSource {
			t.Fatalf("%s: source %q (%s), want %q", step, got.Source, got.IndexReason, wantSource)
		}
	}
	check("first", "")
	check("again", "index")
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# demo\nchanged\n")
	check("edit", "index")
	write("new/dir/file.txt", "x\n")
	check("untracked dir", "index")
	if err := os.Remove(filepath.Join(root, "src/main.go")); err != nil {
		t.Fatal(err)
	}
	check("delete", "index")
	if err := os.Rename(filepath.Join(root, "new"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	check("dir rename", "index")
	write(".gitignore", "moved/\n")
	check("ignore rule", "")
	check("after ignore", "index")
}

func equalStatus(a, b gitx.Status) bool {
	norm := func(s gitx.Status) gitx.Status {
		for _, l := range []*[]gitx.Entry{&s.Staged, &s.Unstaged, &s.Conflicted} {
			if *l == nil {
				*l = []gitx.Entry{}
			}
		}
		if s.Untracked == nil {
			s.Untracked = []string{}
		}
		return s
	}
	a, b = norm(a), norm(b)
	return fmtStatus(a) == fmtStatus(b)
}

func fmtStatus(s gitx.Status) string { return fmt.Sprintf("%+v", s) }

// TestCommandCacheNeverServesAStaleTree: a pure git query replays its
// output only while nothing changed; a write behind harnessd's back, a
// staged change and a new commit each make it run again, and the output
// then shows the change.
func TestCommandCacheNeverServesAStaleTree(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	run := func(step, wantSource string) string {
		t.Helper()
		r, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"git", "status", "--short"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != wantSource {
			t.Fatalf("%s: source %q, want %q", step, r.Source, wantSource)
		}
		return r.Stdout.Text
	}
	first := run("first", "exec")
	if again := run("again", "cache"); again != first {
		t.Fatalf("cached output %q differs from %q", again, first)
	}
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("after an edit", "exec"); !strings.Contains(out, " M README.md") {
		t.Fatalf("edit not shown: %q", out)
	}
	if err := os.WriteFile(filepath.Join(root, "NEW"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("after a new file", "exec"); !strings.Contains(out, "?? NEW") {
		t.Fatalf("new file not shown: %q", out)
	}
	run("unchanged", "cache")
	r, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"git", "log", "-1"}})
	if err != nil || r.Source != "exec" {
		t.Fatalf("git log is never cached: %+v %v", r, err)
	}
}

// TestLiveIndexLeavesNoCookies: the sync cookies a live index makes in
// .git are removed when harnessd closes, and a dead process's leftovers
// are removed when a live index starts.
func TestLiveIndexLeavesNoCookies(t *testing.T) {
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	dead := filepath.Join(root, ".git", "harnessd-cookie-999999999-1")
	if err := os.WriteFile(dead, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	id := register(t, h, root)
	for range 3 {
		if _, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("a dead process's cookie was left: %v", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(root, ".git", "harnessd-cookie-*"))
	if len(left) != 0 {
		t.Fatalf("cookies left after close: %v", left)
	}
}
