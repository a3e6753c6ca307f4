package gitx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestTopLevel(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "sub/f.txt", "x\n")
	commitAll(t, dir, "one")
	links := t.TempDir()
	link := filepath.Join(links, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, dir, "worktree", "add", "-q", wt)
	wt, _ = filepath.EvalSymlinks(wt)
	gitDir := filepath.Join(dir, ".git")
	var g Git
	tests := []struct {
		name, path, root, common string
	}{
		{"root", dir, dir, gitDir},
		{"subdir", filepath.Join(dir, "sub"), dir, gitDir},
		{"file", filepath.Join(dir, "sub", "f.txt"), dir, gitDir},
		{"symlink", filepath.Join(link, "sub"), dir, gitDir},
		{"worktree", wt, wt, gitDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, common, err := g.TopLevel(ctx, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if root != tt.root || common != tt.common {
				t.Errorf("got %q/%q, want %q/%q", root, common, tt.root, tt.common)
			}
		})
	}
}

func TestTopLevelErrors(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	plain, _ := filepath.EvalSymlinks(t.TempDir())
	bare := filepath.Join(plain, "bare.git")
	gitT(t, plain, "init", "-q", "--bare", bare)
	var g Git
	tests := []struct {
		name, path string
		want       errs.Code
	}{
		{"empty", "", errs.InvalidArgument},
		{"missing", filepath.Join(plain, "nope"), errs.NotFound},
		{"plain dir", plain, errs.NotAGitRepository},
		{"bare", bare, errs.NotAGitRepository},
		{"inside .git", filepath.Join(dir, ".git"), errs.NotAGitRepository},
		{"inside .git/objects", filepath.Join(dir, ".git", "objects"), errs.NotAGitRepository},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := g.TopLevel(ctx, tt.path)
			if c := errs.CodeOf(err); c != tt.want {
				t.Fatalf("code = %s (%v), want %s", c, err, tt.want)
			}
		})
	}
}

func TestSplitTopLevel(t *testing.T) {
	tests := []struct {
		in, top, common string
		ok              bool
	}{
		{"/r\n.git", "/r", ".git", true},
		{"/a\nb\n/a\nb/.git", "/a\nb", "/a\nb/.git", true},
		{"/a\nb\n/elsewhere", "/a", "b\n/elsewhere", true},
		{"/only", "", "", false},
	}
	for _, tt := range tests {
		top, common, ok := splitTopLevel(tt.in)
		if top != tt.top || common != tt.common || ok != tt.ok {
			t.Errorf("splitTopLevel(%q) = %q/%q/%v, want %q/%q/%v", tt.in, top, common, ok, tt.top, tt.common, tt.ok)
		}
	}
}
