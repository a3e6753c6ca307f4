package harness_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// TestLiveIndexProperty: after every step of a random sequence of file
// creates, edits, renames, deletes, directory moves, git add, commits,
// branch checkouts and forced watcher overflows (and, with a submodule,
// commits in it and diff.submodule), the live index's git_status equals
// git's own, its git_diff git diff's byte for byte, and its search equals
// the exec path's (a second harness with the live index off, which runs
// rg or git ls-files) and rg's.
func TestLiveIndexProperty(t *testing.T) {
	ctx := context.Background()
	live := open(t)
	plain, err := harness.Open(ctx, harness.Config{InMemory: true, NoLiveIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close(ctx) })
	// Each check builds a repository and registers it twice: 25 checks
	// (about 120 steps) unless -rapid.checks asks for another number.
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		f.Value.Set("25")
		defer f.Value.Set(f.DefValue)
	}
	checks, fromIndex, diffsInProcess, submoduleDiffs := 0, 0, 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		// The repository: attributes (text, eol, linguist lines) and CRLF
		// files, checked out as is, as a linked worktree, or as a
		// superproject with a submodule.
		repo := testutil.Repo(t, map[string]string{
			".gitignore":     "*.log\nbuild/\n!keep.log\n",
			".gitattributes": "*.txt text\n*.crlf eol=crlf\nd/** linguist-vendored\n*.md linguist-documentation -diff\n",
			"a.txt":          "needle one\n",
			"d/b.txt":        "two\nneedle\n",
			"d/e/c.go":       "package e // needle\n",
			"w.crlf":         "needle\r\nwin\r\n",
			"r.go":           "raw\r\nneedle\r\n",
		})
		layout := rapid.SampledFrom([]string{"main", "worktree", "submodule"}).Draw(rt, "layout")
		root, branches := repo, []string{"main", "topic"}
		var sm string // the submodule's work tree, in the submodule layout
		switch layout {
		case "worktree":
			root = filepath.Join(t.TempDir(), "wt")
			testutil.Git(t, repo, "worktree", "add", "-q", "-b", "wt", root)
			branches = []string{"wt", "topic"} // main is the main checkout's
		case "submodule":
			sub := testutil.Repo(t, map[string]string{"s.txt": "needle in sm\r\n", "lib/l.go": "package lib // one\n"})
			testutil.Git(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sm")
			testutil.Git(t, repo, "commit", "-qm", "sm")
			sm = filepath.Join(repo, "sm")
		}
		liveID := register(t, live, root)
		plainID := register(t, plain, root)
		if err := live.WarmLiveIndex(ctx, liveID); err != nil { // the first calls would be git's
			rt.Fatal(err)
		}
		// Each watched checkout holds an inotify instance (at most
		// fs.inotify.max_user_instances, often 128): let go of it.
		defer live.UnregisterRepository(ctx, harness.UnregisterArgs{RepoID: liveID})
		defer plain.UnregisterRepository(ctx, harness.UnregisterArgs{RepoID: plainID})
		gitIn := func(dir string, args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
			if out, err := cmd.CombinedOutput(); err != nil {
				rt.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		git := func(args ...string) { gitIn(root, args...) }
		names := []string{"a.txt", "d/b.txt", "d/e/c.go", "n.txt", "d/n.md", "x.log", "keep.log", "build/o.txt", "f/g/h.txt", "w.crlf", "r.go"}
		if sm != "" {
			names = append(names, "sm/s.txt", "sm/lib/l.go", "sm/u.txt")
		}
		dirs := []string{"d", "d/e", "f", "build", "m"}
		kinds := 13
		if sm != "" {
			kinds = 15
		}
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			var what string
			switch k := rapid.IntRange(0, kinds-1).Draw(rt, "kind"); k {
			case 0, 1, 2:
				p := rapid.SampledFrom(names).Draw(rt, "file")
				body := rapid.SampledFrom([]string{"", "needle\n", "x\nneedle here\n", "no match\n", "needle one\n", "needle\r\none\r\n", "mixed\r\nneedle\n"}).Draw(rt, "body")
				os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
				os.WriteFile(filepath.Join(root, p), []byte(body), 0o644)
				what = "write " + p
			case 3:
				p := rapid.SampledFrom(names).Draw(rt, "file")
				os.Remove(filepath.Join(root, p))
				what = "rm " + p
			case 4:
				from, to := rapid.SampledFrom(names).Draw(rt, "from"), rapid.SampledFrom(names).Draw(rt, "to")
				os.MkdirAll(filepath.Dir(filepath.Join(root, to)), 0o755)
				os.Rename(filepath.Join(root, from), filepath.Join(root, to))
				what = "mv " + from + " " + to
			case 5:
				from, to := rapid.SampledFrom(dirs).Draw(rt, "dfrom"), rapid.SampledFrom(dirs).Draw(rt, "dto")
				os.Rename(filepath.Join(root, from), filepath.Join(root, to))
				what = "mv dir " + from + " " + to
			case 6:
				p := rapid.SampledFrom(names).Draw(rt, "chmod")
				os.Chmod(filepath.Join(root, p), 0o755)
				what = "chmod " + p
			case 7:
				git("add", "-A")
				what = "git add -A"
			case 8:
				git("add", "-A")
				git("commit", "-q", "--allow-empty", "-m", fmt.Sprint("c", step))
				what = "commit"
			case 9:
				git("add", "-A")
				git("commit", "-q", "--allow-empty", "-m", "b")
				git("checkout", "-q", "-B", rapid.SampledFrom(branches).Draw(rt, "branch"))
				what = "checkout"
			case 10:
				if err := live.Rescan(ctx, liveID); err != nil {
					rt.Fatal(err)
				}
				what = "overflow"
			case 11:
				rules := rapid.SampledFrom([]string{"", "* text=auto\n", "*.txt -text\n*.go text eol=lf\n", "*.go eol=crlf\nd/** linguist-generated\n", "*.crlf text eol=crlf\n*.txt whitespace=trailing-space\n"}).Draw(rt, "attributes")
				os.WriteFile(filepath.Join(root, ".gitattributes"), []byte(rules), 0o644)
				what = "attributes " + strconv.Quote(rules)
			case 12:
				dir := rapid.SampledFrom([]string{"", "d"}).Draw(rt, "attrdir")
				os.MkdirAll(filepath.Join(root, dir), 0o755)
				os.WriteFile(filepath.Join(root, dir, ".gitattributes"), []byte("*.txt eol=crlf\n"), 0o644)
				what = "attributes in " + dir
			case 13:
				gitIn(sm, "add", "-A")
				gitIn(sm, "commit", "-q", "--allow-empty", "-m", fmt.Sprint("s", step))
				what = "commit in the submodule"
			case 14:
				format := rapid.SampledFrom([]string{"log", "short"}).Draw(rt, "diff.submodule")
				git("config", "diff.submodule", format)
				what = "diff.submodule=" + format
			}
			checks++
			got, err := live.GitStatus(ctx, harness.GitStatusArgs{RepoID: liveID})
			if err != nil {
				rt.Fatalf("after %s: %v", what, err)
			}
			want, err := (&gitx.Git{}).Status(ctx, root)
			if err != nil {
				rt.Fatal(err)
			}
			if got.Source == "index" {
				fromIndex++
			}
			if !equalStatus(got.Status, want) {
				rt.Fatalf("after %s: live status (%s)\n%+v\ngit\n%+v", what, got.Source, got.Status, want)
			}
			d, err := live.GitDiff(ctx, harness.GitDiffArgs{RepoID: liveID})
			if err != nil {
				rt.Fatalf("after %s: git_diff: %v", what, err)
			}
			if w := directGit(t, root, "diff"); d.Patch != w {
				rt.Fatalf("after %s: git_diff (%s: %s)\n got %q\nwant %q", what, d.Source, d.IndexReason, d.Patch, w)
			}
			if d.Source != "exec" {
				diffsInProcess++
				if slices.ContainsFunc(d.Files, func(f gitx.FileStat) bool { return f.Path == "sm" }) {
					submoduleDiffs++ // the rest in process, the submodule's entry by git
				}
			}
			for _, q := range []string{"needle", "one"} {
				ls, err := live.Search(ctx, harness.SearchArgs{RepoID: liveID, Query: q})
				if err != nil {
					rt.Fatalf("after %s: search: %v", what, err)
				}
				ps, err := plain.Search(ctx, harness.SearchArgs{RepoID: plainID, Query: q})
				if err != nil {
					rt.Fatal(err)
				}
				if ls.Source != "index" {
					rt.Fatalf("after %s: search source %q (%s)", what, ls.Source, ls.IndexReason)
				}
				if !slices.Equal(ls.Matches, ps.Matches) || ls.Truncated != ps.Truncated {
					rt.Fatalf("after %s: search %q\nlive  %+v\nexec  %+v", what, q, ls.Matches, ps.Matches)
				}
				if got, w := rgLines(ls), directRg(t, root, q); !slices.Equal(got, w) {
					rt.Fatalf("after %s: search %q\nlive %q\nrg   %q", what, q, got, w)
				}
			}
		}
	})
	t.Logf("%d steps checked, %d statuses and %d diffs in process (%d of them with a changed submodule entry)", checks, fromIndex, diffsInProcess, submoduleDiffs)
	if fromIndex < checks/3 {
		t.Fatalf("only %d of %d statuses came from the index: the property tests the fallback, not the index", fromIndex, checks)
	}
}
