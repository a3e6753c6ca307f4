package pathsafe

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// fixture is a repository tree with symlinks in and out of it.
type fixture struct {
	root    *Root
	dir     string // canonical root
	outside string // canonical directory outside the root
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "repo")
	outside := filepath.Join(base, "outside")
	files := map[string]string{
		"a.txt":              "a\n",
		"sub/b.go":           "package sub\n",
		"sub/deep/c.txt":     "c\n",
		".git/config":        "[core]\n",
		".git/HEAD":          "ref: refs/heads/main\n",
		"sub/.git":           "gitdir: ../.git/modules/sub\n",
		".env":               "TOKEN=x\n",
		"sub/.env.local":     "TOKEN=y\n",
		".envrc":             "export X=1\n",
		"environment.go":     "package main\n",
		"keys/id_rsa.pub":    "ssh-rsa AAAA\n",
		".ssh/known_hosts":   "host\n",
		"cfg/.aws/config":    "[default]\n",
		"docs/README.md":     "# docs\n",
		".github/ci.yml":     "on: push\n",
		".gitignore":         "*.o\n",
		"notes/Server.PEM":   "-----BEGIN-----\n",
		"deploy/secrets.yml": "x: y\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(outside, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "etc", "passwd"), []byte("root:x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hard link inside the root to a file outside it.
	if err := os.Link(filepath.Join(outside, "etc", "passwd"), filepath.Join(dir, "hardlink.txt")); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"link_in":           "sub",
		"link_file":         "a.txt",
		"link_abs_in":       filepath.Join(dir, "sub"),
		"link_out":          filepath.Join(outside, "etc"),
		"link_out_rel":      "../outside/etc",
		"link_dangling_out": filepath.Join(outside, "nope", "x"),
		"link_dangling_in":  "does/not/exist",
		"link_secret":       ".env",
		"link_git":          ".git/config",
		"link_loop1":        "link_loop2",
		"link_loop2":        "link_loop1",
		"sub/link_up":       "..",
		"sub/link_upup":     "../..",
		"link_chain":        "link_in/deep",
		"link_root":         ".",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewRoot(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{root: r, dir: dir, outside: outside}
}

// codeOf returns the errs code of err, "" for nil.
func codeOf(err error) errs.Code {
	if err == nil {
		return ""
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		return "NOT_CODED"
	}
	return e.Code
}
