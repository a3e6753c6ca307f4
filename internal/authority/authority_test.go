package authority

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNeverGrantable(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home", "u")
	data := filepath.Join(home, ".local", "state", "harnessd")
	bare := filepath.Join(base, "srv", "app.git")
	for _, d := range []string{data, filepath.Join(home, "src", "app", ".git", "hooks"), filepath.Join(bare, "objects"), filepath.Join(bare, "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bare, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := Env{Home: home, Hidden: []string{data, "/var/cache/harnessd-sandbox-0"}}
	tests := []struct {
		path string
		rule string // "" = grantable
	}{
		{"/", "root"},
		{"relative/dir", "root"},
		{"/proc", "system"},
		{"/proc/self", "system"},
		{"/sys/kernel", "system"},
		{"/dev/shm", "system"},
		{"/dev/shm/ci/checkout", ""}, // a tmpfs for files, not a device
		{"/dev/sda", "system"},
		{"/etc", "system"},
		{"/etc/ssh", "system"},
		{"/run/user/1000", "system"},
		{home, "home"},
		{filepath.Join(base, "home"), "holds-home"},
		{filepath.Join(home, ".ssh"), "credentials"},
		{filepath.Join(home, ".ssh", "keys"), "credentials"},
		{filepath.Join(home, ".aws"), "credentials"},
		{filepath.Join(home, ".kube"), "credentials"},
		{filepath.Join(home, ".docker"), "credentials"},
		{filepath.Join(home, ".gnupg"), "credentials"},
		{filepath.Join(home, ".config"), "credentials"}, // holds .config/gh and .config/git
		{filepath.Join(home, ".config", "gh"), "credentials"},
		{filepath.Join(home, ".config", "git"), "credentials"},
		{filepath.Join(home, ".cargo"), "credentials"}, // holds credentials.toml
		{filepath.Join(home, ".netrc"), "credentials"},
		{filepath.Join(home, ".local"), "harnessd"}, // holds the data dir
		{data, "harnessd"},
		{filepath.Join(data, "worktrees"), "harnessd"},
		{"/var/cache/harnessd-sandbox-0/read-1", "harnessd"},
		{"/var/cache", "harnessd"}, // holds the sandbox tmp root
		{filepath.Join(home, "src", "app", ".git"), "git-dir"},
		{filepath.Join(home, "src", "app", ".git", "hooks"), "git-dir"},
		{bare, "git-dir"},
		{filepath.Join(bare, "objects"), "git-dir"},
		// Grantable.
		{filepath.Join(home, "src"), ""},
		{filepath.Join(home, "src", "app"), ""},
		{filepath.Join(home, ".config-backup"), ""},
		{filepath.Join(base, "srv"), ""},
		{"/opt/project", ""},
	}
	for _, tt := range tests {
		n, never := NeverGrantable(tt.path, e)
		got := ""
		if never {
			got = n.Rule
		}
		if got != tt.rule {
			t.Errorf("NeverGrantable(%q) = %q (%s), want %q", tt.path, got, n.Reason, tt.rule)
		}
		if never && !strings.Contains(n.Reason, " ") {
			t.Errorf("NeverGrantable(%q): reason %q says nothing", tt.path, n.Reason)
		}
	}
}

func TestAreas(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	if err := os.MkdirAll(filepath.Join(src, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(src, link); err != nil {
		t.Fatal(err)
	}
	a, err := NewAreas([]string{link, src, ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || a[0] != Canonical(src) {
		t.Fatalf("areas = %q, want one: %q", a, Canonical(src))
	}
	for _, tt := range []struct {
		path string
		ok   bool
	}{{Canonical(src), true}, {filepath.Join(Canonical(src), "app"), true}, {Canonical(base), false}, {Canonical(src) + "-other", false}} {
		if _, ok := a.Contains(tt.path); ok != tt.ok {
			t.Errorf("Contains(%q) = %v, want %v", tt.path, ok, tt.ok)
		}
	}
	for _, bad := range []string{"rel/dir", filepath.Join(base, "missing"), filepath.Join(src, "nofile")} {
		if _, err := NewAreas([]string{bad}); err == nil {
			t.Errorf("NewAreas(%q) accepted", bad)
		}
	}
}

func TestCanonical(t *testing.T) {
	base := t.TempDir()
	real := Canonical(base)
	if err := os.Symlink(real, filepath.Join(base, "l")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ in, want string }{
		{"", ""}, {"rel", ""},
		{filepath.Join(base, "l"), real},
		{filepath.Join(base, "l", "missing", "x"), filepath.Join(real, "missing", "x")},
	} {
		if got := Canonical(tt.in); got != tt.want {
			t.Errorf("Canonical(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzNeverGrantable(f *testing.F) {
	for _, s := range []string{"/", "/proc/self", "/home/u/.ssh", "/home/u/src/app", "/x/.git/hooks", "", "rel"} {
		f.Add(s)
	}
	e := Env{Home: "/home/u", Hidden: []string{"/home/u/.local/state/harnessd"}}
	f.Fuzz(func(t *testing.T, p string) {
		n, never := NeverGrantable(p, e)
		if never && n.Rule == "" {
			t.Fatalf("%q refused without a rule", p)
		}
		c := filepath.Clean(p)
		if filepath.IsAbs(p) && (c == "/" || c == "/home/u" || Within(c, "/proc") || Within(c, "/home/u/.ssh")) && !never {
			t.Fatalf("%q granted", p)
		}
	})
}
