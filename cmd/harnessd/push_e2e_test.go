package main

// git_push through MCP against a loopback git HTTP server with basic auth
// and a local bare remote (issue #35's Must-show): only a person's
// approval of exactly one push lets it leave, the credential the user's
// helper holds reaches the remote and nothing else, and a checkout config
// an agent wrote cannot redirect the push or run a program.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/internal/testutil"
)

// refs lists the refs of a remote repository directory, as git sees them.
func refs(t *testing.T, gitDir string) string {
	t.Helper()
	return strings.TrimSpace(gitq(t, gitDir, "for-each-ref", "--format=%(objectname) %(refname)"))
}

func TestGitPushBehindAPerson(t *testing.T) {
	need(t, "git", "sh")
	token := newSecret(t)
	srv := testutil.NewGitHTTPServer(t, "alice", token)
	url := srv.Bare(t, "app.git")
	remoteDir := filepath.Join(srv.Root, "app.git")

	// The user's HOME: a global config naming the store helper, the
	// credential in the store.
	home := t.TempDir()
	area := filepath.Join(home, "src")
	if err := os.MkdirAll(area, 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(home, ".git-credentials")
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Person\n\temail = p@example.com\n[credential]\n\thelper = store --file "+store+"\n", 0o600)
	writeFile(t, store, strings.Replace(url, "http://", "http://alice:"+token+"@", 1)+"\n", 0o600)
	dataDir := filepath.Join(t.TempDir(), "data")
	a := &atk{dataDir: dataDir, paths: daemonPaths(dataDir)}
	a.d = startDaemonEnv(t, dataDir, []string{"HOME=" + home, "XDG_CONFIG_HOME=", "GIT_CONFIG_GLOBAL="}, "--allow-root", area)
	a.finish(t)

	repo := repoIn(t, filepath.Join(area, "app"), map[string]string{"README.md": "app\n"})
	local := filepath.Join(t.TempDir(), "local.git")
	testutil.Git(t, repo, "init", "-q", "--bare", local)
	testutil.Git(t, repo, "remote", "add", "origin", url)
	testutil.Git(t, repo, "remote", "add", "backup", local)
	id := a.register(t, repo)
	head := func() string { return strings.TrimSpace(gitq(t, repo, "rev-parse", "HEAD")) }
	commit := func(msg string) string {
		testutil.Git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", msg)
		return head()
	}
	var texts []string // everything the agent got back
	n := 0
	// Each phase runs in a run of its own: the refusals of one (the same
	// push refused for each planted setting) do not use up the retries of
	// the next.
	runID := ""
	newRun := func(goal string) {
		t.Helper()
		runID = a.tool(t, "run_start", map[string]any{"goal": goal}).mustWork(t).str("run_id")
	}
	push := func(args map[string]any) out {
		t.Helper()
		n++
		full := map[string]any{"repo_id": id, "request_id": fmt.Sprintf("push-%d", n)}
		if runID != "" {
			full["run_id"] = runID
		}
		for k, v := range args {
			full[k] = v
		}
		o := a.tool(t, "git_push", full)
		texts = append(texts, o.texts...)
		return o
	}
	approve := func(o out) string {
		t.Helper()
		apr := o.str("error.details.approval_id")
		if o.code != "APPROVAL_REQUIRED" || apr == "" {
			t.Fatalf("want APPROVAL_REQUIRED with an approval_id: %s", o)
		}
		if _, err := a.human.Post(context.Background(), "/v1/approvals/"+apr+"/approve", map[string]any{"by": "person"}); err != nil {
			t.Fatalf("approve %s: %v", apr, err)
		}
		return apr
	}
	c1 := head()

	// Without a person nothing leaves; the request names the exact push.
	o := push(map[string]any{"remote": "origin", "refspec": "main"})
	msg := o.str("error.message")
	for _, want := range []string{url, "refs/heads/main", c1, "not forced"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the approval request does not name %q: %s", want, msg)
		}
	}
	if got := refs(t, remoteDir); got != "" || srv.Receives.Load() != 0 {
		t.Fatalf("without approval the remote got %q (%d pushes)", got, srv.Receives.Load())
	}
	apr := approve(o)

	// The approval of main to origin authorises neither another ref nor
	// another remote.
	for _, other := range []map[string]any{
		{"remote": "origin", "refspec": "main:release", "approval_id": apr},
		{"remote": "backup", "refspec": "main", "approval_id": apr},
		{"remote": "origin", "refspec": "main", "force": true, "approval_id": apr},
	} {
		if o := push(other); o.code != "APPROVAL_REQUIRED" {
			t.Errorf("approval %s for main to origin used for %v: %s", apr, other, o)
		}
	}
	if got := refs(t, remoteDir) + refs(t, local); got != "" {
		t.Fatalf("another ref or remote got %q", got)
	}

	// Approved: exactly main lands, a new branch (benign case 1).
	o = push(map[string]any{"remote": "origin", "refspec": "main", "approval_id": apr})
	if o.isErr || o.str("push.new") != c1 || o.str("push.url") != url {
		t.Fatalf("approved push: %s", o)
	}
	rid := fmt.Sprintf("push-%d", n)
	if got := refs(t, remoteDir); got != c1+" refs/heads/main" {
		t.Fatalf("the remote holds %q, want exactly main at %s", got, c1)
	}
	// A retry by request_id replays and never pushes twice.
	before := srv.Receives.Load()
	r := a.tool(t, "git_push", map[string]any{"repo_id": id, "request_id": rid, "remote": "origin", "refspec": "main", "approval_id": apr})
	if r.isErr || r.m["replayed"] != true || srv.Receives.Load() != before {
		t.Fatalf("replay: %s (pushes %d -> %d)", r, before, srv.Receives.Load())
	}

	// A fast-forward (benign case 2), with its own approval.
	c2 := commit("two")
	o = push(map[string]any{"remote": "origin", "refspec": "main"})
	apr = approve(o)
	o = push(map[string]any{"remote": "origin", "refspec": "main", "approval_id": apr})
	if o.isErr || o.str("push.old") != c1 || o.str("push.new") != c2 {
		t.Fatalf("fast-forward: %s", o)
	}

	// A rewritten history: without force the remote refuses; a non-force
	// approval does not authorise force, which needs its own.
	testutil.Git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--amend", "--allow-empty", "-m", "two, amended")
	c3 := head()
	apr = approve(push(map[string]any{"remote": "origin", "refspec": "main"}))
	o = push(map[string]any{"remote": "origin", "refspec": "main", "approval_id": apr})
	if o.code != "PUSH_REJECTED" || !strings.Contains(o.str("error.message"), "force: true") {
		t.Fatalf("non-fast-forward: %s", o)
	}
	apr = approve(push(map[string]any{"remote": "origin", "refspec": "main"}))
	if o := push(map[string]any{"remote": "origin", "refspec": "main", "force": true, "approval_id": apr}); o.code != "APPROVAL_REQUIRED" {
		t.Fatalf("a non-force approval authorised force: %s", o)
	}
	o = push(map[string]any{"remote": "origin", "refspec": "main", "force": true})
	if !strings.Contains(o.str("error.message"), "FORCED") {
		t.Errorf("a forced push's request does not say so: %s", o)
	}
	apr = approve(o)
	if o := push(map[string]any{"remote": "origin", "refspec": "main", "force": true, "approval_id": apr}); o.isErr || o.str("push.new") != c3 {
		t.Fatalf("forced push: %s", o)
	}
	if got := refs(t, remoteDir); got != c3+" refs/heads/main" {
		t.Fatalf("after the forced push the remote holds %q", got)
	}

	// The checkout's config as an agent would write it: settings that
	// would redirect the push are refused by name ...
	markers := t.TempDir()
	trap := newTCPTrap(t)
	for _, tc := range []struct{ key, value string }{
		{"remote.origin.pushurl", "http://127.0.0.1:" + trap.port() + "/x.git"},
		{"remote.origin.mirror", "true"},
		{"url.http://127.0.0.1:" + trap.port() + "/.pushInsteadOf", srv.URL},
	} {
		testutil.Git(t, repo, "config", tc.key, tc.value)
		newRun("planted " + tc.key)
		o := push(map[string]any{"remote": "origin", "refspec": "main"})
		if o.code != "POLICY_DENIED" || !strings.Contains(strings.ToLower(o.str("error.details.setting")), strings.ToLower(tc.key)) {
			t.Errorf("%s=%s: %s, want POLICY_DENIED naming it", tc.key, tc.value, o)
		}
		testutil.Git(t, repo, "config", "--unset", tc.key)
	}
	// ... and the ones that would run a program or take the credential do
	// nothing: the push never reads the checkout's config or hooks.
	hooks := filepath.Join(repo, ".git", "hooks")
	writeFile(t, filepath.Join(hooks, "pre-push"), "#!/bin/sh\ntouch "+filepath.Join(markers, "pre-push")+"\n", 0o755)
	for k, v := range map[string]string{
		"credential.helper":         "!f() { cat > " + filepath.Join(markers, "helper") + "; }; f",
		"core.hooksPath":            hooks,
		"core.sshCommand":           "touch " + filepath.Join(markers, "ssh"),
		"core.askPass":              filepath.Join(markers, "askpass.sh"),
		"remote.origin.receivepack": "touch " + filepath.Join(markers, "receivepack"),
		"remote.origin.uploadpack":  "touch " + filepath.Join(markers, "uploadpack"),
		"alias.push":                "!touch " + filepath.Join(markers, "alias"),
		"protocol.ext.allow":        "always",
		"http.proxy":                "http://127.0.0.1:" + trap.port(),
	} {
		testutil.Git(t, repo, "config", k, v)
	}
	writeFile(t, filepath.Join(markers, "askpass.sh"), "#!/bin/sh\necho x > "+filepath.Join(markers, "askpass")+"\n", 0o755)

	// Meanwhile a confined agent job reads every channel it can think of.
	c4 := commit("four")
	// Paths are built at run time ($s is "/"): the argument checks see no
	// absolute path, so the kernel's walls are what is tested.
	dyn := func(p string) string { return "${s}" + strings.TrimPrefix(p, "/") }
	script := strings.Join([]string{
		`s=$(pwd | cut -c1)`,
		`end=$(( $(date +%s) + 8 ))`,
		`while [ $(date +%s) -lt $end ]; do for p in ${s}proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; cat $p/environ 2>/dev/null | tr '\0' ' '; ls -l $p/fd 2>/dev/null; done >> $TMPDIR/seen; done`,
		`sort -u $TMPDIR/seen | head -c 200000`,
		`env`,
		`git config -l`,
		`printf 'protocol=http\nhost=` + strings.TrimPrefix(srv.URL, "http://") + `\n\n' | GIT_TERMINAL_PROMPT=0 git credential fill`,
		`g=.git-cred; cat ` + dyn(home) + `/${g}entials ` + dyn(filepath.Join(home, ".gitconfig")) + ` $HOME/${g}entials`,
		`ls -la ${s}tmp ${s}tmp/harnessd-push-* 2>&1; cat ${s}tmp/harnessd-push-*/config 2>&1`,
		`find ${s} -xdev \( -name '*askpass*' -o -name '*.sock' -o -name 'git-credential*' \) 2>/dev/null | head -50`,
		`printf 'url=` + url + `\n\n' | GIT_TRACE=1 GIT_CURL_VERBOSE=1 GIT_TRACE_CURL=1 GIT_TERMINAL_PROMPT=0 git credential fill 2>&1`,
		`true`,
	}, "\n")
	var wg sync.WaitGroup
	var attack jobRun
	wg.Add(1)
	go func() {
		defer wg.Done()
		attack = a.job(t, id, map[string]any{"argv": []string{"sh", "-c", script}, "timeout_s": 60})
	}()
	newRun("push beside the attacker")
	apr = approve(push(map[string]any{"remote": "origin", "refspec": "main"}))
	o = push(map[string]any{"remote": "origin", "refspec": "main", "approval_id": apr})
	wg.Wait()
	if o.isErr || o.str("push.new") != c4 {
		t.Fatalf("the push beside the planted config: %s", o)
	}
	if got := refs(t, remoteDir); got != c4+" refs/heads/main" {
		t.Fatalf("the remote holds %q, want main at %s", got, c4)
	}
	if trap.count() != 0 {
		t.Errorf("the push (or the agent) reached the trap %d times", trap.count())
	}
	entries, _ := os.ReadDir(markers)
	for _, e := range entries {
		if e.Name() != "askpass.sh" {
			t.Errorf("MARKER: %s appeared: a program the checkout named ran", e.Name())
		}
	}
	if attack.refused() {
		t.Fatalf("the attacker job was refused, it proves nothing: %s", attack)
	}
	if !strings.Contains(attack.output(), "git") {
		t.Errorf("the attacker job saw no process (positive control): %s", attack)
	}
	attack.noLeak(t, token)

	// Nothing the agent, the logs or the store hold carries the token.
	noLeakIn(t, "the agent's answers", texts, token)
	noLeakIn(t, "the daemon's log", []string{a.d.stderr.String()}, token)
	dump, err := a.human.GetRaw(context.Background(), "/v1/store/dump")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dump), "git_push") || !strings.Contains(string(dump), c4) {
		t.Errorf("the store dump has no record of the pushes")
	}
	noLeakIn(t, "the store dump", []string{string(dump)}, token)
	backup, err := a.human.GetRaw(context.Background(), "/v1/store/backup")
	if err != nil {
		t.Fatal(err)
	}
	noLeakIn(t, "the store backup", []string{string(backup)}, token)
}
