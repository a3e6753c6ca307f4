package gitx

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestCheckRev(t *testing.T) {
	valid := []string{
		"HEAD", "HEAD~2", "HEAD~", "HEAD^", "HEAD^2", "HEAD~2^1", "main", "v1.0", "a1b2c3", "origin/main",
		"A..B", "A...B", "..main", "main..", "...main", "main...", "@{u}", "@{upstream}", "@{push}", "@{-1}",
		"main@{1}", "main@{yesterday}", "HEAD@{2.days.ago}", "@", "@~1", "HEAD^{}", "HEAD^{tree}", "v1^{commit}",
		"HEAD^{/fix-bug}", "HEAD^!", "HEAD^@", "HEAD^-", "HEAD^-2", "feature/x-1.2", "feat+x", "ветка",
		"user@host", "origin/main~3..HEAD^2", "0123456789abcdef0123456789abcdef01234567", "docs", "README.md",
		strings.Repeat("a", MaxRevLen),
	}
	for _, rev := range valid {
		if err := CheckRev("rev", rev); err != nil {
			t.Errorf("CheckRev(%q) = %v, want nil", rev, err)
		}
	}
	invalid := []struct {
		rev  string
		frag string // part of the message
	}{
		{"", "is empty"},
		{strings.Repeat("a", MaxRevLen+1), "longer than"},
		{"/", "is a path"},
		{"/etc/passwd", "is a path"},
		{".", "is a path"},
		{"..", "is a path"},
		{"...", "without ends"},
		{"./a.txt", "is a path"},
		{"../outside/secret.txt", "is a path"},
		{"x/../../outside/secret.txt", "is a path"},
		{"a/./b", "is a path"},
		{"HEAD^{/../../etc/passwd}", "is a path"},
		{"main/..", "is a path"},
		{"--output=/tmp/x", "must not start with '-'"},
		{"-", "must not start with '-'"},
		{"a\x00b", "NUL"},
		{"a\nb", "newline"},
		{"a\r", "newline"},
		{"a b", "whitespace"},
		{"a\tb", "whitespace"},
		{"a\x7f", "control"},
		{"a\u00a0b", "whitespace"},
		{"a\xffb", "UTF-8"},
		{"HEAD:secret.txt", "':'"},
		{":/fix", "':'"},
		{"ma*", "cannot contain"},
		{"a[1]", "cannot contain"},
		{`a\b`, "cannot contain"},
		{"a//b", "empty path component"},
		{"a/", "empty path component"},
		{".hidden", "starting with '.'"},
		{"a/.b", "starting with '.'"},
		{"x.lock", ".lock"},
		{"x.", "ends with '.'"},
		{"a..b..c", `".."`},
		{"A....B", "starting with '.'"},
		{"~1", "no branch"},
		{"^HEAD", "no branch"},
		{"HEAD@{}", "empty @{}"},
		{"HEAD@{u", "unclosed"},
		{"HEAD@{a/b}", "@{a/b}"},
		{"HEAD^{banana}", "commit, tree, blob, tag or object"},
		{"HEAD^{/a/b}", "^{/text}"},
		{"HEAD^{/}", "^{/text}"},
		{"HEAD^{commit", "unclosed"},
		{"HEAD^{tree}x", "not a ~, ^ or @{...} suffix"},
		{"HEAD~2x", "not a ~, ^ or @{...} suffix"},
	}
	for _, tt := range invalid {
		t.Run(tt.rev, func(t *testing.T) {
			err := CheckRev("base_rev", tt.rev)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.InvalidArgument {
				t.Fatalf("CheckRev(%q) = %v, want INVALID_ARGUMENT", tt.rev, err)
			}
			if !strings.Contains(e.Message, tt.frag) {
				t.Errorf("message %q lacks %q", e.Message, tt.frag)
			}
			if !strings.HasPrefix(e.Message, "base_rev ") {
				t.Errorf("message %q does not name the field", e.Message)
			}
			if !strings.Contains(e.Message, revFix) {
				t.Errorf("message %q does not give the fix", e.Message)
			}
			if e.Details["field"] != "base_rev" {
				t.Errorf("details = %v, want field base_rev", e.Details)
			}
		})
	}
}

// acceptedRevInvariant is what every accepted revision satisfies, whatever
// the grammar: git can never read it as an option or as a path outside the
// work tree.
func acceptedRevInvariant(t *testing.T, rev string) {
	t.Helper()
	if rev == "" || len(rev) > MaxRevLen || rev[0] == '-' || rev[0] == '/' {
		t.Fatalf("accepted %q", rev)
	}
	if strings.ContainsAny(rev, "\x00\n\r :?*[\\") {
		t.Fatalf("accepted %q with a forbidden byte", rev)
	}
	for _, c := range strings.Split(rev, "/") {
		if c == "." || c == ".." {
			t.Fatalf("accepted %q with a %q component", rev, c)
		}
	}
	if c := filepath.Clean(rev); c == ".." || strings.HasPrefix(c, "../") {
		t.Fatalf("accepted %q, which cleans to %q outside the root", rev, c)
	}
}

func FuzzCheckRev(f *testing.F) {
	for _, s := range []string{"main", "HEAD~1", "a..b", "A...B", "@{u}", "HEAD^{/x}", "-x", "HEAD:x", "a b", "",
		"@{-1}", "\x00", "/", "..", "x/../../y", "HEAD^{/../..}", "a\nb", "v1.0^{commit}~3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rev string) {
		err := CheckRev("rev", rev)
		if err != nil {
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Fatalf("code = %s, want INVALID_ARGUMENT", errs.CodeOf(err))
			}
			return
		}
		acceptedRevInvariant(t, rev)
	})
}

func TestDiffArgsNeverAllowNoIndex(t *testing.T) {
	ctx := testCtx(t)
	var g Git
	for _, o := range []DiffOptions{
		{}, {Staged: true}, {Rev: "HEAD"}, {Rev: "HEAD", Staged: true}, {Rev: "a..b", Paths: []string{"x"}},
		{Rev: "HEAD", Exclude: []string{".env"}}, {Paths: []string{"x", "y"}}, {Rev: "HEAD", Context: 5},
	} {
		for _, numstat := range []bool{false, true} {
			args := g.diffArgs(ctx, o, numstat)
			dd := slices.Index(args, "--")
			if dd < 0 {
				t.Fatalf("%+v: no -- in %q", o, args)
			}
			if o.Rev != "" {
				ri := slices.Index(args, o.Rev)
				if ri < 0 || ri > dd {
					t.Errorf("%+v: rev not before -- in %q", o, args)
				}
				if g.endOfOptions(ctx) && args[ri-1] != "--end-of-options" {
					t.Errorf("%+v: rev does not follow --end-of-options in %q", o, args)
				}
				// git's implicit --no-index needs exactly two arguments
				// after the options: the rev and "--".
				if len(args)-ri < 3 {
					t.Errorf("%+v: only %q after the rev: git could run as diff --no-index", o, args[ri:])
				}
			}
			for _, a := range args[dd+1:] {
				if a == o.Rev {
					t.Errorf("%+v: rev after -- in %q", o, args)
				}
			}
		}
	}
	if !g.endOfOptions(ctx) {
		t.Logf("git here does not support --end-of-options")
	}
}

// noIndexRepo is a repository with a file literally named "--" whose
// content equals a secret file outside the root: under git's implicit
// --no-index mode, "git diff <secret path> --" would compare the two and
// exit 0, an equality oracle (and print the secret if they differ).
func noIndexRepo(t *testing.T, secret string) (dir, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(base, "repo")
	outside = filepath.Join(base, "outside", "secret.txt")
	writeFile(t, base, "outside/secret.txt", secret)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q")
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "--", secret)
	writeFile(t, dir, "x/y.txt", "y\n")
	commitAll(t, dir, "base")
	return dir, outside
}

// TestPlainGitIsAnOracle proves the attack works on git without gitx, so
// the test below shows something.
func TestPlainGitIsAnOracle(t *testing.T) {
	dir, _ := noIndexRepo(t, "TOPSECRET\n")
	out, err := gitTErr(dir, "diff", "--end-of-options", "x/../../outside/secret.txt", "--")
	if err != nil {
		t.Fatalf("plain git diff of an equal outside file: %v\n%s (want exit 0: no-index found them equal)", err, out)
	}
	writeFile(t, dir, "--", "other\n")
	out, _ = gitTErr(dir, "diff", "--end-of-options", "x/../../outside/secret.txt", "--")
	if !strings.Contains(out, "TOPSECRET") {
		t.Fatalf("plain git diff did not leak the secret: %q", out)
	}
}

func TestDiffRevOutsideRootLeaksNothing(t *testing.T) {
	const secret = "TOPSECRET\n"
	dir, outside := noIndexRepo(t, secret)
	ctx := testCtx(t)
	var g Git
	revs := []string{"/", outside, "../outside/secret.txt", "x/../../outside/secret.txt", "./--", "--",
		"HEAD^{/../../outside/secret.txt}", "/etc/passwd", "..", "."}
	for _, differ := range []bool{false, true} {
		if differ {
			writeFile(t, dir, "--", "different\n")
		}
		for _, rev := range revs {
			for _, staged := range []bool{false, true} {
				d, err := g.Diff(ctx, dir, DiffOptions{Rev: rev, Staged: staged})
				if got := errs.CodeOf(err); got != errs.InvalidArgument {
					t.Errorf("Diff(rev %q, staged %v) = %+v, %v; want INVALID_ARGUMENT", rev, staged, d, err)
				}
				if (err != nil && strings.Contains(err.Error(), "TOPSECRET")) || strings.Contains(d.Patch, "TOPSECRET") {
					t.Errorf("Diff(rev %q) leaked the secret", rev)
				}
			}
		}
	}
}

// TestDiffArgvRefusesNoIndexWithoutValidator runs the argv Diff builds with
// revisions the validator would refuse: git must still read them as
// revisions (and fail), never compare files.
func TestDiffArgvRefusesNoIndexWithoutValidator(t *testing.T) {
	dir, outside := noIndexRepo(t, "TOPSECRET\n")
	ctx := testCtx(t)
	var g Git
	for _, differ := range []bool{false, true} {
		if differ {
			writeFile(t, dir, "--", "different\n")
		}
		for _, rev := range []string{outside, "../outside/secret.txt", "x/../../outside/secret.txt", "/"} {
			for _, numstat := range []bool{false, true} {
				args := g.diffArgs(ctx, DiffOptions{Rev: rev}, numstat)
				r, err := g.run(ctx, dir, 0, defaultDrain, args)
				if err == nil {
					t.Errorf("git %q succeeded (output %q): it ran as --no-index", args, r.out)
					continue
				}
				if got := errs.CodeOf(err); got != errs.NotFound {
					t.Errorf("git %q: %v, want NOT_FOUND (bad revision)", args, err)
				}
				if strings.Contains(string(r.out), "TOPSECRET") || strings.Contains(err.Error(), "TOPSECRET") {
					t.Errorf("git %q leaked the secret", args)
				}
			}
		}
	}
}

func TestConcurrentWriteStderr(t *testing.T) {
	tests := []struct {
		in   string
		want errs.Code
	}{
		{"error: short read while indexing src/main.go\nerror: src/main.go: failed to insert into database\nfatal: adding files failed", errs.ConcurrentModification},
		{"fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother git process seems to be running in this repository", errs.ConcurrentModification},
		{"fatal: Unable to create '/r/.git/HEAD.lock': File exists.", errs.ConcurrentModification},
		{"fatal: unable to write new index file", errs.ConcurrentModification},
		{"fatal: Unable to write new index file", errs.ConcurrentModification},
		{"error: cannot lock ref 'refs/heads/main': is at 1111 but expected 2222", errs.ConcurrentModification},
		{"error: cannot lock ref 'refs/heads/a/b': 'refs/heads/a' exists; cannot create 'refs/heads/a/b'", errs.Internal},
		{"error: unable to write file x: No space left on device\nfatal: unable to write new index file", errs.StorageFull},
		{"fatal: write error: Disk quota exceeded", errs.StorageFull},
		{"fatal: bad revision 'nope'", errs.NotFound},
		{"Author identity unknown\n\n*** Please tell me who you are.\n\nRun\n\n  git config --global user.email \"you@example.com\"", errs.GitIdentityRequired},
		{"fatal: empty ident name (for <root@host>) not allowed", errs.GitIdentityRequired},
		{"fatal: unable to auto-detect email address (got 'root@host.(none)')", errs.GitIdentityRequired},
		{"fatal: something else", errs.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := codeForStderr(tt.in); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestIndexLockIsConcurrentModification(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "a\n")
	commitAll(t, dir, "base")
	writeFile(t, dir, "a.txt", "b\n")
	writeFile(t, dir, ".git/index.lock", "")
	var g Git
	_, _, err := g.Run(ctx, dir, 0, "add", "--", "a.txt")
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.ConcurrentModification {
		t.Fatalf("git add with index.lock held: %v, want CONCURRENT_MODIFICATION", err)
	}
	if !strings.Contains(e.Message, "retry") || e.Details["retryable"] != true {
		t.Errorf("error %q (details %v) does not say to retry", e.Message, e.Details)
	}
	if !strings.Contains(e.Message, "index.lock") {
		t.Errorf("error %q lacks git's message", e.Message)
	}
}

func TestStatusHidesTempFiles(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "a\n")
	commitAll(t, dir, "base")
	writeFile(t, dir, ".a.txt.harnessd-tmp-123456", "a copy\n")
	writeFile(t, dir, "sub/.b.go.harnessd-tmp-0123456789abcdef", "b copy\n")
	var g Git
	st, err := g.Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Clean || len(st.Untracked) != 0 {
		t.Errorf("status = %+v, want clean: temp files are not the agent's", st)
	}
	writeFile(t, dir, "new.txt", "n\n")
	writeFile(t, dir, ".c.harnessd-tmp-notes", "a user file that only looks like one\n")
	if st, err = g.Status(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if want := []string{".c.harnessd-tmp-notes", "new.txt"}; !slices.Equal(st.Untracked, want) || st.Clean {
		t.Errorf("untracked = %q (clean %v), want %q", st.Untracked, st.Clean, want)
	}
}

func TestParseStatusSkipsTempFiles(t *testing.T) {
	st, err := ParseStatus(z("? .x.harnessd-tmp-1", "? d/.y.harnessd-tmp-ab", "? keep.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Untracked, []string{"keep.txt"}) {
		t.Errorf("untracked = %q, want [keep.txt]", st.Untracked)
	}
	st, err = ParseStatus(z("? .x.harnessd-tmp-1"))
	if err != nil || !st.Clean {
		t.Errorf("only temp files: %+v, %v; want clean", st, err)
	}
}
