package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The user's tools are found where version managers keep them: a PATH
// entry under the home brings its tool's tree, a shims dir elsewhere
// brings its root (versions beside it), a manager's root variable brings
// its root, a symlink on PATH brings where it leads; containers of
// unrelated things and harnessd's own data never come whole.
func TestToolDirs(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	mk := func(ps ...string) {
		for _, p := range ps {
			if err := os.MkdirAll(filepath.Join(base, p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("home/.pyenv/shims", "home/.pyenv/versions/3.12/bin", "srv/pyenv/shims", "srv/pyenv/versions/3.11/bin",
		"home/.local/bin", "home/.local/state/harnessd", "home/.cargo/bin", "opt2/nvm/versions/node/v20/bin", "home/tools/x/bin", "rbenv")
	if err := os.Symlink(filepath.Join(home, "tools", "x", "bin", "x"), filepath.Join(home, ".local", "bin", "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "tools", "x", "bin", "x"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pathEnv := filepath.Join(home, ".pyenv", "shims") + ":" + filepath.Join(base, "srv", "pyenv", "shims") + ":" + filepath.Join(home, ".local", "bin") +
		":" + filepath.Join(home, ".cargo", "bin") + ":/usr/bin"
	hidden := []string{filepath.Join(home, ".local", "state", "harnessd")}
	got := toolDirs(pathEnv, home, hidden, "NVM_DIR="+filepath.Join(base, "opt2", "nvm"), "RBENV_ROOT="+filepath.Join(base, "rbenv"))
	want := []string{
		filepath.Join(home, ".pyenv"),
		filepath.Join(base, "srv", "pyenv"),
		filepath.Join(home, ".local", "bin"),
		filepath.Join(home, "tools"),
		filepath.Join(home, ".cargo"),
		filepath.Join(base, "opt2", "nvm"),
		filepath.Join(base, "rbenv"),
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("toolDirs lacks %s: %q", w, got)
		}
	}
	for _, bad := range []string{home, filepath.Join(home, ".local"), "/usr/bin", filepath.Join(home, ".local", "state")} {
		if slices.Contains(got, bad) {
			t.Errorf("toolDirs holds %s: %q", bad, got)
		}
	}
}
