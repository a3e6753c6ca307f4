package gitx

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestParseSectionHeader(t *testing.T) {
	tests := []struct {
		in, name, sub string
	}{
		{`core`, "core", ""},
		{`Filter "Evil"`, "filter", "Evil"},
		{`filter "a \"q\" \\b"`, "filter", `a "q" \b`},
		{`filter.Legacy`, "filter", "legacy"},
		{`  diff   "x y"  `, "diff", "x y"},
		{`includeIf "gitdir:/x/"`, "includeif", "gitdir:/x/"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			name, sub := parseSectionHeader(tt.in)
			if name != tt.name || sub != tt.sub {
				t.Errorf("got %q/%q, want %q/%q", name, sub, tt.name, tt.sub)
			}
		})
	}
}

func writeConfig(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDriverOverrides(t *testing.T) {
	dir := newRepo(t)
	incDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(incDir, "inc.cfg"), []byte("[filter \"fromInclude\"]\n\tclean = x\n[include]\n\tpath = inc2.cfg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(incDir, "inc2.cfg"), []byte("[merge \"nested\"]\n\tdriver = x\n[include]\n\tpath = inc.cfg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, "[core]\n\tbare = false\n# [filter \"commented\"]\n"+
		"[filter \"lfs\"] clean = x\n[diff.Legacy]\n\ttextconv = y\n"+
		"[includeIf \"gitdir:/\"]\n\tpath = "+filepath.Join(incDir, "inc.cfg")+" ; comment\n")
	got, err := driverOverrides(filepath.Join(dir))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-c", "filter.lfs.clean=", "-c", "filter.lfs.smudge=", "-c", "filter.lfs.process=", "-c", "filter.lfs.required=false",
		"-c", "diff.legacy.textconv=cat", "-c", "diff.legacy.command=",
		"-c", "filter.fromInclude.clean=", "-c", "filter.fromInclude.smudge=", "-c", "filter.fromInclude.process=", "-c", "filter.fromInclude.required=false",
		"-c", "merge.nested.driver=false",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}

	// A subdirectory finds the same config; an edit invalidates the cache.
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, "[core]\n\tbare = false\n")
	if got, err := driverOverrides(sub); err != nil || got != nil {
		t.Fatalf("after edit: got %q/%v, want nil/nil", got, err)
	}
	writeConfig(t, dir, "[filter \"a=b\"]\n\tclean = x\n")
	if _, err := driverOverrides(dir); errs.CodeOf(err) != errs.PolicyDenied {
		t.Fatalf("unsafe name: got %v, want POLICY_DENIED", err)
	}
	// Every git call fails closed on such a repository.
	var g Git
	if _, err := g.Status(testCtx(t), dir); errs.CodeOf(err) != errs.PolicyDenied {
		t.Fatalf("Status: got %v, want POLICY_DENIED", err)
	}

	plain := t.TempDir()
	if got, err := driverOverrides(plain); err != nil || got != nil {
		t.Fatalf("no repo: got %q/%v, want nil/nil", got, err)
	}
}

// TestDriverOverridesWorktree checks a linked worktree: .git is a file and
// the shared config lives in the common dir.
func TestDriverOverridesWorktree(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	markers := t.TempDir()
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, ".gitattributes", "* filter=wt\n")
	commitAll(t, dir, "one")
	evil := filepath.Join(markers, "evil.sh")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\ntouch '"+filepath.Join(markers, "ran")+"'\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, dir, "worktree", "add", "-q", wt)
	gitT(t, dir, "config", "filter.wt.clean", evil)
	writeFile(t, wt, "a.txt", "changed\n")

	var g Git
	st, err := g.Status(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Unstaged) != 1 {
		t.Errorf("unstaged = %+v, want a.txt", st.Unstaged)
	}
	if _, err := os.Stat(filepath.Join(markers, "ran")); err == nil {
		t.Fatal("worktree clean filter ran")
	}
	args, _ := driverOverrides(wt)
	if !strings.Contains(strings.Join(args, " "), "filter.wt.clean=") {
		t.Errorf("overrides %q lack filter.wt.clean", args)
	}
}
