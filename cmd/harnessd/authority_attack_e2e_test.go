package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/testutil"
)

// authHome is a home directory for a daemon under attack: credential
// homes with something worth stealing in each, a global git config, and
// an allowed area the person configured (src/).
type authHome struct {
	home, area, secret string
	a                  *atk
}

func newAuthHome(t *testing.T, extraEnv ...string) *authHome {
	t.Helper()
	h := &authHome{home: t.TempDir(), secret: newSecret(t)}
	h.area = filepath.Join(h.home, "src")
	files := map[string]string{
		".ssh/id_ed25519":                 "-----BEGIN OPENSSH PRIVATE KEY-----\n" + h.secret + "\n-----END OPENSSH PRIVATE KEY-----\n",
		".ssh/authorized_keys":            "ssh-ed25519 AAAA person@host\n",
		".aws/credentials":                "[default]\naws_secret_access_key = " + h.secret + "\n",
		".kube/config":                    "users:\n- user:\n    token: " + h.secret + "\n",
		".docker/config.json":             `{"auths":{"x":{"auth":"` + h.secret + `"}}}`,
		".config/gh/hosts.yml":            "github.com:\n  oauth_token: " + h.secret + "\n",
		".config/other/settings.json":     "{}\n",
		".gitconfig":                      "[user]\n\tname = Person\n\temail = person@example.com\n",
		".cargo/credentials.toml":         "[registry]\ntoken = \"" + h.secret + "\"\n",
		".cargo/registry/index/crates.io": "index\n",
		"src/.keep":                       "",
	}
	for rel, body := range files {
		p := filepath.Join(h.home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	h.a = &atk{dataDir: dataDir, paths: daemonPaths(dataDir)}
	env := append([]string{"HOME=" + h.home, "XDG_CONFIG_HOME=", "GIT_CONFIG_GLOBAL="}, extraEnv...)
	h.a.d = startDaemonEnv(t, dataDir, env, "--allow-root", h.area)
	h.a.finish(t)
	return h
}

// repoIn makes a git repository at dir (inside the home) with files.
func repoIn(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, dir, "init", "-q", "-b", "main")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")
	return dir
}

// listed reports whether root shows in repository_list or target_list.
func (a *atk) listed(t *testing.T, root string) bool {
	t.Helper()
	for _, l := range []struct{ tool, list, field string }{{"repository_list", "repositories", "root"}, {"target_list", "targets", "canonical_root"}} {
		o := a.tool(t, l.tool, map[string]any{})
		items, _ := o.m[l.list].([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok && m[l.field] == root {
				return true
			}
		}
	}
	return false
}

// Root cause 1: agents grant themselves roots. Never-grantable paths are
// refused whoever asks (an agent over MCP, or the person at the CLI),
// checked on the resolved absolute path; elsewhere outside the allowed
// areas a person approves the exact path; inside them agents register
// unasked.
func TestAttackSelfGrantedRoots(t *testing.T) {
	need(t, "git")
	t.Parallel()
	h := newAuthHome(t)
	a := h.a
	repo := repoIn(t, filepath.Join(h.area, "app"), map[string]string{"README.md": "app\n"})
	// A git repository inside a credential home, a symlink in the allowed
	// area to ~/.ssh, and the registered repository's own .git.
	repoIn(t, filepath.Join(h.home, ".ssh", "dotfiles"), map[string]string{"x": "y\n"})
	link := filepath.Join(h.area, "keys")
	if err := os.Symlink(filepath.Join(h.home, ".ssh"), link); err != nil {
		t.Fatal(err)
	}
	g := newGroup(t, 6)
	defer g.wait()
	never := []struct{ tool, path string }{
		{"target_register", filepath.Join(h.home, ".config")},
		{"target_register", filepath.Join(h.home, ".config", "git")},
		{"target_register", filepath.Join(h.home, ".ssh")},
		{"target_register", link},
		{"target_register", filepath.Join(h.home, ".aws")},
		{"target_register", filepath.Join(h.home, ".kube")},
		{"target_register", filepath.Join(h.home, ".docker")},
		{"target_register", filepath.Join(h.home, ".cargo")},
		{"target_register", h.home},
		{"target_register", "/etc"},
		{"target_register", "/proc/self"},
		{"target_register", "/"},
		{"target_register", a.dataDir},
		{"target_register", filepath.Dir(a.dataDir)},
		{"target_register", filepath.Join(repo, ".git")},
		{"target_register", filepath.Join(repo, ".git", "hooks")},
		{"repository_register", filepath.Join(h.home, ".ssh", "dotfiles")},
		{"repository_register", h.home},
	}
	for _, n := range never {
		n := n
		g.run(n.tool+" "+strings.TrimPrefix(n.path, h.home), func(t *testing.T) {
			for _, access := range []string{"read", "write"} {
				args := map[string]any{"path": n.path}
				if n.tool == "target_register" {
					args["access"] = access
				}
				o := a.tool(t, n.tool, args)
				if !o.isErr || o.code != "PATH_NOT_ALLOWED" {
					t.Fatalf("agent granted itself %s: %s", n.path, o)
				}
				// The person cannot grant it either.
				raw, err := a.human.Call(context.Background(), n.tool, args)
				if err == nil {
					t.Fatalf("a person granted %s: %s", n.path, raw)
				}
			}
			if a.listed(t, n.path) {
				t.Fatalf("%s is listed as a root", n.path)
			}
		})
	}
	g.run("control-inside-the-area", func(t *testing.T) {
		id := a.register(t, repo)
		if o := a.run(t, id, "cat", "README.md").mustWork(t); !strings.Contains(o.stdout(), "app") {
			t.Fatalf("control: %s", o)
		}
		tgt := filepath.Join(h.area, "notes")
		if err := os.MkdirAll(tgt, 0o755); err != nil {
			t.Fatal(err)
		}
		a.tool(t, "target_register", map[string]any{"path": tgt, "access": "write"}).mustWork(t)
	})
}

// Outside the allowed areas an agent's registration waits for a person:
// the agent cannot approve its own request (no MCP tool, no token on the
// socket), and the person's approval grants exactly that path.
func TestAttackGrantNeedsAPerson(t *testing.T) {
	need(t, "git")
	t.Parallel()
	h := newAuthHome(t)
	a := h.a
	outside := repoIn(t, filepath.Join(h.home, "elsewhere", "tool"), map[string]string{"main.go": "package main\n"})
	other := repoIn(t, filepath.Join(h.home, "elsewhere", "other"), map[string]string{"b": "b\n"})
	o := a.tool(t, "repository_register", map[string]any{"path": outside})
	if !o.isErr || o.code != "APPROVAL_REQUIRED" {
		t.Fatalf("registering outside the allowed areas: %s, want APPROVAL_REQUIRED", o)
	}
	apr, _ := o.m["error"].(map[string]any)["details"].(map[string]any)["approval_id"].(string)
	if apr == "" {
		t.Fatalf("no approval id: %s", o)
	}
	// The agent tries to approve itself: no tool, and the bare socket has
	// no token.
	for _, name := range []string{"approve", "approval_decide", "approvals_approve"} {
		if o := a.tool(t, name, map[string]any{"approval_id": apr}); !o.isErr {
			t.Fatalf("tool %s exists: %s", name, o)
		}
	}
	if _, err := a.bare.Post(context.Background(), "/v1/approvals/"+apr+"/approve", map[string]string{}); err == nil {
		t.Fatal("the bare socket approved without the token")
	}
	if _, err := a.bare.Post(context.Background(), "/v1/roots", map[string]string{"dir": filepath.Dir(outside)}); err == nil {
		t.Fatal("the bare socket added an allowed area without the token")
	}
	// The approval covers exactly that input: another path still asks.
	if o := a.tool(t, "repository_register", map[string]any{"path": other, "approval_id": apr}); !o.isErr {
		t.Fatalf("an approval for one path granted another: %s", o)
	}
	if a.listed(t, other) || a.listed(t, outside) {
		t.Fatal("a root was granted without a person")
	}
	// The person approves; the agent retries with the approval.
	if _, err := a.human.Post(context.Background(), "/v1/approvals/"+apr+"/approve", map[string]string{"by": "test person"}); err != nil {
		t.Fatal(err)
	}
	o = a.tool(t, "repository_register", map[string]any{"path": outside, "approval_id": apr}).mustWork(t)
	if by := o.str("grant.by"); by != "approval:"+apr {
		t.Fatalf("grant %q, want approval:%s", by, apr)
	}
	// Single use: the same approval does not grant again after unregistering.
	a.tool(t, "repository_unregister", map[string]any{"repo_id": o.str("repo_id")}).mustWork(t)
	if o := a.tool(t, "repository_register", map[string]any{"path": outside, "approval_id": apr}); !o.isErr {
		t.Fatalf("a used approval granted again: %s", o)
	}
	// A person adds an area: from then on, no asking there.
	if _, err := a.human.Post(context.Background(), "/v1/roots", map[string]string{"dir": filepath.Join(h.home, "elsewhere")}); err != nil {
		t.Fatal(err)
	}
	a.register(t, other)
}

// Grants made before the rules (or by an area no longer allowed) are
// suspended at start-up until a person confirms them.
func TestAttackGrantsOutsideTheRulesSuspended(t *testing.T) {
	need(t, "git")
	t.Parallel()
	base := t.TempDir()
	area := filepath.Join(base, "area")
	repo := repoIn(t, filepath.Join(area, "r"), map[string]string{"a.txt": "a\n"})
	dataDir := filepath.Join(base, "data")
	a := &atk{dataDir: dataDir, paths: daemonPaths(dataDir)}
	a.d = startDaemon(t, dataDir, "--allow-root", area)
	a.finish(t)
	id := a.register(t, repo)
	a.run(t, id, "cat", "a.txt").mustWork(t)
	stopDaemonOf(t, dataDir)
	<-a.d.done
	// The area is gone: the repository's grant no longer holds.
	elsewhere := filepath.Join(base, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	a.d = startDaemon(t, dataDir, "--allow-root", elsewhere)
	a.finish(t)
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"run_command", map[string]any{"repo_id": id, "argv": []string{"cat", "a.txt"}}},
		{"read_file", map[string]any{"repo_id": id, "path": "a.txt"}},
		{"git_status", map[string]any{"repo_id": id}},
	} {
		if o := a.tool(t, call.tool, call.args); !o.isErr || o.code != "PATH_NOT_ALLOWED" || !strings.Contains(o.raw, "suspended") {
			t.Fatalf("%s on a suspended repository: %s", call.tool, o)
		}
	}
	// The agent cannot lift it by registering again...
	if o := a.tool(t, "repository_register", map[string]any{"path": repo}); !o.isErr {
		t.Fatalf("the agent confirmed its own suspended grant: %s", o)
	}
	// ...the person can.
	if _, err := a.human.Call(context.Background(), "repository_register", map[string]any{"path": repo}); err != nil {
		t.Fatal(err)
	}
	a.run(t, id, "cat", "a.txt").mustWork(t)
}

// Root cause 3: harnessd's own git trusted the user's global config and
// attributes, which an agent that once reached them could write. A filter
// there never runs when harnessd stages, commits or creates a job's
// worktree; the identity there still signs the commits.
func TestAttackGlobalGitConfigRunsNothing(t *testing.T) {
	need(t, "git", "sh")
	t.Parallel()
	h := newAuthHome(t)
	a := h.a
	marker := filepath.Join(t.TempDir(), "filter-ran")
	script := filepath.Join(h.home, "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "[user]\n\tname = Person\n\temail = person@example.com\n[filter \"x\"]\n\tclean = " + script + "\n\tsmudge = " + script +
		"\n\tprocess = " + script + "\n[diff \"x\"]\n\ttextconv = " + script + "\n[core]\n\thooksPath = " + h.home + "\n"
	if err := os.WriteFile(filepath.Join(h.home, ".gitconfig"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.home, ".config", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.home, ".config", "git", "attributes"), []byte("* filter=x diff=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.home, "pre-commit"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := repoIn(t, filepath.Join(h.area, "svc"), map[string]string{"main.go": "package main\n"})
	id := a.register(t, repo)
	a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "p1", "operations": []map[string]any{
		{"op": "write", "path": "main.go", "content": "package main\n\nfunc main() {}\n"}}}).mustWork(t)
	a.tool(t, "git_diff", map[string]any{"repo_id": id}).mustWork(t)
	a.tool(t, "git_stage", map[string]any{"repo_id": id, "request_id": "s1", "paths": []string{"main.go"}}).mustWork(t)
	c := a.tool(t, "git_commit", map[string]any{"repo_id": id, "request_id": "c1", "message": "a change"}).mustWork(t)
	j := a.job(t, id, map[string]any{"argv": []string{"cat", "main.go"}, "isolation": "worktree"})
	if j.refused() {
		t.Fatalf("control: the worktree job was refused: %s", j)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("harnessd's git ran the filter, diff driver or hook of the user's global config")
	}
	// Control: the commit is the person's, as their global config says.
	if got := gitq(t, repo, "log", "-1", "--format=%an <%ae>"); got != "Person <person@example.com>" {
		t.Fatalf("author %q (commit %s), want the global config's identity", got, c)
	}
	// A person rewrites the global config (git config --global renames a
	// new file into place): the next commit follows it.
	tmp := filepath.Join(h.home, ".gitconfig.new")
	if err := os.WriteFile(tmp, []byte("[user]\n\tname = Renamed\n\temail = renamed@example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.home, ".gitconfig")); err != nil {
		t.Fatal(err)
	}
	a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "p2", "operations": []map[string]any{
		{"op": "write", "path": "b.txt", "content": "b\n"}}}).mustWork(t)
	a.tool(t, "git_stage", map[string]any{"repo_id": id, "request_id": "s2", "paths": []string{"b.txt"}}).mustWork(t)
	a.tool(t, "git_commit", map[string]any{"repo_id": id, "request_id": "c2", "message": "another"}).mustWork(t)
	if got := gitq(t, repo, "log", "-1", "--format=%an"); got != "Renamed" {
		t.Fatalf("after a rewrite of ~/.gitconfig the author is %q, want Renamed", got)
	}
}

// Root cause 3, the repository's own config: a work tree moved elsewhere
// (core.worktree) is refused rather than staged from, and a comment
// character cannot strip harnessd's provenance trailers.
func TestAttackRepositoryConfigAgainstOwnGit(t *testing.T) {
	need(t, "git")
	t.Parallel()
	base := t.TempDir()
	a := newAtk(t)
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "loot.txt"), []byte("outside the checkout\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	moved := repoIn(t, filepath.Join(base, "moved"), map[string]string{"a.txt": "a\n"})
	id := a.register(t, moved)
	testutil.Git(t, moved, "config", "core.worktree", outside)
	o := a.tool(t, "git_stage", map[string]any{"repo_id": id, "request_id": "wt1", "paths": []string{"loot.txt"}})
	if !o.isErr {
		t.Fatalf("staged with core.worktree elsewhere: %s", o)
	}
	if out := gitq(t, moved, "-c", "core.worktree="+moved, "ls-files", "--stage"); strings.Contains(out, "loot") {
		t.Fatalf("loot.txt reached the index: %s", out)
	}
	if o := a.tool(t, "git_status", map[string]any{"repo_id": id}); strings.Contains(o.raw, "loot") {
		t.Fatalf("git_status read outside: %s", o)
	}

	cc := repoIn(t, filepath.Join(base, "comment"), map[string]string{"a.txt": "a\n"})
	id2 := a.register(t, cc)
	testutil.Git(t, cc, "config", "core.commentChar", "H")
	a.tool(t, "apply_patch", map[string]any{"repo_id": id2, "request_id": "cc1", "operations": []map[string]any{
		{"op": "write", "path": "a.txt", "content": "b\n"}}}).mustWork(t)
	a.tool(t, "git_stage", map[string]any{"repo_id": id2, "request_id": "cc2", "paths": []string{"a.txt"}}).mustWork(t)
	a.tool(t, "git_commit", map[string]any{"repo_id": id2, "request_id": "cc3", "message": "change"}).mustWork(t)
	if msg := gitq(t, cc, "log", "-1", "--format=%B"); !strings.Contains(msg, "Harnessd-") {
		t.Fatalf("the provenance trailers were stripped: %q", msg)
	}
}

// Root cause 4: confined code still reached the host. A Fast Path command
// reads no other process's environment (the path built at run time, so
// no argument check sees it), a writing job leaves no set-ID file, and
// neither can change the daemon's limits, priority or the host's name.
func TestAttackConfinedCodeReachesTheHost(t *testing.T) {
	need(t, "git", "sh")
	t.Parallel()
	secret := newSecret(t)
	dataDir := t.TempDir()
	a := &atk{dataDir: dataDir, paths: daemonPaths(dataDir)}
	a.d = startDaemonEnv(t, dataDir, []string{"ANTHROPIC_API_KEY=" + secret})
	a.finish(t)
	repo := testutil.Repo(t, map[string]string{"README.md": "hi\n"})
	id := a.register(t, repo)
	dpid := strconv.Itoa(a.pid())
	up := strings.Repeat("${d}/", strings.Count(repo, "/"))
	g := newGroup(t, 4)
	defer g.wait()
	for _, script := range []string{
		"d=..; cat " + up + "proc/" + dpid + "/environ",
		"d=..; tr '\\0' '\\n' < " + up + "proc/" + dpid + "/environ | rev",
		"d=..; for p in " + up + "proc/[0-9]*; do cat $p/environ; done 2>/dev/null | rev",
		"d=..; cat " + up + "proc/" + dpid + "/cmdline " + up + "proc/" + dpid + "/maps",
	} {
		script := script
		g.run("fast "+script, func(t *testing.T) {
			o := a.run(t, id, "sh", "-c", script)
			noLeak(t, o, secret)
		})
	}
	g.run("fast-control", func(t *testing.T) {
		if o := a.run(t, id, "sh", "-c", "d=..; cat "+up+"proc/self/status | grep -c Cap").mustWork(t); !strings.Contains(o.stdout(), "5") {
			t.Fatalf("control: %s", o)
		}
	})
	g.run("job-setid-and-host", func(t *testing.T) {
		host, _ := os.Hostname()
		var before syscall.Rlimit
		limits := func() string { b, _ := os.ReadFile("/proc/" + dpid + "/limits"); return string(b) }
		beforeLimits := limits()
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &before)
		j := a.job(t, id, map[string]any{"writes": true, "argv": []string{"sh", "-c",
			"s=$(command -v sh); cp $s ./suid-sh; chmod 4755 ./suid-sh; chmod g+s ./suid-sh; install -m 6755 $s ./suid-install; " +
				"prlimit --pid " + dpid + " --nofile=3:3; renice -n 19 -p " + dpid + "; hostname pwned; echo done"}})
		if j.refused() || !strings.Contains(j.output(), "done") {
			t.Fatalf("control: the writing job did not run: %s", j)
		}
		if _, err := os.Stat(filepath.Join(repo, "suid-sh")); err != nil {
			t.Fatalf("control: the job could not write its checkout: %s", j)
		}
		for _, f := range []string{"suid-sh", "suid-install"} {
			fi, err := os.Lstat(filepath.Join(repo, f))
			if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Errorf("%s is %v: a job left a set-ID file (%s)", f, fi.Mode(), j)
			}
		}
		if h, _ := os.Hostname(); h != host {
			t.Errorf("hostname changed to %q", h)
		}
		if after := limits(); after != beforeLimits {
			t.Errorf("the daemon's limits changed:\n%s\n->\n%s", beforeLimits, after)
		}
		out, _ := exec.Command("ps", "-o", "ni=", "-p", dpid).Output()
		if strings.TrimSpace(string(out)) == "19" {
			t.Error("the job reniced the daemon")
		}
	})
}

// Root cause 6: tool caches were wider than caches. The credentials a
// cache dir holds are never readable, and a job's writes to the user's
// caches and tools never reach them.
func TestAttackToolCachesAreCaches(t *testing.T) {
	need(t, "git", "sh")
	t.Parallel()
	h := newAuthHome(t)
	a := h.a
	cargoBin := filepath.Join(h.home, ".cargo", "bin")
	if err := os.MkdirAll(cargoBin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cargoBin, "cargo"), []byte("#!/bin/sh\necho real cargo\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := repoIn(t, filepath.Join(h.area, "crate"), map[string]string{"README.md": "crate\n"})
	id := a.register(t, repo)
	creds := filepath.Join(h.home, ".cargo", "credentials.toml")
	up := strings.Repeat("${d}/", strings.Count(repo, "/"))
	o := a.run(t, id, "sh", "-c", "d=..; cat "+up+strings.TrimPrefix(creds, "/"))
	noLeak(t, o, h.secret)
	if o.isErr {
		t.Fatalf("control: the Fast Path refused the command instead of running it confined: %s", o)
	}
	j := a.job(t, id, map[string]any{"argv": []string{"sh", "-c",
		"c=$(cd; pwd).cargo; c=${c%.cargo}/.cargo; cat $c/credentials.toml; echo pwned > $c/bin/cargo; echo x > $c/config.toml; cat $c/registry/index/crates.io"}})
	if j.refused() {
		t.Fatalf("control: the job was refused: %s", j)
	}
	j.noLeak(t, h.secret)
	if b, _ := os.ReadFile(filepath.Join(cargoBin, "cargo")); !strings.Contains(string(b), "real cargo") {
		t.Fatalf("a job overwrote the user's cargo: %q", b)
	}
	if _, err := os.Stat(filepath.Join(h.home, ".cargo", "config.toml")); err == nil {
		t.Fatal("a job wrote the user's cargo config")
	}
	if !strings.Contains(j.output(), "index") {
		t.Errorf("control: the job could not read the cache: %s", j)
	}
}
