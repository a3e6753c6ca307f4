package harness_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/internal/wall"
)

// openAllowing opens a harness whose agents may register repositories in
// the temp dir, with policy (YAML, "" = none) in its data dir.
func openAllowing(t *testing.T, policy string) *harness.Harness {
	t.Helper()
	cfg := harness.Config{InMemory: true, AllowRoots: []string{os.TempDir()}}
	if policy != "" {
		cfg = harness.Config{DataDir: t.TempDir(), AllowRoots: []string{os.TempDir()}}
		if err := os.WriteFile(filepath.Join(cfg.DataDir, "policy.yaml"), []byte(policy), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, err := harness.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

// fakeGoScript puts a `go` first on PATH whose `test` runs body (sh) and
// whose `version` answers like the toolchain.
func fakeGoScript(t *testing.T, body string) (bin string) {
	t.Helper()
	bin = t.TempDir()
	t.Setenv("GOCACHE", t.TempDir())
	script := "#!/bin/sh\ncase \"$1\" in\nversion) echo \"go version go1.26.0-fake linux/amd64\"; exit 0 ;;\ntest)\n" + body + "\nexit $?\n;;\nesac\nexit 2\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return bin
}

// bigOutput is what the fake test prints on stdout: 6000 numbered lines
// (about 150 KiB), then a failure.
func bigOutput() string {
	var b strings.Builder
	for i := 1; i <= 6000; i++ {
		fmt.Fprintf(&b, "line %06d of stdout\n", i)
	}
	b.WriteString("--- FAIL: TestLast (0.00s)\nFAIL\n")
	return b.String()
}

const bigOutputScript = `seq -f 'line %06g of stdout' 1 6000
echo 'warning: first line of stderr' >&2
echo 'warning: second line of stderr' >&2
echo '--- FAIL: TestLast (0.00s)'
echo FAIL
exit 1`

// headTail checks that got is want cut as the Fast Path cuts it: whole,
// or the first and last 32 KiB around a marker counting the rest.
func headTail(t *testing.T, what, got, want string) {
	t.Helper()
	const half = 32 << 10
	if len(want) <= 2*half {
		if got != want {
			t.Errorf("%s: got %q, want %q", what, got, want)
		}
		return
	}
	wantText := want[:half] + proc.TruncationMarker(int64(len(want)-2*half)) + want[len(want)-half:]
	if got != wantText {
		t.Errorf("%s: got %d bytes %.80q...%.80q, want %d bytes %.80q...%.80q", what, len(got), got, got[max(0, len(got)-80):],
			len(wantText), wantText, wantText[len(wantText)-80:])
	}
}

// TestRunCheckDurableKeepsHeadAndTailOfEachStream is issue 28's item 8: an
// unfocused check (a durable job) that prints more than 64 KiB on stdout
// and some lines on stderr returns the head and tail of each stream with
// the Fast Path's marker and counts, and the same text as the Fast Path;
// job_status returns them too, with the streams' totals.
func TestRunCheckDurableKeepsHeadAndTailOfEachStream(t *testing.T) {
	fakeGoScript(t, bigOutputScript)
	h := openAllowing(t, "")
	_, id := checkFixture(t, h)
	ctx := context.Background()
	stdout, stderr := bigOutput(), "warning: first line of stderr\nwarning: second line of stderr\n"

	r, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: []string{"go", "test", "./..."}, TimeoutMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != "durable" || r.Passed || r.ExitCode != 1 || r.OriginalRun.JobID == "" {
		t.Fatalf("got %+v, want a failed durable check", r)
	}
	headTail(t, "durable stdout", r.Stdout, stdout)
	headTail(t, "durable stderr", r.Stderr, stderr)
	if !slices.ContainsFunc(r.Summary, func(s string) bool { return strings.HasPrefix(s, "--- FAIL: TestLast") }) {
		t.Errorf("summary %q: want the failure at the end of stdout", r.Summary)
	}
	if len(r.SandboxHints) != 0 {
		t.Errorf("sandbox_hints %+v: want none for an ordinary failure", r.SandboxHints)
	}

	// The Fast Path keeps the same.
	fast, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: []string{"go", "test", "./pkg", "-run", "TestX"}})
	if err != nil {
		t.Fatal(err)
	}
	if fast.Path != "fast" || fast.Stdout != r.Stdout || fast.Stderr != r.Stderr {
		t.Errorf("fast path: got %s stdout %d bytes stderr %q, want the durable path's %d bytes and %q", fast.Path, len(fast.Stdout), fast.Stderr, len(r.Stdout), r.Stderr)
	}

	// job_status has each stream with its total.
	j, err := h.JobStatus(ctx, harness.JobStatusArgs{JobID: r.OriginalRun.JobID})
	if err != nil {
		t.Fatal(err)
	}
	if j.Stdout == nil || j.Stderr == nil {
		t.Fatalf("job_status: stdout %v stderr %v, want both", j.Stdout, j.Stderr)
	}
	if j.Stdout.Text != r.Stdout || j.Stdout.TotalBytes != int64(len(stdout)) || !j.Stdout.Truncated {
		t.Errorf("job_status stdout: got %d bytes total %d truncated %v, want the check's %d bytes, total %d, truncated", len(j.Stdout.Text), j.Stdout.TotalBytes, j.Stdout.Truncated, len(r.Stdout), len(stdout))
	}
	if j.Stderr.Text != stderr || j.Stderr.TotalBytes != int64(len(stderr)) || j.Stderr.Truncated {
		t.Errorf("job_status stderr: got %+v, want %q whole", j.Stderr, stderr)
	}
	if j.StdoutBytes != int64(len(stdout)) || j.StderrBytes != int64(len(stderr)) {
		t.Errorf("job_status sizes: got %d/%d, want %d/%d", j.StdoutBytes, j.StderrBytes, len(stdout), len(stderr))
	}
	// job_logs reads the omitted middle where the marker says it starts.
	mid, err := h.JobLogs(ctx, harness.JobLogsArgs{JobID: j.JobID, Offset: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout[32<<10:], mid.Data[:100]) {
		t.Errorf("job_logs at the head's end: got %.60q, want %.60q", mid.Data, stdout[32<<10:])
	}
}

// interfaces returns the network interfaces a /proc/net/dev lists.
func interfaces(dev string) []string {
	var out []string
	for _, l := range strings.Split(dev, "\n") {
		if name, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && !strings.Contains(name, "|") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// TestRunCheckEffects is issue 28's item 9 for effects: an unknown effect
// is INVALID_ARGUMENT naming the valid ones; network asks for a person's
// approval (or a policy rule) and then gives the check the host's
// network, on the Fast Path and the durable one, where a check without it
// sees loopback only.
func TestRunCheckEffects(t *testing.T) {
	fakeGoScript(t, "cat /proc/net/dev")
	h := openAllowing(t, "")
	_, id := checkFixture(t, h)
	ctx := context.Background()

	for _, bad := range [][]string{{"bogus"}, {"network", "Network"}, {""}} {
		_, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: focusedCheck, Effects: bad})
		if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "workspace_write, network") {
			t.Errorf("effects %q: got %v, want INVALID_ARGUMENT naming workspace_write, network", bad, err)
		}
	}

	hostDev, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	host := interfaces(string(hostDev))
	namespaced := sandbox.Probe().UserNS
	for _, argv := range [][]string{focusedCheck, {"go", "test", "./..."}} {
		t.Run(argv[len(argv)-1], func(t *testing.T) {
			plain, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: argv})
			if err != nil || !plain.Passed {
				t.Fatalf("without network: %+v, %v", plain, err)
			}
			if got := interfaces(plain.Stdout); namespaced && !slices.Equal(got, []string{"lo"}) {
				t.Errorf("without network: interfaces %q, want loopback only", got)
			}
			args := harness.RunCheckArgs{RepoID: id, Argv: argv, Effects: []string{"network"}}
			_, err = h.RunCheck(ctx, args)
			apr, _ := errs.From(err).Details["approval_id"].(string)
			if errs.CodeOf(err) != errs.ApprovalRequired || apr == "" {
				t.Fatalf("network without a grant: got %v, want APPROVAL_REQUIRED", err)
			}
			if _, err := h.DecideApproval(ctx, apr, true, "tester", ""); err != nil {
				t.Fatal(err)
			}
			args.ApprovalID = apr
			net, err := h.RunCheck(ctx, args)
			if err != nil || !net.Passed || net.Identity == plain.Identity {
				t.Fatalf("approved network check: %+v, %v; want a passing check of its own identity", net, err)
			}
			if got := interfaces(net.Stdout); !slices.Equal(got, host) {
				t.Errorf("with network: interfaces %q, want the host's %q", got, host)
			}
		})
	}
}

// TestRunCheckNetworkByPolicy: a policy rule that allows run_check lets a
// check declaring network through without a person.
func TestRunCheckNetworkByPolicy(t *testing.T) {
	fakeGoScript(t, "cat /proc/net/dev")
	h := openAllowing(t, `version: 1
rules:
  - id: checks-may-fetch
    tools: [run_check]
    argv_prefix: [go, test]
    decision: allow
    justification: "tests download modules"
`)
	_, id := checkFixture(t, h)
	r, err := h.RunCheck(context.Background(), harness.RunCheckArgs{RepoID: id, Argv: focusedCheck, Effects: []string{"network"}})
	if err != nil || !r.Passed {
		t.Fatalf("got %+v, %v; want the policy rule to allow it", r, err)
	}
}

// TestRunCheckSandboxHints: a check that runs into a wall says which
// wall and the fix: a program outside the sandbox's view (exit 127), a
// real dial of an outside address in the network namespace. An approved
// network makes the dial's failure no longer the sandbox's.
func TestRunCheckSandboxHints(t *testing.T) {
	testutil.NeedSandbox(t, testutil.UserNS, sandbox.Probe().UserNS, sandbox.Probe().UserNSReason)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go toolchain to build the probe: %v", err)
	}
	src, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(`package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	c, err := net.DialTimeout("tcp", "192.0.2.1:443", 2*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c.Close()
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(outside, "dialprobe")
	build := exec.Command(goBin, "build", "-o", probe, "main.go")
	build.Dir = src
	build.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, out)
	}
	ctx := context.Background()
	bin := fakeGoScript(t, `case "$*" in *Outside*) exec '`+probe+`' ;; esac
exec dialprobe`)
	if err := os.Link(probe, filepath.Join(bin, "dialprobe")); err != nil {
		t.Fatal(err)
	}
	h := openAllowing(t, "")
	_, id := checkFixture(t, h)

	hint := func(argv []string, effects ...string) (*harness.RunCheckResult, wall.Diagnosis) {
		t.Helper()
		args := harness.RunCheckArgs{RepoID: id, Argv: argv, Effects: effects}
		r, err := h.RunCheck(ctx, args)
		if errs.CodeOf(err) == errs.ApprovalRequired {
			apr, _ := errs.From(err).Details["approval_id"].(string)
			if _, err := h.DecideApproval(ctx, apr, true, "tester", ""); err != nil {
				t.Fatal(err)
			}
			args.ApprovalID = apr
			r, err = h.RunCheck(ctx, args)
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Passed || len(r.SandboxHints) > 1 {
			t.Fatalf("got %+v, want a failed check with at most one sandbox hint", r)
		}
		if len(r.SandboxHints) == 0 {
			return r, wall.Diagnosis{}
		}
		return r, r.SandboxHints[0]
	}
	r, d := hint([]string{"go", "test", "./pkg", "-run", "TestOutside"})
	if r.ExitCode != 127 || d.Layer != wall.MountNamespace || d.What != probe || !strings.Contains(d.Fix, "does not mount its directory") {
		t.Errorf("a program outside the view: exit %d, hint %+v; want 127 and the mount namespace naming %s", r.ExitCode, d, probe)
	}
	r, d = hint(focusedCheck)
	if d.Layer != wall.NetworkNamespace || d.What != "connect() 192.0.2.1:443" || !strings.Contains(d.Fix, `effects: ["network"]`) {
		t.Errorf("a dial out: stderr %q, hint %+v; want the network namespace, connect() 192.0.2.1:443 and effects network", r.Stderr, d)
	}
	r, d = hint(focusedCheck, "network")
	if d != (wall.Diagnosis{}) {
		t.Errorf("a dial out with network granted: stderr %q, hint %+v; want none", r.Stderr, d)
	}
}

// TestRunCheckDurableOwnStderr: a durable check that fails by its exit
// status reports its own (empty) stderr, as the Fast Path does, not the
// job's error.
func TestRunCheckDurableOwnStderr(t *testing.T) {
	fakeGoScript(t, "echo '--- FAIL: TestY (0.00s)'; echo FAIL; exit 1")
	h := openAllowing(t, "")
	_, id := checkFixture(t, h)
	for _, argv := range [][]string{{"go", "test", "./..."}, focusedCheck} {
		r, err := h.RunCheck(context.Background(), harness.RunCheckArgs{RepoID: id, Argv: argv})
		if err != nil {
			t.Fatal(err)
		}
		if r.Passed || r.ExitCode != 1 || r.Stderr != "" || r.Stdout != "--- FAIL: TestY (0.00s)\nFAIL\n" {
			t.Errorf("%s path: got exit %d stdout %q stderr %q, want exit 1, the test's stdout and no stderr", r.Path, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
}
