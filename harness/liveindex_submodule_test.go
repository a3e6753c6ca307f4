package harness_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// directGit runs git in root as a person would (no user or system
// config) and returns its stdout.
func directGit(t testing.TB, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	cmd.Env = append(testutil.GitEnv(), "GIT_OPTIONAL_LOCKS=0") // a read, like harnessd's: no index refresh the watcher would see
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// directRg is `rg --line-number --column` run in root with what harnessd's
// search covers (dotfiles, never .git, files up to 512 KiB), its lines
// sorted; rg exits 1 when nothing matches.
func directRg(t testing.TB, root, query string) []string {
	t.Helper()
	cmd := exec.Command("rg", "--line-number", "--column", "--no-heading", "--with-filename", "--hidden", "--glob=!.git",
		"--max-filesize=512K", "--no-config", "--fixed-strings", "--regexp="+query)
	cmd.Dir = root
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("rg %q: %v", query, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return l == "" })
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r") // a match's text is its line without the line's end, CRLF or LF
	}
	slices.Sort(lines)
	return lines
}

// rgLines prints a search answer as rg prints matches, sorted.
func rgLines(r *harness.SearchResult) []string {
	var out []string
	for _, m := range r.Matches {
		out = append(out, m.Path+":"+strconv.Itoa(m.Line)+":"+strconv.Itoa(m.Column)+":"+m.Text)
	}
	slices.Sort(out)
	return out
}

// liveEqualsGit checks git_status, git_diff and search of the live index
// against git status, git diff and rg run directly on root, and returns
// the sources of the three answers.
func liveEqualsGit(t testing.TB, h *harness.Harness, id, root, step string, queries ...string) (status, diff, search string) {
	t.Helper()
	ctx := context.Background()
	st, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
	if err != nil {
		t.Fatalf("%s: git_status: %v", step, err)
	}
	want, err := (&gitx.Git{}).Status(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if !equalStatus(st.Status, want) {
		t.Fatalf("%s: git_status (%s: %s)\n got %+v\nwant %+v", step, st.Source, st.IndexReason, st.Status, want)
	}
	d, err := h.GitDiff(ctx, harness.GitDiffArgs{RepoID: id})
	if err != nil {
		t.Fatalf("%s: git_diff: %v", step, err)
	}
	if w := directGit(t, root, "diff"); d.Patch != w {
		t.Fatalf("%s: git_diff (%s: %s)\n got %q\nwant %q", step, d.Source, d.IndexReason, d.Patch, w)
	}
	search = "index"
	for _, q := range queries {
		r, err := h.Search(ctx, harness.SearchArgs{RepoID: id, Query: q, MaxResults: 500})
		if err != nil {
			t.Fatalf("%s: search: %v", step, err)
		}
		if got, w := rgLines(r), directRg(t, root, q); !slices.Equal(got, w) {
			t.Fatalf("%s: search %q (%s: %s)\n got %q\nwant %q", step, q, r.Source, r.IndexReason, got, w)
		}
		if r.Source != "index" {
			search = r.Source + ": " + r.IndexReason
		}
	}
	return st.Source, d.Source, search
}

// TestLiveIndexSubmodules: a superproject with a submodule answers
// git_status, git_diff and search as git and rg do while the submodule's
// files change (a dirty submodule, an untracked file in it, a new commit
// in it, then the superproject recording it, then diff.submodule=log) and
// the superproject's own files change (before and after the submodule's
// path); all three stay in process throughout: the submodule's entry is
// asked of git for its path only, for the status and for the diff, whose
// other files are diffed in process.
func TestLiveIndexSubmodules(t *testing.T) {
	ctx := context.Background()
	h := open(t)
	sub := testutil.Repo(t, map[string]string{"s.txt": "needle in the submodule\n", "lib/l.go": "package lib // needle\n"})
	super := testutil.Repo(t, map[string]string{"top.txt": "top needle\n", "d/a.txt": "a\n"})
	testutil.Git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sm")
	testutil.Git(t, super, "commit", "-qm", "sm")
	id := register(t, h, super)
	if _, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id}); err != nil {
		t.Fatal(err)
	}
	if err := h.WarmLiveIndex(ctx, id); err != nil {
		t.Fatal(err)
	}
	sm := filepath.Join(super, "sm")
	steps := []struct {
		name       string
		do         func()
		smInDiff   bool // the diff holds the submodule's entry
		indexWrite bool // the superproject's index or config changed: the view takes a new base from git once
	}{
		{"warm", func() {}, false, false},
		{"superproject files", func() {
			testutil.WriteFile(t, super, "top.txt", "top needle edited\n")
			testutil.WriteFile(t, super, "d/a.txt", "a edited\n")
		}, false, false},
		{"submodule file", func() { testutil.WriteFile(t, sm, "s.txt", "needle changed in the submodule\n") }, true, false},
		{"submodule untracked", func() { testutil.WriteFile(t, sm, "new/u.txt", "an untracked needle\n") }, true, false},
		{"submodule commit", func() {
			testutil.Git(t, sm, "add", "-A")
			testutil.Git(t, sm, "commit", "-qm", "in sm")
		}, true, false},
		{"superproject records it", func() {
			testutil.Git(t, super, "add", "sm", "top.txt")
			testutil.Git(t, super, "commit", "-qm", "record sm")
		}, false, true},
		{"superproject untracked", func() { testutil.WriteFile(t, super, "d/new.txt", "needle\n") }, false, false},
		{"diff.submodule=log and a new submodule commit", func() {
			testutil.Git(t, super, "config", "diff.submodule", "log")
			testutil.WriteFile(t, sm, "s.txt", "needle once more\n")
			testutil.Git(t, sm, "commit", "-qam", "again in sm")
		}, true, true},
		{"submodule file after it", func() { testutil.WriteFile(t, sm, "lib/l.go", "package lib // needle moved\n") }, true, false},
	}
	for _, s := range steps {
		s.do()
		st, diff, search := liveEqualsGit(t, h, id, super, s.name, "needle", "submodule")
		if (st != "index" && !s.indexWrite) || search != "index" {
			t.Fatalf("%s: status from %s, search from %s: the submodule turned the index off", s.name, st, search)
		}
		if diff == "exec" && !s.indexWrite {
			t.Fatalf("%s: git_diff ran git for the whole tree", s.name)
		}
		d, err := h.GitDiff(ctx, harness.GitDiffArgs{RepoID: id})
		if err != nil {
			t.Fatal(err)
		}
		if d.Source == "exec" {
			t.Fatalf("%s: a second git_diff ran git for the whole tree (%s)", s.name, d.IndexReason)
		}
		if got := slices.ContainsFunc(d.Files, func(f gitx.FileStat) bool { return f.Path == "sm" }); got != s.smInDiff {
			t.Fatalf("%s: the diff lists the submodule: %v, want %v (%+v)", s.name, got, s.smInDiff, d.Files)
		}
	}
}
