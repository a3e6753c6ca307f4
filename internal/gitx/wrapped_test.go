package gitx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// These tests play the attacker: a repository whose config makes git run
// programs, each leaving a marker file. Each test first shows that plain git
// run by an agent would run them (so the test proves something), then runs
// real git through a wrapper harnessd cannot add -c arguments to, with the
// environment harnessd gives every process it spawns:
//
//	append(StripGitEnv(HardenedEnv(os.Environ())), ConfigEnv(dir)...)
//
// and checks that no marker appears.

// requireGit skips the test when git is older than major.minor.
func requireGit(t *testing.T, major, minor int, why string) {
	t.Helper()
	out, err := exec.Command("git", "version").Output()
	if err != nil {
		t.Skipf("git: %v", err)
	}
	if !versionAtLeast(string(out), major, minor) {
		t.Skipf("%s needs git >= %d.%d (have %s)", why, major, minor, strings.TrimSpace(string(out)))
	}
}

// trap is a directory of marker files left by hostile programs.
type trap struct {
	t   *testing.T
	dir string
}

func newTrap(t *testing.T) *trap { return &trap{t: t, dir: t.TempDir()} }

func (tr *trap) marker(name string) string { return filepath.Join(tr.dir, name+".ran") }

// prog is a shell command that leaves marker name and passes its input
// through (so it works as a filter, textconv, pager, ...). Config values
// holding it must be quoted: ';' starts a comment.
func (tr *trap) prog(name string) string { return "touch '" + tr.marker(name) + "'; cat" }

// script is an executable that leaves marker name, for settings git runs
// without a shell (gpg.program).
func (tr *trap) script(name string) string {
	p := filepath.Join(tr.dir, name+".sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\ntouch '"+tr.marker(name)+"'\ncat >/dev/null\n"), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	return p
}

func (tr *trap) ran() []string {
	m, err := filepath.Glob(filepath.Join(tr.dir, "*.ran"))
	if err != nil {
		tr.t.Fatal(err)
	}
	for i := range m {
		m[i] = strings.TrimSuffix(filepath.Base(m[i]), ".ran")
	}
	sort.Strings(m)
	return m
}

func (tr *trap) reset() {
	tr.t.Helper()
	for _, m := range tr.ran() {
		if err := os.Remove(tr.marker(m)); err != nil {
			tr.t.Fatal(err)
		}
	}
}

// expect fails unless every named marker is present (the attack is real).
func (tr *trap) expect(names ...string) {
	tr.t.Helper()
	got := strings.Join(tr.ran(), " ")
	for _, n := range names {
		if !strings.Contains(" "+got+" ", " "+n+" ") {
			tr.t.Errorf("plain git did not run %s (ran: %s); the attack is not real", n, got)
		}
	}
}

// none fails if any marker is present.
func (tr *trap) none(what string) {
	tr.t.Helper()
	if ran := tr.ran(); len(ran) != 0 {
		tr.t.Errorf("%s: hostile programs ran: %v", what, ran)
	}
}

// wrappedEnv is the environment harnessd gives a command run in dir.
func wrappedEnv(t *testing.T, dir string) []string {
	t.Helper()
	ce, err := ConfigEnv(dir)
	if err != nil {
		t.Fatalf("ConfigEnv(%s): %v", dir, err)
	}
	return append(StripGitEnv(HardenedEnv(os.Environ())), ce...)
}

// run runs argv in dir with env (nil: the plain test environment, as an
// unprotected agent would) and returns its combined output.
func run(t *testing.T, dir string, env []string, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if env == nil {
		env = testEnv()
	}
	cmd.Env = env
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRun(t *testing.T, dir string, env []string, argv ...string) string {
	t.Helper()
	out, err := run(t, dir, env, argv...)
	if err != nil {
		t.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}

// cfgVar is one hostile setting, rendered in different syntaxes.
type cfgVar struct{ section, sub, key, value string }

// quoteValue writes v as a double-quoted config value.
func quoteValue(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

type style int

const (
	stylePlain style = iota
	styleUpper
	styleLegacy
	styleContinuation
)

func renderConfig(vars []cfgVar, st style) string {
	var b strings.Builder
	for _, v := range vars {
		section, key := v.section, v.key
		if st == styleUpper {
			section, key = strings.ToUpper(section), strings.ToUpper(key)
		}
		switch {
		case v.sub == "":
			b.WriteString("[" + section + "]\n")
		case st == styleLegacy:
			b.WriteString("[" + section + "." + v.sub + "]\n")
		default:
			b.WriteString("[" + section + " \"" + v.sub + "\"]\n")
		}
		val := quoteValue(v.value)
		if st == styleContinuation {
			// Split the value over two lines inside the quotes.
			mid := len(val) / 2
			val = val[:mid] + "\\\n" + val[mid:]
		}
		b.WriteString("\t" + key + " = " + val + "\n")
	}
	return b.String()
}

// attackRepo is a repository with two commits (a.txt changes between them)
// and attributes that apply the drivers attackVars defines, plus hooks.
func attackRepo(t *testing.T, tr *trap) string {
	t.Helper()
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "x.p", "p\n")
	writeFile(t, dir, "y.s", "s\n")
	writeFile(t, dir, ".gitattributes", "*.txt filter=evil diff=evil\n*.p filter=proc\n*.s filter=smu\n")
	commitAll(t, dir, "one")
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	commitAll(t, dir, "two")
	for _, h := range []string{"pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction"} {
		writeFile(t, dir, ".git/hooks/"+h, "#!/bin/sh\ntouch '"+tr.marker("hook-"+h)+"'\n")
		if err := os.Chmod(filepath.Join(dir, ".git/hooks", h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func attackVars(tr *trap) []cfgVar {
	return []cfgVar{
		{"filter", "evil", "clean", tr.prog("clean")},
		{"filter", "evil", "smudge", tr.prog("smudge")},
		{"filter", "proc", "process", tr.prog("process")},
		{"filter", "smu", "smudge", tr.prog("smudge2")},
		{"diff", "evil", "textconv", tr.prog("textconv")},
		{"core", "", "fsmonitor", tr.prog("fsmonitor")},
		{"core", "", "pager", tr.prog("pager")},
		{"pager", "", "log", tr.prog("pagerlog")},
	}
}

// dirty makes every attack reachable: a.txt changed, x.p stat-dirty with the
// same content (status must run its filter), y.s deleted (checkout smudges).
func dirty(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, dir, "a.txt", "one\ntwo\nthree\n")
	writeFile(t, dir, "x.p", "p\n")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "x.p"), future, future); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "y.s")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// provePlain runs what an agent would run with plain git and checks the
// attack works.
func provePlain(t *testing.T, tr *trap, dir string) {
	t.Helper()
	dirty(t, dir)
	run(t, dir, nil, "git", "status")
	run(t, dir, nil, "git", "diff")
	run(t, dir, nil, "git", "checkout", "--", "y.s")
	run(t, dir, nil, "git", "add", "x.p")
	tr.expect("clean", "textconv", "fsmonitor", "smudge2", "process", "hook-post-index-change")
	if script, err := exec.LookPath("script"); err == nil {
		run(t, dir, nil, script, "-qec", "git log -1", "/dev/null")
		tr.expect("pagerlog")
	}
	tr.reset()
	// Undo what the plain run did (without running anything hostile).
	gitT(t, dir, "-c", "core.hooksPath=/dev/null", "-c", "filter.proc.process=", "-c", "core.fsmonitor=false", "reset", "-q")
}

// wrappedCommands is what an agent runs through wrappers.
var wrappedCommands = []struct {
	argv []string
	ok   bool   // must succeed
	want string // in the output
}{
	{[]string{"env", "git", "status"}, true, "a.txt"},
	{[]string{"timeout", "20", "git", "diff"}, true, "+three"},
	{[]string{"sh", "-c", "git show HEAD"}, true, "+two"},
	{[]string{"sh", "-c", "git log -p -2 | cat"}, true, "+two"},
	{[]string{"find", ".", "-maxdepth", "0", "-exec", "git", "status", "--porcelain", ";"}, true, "a.txt"},
	{[]string{"sh", "-c", "echo a.txt | xargs git hash-object -w"}, true, ""},
	{[]string{"env", "git", "hash-object", "-w", "x.p"}, true, ""},
	{[]string{"env", "git", "diff", "HEAD~1", "HEAD"}, true, "+two"},
	{[]string{"env", "git", "blame", "a.txt"}, true, "one"},
	{[]string{"env", "git", "grep", "--textconv", "-e", "one"}, true, "a.txt"},
	{[]string{"env", "git", "checkout", "--", "y.s"}, true, ""},
	{[]string{"env", "git", "add", "-A"}, true, ""},
	{[]string{"env", "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "three"}, true, ""},
	{[]string{"env", "git", "log", "-1"}, true, "three"},
}

// proveWrapped runs the wrapped commands with harnessd's environment and
// checks nothing hostile ran.
func proveWrapped(t *testing.T, tr *trap, dir string) {
	t.Helper()
	dirty(t, dir)
	env := wrappedEnv(t, dir)
	for _, c := range wrappedCommands {
		out, err := run(t, dir, env, c.argv...)
		if c.ok && err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(c.argv, " "), err, out)
		}
		if c.want != "" && !strings.Contains(out, c.want) {
			t.Errorf("%s: output lacks %q:\n%s", strings.Join(c.argv, " "), c.want, out)
		}
		tr.none(strings.Join(c.argv, " "))
	}
	if script, err := exec.LookPath("script"); err == nil {
		// A terminal, so git would start a pager.
		run(t, dir, env, script, "-qec", "env git log -1", "/dev/null")
		run(t, dir, env, script, "-qec", "env git diff HEAD~1", "/dev/null")
		tr.none("git log on a terminal")
	}
}

func appendConfig(t *testing.T, dir, text string) {
	t.Helper()
	p := filepath.Join(dir, ".git", "config")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(b, text...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWrappedGitHostileConfig runs the attack in every syntax that hides it
// from a naive reader of .git/config.
func TestWrappedGitHostileConfig(t *testing.T) {
	requireGit(t, 2, 31, "GIT_CONFIG_COUNT")
	home := os.Getenv("HOME")
	variants := []struct {
		name    string
		minor   int // git 2.<minor> needed
		install func(t *testing.T, dir string, vars []cfgVar)
	}{
		{"plain", 0, func(t *testing.T, dir string, vars []cfgVar) {
			appendConfig(t, dir, renderConfig(vars, stylePlain))
		}},
		{"utf8 bom", 0, func(t *testing.T, dir string, vars []cfgVar) {
			p := filepath.Join(dir, ".git", "config")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, ".git/config", "\xef\xbb\xbf"+string(b)+renderConfig(vars, stylePlain))
		}},
		{"upper case", 0, func(t *testing.T, dir string, vars []cfgVar) {
			appendConfig(t, dir, renderConfig(vars, styleUpper))
		}},
		{"legacy subsections", 0, func(t *testing.T, dir string, vars []cfgVar) {
			appendConfig(t, dir, renderConfig(vars, styleLegacy))
		}},
		{"continuation lines", 0, func(t *testing.T, dir string, vars []cfgVar) {
			appendConfig(t, dir, renderConfig(vars, styleContinuation))
		}},
		{"include chain", 0, func(t *testing.T, dir string, vars []cfgVar) {
			// .git/config -> .git/inc1.cfg (relative) -> ~/inc2.cfg.
			name := "inc2-" + filepath.Base(filepath.Dir(dir)) + ".cfg"
			writeFile(t, home, name, renderConfig(vars, stylePlain))
			writeFile(t, dir, ".git/inc1.cfg", "[include]\n\tpath = ~/"+name+"\n")
			appendConfig(t, dir, "[include]\n\tpath = inc1.cfg\n")
		}},
		{"includeIf gitdir", 0, func(t *testing.T, dir string, vars []cfgVar) {
			inc := filepath.Join(t.TempDir(), "evil.cfg")
			writeFile(t, filepath.Dir(inc), "evil.cfg", renderConfig(vars, stylePlain))
			appendConfig(t, dir, "[includeIf \"gitdir:"+dir+"/\"]\n\tpath = "+inc+"\n")
		}},
		{"includeIf gitdir/i", 0, func(t *testing.T, dir string, vars []cfgVar) {
			inc := filepath.Join(t.TempDir(), "evil.cfg")
			writeFile(t, filepath.Dir(inc), "evil.cfg", renderConfig(vars, stylePlain))
			appendConfig(t, dir, "[includeIf \"gitdir/i:"+strings.ToUpper(dir)+"/\"]\n\tpath = "+inc+"\n")
		}},
		{"includeIf onbranch", 0, func(t *testing.T, dir string, vars []cfgVar) {
			writeFile(t, dir, ".git/branch.cfg", renderConfig(vars, stylePlain))
			appendConfig(t, dir, "[includeIf \"onbranch:main\"]\n\tpath = branch.cfg\n")
		}},
		{"includeIf hasconfig", 36, func(t *testing.T, dir string, vars []cfgVar) {
			writeFile(t, dir, ".git/remote.cfg", renderConfig(vars, stylePlain))
			appendConfig(t, dir, "[remote \"origin\"]\n\turl = https://example.invalid/r.git\n"+
				"[includeIf \"hasconfig:remote.*.url:https://example.invalid/**\"]\n\tpath = remote.cfg\n")
		}},
		{"config.worktree", 0, func(t *testing.T, dir string, vars []cfgVar) {
			appendConfig(t, dir, "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n")
			writeFile(t, dir, ".git/config.worktree", renderConfig(vars, stylePlain))
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if v.minor > 0 {
				requireGit(t, 2, v.minor, v.name)
			}
			tr := newTrap(t)
			dir := attackRepo(t, tr)
			v.install(t, dir, attackVars(tr))
			provePlain(t, tr, dir)
			proveWrapped(t, tr, dir)
		})
	}
}

// TestWrappedGitCacheSeesLateAttack computes the environment once for a
// benign repository, then turns an included file hostile: the next
// environment must neutralise it.
func TestWrappedGitCacheSeesLateAttack(t *testing.T) {
	requireGit(t, 2, 31, "GIT_CONFIG_COUNT")
	tr := newTrap(t)
	dir := attackRepo(t, tr)
	writeFile(t, dir, ".git/inc.cfg", "[core]\n")
	appendConfig(t, dir, "[include]\n\tpath = inc.cfg\n")
	wrappedEnv(t, dir)
	writeFile(t, dir, ".git/inc.cfg", renderConfig(attackVars(tr), stylePlain))
	provePlain(t, tr, dir)
	proveWrapped(t, tr, dir)
}

// TestWrappedGitBareRepoInWorkTree hides a bare repository (HEAD, objects/,
// refs/, a config with a filter, info/attributes applying it) in a work
// tree: git run in that directory would use it.
func TestWrappedGitBareRepoInWorkTree(t *testing.T) {
	requireGit(t, 2, 38, "safe.bareRepository")
	tr := newTrap(t)
	dir := newRepo(t)
	writeFile(t, dir, "README", "x\n")
	commitAll(t, dir, "base")
	evil := filepath.Join(dir, "evil")
	writeFile(t, evil, "HEAD", "ref: refs/heads/main\n")
	writeFile(t, evil, "config", "[core]\n\tbare = true\n\tfsmonitor = "+quoteValue(tr.prog("fsmonitor"))+
		"\n[filter \"x\"]\n\tclean = "+quoteValue(tr.prog("bare-clean"))+"\n")
	writeFile(t, evil, "info/attributes", "* filter=x\n")
	writeFile(t, evil, "f", "data\n")
	for _, d := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(evil, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run(t, evil, nil, "git", "hash-object", "f")
	tr.expect("bare-clean")
	tr.reset()

	for _, envDir := range []string{dir, evil} {
		env := wrappedEnv(t, envDir)
		for _, argv := range [][]string{
			{"env", "git", "hash-object", "f"},
			{"sh", "-c", "git hash-object -w f"},
			{"env", "git", "status"},
		} {
			run(t, evil, env, argv...)
			tr.none("in the bare directory: " + strings.Join(argv, " "))
		}
	}
	// harnessd's own calls refuse it too.
	var g Git
	g.Run(testCtx(t), evil, 0, "hash-object", "f")
	tr.none("gitx hash-object")
}

// TestWrappedGitSubmodules puts the hostile config in submodules: git status
// in the superproject runs git status in each populated submodule.
func TestWrappedGitSubmodules(t *testing.T) {
	requireGit(t, 2, 31, "GIT_CONFIG_COUNT")
	tr := newTrap(t)
	src := newRepo(t)
	writeFile(t, src, "a.txt", "a\n")
	writeFile(t, src, ".gitattributes", "*.txt filter=sf diff=sf\n")
	commitAll(t, src, "sub")

	sup := newRepo(t)
	writeFile(t, sup, "README", "x\n")
	commitAll(t, sup, "base")
	// An absorbed submodule (git dir in .git/modules/sub) ...
	gitT(t, sup, "submodule", "add", "-q", src, "sub")
	// ... and an embedded one (its own .git directory) ...
	gitT(t, sup, "clone", "-q", src, "emb")
	gitT(t, sup, "add", "emb")
	// ... and one whose .git file points outside the work tree.
	gitT(t, sup, "clone", "-q", src, "far")
	farGit := filepath.Join(t.TempDir(), "far.git")
	if err := os.Rename(filepath.Join(sup, "far", ".git"), farGit); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sup, "far/.git", "gitdir: "+farGit+"\n")
	gitT(t, sup, "add", "far")
	commitAll(t, sup, "subs")

	for name, gitDir := range map[string]string{
		"sub": filepath.Join(sup, ".git", "modules", "sub"),
		"emb": filepath.Join(sup, "emb", ".git"),
		"far": farGit,
	} {
		f, err := os.OpenFile(filepath.Join(gitDir, "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(renderConfig([]cfgVar{
			{"filter", "sf", "clean", tr.prog(name + "-clean")},
			{"diff", "sf", "textconv", tr.prog(name + "-textconv")},
		}, stylePlain))
		f.Close()
	}
	touch := func() {
		future := time.Now().Add(time.Hour)
		for _, s := range []string{"sub", "emb", "far"} {
			if err := os.Chtimes(filepath.Join(sup, s, "a.txt"), future, future); err != nil {
				t.Fatal(err)
			}
		}
	}
	touch()
	run(t, sup, nil, "git", "status")
	tr.expect("sub-clean", "emb-clean", "far-clean")
	tr.reset()

	touch()
	env := wrappedEnv(t, sup)
	for _, argv := range [][]string{
		{"env", "git", "status"},
		{"sh", "-c", "git diff --submodule=diff"},
		{"sh", "-c", "cd emb && git status && cd ../far && git diff"},
		{"sh", "-c", "cd sub && git diff"},
	} {
		if out, err := run(t, sup, env, argv...); err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
		tr.none(strings.Join(argv, " "))
	}
	// harnessd's own status recurses the same way.
	touch()
	var g Git
	if _, err := g.Status(testCtx(t), sup); err != nil {
		t.Fatal(err)
	}
	tr.none("gitx Status")
}

// TestWrappedGitDiscovery covers the ways a repository redirects git to
// config a simple ".git/config" reader does not look at.
func TestWrappedGitDiscovery(t *testing.T) {
	requireGit(t, 2, 31, "GIT_CONFIG_COUNT")
	hostile := func(tr *trap) string {
		return renderConfig([]cfgVar{
			{"core", "", "fsmonitor", tr.prog("fsmonitor")},
			{"filter", "evil", "clean", tr.prog("clean")},
			{"diff", "evil", "textconv", tr.prog("textconv")},
		}, stylePlain)
	}
	prove := func(t *testing.T, tr *trap, dir string) {
		t.Helper()
		writeFile(t, dir, "a.txt", "one\ntwo\n")
		run(t, dir, nil, "git", "diff")
		run(t, dir, nil, "git", "status")
		tr.expect("fsmonitor", "clean", "textconv")
		tr.reset()
		env := wrappedEnv(t, dir)
		for _, argv := range [][]string{{"env", "git", "status"}, {"sh", "-c", "git diff"}} {
			if out, err := run(t, dir, env, argv...); err != nil {
				t.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
			tr.none(strings.Join(argv, " "))
		}
	}
	base := func(t *testing.T) string {
		dir := newRepo(t)
		writeFile(t, dir, "a.txt", "one\n")
		writeFile(t, dir, ".gitattributes", "*.txt filter=evil diff=evil\n")
		commitAll(t, dir, "one")
		return dir
	}

	t.Run("commondir in .git", func(t *testing.T) {
		tr := newTrap(t)
		dir := base(t)
		common := filepath.Join(t.TempDir(), "common.git")
		gitT(t, dir, "clone", "-q", "--bare", dir, common)
		writeFile(t, common, "config", hostile(tr))
		writeFile(t, dir, ".git/commondir", common+"\n")
		prove(t, tr, dir)
	})
	t.Run("gitfile through a symlink and ..", func(t *testing.T) {
		tr := newTrap(t)
		dir := base(t)
		outer := t.TempDir()
		if err := os.MkdirAll(filepath.Join(outer, "x", "y"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, ".git"), filepath.Join(outer, "x", "real")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outer, "x", "y"), filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		// A lexical reader sees dir/real; git sees outer/x/real.
		writeFile(t, dir, ".git", "gitdir: link/../real\n")
		writeFile(t, filepath.Join(outer, "x"), "real/config", "[core]\n\trepositoryformatversion = 0\n\tworktree = "+dir+"\n"+hostile(tr))
		writeFile(t, dir, ".gitignore", "link\n")
		prove(t, tr, dir)
	})
	t.Run("gitfile with a leading space and trailing newlines", func(t *testing.T) {
		tr := newTrap(t)
		dir := base(t)
		if err := os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, " g")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, ".git", "gitdir:  g"+strings.Repeat("\n", 5000))
		writeFile(t, dir, " g/config", "[core]\n\trepositoryformatversion = 0\n\tworktree = "+dir+"\n"+hostile(tr))
		writeFile(t, dir, ".gitignore", " g\n")
		prove(t, tr, dir)
	})
	t.Run("invalid .git directory below the repository", func(t *testing.T) {
		tr := newTrap(t)
		dir := base(t)
		appendConfig(t, dir, hostile(tr))
		sub := filepath.Join(dir, "sub")
		if err := os.MkdirAll(filepath.Join(sub, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, sub, "a.txt", "x\n")
		writeFile(t, dir, ".gitignore", "sub/a.txt\n")
		// git in sub skips the empty .git and uses dir's repository.
		run(t, sub, nil, "git", "diff")
		run(t, sub, nil, "git", "status")
		tr.expect("fsmonitor")
		tr.reset()
		writeFile(t, dir, "a.txt", "one\ntwo\n")
		env := wrappedEnv(t, sub)
		for _, argv := range [][]string{{"env", "git", "status"}, {"sh", "-c", "git diff"}} {
			run(t, sub, env, argv...)
			tr.none(strings.Join(argv, " "))
		}
	})
}

// TestWrappedGitOtherPrograms covers the other programs a repository config
// can name: external diff, transports, help viewers, archive filters,
// difftools, signature verification, ssh.
func TestWrappedGitOtherPrograms(t *testing.T) {
	requireGit(t, 2, 31, "GIT_CONFIG_COUNT")
	setup := func(t *testing.T) (*trap, string) {
		tr := newTrap(t)
		dir := newRepo(t)
		writeFile(t, dir, "a.txt", "one\n")
		commitAll(t, dir, "one")
		writeFile(t, dir, "a.txt", "one\ntwo\n")
		return tr, dir
	}
	cases := []struct {
		name   string
		config func(tr *trap, dir string) []cfgVar
		argv   []string
		marker string
	}{
		{"diff.external", func(tr *trap, dir string) []cfgVar {
			return []cfgVar{{"diff", "", "external", tr.prog("external")}}
		}, []string{"git", "diff"}, "external"},
		{"ext transport", func(tr *trap, dir string) []cfgVar {
			return []cfgVar{
				{"protocol", "ext", "allow", "always"},
				{"remote", "x", "url", "ext::sh -c touch% " + tr.marker("ext")},
			}
		}, []string{"git", "fetch", "-q", "x"}, "ext"},
		{"file transport upload-pack", func(tr *trap, dir string) []cfgVar {
			return []cfgVar{
				{"protocol", "file", "allow", "always"},
				{"remote", "u", "url", dir},
				{"remote", "u", "uploadpack", "touch '" + tr.marker("uploadpack") + "'; git-upload-pack"},
			}
		}, []string{"git", "fetch", "-q", "u"}, "uploadpack"},
		{"ssh command", func(tr *trap, dir string) []cfgVar {
			return []cfgVar{
				{"core", "", "sshCommand", tr.prog("ssh")},
				{"remote", "s", "url", "ssh://example.invalid/r.git"},
			}
		}, []string{"git", "fetch", "-q", "s"}, "ssh"},
		{"man viewer", func(tr *trap, dir string) []cfgVar {
			return []cfgVar{
				{"help", "", "format", "man"},
				{"man", "", "viewer", "evil"},
				{"man", "evil", "cmd", tr.prog("man")},
			}
		}, []string{"git", "help", "status"}, "man"},
		{"archive filter", func(tr *trap, dir string) []cfgVar {
			return []cfgVar{{"tar", "tar.gz", "command", tr.prog("tar")}}
		}, []string{"git", "archive", "-o", "out.tar.gz", "HEAD"}, "tar"},
		{"difftool", func(tr *trap, dir string) []cfgVar {
			return []cfgVar{
				{"diff", "", "tool", "evil"},
				{"difftool", "evil", "cmd", tr.prog("difftool")},
			}
		}, []string{"git", "difftool", "-y"}, "difftool"},
		{"signature verification", func(tr *trap, dir string) []cfgVar {
			return []cfgVar{
				{"log", "", "showSignature", "true"},
				{"gpg", "", "program", tr.script("gpg")},
			}
		}, []string{"git", "log", "-1"}, "gpg"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, dir := setup(t)
			if c.name == "signature verification" {
				signedCommit(t, dir)
			}
			appendConfig(t, dir, renderConfig(c.config(tr, dir), stylePlain))
			run(t, dir, nil, c.argv...)
			tr.expect(c.marker)
			tr.reset()
			env := wrappedEnv(t, dir)
			run(t, dir, env, append([]string{"env"}, c.argv...)...)
			run(t, dir, env, "sh", "-c", strings.Join(c.argv, " "))
			tr.none(strings.Join(c.argv, " "))
		})
	}
}

// signedCommit makes HEAD a commit with a (fake) PGP signature, which git
// log --show-signature hands to gpg.program.
func signedCommit(t *testing.T, dir string) {
	t.Helper()
	tree := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD^{tree}"))
	parent := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	body := "tree " + tree + "\nparent " + parent + "\n" +
		"author T <t@example.com> 1700000000 +0000\ncommitter T <t@example.com> 1700000000 +0000\n" +
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n"
	cmd := exec.Command("git", "hash-object", "-t", "commit", "-w", "--stdin")
	cmd.Dir = dir
	cmd.Env = testEnv()
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "update-ref", "HEAD", strings.TrimSpace(string(out)))
}

// TestWrappedGitNameWithEquals: a driver named "a=b" cannot be a -c key
// (harnessd's own calls refuse to run), but GIT_CONFIG_KEY carries it.
func TestWrappedGitNameWithEquals(t *testing.T) {
	requireGit(t, 2, 31, "GIT_CONFIG_COUNT")
	tr := newTrap(t)
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, ".gitattributes", "*.txt filter=a=b diff=q\"x\n")
	commitAll(t, dir, "one")
	appendConfig(t, dir, "[filter \"a=b\"]\n\tclean = "+quoteValue(tr.prog("eq"))+
		"\n[diff \"q\\\"x\"]\n\ttextconv = "+quoteValue(tr.prog("quote"))+"\n")
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	run(t, dir, nil, "git", "diff")
	tr.expect("eq", "quote")
	tr.reset()
	env := wrappedEnv(t, dir)
	mustRun(t, dir, env, "env", "git", "diff")
	mustRun(t, dir, env, "env", "git", "add", "a.txt")
	tr.none("driver names with = and \"")
}
