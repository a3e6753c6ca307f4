package gitx

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parsed is parseConfig's view of a file: its entries and whether it stopped
// at a syntax error.
func parsed(b []byte) ([]cfgEntry, bool) {
	var out []cfgEntry
	err := parseConfig(b, nil, func(e cfgEntry) bool {
		out = append(out, e)
		return true
	})
	return out, err == nil
}

// gitParsed is git's view of the same file: `git config --file --list -z`.
func gitParsed(t *testing.T, dir string, b []byte) ([]cfgEntry, bool) {
	t.Helper()
	f := filepath.Join(dir, "cfg")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", f, "--no-includes", "--list", "-z")
	cmd.Env = testEnv()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	var out []cfgEntry
	items := strings.Split(stdout.String(), "\x00")
	for _, it := range items[:len(items)-1] {
		name, value, has := strings.Cut(it, "\n")
		out = append(out, cfgEntry{name: name, value: value, hasValue: has})
	}
	return out, err == nil
}

func checkAgainstGit(t *testing.T, dir string, b []byte) {
	t.Helper()
	want, wantOK := gitParsed(t, dir, b)
	got, gotOK := parsed(b)
	if gotOK != wantOK || !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("config %q:\n got  %v ok=%v\n git  %v ok=%v", b, got, gotOK, want, wantOK)
	}
}

// TestParseConfigMatchesGit checks the parser against git on the syntax an
// attacker would use to hide a driver from a simpler reader.
func TestParseConfigMatchesGit(t *testing.T) {
	dir := t.TempDir()
	cases := []string{
		"[filter \"evil\"]\n\tclean = touch x\n",
		"\xef\xbb\xbf[filter \"evil\"]\n\tclean = x\n",                  // UTF-8 BOM
		"\xef\xbb[filter \"evil\"]\n\tclean = x\n",                      // partial BOM: error
		" \xef\xbb\xbf[core]\n",                                         // BOM not at the start
		"[FILTER \"Evil\"]\n\tCLEAN = x\n\tSmUdGe=y\n",                  // case
		"[filter.Evil]\n\tclean = x\n",                                  // legacy, lower-cased
		"[filter.a.b]\nclean=x\n",                                       // legacy with dots
		"[filter.a \"b\"]\nclean=x\n",                                   // both forms
		"[filter \"a.b\"]\nclean=x\n",                                   // dotted name
		"[filter \"q\\\"x\\\\y\\z\"]\nclean=x\n",                        // subsection escapes
		"[filter \"x\" ]\nclean=x\n",                                    // space before ]: error
		"[filter  \t \"x\"]\nclean=x\n",                                 // spaces before quote
		"[filter \"x]\nclean=x\n",                                       // unterminated
		"[filter \"a\nb\"]\nclean=x\n",                                  // newline in subsection
		"[filter \"x\"] clean = y\n",                                    // key on the header line
		"[filter \"x\"]\n\tclean = a \\\n\tb\n",                         // continuation
		"[filter \"x\"]\n\tclean = \"a ; b\" ; c\n",                     // quoted comment char
		"[filter \"x\"]\n\tclean = a#b\n",                               // comment
		"[filter \"x\"]\n\tclean = \"a\n",                               // unterminated quote
		"[filter \"x\"]\n\tclean = a\\q\n",                              // bad escape
		"[filter \"x\"]\n\tclean = a\\tb\\nc\\bd\\\"e\\\\f\n",           // escapes
		"[filter \"x\"]\n\tclean = a   b\t\tc   \n",                     // whitespace folding
		"[filter \"x\"]\n\tclean =\n\trequired\n",                       // empty and boolean
		"[filter \"x\"]\r\n\tclean = a\r\n",                             // CRLF
		"[filter \"x\"]\n\tclean = a\rb\n",                              // lone CR
		"[filter \"x\"]\n\tclean\t= a\n",                                // tab before =
		"[filter \"x\"]\n\tclean # c\n",                                 // junk after key
		"[filter \"x\"]\n\t9clean = a\n",                                // key must start alpha
		"[filter \"x\"]\n\tcle-an0 = a\n",                               // key chars
		"[filter \"x\"]\n\tclean = a\\",                                 // backslash at EOF
		"[filter \"x\"]\n\tclean = a",                                   // no final newline
		"[filter \"x\"]\n\tclean",                                       // boolean at EOF
		"[]\n",                                                          // empty section
		"[fil_ter]\n",                                                   // bad section char
		"clean = x\n",                                                   // no section
		"[a]\nb=\"\" x\n",                                               // quote then text
		"[a]\nb=x\\\n",                                                  // continuation at EOF
		"[diff \"external\x00junk\"]\nx = evil\n",                       // NUL in subsection
		"[filter \"x\"]\nclean = a\x00b\n",                              // NUL in value
		"[include]\npath = a.cfg\n[includeIf \"gitdir:/x/\"]\npath=b\n", // includes
		"# [filter \"c\"]\n; [filter \"d\"]\n",                          // comments
		"[filter \"x\"]\n\tclean = \"a\"\"b\" c \"\" d\n",
		"[filter \"x\"]\n\tclean = \\\n\\\n",
		"[filter \"x\"]\n[diff]\nexternal\n",
	}
	for _, c := range cases {
		checkAgainstGit(t, dir, []byte(c))
	}
}

// TestParseConfigMatchesGitRandom compares the parser with git on random
// configs built from the characters that matter to the grammar.
func TestParseConfigMatchesGitRandom(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 50
	}
	frags := []string{"[", "]", "\"", "\\", "\n", "\r\n", "\r", " ", "\t", "#", ";", "=", ".",
		"a", "B", "filter", "x", "-", "0", "\x00", "\xef\xbb\xbf", "\\n", "\\t", "\\\"", "\\\\", "\\\n",
		"[filter \"x\"]\n", "[diff.y]\n", "clean = ", "textconv=", "path", "\n\tk = v\n"}
	r := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		var b strings.Builder
		if r.IntN(2) == 0 {
			b.WriteString("[filter \"x\"]\n")
		}
		for j := r.IntN(25); j >= 0; j-- {
			b.WriteString(frags[r.IntN(len(frags))])
		}
		checkAgainstGit(t, dir, []byte(b.String()))
		if t.Failed() {
			return
		}
	}
}

func TestSplitConfigKey(t *testing.T) {
	tests := []struct {
		in, section, sub string
		hasSub           bool
		key              string
		ok               bool
	}{
		{"core.pager", "core", "", false, "pager", true},
		{"filter.evil.clean", "filter", "evil", true, "clean", true},
		{"filter.a.b.clean", "filter", "a.b", true, "clean", true},
		{"diff..command", "diff", "", true, "command", true},
		{"nodot", "", "", false, "", false},
	}
	for _, tt := range tests {
		s, sub, has, k, ok := splitConfigKey(tt.in)
		if s != tt.section || sub != tt.sub || has != tt.hasSub || k != tt.key || ok != tt.ok {
			t.Errorf("%q: got %q %q %v %q %v", tt.in, s, sub, has, k, ok)
		}
	}
}

// FuzzScanConfig checks that the parser and the scanner never panic,
// whatever the bytes of a repository's config.
func FuzzScanConfig(f *testing.F) {
	for _, s := range []string{
		"[filter \"evil\"]\n\tclean = x\n",
		"\xef\xbb\xbf[diff.x]\ntextconv=y\n[include]\npath=other\n",
		"[includeIf \"gitdir:/\"]\npath = ~/x\n[submodule \"s\"]\nupdate = !x\n",
		"[lfs \"customtransfer.a\"]\npath=x\n[pager]\nlog=x\n[core]\nworktree=..\n",
		"[a]\nb=\"c\\\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parsed(data)
		dir := t.TempDir()
		gitDir := filepath.Join(dir, ".git")
		if err := os.MkdirAll(gitDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gitDir, "config"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		e := scanRepos([]repoLoc{{gitDir: gitDir, commonDir: gitDir, root: dir}})
		if e.err == nil {
			for _, o := range e.env {
				if strings.ContainsAny(o.key, "\n\x00") {
					t.Fatalf("override key %q", o.key)
				}
			}
		}
		parseIndexGitlinks(data, 20)
	})
}
