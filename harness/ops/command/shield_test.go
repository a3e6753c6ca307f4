package command

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

func TestShieldArgv(t *testing.T) {
	pats := []string{".env*", ".ssh/**", ".aws/credentials", "/top.key"}
	obj := ".git/objects/ab/cdef0123456789abcdef0123456789abcdef01"
	closed := []string{obj}
	grepX := []string{"--exclude=.[eE][nN][vV]*", "--exclude-dir=.[eE][nN][vV]*", "--exclude=.[sS][sS][hH]", "--exclude-dir=.[sS][sS][hH]",
		"--exclude-dir=.[aA][wW][sS]", "--exclude=[tT][oO][pP].[kK][eE][yY]", "--exclude-dir=[tT][oO][pP].[kK][eE][yY]",
		"--exclude=cdef0123456789abcdef0123456789abcdef01"}
	rgX := []string{"--iglob=!**/.env*", "--iglob=!**/.ssh", "--iglob=!**/.aws/credentials", "--iglob=!**/top.key",
		"--iglob=!**/cdef0123456789abcdef0123456789abcdef01"}
	gitX := []string{":(exclude,top,glob,icase)**/.env*", ":(exclude,top,glob,icase)**/.env*/**",
		":(exclude,top,glob,icase)**/.ssh", ":(exclude,top,glob,icase)**/.ssh/**",
		":(exclude,top,glob,icase)**/.aws/credentials", ":(exclude,top,glob,icase)**/.aws/credentials/**",
		":(exclude,top,glob,icase)top.key", ":(exclude,top,glob,icase)top.key/**"}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	s := func(a ...string) []string { return a }
	tests := []struct {
		name string
		argv []string
		want []string
	}{
		{"cat untouched", s("cat", "a"), s("cat", "a")},
		{"find untouched", s("find", ".", "-name", "*.go"), s("find", ".", "-name", "*.go")},
		{"git status untouched", s("git", "status"), s("git", "status")},
		{"empty", nil, nil},

		// grep: after the agent's options, so their --include keeps its meaning.
		{"grep -r", s("grep", "-r", "TOKEN", "."), cat(s("grep", "-r", "TOKEN", "."), grepX)},
		{"grep --include", s("grep", "-rn", "--include=*.js", "x", "."), cat(s("grep", "-rn", "--include=*.js", "x", "."), grepX)},
		{"grep before --", s("grep", "-r", "--", "-x", "."), cat(s("grep", "-r"), grepX, s("--", "-x", "."))},
		{"grep -e takes --", s("grep", "-r", "-e", "--", "."), cat(s("grep", "-r", "-e", "--", "."), grepX)},
		{"grep cluster -re takes --", s("grep", "-re", "--", "."), cat(s("grep", "-re", "--", "."), grepX)},
		{"grep abbreviated --incl takes a value", s("grep", "-r", "--incl", "--", "x", "."), cat(s("grep", "-r", "--incl", "--", "x", "."), grepX)},
		{"grep dangling --include", s("grep", "-r", "x", ".", "--include"), cat(s("grep", "-r", "x", "."), grepX, s("--include"))},
		{"grep dangling -A", s("grep", "-rA"), cat(s("grep"), grepX, s("-rA"))},
		{"grep -A3 attached", s("grep", "-rA3", "x"), cat(s("grep", "-rA3", "x"), grepX)},
		{"grep by path", s("/usr/bin/grep", "-r", "x"), cat(s("/usr/bin/grep", "-r", "x"), grepX)},

		// rg: --iglob after every -g, and after the agent's --iglob.
		{"rg", s("rg", "TOKEN"), cat(s("rg", "TOKEN"), rgX)},
		{"rg -g", s("rg", "-g", "*.js", "x"), cat(s("rg", "-g", "*.js", "x"), rgX)},
		{"rg before --", s("rg", "-n", "--", "-x"), cat(s("rg", "-n"), rgX, s("--", "-x"))},
		{"rg -e takes --", s("rg", "-e", "--", "x"), cat(s("rg", "-e", "--", "x"), rgX)},
		{"rg dangling -g", s("rg", "x", "-g"), cat(s("rg", "x"), rgX, s("-g"))},

		// git: pathspecs last, anchored at the top, no positive one added.
		{"git log -p", s("git", "log", "-p"), cat(s("git", "log", "-p", gitX[0]), gitX)},
		{"git log -p HEAD", s("git", "log", "-p", "HEAD"), cat(s("git", "log", "-p", "HEAD"), gitX)},
		{"git diff with paths", s("git", "diff", "HEAD", "--", "src"), cat(s("git", "diff", "HEAD", "--", "src"), gitX)},
		{"git diff path without --", s("git", "diff", "src"), cat(s("git", "diff", "src"), gitX)},
		{"git log dangling --grep", s("git", "log", "-p", "--grep"), cat(s("git", "log", "-p"), gitX, s("--grep"))},
		{"git log --follow left alone", s("git", "log", "--follow", "-p", "--", "a.go"), s("git", "log", "--follow", "-p", "--", "a.go")},
		{"git log -L left alone", s("git", "log", "-L1,2:a.go"), s("git", "log", "-L1,2:a.go")},
		{"git grep", s("git", "grep", "-n", "x"), cat(s("git", "grep", "-n", "x"), gitX)},
		{"git grep -e", s("git", "grep", "-e", "x"), cat(s("git", "grep", "-e", "x"), gitX)},
		{"git grep -ne", s("git", "grep", "-ne", "x"), cat(s("git", "grep", "-ne", "x"), gitX)},
		{"git grep no pattern", s("git", "grep", "-n"), s("git", "grep", "-n")},
		{"git grep -A 3 no pattern", s("git", "grep", "-A", "3"), s("git", "grep", "-A", "3")},
		{"git grep pathspec", s("git", "grep", "x", "--", "*.js"), cat(s("git", "grep", "x", "--", "*.js"), gitX)},
		{"git --no-pager grep", s("git", "--no-pager", "grep", "x"), cat(s("git", "--no-pager", "grep", "x"), gitX)},
		{"git -C dir log", s("git", "-C", "log", "log", "-p", "HEAD"), cat(s("git", "-C", "log", "log", "-p", "HEAD"), gitX)},
		{"git diff-tree", s("git", "diff-tree", "-r", "HEAD"), cat(s("git", "diff-tree", "-r", "HEAD"), gitX)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := shieldArgv(tt.argv, pats, closed)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	t.Run("git --literal-pathspecs is refused", func(t *testing.T) {
		_, err := shieldArgv([]string{"git", "--literal-pathspecs", "log", "-p"}, pats, nil)
		if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), ":(literal)") {
			t.Fatalf("err = %v, want INVALID_ARGUMENT naming :(literal)", err)
		}
	})
	t.Run("closed files inside .git are no pathspec", func(t *testing.T) {
		got, _ := shieldArgv([]string{"git", "grep", "x"}, nil, []string{obj, "docs/notes.txt"})
		if want := []string{"git", "grep", "x", ":(exclude,top,literal)docs/notes.txt"}; !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

func TestFoldCase(t *testing.T) {
	tests := []struct{ in, want string }{
		{".env", ".[eE][nN][vV]"},
		{"*.PEM", "*.[pP][eE][mM]"},
		{"id_rsa*", "[iI][dD]_[rR][sS][aA]*"},
		{"[a-c]x", "[a-cA-C][xX]"},
		{"[!k]ey", "[!kK][eE][yY]"},
		{`\*\k1`, `\*[kK]1`},
		{"[", `\[`},
	}
	for _, tt := range tests {
		if got := foldCase(tt.in); got != tt.want {
			t.Errorf("foldCase(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExpandBraces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"*.{pem,key}", []string{"*.key", "*.pem"}},
		{"{a,{b,c}}d", []string{"ad", "bd", "cd"}},
		{`\{a,b}`, []string{`\{a,b}`}},
		{"[{]x", []string{"[{]x"}},
		{"{x}", []string{"x"}},
		{"{*,a}*.pem", []string{"*.pem", "a*.pem"}},
		{"a/{**,b}/c", []string{"a/**/c", "a/b/c"}},
	}
	for _, tt := range tests {
		if got := expandBraces(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("expandBraces(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	many := strings.Repeat("{a,b}", 10)
	if got := expandBraces(many); !slices.Equal(got, []string{"*"}) {
		t.Errorf("expandBraces of 2^10 alternatives = %q, want every group spelled *", got)
	}
}

// grepExcludes reports whether grep with the options opts leaves out
// rel, as a file (dir false) or a directory: its base name matches an
// --exclude (--exclude-dir for a directory), or a directory above it
// matches an --exclude-dir. fnmatch is doublestar.Match on one path
// component.
func grepExcludes(opts []string, rel string, dir bool) bool {
	parts := strings.Split(rel, "/")
	match := func(prefix, name string) bool {
		for _, o := range opts {
			if g, ok := strings.CutPrefix(o, prefix); ok {
				if m, _ := doublestar.Match(g, name); m {
					return true
				}
			}
		}
		return false
	}
	for _, d := range parts[:len(parts)-1] {
		if match("--exclude-dir=", d) {
			return true
		}
	}
	if dir {
		return match("--exclude-dir=", parts[len(parts)-1])
	}
	return match("--exclude=", parts[len(parts)-1])
}

// TestGrepExclusionsCoverTheDenylist: every path a denylist pattern
// matches is left out by grep's exclusions, as a file and as a directory
// (the sandbox closes a matching directory whole), whatever the case of
// its letters.
func TestGrepExclusionsCoverTheDenylist(t *testing.T) {
	segs := []string{"a", "b", "x.y", ".env", "*.pem", "id_*", "**", "k?y", "[ab]c", "{p,q}r", ".ssh", "Cred*"}
	names := []string{"a", "b", "x.y", ".env", ".ENV", "k.pem", "K.PEM", "id_rsa", "key", "ac", "BC", "pr", "qr", "c", ".ssh", "credentials"}
	check := func(t *rapid.T, pats []string) {
		deny, err := pathsafe.NewDenylist(pats)
		if err != nil {
			t.Skip("invalid pattern")
		}
		opts := grepExclusions(pats, nil)
		path := strings.Join(rapid.SliceOfN(rapid.SampledFrom(names), 1, 4).Draw(t, "path"), "/")
		if _, ok := deny.Match(path); !ok {
			return
		}
		for _, dir := range []bool{false, true} {
			if !grepExcludes(opts, path, dir) {
				t.Fatalf("patterns %q match %q (dir %v), grep options %q keep it", pats, path, dir, opts)
			}
		}
	}
	t.Run("default list", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) { check(t, pathsafe.DefaultSecretPatterns()) })
	})
	t.Run("random patterns", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			p := strings.Join(rapid.SliceOfN(rapid.SampledFrom(segs), 1, 3).Draw(t, "segs"), "/")
			if rapid.Bool().Draw(t, "anchored") {
				p = "/" + p
			}
			if rapid.Bool().Draw(t, "trailing slash") {
				p += "/"
			}
			check(t, []string{p})
		})
	})
}

// FuzzShieldArgv: harnessd's arguments never drop or reorder one of the
// agent's, go in one block, and land where the tool parses them as what
// they are (options before any "--" and not taken as an option's value;
// pathspecs after the agent's arguments or in front of a trailing option
// waiting for a value).
func FuzzShieldArgv(f *testing.F) {
	for _, s := range []string{
		"grep\x00-rn\x00--include=*.js\x00x\x00.",
		"grep\x00-r\x00-e\x00--\x00.",
		"grep\x00x\x00--include",
		"rg\x00-g\x00*.js\x00x",
		"rg\x00-n\x00--\x00-x",
		"git\x00log\x00-p\x00--grep",
		"git\x00grep\x00-e",
		"git\x00grep\x00x\x00--\x00*.js",
		"git\x00--literal-pathspecs\x00diff",
	} {
		f.Add(s)
	}
	pats := []string{".env*", ".ssh/**", ".aws/credentials", "/top.key", "*.{pem,key}"}
	closed := []string{".git/objects/ab/cdef0123456789abcdef0123456789abcdef01", "docs/notes.txt"}
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		out, err := shieldArgv(argv, pats, closed)
		if err != nil {
			if !slices.Contains(argv, "--literal-pathspecs") {
				t.Fatalf("shieldArgv(%q): %v", argv, err)
			}
			return
		}
		if len(out) < len(argv) || (len(argv) > 0 && out[0] != argv[0]) {
			t.Fatalf("shieldArgv(%q) = %q: dropped the program or an argument", argv, out)
		}
		// The agent's arguments are out with one contiguous block inserted.
		at := 0
		for at < len(argv) && out[at] == argv[at] {
			at++
		}
		n := len(out) - len(argv)
		if !slices.Equal(out[at+n:], argv[at:]) {
			t.Fatalf("shieldArgv(%q) = %q: the agent's arguments are not kept in order around one block", argv, out)
		}
		block := out[at : at+n]
		if n == 0 {
			return
		}
		switch prog := path.Base(argv[0]); prog {
		case "grep", "egrep", "fgrep", "rg":
			o := grepOptions()
			prefix := "--exclude"
			if prog == "rg" {
				o, prefix = rgOptions(), "--iglob=!"
			}
			for _, b := range block {
				if !strings.HasPrefix(b, prefix) || o.takesValue(b) {
					t.Fatalf("block %q holds %q", block, b)
				}
			}
			// Parsed as options: not after a "--" that ends the options,
			// not the value of the option in front.
			for i := 1; i < at; i++ {
				if out[i] == "--" {
					t.Fatalf("shieldArgv(%q) = %q: exclusions after the end of the options", argv, out)
				}
				if o.takesValue(out[i]) {
					if i+1 == at {
						t.Fatalf("shieldArgv(%q) = %q: the first exclusion is the value of %q", argv, out, out[i])
					}
					i++
				}
			}
		case "git":
			for _, b := range block {
				if !strings.HasPrefix(b, ":(exclude,") {
					t.Fatalf("block %q holds %q", block, b)
				}
			}
			if at != len(argv) && (at != len(argv)-1 || !gitRevValue().takesValue(argv[at]) && !gitGrepOptions().takesValue(argv[at])) {
				t.Fatalf("shieldArgv(%q) = %q: pathspecs not last, nor in front of a trailing option waiting for its value", argv, out)
			}
		default:
			t.Fatalf("shieldArgv(%q) = %q: changed a program it does not shield", argv, out)
		}
	})
}
