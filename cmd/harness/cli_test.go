package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/surfaces/daemon"
)

// apiFake is a daemon on the unix socket of a fresh data dir answering
// the given routes ("POST /v1/job_status") with fixed JSON, recording
// every request and its body.
type apiFake struct {
	dataDir string
	mu      sync.Mutex
	calls   []fakeCall
}

type fakeCall struct {
	route string
	body  string
}

func newAPIFake(t *testing.T, routes map[string]string) *apiFake {
	t.Helper()
	dir, err := os.MkdirTemp("", "hc") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &apiFake{dataDir: dir}
	ln, err := net.Listen("unix", daemon.PathsOf(dir).Socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		route := r.Method + " " + r.URL.Path
		f.mu.Lock()
		f.calls = append(f.calls, fakeCall{route, string(b)})
		f.mu.Unlock()
		body, ok := routes[route]
		if !ok {
			writeJSON(w, http.StatusNotFound, `{"error":{"code":"NOT_FOUND","message":"no route `+route+`"}}`)
			return
		}
		status := http.StatusOK
		if strings.HasPrefix(body, `{"error"`) {
			status = http.StatusNotFound
		}
		writeJSON(w, status, body)
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func (f *apiFake) recorded() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

// cliRunArgs runs the CLI with exactly args (no --data-dir added).
func cliRunArgs(args ...string) (code int, stdout, stderr string) {
	var out, errb syncBuffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// Every command and subcommand answers --help and -h with its usage on
// stdout, exit 0, and never calls the daemon.
func TestHelpOnEveryCommand(t *testing.T) {
	f := newAPIFake(t, nil)
	var cases [][]string
	for _, name := range commandNames() {
		if commands[name].passthrough {
			continue
		}
		cases = append(cases, []string{name})
		for _, sub := range completionSpec().subs[name] {
			if name != "help" {
				cases = append(cases, []string{name, sub})
			}
		}
	}
	cases = append(cases, []string{"call", "read_file"}, []string{"repo", "add", "some/dir"}, []string{"check", "--repo", "r"},
		[]string{"job", "status", "j-1"})
	for _, args := range cases {
		for _, h := range []string{"--help", "-h"} {
			code, out, errOut := cliRun(t, f.dataDir, append(append([]string(nil), args...), h)...)
			if code != exitOK || errOut != "" || !strings.Contains(out, "Usage:") || !strings.Contains(out, "harness "+args[0]) {
				t.Errorf("%v %s: exit %d, stderr %q, stdout:\n%s", args, h, code, errOut, out)
			}
		}
	}
	// The subcommand's own help, not the parent's.
	for args, want := range map[string]string{"repo add": "made absolute", "job status": "1 when it failed, timed out", "job start": "--request-id",
		"call": "harness ops OP", "check": "--timeout-ms"} {
		_, out, _ := cliRun(t, f.dataDir, append(strings.Fields(args), "--help")...)
		if !strings.Contains(strings.ReplaceAll(out, "\n", " "), want) {
			t.Errorf("%s --help lacks %q:\n%s", args, want, out)
		}
	}
	// A "--help" after "--" is an argument of the command run, not a flag.
	if wantsHelp([]string{"check", "--repo", "r", "--", "go", "--help"}) {
		t.Error("--help after -- taken as the CLI's")
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("help reached the daemon %d times", n)
	}
	// bench parses its own flags: its --help is the suite's, exit 0.
	if code, out, _ := cliRun(t, f.dataDir, "bench", "--help"); code != exitOK || !strings.Contains(out, "--iterations") {
		t.Errorf("bench --help: exit %d\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		code, out, _ := cliRunArgs(args...)
		if code != exitOK || !strings.HasPrefix(out, "harness ") || !strings.Contains(out, "commit ") || !strings.Contains(out, "go1.") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	code, out, _ := cliRunArgs("version", "--json")
	var v buildInfo
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") {
		t.Errorf("version --json: exit %d, %q", code, out)
	}
}

// A usage error is one line naming what is wrong and one hint line, exit
// 2, and never reaches the daemon.
func TestUsageErrorsAreTwoLines(t *testing.T) {
	f := newAPIFake(t, nil)
	for _, tc := range []struct {
		args       []string
		what, hint string
	}{
		{[]string{"repo", "add"}, "usage: harness repo add PATH", "'harness repo add --help'"},
		{[]string{"repo", "add", "a", "b"}, "repo add PATH", "'harness repo add --help'"},
		{[]string{"repo", "frob"}, `unknown repo subcommand "frob"`, "'harness repo --help'"},
		{[]string{"jobs", "--bogus"}, "unknown flag: --bogus", "'harness jobs --help'"},
		{[]string{"job", "status"}, "job status ID", "'harness job status --help'"},
		{[]string{"job", "start", "--repo", "r"}, "job start --repo ID", "'harness job start --help'"},
		{[]string{"job", "start", "--repo", "r", "true"}, "put the command after --", "'harness job start --help'"},
		{[]string{"check"}, "usage: harness check [--repo ID]", "'harness check --help'"},
		{[]string{"call"}, "usage: harness call OP", "'harness call --help'"},
		{[]string{"store"}, "store needs a subcommand", "'harness store --help'"},
		{[]string{"store", "backup"}, "store backup FILE", "'harness store backup --help'"},
		{[]string{"completion", "tcsh"}, `completion for "tcsh"`, "'harness completion --help'"},
		{[]string{"stauts"}, `unknown command "stauts" (did you mean status?)`, "'harness --help'"},
		{[]string{"status", "--timeout"}, "flag needs an argument: --timeout", "'harness status --help'"},
		{[]string{"status", "--timeout", "soon"}, `--timeout "soon"`, "'harness status --help'"},
		{[]string{"status", "extra"}, "usage: harness status", "'harness status --help'"},
		{[]string{"--bogus", "status"}, "unknown flag: --bogus", "'harness --help'"},
		{[]string{"run", "tail", "--bogus", "r-1"}, "unknown flag: --bogus; usage: harness run", "'harness run tail --help'"},
	} {
		code, out, errOut := cliRun(t, f.dataDir, tc.args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if code != exitUsage || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "harness: ") ||
			!strings.Contains(lines[0], tc.what) || !strings.Contains(lines[1], tc.hint) {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s", tc.args, code, out, errOut)
		}
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("usage errors reached the daemon %d times", n)
	}
}

const repoListJSON = `{"repositories":[{"repo_id":"repo_1","checkout_id":"co_1","root":"/src/app","registered_at":"2026-12-01T15:04:05Z"}]}`

// Global flags work after the command too.
func TestGlobalFlagsAfterCommand(t *testing.T) {
	f := newAPIFake(t, map[string]string{"POST /v1/repository_list": repoListJSON})
	for _, args := range [][]string{
		{"--data-dir", f.dataDir, "--json", "repo", "ls"},
		{"repo", "ls", "--json", "--data-dir", f.dataDir},
		{"repo", "ls", "--data-dir=" + f.dataDir, "--json=true", "--timeout=5s"},
		{"repo", "--json", "ls", "--timeout", "5s", "--data-dir", f.dataDir},
	} {
		code, out, errOut := cliRunArgs(args...)
		if code != exitOK || !json.Valid([]byte(out)) || !strings.Contains(out, `"repo_1"`) {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
	}
	code, out, _ := cliRunArgs("repo", "ls", "--data-dir", f.dataDir)
	if code != exitOK || !strings.HasPrefix(out, "REPO_ID") || !strings.Contains(out, "repo_1") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	// After "--" nothing is the CLI's.
	got, err := extractGlobals([]string{"check", "--json", "--", "go", "test", "--json", "--timeout", "5m"}, &globals{})
	if err != nil || strings.Join(got, " ") != "check -- go test --json --timeout 5m" {
		t.Errorf("extractGlobals = %q, %v", got, err)
	}
}

// repo add sends an absolute path: the daemon's working directory never
// resolves it.
func TestRepoAddSendsAbsolutePath(t *testing.T) {
	f := newAPIFake(t, map[string]string{"POST /v1/repository_register": `{"repo_id":"repo_1","checkout_id":"co_1","root":"/x","created":true}`})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{".": wd, "testdata": filepath.Join(wd, "testdata"), "../harness/": wd, "/abs/path": "/abs/path"} {
		before := len(f.recorded())
		if code, _, errOut := cliRun(t, f.dataDir, "repo", "add", arg); code != exitOK {
			t.Fatalf("repo add %s: exit %d %s", arg, code, errOut)
		}
		calls := f.recorded()[before:]
		var body struct {
			Path string `json:"path"`
		}
		if len(calls) != 1 || json.Unmarshal([]byte(calls[0].body), &body) != nil || body.Path != want {
			t.Errorf("repo add %s sent %+v, want path %s", arg, calls, want)
		}
	}
}

const opsJSON = `{"operations":[
{"name":"read_file","description":"Read a file.","read_only":true,"input_schema":{"type":"object","required":["repo_id","path"],
 "properties":{"repo_id":{"type":"string","description":"repository id"},"path":{"type":"string"},"offset_line":{"type":"integer"}}}},
{"name":"job_list","description":"List jobs.","read_only":true,"input_schema":{"type":"object","required":["state","limit","argv","retry"],
 "properties":{"state":{"type":"string","enum":["queued","running"]},"limit":{"type":"integer","minimum":1},"argv":{"type":"array","items":{"type":"string"}},
 "retry":{"type":"object","required":["max"],"properties":{"max":{"type":"integer"}}}}}}]}`

func TestOpsShowsSchemaAndExample(t *testing.T) {
	f := newAPIFake(t, map[string]string{"GET /v1/ops": opsJSON})
	code, out, errOut := cliRun(t, f.dataDir, "ops", "read_file")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	wantLines(t, out, "read_file (read-only)", "Read a file.", `"offset_line": {`, `"description": "repository id"`,
		`harness call read_file '{"path":"<path>","repo_id":"<repo_id>"}'`)
	_, out, _ = cliRun(t, f.dataDir, "ops", "job_list")
	wantLines(t, out, `harness call job_list '{"argv":["<argv>"],"limit":1,"retry":{"max":1},"state":"queued"}'`)
	_, out, _ = cliRun(t, f.dataDir, "--json", "ops", "read_file")
	var j struct {
		Name    string          `json:"name"`
		Schema  json.RawMessage `json:"input_schema"`
		Example string          `json:"example"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.Name != "read_file" || len(j.Schema) == 0 || !strings.Contains(j.Example, "<path>") {
		t.Errorf("--json ops read_file: %v\n%s", err, out)
	}
	code, out, errOut = cliRun(t, f.dataDir, "ops", "reed_file")
	if code != exitUsage || out != "" || errOut != "harness: unknown operation \"reed_file\" (did you mean read_file?)\nrun 'harness ops' for the list of operations\n" {
		t.Errorf("unknown op: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := cliRun(t, f.dataDir, "ops", "zzzzzzzz"); code != exitUsage || strings.Contains(errOut, "did you mean") {
		t.Errorf("far-off name: exit %d, %q", code, errOut)
	}
	// No daemon: the CLI's own table, and a note saying so.
	code, out, errOut = cliRun(t, t.TempDir(), "ops", "read_file")
	if code != exitOK || !strings.Contains(errOut, "built-in operations") || !strings.Contains(out, "harness call read_file '{") {
		t.Errorf("offline: exit %d, stderr %q\n%s", code, errOut, out)
	}
}

func TestShellQuote(t *testing.T) {
	if got := exampleCall("x", json.RawMessage(`{"required":["q"],"properties":{"q":{"type":"string","default":"it's"}}}`)); got != `harness call x '{"q":"it'\''s"}'` {
		t.Errorf("exampleCall = %s", got)
	}
	if out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(`a'b"$c`)).Output(); err != nil || string(out) != `a'b"$c` {
		t.Errorf("shellQuote round trip: %q %v", out, err)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"read_file", "read_lanes", "search", "job_start", "job_status", "status", "apply_patch"}
	for in, want := range map[string]string{"reed_file": "read_file", "read": "read_file", "serch": "search", "job_statu": "job_status",
		"stats": "status", "patch": "apply_patch", "kubectl": "", "x": ""} {
		if got := closest(in, names); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := cliRunArgs("completion", shell)
		if code != exitOK || errOut != "" {
			t.Fatalf("%s: exit %d %s", shell, code, errOut)
		}
		for _, w := range []string{"repo", "completion", "start", "--older-than", "--repo", "read_file", "apply_patch", "--data-dir", "--json"} {
			if shell == "fish" && strings.HasPrefix(w, "--") {
				w = "-l " + w[2:] // fish: complete -l NAME
			}
			if !strings.Contains(out, w) {
				t.Errorf("%s script lacks %q", shell, w)
			}
		}
		if strings.ContainsAny(out, "\x1b\r") {
			t.Errorf("%s script has ANSI or CR", shell)
		}
		if sh, err := exec.LookPath(shell); err == nil {
			flag := "-n"
			if shell == "fish" {
				flag = "--no-execute"
			}
			cmd := exec.Command(sh, flag)
			cmd.Stdin = strings.NewReader(out)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", shell, flag, err, b)
			}
		} else {
			t.Logf("%s not installed: syntax not checked", shell)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, script, _ := cliRunArgs("completion", "bash")
	// Run the bash function as bash's completion would.
	for line, want := range map[string]string{
		"harness rep":               "repo",
		"harness repo ":             "add ls rm",
		"harness call read_f":       "read_file",
		"harness --json ops apply_": "apply_patch",
		"harness jobs --st":         "--state",
		"harness job st":            "start status",
		"harness job logs --fo":     "--follow",
		"harness --data-dir /tmp ":  "approvals",
		"harness completion z":      "zsh",
	} {
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		var q []string
		for _, w := range words {
			q = append(q, shellQuote(w))
		}
		prog := script + "\nCOMP_WORDS=(" + strings.Join(q, " ") + ")\nCOMP_CWORD=" + itoa(len(words)-1) + "\n_harness\necho \"${COMPREPLY[*]}\"\n"
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("completing %q: %v %q, want %q", line, err, out, want)
		}
	}
}

// The zsh function offers the right candidates (compadd stubbed: real zsh
// filters them by the typed prefix).
func TestCompletionZshCandidates(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not installed")
	}
	_, script, _ := cliRunArgs("completion", "zsh")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "h.zsh"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	for words, want := range map[string]string{
		`harness repo ""`:     "add ls rm",
		`harness call read_`:  "read_file",
		`harness jobs --st`:   "--state",
		`harness repo add ""`: "FILES -/",
		`harness ""`:          "approvals",
	} {
		n := len(strings.Fields(words))
		prog := `compdef() {}; compadd() { [[ $1 == -- ]] && shift; print -r -- "$*" }; _files() { print FILES $* }; source ./h.zsh; words=(` + words + `); CURRENT=` + itoa(n) + `; _harness`
		cmd := exec.Command(zsh, "-f", "-c", prog)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("zsh completing %s: %v %q, want %q", words, err, out, want)
		}
	}
}

func TestCompletionFishCandidates(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish not installed")
	}
	_, script, _ := cliRunArgs("completion", "fish")
	file := filepath.Join(t.TempDir(), "harness.fish")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{"harness repo ": "add\nls\nrm", "harness call read_": "read_file", "harness jobs --st": "--state", "harness job ": "start"} {
		cmd := exec.Command(fish, "--no-config", "-c", "source "+shellQuote(file)+"; complete -C "+shellQuote(line))
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("fish completing %q: %v %q, want %q", line, err, out, want)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Output into a pipe or file, or with NO_COLOR or TERM=dumb, has no ANSI
// escapes and no carriage returns.
func TestNoColorOffTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	if colorOn(w) || colorOn(devnull) || colorOn(&syncBuffer{}) {
		t.Error("colours into a pipe, /dev/null or a buffer")
	}
	f := newFake(t)
	for _, env := range []string{"", "NO_COLOR=1", "TERM=dumb"} {
		if k, v, ok := strings.Cut(env, "="); ok {
			t.Setenv(k, v)
		}
		for _, args := range [][]string{{"run", "show", "r-1"}, {"runs"}, {"--help"}, {"run", "explain", "r-1"}} {
			_, out, errOut := cliRun(t, f.dataDir, args...)
			if strings.ContainsAny(out+errOut, "\x1b\r") {
				t.Errorf("%s %v: ANSI or CR in output:\n%q", env, args, out+errOut)
			}
		}
	}
}

// On a terminal colours are on, unless NO_COLOR or TERM=dumb.
func TestColorOnTerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pty number: %v", err)
	}
	tty, err := os.OpenFile("/dev/pts/"+itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pty: %v", err)
	}
	defer tty.Close()
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	if !colorOn(tty) {
		t.Error("no colours on a terminal")
	}
	t.Setenv("NO_COLOR", "1")
	if colorOn(tty) {
		t.Error("colours with NO_COLOR")
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	if colorOn(tty) {
		t.Error("colours with TERM=dumb")
	}
}

func jobJSON(state string) string {
	return `{"job_id":"j-1","repo_id":"repo_1","argv":["make","test"],"state":"` + state + `","attempt":1}`
}

// job status exits 1 for a job that failed, timed out, was cancelled or
// interrupted; 0 when it succeeded or is still queued or running.
func TestJobStatusExitCode(t *testing.T) {
	for state, want := range map[string]int{"succeeded": 0, "running": 0, "queued": 0, "failed": 1, "timed_out": 1, "cancelled": 1, "interrupted": 1} {
		f := newAPIFake(t, map[string]string{"POST /v1/job_status": jobJSON(state)})
		code, out, errOut := cliRun(t, f.dataDir, "job", "status", "j-1")
		if code != want || !strings.Contains(out, "state     "+state) {
			t.Errorf("%s: exit %d, want %d\n%s%s", state, code, want, out, errOut)
		}
		if want != 0 && errOut != "harness: job j-1 "+state+"\n" {
			t.Errorf("%s: stderr %q", state, errOut)
		}
		code, out, _ = cliRun(t, f.dataDir, "job", "status", "j-1", "--json")
		if code != want || !json.Valid([]byte(out)) {
			t.Errorf("%s --json: exit %d, stdout not one JSON document:\n%s", state, code, out)
		}
	}
}

func TestJobStart(t *testing.T) {
	f := newAPIFake(t, map[string]string{"POST /v1/job_start": jobJSON("queued"), "POST /v1/job_status": jobJSON("failed")})
	code, out, errOut := cliRun(t, f.dataDir, "job", "start", "--repo", "repo_1", "--timeout-s", "30", "--isolation", "worktree", "--retry", "2",
		"--", "go", "test", "--timeout", "5m", "--json", "./...")
	if code != exitOK || !strings.Contains(out, "job       j-1") || !strings.Contains(errOut, "request_id cli-") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	calls := f.recorded()
	var in map[string]any
	if len(calls) != 1 || calls[0].route != "POST /v1/job_start" || json.Unmarshal([]byte(calls[0].body), &in) != nil {
		t.Fatalf("calls %+v", calls)
	}
	argv, _ := json.Marshal(in["argv"])
	if in["repo_id"] != "repo_1" || string(argv) != `["go","test","--timeout","5m","--json","./..."]` || in["timeout_s"] != 30.0 ||
		in["isolation"] != "worktree" || !strings.HasPrefix(in["request_id"].(string), "cli-") {
		t.Errorf("job_start input %s", calls[0].body)
	}
	// A given request id is sent as it is; --wait reports the end state.
	code, _, _ = cliRun(t, f.dataDir, "job", "start", "--repo", "repo_1", "--request-id", "mine", "--wait", "5", "--", "false")
	calls = f.recorded()
	if code != exitFailed || len(calls) != 3 || !strings.Contains(calls[1].body, `"request_id":"mine"`) || calls[2].route != "POST /v1/job_status" {
		t.Errorf("--wait: exit %d, calls %+v", code, calls)
	}
}

// A failed check prints its result and exits 1; with --json stdout is the
// result alone.
func TestCheckFailedJSONIsOneDocument(t *testing.T) {
	f := newAPIFake(t, map[string]string{"POST /v1/run_check": `{"passed":false,"exit_code":1,"identity":"chk","path":"fast","original_run":{"repo_id":"repo_1","pid":1}}`})
	code, out, errOut := cliRun(t, f.dataDir, "--json", "check", "--repo", "repo_1", "--", "false")
	if code != exitFailed || !json.Valid([]byte(out)) || !strings.Contains(errOut, "CHECK_FAILED") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// An unknown operation in call names the closest one.
func TestCallUnknownOpSuggests(t *testing.T) {
	f := newAPIFake(t, map[string]string{
		"POST /v1/reed_file": `{"error":{"code":"NOT_FOUND","message":"unknown operation \"reed_file\"","details":{"operation":"reed_file"}}}`,
		"POST /v1/read_file": `{"error":{"code":"NOT_FOUND","message":"file x not found"}}`,
	})
	code, _, errOut := cliRun(t, f.dataDir, "call", "reed_file", "{}")
	if code != exitFailed || !strings.Contains(errOut, "did you mean read_file?") {
		t.Errorf("exit %d %q", code, errOut)
	}
	code, _, errOut = cliRun(t, f.dataDir, "call", "read_file", `{"path":"x"}`)
	if code != exitFailed || strings.Contains(errOut, "did you mean") {
		t.Errorf("a NOT_FOUND file got an operation suggestion: exit %d %q", code, errOut)
	}
}

// An ended job that wrote its checkout shows what it used and the receipt
// a person reverts it by; one harnessd performed itself says so.
func TestJobStatusShowsUsageAndReceipt(t *testing.T) {
	body := `{"job_id":"j-1","repo_id":"repo_1","argv":["rm","-rf","pkg"],"state":"succeeded","attempt":1,` +
		`"resources":{"cpu_ms":1500,"peak_rss_bytes":67108864,"io_read_bytes":0,"io_write_bytes":4096,"processes":2},` +
		`"receipt_id":"rcpt_1","performed_by":"harnessd: its own confined git"}`
	f := newAPIFake(t, map[string]string{"POST /v1/job_status": body})
	code, out, errOut := cliRun(t, f.dataDir, "job", "status", "j-1")
	for _, want := range []string{"usage     1.5s CPU, 64.0 MiB peak RSS, 0 B read, 4.0 KiB written, 2 process(es)",
		"receipt   rcpt_1 (undo: harness revert rcpt_1)", "by        harnessd: its own confined git"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, want a line %q in\n%s%s", code, want, out, errOut)
		}
	}
}
