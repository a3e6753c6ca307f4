package secrets

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

func defaultDeny(t testing.TB) *pathsafe.Denylist {
	d, err := pathsafe.NewDenylist(pathsafe.DefaultSecretPatterns())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for _, f := range []string{
		".env", "app/.env.local", "app/config.yaml", "deep/a/b/id_rsa", "certs/server.pem", "src/main.go",
		".ssh/id_ed25519", "x/.ssh/config", ".git/.env", ".git/config", "nested/.git", "nested/.GITIGNORE",
		"README.md", "sub mod/.aws/credentials",
	} {
		writeFile(t, root, f, "x")
	}
	writeFile(t, outside, ".env", "outside")
	writeFile(t, outside, "k.pem", "outside")
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "k.pem"), filepath.Join(root, "creds.pem")); err != nil {
		t.Fatal(err)
	}
	got, err := Find(root, defaultDeny(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{".env", "app/.env.local", "certs/server.pem", "creds.pem", "deep/a/b/id_rsa", "sub mod/.aws/credentials"}
	wantDirs := []string{".ssh", "x/.ssh"}
	if !slices.Equal(got.Files, wantFiles) || !slices.Equal(got.Dirs, wantDirs) || got.Truncated {
		t.Errorf("Find = files %q, dirs %q, truncated %v\nwant files %q, dirs %q", got.Files, got.Dirs, got.Truncated, wantFiles, wantDirs)
	}
	// A nil denylist is the default one.
	if nilDeny, err := Find(root, nil, 0); err != nil || !slices.Equal(nilDeny.Files, wantFiles) {
		t.Errorf("Find with a nil denylist = %q, %v", nilDeny.Files, err)
	}
}

func TestFindLimit(t *testing.T) {
	root := t.TempDir()
	for i := range 30 {
		writeFile(t, root, fmt.Sprintf("d%02d/.env", i), "x")
	}
	// 60 entries: 30 directories and their .env files.
	for _, tt := range []struct {
		limit int
		trunc bool
	}{{10, true}, {59, true}, {60, false}, {0, false}} {
		got, err := Find(root, nil, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got.Truncated != tt.trunc {
			t.Errorf("limit %d: Truncated = %v, want %v", tt.limit, got.Truncated, tt.trunc)
		}
		if tt.limit > 0 && len(got.Files) > tt.limit {
			t.Errorf("limit %d: %d files", tt.limit, len(got.Files))
		}
		if !tt.trunc && len(got.Files) != 30 {
			t.Errorf("limit %d: %d files, want 30", tt.limit, len(got.Files))
		}
		if !slices.IsSorted(got.Files) {
			t.Errorf("limit %d: files not sorted", tt.limit)
		}
	}
}

func TestFindErrors(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "file", "x")
	if err := os.Symlink(root, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		root string
		code errs.Code
	}{
		"missing":  {filepath.Join(root, "missing"), errs.NotFound},
		"file":     {filepath.Join(root, "file"), errs.InvalidArgument},
		"symlink":  {filepath.Join(root, "link"), errs.InvalidArgument},
		"resolved": {root, ""},
	} {
		_, err := Find(tt.root, nil, 0)
		if errs.CodeOf(err) != tt.code && !(tt.code == "" && err == nil) {
			t.Errorf("%s: Find error %v, want code %q", name, err, tt.code)
		}
	}
}

func TestFindUnreadableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	root := t.TempDir()
	writeFile(t, root, "locked/.env", "x")
	writeFile(t, root, "open/.env", "x")
	if err := os.Chmod(filepath.Join(root, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "locked"), 0o755) })
	got, err := Find(root, nil, 0)
	if err != nil || !slices.Equal(got.Files, []string{"open/.env"}) {
		t.Errorf("Find = %q, %v, want the readable .env only", got.Files, err)
	}
}
