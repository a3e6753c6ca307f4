package pathsafe

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

type resolveFn func(*Root, string) (string, string, error)

var (
	fnRead    resolveFn = (*Root).ResolveRead
	fnWrite   resolveFn = (*Root).ResolveWrite
	fnGeneral resolveFn = (*Root).Resolve
)

func TestResolve(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		name    string
		fn      resolveFn
		path    string // "@" is replaced by the canonical root, "%" by the outside dir
		want    errs.Code
		wantRel string
	}{
		// Garbage.
		{"empty", fnGeneral, "", errs.InvalidArgument, ""},
		{"nul", fnRead, "a.txt\x00", errs.InvalidArgument, ""},
		{"newline", fnRead, "a\n.txt", errs.InvalidArgument, ""},
		{"invalid utf8", fnRead, "a\xff.txt", errs.InvalidArgument, ""},
		{"too long", fnGeneral, strings.Repeat("a/", MaxPathLen), errs.InvalidArgument, ""},
		{"component too long", fnGeneral, strings.Repeat("a", 300), errs.InvalidArgument, ""},

		// Plain paths.
		{"file", fnRead, "a.txt", "", "a.txt"},
		{"nested", fnRead, "sub/b.go", "", "sub/b.go"},
		{"dot slash", fnRead, "./sub/./b.go", "", "sub/b.go"},
		{"double slash", fnRead, "sub//deep///c.txt", "", "sub/deep/c.txt"},
		{"trailing slash dir", fnRead, "sub/", "", "sub"},
		{"root dot", fnRead, ".", "", "."},
		{"inner dotdot", fnRead, "sub/deep/../b.go", "", "sub/b.go"},
		{"absolute inside", fnRead, "@/sub/b.go", "", "sub/b.go"},
		{"absolute root", fnGeneral, "@", "", "."},
		{"tilde in name", fnGeneral, "sub/~x", "", "sub/~x"},
		{"gitignore is fine", fnRead, ".gitignore", "", ".gitignore"},
		{"github dir is fine", fnRead, ".github/ci.yml", "", ".github/ci.yml"},
		{"environment.go is fine", fnRead, "environment.go", "", "environment.go"},

		// Escapes.
		{"dotdot", fnGeneral, "..", errs.PathOutsideRoot, ""},
		{"dotdot file", fnRead, "../outside/etc/passwd", errs.PathOutsideRoot, ""},
		{"nested escape", fnGeneral, "sub/../../x", errs.PathOutsideRoot, ""},
		{"absolute outside", fnRead, "%/etc/passwd", errs.PathOutsideRoot, ""},
		{"absolute etc", fnGeneral, "/etc/passwd", errs.PathOutsideRoot, ""},
		{"absolute prefix sibling", fnGeneral, "@x/file", errs.PathOutsideRoot, ""},
		{"tilde", fnGeneral, "~", errs.PathOutsideRoot, ""},
		{"tilde slash", fnGeneral, "~/.bashrc", errs.PathOutsideRoot, ""},

		// Missing leaves.
		{"read missing", fnRead, "nope.txt", errs.NotFound, ""},
		{"read missing dir", fnRead, "nope/x.txt", errs.NotFound, ""},
		{"read file as dir", fnRead, "a.txt/x", errs.NotFound, ""},
		{"write missing", fnWrite, "new.txt", "", "new.txt"},
		{"write missing dirs", fnWrite, "x/y/z.txt", "", "x/y/z.txt"},
		{"write file as dir", fnWrite, "a.txt/x", errs.InvalidArgument, ""},
		{"write root", fnWrite, ".", errs.InvalidArgument, ""},
		{"general missing", fnGeneral, "x/y", "", "x/y"},
		{"general file as dir", fnGeneral, "a.txt/x", "", "a.txt/x"},

		// Symlinks that stay inside.
		{"link to dir", fnRead, "link_in/b.go", "", "sub/b.go"},
		{"link to file", fnRead, "link_file", "", "a.txt"},
		{"absolute link inside", fnRead, "link_abs_in/deep/c.txt", "", "sub/deep/c.txt"},
		{"link chain", fnRead, "link_chain/c.txt", "", "sub/deep/c.txt"},
		{"link to root", fnRead, "link_root/a.txt", "", "a.txt"},
		{"link up inside", fnRead, "sub/link_up/a.txt", "", "a.txt"},
		{"write through inside link", fnWrite, "link_in/new/file", "", "sub/new/file"},
		{"dangling inside read", fnRead, "link_dangling_in", errs.NotFound, ""},
		{"dangling inside write", fnWrite, "link_dangling_in", "", "does/not/exist"},

		// Symlinks that leave.
		{"link out", fnRead, "link_out/passwd", errs.PathOutsideRoot, ""},
		{"link out dir itself", fnGeneral, "link_out", errs.PathOutsideRoot, ""},
		{"link out relative", fnRead, "link_out_rel/passwd", errs.PathOutsideRoot, ""},
		{"link out new leaf", fnWrite, "link_out/newfile", errs.PathOutsideRoot, ""},
		{"link out new dirs", fnWrite, "link_out/a/b/c", errs.PathOutsideRoot, ""},
		{"dangling out read", fnRead, "link_dangling_out", errs.PathOutsideRoot, ""},
		{"dangling out write", fnWrite, "link_dangling_out", errs.PathOutsideRoot, ""},
		{"link upup", fnGeneral, "sub/link_upup/outside", errs.PathOutsideRoot, ""},
		{"loop", fnGeneral, "link_loop1", errs.InvalidArgument, ""},

		// .git rule.
		{"git dir", fnRead, ".git", errs.PathNotAllowed, ""},
		{"git config", fnRead, ".git/config", errs.PathNotAllowed, ""},
		{"git upper case", fnRead, ".GIT/config", errs.PathNotAllowed, ""},
		{"nested git file", fnRead, "sub/.git", errs.PathNotAllowed, ""},
		{"nested git config", fnWrite, "sub/.git/config", errs.PathNotAllowed, ""},
		{"git write", fnWrite, ".git/hooks/pre-commit", errs.PathNotAllowed, ""},
		{"git via dotdot", fnRead, "sub/../.git/HEAD", errs.PathNotAllowed, ""},
		{"git via link", fnRead, "link_git", errs.PathNotAllowed, ""},
		{"git general ok", fnGeneral, ".git/config", "", ".git/config"},

		// Secrets.
		{"env", fnRead, ".env", errs.SecretPathDenied, ""},
		{"env nested", fnRead, "sub/.env.local", errs.SecretPathDenied, ""},
		{"envrc", fnRead, ".envrc", errs.SecretPathDenied, ""},
		{"pub key", fnRead, "keys/id_rsa.pub", errs.SecretPathDenied, ""},
		{"ssh dir", fnRead, ".ssh/known_hosts", errs.SecretPathDenied, ""},
		{"aws nested", fnRead, "cfg/.aws/config", errs.SecretPathDenied, ""},
		{"pem upper", fnRead, "notes/Server.PEM", errs.SecretPathDenied, ""},
		{"secrets yml", fnRead, "deploy/secrets.yml", errs.SecretPathDenied, ""},
		{"secret via link", fnRead, "link_secret", errs.SecretPathDenied, ""},
		{"secret missing general", fnGeneral, "new/.env", errs.SecretPathDenied, ""},
		{"secret write", fnWrite, "id_ed25519", errs.SecretPathDenied, ""},
		{"secret via dotdot", fnGeneral, "sub/../.env", errs.SecretPathDenied, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := strings.ReplaceAll(tt.path, "@", fx.dir)
			p = strings.ReplaceAll(p, "%", fx.outside)
			abs, rel, err := tt.fn(fx.root, p)
			if got := codeOf(err); got != tt.want {
				t.Fatalf("resolve(%q): got code %q (err %v), want %q", p, got, err, tt.want)
			}
			if err != nil {
				return
			}
			if rel != tt.wantRel {
				t.Errorf("resolve(%q): got rel %q, want %q", p, rel, tt.wantRel)
			}
			wantAbs := filepath.Join(fx.dir, filepath.FromSlash(tt.wantRel))
			if abs != wantAbs {
				t.Errorf("resolve(%q): got abs %q, want %q", p, abs, wantAbs)
			}
		})
	}
}

func TestResolveSecretDetails(t *testing.T) {
	fx := newFixture(t)
	_, _, err := fx.root.ResolveRead("sub/.env.local")
	e := errs.From(err)
	if e.Code != errs.SecretPathDenied {
		t.Fatalf("got code %q, want %q", e.Code, errs.SecretPathDenied)
	}
	if got := e.Details["pattern"]; got != ".env.*" {
		t.Errorf("got pattern detail %v, want %q", got, ".env.*")
	}
}

func TestNewRoot(t *testing.T) {
	fx := newFixture(t)
	aliasDir := t.TempDir()
	alias := filepath.Join(aliasDir, "alias")
	if err := os.Symlink(fx.dir, alias); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root string
		want errs.Code
	}{
		{"canonical", fx.dir, ""},
		{"alias symlink", alias, ""},
		{"unclean", fx.dir + "/sub/..", ""},
		{"empty", "", errs.InvalidArgument},
		{"nul", "a\x00b", errs.InvalidArgument},
		{"missing", filepath.Join(fx.dir, "nope"), errs.NotFound},
		{"file", filepath.Join(fx.dir, "a.txt"), errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRoot(tt.root, nil)
			if got := codeOf(err); got != tt.want {
				t.Fatalf("NewRoot(%q): got code %q (err %v), want %q", tt.root, got, err, tt.want)
			}
			if err != nil {
				return
			}
			if r.Path() != fx.dir {
				t.Errorf("Path(): got %q, want %q", r.Path(), fx.dir)
			}
			if r.Deny() == nil {
				t.Errorf("Deny(): got nil, want the default list")
			}
		})
	}

	// Absolute paths spelled through the alias the root was opened with are
	// inside the root.
	r, err := NewRoot(alias, nil)
	if err != nil {
		t.Fatal(err)
	}
	abs, rel, err := r.ResolveRead(filepath.Join(alias, "sub", "b.go"))
	if err != nil {
		t.Fatalf("ResolveRead via alias: got err %v, want nil", err)
	}
	if want := filepath.Join(fx.dir, "sub", "b.go"); abs != want || rel != "sub/b.go" {
		t.Errorf("ResolveRead via alias: got (%q, %q), want (%q, %q)", abs, rel, want, "sub/b.go")
	}
}

func TestCustomDenylistRoot(t *testing.T) {
	fx := newFixture(t)
	d, err := NewDenylist([]string{"docs/**"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRoot(fx.dir, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.ResolveRead("docs/README.md"); codeOf(err) != errs.SecretPathDenied {
		t.Errorf("docs/README.md: got %v, want %s", err, errs.SecretPathDenied)
	}
	if _, _, err := r.ResolveRead(".env"); err != nil {
		t.Errorf(".env with custom list: got %v, want nil", err)
	}
	if !r.Excluded("docs/x") || r.Excluded(".env") {
		t.Errorf("Excluded: got docs/x=%v .env=%v, want true false", r.Excluded("docs/x"), r.Excluded(".env"))
	}
}

func TestResolveReadLeaf(t *testing.T) {
	fx := newFixture(t)
	if err := syscall.Mkfifo(filepath.Join(fx.dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(fx.dir, "sub", "self")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		wantRel  string
		wantMode fs.FileMode
	}{
		{"regular", "sub/b.go", "sub/b.go", 0},
		{"directory", "sub/deep", "sub/deep", fs.ModeDir},
		{"root", ".", ".", fs.ModeDir},
		{"fifo", "fifo", "fifo", fs.ModeNamedPipe},
		{"link to file", "link_file", "a.txt", 0},
		{"link to root", "link_root", ".", fs.ModeDir},
		{"link to dot", "sub/self", "sub", fs.ModeDir},
		{"link up", "sub/link_up", ".", fs.ModeDir},
		{"link chain", "link_chain", "sub/deep", fs.ModeDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			abs, rel, leaf, err := fx.root.ResolveReadLeaf(tt.path)
			if err != nil {
				t.Fatalf("ResolveReadLeaf(%q): got err %v, want nil", tt.path, err)
			}
			if rel != tt.wantRel || leaf.Mode != tt.wantMode {
				t.Errorf("ResolveReadLeaf(%q): got (%q, %v), want (%q, %v)", tt.path, rel, leaf.Mode, tt.wantRel, tt.wantMode)
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(abs, &st); err != nil {
				t.Fatal(err)
			}
			if leaf.Dev != uint64(st.Dev) || leaf.Ino != uint64(st.Ino) {
				t.Errorf("ResolveReadLeaf(%q): got dev/ino %d/%d, want %d/%d", tt.path, leaf.Dev, leaf.Ino, st.Dev, st.Ino)
			}
		})
	}
}

func TestRootConcurrentUse(t *testing.T) {
	fx := newFixture(t)
	paths := []string{"a.txt", "sub/b.go", "link_in/b.go", ".env", "link_out/passwd", "nope", ".git/config"}
	want := make([]errs.Code, len(paths))
	for i, p := range paths {
		_, _, err := fx.root.ResolveRead(p)
		want[i] = codeOf(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 200; n++ {
				i := (g + n) % len(paths)
				if _, _, err := fx.root.ResolveRead(paths[i]); codeOf(err) != want[i] {
					t.Errorf("ResolveRead(%q): got %q, want %q", paths[i], codeOf(err), want[i])
					return
				}
				fx.root.Excluded(paths[i])
			}
		}()
	}
	wg.Wait()
}
