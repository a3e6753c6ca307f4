package readfile

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestList(t *testing.T) {
	root, dir := newRepo(t, map[string]string{
		"README.md":             "hello\n",
		"src/app.go":            "package app\n",
		"src/.env.local":        "K=v\n",
		".env":                  "K=v\n",
		"id_rsa":                "key\n",
		".git/config":           "[core]\n",
		".a.go.harnessd-tmp-3f": "{}",
		".ssh/config":           "Host x\n",
	})
	if err := os.Symlink("README.md", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		req     ListRequest
		want    []Entry
		path    string
		omitted int
		trunc   bool
	}{
		{"the root: secret paths, .git and temp files left out", ListRequest{},
			[]Entry{{"README.md", "file", 6}, {"fifo", "other", 0}, {"link", "symlink", 0}, {"src", "dir", 0}}, ".", 5, false},
		{"the root as .", ListRequest{Path: "."},
			[]Entry{{"README.md", "file", 6}, {"fifo", "other", 0}, {"link", "symlink", 0}, {"src", "dir", 0}}, ".", 5, false},
		{"a subdirectory", ListRequest{Path: "src/"},
			[]Entry{{"app.go", "file", 12}}, "src", 1, false},
		{"bounded", ListRequest{MaxEntries: 2},
			[]Entry{{"README.md", "file", 6}, {"fifo", "other", 0}}, ".", 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := List(root, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Entries, tt.want) || got.Path != tt.path || got.Omitted != tt.omitted || got.Truncated != tt.trunc {
				t.Errorf("List(%+v) = %+v, want entries %+v, path %q, omitted %d, truncated %v", tt.req, got, tt.want, tt.path, tt.omitted, tt.trunc)
			}
		})
	}
}

func TestListErrors(t *testing.T) {
	root, dir := newRepo(t, map[string]string{"a.txt": "a\n", ".ssh/id": "k\n", ".git/config": "[core]\n", "sub/b": "b\n"})
	outside := filepath.Join(filepath.Dir(dir), "out")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "sublink")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  ListRequest
		want errs.Code
	}{
		{"a file", ListRequest{Path: "a.txt"}, errs.InvalidArgument},
		{"missing", ListRequest{Path: "nope"}, errs.NotFound},
		{"a secret directory", ListRequest{Path: ".ssh"}, errs.SecretPathDenied},
		{".git", ListRequest{Path: ".git"}, errs.PathNotAllowed},
		{"a symlink out of the root", ListRequest{Path: "escape"}, errs.PathOutsideRoot},
		{"dotdot", ListRequest{Path: ".."}, errs.PathOutsideRoot},
		{"absolute outside", ListRequest{Path: outside}, errs.PathOutsideRoot},
		{"nul", ListRequest{Path: "sub\x00"}, errs.InvalidArgument},
		{"negative max_entries", ListRequest{MaxEntries: -1}, errs.InvalidArgument},
		{"max_entries past the bound", ListRequest{MaxEntries: MaxListEntries + 1}, errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := List(root, tt.req)
			if code := codeOf(err); code != tt.want {
				t.Errorf("List(%+v) = %+v, %v; want code %s", tt.req, got, err, tt.want)
			}
		})
	}
	// A symlink to a directory inside the root lists that directory.
	got, err := List(root, ListRequest{Path: "sublink"})
	if err != nil || got.Path != "sub" || len(got.Entries) != 1 || got.Entries[0].Name != "b" {
		t.Errorf("List(sublink) = %+v, %v; want sub's one entry", got, err)
	}
	if _, err := List(nil, ListRequest{}); codeOf(err) != errs.InvalidArgument {
		t.Errorf("List(nil root): %v", err)
	}
}

// A directory swapped for a symlink between resolution and open is never
// listed: the open does not follow the final symlink, and what it opened
// must be what resolution saw.
func TestListDirSwappedForSymlink(t *testing.T) {
	root, dir := newRepo(t, map[string]string{"d/inside": "x\n"})
	outside := filepath.Join(filepath.Dir(dir), "elsewhere")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "private"), []byte("p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testHookBeforeOpen = func(string) {
		_ = os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "d.old"))
		_ = os.Symlink(outside, filepath.Join(dir, "d"))
	}
	t.Cleanup(func() { testHookBeforeOpen = nil })
	got, err := List(root, ListRequest{Path: "d"})
	for _, e := range got.Entries {
		if e.Name == "private" {
			t.Fatalf("listed the directory outside the root: %+v", got)
		}
	}
	if err == nil {
		t.Fatalf("List of a swapped directory: %+v, want an error", got)
	}
}

func TestListLargeDirectoryIsBounded(t *testing.T) {
	files := map[string]string{}
	for i := range 3000 {
		files[fmt.Sprintf("f%04d", i)] = ""
	}
	root, _ := newRepo(t, files)
	got, err := List(root, ListRequest{MaxEntries: MaxListEntries})
	if err != nil || len(got.Entries) != MaxListEntries || !got.Truncated || got.Entries[0].Name != "f0000" || got.Entries[MaxListEntries-1].Name != "f1999" {
		t.Fatalf("3000 files, max %d: %d entries (truncated %v), first %+v, %v", MaxListEntries, len(got.Entries), got.Truncated, got.Entries[:1], err)
	}
}
