package pathsafe

import (
	"mvdan.cc/sh/v3/syntax"

	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func FuzzResolve(f *testing.F) {
	fx := newFixture(f)
	for _, s := range []string{
		"a.txt", "sub/b.go", "..", "../outside/etc/passwd", "/etc/passwd", fx.dir + "/a.txt",
		"link_out/passwd", "link_out/new", "link_dangling_out", "link_in/../..", "sub/link_upup/x",
		".env", "sub/.ENV.local", ".git/config", "sub/.git", "~", "a\x00b", "", ".", "./", "//",
		"link_loop1/x", "link_chain/../../..", "a.txt/x", fx.dir + "/../repo/a.txt", "\xff",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, p string, which uint8) {
		var (
			abs, rel string
			err      error
			m        mode
		)
		switch which % 3 {
		case 0:
			abs, rel, err = fx.root.ResolveRead(p)
			m = modeRead
		case 1:
			abs, rel, err = fx.root.ResolveWrite(p)
			m = modeWrite
		default:
			abs, rel, err = fx.root.Resolve(p)
			m = modeGeneral
		}
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || e.Code == errs.Internal {
				t.Fatalf("resolve(%q): got uncoded or internal error %v, want a coded error", p, err)
			}
			return
		}
		if _, ok := fx.root.within(abs); !ok {
			t.Fatalf("resolve(%q): got abs %q, want inside %q", p, abs, fx.dir)
		}
		if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) || rel == "" {
			t.Fatalf("resolve(%q): got rel %q, want a relative path inside the root", p, rel)
		}
		if want := filepath.Join(fx.dir, rel); abs != want {
			t.Fatalf("resolve(%q): got abs %q, want %q (root joined with rel %q)", p, abs, want, rel)
		}
		if pat, ok := fx.root.Deny().Match(rel); ok {
			t.Fatalf("resolve(%q): got rel %q matching secret pattern %q, want an error", p, rel, pat)
		}
		if m.noGit && hasGitComponent(rel) {
			t.Fatalf("resolve(%q): got rel %q inside .git, want an error", p, rel)
		}
		if m.mustExist {
			var st syscall.Stat_t
			if err := syscall.Lstat(abs, &st); err != nil {
				t.Fatalf("ResolveRead(%q): got abs %q that does not exist (%v)", p, abs, err)
			}
			if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
				t.Fatalf("ResolveRead(%q): got abs %q that is a symlink, want the real path", p, abs)
			}
		}
	})
}

func FuzzCheckArgv(f *testing.F) {
	fx := newFixture(f)
	for _, s := range [][2]string{
		{"a.txt", "-n"}, {"../x", ""}, {"/etc/passwd", "x"}, {"/dev/null", "."}, {"~", "$HOME"},
		{"--out=../x", "if=/etc"}, {".env", "HEAD:.env"}, {"link_out/new", "link_in/b.go"},
		{"foo|bar/baz", "*.pem"}, {fx.dir + "/a.txt", fx.dir + "/.env"}, {"a\x00", "b"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		argv := []string{"prog", a, b}
		err := fx.root.CheckArgv(argv)
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || e.Code == errs.Internal {
				t.Fatalf("CheckArgv(%q): got uncoded or internal error %v, want a coded error", argv, err)
			}
			return
		}
		for _, arg := range argv[1:] {
			if strings.IndexByte(arg, 0) >= 0 {
				t.Fatalf("CheckArgv(%q): accepted a NUL byte", argv)
			}
			if filepath.IsAbs(arg) {
				c := filepath.Clean(arg)
				if _, ok := fx.root.within(c); !ok && !allowedDevices[c] {
					t.Fatalf("CheckArgv(%q): accepted absolute path %q outside the root", argv, arg)
				}
			}
			if c := filepath.Clean(arg); c == ".." || strings.HasPrefix(c, "../") {
				t.Fatalf("CheckArgv(%q): accepted escaping path %q", argv, arg)
			}
			if isHomeLike(arg) {
				t.Fatalf("CheckArgv(%q): accepted home path %q", argv, arg)
			}
		}
	})
}

// FuzzCheckArgvScript: any shell script gets a coded answer, never a panic,
// and an accepted one names no secret file as a plain word.
func FuzzCheckArgvScript(f *testing.F) {
	fx := newFixture(f)
	for _, s := range []string{"cat a.txt", "cat .env", "for f in *; do cat $f; done", "sh -c 'sh -c \"cat .env\"'",
		"cat <<EOF\n.env\nEOF", "x=$(cat .env); echo $x", "a | b && c || d", "'unterminated", "$((1+2))", "{ cat .envrc; }"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		err := fx.root.CheckArgv([]string{"sh", "-c", script})
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || e.Code == errs.Internal {
				t.Fatalf("CheckArgv(sh -c %q): got uncoded or internal error %v", script, err)
			}
			return
		}
		f, perr := syntax.NewParser().Parse(strings.NewReader(script), "")
		if perr != nil {
			t.Fatalf("CheckArgv(sh -c %q): accepted a script that does not parse: %v", script, perr)
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.CallExpr); ok {
				for _, w := range c.Args {
					if lit, whole, _ := wordLit(w); whole && (lit == ".env" || lit == ".envrc") {
						t.Fatalf("CheckArgv(sh -c %q): accepted a command that names %s", script, lit)
					}
				}
			}
			return true
		})
	})
}
