package gitindex

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// configOf is the effective configuration as gitx's git sees it.
func configOf(t testing.TB, dir string) map[string][]string {
	t.Helper()
	out, _, err := (&gitx.Git{}).Run(context.Background(), dir, 0, "config", "-z", "--list")
	if err != nil {
		t.Fatal(err)
	}
	return ParseConfigList(out)
}

func eligibleOf(t *testing.T, dir string) (bool, string) {
	t.Helper()
	gitDir, _, err := GitDirs(dir)
	must(t, err)
	b, err := os.ReadFile(filepath.Join(gitDir, "index"))
	must(t, err)
	ix, err := ParseAny(b)
	if err != nil {
		t.Fatal(err)
	}
	return Eligible(gitDir, ix, configOf(t, dir), execStatus(t, dir).Untracked)
}

func TestParseConfigList(t *testing.T) {
	got := ParseConfigList([]byte("core.bare\nfalse\x00Core.FileMode\ntrue\x00core.bare\x00user.name\nA B\nC\x00empty\n\x00"))
	want := map[string][]string{"core.bare": {"false", "true"}, "core.filemode": {"true"}, "user.name": {"A B\nC"}, "empty": {""}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseConfigList = %v, want %v", got, want)
	}
	if !isTrue(got, "core.bare") || isTrue(got, "empty") || !isFalse(got, "empty") {
		t.Fatal("the last value is not the effective one")
	}
}

// TestEligible: a plain repository (sha1 or sha256) is accepted, and so
// is each feature Refresh models; each checkout Refresh does not model is
// refused with its reason.
func TestEligible(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "run.sh*": "x", "l": "@a.txt"}
	for _, format := range []string{"sha1", "sha256"} {
		if ok, reason := eligibleOf(t, newRepo(t, format, files)); !ok {
			t.Errorf("plain %s repository refused: %s", format, reason)
		}
	}
	git := func(args ...string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { testutil.Git(t, dir, args...) }
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		reason string
	}{
		{"sparse checkout", git("sparse-checkout", "set", "d"), "sparse checkout"},
		{"skip-worktree", git("update-index", "--skip-worktree", "a.txt"), "sparse checkout"},
		{"split index", git("update-index", "--split-index"), "split index"},
		{"intent-to-add", func(t *testing.T, dir string) {
			testutil.WriteFile(t, dir, "n.txt", "n")
			testutil.Git(t, dir, "add", "-N", "n.txt")
		}, "intent-to-add entries"},
		{"assume-unchanged", git("update-index", "--assume-unchanged", "a.txt"), "assume-unchanged entries"},
		{"conflict", func(t *testing.T, dir string) {
			testutil.Git(t, dir, "checkout", "-q", "-b", "other")
			testutil.WriteFile(t, dir, "a.txt", "other\n")
			testutil.Git(t, dir, "commit", "-qam", "other")
			testutil.Git(t, dir, "checkout", "-q", "main")
			testutil.WriteFile(t, dir, "a.txt", "main\n")
			testutil.Git(t, dir, "commit", "-qam", "main")
			runAllowFail(t, dir, "merge", "-q", "other")
		}, "unmerged entries"},
		{"merge in progress", func(t *testing.T, dir string) {
			testutil.Git(t, dir, "checkout", "-q", "-b", "other")
			testutil.WriteFile(t, dir, "c.txt", "c\n")
			testutil.Git(t, dir, "add", "c.txt")
			testutil.Git(t, dir, "commit", "-qm", "other")
			testutil.Git(t, dir, "checkout", "-q", "main")
			testutil.WriteFile(t, dir, "e.txt", "e\n")
			testutil.Git(t, dir, "add", "e.txt")
			testutil.Git(t, dir, "commit", "-qm", "main")
			testutil.Git(t, dir, "merge", "-q", "--no-commit", "--no-ff", "other")
		}, "merge in progress"},
		{"trustctime", git("config", "core.trustctime", "false"), "core.trustctime=false"},
		{"checkStat", git("config", "core.checkStat", "minimal"), "core.checkStat"},
		{"symlinks", git("config", "core.symlinks", "false"), "core.symlinks=false"},
		{"precomposeunicode", git("config", "core.precomposeunicode", "true"), "core.precomposeunicode"},
		{"nested repository", git("init", "-q", "nested"), "nested repositories"},
		{"attr.tree", git("config", "attr.tree", "HEAD"), "attr.tree"},
		{"rebase in progress", func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, ".git", "rebase-merge"), 0o755)) }, "rebase in progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, "sha1", files)
			tt.setup(t, dir)
			ok, reason := eligibleOf(t, dir)
			if ok || reason != tt.reason {
				t.Errorf("Eligible = %v, %q; want refused with %q", ok, reason, tt.reason)
			}
		})
	}
	// What Refresh models keeps the index on.
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"submodule", git("update-index", "--add", "--cacheinfo", "160000,"+"1111111111111111111111111111111111111111,sub")},
		{"untracked cache extension", func(t *testing.T, dir string) {
			testutil.Git(t, dir, "update-index", "--untracked-cache")
			testutil.Git(t, dir, "-c", "core.untrackedCache=true", "status")
		}},
		{"untracked cache config", git("config", "core.untrackedCache", "true")},
		{"feature.manyFiles", git("config", "feature.manyFiles", "true")},
		{"tracked .gitattributes", func(t *testing.T, dir string) {
			testutil.WriteFile(t, dir, "d/.gitattributes", "*.txt text\n")
			testutil.Git(t, dir, "add", "d/.gitattributes")
		}},
		{"untracked .gitattributes", func(t *testing.T, dir string) { testutil.WriteFile(t, dir, ".gitattributes", "* -text\n") }},
		{"info/attributes", func(t *testing.T, dir string) { testutil.WriteFile(t, dir, ".git/info/attributes", "* text\n") }},
		{"autocrlf", git("config", "core.autocrlf", "true")},
		{"autocrlf input", git("config", "core.autocrlf", "input")},
		{"core.eol", git("config", "core.eol", "crlf")},
		{"filter", git("config", "filter.lfs.clean", "git-lfs clean -- %f")},
		{"ignorecase", git("config", "core.ignorecase", "true")},
		{"filemode", git("config", "core.filemode", "false")},
		{"linked worktree", func(t *testing.T, dir string) {
			testutil.Git(t, dir, "worktree", "add", "-q", filepath.Join(dir, "wt"))
		}},
	} {
		t.Run("accepted/"+c.name, func(t *testing.T) {
			dir := newRepo(t, "sha1", files)
			c.setup(t, dir)
			if c.name == "linked worktree" {
				dir = filepath.Join(dir, "wt")
			}
			if ok, reason := eligibleOf(t, dir); !ok {
				t.Errorf("Eligible = false, %q; want accepted", reason)
			}
		})
	}
	// A repository's core.attributesFile: harnessd's git reads no
	// attributes file but the repository's own .gitattributes (gitx
	// passes core.attributesFile=/dev/null last), so the index stays on.
	adir := newRepo(t, "sha1", files)
	git("config", "core.attributesFile", filepath.Join(adir, "attrs"))(t, adir)
	testutil.WriteFile(t, adir, "attrs", "* text eol=crlf\n")
	if ok, reason := eligibleOf(t, adir); !ok {
		t.Errorf("core.attributesFile in the repository config: Eligible = false, %q; harnessd's git never reads it", reason)
	}
	// Synthetic cases: what gitx's git never shows (it forces
	// core.fsmonitor=false) or no git writes.
	dir := newRepo(t, "sha1", files)
	ix, err := ParseAny(readIndex(t, dir))
	must(t, err)
	cfg := configOf(t, dir)
	with := func(k, v string) map[string][]string {
		c := map[string][]string{}
		for key, vals := range cfg {
			c[key] = vals
		}
		c[k] = append(append([]string(nil), c[k]...), v)
		return c
	}
	bad := *ix
	bad.Version = 5
	fsmn := *ix
	fsmn.Extensions = append([]string{"FSMN", "UNTR"}, ix.Extensions...)
	unknown := *ix
	unknown.Extensions = []string{"ZZZZ"}
	for _, c := range []struct {
		name   string
		ix     *Index
		cfg    map[string][]string
		reason string
	}{
		{"unknown extension", &unknown, cfg, "index extension ZZZZ"},
		{"core.autocrlf git rejects", ix, with("core.autocrlf", "maybe"), "core.autocrlf=maybe"},
		{"unknown index version", &bad, cfg, "unknown index version"},
		{"core.worktree", ix, with("core.worktree", "/elsewhere"), "core.worktree"},
		{"object format", ix, with("extensions.objectformat", "sha256"), "object format differs from the index"},
		{"no index", nil, cfg, "no index"},
	} {
		if ok, reason := Eligible(filepath.Join(dir, ".git"), c.ix, c.cfg, nil); ok || reason != c.reason {
			t.Errorf("%s: Eligible = %v, %q; want refused with %q", c.name, ok, reason, c.reason)
		}
	}
	// fsmonitor: harnessd's git runs with core.fsmonitor=false, which
	// drops the extension; the answer is the same.
	for _, c := range []struct {
		name string
		ix   *Index
		cfg  map[string][]string
	}{
		{"fsmonitor hook", ix, with("core.fsmonitor", ".git/hooks/fsmonitor-watchman")},
		{"fsmonitor false", ix, with("core.fsmonitor", "false")},
		{"FSMN and UNTR extensions", &fsmn, cfg},
	} {
		if ok, reason := Eligible(filepath.Join(dir, ".git"), c.ix, c.cfg, nil); !ok {
			t.Errorf("%s refused: %s", c.name, reason)
		}
	}
}

// runAllowFail runs git and ignores its exit status (a merge that stops on
// a conflict exits 1).
func runAllowFail(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testutil.GitEnv()
	_ = cmd.Run()
}
