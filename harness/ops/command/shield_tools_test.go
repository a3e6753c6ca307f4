package command

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/pathsafe"
)

// The tests in this file run the real tools (GNU grep, rg, git) on a tree
// with secret files, twice: as the agent asked (directly, everything
// readable) and as harnessd runs it (shielded argv, with every path the
// sandbox closes unreadable). The shielded run must print exactly the
// direct run's lines minus those of secret paths, and exit as the direct
// run would have with those lines gone.

// shieldTree is a git checkout with secret files, plain files and the
// other things the sandbox closes (a hard link to .env, the loose objects
// of secret blobs).
type shieldTree struct {
	root   string
	deny   *pathsafe.Denylist
	closed []string // every path the sandbox closes, root-relative
	extra  []string // the closed paths no pattern names: what closedFiles passes
}

var shieldFiles = []string{
	"a.js", "b.py", "README.md", "notes.txt", "sub/c.js", "sub/d.py", "sub/deep/e.txt", "sub/X.JS",
	// secret
	".env", ".env.js", "sub/.env.local", "UP/.ENV", "key.pem", "sub/id_rsa.pub", ".ssh/id", ".ssh/known",
	".aws/credentials", "py/.env/site.py", "credentials.json", "sub/secrets.yml",
	// not secret, but in a directory grep leaves out for .aws/credentials
	".aws/notes.txt",
}

// grepOverExcluded are the plain files GNU grep leaves out because it can
// only name base names: the rest of a directory a multi-component pattern
// names (.aws/credentials -> .aws).
var grepOverExcluded = []string{".aws/notes.txt"}

func newShieldTree(t testing.TB) *shieldTree {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	for _, f := range shieldFiles {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("needle in "+f+"\nhay\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+base)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-qm", "one")
	for _, f := range []string{"a.js", ".env"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("needle again in "+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("commit", "-qam", "two")
	if err := os.Link(filepath.Join(root, ".env"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	deny, err := pathsafe.NewDenylist(pathsafe.DefaultSecretPatterns())
	if err != nil {
		t.Fatal(err)
	}
	tr := &shieldTree{root: root, deny: deny}
	// What the secrets cache and the policy close: matching files and
	// directories (not descended), other names of secret files, loose
	// objects of secret blobs.
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+"/"))
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if _, ok := deny.Match(rel); ok {
			tr.closed = append(tr.closed, rel)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tr.closed = append(tr.closed, "link.txt")
	tr.extra = append(tr.extra, "link.txt")
	for _, rev := range []string{"HEAD", "HEAD~1"} {
		for _, line := range strings.Split(strings.TrimSpace(git("ls-tree", "-r", rev)), "\n") {
			meta, p, _ := strings.Cut(line, "\t")
			f := strings.Fields(meta)
			if len(f) != 3 || !tr.secret(p) {
				continue
			}
			obj := ".git/objects/" + f[2][:2] + "/" + f[2][2:]
			if _, err := os.Stat(filepath.Join(root, obj)); err == nil && !slices.Contains(tr.closed, obj) {
				tr.closed = append(tr.closed, obj)
				tr.extra = append(tr.extra, obj)
			}
		}
	}
	if len(tr.extra) < 3 {
		t.Fatalf("closed %q: want the link and loose objects of secret blobs", tr.closed)
	}
	// Another user (when the test runs as root) reads the tree.
	for d := root; d != "/" && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// secret reports whether rel is a path harnessd leaves out: a secret path,
// below a secret directory, or closed.
func (tr *shieldTree) secret(rel string) bool {
	if slices.Contains(tr.closed, rel) {
		return true
	}
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if _, ok := tr.deny.Match(p); ok {
			return true
		}
	}
	return false
}

// close makes every closed path unreadable (as the sandbox does) until the
// returned function runs.
func (tr *shieldTree) close(t *testing.T) func() {
	t.Helper()
	// Modes first: a hard link shares its mode with the file it names.
	modes := make([]fs.FileMode, len(tr.closed))
	for i, c := range tr.closed {
		fi, err := os.Lstat(filepath.Join(tr.root, filepath.FromSlash(c)))
		if err != nil {
			t.Fatal(err)
		}
		modes[i] = fi.Mode().Perm()
	}
	for _, c := range tr.closed {
		if err := os.Chmod(filepath.Join(tr.root, filepath.FromSlash(c)), 0); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		for i, c := range slices.Backward(tr.closed) {
			_ = os.Chmod(filepath.Join(tr.root, filepath.FromSlash(c)), modes[i])
		}
	}
}

// minus returns a copy of the tree without the paths harnessd leaves out
// (the closed ones, and drop): the direct run there is what the shielded
// run must give.
func (tr *shieldTree) minus(t testing.TB, drop []string) string {
	t.Helper()
	dst := tr.root + "-minus-" + strconv.Itoa(len(drop))
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	err := filepath.WalkDir(tr.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, tr.root), "/"))
		if rel != "" && (slices.Contains(tr.closed, rel) || slices.Contains(drop, rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// run runs argv in dir as a user the file modes bind (nobody when the
// test runs as root) and returns its stdout and exit status.
func runAs(t *testing.T, dir string, argv []string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String() + stderr.String(), ee.ExitCode()
	}
	t.Fatalf("run %q: %v", argv, err)
	return "", -1
}

// toolCase is one agent command: its argv, the directory it runs in
// (relative to the root) and how its output names files.
type toolCase struct {
	argv  []string
	cwd   string
	list  bool // every line is a path (-l, --files)
	count bool // lines are path:count (-c)
}

// pathOf returns the root-relative path a line of output names.
func (c toolCase) pathOf(line string) string {
	p := line
	if !c.list {
		p, _, _ = strings.Cut(strings.TrimPrefix(line, "HEAD:"), ":")
	}
	return path.Join(c.cwd, path.Clean(p))
}

// expect returns the direct run's lines minus those of paths drop
// reports, sorted, and the exit status the direct run would have had
// without them.
func (c toolCase) expect(out string, code int, drop func(string) bool) ([]string, int) {
	var lines []string
	matched := false
	for _, l := range splitLines(out) {
		if drop(c.pathOf(l)) {
			continue
		}
		lines = append(lines, l)
		if !c.count || !strings.HasSuffix(l, ":0") {
			matched = true
		}
	}
	if code == 0 && !matched {
		code = 1
	}
	slices.Sort(lines)
	return lines, code
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// checkShielded runs c shielded on the tree, its closed paths unreadable,
// and directly on want, a copy without the paths harnessd leaves out (""
// for the tree itself, with drop filtering the direct run's lines), and
// compares.
func checkShielded(t *testing.T, tr *shieldTree, c toolCase, want string, drop func(string) bool) {
	t.Helper()
	closed := want != ""
	if want == "" {
		want = tr.root
	}
	direct, dcode := runAs(t, filepath.Join(want, filepath.FromSlash(c.cwd)), c.argv)
	argv, err := shieldArgv(c.argv, tr.deny.Patterns(), tr.extra)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tr.root, filepath.FromSlash(c.cwd))
	var got string
	var code int
	if closed {
		reopen := tr.close(t)
		got, code = runAs(t, dir, argv)
		reopen()
	} else {
		got, code = runAs(t, dir, argv)
	}
	if dcode == 2 {
		// A command the tool refuses is refused the same way.
		if code != 2 {
			t.Fatalf("direct %q exited 2, shielded %q exited %d:\n%s", c.argv, argv, code, got)
		}
		return
	}
	lines := splitLines(got)
	slices.Sort(lines)
	wantLines, wcode := c.expect(direct, dcode, func(string) bool { return false })
	if !closed {
		wantLines, wcode = c.expect(direct, dcode, drop)
	}
	if code != wcode || !slices.Equal(lines, wantLines) {
		t.Fatalf("%q in %q\nshielded %q\nexit %d, want %d\ngot  %q\nwant %q", c.argv, c.cwd, argv, code, wcode, lines, wantLines)
	}
	for _, l := range lines {
		if strings.Contains(l, "Permission denied") || tr.secret(c.pathOf(l)) {
			t.Fatalf("shielded %q printed %q", argv, l)
		}
	}
}

func TestShieldGrepMatchesDirectMinusSecrets(t *testing.T) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("grep is not installed")
	}
	if out, _ := exec.Command(grep, "--version").Output(); !bytes.Contains(out, []byte("GNU grep")) {
		t.Skip("not GNU grep")
	}
	tr := newShieldTree(t)
	want := tr.minus(t, grepOverExcluded)
	cases := []toolCase{
		{argv: []string{"grep", "-rn", "needle", "."}},
		{argv: []string{"grep", "-rn", "needle"}},
		{argv: []string{"grep", "-Rn", "needle", "."}},
		{argv: []string{"grep", "-rn", "--include=*.js", "needle", "."}},
		{argv: []string{"grep", "-rn", "--include=*.js", "--include=*.py", "needle", "."}},
		{argv: []string{"grep", "-rn", "needle", ".", "--include=*.js"}},
		{argv: []string{"grep", "-rn", "--include", "*.js", "needle", "."}},
		{argv: []string{"grep", "-rn", "--incl=*.js", "needle", "."}},
		{argv: []string{"grep", "-rln", "--exclude=*.py", "needle", "."}, list: true},
		{argv: []string{"grep", "-rn", "--exclude-dir=sub", "needle", "."}},
		{argv: []string{"grep", "-rn", "--include=*.js", "--exclude=c.js", "needle", "."}},
		{argv: []string{"grep", "-rn", "--exclude=*.md", "--include=*.md", "needle", "."}},
		{argv: []string{"grep", "-rn", "--include=.env*", "needle", "."}},
		{argv: []string{"grep", "-rn", "--include=*.pem", "--include=*.txt", "needle", "."}},
		{argv: []string{"grep", "-rn", "needle", "sub"}},
		{argv: []string{"grep", "-rn", "needle", "."}, cwd: "sub"},
		{argv: []string{"grep", "-rc", "needle", "."}, count: true},
		{argv: []string{"grep", "-rn", "-e", "needle", "--", "."}},
		{argv: []string{"grep", "-rni", "NEEDLE", "."}},
		{argv: []string{"grep", "-rn", "absent-word", "."}},
		{argv: []string{"grep", "-n", "needle", "a.js", "notes.txt"}},
		{argv: []string{"grep", "-rn", "needle", ".", "--include"}},
		{argv: []string{"egrep", "-rn", "needle|hay", "."}},
		{argv: []string{"grep", "-rn", "--exclude-dir=.git", "needle", "."}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.argv, " ")+" in "+c.cwd, func(t *testing.T) { checkShielded(t, tr, c, want, nil) })
	}
	t.Run("without the closed files grep exits 2", func(t *testing.T) {
		// The sandbox closes the loose objects of secret blobs and the
		// other names of secret files: told only the patterns, grep -r
		// fails on them where the direct run succeeds.
		argv, _ := shieldArgv([]string{"grep", "-rn", "needle", "."}, tr.deny.Patterns(), nil)
		reopen := tr.close(t)
		out, code := runAs(t, tr.root, argv)
		reopen()
		if code != 2 || !strings.Contains(out, "Permission denied") {
			t.Fatalf("exit %d, want 2 with Permission denied (the closed files are not simulated?):\n%s", code, out)
		}
	})
	t.Run("the old order let the include win", func(t *testing.T) {
		// harnessd's --exclude in front of the agent's --include: grep
		// takes every file no option names (the first option is an
		// exclude), .env included.
		old := append([]string{"grep", "--exclude=.env*"}, "-rn", "--include=*.js", "needle", ".")
		out, _ := runAs(t, tr.root, old)
		if !strings.Contains(out, "b.py") {
			t.Fatalf("grep %q left out b.py; the reason for the new order is gone:\n%s", old, out)
		}
	})
}

func TestShieldRgMatchesDirectMinusSecrets(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg (ripgrep) is not installed: its cases did not run")
	}
	tr := newShieldTree(t)
	want := tr.minus(t, nil)
	cases := []toolCase{
		{argv: []string{"rg", "-n", "needle"}},
		{argv: []string{"rg", "-n", "needle", "."}},
		{argv: []string{"rg", "-n", "-g", "*.js", "needle"}},
		{argv: []string{"rg", "-n", "-g", "!*.py", "needle"}},
		{argv: []string{"rg", "-n", "-g", "*.js", "-g", "!c.js", "needle"}},
		{argv: []string{"rg", "-n", "--glob=*.{js,py}", "needle"}},
		{argv: []string{"rg", "-n", "--iglob", "*.JS", "needle"}},
		{argv: []string{"rg", "-n", "--glob-case-insensitive", "-g", "*.JS", "needle"}},
		{argv: []string{"rg", "-n", "-t", "js", "needle"}},
		{argv: []string{"rg", "-n", "-T", "py", "needle"}},
		{argv: []string{"rg", "-n", "-tpy", "-tjs", "needle"}},
		{argv: []string{"rg", "-n", "--hidden", "needle"}},
		{argv: []string{"rg", "-n", "-uuu", "needle"}},
		{argv: []string{"rg", "-n", "--hidden", "-g", ".env*", "needle"}},
		{argv: []string{"rg", "-n", "--hidden", "--iglob", "*", "needle"}},
		{argv: []string{"rg", "-l", "needle", "sub"}, list: true},
		{argv: []string{"rg", "-n", "needle"}, cwd: "sub"},
		{argv: []string{"rg", "-n", "--hidden", "needle", ".."}, cwd: "sub"},
		{argv: []string{"rg", "-n", "needle", "--", "."}},
		{argv: []string{"rg", "--files"}, list: true},
		{argv: []string{"rg", "--files", "--hidden"}, list: true},
		{argv: []string{"rg", "-c", "--hidden", "needle"}, count: true},
		{argv: []string{"rg", "-n", "absent-word"}},
		{argv: []string{"rg", "-n", "needle", "-g"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.argv, " ")+" in "+c.cwd, func(t *testing.T) { checkShielded(t, tr, c, want, nil) })
	}
}

func TestShieldGitGrepMatchesDirectMinusSecrets(t *testing.T) {
	tr := newShieldTree(t)
	cases := []toolCase{
		{argv: []string{"git", "grep", "-n", "needle"}},
		{argv: []string{"git", "grep", "-n", "needle", "--", "*.js"}},
		{argv: []string{"git", "grep", "-n", "needle", "--", "*.js", "*.py"}},
		{argv: []string{"git", "grep", "-n", "-e", "needle", "--", "sub"}},
		{argv: []string{"git", "grep", "-n", "needle", "sub"}},
		{argv: []string{"git", "grep", "-n", "needle", "HEAD"}},
		{argv: []string{"git", "grep", "-n", "needle", "HEAD~1", "--", "*.js"}},
		{argv: []string{"git", "grep", "-ni", "NEEDLE"}},
		{argv: []string{"git", "grep", "-n", "needle"}, cwd: "sub"},
		{argv: []string{"git", "grep", "-n", "needle", "--", ":(exclude)*.py"}},
		{argv: []string{"git", "grep", "-n", "needle", "--", ".env*", "*.pem"}},
		{argv: []string{"git", "grep", "-c", "needle"}, count: true},
		{argv: []string{"git", "grep", "-l", "needle"}, list: true},
		{argv: []string{"git", "grep", "-n", "--max-depth", "0", "needle"}},
		{argv: []string{"git", "--no-pager", "grep", "-n", "needle"}},
		{argv: []string{"git", "diff", "--name-only", "HEAD~1"}, list: true},
		{argv: []string{"git", "diff", "--name-only", "HEAD~1", "--", "sub", "."}, list: true},
		{argv: []string{"git", "diff-tree", "-r", "--name-only", "HEAD~1", "HEAD"}, list: true},
		{argv: []string{"git", "show", "--name-only", "--format=", "HEAD~1"}, list: true},
		{argv: []string{"git", "log", "--name-only", "--format="}, list: true},
		{argv: []string{"git", "log", "--name-only", "--format=", "HEAD", "--", "*.js"}, list: true},
		{argv: []string{"git", "log", "--follow", "--name-only", "--format=", "--", "a.js"}, list: true},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.argv, " ")+" in "+c.cwd, func(t *testing.T) { checkShielded(t, tr, c, "", tr.secret) })
	}
	t.Run("no pattern is refused as directly", func(t *testing.T) {
		argv := []string{"git", "grep", "-n"}
		_, dcode := runAs(t, tr.root, argv)
		sh, _ := shieldArgv(argv, tr.deny.Patterns(), nil)
		_, code := runAs(t, tr.root, sh)
		if dcode == 0 || code != dcode {
			t.Fatalf("exit %d shielded (%q), %d directly: want the same refusal", code, sh, dcode)
		}
	})
}

// FuzzShieldGrepRuns builds grep and rg commands from a vocabulary of the
// options that select files and runs them: the shielded run prints the
// direct run's lines minus secret paths (and never a closed file's
// "Permission denied").
func FuzzShieldGrepRuns(f *testing.F) {
	vocab := []string{"-r", "-n", "-l", "-i", "--include=*.js", "--include=*.py", "--include=.env*", "--exclude=*.js",
		"--exclude=c.js", "--exclude-dir=sub", "--exclude-dir=.git", "--include=*.pem", "-e", "needle", "--", ".", "sub",
		"-g", "*.js", "!*.py", "--iglob=*.JS", "--hidden", "-tjs", "-Tpy", "--include", "--incl=*.txt", "hay"}
	f.Add(uint8(0), []byte{0, 1, 4, 13, 15})
	f.Add(uint8(1), []byte{1, 17, 18, 13})
	f.Add(uint8(0), []byte{0, 5, 7, 13, 15, 24})
	f.Add(uint8(1), []byte{21, 16, 13})
	f.Add(uint8(0), []byte{0, 12, 23, 13})
	tr := newShieldTree(f)
	minusGrep, minusRg := tr.minus(f, grepOverExcluded), tr.minus(f, nil)
	f.Fuzz(func(t *testing.T, prog uint8, picks []byte) {
		if len(picks) > 8 {
			return
		}
		name := []string{"grep", "rg"}[prog%2]
		if _, err := exec.LookPath(name); err != nil {
			t.Skip(name + " is not installed")
		}
		argv := []string{name}
		for _, p := range picks {
			argv = append(argv, vocab[int(p)%len(vocab)])
		}
		c := toolCase{argv: argv, list: slices.Contains(argv, "-l")}
		if name == "grep" && !slices.Contains(argv, "-r") {
			return // grep would read its standard input
		}
		want := minusRg
		if name == "grep" {
			want = minusGrep
		}
		checkShielded(t, tr, c, want, nil)
	})
}

// TestShieldToolsNote records which tools the real-tool tests ran.
func TestShieldToolsNote(t *testing.T) {
	for _, p := range []string{"grep", "rg", "git"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Logf("%s is not installed: its shield cases were skipped", p)
		} else {
			out, _ := exec.Command(p, "--version").Output()
			first, _, _ := strings.Cut(string(out), "\n")
			t.Logf("%s: %s", p, strconv.Quote(first))
		}
	}
}
