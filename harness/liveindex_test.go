package harness_test

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/liveview"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/internal/watch"
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
	check("first", "exec") // the view builds in the background meanwhile
	if err := h.WarmLiveIndex(ctx, id); err != nil {
		t.Fatal(err)
	}
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
	if err := h.WarmLiveIndex(ctx, id); err != nil { // a cold view keeps nothing
		t.Fatal(err)
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

// TestLiveIndexWritesNothingInTheCheckout: the live index syncs through
// cookies raised outside the checkout (in the data dir, hidden from
// confined processes), so queries leave every file of the work tree and
// of .git as it was; the cookies are removed when harnessd closes, and a
// dead process's leftovers when a live index starts.
func TestLiveIndexWritesNothingInTheCheckout(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	h, err := harness.Open(ctx, harness.Config{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Refresh the index's stat data first: git status (the exec fallback)
	// may rewrite it, which is git's doing, not the live index's.
	if out, err := exec.Command("git", "-C", root, "status", "--porcelain").CombinedOutput(); err != nil {
		t.Fatalf("git status: %v %s", err, out)
	}
	before := treeState(t, root)
	id := register(t, h, root)
	cookieDir := watch.CookieDir(filepath.Join(dataDir, "cookies"), root)
	dead := filepath.Join(cookieDir, watch.CookiePrefix+"999999999-00-1")
	if err := os.MkdirAll(cookieDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dead, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		st, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Search(ctx, harness.SearchArgs{RepoID: id, Query: "b"}); err != nil {
			t.Fatal(err)
		}
		if i > 0 && st.Source != "index" { // the first builds the view
			t.Fatalf("status not from the live index (%s: %s): this test proves nothing", st.Source, st.IndexReason)
		}
		if err := h.WarmLiveIndex(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("a dead process's cookie was left: %v", err)
	}
	if live, _ := filepath.Glob(filepath.Join(cookieDir, watch.CookiePrefix+"*")); len(live) == 0 {
		t.Fatalf("no cookie in %s: the syncs raised theirs elsewhere", cookieDir)
	}
	if after := treeState(t, root); !maps.Equal(before, after) {
		t.Fatalf("the live index wrote into the checkout:\nbefore %v\nafter  %v", before, after)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(cookieDir, watch.CookiePrefix+"*")); len(left) != 0 {
		t.Fatalf("cookies left after close: %v", left)
	}
}

// treeState maps every path under root (.git included) to its size and
// modification time.
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLiveIndexWorktreesSubmodulesAttributes: a linked worktree of a
// repository with attributes (text=auto, eol=crlf, a filter, linguist
// lines) and CRLF files, and a superproject with a submodule, both answer
// git_status in process (source index) after edits, a .gitattributes
// rewrite, a commit inside the submodule and a change of the main
// checkout, and equal git's own status each time.
func TestLiveIndexWorktreesSubmodulesAttributes(t *testing.T) {
	ctx := context.Background()
	h := open(t)
	main := testutil.Repo(t, map[string]string{
		".gitattributes": "* text=auto\n*.bat eol=crlf\n*.bin filter=x\ndocs/** linguist-documentation\n",
		"a.txt":          "one\r\ntwo\r\n", "run.bat": "@echo off\r\n", "b.bin": "bb", "docs/d.md": "d\n",
	})
	testutil.Git(t, main, "config", "filter.x.clean", "cat")
	wt := filepath.Join(t.TempDir(), "wt")
	testutil.Git(t, main, "worktree", "add", "-q", "-b", "wt", wt)
	sub := testutil.Repo(t, map[string]string{"s.txt": "s\n"})
	super := testutil.Repo(t, map[string]string{"top.txt": "top\n"})
	testutil.Git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sm")
	testutil.Git(t, super, "commit", "-qm", "sm")

	ids := map[string]string{wt: register(t, h, wt), super: register(t, h, super)}
	for root, id := range ids {
		if _, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id}); err != nil {
			t.Fatal(err)
		}
		if err := h.WarmLiveIndex(ctx, id); err != nil {
			t.Fatal(err)
		}
		check := func(step string) {
			t.Helper()
			got, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
			if err != nil {
				t.Fatal(err)
			}
			want, err := (&gitx.Git{}).Status(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			// An index change (git add) rebuilds the view from git once.
			if !equalStatus(got.Status, want) || (got.Source != "index" && !strings.HasPrefix(step, "staged")) {
				t.Fatalf("%s: %s (%s: %s)\n got %+v\nwant %+v", filepath.Base(root), step, got.Source, got.IndexReason, got.Status, want)
			}
		}
		write := func(rel, body string) {
			t.Helper()
			testutil.WriteFile(t, root, rel, body)
		}
		check("warm")
		if root == wt {
			write("a.txt", "one\ntwo\n")    // text=auto: the blob has CRLF, git keeps it: modified
			write("run.bat", "@echo off\n") // eol=crlf: converted to the same blob... but another size
			write("b.bin", "cc")            // a filter: asked of git
			write("docs/d.md", "e\n")       // linguist: nothing status sees
			check("edits")
			write(".gitattributes", "* -text\n")
			check("attributes rewritten")
			testutil.WriteFile(t, main, "a.txt", "main's\n") // the main checkout's, not this one's
			check("main checkout changed")
			testutil.Git(t, wt, "add", "-A")
			check("staged")
			write("a.txt", "three\r\n")
			check("after staging")
			continue
		}
		write("sm/s.txt", "changed\n")
		check("submodule file")
		testutil.Git(t, filepath.Join(super, "sm"), "commit", "-qam", "in sm")
		check("submodule commit")
		write("sm/untracked.txt", "u\n")
		check("submodule untracked")
		write("top.txt", "TOP\n")
		check("superproject file")
	}
}

// TestFirstSearchOfABigCheckoutIsRg: the first search of a checkout of
// fillMin (2,000) files or more is answered by rg while the search index
// fills in the background (index_reason says so); once filled, the same
// search is answered in process with the same matches.
func TestFirstSearchOfABigCheckoutIsRg(t *testing.T) {
	h := open(t)
	files := map[string]string{}
	for i := range 2100 {
		body := fmt.Sprintf("package p%d\n\nvar x%d = %d\n", i, i, i)
		if i%300 == 0 {
			body += "// needle in file " + fmt.Sprint(i) + "\n"
		}
		files[fmt.Sprintf("d%02d/f%04d.go", i%40, i)] = body
	}
	root := testutil.Repo(t, files)
	ctx := context.Background()
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	// The view itself warm (status in process), the search index not yet:
	// searching is what starts its fill.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: r.ID})
		if err != nil {
			t.Fatal(err)
		}
		if st.Source == liveview.SourceIndex {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("git_status never answered in process: %s", st.IndexReason)
		}
	}
	first, err := h.Search(ctx, harness.SearchArgs{RepoID: r.ID, Query: "needle"})
	if err != nil {
		t.Fatal(err)
	}
	if first.Source != liveview.SourceExec || first.IndexReason != liveview.ReasonIndexing {
		t.Fatalf("first search of a warm view: source %q, reason %q; want exec, %q", first.Source, first.IndexReason, liveview.ReasonIndexing)
	}
	if err := h.WarmLiveIndex(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	again, err := h.Search(ctx, harness.SearchArgs{RepoID: r.ID, Query: "needle"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Source != liveview.SourceIndex {
		t.Fatalf("search after the fill: source %q (%s), want index", again.Source, again.IndexReason)
	}
	if len(first.Matches) != 7 || fmt.Sprint(first.Matches) != fmt.Sprint(again.Matches) {
		t.Fatalf("rg found %d matches, the index %d; want the same 7:\n%v\n%v", len(first.Matches), len(again.Matches), first.Matches, again.Matches)
	}
}
