package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// cliRunIn runs the CLI against dataDir with stdin.
func cliRunIn(dataDir, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb syncBuffer
	code = run(append([]string{"--data-dir", dataDir}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The everyday verbs in a subdirectory of a registered repository: paths
// are the person's, relative to the current directory; the output is
// what cat, grep -n, git diff, git status --short --branch and git log
// print.
func TestEverydayVerbsInTheRepository(t *testing.T) {
	d := startDaemon(t)
	testutil.WriteFile(t, d.root, "src/lib.go", "package src\n\nvar n = 1\n")
	testutil.Git(t, d.root, "add", "src/lib.go")
	testutil.Git(t, d.root, "commit", "-q", "-m", "add the lib")
	t.Chdir(filepath.Join(d.root, "src"))

	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := cliRun(t, d.dataDir, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	if out := run("cat", "lib.go", "../a.txt"); out != "package src\n\nvar n = 1\na\n" {
		t.Errorf("cat: %q", out)
	}
	if out := run("grep", "var n"); out != "lib.go:3:var n = 1\n" {
		t.Errorf("grep from src: %q", out)
	}
	if out := run("grep", "-i", "A", ".."); !strings.Contains(out, "../a.txt:1:a\n") || !strings.Contains(out, "lib.go:1:package src\n") {
		t.Errorf("grep -i A ..: %q", out)
	}
	if code, out, _ := cliRun(t, d.dataDir, "grep", "no such text anywhere"); code != exitFailed || out != "" {
		t.Errorf("grep without a match: exit %d %q", code, out)
	}
	if out := run("status"); !strings.HasPrefix(out, "## main\n(repository "+d.repoID) || !strings.Contains(out, "harness daemon") {
		t.Errorf("status of a clean tree:\n%s", out)
	}

	// patch --replace: the path from here.
	out := run("patch", "--replace", "lib.go", "var n = 1", "var n = 2")
	if !strings.Contains(out, "patched: receipt ") || !strings.Contains(out, "lib.go") {
		t.Errorf("patch --replace:\n%s", out)
	}
	if got := readFile(t, filepath.Join(d.root, "src", "lib.go")); got != "package src\n\nvar n = 2\n" {
		t.Errorf("lib.go after the patch: %q", got)
	}
	// patch from stdin: a unified diff, paths from the root as git writes them.
	code, out, errOut := cliRunIn(d.dataDir, "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n", "patch")
	if code != exitOK || !strings.HasPrefix(errOut, "request_id cli-patch-") {
		t.Fatalf("patch from stdin: exit %d\n%s%s", code, out, errOut)
	}
	if got := readFile(t, filepath.Join(d.root, "a.txt")); got != "A\n" {
		t.Errorf("a.txt after the patch: %q", got)
	}
	// A diff whose old text is not there changes nothing.
	if code, _, errOut := cliRunIn(d.dataDir, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-zzz\n+y\n", "patch"); code != exitFailed || !strings.Contains(errOut, "harness: ") {
		t.Errorf("a stale diff: exit %d %s", code, errOut)
	}

	if out := run("diff"); !strings.Contains(out, "--- a/src/lib.go\n+++ b/src/lib.go\n") || !strings.Contains(out, "-var n = 1\n+var n = 2\n") || !strings.Contains(out, "-a\n+A\n") {
		t.Errorf("diff:\n%s", out)
	}
	if out := run("diff", "lib.go"); strings.Contains(out, "a.txt") || !strings.Contains(out, "+var n = 2") {
		t.Errorf("diff lib.go:\n%s", out)
	}
	if out := run("status"); !strings.Contains(out, " M lib.go\n") || !strings.Contains(out, " M ../a.txt\n") {
		t.Errorf("status:\n%s", out)
	}
	if out := run("log", "-n", "1"); !regexp.MustCompile(`^[0-9a-f]{7,} \d{4}-\d\d-\d\d harnessd test +add the lib\n$`).MatchString(out) {
		t.Errorf("log -n 1: %q", out)
	}
	if out := run("log", "../a.txt"); strings.Contains(out, "add the lib") || !strings.Contains(out, "initial") {
		t.Errorf("log ../a.txt: %q", out)
	}

	// --json: the operation's answer, one document each.
	for _, args := range [][]string{{"cat", "lib.go"}, {"grep", "var"}, {"diff"}, {"status"}, {"log"}} {
		code, out, errOut := cliRun(t, d.dataDir, append(args, "--json")...)
		if code != exitOK || !json.Valid([]byte(out)) {
			t.Errorf("%v --json: exit %d %s\n%s", args, code, errOut, out)
		}
	}
	var st harness.GitStatusResult
	_, out, _ = cliRun(t, d.dataDir, "status", "--json")
	if json.Unmarshal([]byte(out), &st) != nil || len(st.Unstaged) != 2 {
		t.Errorf("status --json: %s", out)
	}

	// The audit log, newest first: the patches are on top with their paths.
	out = run("audit", "--limit", "100")
	seqs := auditSeqs(t, out)
	if len(seqs) < 3 || seqs[0] <= seqs[len(seqs)-1] {
		t.Fatalf("audit not newest first: %v\n%s", seqs, out)
	}
	if !strings.Contains(out, "SUBJECT") || !regexp.MustCompile(`mutation +apply_patch .*a\.txt, req cli-patch-`).MatchString(out) {
		t.Errorf("audit lacks the patch of a.txt with its subject:\n%s", out)
	}
	old := auditSeqs(t, run("audit", "--oldest-first", "--limit", "100"))
	if len(old) != len(seqs) || old[0] != seqs[len(seqs)-1] || old[len(old)-1] != seqs[0] {
		t.Errorf("--oldest-first %v, newest first %v", old, seqs)
	}
	if top := auditSeqs(t, run("audit", "--limit", "2")); len(top) != 2 || top[0] != seqs[0] || top[1] != seqs[1] {
		t.Errorf("--limit 2 = %v, want the newest two of %v", top, seqs)
	}
}

// auditSeqs are the SEQ column of `harness audit`.
func auditSeqs(t *testing.T, out string) []int {
	t.Helper()
	var seqs []int
	for _, l := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err == nil {
			seqs = append(seqs, n)
		}
	}
	return seqs
}

// Outside any registered repository the verbs say where to go;
// `harness status` is the daemon's status there.
func TestEverydayVerbsOutsideARepository(t *testing.T) {
	d := startDaemon(t)
	t.Chdir(t.TempDir())
	code, out, errOut := cliRun(t, d.dataDir, "status")
	if code != exitOK || !strings.Contains(out, "pid") || !strings.Contains(out, "active runs") || !strings.Contains(errOut, "in no registered repository") {
		t.Errorf("status outside: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cliRun(t, d.dataDir, "cat", "x")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "in no registered repository") || !strings.Contains(errOut, "--repo REPO_ID") {
		t.Errorf("cat outside: exit %d\n%s%s", code, out, errOut)
	}
	// --repo from anywhere: paths from its root.
	if code, out, errOut := cliRun(t, d.dataDir, "cat", "--repo", d.repoID, "a.txt"); code != exitOK || out != "a\n" {
		t.Errorf("cat --repo: exit %d %q %s", code, out, errOut)
	}
	if code, _, errOut := cliRun(t, d.dataDir, "cat", "--repo", "repo_nope", "a.txt"); code != exitUsage || !strings.Contains(errOut, `no registered repository "repo_nope"`) {
		t.Errorf("cat --repo unknown: exit %d %s", code, errOut)
	}

	// A git work tree harnessd does not know: the command to register it.
	other := testutil.Repo(t, map[string]string{"b.txt": "b\n"})
	t.Chdir(other)
	code, _, errOut = cliRun(t, d.dataDir, "cat", "b.txt")
	if code != exitUsage || !strings.Contains(errOut, "is a git work tree harnessd does not know") || !strings.Contains(errOut, "`harness repo add "+shellWord(other)+"`") {
		t.Errorf("cat in an unregistered tree: exit %d %s", code, errOut)
	}
	code, _, errOut = cliRun(t, d.dataDir, "status")
	if code != exitOK || !strings.Contains(errOut, "harness repo add") {
		t.Errorf("status in an unregistered tree: exit %d %s", code, errOut)
	}
	code, out, errOut = cliRun(t, d.dataDir, "cat", "--register", "b.txt")
	if code != exitOK || out != "b\n" || !strings.Contains(errOut, "registered "+other) {
		t.Errorf("cat --register: exit %d %q %s", code, out, errOut)
	}
	// Registered now: status is the repository's; --daemon the daemon's.
	if _, out, _ := cliRun(t, d.dataDir, "status"); !strings.HasPrefix(out, "## main\n") {
		t.Errorf("status after --register:\n%s", out)
	}
	if _, out, _ := cliRun(t, d.dataDir, "status", "--daemon"); !strings.Contains(out, "pid") {
		t.Errorf("status --daemon:\n%s", out)
	}
	if _, out, _ := cliRun(t, d.dataDir, "daemon"); !regexp.MustCompile(`repositories +2\n`).MatchString(out) {
		t.Errorf("daemon:\n%s", out)
	}
}

// check --rerun runs the check again where the same call reuses its
// evidence: each run of the fake go prints a token of its own.
func TestCheckRerun(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\ncase \"$1\" in\nversion) echo 'go version go1.26.0-fake linux/amd64' ;;\n" +
		"test) echo \"run $(cat /proc/sys/kernel/random/uuid)\"; echo 'ok  example.com/demo/pkg 0.01s' ;;\n*) exit 2 ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOCACHE", t.TempDir())
	d := startDaemon(t) // after PATH: the sandbox shows the daemon's PATH
	root := testutil.Repo(t, map[string]string{"go.mod": "module example.com/demo\n\ngo 1.22\n", "pkg/a.go": "package pkg\n",
		"pkg/a_test.go": "package pkg\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n"})
	if _, err := d.h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root}); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	check := func(args ...string) harness.RunCheckResult {
		t.Helper()
		code, out, errOut := cliRun(t, d.dataDir, append(append([]string{"--json", "check"}, args...), "--", "go", "test", "./pkg", "-run", "TestX")...)
		var r harness.RunCheckResult
		if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("check %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return r
	}
	first := check()
	again := check()
	if first.Reused || !again.Reused || again.Stdout != first.Stdout {
		t.Fatalf("the same check twice: reused %v then %v (%q, %q)", first.Reused, again.Reused, first.Stdout, again.Stdout)
	}
	rerun := check("--rerun")
	if rerun.Reused || rerun.Joined || rerun.Stdout == first.Stdout || !strings.HasPrefix(rerun.Stdout, "run ") ||
		len(rerun.MissReasons) != 1 || !strings.HasPrefix(rerun.MissReasons[0], "rerun: ") {
		t.Errorf("--rerun: reused %v joined %v, stdout %q (first run %q)", rerun.Reused, rerun.Joined, rerun.Stdout, first.Stdout)
	}
	// Its pass is the evidence now.
	if after := check(); !after.Reused || after.Stdout != rerun.Stdout {
		t.Errorf("after --rerun: reused %v, stdout %q, want %q", after.Reused, after.Stdout, rerun.Stdout)
	}
}

// revert of a change already committed warns that the revert is an
// uncommitted change; --commit commits it.
func TestRevertOfACommittedChange(t *testing.T) {
	d := startDaemon(t)
	t.Chdir(d.root)
	if code, out, errOut := cliRun(t, d.dataDir, "patch", "--replace", "ok.txt", "ok", "changed"); code != exitOK {
		t.Fatalf("patch: exit %d %s%s", code, out, errOut)
	}
	receipt := lastReceipt(t, d)
	// Not committed yet: no warning.
	if code, _, errOut := cliRun(t, d.dataDir, "revert", receipt); code != exitOK || strings.Contains(errOut, "already committed") {
		t.Fatalf("revert of an uncommitted change: exit %d %s", code, errOut)
	}
	if got := readFile(t, filepath.Join(d.root, "ok.txt")); got != "ok\n" {
		t.Fatalf("ok.txt after the revert: %q", got)
	}

	// Patch again and commit: the change is in HEAD.
	if code, out, errOut := cliRun(t, d.dataDir, "patch", "--replace", "ok.txt", "ok", "changed"); code != exitOK {
		t.Fatalf("patch: exit %d %s%s", code, out, errOut)
	}
	receipt = lastReceipt(t, d)
	testutil.Git(t, d.root, "commit", "-q", "-am", "change ok.txt")
	code, out, errOut := cliRun(t, d.dataDir, "revert", receipt)
	if code != exitOK || !strings.Contains(errOut, "already committed (ok.txt as in HEAD)") || !strings.Contains(errOut, "uncommitted change") {
		t.Fatalf("revert of a committed change: exit %d\n%s%s", code, out, errOut)
	}
	if _, st, _ := cliRun(t, d.dataDir, "status"); !strings.Contains(st, " M ok.txt") {
		t.Errorf("the revert is not an uncommitted change:\n%s", st)
	}
	testutil.Git(t, d.root, "checkout", "-q", "--", "ok.txt") // back to HEAD: the change again

	// --commit: the revert of the next receipt is committed.
	if code, out, errOut := cliRun(t, d.dataDir, "patch", "--replace", "ok.txt", "changed", "again"); code != exitOK {
		t.Fatalf("patch: exit %d %s%s", code, out, errOut)
	}
	receipt = lastReceipt(t, d)
	testutil.Git(t, d.root, "commit", "-q", "-am", "again")
	code, out, errOut = cliRun(t, d.dataDir, "revert", "--commit", receipt)
	if code != exitOK || !strings.Contains(errOut, "the revert is committed") || !strings.Contains(out, "committed ") {
		t.Fatalf("revert --commit: exit %d\n%s%s", code, out, errOut)
	}
	if got := readFile(t, filepath.Join(d.root, "ok.txt")); got != "changed\n" {
		t.Errorf("ok.txt after revert --commit: %q", got)
	}
	if _, st, _ := cliRun(t, d.dataDir, "status"); strings.Contains(st, "ok.txt") {
		t.Errorf("revert --commit left a change:\n%s", st)
	}
	if _, log, _ := cliRun(t, d.dataDir, "log", "-n", "1"); !strings.Contains(log, "Revert "+receipt) {
		t.Errorf("log -n 1 after revert --commit: %q", log)
	}
}

func lastReceipt(t *testing.T, d *liveDaemon) string {
	t.Helper()
	r, err := d.h.CallOp(harness.AsPerson(context.Background(), "test"), "receipt_list", json.RawMessage(`{"limit":1}`))
	if err != nil {
		t.Fatal(err)
	}
	l := r.(*harness.ReceiptListResult)
	if len(l.Receipts) == 0 {
		t.Fatal("no receipt")
	}
	return l.Receipts[0].ReceiptID
}

// policy show prints each rule with what it matches and its examples,
// and says when the file changed since it was loaded.
func TestPolicyShowPrintsTheRules(t *testing.T) {
	d := startDaemon(t)
	code, out, _ := cliRun(t, d.dataDir, "policy", "show")
	if code != exitOK || !strings.Contains(out, "1 rules") || !strings.Contains(out, "ask-ls-tree  ask\n  tools        run_command\n  argv_prefix  git ls-tree\n  why          someone should look first\n") {
		t.Errorf("policy show:\n%s", out)
	}
	pol := filepath.Join(d.dataDir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(`version: 1
rules:
  - id: no-force-push
    tools: [run_command, job_start]
    argv_prefix: [git, push]
    argv_pattern: "--force|-f\\b"
    decision: deny
    justification: "force pushes rewrite shared history"
    examples:
      match: [{tool: run_command, argv: [git, push, --force, origin, main]}]
      not_match: [{tool: run_command, argv: [git, push, origin, main]}]
  - id: lockfiles
    paths: ["**/*.lock"]
    decision: ask
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, _ = cliRun(t, d.dataDir, "policy")
	if !strings.Contains(out, "changed since the daemon loaded it") || !strings.Contains(out, "no-force-push") {
		t.Errorf("policy show of a changed file:\n%s", out)
	}
	if code, _, errOut := cliRun(t, d.dataDir, "policy", "reload"); code != exitOK {
		t.Fatalf("reload: %d %s", code, errOut)
	}
	_, out, _ = cliRun(t, d.dataDir, "policy", "show")
	for _, want := range []string{"2 rules", "\nno-force-push  deny\n", "  tools        run_command, job_start\n", "  argv_prefix  git push\n", `  argv_pattern --force|-f\\b`,
		"  matches      {run_command [git push --force origin main]}\n", "  not matches  {run_command [git push origin main]}\n",
		"\nlockfiles  ask\n  tools        every tool\n  paths        **/*.lock\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("policy show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "changed since") {
		t.Errorf("a note after the reload:\n%s", out)
	}
	_, out, _ = cliRun(t, d.dataDir, "policy", "show", "--json")
	var j struct {
		Policy harness.PolicyInfo `json:"policy"`
		Rules  []struct {
			ID string `json:"id"`
		} `json:"rules"`
	}
	if json.Unmarshal([]byte(out), &j) != nil || j.Policy.Rules != 2 || len(j.Rules) != 2 || j.Rules[0].ID != "no-force-push" {
		t.Errorf("policy show --json:\n%s", out)
	}
}

// exampleJSON is the JSON argument of a printed example call
// (`harness call NAME '...'`).
func exampleJSON(t *testing.T, name, example string) string {
	t.Helper()
	q, ok := strings.CutPrefix(example, "harness call "+name+" ")
	if !ok || len(q) < 2 || q[0] != '\'' || q[len(q)-1] != '\'' {
		t.Fatalf("%s: example %q is not harness call %s '...'", name, example, name)
	}
	return strings.ReplaceAll(q[1:len(q)-1], `'\''`, `'`)
}

// Every operation's example, as `harness ops NAME` prints it, runs as
// printed once its placeholders and sample ids are a fixture's real ones:
// none is refused as INVALID_ARGUMENT (NOT_FOUND for a sample job, run or
// receipt, APPROVAL_REQUIRED and the like are answers to a valid call).
func TestEveryOpsExampleRuns(t *testing.T) {
	d := startDaemon(t)
	notes := t.TempDir()
	// The files the examples name, so that most run through: a.go holds
	// "n := 1", parse.go has a change to commit; the target has a.md with
	// "v1", a.txt, draft.md, todo.md and docs/.
	for name, body := range map[string]string{"a.go": "package a\n\nvar n = func() int { n := 1; return n }()\n", "src/app.go": "package src\n",
		"src/a.go": "package src\n", "parse.go": "package a\n", "old.go": "package a\n"} {
		testutil.WriteFile(t, d.root, name, body)
	}
	testutil.Git(t, d.root, "add", "-A")
	testutil.Git(t, d.root, "commit", "-q", "-m", "the examples' files")
	testutil.WriteFile(t, d.root, "parse.go", "package a\n\n// Parse accepts empty input.\n")
	for name, body := range map[string]string{"a.md": "v1\n", "a.txt": "a\n", "draft.md": "draft\n", "todo.md": "- x\n", "docs/index.md": "# docs\n"} {
		testutil.WriteFile(t, notes, name, body)
	}
	t.Chdir(d.root)
	code, out, errOut := cliRun(t, d.dataDir, "--json", "call", "target_register", `{"path":"`+notes+`","access":"write"}`)
	var tg struct {
		TargetID string `json:"target_id"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &tg) != nil || tg.TargetID == "" {
		t.Fatalf("target_register: exit %d\n%s%s", code, out, errOut)
	}
	real := strings.NewReplacer(`"<repo_id>"`, `"`+d.repoID+`"`, `"tgt_1"`, `"`+tg.TargetID+`"`,
		`"/home/me/src/app"`, `"`+d.root+`"`, `"/home/me/notes"`, `"`+notes+`"`)
	ops := builtinOps()
	if len(ops) < 40 {
		t.Fatalf("only %d operations", len(ops))
	}
	for _, o := range ops {
		// What `harness ops NAME` prints, from the daemon.
		code, out, errOut := cliRun(t, d.dataDir, "ops", o.Name)
		_, printed, ok := strings.Cut(out, "\nExample:\n  ")
		if code != exitOK || !ok {
			t.Errorf("ops %s: exit %d, no example\n%s%s", o.Name, code, out, errOut)
			continue
		}
		printed = strings.TrimSuffix(printed, "\n")
		if printed != exampleFor(o) {
			t.Errorf("ops %s prints %q, the built-in table %q", o.Name, printed, exampleFor(o))
		}
		args := real.Replace(exampleJSON(t, o.Name, printed))
		if strings.Contains(args, "<") {
			t.Errorf("%s: a placeholder left after the fixture's ids: %s", o.Name, args)
			continue
		}
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if o.Name == "run_resume" {
			// It binds a run to the caller's MCP session: an agent's call.
			ctx := harness.WithCaller(context.Background(), harness.Caller{Session: "agent-1", Client: harness.Client{Name: "agent", Version: "1"}})
			_, err := d.h.CallOp(ctx, o.Name, json.RawMessage(args))
			if ee := errs.From(err); err != nil && ee.Code == errs.InvalidArgument {
				t.Errorf("the example of %s fails in an MCP session: %s %s: %s", o.Name, o.Name, args, ee.Message)
			}
			continue
		}
		code, out, errOut = cliRun(t, d.dataDir, "--json", "call", o.Name, args)
		_ = json.Unmarshal([]byte(out), &e)
		switch {
		case code == exitOK:
		case code == exitFailed && e.Error.Code != "" && e.Error.Code != "INVALID_ARGUMENT":
			t.Logf("%s %s: %s", o.Name, args, e.Error.Code)
		default:
			t.Errorf("the example of %s fails: harness call %s %s: exit %d, %s: %s\n%s", o.Name, o.Name, args, code, e.Error.Code, e.Error.Message, errOut)
		}
	}
}
