package patch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// swap sets *p to v for the rest of the test.
func swap[T any](t *testing.T, p *T, v T) {
	t.Helper()
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// gitCheckout makes dir look like a checkout to GitDir: .git/HEAD.
func gitCheckout(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := setup(t, files)
	writeFile(t, dir, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
	return dir
}

// tempsUnder lists the temp files under dir (relative, sorted), entering
// .git only when withGit.
func tempsUnder(t *testing.T, dir string, withGit bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && !withGit {
			return filepath.SkipDir
		}
		if IsTempName(d.Name()) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestTempFilesLiveInGitDir(t *testing.T) {
	dir := gitCheckout(t, map[string]string{"a.txt": "a\n"})
	ops := []Op{
		{Op: OpWrite, Path: "a.txt", Content: "A\n"},
		{Op: OpCreate, Path: "sub/deep/new.txt", Content: "new\n"},
	}
	var seen [][]string
	o := Options{Fence: func() error {
		if got := tempsUnder(t, dir, false); len(got) != 0 {
			t.Errorf("temp files in the work tree: %v", got)
		}
		seen = append(seen, tempsUnder(t, filepath.Join(dir, ".git", TempDirName), true))
		return nil
	}}
	if _, err := Apply(context.Background(), testRoot{dir}, ops, o); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("fence calls = %d, want 2", len(seen))
	}
	for i, s := range seen {
		if len(s) != 1 {
			t.Errorf("fence %d: temp files in .git/%s = %v, want exactly one", i, TempDirName, s)
		}
	}
	if got := tempsUnder(t, dir, true); len(got) != 0 {
		t.Errorf("temp files left after Apply: %v", got)
	}
	fi, err := os.Lstat(filepath.Join(dir, ".git", TempDirName))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("temp dir = %v, %v; want a 0700 directory", fi, err)
	}
	assertFile(t, dir, "a.txt", "A\n")
	assertFile(t, dir, "sub/deep/new.txt", "new\n")
}

func TestTempFilesLiveInLinkedWorktreeGitDir(t *testing.T) {
	for _, relative := range []bool{false, true} {
		name := "absolute"
		if relative {
			name = "relative"
		}
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "wt")
			gd := filepath.Join(base, "main", ".git", "worktrees", "wt")
			writeFile(t, gd, "HEAD", "0123\n", 0o644)
			writeFile(t, dir, "a.txt", "a\n", 0o644)
			target := gd
			if relative {
				target = "../main/.git/worktrees/wt"
			}
			writeFile(t, dir, ".git", "gitdir: "+target+"\n", 0o644)
			var inGitDir []string
			o := Options{Fence: func() error {
				if got := tempsUnder(t, dir, true); len(got) != 0 {
					t.Errorf("temp files in the work tree: %v", got)
				}
				inGitDir = tempsUnder(t, filepath.Join(gd, TempDirName), true)
				return nil
			}}
			if _, err := Apply(context.Background(), testRoot{dir}, []Op{{Op: OpWrite, Path: "a.txt", Content: "A\n"}}, o); err != nil {
				t.Fatal(err)
			}
			if len(inGitDir) != 1 {
				t.Errorf("temp files in the worktree's git dir = %v, want one", inGitDir)
			}
			assertFile(t, dir, "a.txt", "A\n")
			if got := tempsUnder(t, gd, true); len(got) != 0 {
				t.Errorf("temp files left in the git dir: %v", got)
			}
		})
	}
}

func TestTempFilesFallBackBesideTarget(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, outside string)
	}{
		{"no git dir", func(*testing.T, string, string) {}},
		{"git file without gitdir line", func(t *testing.T, dir, _ string) {
			writeFile(t, dir, ".git", "not a git file\n", 0o644)
		}},
		{"gitdir without HEAD", func(t *testing.T, dir, outside string) {
			writeFile(t, outside, "x", "", 0o644)
			writeFile(t, dir, ".git", "gitdir: "+outside+"\n", 0o644)
		}},
		{"temp dir is a symlink", func(t *testing.T, dir, outside string) {
			writeFile(t, dir, ".git/HEAD", "ref: x\n", 0o644)
			if err := os.Symlink(outside, filepath.Join(dir, ".git", TempDirName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"temp dir is a file", func(t *testing.T, dir, _ string) {
			writeFile(t, dir, ".git/HEAD", "ref: x\n", 0o644)
			writeFile(t, dir, ".git/"+TempDirName, "", 0o644)
		}},
		{"other file system", func(t *testing.T, dir, _ string) {
			writeFile(t, dir, ".git/HEAD", "ref: x\n", 0o644)
			tmp := filepath.Join(dir, ".git", TempDirName)
			swap(t, &deviceOf, func(p string) (uint64, bool) {
				if p == tmp {
					return 1, true
				}
				return 2, true
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := setup(t, map[string]string{"d/a.txt": "a\n"})
			outside := t.TempDir()
			tt.setup(t, dir, outside)
			outBefore := snapshot(t, outside)
			var beside []string
			o := Options{Fence: func() error {
				beside = tempsUnder(t, dir, false)
				return nil
			}}
			if _, err := Apply(context.Background(), testRoot{dir}, []Op{{Op: OpWrite, Path: "d/a.txt", Content: "A\n"}}, o); err != nil {
				t.Fatal(err)
			}
			if len(beside) != 1 || !strings.HasPrefix(beside[0], "d/.a.txt"+tempMarker) {
				t.Errorf("temp files during the patch = %v, want one beside d/a.txt", beside)
			}
			assertFile(t, dir, "d/a.txt", "A\n")
			if got := tempsUnder(t, dir, true); len(got) != 0 {
				t.Errorf("temp files left: %v", got)
			}
			if d := diffSnapshots(snapshot(t, outside), outBefore); d != "" {
				t.Errorf("written outside the checkout:\n%s", d)
			}
		})
	}
}

// failingWrite writes half of the data, then fails with errno on call
// number fail (1-based; 0 = every call) and succeeds on the others.
func failingWrite(fail int, errno syscall.Errno) (fn func(*os.File, []byte) (int, error), calls *int) {
	calls = new(int)
	return func(fh *os.File, b []byte) (int, error) {
		*calls++
		if fail != 0 && *calls != fail {
			return fh.Write(b)
		}
		n, _ := fh.Write(b[:len(b)/2])
		return n, &fs.PathError{Op: "write", Path: fh.Name(), Err: errno}
	}, calls
}

func TestNoSpaceIsStorageFull(t *testing.T) {
	tests := []struct {
		name   string
		git    bool
		errno  syscall.Errno
		rename bool // fail the rename instead of the write
	}{
		{"write ENOSPC in git dir", true, syscall.ENOSPC, false},
		{"write EDQUOT in git dir", true, syscall.EDQUOT, false},
		{"write ENOSPC beside target", false, syscall.ENOSPC, false},
		{"rename ENOSPC in git dir", true, syscall.ENOSPC, true},
		{"rename EDQUOT beside target", false, syscall.EDQUOT, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := setup(t, map[string]string{"a.txt": "original\n"})
			if tt.git {
				writeFile(t, dir, ".git/HEAD", "ref: x\n", 0o644)
				if err := os.Mkdir(filepath.Join(dir, ".git", TempDirName), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			fiBefore, err := os.Lstat(filepath.Join(dir, "a.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.rename {
				swap(t, &renameFile, func(string, *os.File, string) error {
					return &os.LinkError{Op: "rename", Err: tt.errno}
				})
			} else {
				w, _ := failingWrite(0, tt.errno)
				swap(t, &writeData, w)
			}
			for _, sync := range []bool{true, false} {
				_, err := Apply(context.Background(), testRoot{dir}, []Op{{Op: OpWrite, Path: "a.txt", Content: "new content\n"}}, Options{NoSync: !sync})
				if got := codeOf(err); got != errs.StorageFull {
					t.Fatalf("code = %q (%v), want %q", got, err, errs.StorageFull)
				}
				want := "no space left on the file system of " + dir + ": free space and retry"
				var e *errs.Error
				if !errors.As(err, &e) || e.Message != want {
					t.Errorf("message = %q, want %q", e.Message, want)
				}
				if !errors.Is(err, tt.errno) {
					t.Errorf("err = %v, want it to wrap %v", err, tt.errno)
				}
				if got := details(t, err)["path"]; got != "a.txt" {
					t.Errorf("details path = %v, want a.txt", got)
				}
				assertTree(t, dir, before)
				fi, err := os.Lstat(filepath.Join(dir, "a.txt"))
				if err != nil || !os.SameFile(fi, fiBefore) {
					t.Errorf("target was replaced (%v): want the same inode, untouched", err)
				}
			}
		})
	}
}

func TestNoSpaceOnSecondFileRollsBackFirst(t *testing.T) {
	dir := gitCheckout(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	if err := os.Mkdir(filepath.Join(dir, ".git", TempDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	w, calls := failingWrite(2, syscall.ENOSPC)
	swap(t, &writeData, w)
	ops := []Op{
		{Op: OpWrite, Path: "a.txt", Content: "A\n"},
		{Op: OpWrite, Path: "b.txt", Content: "B\n"},
		{Op: OpCreate, Path: "c/new.txt", Content: "C\n"},
	}
	_, err := Apply(context.Background(), testRoot{dir}, ops, Options{})
	if got := codeOf(err); got != errs.StorageFull {
		t.Fatalf("code = %q (%v), want %q", got, err, errs.StorageFull)
	}
	if got := details(t, err)["path"]; got != "b.txt" {
		t.Errorf("details path = %v, want b.txt", got)
	}
	if *calls != 3 { // a, b (fails), restore of a
		t.Errorf("writes = %d, want 3", *calls)
	}
	assertTree(t, dir, before)
}

func TestSweepTemp(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, outside, ".x.harnessd-tmp-1", "outside", 0o644)
	dir := gitCheckout(t, map[string]string{
		"a.txt": "a",
		// Leftovers: removed.
		".a.txt.harnessd-tmp-1234567890":                            "copy",
		"d/e/.f.go.harnessd-tmp-42":                                 "copy",
		".git/" + TempDirName + "/.a.txt.harnessd-tmp-7":            "copy",
		".git/" + TempDirName + "/.b.harnessd-tmp-deadbeefdeadbeef": "copy",
		// Near misses and protected places: kept.
		"a.txt.harnessd-tmp-1":                      "no leading dot",
		".a.txt.harnessd-tmp-":                      "no suffix",
		".a.txt.harnessd-tmp-backup":                "not a random suffix",
		".a.txt.harnessd-tmp-12345678901234567890a": "suffix too long",
		".harnessd-tmp-1":                           "no name before the marker",
		".git/.a.harnessd-tmp-1":                    "inside .git",
		"sub/.git/.b.harnessd-tmp-1":                "inside a nested .git",
		".git/" + TempDirName + "/keep":             "not a temp name",
	})
	if err := os.Mkdir(filepath.Join(dir, "d", ".g.harnessd-tmp-1"), 0o755); err != nil { // a directory: kept
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil { // not followed
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, ".l.harnessd-tmp-ab")); err != nil { // a temp symlink: removed
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	n, err := SweepTemp(dir)
	if err != nil {
		t.Fatal(err)
	}
	gone := []string{".a.txt.harnessd-tmp-1234567890", "d/e/.f.go.harnessd-tmp-42", ".l.harnessd-tmp-ab",
		".git/" + TempDirName + "/.a.txt.harnessd-tmp-7", ".git/" + TempDirName + "/.b.harnessd-tmp-deadbeefdeadbeef"}
	if n != len(gone) {
		t.Errorf("removed = %d, want %d", n, len(gone))
	}
	for _, g := range gone {
		delete(before, g)
	}
	assertTree(t, dir, before)
	if _, err := os.Lstat(filepath.Join(outside, ".x.harnessd-tmp-1")); err != nil {
		t.Errorf("a file behind a symlink was removed: %v", err)
	}
	if n, err := SweepTemp(dir); n != 0 || err != nil {
		t.Errorf("second sweep = %d, %v; want 0, nil", n, err)
	}
}

func TestSweepTempThroughSymlinkedRoot(t *testing.T) {
	dir := gitCheckout(t, map[string]string{"d/.a.harnessd-tmp-1": "", ".git/" + TempDirName + "/.b.harnessd-tmp-2": ""})
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if n, err := SweepTemp(link); n != 2 || err != nil {
		t.Fatalf("SweepTemp via a symlink = %d, %v; want 2, nil", n, err)
	}
}

func TestSweepTempLinkedWorktree(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "wt")
	gd := filepath.Join(base, "main", ".git", "worktrees", "wt")
	writeFile(t, gd, "HEAD", "0123\n", 0o644)
	writeFile(t, gd, TempDirName+"/.a.harnessd-tmp-9", "copy", 0o600)
	writeFile(t, dir, ".git", "gitdir: ../main/.git/worktrees/wt\n", 0o644)
	writeFile(t, dir, ".b.harnessd-tmp-9", "copy", 0o600)
	n, err := SweepTemp(dir)
	if err != nil || n != 2 {
		t.Fatalf("SweepTemp = %d, %v; want 2, nil", n, err)
	}
	if got := append(tempsUnder(t, dir, true), tempsUnder(t, gd, true)...); len(got) != 0 {
		t.Errorf("left: %v", got)
	}
}

func TestSweepTempAfterCrashedPatch(t *testing.T) {
	// A patch killed between writing its temp file and renaming it leaves
	// the temp file where step writes it; a sweep removes it.
	dir := gitCheckout(t, map[string]string{"a.txt": "a\n"})
	tmp, err := writeTemp(newTemps(dir).dirFor(dir), "a.txt", []byte("A\n"), 0o644, false)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tmp) != filepath.Join(dir, ".git", TempDirName) {
		t.Fatalf("temp file %s is not in the git dir", tmp)
	}
	n, err := SweepTemp(dir)
	if err != nil || n != 1 {
		t.Fatalf("SweepTemp = %d, %v; want 1, nil", n, err)
	}
	if _, err := os.Lstat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("leftover still there: %v", err)
	}
	assertFile(t, dir, "a.txt", "a\n")
}

func TestSweepTempStopsAtLimit(t *testing.T) {
	dir := setup(t, map[string]string{"a/1": "", "a/2": "", "b/.x.harnessd-tmp-1": ""})
	swap(t, &maxSweepEntries, 3)
	_, err := SweepTemp(dir)
	if !errors.Is(err, ErrSweepIncomplete) {
		t.Fatalf("err = %v, want ErrSweepIncomplete", err)
	}
}

func TestSweepTempBadRoot(t *testing.T) {
	if _, err := SweepTemp(""); codeOf(err) != errs.InvalidArgument {
		t.Errorf("empty root: %v, want INVALID_ARGUMENT", err)
	}
	f := filepath.Join(t.TempDir(), "f")
	writeFile(t, filepath.Dir(f), "f", "", 0o644)
	if _, err := SweepTemp(f); codeOf(err) != errs.InvalidArgument {
		t.Errorf("file root: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := SweepTemp(filepath.Join(t.TempDir(), "missing")); codeOf(err) != errs.NotFound {
		t.Errorf("missing root: %v, want NOT_FOUND", err)
	}
}

func TestGitDir(t *testing.T) {
	base := t.TempDir()
	writeFile(t, base, "plain/.git/HEAD", "x", 0o644)
	writeFile(t, base, "nohead/.git/config", "x", 0o644)
	writeFile(t, base, "real/HEAD", "x", 0o644)
	writeFile(t, base, "abs/.git", "gitdir: "+filepath.Join(base, "real")+"\n", 0o644)
	writeFile(t, base, "rel/.git", "gitdir: ../real\r\n", 0o644)
	writeFile(t, base, "junk/.git", "hello\n", 0o644)
	writeFile(t, base, "dangling/.git", "gitdir: /nonexistent/x\n", 0o644)
	writeFile(t, base, "big/.git", "gitdir: "+strings.Repeat("a", maxGitFile)+"\n", 0o644)
	tests := []struct {
		root, want string
	}{
		{"plain", filepath.Join(base, "plain", ".git")},
		{"nohead", ""},
		{"abs", filepath.Join(base, "real")},
		{"rel", filepath.Join(base, "real")},
		{"junk", ""},
		{"dangling", ""},
		{"big", ""},
		{"missing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.root, func(t *testing.T) {
			if got := GitDir(filepath.Join(base, tt.root)); got != tt.want {
				t.Errorf("GitDir = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRootOf(t *testing.T) {
	sep := string(filepath.Separator)
	tests := []struct{ abs, rel, want string }{
		{filepath.Join(sep, "r", "a", "b.txt"), "a/b.txt", filepath.Join(sep, "r")},
		{filepath.Join(sep, "r", "b.txt"), "b.txt", filepath.Join(sep, "r")},
		{filepath.Join(sep, "b.txt"), "b.txt", sep},
		{filepath.Join(sep, "r", "xb.txt"), "b.txt", ""},
		{filepath.Join(sep, "r", "b.txt"), "c.txt", ""},
		{filepath.Join(sep, "r"), ".", ""},
	}
	for _, tt := range tests {
		if got := rootOf(tt.abs, tt.rel); got != tt.want {
			t.Errorf("rootOf(%q, %q) = %q, want %q", tt.abs, tt.rel, got, tt.want)
		}
	}
}

func TestIsTempNameSuffix(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{".a.harnessd-tmp-0123456789abcdef", true},
		{".a.harnessd-tmp-4294967295", true},
		{".a.harnessd-tmp-1.harnessd-tmp-2", true},
		{".a.harnessd-tmp-backup", false},
		{".a.harnessd-tmp-ABC", false},
		{".a.harnessd-tmp-12345678901234567890a", false},
		{".harnessd-tmp-1", false},
		{".a.harnessd-tmp-1/x", false},
	}
	for _, tt := range tests {
		if got := IsTempName(tt.name); got != tt.want {
			t.Errorf("IsTempName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	for range 20 {
		if s := "." + tempPrefix("x") + randSuffix(); !IsTempName(s) {
			t.Errorf("IsTempName(%q) = false for a symlink temp name", s)
		}
	}
}

func assertFile(t *testing.T, dir, rel, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil || string(b) != want {
		t.Errorf("%s = %q, %v; want %q", rel, b, err, want)
	}
}
