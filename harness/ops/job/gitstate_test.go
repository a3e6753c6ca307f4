package job

import (
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// What harnessd performs itself, what it leaves to a process, and what it
// refuses before anything runs.
func TestParseGitState(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		ok   bool
		want gitState
		bad  string // a word of the refusal's message
	}{
		{argv: []string{"git", "reset", "--hard"}, ok: true, want: gitState{Kind: gsReset}},
		{argv: []string{"/usr/bin/git", "reset", "-q", "--hard", "HEAD~1"}, ok: true, want: gitState{Kind: gsReset, Rev: "HEAD~1"}},
		{argv: []string{"git", "reset", "--hard", "origin/main@{1}"}, ok: true, want: gitState{Kind: gsReset, Rev: "origin/main@{1}"}},
		{argv: []string{"git", "branch", "-D", "feature", "old/x"}, ok: true, want: gitState{Kind: gsBranchDelete, Names: []string{"feature", "old/x"}}},
		{argv: []string{"git", "branch", "--delete", "--force", "feature"}, ok: true, want: gitState{Kind: gsBranchDelete, Names: []string{"feature"}}},
		{argv: []string{"git", "branch", "-df", "feature"}, ok: true, want: gitState{Kind: gsBranchDelete, Names: []string{"feature"}}},
		{argv: []string{"git", "tag", "-f", "v1"}, ok: true, want: gitState{Kind: gsTagForce, Names: []string{"v1"}}},
		{argv: []string{"git", "tag", "--force", "v1", "HEAD^"}, ok: true, want: gitState{Kind: gsTagForce, Names: []string{"v1"}, Rev: "HEAD^"}},
		// Not git-state work: a process runs them as before.
		{argv: []string{"git", "reset", "--soft", "HEAD~1"}},
		{argv: []string{"git", "branch", "-d", "feature"}},
		{argv: []string{"git", "tag", "v1"}},
		{argv: []string{"git", "status"}},
		{argv: []string{"rm", "-rf", "pkg"}},
		{argv: []string{"git"}},
		// Refused: forms harnessd does not perform.
		{argv: []string{"git", "reset", "--hard", "HEAD", "--", "a.txt"}, ok: true, bad: "pathspecs"},
		{argv: []string{"git", "reset", "--hard", "HEAD", "a.txt"}, ok: true, bad: "pathspecs"},
		{argv: []string{"git", "reset", "--hard", "--recurse-submodules"}, ok: true, bad: "--recurse-submodules"},
		{argv: []string{"git", "reset", "--hard", "--no-recurse-submodules", "HEAD"}, ok: true, bad: "--no-recurse-submodules"},
		{argv: []string{"git", "reset", "--hard", "HEAD;touch x"}, ok: true, bad: "plain revision"},
		{argv: []string{"git", "reset", "--hard", "$(touch x)"}, ok: true, bad: "plain revision"},
		{argv: []string{"git", "reset", "--hard", "a..b"}, ok: true, bad: "plain revision"},
		{argv: []string{"git", "reset", "--hard", "HEAD:a.txt"}, ok: true, bad: "plain revision"},
		{argv: []string{"git", "-C", "..", "reset", "--hard"}, ok: true, bad: "options before the subcommand"},
		{argv: []string{"git", "-c", "core.hooksPath=x", "branch", "-D", "x"}, ok: true, bad: "options before the subcommand"},
		{argv: []string{"git", "branch", "-D"}, ok: true, bad: "name the branch"},
		{argv: []string{"git", "branch", "-D", "-r", "origin/main"}, ok: true, bad: `"-r"`},
		{argv: []string{"git", "branch", "-D", "../x"}, ok: true, bad: "not a valid"},
		{argv: []string{"git", "branch", "-D", "x.lock"}, ok: true, bad: "not a valid"},
		{argv: []string{"git", "tag", "-f", "-a", "v1", "-m", "msg"}, ok: true, bad: `"-a"`},
		{argv: []string{"git", "tag", "-f", "v1", "HEAD", "extra"}, ok: true, bad: "at most one revision"},
		{argv: []string{"git", "tag", "-f", "HEAD"}, ok: true, bad: "not a valid"},
		// The path forms of checkout and restore (they take the index's lock).
		{argv: []string{"git", "checkout", "--", "."}, ok: true, want: gitState{Kind: gsCheckout, Paths: []string{"."}}},
		{argv: []string{"git", "checkout", "-f", "-q", "--", "a.txt", "sub/b.txt"}, ok: true, want: gitState{Kind: gsCheckout, Paths: []string{"a.txt", "sub/b.txt"}}},
		{argv: []string{"git", "restore", "a.txt"}, ok: true, want: gitState{Kind: gsCheckout, Paths: []string{"a.txt"}}},
		{argv: []string{"git", "restore", "-W", "--", "-odd-name"}, ok: true, bad: "plain relative path"},
		{argv: []string{"git", "restore", "--worktree", "--", "sub"}, ok: true, want: gitState{Kind: gsCheckout, Paths: []string{"sub"}}},
		{argv: []string{"git", "checkout", "main"}},    // a branch switch: a process, as before
		{argv: []string{"git", "checkout", "-b", "x"}}, // likewise
		{argv: []string{"git", "checkout", "HEAD~1", "--", "a.txt"}, ok: true, bad: "before --"},
		{argv: []string{"git", "checkout", "-p", "--", "a.txt"}, ok: true, bad: `"-p"`},
		{argv: []string{"git", "checkout", "--", "../x"}, ok: true, bad: "plain relative path"},
		{argv: []string{"git", "checkout", "--", "/etc/passwd"}, ok: true, bad: "plain relative path"},
		{argv: []string{"git", "checkout", "--", "a/../../x"}, ok: true, bad: "plain relative path"},
		{argv: []string{"git", "restore", ":(top)a.txt"}, ok: true, bad: "plain relative path"},
		{argv: []string{"git", "restore", "*.go"}, ok: true, bad: "plain relative path"},
		{argv: []string{"git", "restore", "--staged", "a.txt"}, ok: true, bad: `"--staged"`},
		{argv: []string{"git", "restore", "--source=HEAD~1", "a.txt"}, ok: true, bad: `"--source=HEAD~1"`},
		{argv: []string{"git", "restore", "-f", "a.txt"}, ok: true, bad: `"-f"`},
		{argv: []string{"git", "restore"}, ok: true, bad: "name the paths"},
		{argv: []string{"git", "-C", "x", "restore", "a.txt"}, ok: true, bad: "options before the subcommand"},
	} {
		got, ok, err := parseGitState(tc.argv)
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.argv, ok, tc.ok)
			continue
		}
		if tc.bad != "" {
			if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(errs.From(err).Message, tc.bad) || !strings.Contains(errs.From(err).Message, gitStateForms) {
				t.Errorf("%q: %v, want INVALID_ARGUMENT with %q and the forms", tc.argv, err, tc.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.argv, err)
			continue
		}
		if ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v, want %+v", tc.argv, got, tc.want)
		}
	}
}

func TestGitStateRefsOnly(t *testing.T) {
	for kind, want := range map[string]bool{gsReset: false, gsBranchDelete: true, gsTagForce: true, gsCheckout: false} {
		if got := (gitState{Kind: kind}).refsOnly(); got != want {
			t.Errorf("%s: refsOnly %v, want %v", kind, got, want)
		}
	}
}

// An ignored file (or directory) where the commit has a file is in the
// way of a reset; other ignored paths are not.
func TestInTheWay(t *testing.T) {
	for _, tc := range []struct {
		ignored, tracked []string
		want             string
	}{
		{ignored: []string{"build/", "x.log"}, tracked: []string{"a.go", "pkg/b.go"}, want: ""},
		{ignored: []string{"build/", "x.log"}, tracked: []string{"a.go", "x.log"}, want: "x.log"},
		{ignored: []string{"build/", ""}, tracked: []string{"build/out/gen.go"}, want: "build/"},
		{ignored: []string{"pkg/gen/"}, tracked: []string{"pkg/gen.go", "pkg/gen/x.go"}, want: "pkg/gen/"},
		{ignored: nil, tracked: []string{"a"}, want: ""},
	} {
		if got := inTheWay(tc.ignored, tc.tracked); got != tc.want {
			t.Errorf("inTheWay(%q, %q) = %q, want %q", tc.ignored, tc.tracked, got, tc.want)
		}
	}
}

func TestCheckedOut(t *testing.T) {
	porcelain := "worktree /src/main\nHEAD abc\nbranch refs/heads/main\n\nworktree /src/wt\nHEAD def\nbranch refs/heads/feature\n\nworktree /src/det\nHEAD 123\ndetached\n"
	for ref, want := range map[string]string{"refs/heads/main": "/src/main", "refs/heads/feature": "/src/wt", "refs/heads/other": ""} {
		if got := checkedOut(porcelain, ref); got != want {
			t.Errorf("checkedOut(%s) = %q, want %q", ref, got, want)
		}
	}
}

// Whatever the argv, the parser never panics, and a form it accepts names
// only plain relative paths and plain revisions: nothing that leaves the
// checkout, reaches git's pathspec magic or reads as an option.
func FuzzParseGitState(f *testing.F) {
	for _, seed := range [][]string{
		{"git", "checkout", "--", "."}, {"git", "restore", "a.txt"}, {"git", "reset", "--hard", "HEAD~1"},
		{"git", "branch", "-D", "x"}, {"git", "tag", "-f", "v1", "HEAD"}, {"git", "checkout", "--", "../x"},
	} {
		f.Add(strings.Join(seed, "\x00"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x00")
		g, ok, err := parseGitState(argv)
		if !ok || err != nil {
			return
		}
		for _, p := range g.Paths {
			if !validPathspec(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, ":") || strings.HasPrefix(p, "-") {
				t.Fatalf("%q accepted path %q", argv, p)
			}
			for _, part := range strings.Split(p, "/") {
				if part == ".." {
					t.Fatalf("%q accepted path %q", argv, p)
				}
			}
		}
		if g.Rev != "" && (!validRev(g.Rev) || strings.HasPrefix(g.Rev, "-")) {
			t.Fatalf("%q accepted revision %q", argv, g.Rev)
		}
		for _, n := range g.Names {
			if !validRefName(n) {
				t.Fatalf("%q accepted name %q", argv, n)
			}
		}
	})
}
