package main

// The attack suite: harnessd attacked through MCP as an agent would attack
// it, against a real daemon subprocess (issue 21, DESIGN §10). Every case
// asserts something that cannot hold by accident: a marker file that must
// not appear, a random secret that must not come back in any form in the
// raw tool result (success or error), a process count that must stay
// bounded. Positive controls show the channel each attack uses exists.
//
// An attack is blocked when harnessd refuses it (any error code) or runs it
// confined with no effect: no marker, no secret, no run of a
// repository-defined program (its output token or its beacon call).

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/internal/testutil"
)

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// payload is a program an attacker plants: run, it writes markers outside
// the checkout, in it and in its .git, prints a token and calls the beacon.
type payload struct {
	id, outDir, repo, token string
	bc                      *beacon
}

func newPayload(t *testing.T, id, outDir, repo string, bc *beacon) payload {
	return payload{id: id, outDir: outDir, repo: repo, token: "PWNED" + newSecret(t)[:16], bc: bc}
}

func (p payload) markers() []string {
	return []string{filepath.Join(p.outDir, "pwn-"+p.id), filepath.Join(p.repo, "pwn-"+p.id), filepath.Join(p.repo, ".git", "pwn-"+p.id)}
}

// sh is the payload as a shell command line: absolute paths (it may run
// with an empty environment), no single quotes.
func (p payload) sh() string {
	var b strings.Builder
	for _, m := range p.markers() {
		fmt.Fprintf(&b, "/usr/bin/touch %s; ", m)
	}
	fmt.Fprintf(&b, "echo %s; echo %s >&2; /usr/bin/curl -s -m 2 --unix-socket %s http://b/%s >/dev/null 2>&1; ", p.token, p.token, p.bc.path, p.id)
	return b.String()
}

// ran checks that the payload left no trace after what; it removes the
// markers a run left so the next attempt is judged on its own.
func (p payload) ran(t *testing.T, what string, o out, hitsBefore bool) {
	t.Helper()
	for _, m := range p.markers() {
		if _, err := os.Lstat(m); err == nil {
			t.Errorf("MARKER: %s (or harnessd's own git around it) ran the planted %s program: %s exists\n  %s", what, p.id, m, o)
			os.Remove(m)
		}
	}
	if how := leakOf(p.token, o.texts...); how != "" {
		t.Errorf("EXEC: %s ran the planted %s program (its token came back %s; confined, but it ran)\n  %s", what, p.id, how, o)
	}
	if !hitsBefore && p.bc.hit("/"+p.id) {
		t.Errorf("EXEC: %s ran the planted %s program (it called the beacon)\n  %s", what, p.id, o)
	}
}

// gitWrapper turns git's arguments into an argv that runs git some other
// way than directly.
type gitWrapper struct {
	name string
	argv func(args []string, xargsFile string) []string
}

func gitWrappers() []gitWrapper {
	g := func(pre ...string) func([]string, string) []string {
		return func(args []string, _ string) []string {
			return append(append([]string{}, pre...), append([]string{"git"}, args...)...)
		}
	}
	shw := func(sh, prefix string) func([]string, string) []string {
		return func(args []string, _ string) []string {
			return []string{sh, "-c", prefix + "git " + shellJoin(args)}
		}
	}
	return []gitWrapper{
		{"direct", g()},
		{"env", g("env")},
		{"timeout", g("timeout", "5")},
		{"nice", g("nice")},
		{"stdbuf", g("stdbuf", "-o0")},
		{"find-exec", func(args []string, _ string) []string {
			return append(append([]string{"find", ".", "-maxdepth", "0", "-exec", "git"}, args...), ";")
		}},
		{"find-exec-sh", func(args []string, _ string) []string {
			return []string{"find", ".", "-maxdepth", "0", "-exec", "sh", "-c", "git " + shellJoin(args), ";"}
		}},
		{"xargs-a", func(_ []string, f string) []string { return []string{"xargs", "-a", f, "git"} }},
		{"sh-c", shw("sh", "")},
		{"bash-c", shw("bash", "")},
		{"sh-c-unset", shw("sh", "unset GIT_CONFIG_COUNT; ")},
		{"sh-c-count0", shw("sh", "GIT_CONFIG_COUNT=0 ")},
		{"env-count0", g("env", "GIT_CONFIG_COUNT=0")},
		{"env-u", g("env", "-u", "GIT_CONFIG_COUNT")},
		{"env-i", func(args []string, _ string) []string { return append([]string{"env", "-i", "/usr/bin/git"}, args...) }},
		{"env-i-path", g("env", "-i", "PATH=/usr/bin:/bin")},
		{"env-i-bare", g("env", "-i")},
		{"env-unset-long", g("env", "--unset=GIT_CONFIG_COUNT")},
		{"sh-c-env-u", func(args []string, _ string) []string {
			return []string{"sh", "-c", "env -u GIT_CONFIG_COUNT git " + shellJoin(args)}
		}},
		{"env-gitdir", func(args []string, _ string) []string {
			return append([]string{"env", "GIT_DIR=.git", "GIT_CONFIG_COUNT=0", "git"}, args...)
		}},
	}
}

// gitTrigger plants a repository-defined program and names the git command
// that runs it.
type gitTrigger struct {
	name string
	// plant sets the program up in repo (after the commits: the test's own
	// git must not run it); it returns git's arguments and the cwd.
	plant func(t *testing.T, repo string, p payload) (args []string, cwd string)
}

func setCfg(t *testing.T, dir string, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		gitq(t, dir, "config", kv[i], kv[i+1])
	}
}

func gitTriggers() []gitTrigger {
	return []gitTrigger{
		{"fsmonitor", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "core.fsmonitor", p.sh()+"false")
			return []string{"status"}, ""
		}},
		{"filter-clean", func(t *testing.T, repo string, p payload) ([]string, string) {
			testutil.WriteFile(t, repo, "a.txt", "changed\n")
			setCfg(t, repo, "filter.evil.clean", p.sh()+"cat", "filter.evil.required", "false")
			return []string{"diff"}, ""
		}},
		{"filter-smudge", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "filter.evil.smudge", p.sh()+"cat")
			return []string{"cat-file", "--filters", "HEAD:a.txt"}, ""
		}},
		{"filter-process", func(t *testing.T, repo string, p payload) ([]string, string) {
			testutil.WriteFile(t, repo, "b.dat", "changed\n")
			setCfg(t, repo, "filter.evilp.process", p.sh()+"exit 1")
			return []string{"diff"}, ""
		}},
		{"textconv", func(t *testing.T, repo string, p payload) ([]string, string) {
			testutil.WriteFile(t, repo, "c.bin", "changed\n")
			setCfg(t, repo, "diff.evilt.textconv", p.sh()+"cat")
			return []string{"diff"}, ""
		}},
		{"textconv-log", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "diff.evilt.textconv", p.sh()+"cat")
			return []string{"log", "-p", "-1"}, ""
		}},
		{"diff-external", func(t *testing.T, repo string, p payload) ([]string, string) {
			testutil.WriteFile(t, repo, "README.md", "changed\n")
			setCfg(t, repo, "diff.external", p.sh()+"true")
			return []string{"diff"}, ""
		}},
		{"diff-driver-command", func(t *testing.T, repo string, p payload) ([]string, string) {
			testutil.WriteFile(t, repo, "d.cmd", "changed\n")
			setCfg(t, repo, "diff.evild.command", p.sh()+"true")
			return []string{"diff"}, ""
		}},
		{"pager", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "core.pager", p.sh()+"cat", "pager.log", p.sh()+"cat")
			return []string{"-p", "log", "-1"}, ""
		}},
		{"alias", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "alias.lg", "!"+p.sh()+"true")
			return []string{"lg"}, ""
		}},
		{"include", func(t *testing.T, repo string, p payload) ([]string, string) {
			writeFile(t, filepath.Join(repo, "cfg", "extra.cfg"), "[filter \"evili\"]\n\tclean = \""+p.sh()+"cat\"\n", 0o644)
			testutil.WriteFile(t, repo, "e.inc", "changed\n")
			setCfg(t, repo, "include.path", "../cfg/extra.cfg")
			return []string{"diff"}, ""
		}},
		{"includeif", func(t *testing.T, repo string, p payload) ([]string, string) {
			writeFile(t, filepath.Join(repo, "cfg", "extra.cfg"), "[filter \"evili\"]\n\tclean = \""+p.sh()+"cat\"\n", 0o644)
			testutil.WriteFile(t, repo, "e.inc", "changed\n")
			setCfg(t, repo, "includeIf.onbranch:main.path", "../cfg/extra.cfg")
			return []string{"diff"}, ""
		}},
		{"config-bom", func(t *testing.T, repo string, p payload) ([]string, string) {
			testutil.WriteFile(t, repo, "e.inc", "changed\n")
			cfgPath := filepath.Join(repo, ".git", "config")
			b, _ := os.ReadFile(cfgPath)
			writeFile(t, cfgPath, "\xef\xbb\xbf"+string(b)+"[filter \"evili\"]\n\tclean = \""+p.sh()+"cat\"\n", 0o644)
			return []string{"diff"}, ""
		}},
		{"worktree-config", func(t *testing.T, repo string, p payload) ([]string, string) {
			testutil.WriteFile(t, repo, "f.wt", "changed\n")
			setCfg(t, repo, "core.repositoryformatversion", "1", "extensions.worktreeConfig", "true")
			writeFile(t, filepath.Join(repo, ".git", "config.worktree"), "[filter \"evilw\"]\n\tclean = \""+p.sh()+"cat\"\n", 0o644)
			return []string{"diff"}, ""
		}},
		{"bare-dir", func(t *testing.T, repo string, p payload) ([]string, string) {
			sub := filepath.Join(repo, "sub")
			writeFile(t, filepath.Join(sub, "HEAD"), "ref: refs/heads/main\n", 0o644)
			writeFile(t, filepath.Join(sub, "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = true\n[filter \"evilb\"]\n\tclean = \""+p.sh()+"cat\"\n", 0o644)
			writeFile(t, filepath.Join(sub, "info", "attributes"), "* filter=evilb\n", 0o644)
			for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
				if err := os.MkdirAll(filepath.Join(sub, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFile(t, filepath.Join(sub, "x.txt"), "x\n", 0o644)
			return []string{"hash-object", "x.txt"}, "sub"
		}},
		{"nested-repo", func(t *testing.T, repo string, p payload) ([]string, string) {
			n := filepath.Join(repo, "vendor", "lib")
			if err := os.MkdirAll(n, 0o755); err != nil {
				t.Fatal(err)
			}
			gitq(t, n, "init", "-q", "-b", "main")
			writeFile(t, filepath.Join(n, ".gitattributes"), "*.n filter=eviln\n", 0o644)
			writeFile(t, filepath.Join(n, "g.n"), "one\n", 0o644)
			gitq(t, n, "add", "-A")
			gitq(t, n, "commit", "-q", "-m", "nested")
			writeFile(t, filepath.Join(n, "g.n"), "changed\n", 0o644)
			setCfg(t, n, "filter.eviln.clean", p.sh()+"cat")
			return []string{"-C", "vendor/lib", "diff"}, ""
		}},
		{"man-viewer", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "man.viewer", "evilm", "man.evilm.cmd", p.sh()+"true")
			return []string{"help", "-m", "log"}, ""
		}},
		{"ext-transport", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "protocol.ext.allow", "always", "protocol.allow", "always")
			return []string{"ls-remote", "ext::sh -c " + strings.ReplaceAll(p.sh()+"false", " ", "% ")}, ""
		}},
		{"uploadpack", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "remote.evil.url", repo, "remote.evil.uploadpack", p.sh()+"false", "protocol.file.allow", "always")
			return []string{"ls-remote", "evil"}, ""
		}},
		{"git-proxy", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "core.gitProxy", p.sh()+"false", "protocol.git.allow", "always")
			return []string{"ls-remote", "git://127.0.0.1:1/x"}, ""
		}},
		{"ssh-command", func(t *testing.T, repo string, p payload) ([]string, string) {
			setCfg(t, repo, "core.sshCommand", p.sh()+"false", "protocol.ssh.allow", "always")
			return []string{"ls-remote", "ssh://git@127.0.0.1:1/x"}, ""
		}},
	}
}

// codeExecRepo is a checkout with the files the triggers need, committed
// before any program is planted.
func codeExecRepo(t *testing.T) string {
	return testutil.Repo(t, map[string]string{
		"README.md":      "# demo\n",
		".gitattributes": "*.txt filter=evil\n*.dat filter=evilp\n*.bin diff=evilt\n*.cmd diff=evild\n*.inc filter=evili\n*.wt filter=evilw\n",
		"a.txt":          "one\n",
		"b.dat":          "one\n",
		"c.bin":          "one\n",
		"d.cmd":          "one\n",
		"e.inc":          "one\n",
		"f.wt":           "one\n",
	})
}

// Category 1: a "read-only" Fast Path command makes git run a program the
// repository defines, through every wrapper an agent can put around git.
func TestAttackCodeExecGitPrograms(t *testing.T) {
	need(t, "git", "curl")
	t.Parallel()
	// Subtests run from goroutines, not t.Parallel: -parallel defaults
	// to GOMAXPROCS (2 here), and these mostly wait on the daemon.
	g := newGroup(t, 8)
	defer g.wait()
	a := newAtk(t)
	bc := newBeacon(t)
	for _, tr := range gitTriggers() {
		g.run(tr.name, func(t *testing.T) {
			outDir := t.TempDir()
			repo := codeExecRepo(t)
			p := newPayload(t, tr.name, outDir, repo, bc)
			args, cwd := tr.plant(t, repo, p)
			xf := "xargs-" + tr.name + ".txt"
			writeFile(t, filepath.Join(repo, xf), shellJoin(args)+"\n", 0o644)
			if cwd != "" {
				writeFile(t, filepath.Join(repo, cwd, xf), shellJoin(args)+"\n", 0o644)
			}
			before := snapshot(t, repo)
			id := a.register(t, repo)
			// harnessd's own git (registration, the secrets cache) must not
			// run it either.
			p.ran(t, "repository_register", out{name: "repository_register"}, false)
			for _, w := range gitWrappers() {
				if (w.name == "bash-c") && !have("bash") {
					continue
				}
				argv := w.argv(args, xf)
				hit := bc.hit("/" + p.id)
				o := a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": argv, "cwd": cwd, "timeout_ms": 8000})
				p.ran(t, fmt.Sprintf("run_command %q (%s)", argv, w.name), o, hit)
				t.Logf("%-12s %q: %s", w.name, argv, o.outcome())
			}
			for _, op := range []string{"git_status", "git_diff"} {
				o := a.tool(t, op, map[string]any{"repo_id": id})
				p.ran(t, op, o, bc.hit("/"+p.id))
			}
			sameTree(t, tr.name+" attacks", repo, before, ".git/index")
		})
	}
	// The control: the same planted program runs when git runs it without
	// harnessd (so each blocked case above is the protection, not a dud).
	g.run("control", func(t *testing.T) {
		outDir := t.TempDir()
		ran, tried := 0, 0
		for _, tr := range gitTriggers() {
			switch tr.name {
			case "pager", "ext-transport", "git-proxy", "ssh-command", "uploadpack":
				continue // need a tty or a remote; shown through harnessd only
			}
			tried++
			r := codeExecRepo(t)
			p := newPayload(t, "ctl-"+tr.name, outDir, r, bc)
			args, cwd := tr.plant(t, r, p)
			dir := filepath.Join(r, cwd)
			cmd := execGit(dir, append([]string{"-c", "safe.bareRepository=all"}, args...)...)
			_ = cmd.Run()
			if _, err := os.Stat(p.markers()[0]); err == nil {
				ran++
			} else {
				t.Logf("control: git %v did not run the planted %s program on its own", args, tr.name)
			}
		}
		if ran < tried-3 {
			t.Fatalf("only %d of %d planted programs run under plain git: the payloads are broken", ran, tried)
		}
	})
}

// progCase is a Fast Path command that tries to run the planted payload or
// to write somewhere.
type progCase struct {
	name  string
	argv  func(p payload) []string
	needs []string
	setup func(t *testing.T, repo string, p payload)
}

// progRepo is a checkout with the payload planted as files an agent could
// have written: a script, a command list, a fake git and cat, a Go package
// with a generate directive, a sort input that is a shell script.
func progRepo(t *testing.T, outDir string, bc *beacon, id string) (string, payload) {
	repo := testutil.Repo(t, map[string]string{"README.md": "# demo\n", "bad.go": "package x\nfunc  F( ) {}\n"})
	p := newPayload(t, id, outDir, repo, bc)
	script := "#!/bin/sh\n" + p.sh() + "\n"
	writeFile(t, filepath.Join(repo, "run.sh"), script, 0o755)
	writeFile(t, filepath.Join(repo, "git"), script, 0o755)
	writeFile(t, filepath.Join(repo, "tools", "cat"), script, 0o755)
	writeFile(t, filepath.Join(repo, "tools", "git-pwn"), script, 0o755)
	writeFile(t, filepath.Join(repo, "cmds.txt"), p.sh()+"\n", 0o644)
	writeFile(t, filepath.Join(repo, "runlist.txt"), "run.sh\n", 0o644)
	writeFile(t, filepath.Join(repo, "go.mod"), "module example.com/x\n\ngo 1.21\n", 0o644)
	writeFile(t, filepath.Join(repo, "gen.go"), "package x\n\n//go:generate sh run.sh\n", 0o644)
	var big strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&big, "# %06d %s\n", i, strings.Repeat("pad", 60))
	}
	big.WriteString(strings.ReplaceAll(p.sh(), "/usr/bin/curl", "true") + "\n")
	writeFile(t, filepath.Join(repo, "big.txt"), big.String(), 0o644)
	gitq(t, repo, "add", "-A")
	gitq(t, repo, "commit", "-q", "-m", "agent files")
	// A crafted file name that a find -exec sh -c '... {} ...' runs.
	writeFile(t, filepath.Join(repo, "x;echo "+reverse(p.token)+"|rev;touch pwn-"+id), "", 0o644)
	return repo, p
}

func progCases() []progCase {
	sh := func(p payload) string { return p.sh() + "true" }
	out := func(p payload) string { return p.markers()[0] }
	rel := func(p payload) string { return "pwn-" + p.id }
	modREADME := func(t *testing.T, repo string, _ payload) { testutil.WriteFile(t, repo, "README.md", "changed\n") }
	return []progCase{
		// Programs that run other programs.
		{name: "sort-co", argv: func(p payload) []string { return []string{"sort", "--co=sh", "-S", "64K", "big.txt"} }},
		{name: "sort-compress-prog", argv: func(p payload) []string { return []string{"sort", "--compress-prog=sh", "-S", "64K", "big.txt"} }},
		{name: "sort-compress-program", argv: func(p payload) []string { return []string{"sort", "--compress-program", "sh", "-S", "64K", "big.txt"} }},
		{name: "rg-pre", needs: []string{"rg"}, argv: func(p payload) []string { return []string{"rg", "--pre=sh", "-g", "run.sh", "PWNED"} }},
		{name: "rg-pre-sep", needs: []string{"rg"}, argv: func(p payload) []string { return []string{"rg", "--pre", "sh", "PWNED", "run.sh"} }},
		{name: "git-grep-O", argv: func(p payload) []string { return []string{"git", "grep", "-Osh", "-e", "PWNED"} }},
		{name: "git-grep-open-files-in-pager", argv: func(p payload) []string {
			return []string{"git", "grep", "--open-files-in-pager=sh", "PWNED"}
		}},
		{name: "git-difftool-extcmd", setup: modREADME, argv: func(p payload) []string {
			return []string{"git", "difftool", "-y", "--extcmd=sh run.sh"}
		}},
		{name: "sed-e-command", argv: func(p payload) []string { return []string{"sed", "1e sh run.sh", "README.md"} }},
		{name: "sed-s-e-flag", argv: func(p payload) []string { return []string{"sed", "s/.*/sh run.sh/e", "README.md"} }},
		{name: "find-exec-sh-file", argv: func(p payload) []string {
			return []string{"find", ".", "-maxdepth", "1", "-name", "run.sh", "-exec", "sh", "{}", ";"}
		}},
		{name: "find-execdir-plus", argv: func(p payload) []string {
			return []string{"find", ".", "-maxdepth", "1", "-name", "run.sh", "-execdir", "sh", "{}", "+"}
		}},
		{name: "find-crafted-name", argv: func(p payload) []string {
			return []string{"find", ".", "-maxdepth", "1", "-name", "x;*", "-exec", "sh", "-c", "echo {}", ";"}
		}},
		{name: "xargs-I-sh", argv: func(p payload) []string { return []string{"xargs", "-a", "cmds.txt", "-I{}", "sh", "-c", "{}"} }},
		{name: "xargs-I-sh-echo", setup: func(t *testing.T, repo string, p payload) {
			writeFile(t, filepath.Join(repo, "names.txt"), "x; sh run.sh\n", 0o644)
		}, argv: func(p payload) []string { return []string{"xargs", "-a", "names.txt", "-I{}", "sh", "-c", "echo {}"} }},
		{name: "xargs-sh-file", argv: func(p payload) []string { return []string{"xargs", "-a", "runlist.txt", "sh"} }},
		{name: "git-c-fsmonitor", argv: func(p payload) []string { return []string{"git", "-c", "core.fsmonitor=" + sh(p), "status"} }},
		{name: "git-c-alias", argv: func(p payload) []string { return []string{"git", "-c", "alias.x=!" + sh(p), "x"} }},
		{name: "git-config-env", argv: func(p payload) []string {
			return []string{"env", "EVIL=" + sh(p), "git", "--config-env=core.fsmonitor=EVIL", "status"}
		}},
		{name: "env-git-config-count", argv: func(p payload) []string {
			return []string{"env", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=" + sh(p), "git", "status"}
		}},
		{name: "env-git-config-parameters", argv: func(p payload) []string {
			return []string{"env", "GIT_CONFIG_PARAMETERS='core.fsmonitor'='" + sh(p) + "'", "git", "status"}
		}},
		{name: "env-git-external-diff", setup: modREADME, argv: func(p payload) []string {
			return []string{"env", "GIT_EXTERNAL_DIFF=" + sh(p), "git", "diff"}
		}},
		{name: "env-git-ssh-command", argv: func(p payload) []string {
			return []string{"env", "GIT_SSH_COMMAND=" + sh(p), "GIT_CONFIG_COUNT=0", "git", "ls-remote", "ssh://git@127.0.0.1:1/x"}
		}},
		{name: "env-git-pager", argv: func(p payload) []string { return []string{"env", "GIT_PAGER=" + sh(p), "git", "-p", "log", "-1"} }},
		{name: "env-git-exec-path", argv: func(p payload) []string { return []string{"env", "GIT_EXEC_PATH=tools", "git", "pwn"} }},
		{name: "env-path-git-subcommand", argv: func(p payload) []string { return []string{"env", "PATH=tools:/usr/bin:/bin", "git", "pwn"} }},
		{name: "bash-env", needs: []string{"bash"}, argv: func(p payload) []string { return []string{"env", "BASH_ENV=run.sh", "bash", "-c", "true"} }},
		{name: "bash-ps4", needs: []string{"bash"}, argv: func(p payload) []string { return []string{"env", "PS4=$(sh run.sh)", "bash", "-x", "-c", "true"} }},
		{name: "bash-shellopts", needs: []string{"bash"}, argv: func(p payload) []string {
			return []string{"env", "SHELLOPTS=xtrace", "PS4=$(sh run.sh)", "bash", "-c", "true"}
		}},
		{name: "spoofed-git-env", argv: func(p payload) []string { return []string{"env", "./git", "status"} }},
		{name: "spoofed-git-timeout", argv: func(p payload) []string { return []string{"timeout", "5", "./git", "status"} }},
		{name: "spoofed-git-nice", argv: func(p payload) []string { return []string{"nice", "./git", "status"} }},
		{name: "spoofed-git-sh", argv: func(p payload) []string { return []string{"sh", "-c", "./git status"} }},
		{name: "spoofed-git-find", argv: func(p payload) []string {
			return []string{"find", ".", "-maxdepth", "0", "-exec", "./git", "status", ";"}
		}},
		{name: "spoofed-git-path", argv: func(p payload) []string { return []string{"env", "PATH=.:/usr/bin:/bin", "git", "status"} }},
		{name: "spoofed-cat", argv: func(p payload) []string { return []string{"./tools/cat", "README.md"} }},
		{name: "spoofed-cat-env", argv: func(p payload) []string { return []string{"env", "tools/cat", "README.md"} }},
		{name: "spoofed-cat-sh", argv: func(p payload) []string { return []string{"sh", "-c", "tools/cat README.md"} }},
		{name: "spoofed-cat-path", argv: func(p payload) []string { return []string{"env", "PATH=tools:/usr/bin:/bin", "cat", "README.md"} }},
		{name: "go-list-toolexec", needs: []string{"go"}, argv: func(p payload) []string {
			return []string{"go", "list", "-toolexec=" + p.repo + "/run.sh", "-export", "."}
		}},
		{name: "go-vet-vettool", needs: []string{"go"}, argv: func(p payload) []string { return []string{"go", "vet", "-vettool=" + p.repo + "/run.sh", "."} }},
		{name: "go-generate", needs: []string{"go"}, argv: func(p payload) []string { return []string{"go", "generate", "./..."} }},
		{name: "pip-python", needs: []string{"pip"}, argv: func(p payload) []string { return []string{"pip", "--python=./run.sh", "list"} }},
		{name: "cargo-rustc", needs: []string{"cargo"}, setup: func(t *testing.T, repo string, p payload) {
			writeFile(t, filepath.Join(repo, ".cargo", "config.toml"), "[build]\nrustc = \""+repo+"/run.sh\"\nrustc-wrapper = \""+repo+"/run.sh\"\n", 0o644)
			writeFile(t, filepath.Join(repo, "Cargo.toml"), "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n", 0o644)
			writeFile(t, filepath.Join(repo, "src", "lib.rs"), "", 0o644)
		}, argv: func(p payload) []string { return []string{"cargo", "metadata", "--format-version", "1", "--offline"} }},

		// Programs that write files.
		{name: "sh-redirect-out", argv: func(p payload) []string { return []string{"sh", "-c", "echo x > " + out(p)} }},
		{name: "sh-redirect-repo", argv: func(p payload) []string { return []string{"sh", "-c", "echo x > " + rel(p)} }},
		{name: "sh-append-readme", argv: func(p payload) []string { return []string{"sh", "-c", "echo x >> README.md"} }},
		{name: "sh-redirect-git", argv: func(p payload) []string { return []string{"sh", "-c", "echo x > .git/hooks/pre-commit"} }},
		{name: "tee-out", argv: func(p payload) []string { return []string{"tee", out(p)} }},
		{name: "tee-repo", argv: func(p payload) []string { return []string{"tee", rel(p)} }},
		{name: "tee-append", argv: func(p payload) []string { return []string{"tee", "-a", "README.md"} }},
		{name: "tee-pipe", argv: func(p payload) []string { return []string{"sh", "-c", "cat README.md | tee " + rel(p)} }},
		{name: "cp-out", argv: func(p payload) []string { return []string{"cp", "README.md", out(p)} }},
		{name: "cp-repo", argv: func(p payload) []string { return []string{"cp", "README.md", rel(p)} }},
		{name: "sort-o", argv: func(p payload) []string { return []string{"sort", "-o", out(p), "README.md"} }},
		{name: "sort-o-glued", argv: func(p payload) []string { return []string{"sort", "-o" + rel(p), "README.md"} }},
		{name: "sort-output-abbrev", argv: func(p payload) []string { return []string{"sort", "--out=" + rel(p), "README.md"} }},
		{name: "uniq-output", argv: func(p payload) []string { return []string{"uniq", "README.md", out(p)} }},
		{name: "git-diff-output", setup: modREADME, argv: func(p payload) []string { return []string{"git", "diff", "--output=" + out(p)} }},
		{name: "git-log-output", argv: func(p payload) []string { return []string{"git", "log", "--output=" + rel(p)} }},
		{name: "git-archive-o", argv: func(p payload) []string { return []string{"git", "archive", "-o", out(p), "HEAD"} }},
		{name: "git-archive-output-abbrev", argv: func(p payload) []string { return []string{"git", "archive", "--outp=" + rel(p), "HEAD"} }},
		{name: "git-bundle", argv: func(p payload) []string { return []string{"git", "bundle", "create", out(p), "HEAD"} }},
		{name: "git-format-patch-o", argv: func(p payload) []string { return []string{"git", "format-patch", "-1", "-o", out(p)} }},
		{name: "git-hash-object-w", argv: func(p payload) []string { return []string{"git", "hash-object", "-w", "--stdin"} }},
		{name: "git-config-set", argv: func(p payload) []string { return []string{"git", "config", "user.name", "pwned"} }},
		{name: "git-tag", argv: func(p payload) []string { return []string{"git", "tag", "pwned"} }},
		{name: "git-update-ref", argv: func(p payload) []string { return []string{"git", "update-ref", "refs/heads/pwned", "HEAD"} }},
		{name: "git-notes", argv: func(p payload) []string { return []string{"git", "notes", "add", "-m", "pwned"} }},
		{name: "git-worktree-add", argv: func(p payload) []string { return []string{"git", "worktree", "add", out(p)} }},
		{name: "git-stash", setup: modREADME, argv: func(p payload) []string { return []string{"git", "stash"} }},
		{name: "find-fprint", argv: func(p payload) []string { return []string{"find", ".", "-maxdepth", "0", "-fprint", out(p)} }},
		{name: "find-fprint-repo", argv: func(p payload) []string { return []string{"find", ".", "-maxdepth", "0", "-fprintf", rel(p), "x"} }},
		{name: "find-delete", argv: func(p payload) []string { return []string{"find", ".", "-name", "bad.go", "-delete"} }},
		{name: "sed-w", argv: func(p payload) []string { return []string{"sed", "-n", "w " + out(p), "README.md"} }},
		{name: "sed-s-w", argv: func(p payload) []string { return []string{"sed", "s/demo/x/w " + rel(p), "README.md"} }},
		{name: "sed-i", argv: func(p payload) []string { return []string{"sed", "-i", "s/demo/pwned/", "README.md"} }},
		{name: "file-compile", needs: []string{"file"}, argv: func(p payload) []string { return []string{"file", "-C", "-m", "README.md"} }},
		{name: "gofmt-w1", needs: []string{"gofmt"}, argv: func(p payload) []string { return []string{"gofmt", "-w=1", "bad.go"} }},
		{name: "gofmt-wt", needs: []string{"gofmt"}, argv: func(p payload) []string { return []string{"gofmt", "-w=t", "bad.go"} }},
		{name: "gofmt-l-wtrue", needs: []string{"gofmt"}, argv: func(p payload) []string { return []string{"gofmt", "-l", "-w=true", "bad.go"} }},
		{name: "gofmt-w", needs: []string{"gofmt"}, argv: func(p payload) []string { return []string{"gofmt", "-w", "bad.go"} }},
		{name: "bash-history-out", needs: []string{"bash"}, argv: func(p payload) []string { return []string{"bash", "-c", "history -w " + out(p)} }},
		{name: "bash-history-repo", needs: []string{"bash"}, argv: func(p payload) []string {
			return []string{"bash", "-c", "set -o history; echo hi; history -w " + rel(p)}
		}},
		{name: "bash-history-append", needs: []string{"bash"}, argv: func(p payload) []string { return []string{"bash", "-c", "history -a " + p.markers()[2]} }},
		{name: "touch-out", argv: func(p payload) []string { return []string{"touch", out(p)} }},
		{name: "mkdir-out", argv: func(p payload) []string { return []string{"mkdir", out(p)} }},
		{name: "ln-repo", argv: func(p payload) []string { return []string{"ln", "-s", "README.md", rel(p)} }},
	}
}

// Category 1, continued: programs that run other programs or write files,
// dressed as read-only commands.
func TestAttackCodeExecPrograms(t *testing.T) {
	need(t, "curl")
	t.Parallel()
	// Subtests run from goroutines, not t.Parallel: -parallel defaults
	// to GOMAXPROCS (2 here), and these mostly wait on the daemon.
	g := newGroup(t, 8)
	defer g.wait()
	a := newAtk(t)
	bc := newBeacon(t)
	for _, pc := range progCases() {
		g.run(pc.name, func(t *testing.T) {
			need(t, pc.needs...)
			outDir := t.TempDir()
			repo, p := progRepo(t, outDir, bc, pc.name)
			if pc.setup != nil {
				pc.setup(t, repo, p)
			}
			before := snapshot(t, repo)
			id := a.register(t, repo)
			argv := pc.argv(p)
			o := a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": argv, "timeout_ms": 10000})
			p.ran(t, fmt.Sprintf("run_command %q", argv), o, false)
			sameTree(t, fmt.Sprintf("run_command %q", argv), repo, before, ".git/index")
			t.Logf("%q: %s", argv, o.outcome())
		})
	}
	// Controls: outside harnessd these same commands do run the payload or
	// write (so the cases above are blocked by harnessd, not duds).
	g.run("control", func(t *testing.T) {
		outDir := t.TempDir()
		for _, name := range []string{"sort-co", "gofmt-w1", "find-crafted-name", "xargs-I-sh", "sed-e-command", "git-grep-O", "env-git-config-count", "spoofed-cat-env"} {
			for _, pc := range progCases() {
				if pc.name != name {
					continue
				}
				repo, p := progRepo(t, outDir, bc, "control-"+name)
				before := snapshot(t, repo)
				argv := pc.argv(p)
				lp, err := lookPath(argv[0], repo)
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(lp, argv[1:]...)
				cmd.Dir = repo
				cmd.Env = append(testutil.GitEnv(), "TMPDIR="+t.TempDir())
				_ = cmd.Run()
				after := snapshot(t, repo)
				changed := len(after) != len(before)
				for k, v := range before {
					if after[k] != v {
						changed = true
					}
				}
				if !changed {
					t.Errorf("control %s: %q changed nothing outside harnessd: the case proves nothing", name, argv)
				}
			}
		}
	})
}

// secretRepo is a checkout with secrets in every place an attacker would
// look, and the ids and paths the attacks need.
type secretRepo struct {
	root, id string
	// head is in .env at HEAD and in the work tree; head2 too (another
	// key); old was in .env one commit before (rotated, still in
	// history); prod is in an untracked config/.env.production; key is
	// the body of a committed private key.
	// head3 sits under a key that names no secret (SESSION_SIGNER): only
	// the known-value redaction can catch it; old sat under it too.
	head, head2, head3, old, prod, key string
	// out is in a file outside the root (outFile); home in a file under
	// $HOME (homeFile, "" when HOME is not writable).
	out, outFile, home, homeFile string
	// public is in README.md: not a secret (the positive controls).
	public                        string
	headBlob, oldBlob, readmeBlob string
	hardOut, hardEnv              bool // hard links made
	// remote is a token in the remote URL of .git/config (readable: git
	// needs it), redacted as a known value.
	remote string
}

func objPath(blob string) string { return ".git/objects/" + blob[:2] + "/" + blob[2:] }

func newSecretRepo(t *testing.T) *secretRepo {
	t.Helper()
	s := &secretRepo{head: newSecret(t), head2: newSecret(t), head3: newSecret(t), old: newSecret(t), prod: newSecret(t), key: newSecret(t),
		out: newSecret(t), home: newSecret(t), public: "public" + newSecret(t), remote: newSecret(t)}
	s.root = testutil.Repo(t, map[string]string{
		"README.md":  "# demo " + s.public + "\n",
		".env":       "SESSION_SIGNER=" + s.old + "\n",
		"src/app.go": "package app\n",
	})
	s.oldBlob = gitq(t, s.root, "rev-parse", "HEAD:.env")
	testutil.WriteFile(t, s.root, ".env", "API_TOKEN="+s.head+"\nDB_PASSWORD="+s.head2+"\nSESSION_SIGNER="+s.head3+"\n")
	testutil.WriteFile(t, s.root, "deploy/server.key", "-----BEGIN PRIVATE KEY-----\n"+s.key+s.key+"\n-----END PRIVATE KEY-----\n")
	gitq(t, s.root, "add", "-A")
	gitq(t, s.root, "commit", "-q", "-m", "rotate the token")
	s.headBlob = gitq(t, s.root, "rev-parse", "HEAD:.env")
	s.readmeBlob = gitq(t, s.root, "rev-parse", "HEAD:README.md")
	gitq(t, s.root, "remote", "add", "origin", "https://bob:"+s.remote+"@git.example/x/y.git")
	testutil.WriteFile(t, s.root, "config/.env.production", "PROD_KEY="+s.prod+"\n")
	outDir := t.TempDir()
	s.outFile = filepath.Join(outDir, "secret.txt")
	writeFile(t, s.outFile, "outside "+s.out+"\n", 0o600)
	if h := homeDir(t); h != "" {
		s.homeFile = filepath.Join(h, "credentials")
		writeFile(t, s.homeFile, "aws_secret_access_key = "+s.home+"\n", 0o600)
	}
	if err := os.MkdirAll(filepath.Join(s.root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Hard links a user left in the checkout: to a file outside it, and
	// to its own .env.
	s.hardOut = os.Link(s.outFile, filepath.Join(s.root, "docs", "notes.txt")) == nil
	s.hardEnv = os.Link(filepath.Join(s.root, ".env"), filepath.Join(s.root, "docs", "env-copy.txt")) == nil
	// Symbolic links to the same.
	if err := os.Symlink(s.outFile, filepath.Join(s.root, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(s.root, "link-env")); err != nil {
		t.Fatal(err)
	}
	return s
}

// all are the secret values (not public).
func (s *secretRepo) all() []string {
	v := []string{s.head, s.head2, s.head3, s.old, s.prod, s.key, s.out}
	if s.homeFile != "" {
		v = append(v, s.home)
	}
	return v
}

type leakCase struct {
	name  string
	argv  []string // run_command, unless tool is set
	tool  string
	args  map[string]any
	needs []string
	skip  string // why the case cannot run here ("" = it can)
	// checks: the secrets that must not come back (default: all).
	secrets []string
	// outputOnly checks the command's output only: the argv holds the
	// value (the attacker searches for it) and results may echo it.
	outputOnly bool
}

// Category 2: secrets in the checkout, in its history and outside it never
// come back, whatever the channel.
func TestAttackSecrets(t *testing.T) {
	need(t, "git")
	t.Parallel()
	// Subtests run from goroutines, not t.Parallel: -parallel defaults
	// to GOMAXPROCS (2 here), and these mostly wait on the daemon.
	g := newGroup(t, 8)
	defer g.wait()
	a := newAtk(t)
	s := newSecretRepo(t)
	s.id = a.register(t, s.root)
	rel, _ := filepath.Rel(s.root, s.outFile)
	tok := a.paths.Token
	dpid := strconv.Itoa(a.pid())
	run := func(name string, argv ...string) leakCase { return leakCase{name: name, argv: argv} }
	cases := []leakCase{
		// Secret files of the work tree, by name, glob and option.
		run("cat", "cat", ".env"),
		run("cat-dotslash", "cat", "./.env"),
		run("cat-dotdot", "cat", "src/../.env"),
		run("sh-cat", "sh", "-c", "cat .env"),
		run("sh-cat-glob", "sh", "-c", "cat .en?"),
		run("sh-cat-star", "sh", "-c", "cat .e*"),
		run("sh-cat-brace", "sh", "-c", "cat .{e,x}nv"),
		run("sh-cat-redirect", "sh", "-c", "cat < .env"),
		run("sh-cat-var", "sh", "-c", "f=.env; cat $f"),
		run("sh-cat-var-split", "sh", "-c", "f=.en; cat ${f}v"),
		run("sh-cat-var-split-key", "sh", "-c", "f=server.k; cat deploy/${f}ey"),
		run("sh-base64-var-split", "sh", "-c", "f=.en; base64 -w0 ${f}v"),
		run("sh-rev-glob", "sh", "-c", "rev .en?"),
		run("date-f-glued", "date", "-f.env"),
		run("date-f", "date", "-f", ".env"),
		run("date-file-long", "date", "--file=.env"),
		run("xargs-a-glued", "xargs", "-a.env", "echo"),
		run("xargs-a", "xargs", "-a", ".env", "echo"),
		run("xargs-arg-file-abbrev", "xargs", "--arg=.env", "echo"),
		run("sh-base64-glob", "sh", "-c", "base64 -w0 .en?"),
		{name: "sh-xxd-glob", argv: []string{"sh", "-c", "xxd -p .en?"}, needs: []string{"xxd"}},
		run("sh-od-glob", "sh", "-c", "od -An -c .en?"),
		run("od-hex", "od", "-An", "-tx1", ".env"),
		run("sh-tr-glob", "sh", "-c", "tr A-Za-z N-ZA-Mn-za-m < .en?"),
		{name: "bash-tr-glob", argv: []string{"bash", "-c", "tr A-Za-z N-ZA-Mn-za-m < .en?"}, needs: []string{"bash"}},
		{name: "bash-redirect-glob", argv: []string{"bash", "-c", "rev < .e*v"}, needs: []string{"bash"}},
		run("sh-fold-glob", "sh", "-c", "fold -w4 .en?"),
		run("sh-prod-glob", "sh", "-c", "cat config/.env.prod*"),
		run("cat-key", "head", "-c", "300", "deploy/server.key"),
		run("sh-key-glob", "sh", "-c", "cat deploy/*.key"),
		run("sh-find-cat", "sh", "-c", "find . -name '.env*' -exec cat {} +"),
		run("find-exec-cat", "find", ".", "-name", ".env*", "-exec", "cat", "{}", "+"),
		run("sort", "sort", ".env"),
		{name: "jq-rawfile", argv: []string{"jq", "-n", "--rawfile", "a", ".env", "$a"}, needs: []string{"jq"}},
		run("diff-env", "diff", "/dev/null", ".env"),
		run("cmp-env", "cmp", "-l", "/dev/null", ".env"),
		// Recursive searches that override harnessd's exclusions.
		run("grep-r", "grep", "-r", "API_TOKEN", "."),
		run("grep-r-include-all", "grep", "-r", "--include=*", "API_TOKEN", "."),
		run("grep-r-include-env", "grep", "-r", "--include=.env", "-e", "API_TOKEN", "."),
		run("grep-r-a", "grep", "-r", "-a", "-h", "=", "."),
		run("sh-grep-r-rev", "sh", "-c", "grep -r -a -h = . | rev"),
		{name: "rg-uuu", argv: []string{"rg", "-uuu", "-g*", "API_TOKEN"}, needs: []string{"rg"}},
		{name: "rg-uuu-env", argv: []string{"rg", "-uuu", "--hidden", "--no-ignore", "-g", ".env", "-g", "**/.env*", "="}, needs: []string{"rg"}},
		{name: "rg-glob-override", argv: []string{"rg", "-uuu", "--glob-case-insensitive", "-g", ".ENV", "="}, needs: []string{"rg"}},
		{name: "rg-files", argv: []string{"rg", "-uuu", "--no-ignore-files", "-a", "=", "."}, needs: []string{"rg"}},
		{name: "rg-uuu-value", argv: []string{"rg", "-uuu", "-g*", s.head3}, needs: []string{"rg"}, outputOnly: true},
		{name: "rg-uuu-value-history", argv: []string{"rg", "-uuu", "-g*", "-z", "-a", s.old}, needs: []string{"rg"}, outputOnly: true},
		{name: "grep-r-include-value", argv: []string{"grep", "-r", "--include=*", s.head3, "."}, outputOnly: true},
		{name: "grep-r-value-prefix", argv: []string{"grep", "-r", "-o", s.head3[:8] + ".*", "."}, secrets: []string{s.head3[8:]}},
		{name: "git-grep-value-history", argv: []string{"git", "grep", "-e", s.old[:8], "HEAD~1"}, secrets: []string{s.old[8:]}},
		{name: "git-log-S-value", argv: []string{"git", "log", "-p", "-S" + s.old[:8]}, secrets: []string{s.old[8:]}},
		{name: "search-value", tool: "search", args: map[string]any{"query": s.head3}, outputOnly: true},
		// Committed secrets through git plumbing (HEAD and history).
		run("git-cat-file-p", "git", "cat-file", "-p", s.headBlob),
		run("git-cat-file-blob", "git", "cat-file", "blob", s.headBlob),
		run("git-show-blob", "git", "show", s.headBlob),
		run("git-show-rev-path", "git", "show", "HEAD:.env"),
		run("git-show-index", "git", "show", ":.env"),
		run("git-archive", "git", "archive", "HEAD"),
		run("git-archive-zip0", "git", "archive", "--format=zip", "-0", "HEAD"),
		run("sh-git-archive-tgz-b64", "sh", "-c", "git archive --format=tar.gz HEAD | base64 -w0"),
		run("git-diff-tree-root", "git", "diff-tree", "-p", "--root", "HEAD"),
		run("git-diff-tree-history", "git", "diff-tree", "-p", "HEAD~1", "HEAD"),
		run("git-log-p-full-diff", "git", "log", "-p", "--full-diff"),
		run("git-log-p-all", "git", "log", "-p", "--all"),
		run("git-format-patch", "git", "format-patch", "--stdout", "--root", "HEAD"),
		run("git-fast-export", "git", "fast-export", "--all"),
		run("git-cat-file-batch-all", "git", "cat-file", "--batch-all-objects", "--batch"),
		run("sh-git-cat-file-batch", "sh", "-c", "echo "+s.headBlob+" | git cat-file --batch"),
		run("git-grep-head", "git", "grep", "-e", "API_TOKEN", "HEAD"),
		run("git-grep-history", "git", "grep", "-e", "=", "HEAD~1"),
		run("git-diff-history", "git", "diff", "HEAD~1", "HEAD"),
		run("git-show-old-rev-path", "git", "show", "HEAD~1:.env"),
		run("git-cat-file-old-blob", "git", "cat-file", "-p", s.oldBlob),
		run("sh-git-cat-file-rev", "sh", "-c", "git cat-file -p "+s.headBlob+" | rev"),
		run("sh-git-cat-file-b64", "sh", "-c", "git cat-file -p "+s.headBlob+" | base64"),
		run("sh-git-cat-file-od", "sh", "-c", "git cat-file -p "+s.headBlob+" | od -c"),
		run("sh-git-cat-file-rot13", "sh", "-c", "git cat-file -p "+s.headBlob+" | tr A-Za-z N-ZA-Mn-za-m"),
		run("sh-git-cat-file-cut", "sh", "-c", "git cat-file -p "+s.headBlob+" | cut -c11-22"),
		run("sh-loose-object-b64", "sh", "-c", "base64 -w0 "+objPath(s.headBlob)),
		run("loose-object-od", "od", "-An", "-tx1", "-v", objPath(s.headBlob)),
		run("loose-object-cat", "cat", objPath(s.headBlob)),
		run("sh-old-loose-object-b64", "sh", "-c", "base64 -w0 "+objPath(s.oldBlob)),
		// Files outside the root.
		run("cat-out", "cat", s.outFile),
		run("cat-out-rel", "cat", rel),
		run("sh-cat-out", "sh", "-c", "cat "+s.outFile),
		run("sh-cat-out-glob", "sh", "-c", "cat "+filepath.Dir(s.outFile)+"/secr*"),
		run("sh-cd-cat-out", "sh", "-c", "cd / && cat "+strings.TrimPrefix(s.outFile, "/")),
		run("head-out", "head", s.outFile),
		run("sh-cat-out-var-rel", "sh", "-c", "d=..; cat "+dynRel(rel)),
		run("date-f-out", "date", "-f"+s.outFile),
		run("xargs-a-out", "xargs", "-a"+s.outFile, "echo"),
		{name: "jq-rawfile-out", argv: []string{"jq", "-n", "--rawfile", "a", s.outFile, "$a"}, needs: []string{"jq"}},
		run("git-no-index-out", "git", "diff", "--no-index", "/dev/null", s.outFile),
		run("proc-self-root-out", "cat", "/proc/self/root"+s.outFile),
		run("proc-daemon-root-out", "cat", "/proc/"+dpid+"/root"+s.outFile),
		run("symlink-out", "cat", "link-out"),
		run("symlink-env", "cat", "link-env"),
		{name: "hardlink-out", argv: []string{"cat", "docs/notes.txt"}, skip: skipIf(!s.hardOut, "no hard link across file systems")},
		{name: "sh-hardlink-out-rev", argv: []string{"sh", "-c", "rev docs/notes.txt"}, skip: skipIf(!s.hardOut, "no hard link across file systems")},
		{name: "hardlink-env", argv: []string{"cat", "docs/env-copy.txt"}, skip: skipIf(!s.hardEnv, "no hard link")},
		{name: "sh-hardlink-env-rev", argv: []string{"sh", "-c", "rev docs/env-copy.txt"}, skip: skipIf(!s.hardEnv, "no hard link")},
		// A token in the remote URL: git needs its config, so only
		// redaction stands (a transform such as rev gets past it, see the
		// README).
		{name: "git-remote-v", argv: []string{"git", "remote", "-v"}, secrets: []string{s.remote}},
		{name: "git-config-list", argv: []string{"git", "config", "--list"}, secrets: []string{s.remote}},
		{name: "sh-git-config-b64", argv: []string{"sh", "-c", "git config --get remote.origin.url | base64 -w0"}, secrets: []string{s.remote}},
		{name: "sh-git-config-hex", argv: []string{"sh", "-c", "git config --get remote.origin.url | od -An -tx1 | tr -d ' \\n'"}, secrets: []string{s.remote}},
		{name: "git-remote-op", tool: "run_command", args: map[string]any{"argv": []string{"git", "ls-remote", "--get-url", "origin"}}, secrets: []string{s.remote}},
		// A directory walk names no link: only the sandbox can close it.
		{name: "sh-grep-r-hardlink-env-rev", argv: []string{"sh", "-c", "grep -r -a -h = docs | rev"}, skip: skipIf(!s.hardEnv, "no hard link")},
		{name: "sh-cat-glob-hardlink-env-rev", argv: []string{"sh", "-c", "cat docs/env* | rev"}, skip: skipIf(!s.hardEnv, "no hard link")},
		{name: "find-exec-hardlink-env-rev", argv: []string{"sh", "-c", "find docs -name 'env*' -exec cat {} + | rev"}, skip: skipIf(!s.hardEnv, "no hard link")},
		{name: "cat-home", argv: []string{"cat", s.homeFile}, skip: skipIf(s.homeFile == "", "HOME not writable")},
		{name: "sh-cat-home-glob", argv: []string{"sh", "-c", "cat " + filepath.Dir(s.homeFile) + "/cred*"}, skip: skipIf(s.homeFile == "", "HOME not writable")},
		// The daemon's own files.
		{name: "cat-token", argv: []string{"cat", tok}, secrets: []string{a.token}},
		{name: "sh-cat-token-var", argv: []string{"sh", "-c", "d=..; cat " + dynRel(relTo(s.root, tok))}, secrets: []string{a.token}},
		{name: "sh-cat-home-var", argv: []string{"sh", "-c", "d=..; cat " + dynRel(relTo(s.root, s.homeFile))}, skip: skipIf(s.homeFile == "", "HOME not writable")},
		{name: "sh-cat-token-glob", argv: []string{"sh", "-c", "cat " + a.dataDir + "/tok*"}, secrets: []string{a.token}},
		{name: "head-token", argv: []string{"head", "-c", "64", tok}, secrets: []string{a.token}},
		{name: "proc-daemon-root-token", argv: []string{"cat", "/proc/" + dpid + "/root" + tok}, secrets: []string{a.token}},
		{name: "grep-store", argv: []string{"grep", "-r", "-a", "-h", "-o", "[a-f0-9]\\{64\\}", a.dataDir}, secrets: []string{a.token}},
		{name: "sh-cat-store", argv: []string{"sh", "-c", "cat " + a.dataDir + "/store/*"}},
		{name: "read-file-token", tool: "read_file", args: map[string]any{"path": tok}, secrets: []string{a.token}},
		// harnessd's own operations.
		{name: "read-file-env", tool: "read_file", args: map[string]any{"path": ".env"}},
		{name: "read-file-dotslash-env", tool: "read_file", args: map[string]any{"path": "./.env"}},
		{name: "read-file-dotdot-env", tool: "read_file", args: map[string]any{"path": "src/../.env"}},
		{name: "read-file-prod", tool: "read_file", args: map[string]any{"path": "config/.env.production"}},
		{name: "read-file-key", tool: "read_file", args: map[string]any{"path": "deploy/server.key"}},
		{name: "read-file-symlink-env", tool: "read_file", args: map[string]any{"path": "link-env"}},
		{name: "read-file-symlink-out", tool: "read_file", args: map[string]any{"path": "link-out"}},
		{name: "read-file-hardlink-out", tool: "read_file", args: map[string]any{"path": "docs/notes.txt"}, skip: skipIf(!s.hardOut, "no hard link")},
		{name: "read-file-hardlink-env", tool: "read_file", args: map[string]any{"path": "docs/env-copy.txt"}, skip: skipIf(!s.hardEnv, "no hard link")},
		{name: "read-file-out-abs", tool: "read_file", args: map[string]any{"path": s.outFile}},
		{name: "read-file-out-rel", tool: "read_file", args: map[string]any{"path": rel}},
		{name: "read-file-git-object", tool: "read_file", args: map[string]any{"path": objPath(s.headBlob)}},
		{name: "search-key-name", tool: "search", args: map[string]any{"query": "API_TOKEN"}},
		{name: "search-assign-regex", tool: "search", args: map[string]any{"query": "[A-Z_]+=.{8,}", "regex": true}},
		{name: "search-glob-env", tool: "search", args: map[string]any{"query": "=", "glob": ".env"}},
		{name: "search-glob-any-env", tool: "search", args: map[string]any{"query": "=", "glob": "**/.env*"}},
		{name: "search-glob-docs", tool: "search", args: map[string]any{"query": "", "regex": true, "glob": "docs/*"}},
		{name: "search-secret-prefix", tool: "search", args: map[string]any{"query": s.head[:8]}, secrets: []string{s.head[8:]}},
		{name: "search-secret-prefix-ci", tool: "search", args: map[string]any{"query": strings.ToLower(s.head[:8]), "case_insensitive": true}, secrets: []string{s.head[8:]}},
		{name: "search-out-prefix", tool: "search", args: map[string]any{"query": s.out[:8]}, secrets: []string{s.out[8:]}},
		{name: "search-pem", tool: "search", args: map[string]any{"query": "BEGIN PRIVATE KEY", "max_results": 5}},
		{name: "git-diff-history-op", tool: "git_diff", args: map[string]any{"rev": "HEAD~1"}},
		{name: "git-diff-history-range-op", tool: "git_diff", args: map[string]any{"rev": "HEAD~1..HEAD"}},
		{name: "git-diff-paths-env-op", tool: "git_diff", args: map[string]any{"rev": "HEAD~1", "paths": []string{".env"}}},
		{name: "git-diff-paths-dot-op", tool: "git_diff", args: map[string]any{"rev": "HEAD~1", "paths": []string{"."}}},
	}
	for _, c := range cases {
		g.run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			need(t, c.needs...)
			var o out
			if c.tool == "" {
				o = a.run(t, s.id, c.argv...)
			} else {
				args := map[string]any{"repo_id": s.id}
				for k, v := range c.args {
					args[k] = v
				}
				o = a.tool(t, c.tool, args)
			}
			secrets := c.secrets
			if secrets == nil {
				secrets = s.all()
			}
			if c.outputOnly {
				// The value is the attacker's own query: what must not
				// come back is where it is (a match, a path, a line).
				var texts []string
				texts = append(texts, o.stdout(), o.stderr())
				if m, ok := o.m["matches"]; ok {
					b, _ := json.Marshal(m)
					texts = append(texts, string(b))
				}
				noLeakIn(t, c.name+" output", texts, secrets...)
				for _, tx := range texts {
					if strings.Contains(tx, ".env") {
						t.Errorf("LEAK: %s says where the value is: %s", c.name, o)
					}
				}
			} else {
				noLeak(t, o, secrets...)
			}
			t.Logf("%s: %s", c.name, o.outcome())
		})
	}
	// Positive controls: the same channels carry a value that is not a
	// secret, and the detector sees it through each encoding.
	g.run("control", func(t *testing.T) {
		for _, argv := range [][]string{
			{"cat", "README.md"},
			{"sh", "-c", "cat READM?.md"},
			{"sh", "-c", "base64 -w0 READM?.md"},
			{"sh", "-c", "rev READM?.md"},
			{"sh", "-c", "od -An -c READM?.md"},
			{"sh", "-c", "tr A-Za-z N-ZA-Mn-za-m < README.md"},
			{"sh", "-c", "fold -w4 READM?.md"},
			{"od", "-An", "-tx1", "README.md"},
			{"date", "-fREADME.md"},
			{"xargs", "-aREADME.md", "echo"},
			{"git", "cat-file", "-p", s.readmeBlob},
			{"sh", "-c", "git cat-file -p " + s.readmeBlob + " | rev"},
			{"sh", "-c", "base64 -w0 " + objPath(s.readmeBlob)},
			{"od", "-An", "-tx1", "-v", objPath(s.readmeBlob)},
			{"sh", "-c", "git archive --format=tar.gz HEAD README.md | base64 -w0"},
			{"git", "archive", "HEAD", "README.md"},
			{"grep", "-r", "demo", "."},
		} {
			o := a.run(t, s.id, argv...).mustWork(t)
			if leakOf(s.public, o.texts...) == "" {
				t.Errorf("control %q: the public value %q does not come back: %s", argv, s.public, o)
			}
		}
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": "README.md"}},
			{"search", map[string]any{"query": s.public[:12]}},
		} {
			args := map[string]any{"repo_id": s.id}
			for k, v := range c.args {
				args[k] = v
			}
			o := a.tool(t, c.tool, args).mustWork(t)
			if !strings.Contains(o.raw, s.public) {
				t.Errorf("control %s: the public value does not come back: %s", c.tool, o)
			}
		}
	})
}

func skipIf(cond bool, why string) string {
	if cond {
		return why
	}
	return ""
}

// secretPaths returns the secret paths among names.
func secretPaths(names string) []string {
	var out []string
	for _, p := range strings.Split(names, "\n") {
		b := filepath.Base(p)
		if strings.HasPrefix(b, ".env") || strings.HasSuffix(b, ".key") {
			out = append(out, p)
		}
	}
	return out
}

// Category 2, continued: diffs, staging and commits of a checkout whose
// secret files changed never show or stage them.
func TestAttackSecretsThroughStagingAndDiffs(t *testing.T) {
	t.Parallel()
	// Subtests run from goroutines, not t.Parallel: -parallel defaults
	// to GOMAXPROCS (2 here), and these mostly wait on the daemon.
	g := newGroup(t, 8)
	defer g.wait()
	a := newAtk(t)
	mk := func(t *testing.T) (root, id string, secrets []string) {
		head, next, local, key := newSecret(t), newSecret(t), newSecret(t), newSecret(t)
		root = testutil.Repo(t, map[string]string{".env": "API_TOKEN=" + head + "\n", "src/app.go": "package app\n", "README.md": "hi\n"})
		testutil.WriteFile(t, root, ".env", "API_TOKEN="+next+"\n") // tracked, modified
		testutil.WriteFile(t, root, "config/.env.local", "LOCAL_SECRET="+local+"\n")
		testutil.WriteFile(t, root, "deploy/tls.key", "-----BEGIN PRIVATE KEY-----\n"+key+"\n-----END PRIVATE KEY-----\n")
		testutil.WriteFile(t, root, "src/app.go", "package app\n\nvar X = 1\n")
		testutil.WriteFile(t, root, "notes.md", "notes\n")
		return root, a.register(t, root), []string{head, next, local, key}
	}
	stage := [][]string{{"."}, {"*"}, {".en?"}, {".env"}, {"./"}, {"config"}, {"**"}, {":/"}, {":(glob)**/.env*"}, {"config/.env.local"},
		{"deploy"}, {"*.key", "**/*.key"}, {"[.]env"}, {":(icase).ENV"}, {":!src"}, {"src/.."}, {"notes.md", ".env"}}
	for i, paths := range stage {
		g.run(fmt.Sprintf("git_stage%q", paths), func(t *testing.T) {
			root, id, secrets := mk(t)
			o := a.tool(t, "git_stage", map[string]any{"repo_id": id, "request_id": fmt.Sprint("stage-", i), "paths": paths})
			noLeak(t, o, secrets...)
			if got := secretPaths(gitq(t, root, "diff", "--cached", "--name-only")); len(got) > 0 {
				t.Errorf("STAGED: git_stage %q staged secret files %v: %s", paths, got, o)
			}
			// The staged state through every diff an agent can ask for.
			for _, args := range []map[string]any{{"staged": true}, {}, {"rev": "HEAD"}, {"paths": []string{"."}, "staged": true}} {
				args["repo_id"] = id
				noLeak(t, a.tool(t, "git_diff", args), secrets...)
			}
			for _, argv := range [][]string{{"git", "diff", "--cached"}, {"git", "diff", "HEAD"}, {"git", "diff", "--cached", "--", "."},
				{"git", "show", ":.env"}, {"git", "diff-index", "-p", "--cached", "HEAD"}, {"git", "diff-files", "-p"}, {"sh", "-c", "git diff --cached | rev"}} {
				noLeak(t, a.run(t, id, argv...), secrets...)
			}
			t.Logf("git_stage %q: %s", paths, o.outcome())
		})
	}
	for i, paths := range [][]string{{"."}, {".env"}, {"config"}, {"*"}, {"deploy/tls.key"}, {"src", ".en?"}} {
		g.run(fmt.Sprintf("git_commit%q", paths), func(t *testing.T) {
			root, id, secrets := mk(t)
			headEnv := gitq(t, root, "rev-parse", "HEAD:.env")
			o := a.tool(t, "git_commit", map[string]any{"repo_id": id, "request_id": fmt.Sprint("commit-", i), "message": "wip", "paths": paths})
			noLeak(t, o, secrets...)
			if got := gitq(t, root, "rev-parse", "HEAD:.env"); got != headEnv {
				t.Errorf("COMMITTED: git_commit %q committed the changed .env: %s", paths, o)
			}
			if got := secretPaths(gitq(t, root, "ls-tree", "-r", "--name-only", "HEAD")); len(got) != 1 {
				t.Errorf("COMMITTED: git_commit %q: HEAD holds secret files %v, want only the original .env: %s", paths, got, o)
			}
			t.Logf("git_commit %q: %s", paths, o.outcome())
		})
	}
	g.run("control", func(t *testing.T) {
		root, id, _ := mk(t)
		o := a.tool(t, "git_stage", map[string]any{"repo_id": id, "request_id": "stage-control", "paths": []string{"."}}).mustWork(t)
		if got := gitq(t, root, "diff", "--cached", "--name-only"); !strings.Contains(got, "src/app.go") {
			t.Fatalf("control: git_stage . did not stage src/app.go (%q): %s", got, o)
		}
		if d := a.tool(t, "git_diff", map[string]any{"repo_id": id, "staged": true}).mustWork(t); !strings.Contains(d.raw, "var X = 1") {
			t.Fatalf("control: git_diff --staged does not show the staged change: %s", d)
		}
	})
}

// Category 2, continued: the data dir inside a registered checkout (a
// dotfiles repository of $HOME holds ~/.local/share/harnessd): the token
// and the store stay closed.
func TestAttackDataDirInsideCheckout(t *testing.T) {
	t.Parallel()
	// The dotfiles case: the user's $HOME is a git repository and harnessd's
	// data dir is inside it. Registering it would let every command read
	// the human token and the store: harnessd refuses, naming the fix, and
	// no answer carries the token.
	envSecret := newSecret(t)
	repo := testutil.Repo(t, map[string]string{"README.md": "dotfiles\n", ".env": "API_TOKEN=" + envSecret + "\n", "sub/x.txt": "x\n"})
	writeFile(t, filepath.Join(repo, ".git", "info", "exclude"), ".harnessd/\n", 0o644)
	dataDir := filepath.Join(repo, ".harnessd")
	a := newAtkAt(t, dataDir)
	tok := a.token
	for _, p := range []string{repo, filepath.Join(repo, "sub"), filepath.Join(repo, ".harnessd")} {
		o := a.tool(t, "repository_register", map[string]any{"path": p})
		noLeak(t, o, tok[8:], envSecret)
		if !o.isErr || !strings.Contains(o.raw, "PATH_NOT_ALLOWED") && !strings.Contains(o.raw, "NOT_A_GIT_REPOSITORY") {
			t.Fatalf("register %s, a checkout holding the data dir: %s, want it refused", p, o)
		}
	}
	// Control: a checkout elsewhere registers.
	other := testutil.Repo(t, map[string]string{"README.md": "elsewhere\n"})
	if id := a.register(t, other); id == "" {
		t.Fatal("control: could not register a checkout without the data dir")
	}
}

// Category 2, continued: secrets in the daemon's own environment (an API
// key the user exported in the shell that started harnessd).
func TestAttackDaemonEnvironment(t *testing.T) {
	t.Parallel()
	// Subtests run from goroutines, not t.Parallel: -parallel defaults
	// to GOMAXPROCS (2 here), and these mostly wait on the daemon.
	g := newGroup(t, 8)
	defer g.wait()
	secrets := []string{newSecret(t), newSecret(t), newSecret(t), newSecret(t)}
	public := "public" + newSecret(t)
	env := []string{"AWS_SECRET_ACCESS_KEY=" + secrets[0], "GITHUB_TOKEN=" + secrets[1], "DATABASE_PASSWORD=" + secrets[2],
		"OPENAI_API_KEY=" + secrets[3], "HARNESSD_ATTACK_PUBLIC=" + public}
	dataDir := t.TempDir()
	a := &atk{dataDir: dataDir, paths: daemonPaths(dataDir)}
	a.d = startDaemonEnv(t, dataDir, env)
	a.finish(t)
	repo := testutil.Repo(t, map[string]string{"README.md": "hi\n"})
	id := a.register(t, repo)
	dpid := strconv.Itoa(a.pid())
	for _, argv := range [][]string{
		{"env"}, {"sh", "-c", "echo $GITHUB_TOKEN $AWS_SECRET_ACCESS_KEY $DATABASE_PASSWORD $OPENAI_API_KEY"}, {"sh", "-c", "set"},
		{"sh", "-c", "env | rev"}, {"cat", "/proc/self/environ"}, {"sh", "-c", "cat /proc/$PPID/environ"}, {"cat", "/proc/" + dpid + "/environ"},
		{"sh", "-c", "tr '\\0' '\\n' < /proc/" + dpid + "/environ"}, {"git", "var", "-l"},
		{"od", "-c", "/proc/" + dpid + "/environ"},
	} {
		g.run(fmt.Sprintf("%q", argv), func(t *testing.T) {
			o := a.run(t, id, argv...)
			noLeak(t, o, secrets...)
			t.Logf("%s", o.outcome())
		})
	}
	g.run("job-env", func(t *testing.T) {
		j := a.job(t, id, map[string]any{"argv": []string{"sh", "-c", "env; env | rev; d=/pro; cat ${d}c/1/environ; cat ${d}c/" + dpid + "/environ; cat ${d}c/$PPID/environ"}})
		j.noLeak(t, secrets...)
		if j.refused() {
			t.Fatalf("the job was refused: %s", j)
		}
	})
	g.run("control", func(t *testing.T) {
		if o := a.run(t, id, "env").mustWork(t); !strings.Contains(o.stdout(), public) {
			t.Errorf("control: env does not show a variable that is not secret-looking: %s", o)
		}
	})
}

// jobRepo is a fresh checkout for one job attack (a repository's recent
// failures raise the risk of its next jobs: each attack gets its own).
type jobRepo struct {
	root, id, public, envSecret, headBlob string
	a                                     *atk
}

func newJobRepo(t *testing.T, a *atk) *jobRepo {
	t.Helper()
	r := &jobRepo{public: "public" + newSecret(t), envSecret: newSecret(t), a: a}
	r.root = testutil.Repo(t, map[string]string{"README.md": "# " + r.public + "\n", ".env": "SESSION_SIGNER=" + r.envSecret + "\n"})
	r.headBlob = gitq(t, r.root, "rev-parse", "HEAD:.env")
	r.id = a.register(t, r.root)
	return r
}

// Category 3: durable jobs run untrusted and shell commands, confined by
// the job profile: nothing outside their worktree, no .git, no secrets, no
// network, and their start and end are audited.
func TestAttackDurableJobs(t *testing.T) {
	need(t, "git", "sh")
	t.Parallel()
	// Subtests run from goroutines, not t.Parallel: -parallel defaults
	// to GOMAXPROCS (2 here), and these mostly wait on the daemon.
	g := newGroup(t, 8)
	defer g.wait()
	// Each daemon runs two jobs at a time: the attacks spread over several.
	pool := []*atk{newAtk(t), newAtk(t), newAtk(t), newAtk(t), newAtk(t)}
	outDir := t.TempDir()
	outSecret := newSecret(t)
	outFile := filepath.Join(outDir, "secret.txt")
	writeFile(t, outFile, "outside "+outSecret+"\n", 0o600)
	homeSecret, homeFile := newSecret(t), ""
	if h := homeDir(t); h != "" {
		homeFile = filepath.Join(h, "credentials")
		writeFile(t, homeFile, "aws_secret_access_key = "+homeSecret+"\n", 0o600)
	}
	// abs spells an absolute path without a literal "/" for the argument
	// checks: the shell builds it, only the sandbox stands.
	abs := func(p string) string {
		return `$(printf '\057')` + strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", `$(printf '\057')`)
	}

	leaks := []struct {
		name string
		argv func(r *jobRepo) []string
		args map[string]any
	}{
		{"cat-out", func(r *jobRepo) []string { return []string{"cat", outFile} }, nil},
		{"sh-cat-out", func(r *jobRepo) []string { return []string{"sh", "-c", "cat " + outFile} }, nil},
		{"sh-cat-out-dynamic", func(r *jobRepo) []string { return []string{"sh", "-c", "cat " + abs(outFile)} }, nil},
		{"sh-cat-out-dynamic-rel", func(r *jobRepo) []string { return []string{"sh", "-c", "d=..; cat " + dynRel(relTo(r.root, outFile))} }, nil},
		{"sh-cat-out-writes", func(r *jobRepo) []string { return []string{"sh", "-c", "cat " + abs(outFile)} }, map[string]any{"writes": true}},
		{"sh-cat-out-worktree", func(r *jobRepo) []string { return []string{"sh", "-c", "cat " + abs(outFile)} }, map[string]any{"isolation": "worktree"}},
		{"sh-cat-home", func(r *jobRepo) []string {
			if homeFile == "" {
				return []string{"true"}
			}
			return []string{"sh", "-c", "cat " + abs(homeFile) + "; ls -la " + abs(filepath.Dir(homeFile))}
		}, nil},
		{"sh-find-out", func(r *jobRepo) []string {
			return []string{"sh", "-c", "find " + abs(outDir) + " -type f -exec cat {} +"}
		}, nil},
		{"sh-cat-env", func(r *jobRepo) []string { return []string{"sh", "-c", "e=.en; cat ${e}v; base64 ${e}v; od -c ${e}v"} }, nil},
		{"sh-cat-env-worktree", func(r *jobRepo) []string { return []string{"sh", "-c", "e=.en; cat ${e}v; rev ${e}v"} }, map[string]any{"isolation": "worktree"}},
		// The worktree copies untracked files: not a hard link of .env (a
		// plain file under a harmless name once copied), nor a secret file
		// made just before the job, nor any secret into the data dir.
		{"sh-cat-untracked-copies-worktree", func(r *jobRepo) []string {
			_ = os.MkdirAll(filepath.Join(r.root, "docs"), 0o755)
			_ = os.Link(filepath.Join(r.root, ".env"), filepath.Join(r.root, "docs", "env-copy.txt"))
			_ = os.MkdirAll(filepath.Join(r.root, "config"), 0o755)
			_ = os.WriteFile(filepath.Join(r.root, "config", ".env.local"), []byte("LOCAL_SIGNER="+r.envSecret+"\n"), 0o600)
			return []string{"sh", "-c", "d=doc; e=.en; rev ${d}s/env-copy.txt; rev config/${e}v.local; ls -la ${d}s config; grep -r -a -h . . | rev"}
		}, map[string]any{"isolation": "worktree"}},
		{"sh-git-show-env", func(r *jobRepo) []string { return []string{"sh", "-c", "e=.en; git show HEAD:${e}v | rev"} }, nil},
		{"sh-git-cat-file-rev", func(r *jobRepo) []string { return []string{"sh", "-c", "git cat-file -p " + r.headBlob + " | rev"} }, nil},
		{"sh-git-loose-object", func(r *jobRepo) []string { return []string{"sh", "-c", "base64 -w0 " + objPath(r.headBlob)} }, nil},
		{"sh-git-archive", func(r *jobRepo) []string {
			return []string{"sh", "-c", "git archive --format=tar.gz HEAD | base64 -w0"}
		}, nil},
		{"cat-token", func(r *jobRepo) []string { return []string{"cat", r.a.paths.Token} }, nil},
		{"sh-cat-token-dynamic", func(r *jobRepo) []string {
			return []string{"sh", "-c", "cat " + abs(r.a.paths.Token) + "; ls -la " + abs(r.a.dataDir)}
		}, nil},
		{"sh-grep-data-dir", func(r *jobRepo) []string {
			return []string{"sh", "-c", "grep -r -a -h . " + abs(r.a.dataDir) + " | head -c 100000"}
		}, nil},
	}
	for i, c := range leaks {
		a := pool[i%len(pool)]
		g.run(c.name, func(t *testing.T) {
			r := newJobRepo(t, a)
			args := map[string]any{"argv": c.argv(r)}
			for k, v := range c.args {
				args[k] = v
			}
			j := a.job(t, r.id, args)
			j.noLeak(t, outSecret, homeSecret, r.envSecret, a.token, pool[0].token)
		})
	}

	writes := []struct {
		name    string
		argv    func(r *jobRepo, m string) []string
		args    map[string]any
		markers func(r *jobRepo, m string) []string
	}{
		{"sh-write-out", func(r *jobRepo, m string) []string { return []string{"sh", "-c", "echo x > " + m} }, nil, nil},
		{"touch-out", func(r *jobRepo, m string) []string { return []string{"touch", m} }, nil, nil},
		{"sh-write-out-dynamic", func(r *jobRepo, m string) []string { return []string{"sh", "-c", "echo x > " + abs(m)} }, nil, nil},
		{"sh-write-out-dynamic-writes", func(r *jobRepo, m string) []string { return []string{"sh", "-c", "echo x > " + abs(m)} }, map[string]any{"writes": true}, nil},
		{"sh-write-out-dynamic-worktree", func(r *jobRepo, m string) []string { return []string{"sh", "-c", "echo x > " + abs(m)} }, map[string]any{"isolation": "worktree"}, nil},
		{"sh-write-home", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", "echo x > \"$HOME/.harnessd-attack-marker-" + filepath.Base(m) + "\""}
		}, map[string]any{"writes": true}, func(r *jobRepo, m string) []string {
			h, _ := os.UserHomeDir()
			return []string{filepath.Join(h, ".harnessd-attack-marker-"+filepath.Base(m))}
		}},
		{"git-init-elsewhere", func(r *jobRepo, m string) []string { return []string{"git", "init", m} }, nil, nil},
		{"sh-git-init-elsewhere-dynamic", func(r *jobRepo, m string) []string { return []string{"sh", "-c", "git init " + abs(m)} }, map[string]any{"writes": true}, nil},
		{"sh-git-clone-elsewhere", func(r *jobRepo, m string) []string { return []string{"sh", "-c", "git clone -q . " + abs(m)} }, map[string]any{"writes": true}, nil},
		{"sh-mkdir-elsewhere-rel", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", "d=..; mkdir -p " + dynRel(relTo(r.root, m))}
		}, map[string]any{"writes": true}, nil},
		{"sh-git-hooks", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", "echo '#!/bin/sh' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit"}
		}, map[string]any{"writes": true}, func(r *jobRepo, m string) []string { return []string{filepath.Join(r.root, ".git/hooks/pre-commit")} }},
		{"sh-git-hooks-dynamic", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", "g=.gi; echo '#!/bin/sh' > ${g}t/hooks/post-checkout; mkdir ${g}t/pwned"}
		}, map[string]any{"writes": true}, func(r *jobRepo, m string) []string {
			return []string{filepath.Join(r.root, ".git/hooks/post-checkout"), filepath.Join(r.root, ".git/pwned")}
		}},
		{"sh-git-config", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", "git config core.hooksPath /x; git config core.fsmonitor 'touch /x'"}
		}, map[string]any{"writes": true}, nil},
		{"git-commit", func(r *jobRepo, m string) []string {
			return []string{"git", "commit", "-q", "--allow-empty", "-m", "pwned"}
		}, map[string]any{"writes": true}, nil},
		{"sh-git-update-ref", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", "git update-ref refs/heads/pwned HEAD; git tag pwned"}
		}, map[string]any{"writes": true}, nil},
		{"sh-worktree-common-hooks", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", `c="$(git rev-parse --git-common-dir)"; echo '#!/bin/sh' > "$c/hooks/post-checkout"; git config --file "$c/config" core.hooksPath /x; echo x > "$c/pwned"`}
		}, map[string]any{"isolation": "worktree"}, func(r *jobRepo, m string) []string {
			return []string{filepath.Join(r.root, ".git/hooks/post-checkout"), filepath.Join(r.root, ".git/pwned")}
		}},
		{"sh-worktree-gitdir", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", `g="$(git rev-parse --git-dir)"; echo x > "$g/pwned"; echo ref: refs/heads/x > "$g/HEAD"`}
		}, map[string]any{"isolation": "worktree"}, nil},
		{"sh-write-env", func(r *jobRepo, m string) []string {
			return []string{"sh", "-c", "e=.en; echo SESSION_SIGNER=pwned > ${e}v; echo x >> ${e}v"}
		}, map[string]any{"writes": true}, nil},
	}
	for i, c := range writes {
		a := pool[(i+2)%len(pool)]
		g.run(c.name, func(t *testing.T) {
			r := newJobRepo(t, a)
			m := filepath.Join(t.TempDir(), "elsewhere")
			markers := []string{m}
			if c.markers != nil {
				markers = append(markers, c.markers(r, m)...)
			}
			before := snapshot(t, filepath.Join(r.root, ".git"))
			envBefore, _ := os.ReadFile(filepath.Join(r.root, ".env"))
			args := map[string]any{"argv": c.argv(r, m)}
			for k, v := range c.args {
				args[k] = v
			}
			j := a.job(t, r.id, args)
			for _, mk := range markers {
				noFile(t, "job "+c.name+" ("+j.String()+")", mk)
				os.RemoveAll(mk)
			}
			ignore := []string{"index"}
			if c.args["isolation"] == "worktree" {
				// harnessd's own git adds and removes the job's worktree.
				ignore = append(ignore, "worktrees", "logs", "objects", "refs")
			}
			sameTree(t, "job "+c.name+" ("+j.String()+")", filepath.Join(r.root, ".git"), before, ignore...)
			if envAfter, _ := os.ReadFile(filepath.Join(r.root, ".env")); string(envAfter) != string(envBefore) {
				t.Errorf("WRITE: job %s (%s) rewrote .env: %q", c.name, j, envAfter)
			}
			if c.name == "git-init-elsewhere" {
				o := a.tool(t, "repository_register", map[string]any{"path": m})
				if !o.isErr {
					t.Errorf("ESCAPE: a job's git init made %s registrable: %s", m, o)
				}
			}
			t.Logf("%s", j)
		})
	}
	g.run("git-commit-head-unchanged", func(t *testing.T) {
		a := pool[1]
		r := newJobRepo(t, a)
		head := gitq(t, r.root, "rev-parse", "HEAD")
		j := a.job(t, r.id, map[string]any{"argv": []string{"sh", "-c", "echo x > new.txt; git add new.txt; git commit -q -m pwned"}, "writes": true})
		if got := gitq(t, r.root, "rev-parse", "HEAD"); got != head {
			t.Errorf("WRITE: a writes job committed: HEAD %s -> %s (%s)", head, got, j)
		}
		t.Logf("%s", j)
	})

	// The network: a job without network approval reaches no listener of
	// the host, TCP or UDP.
	tcp, udp := newTCPTrap(t), newUDPTrap(t)
	nets := []struct {
		name  string
		needs []string
		argv  []string
	}{
		{"curl", []string{"curl"}, []string{"curl", "-s", "-m", "3", "http://127.0.0.1:" + tcp.port() + "/"}},
		{"git-ls-remote", nil, []string{"git", "ls-remote", "http://127.0.0.1:" + tcp.port() + "/x.git"}},
		{"bash-dev-tcp", []string{"bash"}, []string{"bash", "-c", "exec 3<>" + abs("/dev/tcp/127.0.0.1/"+tcp.port()) + "; echo hi >&3"}},
		{"python-socket", []string{"python3"}, []string{"python3", "-c", "import socket; s=socket.create_connection(('127.0.0.1'," + tcp.port() + "),3); s.send(b'x')"}},
		{"python-socket-ipv6-mapped", []string{"python3"}, []string{"python3", "-c", "import socket; s=socket.create_connection(('::ffff:127.0.0.1'," + tcp.port() + "),3); s.send(b'x')"}},
		{"bash-dev-udp", []string{"bash"}, []string{"bash", "-c", "echo hi > " + abs("/dev/udp/127.0.0.1/"+udp.port())}},
		{"python-udp", []string{"python3"}, []string{"python3", "-c", "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x',('127.0.0.1'," + udp.port() + "))"}},
	}
	var netWG sync.WaitGroup
	for i, c := range nets {
		a := pool[(i+1)%len(pool)]
		netWG.Add(1)
		g.run("network/"+c.name, func(t *testing.T) {
			defer netWG.Done()
			need(t, c.needs...)
			r := newJobRepo(t, a)
			j := a.job(t, r.id, map[string]any{"argv": c.argv})
			t.Logf("%s", j)
		})
	}
	g.run("network-check", func(t *testing.T) {
		netWG.Wait()
		// Accepts are in order: once the test's own probe is seen, every
		// earlier connection would have been counted.
		c, err := net.Dial("tcp", "127.0.0.1:"+tcp.port())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		eventually(t, "the probe to reach the TCP trap", func() bool { return tcp.count() >= 1 })
		if n := tcp.count(); n != 1 {
			t.Errorf("NETWORK: jobs without network approval made %d TCP connections to a host listener", n-1)
		}
		uc, err := net.Dial("udp", "127.0.0.1:"+udp.port())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = uc.Write([]byte("probe"))
		uc.Close()
		eventually(t, "the probe to reach the UDP trap", func() bool { return udp.count() >= 1 })
		if n := udp.count(); n != 1 {
			t.Errorf("NETWORK: jobs without network approval sent %d UDP datagrams to a host listener", n-1)
		}
	})

	// Positive controls: a job reads the checkout, writes where it may,
	// and with a person's approval reaches the network.
	g.run("control", func(t *testing.T) {
		a := pool[3]
		r := newJobRepo(t, a)
		j := a.job(t, r.id, map[string]any{"argv": []string{"cat", "README.md"}})
		if !strings.Contains(j.output(), r.public) {
			t.Errorf("control: cat README.md in a job: %s", j)
		}
		j = a.job(t, r.id, map[string]any{"argv": []string{"sh", "-c", "echo ok > created.txt"}, "writes": true})
		if b, _ := os.ReadFile(filepath.Join(r.root, "created.txt")); string(b) != "ok\n" {
			t.Errorf("control: a writes job could not write its checkout: %s", j)
		}
		need(t, "python3")
		trap := newTCPTrap(t)
		argv := []string{"python3", "-c", "import socket; s=socket.create_connection(('127.0.0.1'," + trap.port() + "),3); s.send(b'x')"}
		start := a.tool(t, "job_start", map[string]any{"repo_id": r.id, "request_id": "net-control", "argv": argv, "network": true, "timeout_s": 30})
		if start.code != "APPROVAL_REQUIRED" {
			t.Fatalf("control: a network job did not ask for approval: %s", start)
		}
		apr := start.str("error.details.approval_id")
		if _, err := a.human.Post(t.Context(), "/v1/approvals/"+apr+"/approve", map[string]any{"by": "test"}); err != nil {
			t.Fatalf("control: approve %s: %v", apr, err)
		}
		j = a.job(t, r.id, map[string]any{"argv": argv, "network": true, "approval_id": apr})
		if j.refused() {
			t.Fatalf("control: the approved network job was refused: %s", j)
		}
		if trap.count() == 0 {
			t.Errorf("control: the approved network job reached no listener (%s): the network cases prove nothing", j)
		}
	})

	// Audit: every job's start and end are in the audit log, which only
	// the human token reads.
	g.run("audit", func(t *testing.T) {
		a := pool[4]
		r := newJobRepo(t, a)
		j := a.job(t, r.id, map[string]any{"argv": []string{"sh", "-c", "exit 3"}})
		if j.refused() {
			t.Fatalf("job refused: %s", j)
		}
		var res struct {
			Entries []struct {
				Kind, Outcome, Actor, RequestID string
				Details                         map[string]string
			} `json:"entries"`
		}
		raw, err := a.human.Get(t.Context(), "/v1/audit?kind=job&request_id="+j.rid)
		if err != nil {
			t.Fatal(err)
		}
		if err := jsonUnmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		var started, ended bool
		for _, e := range res.Entries {
			started = started || e.Outcome == "started"
			ended = ended || (e.Outcome == "failed" && e.Details["exit_code"] == "3")
		}
		if !started || !ended {
			t.Errorf("AUDIT: the job's start (%v) and end with exit 3 (%v) are not both audited: %s", started, ended, raw)
		}
		if _, err := a.bare.Get(t.Context(), "/v1/audit?kind=job"); err == nil {
			t.Errorf("AUDIT: the audit log reads without the human token")
		}
	})
}

// pyHex spells a string for python without a literal path in the argv.
func pyHex(s string) string { return "bytes.fromhex('" + hexString(s) + "').decode()" }

// pyApprove is a python program that approves id over the daemon's unix
// socket, with the token from the data dir when it can read it.
func pyApprove(sock, tokenPath, id string) string {
	return "import socket\n" +
		"tok=''\n" +
		"try:\n tok=open(" + pyHex(tokenPath) + ").read().strip()\nexcept Exception as e: print('token:', e)\n" +
		"s=socket.socket(socket.AF_UNIX)\n" +
		"s.connect(" + pyHex(sock) + ")\n" +
		"s.send(('POST /v1/approvals/" + id + "/approve HTTP/1.0\\r\\nHost: x\\r\\nAuthorization: Bearer '+tok+'\\r\\nContent-Length: 2\\r\\n\\r\\n{}').encode())\n" +
		"print(s.recv(4096))\n"
}

// Category 4: an agent approving its own request. Approvals are for
// people, with the human token, on every transport; nothing harnessd
// starts can read the token or reach the socket.
func TestAttackSelfApproval(t *testing.T) {
	need(t, "git")
	t.Parallel()
	dataDir := t.TempDir()
	pol := "version: 1\nrules:\n  - id: ask-ls-tree\n    argv_prefix: [git, ls-tree]\n    decision: ask\n    justification: look first\n"
	writeFile(t, filepath.Join(dataDir, "policy.yaml"), pol, 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	a := newAtkAt(t, dataDir, "--listen", listen)
	bc := newBeacon(t)
	r := newJobRepo(t, a)
	// A pending approval for a Fast Path command and one for a job.
	askCmd := map[string]any{"repo_id": r.id, "argv": []string{"git", "ls-tree", "HEAD"}}
	o := a.tool(t, "run_command", askCmd)
	if o.code != "APPROVAL_REQUIRED" {
		t.Fatalf("want APPROVAL_REQUIRED, got %s", o)
	}
	aprCmd := o.str("error.details.approval_id")
	trap := newTCPTrap(t)
	netArgv := []string{"python3", "-c", "import socket; s=socket.create_connection(('127.0.0.1'," + trap.port() + "),3); s.send(b'x')"}
	askJob := map[string]any{"repo_id": r.id, "request_id": "ask-job", "argv": netArgv, "network": true, "timeout_s": 30}
	o = a.tool(t, "job_start", askJob)
	if o.code != "APPROVAL_REQUIRED" {
		t.Fatalf("want APPROVAL_REQUIRED, got %s", o)
	}
	aprJob := o.str("error.details.approval_id")
	pending := []string{aprCmd, aprJob}

	// The harness CLI, copied into the checkout as if the agent built it.
	hb, err := os.ReadFile(harnessBin)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(r.root, "tools", "harness"), string(hb), 0o755)
	// A planted fsmonitor that approves: reached through the env -u hole
	// (TestAttackCodeExecGitPrograms), it is the agent's own code on the
	// Fast Path.
	approveSh := func(id string) string {
		return fmt.Sprintf("/usr/bin/curl -s -m 3 --unix-socket %s -X POST http://h/v1/approvals/%s/approve; "+
			"/usr/bin/curl -s -m 3 --unix-socket %s -X POST -H \"Authorization: Bearer $(/usr/bin/cat %s)\" http://h/v1/approvals/%s/approve; "+
			"/usr/bin/curl -s -m 3 -X POST http://%s/v1/approvals/%s/approve; "+
			"/usr/bin/curl -s -m 2 --unix-socket %s http://b/fsm-approve >/dev/null; ", a.paths.Socket, id, a.paths.Socket, a.paths.Token, id, listen, id, bc.path)
	}
	setCfg(t, r.root, "core.fsmonitor", approveSh(aprCmd)+approveSh(aprJob)+"false")

	check := func(t *testing.T, what string) {
		t.Helper()
		var l struct {
			Approvals []struct {
				ID     string `json:"approval_id"`
				Status string `json:"status"`
			} `json:"approvals"`
		}
		raw, err := a.human.Get(t.Context(), "/v1/approvals?status=all")
		if err != nil {
			t.Fatal(err)
		}
		if err := jsonUnmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		for _, id := range pending {
			found := false
			for _, ap := range l.Approvals {
				if ap.ID == id {
					found = true
					if ap.Status != "pending" {
						t.Errorf("SELF-APPROVAL: after %s, approval %s is %s", what, id, ap.Status)
					}
				}
			}
			if !found {
				t.Errorf("approval %s not listed after %s: %s", id, what, raw)
			}
		}
	}

	t.Run("mcp-has-no-approval-tool", func(t *testing.T) {
		tools, err := a.s.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			n := strings.ToLower(tl.Name)
			for _, w := range []string{"approv", "deny", "policy", "decide", "token", "audit", "grant"} {
				if strings.Contains(n, w) {
					t.Errorf("SELF-APPROVAL: MCP tool %q can approve, deny, read the audit or change policy", tl.Name)
				}
			}
		}
		for _, name := range []string{"approve", "approval_approve", "approvals_decide", "decide_approval", "approvals", "policy_reload", "harness_approve", "approve_request", "DecideApproval"} {
			o := a.tool(t, name, map[string]any{"id": aprCmd, "approval_id": aprCmd, "approve": true})
			if !o.isErr {
				t.Errorf("SELF-APPROVAL: MCP tool %q answered: %s", name, o)
			}
		}
		// Every operation with the pending approval id, as an agent would try.
		for _, name := range []string{"run_command", "job_start"} {
			args := map[string]any{"repo_id": r.id, "argv": []string{"true"}, "approval_id": aprJob}
			if name == "job_start" {
				args["request_id"] = "x-" + name
			}
			o := a.tool(t, name, args)
			t.Logf("%s with a pending approval id: %s", name, o.outcome())
		}
		check(t, "MCP")
	})
	t.Run("http-without-token", func(t *testing.T) {
		wrong := a.bare.WithToken(strings.Repeat("0", len(a.token)))
		for _, c := range []struct {
			name string
			do   func() error
		}{
			{"bare approve", func() error {
				_, err := a.bare.Post(t.Context(), "/v1/approvals/"+aprCmd+"/approve", map[string]any{})
				return err
			}},
			{"bare approve with token in body", func() error {
				_, err := a.bare.Post(t.Context(), "/v1/approvals/"+aprCmd+"/approve", map[string]any{"token": "x", "by": "person"})
				return err
			}},
			{"wrong token approve", func() error {
				_, err := wrong.Post(t.Context(), "/v1/approvals/"+aprJob+"/approve", map[string]any{})
				return err
			}},
			{"bare approvals list", func() error { _, err := a.bare.Get(t.Context(), "/v1/approvals"); return err }},
			{"bare policy reload", func() error { _, err := a.bare.Post(t.Context(), "/v1/policy/reload", map[string]any{}); return err }},
			{"op approve", func() error { _, err := a.bare.Call(t.Context(), "approve", map[string]any{"id": aprCmd}); return err }},
			{"op DecideApproval", func() error {
				_, err := a.bare.Call(t.Context(), "DecideApproval", map[string]any{"id": aprCmd})
				return err
			}},
			{"path traversal", func() error {
				_, err := a.bare.Post(t.Context(), "/v1/x/../approvals/"+aprCmd+"/approve", map[string]any{})
				return err
			}},
			{"tcp approve", func() error {
				_, err := clientTCP(listen, "").Post(t.Context(), "/v1/approvals/"+aprCmd+"/approve", map[string]any{})
				return err
			}},
		} {
			if err := c.do(); err == nil {
				t.Errorf("SELF-APPROVAL: %s succeeded without the human token", c.name)
			}
		}
		check(t, "HTTP without the token")
	})
	t.Run("fast-path", func(t *testing.T) {
		for _, argv := range [][]string{
			{"curl", "-s", "--unix-socket", a.paths.Socket, "-X", "POST", "http://h/v1/approvals/" + aprCmd + "/approve"},
			{"sh", "-c", "curl -s --unix-socket " + a.paths.Socket + " -X POST http://h/v1/approvals/" + aprCmd + "/approve"},
			{"cat", a.paths.Token},
			{"python3", "-c", pyApprove(a.paths.Socket, a.paths.Token, aprCmd)},
			{"tools/harness", "--data-dir", a.dataDir, "approve", aprCmd},
			{"env", "tools/harness", "--data-dir", a.dataDir, "approve", aprCmd},
			// The agent's own code on the Fast Path (the env -u hole).
			{"env", "-u", "GIT_CONFIG_COUNT", "git", "status"},
			{"env", "-i", "git", "status"},
		} {
			o := a.run(t, r.id, argv...)
			noLeak(t, o, a.token)
			t.Logf("%q: %s", argv, o.outcome())
		}
		if bc.hit("/fsm-approve") {
			t.Logf("the planted fsmonitor ran on the Fast Path and tried to approve (see TestAttackCodeExecGitPrograms)")
		}
		check(t, "Fast Path commands")
	})
	// The socket itself: a confined process must not see it (DESIGN §10:
	// "never visible to a confined process: the data dir (store, sockets,
	// token)"). Reached, it serves every operation without the token: a
	// "read-only" command could start a writing job.
	for _, v := range fastExecs() {
		t.Run("fast-path-reaches-socket/"+v.name, func(t *testing.T) {
			need(t, v.needs...)
			r3 := newJobRepo(t, a)
			body := `{"repo_id":"` + r3.id + `","request_id":"from-fast-path-` + v.name + `","argv":["sh","-c","echo pwned > pwned.txt"],"writes":true}`
			script := fmt.Sprintf("/usr/bin/curl -s -m 3 --unix-socket %s http://h/v1/repositories | grep -q %s && /usr/bin/curl -s -m 2 --unix-socket %s http://b/socket-%s; "+
				"/usr/bin/curl -s -m 3 --unix-socket %s -H content-type:application/json -d '%s' http://h/v1/job_start >&2; "+
				"/usr/bin/curl -s -m 3 --unix-socket %s -X POST http://h/v1/approvals/%s/approve >&2",
				a.paths.Socket, r3.id, bc.path, v.name, a.paths.Socket, body, a.paths.Socket, aprCmd)
			argv := v.plant(t, r3.root, script)
			o := a.run(t, r3.id, argv...)
			t.Logf("%q: %s", argv, o.outcome())
			if bc.hit("/socket-" + v.name) {
				t.Errorf("SOCKET: a Fast Path process (%s) read the daemon's API over %s: %s", v.name, a.paths.Socket, o)
			}
			if jobs := a.tool(t, "job_list", map[string]any{"repo_id": r3.id}); strings.Contains(jobs.raw, "job_") {
				t.Errorf("SOCKET: a Fast Path process (%s) started a durable job over the daemon socket: %s", v.name, jobs)
			}
			check(t, "a Fast Path process at the socket ("+v.name+")")
		})
	}
	t.Run("jobs", func(t *testing.T) {
		d := `$(printf '\057')`
		sockDyn := d + strings.ReplaceAll(strings.TrimPrefix(a.paths.Socket, "/"), "/", d)
		dirDyn := d + strings.ReplaceAll(strings.TrimPrefix(a.dataDir, "/"), "/", d)
		for _, argv := range [][]string{
			{"python3", "-c", pyApprove(a.paths.Socket, a.paths.Token, aprCmd)},
			{"python3", "-c", pyApprove(a.paths.Socket, a.paths.Token, aprJob)},
			{"sh", "-c", "tools/harness --data-dir " + dirDyn + " approve " + aprJob},
			{"sh", "-c", "HARNESSD_DATA_DIR=" + dirDyn + " tools/harness approve " + aprCmd},
			{"sh", "-c", "curl -s --unix-socket " + sockDyn + " -X POST http://h/v1/approvals/" + aprJob + "/approve"},
			{"python3", "-c", "import urllib.request as u; print(u.urlopen(u.Request('http://" + listen + "/v1/approvals/" + aprJob + "/approve', data=b'{}', method='POST'), timeout=3).read())"},
		} {
			// A fresh checkout each: failures raise a repository's risk
			// until its jobs need approval themselves.
			rj := newJobRepo(t, a)
			writeFile(t, filepath.Join(rj.root, "tools", "harness"), string(hb), 0o755)
			j := a.job(t, rj.id, map[string]any{"argv": argv})
			if j.refused() {
				t.Logf("refused: %s", j)
			}
			j.noLeak(t, a.token)
		}
		check(t, "jobs")
	})
	t.Run("laundering", func(t *testing.T) {
		// A person approves one exact job; the agent tries to use the
		// approval for another.
		r2 := newJobRepo(t, a)
		exact := map[string]any{"repo_id": r2.id, "request_id": "launder-1", "argv": netArgv, "network": true, "timeout_s": 30}
		o := a.tool(t, "job_start", exact)
		apr := o.str("error.details.approval_id")
		if o.code != "APPROVAL_REQUIRED" || apr == "" {
			t.Fatalf("want APPROVAL_REQUIRED: %s", o)
		}
		if _, err := a.human.Post(t.Context(), "/v1/approvals/"+apr+"/approve", map[string]any{"by": "test"}); err != nil {
			t.Fatal(err)
		}
		for i, change := range []map[string]any{
			{"argv": []string{"sh", "-c", "cat README.md; " + shellJoin(netArgv)}},
			{"writes": true},
			{"repo_id": r.id},
			{"timeout_s": 3600},
			{"isolation": "worktree"},
		} {
			args := map[string]any{"approval_id": apr}
			for k, v := range exact {
				args[k] = v
			}
			for k, v := range change {
				args[k] = v
			}
			args["request_id"] = fmt.Sprint("launder-x-", i)
			if o := a.tool(t, "job_start", args); !o.isErr {
				t.Errorf("LAUNDERING: approval %s for one job started another (%v): %s", apr, change, o)
			}
		}
		args := map[string]any{"approval_id": apr}
		for k, v := range exact {
			args[k] = v
		}
		args["request_id"] = "launder-ok"
		if o := a.tool(t, "job_start", args); o.isErr {
			t.Fatalf("control: the approved job itself was refused: %s", o)
		}
		args["request_id"] = "launder-again"
		if o := a.tool(t, "job_start", args); !o.isErr {
			t.Errorf("LAUNDERING: approval %s was used twice: %s", apr, o)
		}
		// The audit names the credential that approved.
		raw, err := a.human.Get(t.Context(), "/v1/audit?kind=approval")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), apr) || !strings.Contains(string(raw), "token ") {
			t.Errorf("AUDIT: the approval of %s by the token is not audited: %s", apr, raw)
		}
		for _, id := range pending {
			if strings.Contains(string(raw), id) {
				t.Errorf("SELF-APPROVAL: the audit records an approval of %s: %s", id, raw)
			}
		}
	})
}

// fastExec is a way to make a Fast Path command run a shell script the
// agent wrote (the holes TestAttackCodeExecGitPrograms and
// TestAttackCodeExecPrograms look for). The layers behind the classifier
// (the process ceiling, the hidden socket) must hold against whichever is
// open.
type fastExec struct {
	name  string
	needs []string
	// plant writes what the vector needs in repo and returns the argv that
	// runs script (one line of sh).
	plant func(t *testing.T, repo, script string) []string
}

func fastExecs() []fastExec {
	return []fastExec{
		{"env-u-fsmonitor", nil, func(t *testing.T, repo, script string) []string {
			setCfg(t, repo, "core.fsmonitor", script+"; false")
			return []string{"env", "-u", "GIT_CONFIG_COUNT", "git", "status"}
		}},
		{"sort-compress-program", nil, func(t *testing.T, repo, script string) []string {
			var big strings.Builder
			for i := 0; i < 3000; i++ {
				fmt.Fprintf(&big, "# %06d %s\n", i, strings.Repeat("pad", 60))
			}
			big.WriteString(script + "\n")
			writeFile(t, filepath.Join(repo, "big.txt"), big.String(), 0o644)
			return []string{"sort", "--co=sh", "-S", "64K", "big.txt"}
		}},
		{"find-crafted-name", nil, func(t *testing.T, repo, script string) []string {
			writeFile(t, filepath.Join(repo, "run-x.sh"), script+"\n", 0o644)
			writeFile(t, filepath.Join(repo, "x;sh run-x.sh"), "", 0o644)
			return []string{"find", ".", "-maxdepth", "1", "-name", "x;*", "-exec", "sh", "-c", "echo {}", ";"}
		}},
		{"pip-python", []string{"pip"}, func(t *testing.T, repo, script string) []string {
			writeFile(t, filepath.Join(repo, "run.sh"), "#!/bin/sh\n"+script+"\n", 0o755)
			return []string{"pip", "--python=./run.sh", "list"}
		}},
	}
}

// boundedForkBomb is the classic f(){ f|f & } with a depth bound: at most
// 2^12 processes in all.
func boundedForkBomb(mark string) string {
	return "f(){ [ $1 -gt 0 ] || { sleep 2; exit; }; f $(($1-1)) | f $(($1-1)) & }; f 11; sleep 3 # " + mark
}

// treeBomb is a binary tree of shells 9 deep (1023 shells and as many
// sleeps, each alive for 3 s: four times the job ceiling); escaping, every
// node double-forks so that its children leave the command's process tree.
func treeBomb(mark string, escape bool) string {
	if escape {
		return "f(){ if [ $1 -gt 0 ]; then (f $(($1-1)) &); (f $(($1-1)) &); fi; sleep 3; }; f 9 # " + mark
	}
	return "f(){ if [ $1 -gt 0 ]; then f $(($1-1)) & f $(($1-1)) & fi; sleep 3; }; f 9 # " + mark
}

// Category 5: floods. The processes a Fast Path command or a job starts
// stay under a ceiling (64 for the Fast Path, 512 for jobs, with the
// slack of a 5-25 ms count; for jobs a cgroup pids.max where harnessd can
// make one), and none is left running afterwards.
func TestAttackFloods(t *testing.T) {
	need(t, "sleep", "xargs")
	// Not parallel: the counts must be the flood's, and a flood starves
	// the other tests of CPU (it runs before them, alone).
	a := newAtk(t)
	// noise is what the other tests running in parallel may add to the
	// system's task count.
	// A job's processes are counted by its namespace's init (512); the
	// kernel's hard stop, a cgroup pids.max where there is one, counts
	// threads too and allows 2*512+64 tasks.
	const fastBound, jobBound, jobTasks, hardLimit, noise = 100, 640, 2*512 + 64, 2500, 150
	flood := func(t *testing.T, mark string, bound int, run func() string) {
		t.Helper()
		base := descendants(a.pid())
		sm := sample(a.pid(), mark, base, hardLimit)
		what := run()
		sm.end()
		t.Logf("%s: at most %d marked processes, %d below the daemon, %d more tasks in the system", what, sm.maxMark, sm.maxDesc, sm.maxTasks)
		if sm.killedAt > 0 {
			t.Errorf("FLOOD: %s reached %d processes; the test killed them itself", what, sm.killedAt)
		}
		if sm.maxMark > bound || sm.maxDesc > bound {
			t.Errorf("FLOOD: %s ran %d processes (%d below the daemon), bound %d", what, sm.maxMark, sm.maxDesc, bound)
		}
		taskBound := bound
		if bound == jobBound {
			taskBound = jobTasks
		}
		if sm.maxTasks > taskBound+noise {
			t.Errorf("FLOOD: %s made the system's task count grow by %d (bound %d, and %d for other tests)", what, sm.maxTasks, taskBound, noise)
		}
		eventually(t, "the flood's processes to be gone", func() bool { return len(marked(mark)) == 0 })
		if o := a.tool(t, "repository_list", nil); o.isErr {
			t.Errorf("the daemon does not answer after %s: %s", what, o)
		}
	}
	lines := func(t *testing.T, repo, name string, n int, line string) {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(line + "\n")
		}
		writeFile(t, filepath.Join(repo, name), b.String(), 0o644)
	}
	newMark := func(t *testing.T) string {
		// sleep sums its arguments: "5 0.<digits>" sleeps 5 s and marks the
		// process.
		n := newSecret(t)
		var d strings.Builder
		for _, c := range n {
			d.WriteByte('0' + byte(c)%10)
		}
		return "0." + d.String()[:12]
	}
	fast := []struct {
		name string
		argv func(mark string) []string
		prep func(t *testing.T, repo, mark string)
	}{
		{"xargs-P0", func(m string) []string { return []string{"xargs", "-P", "0", "-L", "1", "-a", "lines.txt", "sleep"} }, nil},
		{"sh-seq-xargs-P0", func(m string) []string { return []string{"sh", "-c", "seq 500 | xargs -P 0 -I{} sleep 5 " + m} }, nil},
		{"sh-background-loop", func(m string) []string {
			return []string{"sh", "-c", "for i in $(seq 500); do sleep 5 " + m + " & done; wait"}
		}, nil},
		{"sh-fork-bomb", func(m string) []string { return []string{"sh", "-c", "f(){ f|f & }; f # " + m} }, nil},
		{"xargs-nested", func(m string) []string { return []string{"xargs", "-P", "0", "-L", "1", "-a", "outer.txt", "xargs"} }, nil},
		{"find-exec-xargs", func(m string) []string {
			return []string{"find", ".", "-maxdepth", "1", "-name", "lines.txt", "-exec", "xargs", "-P", "0", "-L", "1", "-a", "{}", "sleep", ";"}
		}, nil},
	}
	for _, c := range fast {
		t.Run("fast/"+c.name, func(t *testing.T) {
			mark := newMark(t)
			repo := testutil.Repo(t, map[string]string{"README.md": "flood\n"})
			lines(t, repo, "lines.txt", 500, "5 "+mark)
			lines(t, repo, "outer.txt", 40, "-P 0 -L 1 -a lines.txt sleep")
			if c.prep != nil {
				c.prep(t, repo, mark)
			}
			id := a.register(t, repo)
			argv := c.argv(mark)
			flood(t, mark, fastBound, func() string {
				o := a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": argv, "timeout_ms": 4000})
				return fmt.Sprintf("run_command %q (%s)", argv, o.outcome())
			})
		})
	}
	jobs := []struct {
		name string
		argv func(mark string) []string
	}{
		{"sh-background-loop", func(m string) []string {
			return []string{"sh", "-c", "for i in $(seq 900); do sleep 5 " + m + " & done; wait"}
		}},
		{"fork-bomb-bounded", func(m string) []string { return []string{"sh", "-c", boundedForkBomb(m)} }},
		{"tree-bomb", func(m string) []string { return []string{"sh", "-c", treeBomb(m, false)} }},
		{"escaping-tree-bomb", func(m string) []string { return []string{"sh", "-c", treeBomb(m, true)} }},
		{"xargs-P0", func(m string) []string { return []string{"xargs", "-P", "0", "-L", "1", "-a", "lines.txt", "sleep"} }},
		{"setsid-escape", func(m string) []string {
			return []string{"sh", "-c", "for i in $(seq 900); do setsid sleep 5 " + m + " & done; wait"}
		}},
	}
	// The agent's own shell on the Fast Path, through each hole: fork bombs
	// bounded in depth, so that a ceiling that does not hold shows without
	// exhausting the host's pids (an unbounded one took all 32768).
	for _, v := range fastExecs() {
		bombs := []struct {
			name string
			sh   func(mark string) string
		}{
			{"escaping-tree-bomb", func(m string) string { return treeBomb(m, true) }},
		}
		if v.name == "sort-compress-program" || v.name == "env-u-fsmonitor" {
			bombs = append(bombs, struct {
				name string
				sh   func(mark string) string
			}{"tree-bomb", func(m string) string { return treeBomb(m, false) }}, struct {
				name string
				sh   func(mark string) string
			}{"fork-bomb-bounded", boundedForkBomb})
		}
		for _, b := range bombs {
			t.Run("fast/"+v.name+"/"+b.name, func(t *testing.T) {
				need(t, v.needs...)
				mark := newMark(t)
				repo := testutil.Repo(t, map[string]string{"README.md": "flood\n"})
				argv := v.plant(t, repo, b.sh(mark))
				id := a.register(t, repo)
				flood(t, mark, fastBound, func() string {
					o := a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": argv, "timeout_ms": 4000})
					return fmt.Sprintf("run_command %q (%s)", argv, o.outcome())
				})
			})
		}
	}
	for _, c := range jobs {
		t.Run("job/"+c.name, func(t *testing.T) {
			mark := newMark(t)
			r := newJobRepo(t, a)
			lines(t, r.root, "lines.txt", 900, "5 "+mark)
			argv := c.argv(mark)
			flood(t, mark, jobBound, func() string {
				j := a.job(t, r.id, map[string]any{"argv": argv, "timeout_s": 8})
				return fmt.Sprintf("job %q (%s)", argv, j)
			})
		})
	}
	// Control: without a ceiling the same flood does make hundreds of
	// processes (so the bounds above are the protection).
	t.Run("control", func(t *testing.T) {
		mark := newMark(t)
		dir := t.TempDir()
		lines(t, dir, "lines.txt", 300, "1 "+mark)
		cmd := exec.Command("xargs", "-P", "0", "-L", "1", "-a", filepath.Join(dir, "lines.txt"), "sleep")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		most := 0
		eventually(t, "the uncontained flood to exit", func() bool {
			most = max(most, len(marked(mark)))
			return cmd.ProcessState != nil || most >= 200
		})
		_ = cmd.Wait()
		if most < 150 {
			t.Errorf("control: the flood made only %d processes without harnessd", most)
		}
	})
}

// The degraded mode: with the sandbox forced off, what the classifier and
// the argument checks know is still refused (the kernel layers are what
// cover the rest).
func TestAttackSandboxOff(t *testing.T) {
	t.Parallel()
	a := newAtk(t, "--sandbox=off")
	s := newSecretRepo(t)
	out := t.TempDir()
	// What the sort and gofmt attacks would write or run.
	testutil.WriteFile(t, s.root, "src/bad.go", "package app\nfunc  F( ) {}\n")
	var big strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&big, "# %06d %s\n", i, strings.Repeat("pad", 60))
	}
	big.WriteString("touch " + filepath.Join(out, "sorted") + "\n")
	testutil.WriteFile(t, s.root, "big.txt", big.String())
	setCfg(t, s.root, "core.fsmonitor", "touch "+filepath.Join(out, "fsmonitor")+"; false")
	before := snapshot(t, s.root)
	s.id = a.register(t, s.root)
	for _, argv := range [][]string{
		{"cat", ".env"}, {"sh", "-c", "cat .en?"}, {"date", "-f.env"}, {"xargs", "-a.env", "echo"}, {"sh", "-c", "base64 -w0 .en?"},
		{"git", "show", "HEAD:.env"}, {"cat", s.outFile}, {"cat", a.paths.Token}, {"sh", "-c", "cat " + a.dataDir + "/tok*"},
		{"rg", "-uuu", "-g*", "API_TOKEN"}, {"grep", "-r", "--include=*", "API_TOKEN", "."},
		{"sh", "-c", "echo x > " + filepath.Join(out, "m")}, {"tee", filepath.Join(out, "m")}, {"cp", "README.md", "x"},
		{"sort", "--co=sh", "-S", "64K", "big.txt"}, {"gofmt", "-w=1", "src/bad.go"}, {"bash", "-c", "history -w " + filepath.Join(out, "m")},
		{"bash", "-c", "set -o history; echo hi; history -w hist.txt"}, {"env", "-u", "GIT_CONFIG_COUNT", "git", "status"},
		{"env", "GIT_CONFIG_COUNT=0", "git", "status"}, {"sh", "-c", "f(){ f|f & }; f"}, {"curl", "-X", "POST", "--unix-socket", a.paths.Socket, "http://h/v1/approvals/x/approve"},
	} {
		o := a.run(t, s.id, argv...)
		if !o.isErr {
			t.Errorf("DEGRADED: with --sandbox=off, %q ran: %s", argv, o.outcome())
		}
		noLeak(t, o, append(s.all(), a.token)...)
	}
	noFile(t, "the sandbox-off attacks", filepath.Join(out, "m"))
	noFile(t, "sort --co=sh with --sandbox=off", filepath.Join(out, "sorted"))
	noFile(t, "env -u GIT_CONFIG_COUNT git status with --sandbox=off", filepath.Join(out, "fsmonitor"))
	sameTree(t, "the sandbox-off attacks", s.root, before, ".git/index")
	st, err := a.bare.Get(t.Context(), "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(st), "sandbox is off") {
		t.Errorf("status does not say the sandbox is off: %s", st)
	}
}
