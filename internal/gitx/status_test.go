package gitx

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

const oidA = "1111111111111111111111111111111111111111"
const oidB = "2222222222222222222222222222222222222222"

func z(recs ...string) []byte { return []byte(strings.Join(recs, "\x00") + "\x00") }

func TestParseStatus(t *testing.T) {
	modes := "100644 100644 100644 " + oidA + " " + oidB
	tests := []struct {
		name    string
		in      []byte
		want    Status
		wantErr bool
	}{
		{
			name: "empty input is clean",
			in:   nil,
			want: Status{Clean: true},
		},
		{
			name: "branch with upstream",
			in:   z("# branch.oid "+oidA, "# branch.head main", "# branch.upstream origin/main", "# branch.ab +2 -3"),
			want: Status{Branch: "main", Head: oidA, Upstream: "origin/main", Ahead: 2, Behind: 3, Clean: true},
		},
		{
			name: "detached",
			in:   z("# branch.oid "+oidA, "# branch.head (detached)"),
			want: Status{Detached: true, Head: oidA, Clean: true},
		},
		{
			name: "unborn",
			in:   z("# branch.oid (initial)", "# branch.head main", "? a b.txt"),
			want: Status{Branch: "main", Untracked: []string{"a b.txt"}},
		},
		{
			name: "unknown header skipped",
			in:   z("# stash 3", "# branch.head main"),
			want: Status{Branch: "main", Clean: true},
		},
		{
			name: "staged and unstaged on one path",
			in:   z("1 MM N... " + modes + " dir/file with space.go"),
			want: Status{
				Staged:   []Entry{{Path: "dir/file with space.go", Status: "modified"}},
				Unstaged: []Entry{{Path: "dir/file with space.go", Status: "modified"}},
			},
		},
		{
			name: "added, deleted, type changed",
			in:   z("1 A. N... "+modes+" new", "1 .D N... "+modes+" gone", "1 T. N... "+modes+" link"),
			want: Status{
				Staged:   []Entry{{Path: "new", Status: "added"}, {Path: "link", Status: "type_changed"}},
				Unstaged: []Entry{{Path: "gone", Status: "deleted"}},
			},
		},
		{
			name: "rename with NUL separated original",
			in:   z("2 R. N... "+modes+" R100 new name", "old\nname"),
			want: Status{Staged: []Entry{{Path: "new name", OrigPath: "old\nname", Status: "renamed"}}},
		},
		{
			name: "copy with worktree change",
			in:   z("2 CM N... "+modes+" C75 b", "a"),
			want: Status{
				Staged:   []Entry{{Path: "b", OrigPath: "a", Status: "copied"}},
				Unstaged: []Entry{{Path: "b", Status: "modified"}},
			},
		},
		{
			name: "submodule",
			in:   z("1 .M SC.. 160000 160000 160000 " + oidA + " " + oidA + " sub"),
			want: Status{Unstaged: []Entry{{Path: "sub", Status: "modified", Submodule: true}}},
		},
		{
			name: "unmerged",
			in:   z("u UU N... 100644 100644 100644 100644 " + oidA + " " + oidB + " " + oidA + " c.txt"),
			want: Status{Conflicted: []Entry{{Path: "c.txt", Status: "unmerged"}}},
		},
		{
			name: "ignored entry skipped",
			in:   z("! build/"),
			want: Status{Clean: true},
		},
		{
			name: "unicode path",
			in:   z("? 日本語/ファイル.txt"),
			want: Status{Untracked: []string{"日本語/ファイル.txt"}},
		},
		{name: "truncated ordinary record", in: z("1 .M N... 100644"), wantErr: true},
		{name: "bad XY letter", in: z("1 .Q N... " + modes + " x"), wantErr: true},
		{name: "bad submodule field", in: z("1 .M X... " + modes + " x"), wantErr: true},
		{name: "rename without original", in: []byte("2 R. N... " + modes + " R100 new\x00"), wantErr: true},
		{name: "rename with bad score", in: z("2 R. N... "+modes+" X100 new", "old"), wantErr: true},
		{name: "bad ahead behind", in: z("# branch.ab 2 3"), wantErr: true},
		{name: "negative ahead", in: z("# branch.ab +-2 -3"), wantErr: true},
		{name: "unknown record type", in: z("x what"), wantErr: true},
		{name: "untracked without path", in: z("?"), wantErr: true},
		{name: "empty branch.head", in: z("# branch.head"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatus(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				if c := errs.CodeOf(err); c != errs.InvalidArgument {
					t.Fatalf("code = %s, want %s", c, errs.InvalidArgument)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			normalize(&tt.want)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// normalize makes nil slices empty, as ParseStatus returns them.
func normalize(s *Status) {
	if s.Staged == nil {
		s.Staged = []Entry{}
	}
	if s.Unstaged == nil {
		s.Unstaged = []Entry{}
	}
	if s.Untracked == nil {
		s.Untracked = []string{}
	}
	if s.Conflicted == nil {
		s.Conflicted = []Entry{}
	}
}

func TestStatusJSONHasEmptyLists(t *testing.T) {
	st, err := ParseStatus(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	for _, k := range []string{`"staged":[]`, `"unstaged":[]`, `"untracked":[]`, `"conflicted":[]`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("json %s: missing %s", b, k)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	modes := "100644 100644 100644 " + oidA + " " + oidB
	seeds := [][]byte{
		nil,
		z("# branch.oid "+oidA, "# branch.head main", "# branch.upstream o/m", "# branch.ab +1 -2"),
		z("1 MM N... " + modes + " a b"),
		z("2 R. N... "+modes+" R100 new", "old"),
		[]byte("2 R. N... " + modes + " R100 new"),
		z("u UU N... 100644 100644 100644 100644 " + oidA + " " + oidB + " " + oidA + " c"),
		z("? x", "! y"),
		[]byte("# branch.ab +99999999999999999999 -1\x00"),
		[]byte("1 \x00\x00\x00"),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStatus(b)
		if err != nil {
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Fatalf("code = %s, want INVALID_ARGUMENT", errs.CodeOf(err))
			}
			return
		}
		if st.Ahead < 0 || st.Behind < 0 {
			t.Fatalf("ahead/behind = %d/%d, want non-negative", st.Ahead, st.Behind)
		}
		empty := len(st.Staged)+len(st.Unstaged)+len(st.Untracked)+len(st.Conflicted) == 0
		if st.Clean != empty {
			t.Fatalf("clean = %v with %d entries", st.Clean, len(st.Staged)+len(st.Unstaged)+len(st.Untracked)+len(st.Conflicted))
		}
		if _, err := parseStatus(b, true); err != nil {
			t.Fatalf("lenient parse failed where strict succeeded: %v", err)
		}
	})
}

func TestStatusBranchUpstreamAheadBehind(t *testing.T) {
	ctx := testCtx(t)
	origin := newRepo(t)
	writeFile(t, origin, "a.txt", "a\n")
	commitAll(t, origin, "one")
	cloneParent, _ := filepath.EvalSymlinks(t.TempDir())
	gitT(t, cloneParent, "clone", "-q", origin, "clone")
	clone := filepath.Join(cloneParent, "clone")

	// Origin moves on by one commit, the clone by two.
	writeFile(t, origin, "b.txt", "b\n")
	commitAll(t, origin, "two")
	gitT(t, clone, "fetch", "-q")
	writeFile(t, clone, "c.txt", "c\n")
	commitAll(t, clone, "three")
	writeFile(t, clone, "d.txt", "d\n")
	commitAll(t, clone, "four")

	var g Git
	st, err := g.Status(ctx, clone)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(gitT(t, clone, "rev-parse", "HEAD"))
	if st.Branch != "main" || st.Detached || st.Head != head {
		t.Errorf("branch/detached/head = %q/%v/%q, want main/false/%q", st.Branch, st.Detached, st.Head, head)
	}
	if st.Upstream != "origin/main" || st.Ahead != 2 || st.Behind != 1 {
		t.Errorf("upstream/ahead/behind = %q/%d/%d, want origin/main/2/1", st.Upstream, st.Ahead, st.Behind)
	}
	if !st.Clean {
		t.Errorf("clean = false, want true: %+v", st)
	}
}

func TestStatusDetachedAndUnborn(t *testing.T) {
	ctx := testCtx(t)
	var g Git

	unborn := newRepo(t)
	st, err := g.Status(ctx, unborn)
	if err != nil {
		t.Fatal(err)
	}
	if st.Head != "" || st.Branch != "main" || st.Detached || !st.Clean {
		t.Errorf("unborn: got %+v, want head \"\", branch main, clean", st)
	}

	dir := newRepo(t)
	writeFile(t, dir, "a", "1\n")
	commitAll(t, dir, "one")
	writeFile(t, dir, "a", "2\n")
	commitAll(t, dir, "two")
	first := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD~1"))
	gitT(t, dir, "checkout", "-q", "--detach", "HEAD~1")
	st, err = g.Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Detached || st.Branch != "" || st.Head != first {
		t.Errorf("detached: got branch %q detached %v head %q, want \"\" true %q", st.Branch, st.Detached, st.Head, first)
	}
}

func TestStatusEntries(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "keep.txt", "keep\n")
	writeFile(t, dir, "mod.txt", "one\n")
	writeFile(t, dir, "both.txt", "one\n")
	writeFile(t, dir, "del.txt", "del\n")
	writeFile(t, dir, "old name.txt", strings.Repeat("rename me\n", 20))
	commitAll(t, dir, "base")

	writeFile(t, dir, "mod.txt", "two\n")                   // unstaged modified
	writeFile(t, dir, "both.txt", "two\n")                  // staged ...
	gitT(t, dir, "add", "both.txt")                         //
	writeFile(t, dir, "both.txt", "three\n")                // ... and unstaged
	gitT(t, dir, "rm", "-q", "del.txt")                     // staged deleted
	gitT(t, dir, "mv", "old name.txt", "new\nname ü.txt")   // staged rename, newline + unicode
	writeFile(t, dir, "staged new.txt", "n\n")              // staged added
	gitT(t, dir, "add", "staged new.txt")                   //
	writeFile(t, dir, "untracked dir/deep/ファイル.txt", "u\n") // untracked, all files listed
	writeFile(t, dir, "untracked dir/x", "x\n")

	var g Git
	st, err := g.Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	wantStaged := []Entry{
		{Path: "both.txt", Status: "modified"},
		{Path: "del.txt", Status: "deleted"},
		{Path: "new\nname ü.txt", OrigPath: "old name.txt", Status: "renamed"},
		{Path: "staged new.txt", Status: "added"},
	}
	wantUnstaged := []Entry{
		{Path: "both.txt", Status: "modified"},
		{Path: "mod.txt", Status: "modified"},
	}
	wantUntracked := []string{"untracked dir/deep/ファイル.txt", "untracked dir/x"}
	if !sameEntries(st.Staged, wantStaged) {
		t.Errorf("staged:\ngot  %+v\nwant %+v", st.Staged, wantStaged)
	}
	if !sameEntries(st.Unstaged, wantUnstaged) {
		t.Errorf("unstaged:\ngot  %+v\nwant %+v", st.Unstaged, wantUnstaged)
	}
	if !reflect.DeepEqual(sorted(st.Untracked), wantUntracked) {
		t.Errorf("untracked: got %q, want %q", st.Untracked, wantUntracked)
	}
	if st.Clean {
		t.Error("clean = true, want false")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); err == nil {
		t.Error("index.lock left behind")
	}
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

func sameEntries(got, want []Entry) bool {
	if len(got) != len(want) {
		return false
	}
	m := map[Entry]int{}
	for _, e := range got {
		m[e]++
	}
	for _, e := range want {
		if m[e] == 0 {
			return false
		}
		m[e]--
	}
	return true
}

// makeConflict returns a repository in the middle of a conflicted merge on
// c.txt.
func makeConflict(t testing.TB) string {
	t.Helper()
	dir := newRepo(t)
	writeFile(t, dir, "c.txt", "base\n")
	commitAll(t, dir, "base")
	gitT(t, dir, "checkout", "-q", "-b", "other")
	writeFile(t, dir, "c.txt", "other\n")
	commitAll(t, dir, "other")
	gitT(t, dir, "checkout", "-q", "main")
	writeFile(t, dir, "c.txt", "main\n")
	commitAll(t, dir, "main")
	if out, err := gitTErr(dir, "merge", "other"); err == nil {
		t.Fatalf("merge succeeded, want a conflict: %s", out)
	}
	return dir
}

func TestStatusConflicted(t *testing.T) {
	ctx := testCtx(t)
	dir := makeConflict(t)
	var g Git
	st, err := g.Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{Path: "c.txt", Status: "unmerged"}}
	if !reflect.DeepEqual(st.Conflicted, want) {
		t.Errorf("conflicted: got %+v, want %+v", st.Conflicted, want)
	}
	if st.Clean {
		t.Error("clean = true, want false")
	}
}

func TestStatusErrors(t *testing.T) {
	ctx := testCtx(t)
	var g Git
	plain, _ := filepath.EvalSymlinks(t.TempDir())
	tests := []struct {
		name string
		dir  string
		want errs.Code
	}{
		{"not a repository", plain, errs.NotAGitRepository},
		{"missing directory", filepath.Join(plain, "nope"), errs.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := g.Status(ctx, tt.dir)
			if c := errs.CodeOf(err); c != tt.want {
				t.Fatalf("code = %s (%v), want %s", c, err, tt.want)
			}
		})
	}
}

// TestStatusSingleCall wraps git in a script that logs each invocation and
// checks that Status makes exactly one call, with optional locks disabled.
func TestStatusSingleCall(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "a", "a\n")
	commitAll(t, dir, "one")
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	log := filepath.Join(tmp, "calls.log")
	wrapper := filepath.Join(tmp, "git-wrapper")
	script := "#!/bin/sh\necho \"locks=$GIT_OPTIONAL_LOCKS gitdir=${GIT_DIR:-unset} $*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_DIR", "/nonexistent")
	g := Git{Bin: wrapper}
	if _, err := g.Status(ctx, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("git ran %d times, want 1:\n%s", len(lines), b)
	}
	for _, want := range []string{"locks=0", "gitdir=unset", "status --porcelain=v2 --branch -z --untracked-files=all", "core.fsmonitor=false"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("call %q: missing %q", lines[0], want)
		}
	}
}
