package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testutil"
)

// TestRealRun: the real mode on a small repository with attributes and
// CRLF files, and on its linked worktree, in process: every case
// measured, the tree left as it was.
func TestRealRun(t *testing.T) {
	files := map[string]string{".gitattributes": "* text=auto\n*.bat eol=crlf\n", "run.bat": "@echo off\r\n"}
	for i := range 12 {
		files[filepath.Join("pkg", string(rune('a'+i)), "f.go")] = "package x\n\n// needle and cmpstring\n" + strings.Repeat("var _ = 1\n", 150)
	}
	root := testutil.Repo(t, files)
	before := testutil.Git(t, root, "status", "--porcelain=v2", "--untracked-files=all")
	out, errOut, code := run(t, "--real", root, "--iterations", "2", "--warmup", "1", "--real-common", "needle", "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s\n%s", code, ExitOK, errOut, out)
	}
	rep := validate(t, schema(t), []byte(out))
	if len(rep.Real) != 2*len(RealCases()) || len(rep.RealRepos) != 2 || !rep.RealRepos[1].Worktree {
		t.Fatalf("real = %+v, repos = %+v", rep.Real, rep.RealRepos)
	}
	for _, r := range rep.Real {
		if r.Error != "" || r.Iterations != 2 || *r.HarnessdMs <= 0 || *r.RawMs <= 0 {
			t.Errorf("%s %s: %+v", r.Checkout, r.Case, r)
		}
		if r.Case == RealStatus && r.FirstMs == nil {
			t.Errorf("%s: no first call", r.Checkout)
		}
		// The diffs are the in-process diff's to answer (it leaves
		// checkouts with attributes to git); status and search are the
		// live index's.
		// The first touch is git's by design.
		if r.Case != RealDiffAfterEdit && r.Case != RealFirstStatus && r.Sources["exec"] > 0 {
			t.Errorf("%s %s: answers from git (%v: %s)", r.Checkout, r.Case, r.Sources, r.Reason)
		}
	}
	if g := rep.RealRepos[0]; g.Files != 14 || g.Attributes != 1 || g.Dirty != realDirty || g.Untracked != 2 {
		t.Errorf("repo = %+v", g)
	}
	if after := testutil.Git(t, root, "status", "--porcelain=v2", "--untracked-files=all"); after != before {
		t.Errorf("the tree was left changed:\n%s\nwas\n%s", after, before)
	}
	if wts := testutil.Git(t, root, "worktree", "list"); strings.Count(wts, "\n") != 0 {
		t.Errorf("the linked worktree was left: %s", wts)
	}
	var buf strings.Builder
	if err := writeReal(&buf, &rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(linked worktree)", "CASE", "SOURCE", "search_rare", "diff_after_edit", "first call (cold)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	if _, err := os.Stat(filepath.Join(root, "harnessd-bench-untracked-1.txt")); !os.IsNotExist(err) {
		t.Errorf("untracked file left: %v", err)
	}
}

func TestRealUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--real", "x", "--files", "100"}, "separate modes"},
		{[]string{"--real", "x", "--surfaces", "mcp-http"}, "in process only"},
		{[]string{"--real", "x", "--cases", "git_status"}, `unknown case "git_status"`},
		{[]string{"--real", "x", "--real-rare", ""}, "must not be empty"},
	} {
		out, errOut, code := run(t, tt.args...)
		if code != ExitUsage || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want %d and %q", tt.args, code, errOut, out, ExitUsage, tt.want)
		}
	}
}
