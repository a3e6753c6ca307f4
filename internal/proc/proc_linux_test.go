//go:build linux

package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// startWait runs s through Start and Wait and returns the run id too.
func startWait(t *testing.T, ctx context.Context, s Spec) (Result, string) {
	t.Helper()
	p, err := Start(ctx, s)
	if err != nil {
		t.Fatalf("Start(%q) error = %v, want nil", s.Argv, err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait(%q) error = %v, want nil", s.Argv, err)
	}
	return res, p.RunID()
}

// firstPid parses the first line of s as a pid.
func firstPid(t *testing.T, s string) int {
	t.Helper()
	line, _, _ := strings.Cut(s, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		t.Fatalf("first line of output %q is not a pid", s)
	}
	return pid
}

// requireGone fails unless pid is gone or a zombie. A SIGKILLed process
// needs a moment to finish exiting after its last file is closed, so this
// polls briefly.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still alive after Run returned, want it killed", pid)
		}
		runtime.Gosched()
	}
}

// markedAlive returns the live processes carrying runID's marker.
func markedAlive(runID string) []int {
	needle := []byte(RunIDEnv + "=" + runID)
	buf := make([]byte, environBufSize)
	names, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range names {
		pid, ok := parsePid(e.Name())
		if ok && environHas(pid, needle, buf) && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		argv   []string
		code   int
		signal string
	}{
		{name: "true", argv: []string{"true"}, code: 0},
		{name: "false", argv: []string{"false"}, code: 1},
		{name: "exit 7", argv: []string{"sh", "-c", "exit 7"}, code: 7},
		{name: "exit 255", argv: []string{"sh", "-c", "exit 255"}, code: 255},
		{name: "sigkill", argv: []string{"sh", "-c", "kill -KILL $$"}, code: -1, signal: "killed"},
		{name: "sigterm", argv: []string{"sh", "-c", "kill -TERM $$"}, code: -1, signal: "terminated"},
		{name: "absolute path", argv: []string{"/bin/sh", "-c", "exit 3"}, code: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Run(context.Background(), Spec{Argv: tt.argv})
			if err != nil {
				t.Fatalf("Run error = %v, want nil", err)
			}
			if res.ExitCode != tt.code || res.Signal != tt.signal {
				t.Errorf("exit = %d, signal %q; want %d, %q", res.ExitCode, res.Signal, tt.code, tt.signal)
			}
			if res.TimedOut || res.Cancelled {
				t.Errorf("TimedOut = %v, Cancelled = %v; want false, false", res.TimedOut, res.Cancelled)
			}
			if res.Pid <= 0 || res.Duration <= 0 || res.DurationMs <= 0 {
				t.Errorf("Pid = %d, Duration = %v, DurationMs = %v; want all > 0", res.Pid, res.Duration, res.DurationMs)
			}
		})
	}
}

func TestRunStdoutStderrSeparate(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo out; echo err >&2; echo out2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Stdout, (Output{Text: "out\nout2\n", TotalBytes: 9}); got != want {
		t.Errorf("Stdout = %+v, want %+v", got, want)
	}
	if got, want := res.Stderr, (Output{Text: "err\n", TotalBytes: 4}); got != want {
		t.Errorf("Stderr = %+v, want %+v", got, want)
	}
}

func TestRunStdin(t *testing.T) {
	t.Parallel()
	f, err := os.Open("/etc/hostname")
	if err != nil {
		t.Skip("no /etc/hostname")
	}
	defer f.Close()
	host, _ := os.ReadFile("/etc/hostname")
	tests := []struct {
		name  string
		stdin io.Reader
		want  string
	}{
		{name: "nil is /dev/null", stdin: nil, want: ""},
		{name: "reader", stdin: strings.NewReader("hello\nworld\n"), want: "hello\nworld\n"},
		{name: "large reader", stdin: bytes.NewReader(bytes.Repeat([]byte("z"), 1<<20)), want: strings.Repeat("z", 1<<20)},
		{name: "file", stdin: f, want: string(host)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Argv: []string{"cat"}, Stdin: tt.stdin, MaxStdout: 2 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || res.Stdout.Text != tt.want {
				t.Errorf("cat = exit %d, %d bytes; want exit 0, %d bytes", res.ExitCode, len(res.Stdout.Text), len(tt.want))
			}
		})
	}
}

func TestRunStdinNotConsumed(t *testing.T) {
	t.Parallel()
	// The command ignores a stdin larger than the pipe buffer; the copier
	// must be unblocked when the command is done.
	res, err := Run(context.Background(), Spec{
		Argv:  []string{"true"},
		Stdin: bytes.NewReader(make([]byte, 4<<20)),
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = exit %d, %v; want 0, nil", res.ExitCode, err)
	}
}

func TestRunTimeoutKillsGrandchildIgnoringTERM(t *testing.T) {
	t.Parallel()
	start := time.Now()
	res, runID := startWait(t, context.Background(), Spec{
		Argv:    []string{"sh", "-c", `trap "" TERM; sleep 60 & echo $!; wait`},
		Timeout: 300 * time.Millisecond,
		Grace:   100 * time.Millisecond,
	})
	if !res.TimedOut || res.Cancelled {
		t.Errorf("TimedOut = %v, Cancelled = %v; want true, false", res.TimedOut, res.Cancelled)
	}
	if res.ExitCode != -1 || res.Signal != "killed" {
		t.Errorf("exit = %d, signal %q; want -1, killed", res.ExitCode, res.Signal)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Run took %v, want about timeout + grace", el)
	}
	requireGone(t, firstPid(t, res.Stdout.Text))
	if left := markedAlive(runID); len(left) > 0 {
		t.Errorf("marked processes alive after Run: %v, want none", left)
	}
}

func TestRunTimeoutSweepsSetsidDescendant(t *testing.T) {
	t.Parallel()
	res, runID := startWait(t, context.Background(), Spec{
		Argv:    []string{"sh", "-c", `setsid sh -c 'echo $$; exec sleep 60' & wait`},
		Timeout: time.Second,
	})
	if !res.TimedOut {
		t.Errorf("TimedOut = false, want true")
	}
	if res.Signal != "terminated" || res.ExitCode != -1 {
		t.Errorf("exit = %d, signal %q; want -1, terminated", res.ExitCode, res.Signal)
	}
	if res.Swept < 1 {
		t.Errorf("Swept = %d, want >= 1", res.Swept)
	}
	requireGone(t, firstPid(t, res.Stdout.Text))
	if left := markedAlive(runID); len(left) > 0 {
		t.Errorf("marked processes alive after Run: %v, want none", left)
	}
}

func TestRunBackgroundLeftoverKilled(t *testing.T) {
	t.Parallel()
	start := time.Now()
	res, runID := startWait(t, context.Background(), Spec{
		Argv: []string{"sh", "-c", "sleep 60 & echo $!; echo started"},
	})
	if res.ExitCode != 0 || res.Signal != "" || res.TimedOut || res.Cancelled {
		t.Errorf("Result = %+v, want a clean exit 0", res)
	}
	if !strings.HasSuffix(res.Stdout.Text, "\nstarted\n") {
		t.Errorf("Stdout = %q, want pid then started", res.Stdout.Text)
	}
	if res.Swept != 0 {
		t.Errorf("Swept = %d, want 0 (the sleep stayed in the group)", res.Swept)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Run took %v, want it not to wait for the background sleep", el)
	}
	requireGone(t, firstPid(t, res.Stdout.Text))
	if left := markedAlive(runID); len(left) > 0 {
		t.Errorf("marked processes alive after Run: %v, want none", left)
	}
}

func TestRunDaemonizedLeftoverSwept(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := `setsid sh -c 'echo $$ > "$1"; exec sleep 60' sh "$1" </dev/null >/dev/null 2>&1 &
while [ ! -s "$1" ]; do sleep 0.01; done
echo daemonized`
	res, runID := startWait(t, context.Background(), Spec{Argv: []string{"sh", "-c", script, "sh", pidFile}})
	if res.ExitCode != 0 || res.Stdout.Text != "daemonized\n" {
		t.Errorf("exit = %d, stdout %q; want 0, daemonized", res.ExitCode, res.Stdout.Text)
	}
	if res.Swept != 1 {
		t.Errorf("Swept = %d, want 1", res.Swept)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	requireGone(t, firstPid(t, string(b)))
	if left := markedAlive(runID); len(left) > 0 {
		t.Errorf("marked processes alive after Run: %v, want none", left)
	}
}

func TestRunUnmarkedEscapeeDoesNotHangWait(t *testing.T) {
	t.Parallel()
	// The escapee leaves the group and drops the marker, so it cannot be
	// found; it keeps stdout open. Wait must still return.
	start := time.Now()
	res, err := Run(context.Background(), Spec{
		Argv: []string{"sh", "-c", `setsid env -i /bin/sh -c 'echo $$; exec /bin/sleep 60' &
wait`},
		Timeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	pid := firstPid(t, res.Stdout.Text)
	defer syscall.Kill(pid, syscall.SIGKILL)
	if !res.TimedOut {
		t.Errorf("TimedOut = false, want true")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Run took %v, want timeout + grace + drain delay", el)
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cancel func(context.CancelFunc, *Process)
	}{
		{name: "context", cancel: func(c context.CancelFunc, _ *Process) { c() }},
		{name: "Process.Cancel", cancel: func(_ context.CancelFunc, p *Process) { p.Cancel(); p.Cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := Start(ctx, Spec{Argv: []string{"sh", "-c", "sleep 60 & echo $!; echo ready; wait"}})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for out, _ := p.Peek(); !strings.Contains(out.Text, "ready\n"); out, _ = p.Peek() {
				if time.Now().After(deadline) {
					t.Fatal("command never printed ready")
				}
				runtime.Gosched()
			}
			tt.cancel(cancel, p)
			res, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if !res.Cancelled || res.TimedOut {
				t.Errorf("Cancelled = %v, TimedOut = %v; want true, false", res.Cancelled, res.TimedOut)
			}
			if res.ExitCode != -1 || res.Signal != "terminated" {
				t.Errorf("exit = %d, signal %q; want -1, terminated", res.ExitCode, res.Signal)
			}
			requireGone(t, firstPid(t, res.Stdout.Text))
			if res2, _ := p.Wait(); res2.Pid != res.Pid {
				t.Errorf("second Wait Pid = %d, want %d", res2.Pid, res.Pid)
			}
		})
	}
}

func TestRunContextDeadlineIsTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Spec{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Cancelled || res.Signal != "terminated" {
		t.Errorf("TimedOut = %v, Cancelled = %v, Signal %q; want true, false, terminated", res.TimedOut, res.Cancelled, res.Signal)
	}
}

func TestRunLargeOutputBounded(t *testing.T) {
	// Not parallel: it measures allocations.
	const size = 52428800
	script := `head -c 52428800 /dev/zero | tr '\0' 'a'; echo; echo LAST-LINE`
	for _, maxOut := range []int{0, 4096} {
		t.Run(strconv.Itoa(maxOut), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, MaxStdout: maxOut})
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			kept := maxOut
			if kept == 0 {
				kept = DefaultMaxOutput
			}
			if !strings.HasSuffix(res.Stdout.Text, "\nLAST-LINE\n") {
				t.Errorf("Stdout ends with %q, want LAST-LINE", res.Stdout.Text[max(0, len(res.Stdout.Text)-40):])
			}
			if want := int64(size + 1 + len("LAST-LINE\n")); res.Stdout.TotalBytes != want {
				t.Errorf("TotalBytes = %d, want %d", res.Stdout.TotalBytes, want)
			}
			if !res.Stdout.Truncated {
				t.Errorf("Truncated = false, want true")
			}
			if limit := kept + len(TruncationMarker(res.Stdout.TotalBytes)); len(res.Stdout.Text) > limit {
				t.Errorf("len(Text) = %d, want <= %d", len(res.Stdout.Text), limit)
			}
			if !strings.Contains(res.Stdout.Text, "[... truncated ") {
				t.Errorf("Text has no truncation marker")
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("allocated %d bytes for a %d byte output, want memory independent of output size", alloc, size)
			}
		})
	}
}

func TestRunScrubsEnv(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_supersecret")
	t.Setenv("HARNESSD_PROC_TEST_VISIBLE", "yes")
	res, runID := startWait(t, context.Background(), Spec{Argv: []string{"env"}})
	if strings.Contains(res.Stdout.Text, "GITHUB_TOKEN") || strings.Contains(res.Stdout.Text, "ghp_supersecret") {
		t.Errorf("child saw GITHUB_TOKEN, want it scrubbed")
	}
	if !strings.Contains(res.Stdout.Text, "HARNESSD_PROC_TEST_VISIBLE=yes\n") {
		t.Errorf("child env lacks HARNESSD_PROC_TEST_VISIBLE, want ordinary variables kept")
	}
	if !strings.Contains(res.Stdout.Text, RunIDEnv+"="+runID+"\n") || len(runID) != 32 {
		t.Errorf("child env lacks %s=%s (32 hex digits)", RunIDEnv, runID)
	}
}

func TestRunExplicitEnv(t *testing.T) {
	t.Parallel()
	res, runID := startWait(t, context.Background(), Spec{
		Argv: []string{"env"},
		Env:  []string{"PATH=/usr/bin:/bin", "FOO=bar", RunIDEnv + "=forged"},
	})
	want := "PATH=/usr/bin:/bin\nFOO=bar\n" + RunIDEnv + "=" + runID + "\n"
	if res.Stdout.Text != want {
		t.Errorf("child env = %q, want %q", res.Stdout.Text, want)
	}
}

func TestRunDirAndRelativeCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.sh"), []byte("#!/bin/sh\necho hi from $(pwd)\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Spec{Argv: []string{"./hello.sh"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if want := "hi from " + dir + "\n"; res.Stdout.Text != want {
		t.Errorf("Stdout = %q, want %q", res.Stdout.Text, want)
	}
	// A relative PATH entry must not resolve a bare name to the directory.
	_, err = Run(context.Background(), Spec{Argv: []string{"hello.sh"}, Dir: dir, Env: []string{"PATH=.:" + dir[1:]}})
	if got := errs.CodeOf(err); got != errs.NotFound {
		t.Errorf("bare name through relative PATH: code %q, want %q", got, errs.NotFound)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noExec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badInterp := filepath.Join(dir, "badinterp")
	if err := os.WriteFile(badInterp, []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		spec Spec
		want errs.Code
	}{
		{name: "nil argv", spec: Spec{}, want: errs.InvalidArgument},
		{name: "empty argv0", spec: Spec{Argv: []string{""}}, want: errs.InvalidArgument},
		{name: "not in PATH", spec: Spec{Argv: []string{"harnessd-no-such-command-xyz"}}, want: errs.NotFound},
		{name: "no such path", spec: Spec{Argv: []string{"/no/such/command"}}, want: errs.NotFound},
		{name: "empty PATH in env", spec: Spec{Argv: []string{"sh"}, Env: []string{"PATH="}}, want: errs.NotFound},
		{name: "directory", spec: Spec{Argv: []string{dir}}, want: errs.InvalidArgument},
		{name: "not executable", spec: Spec{Argv: []string{noExec}}, want: errs.InvalidArgument},
		{name: "missing interpreter", spec: Spec{Argv: []string{badInterp}}, want: errs.NotFound},
		{name: "no such dir", spec: Spec{Argv: []string{"true"}, Dir: filepath.Join(dir, "nope")}, want: errs.NotFound},
		{name: "dir is a file", spec: Spec{Argv: []string{"true"}, Dir: noExec}, want: errs.InvalidArgument},
		{name: "NUL in arg", spec: Spec{Argv: []string{"echo", "a\x00b"}}, want: errs.InvalidArgument},
		{name: "NUL in env", spec: Spec{Argv: []string{"true"}, Env: []string{"A=\x00"}}, want: errs.InvalidArgument},
		{name: "negative timeout", spec: Spec{Argv: []string{"true"}, Timeout: -1}, want: errs.InvalidArgument},
		{name: "negative grace", spec: Spec{Argv: []string{"true"}, Grace: -1}, want: errs.InvalidArgument},
		{name: "negative max stdout", spec: Spec{Argv: []string{"true"}, MaxStdout: -1}, want: errs.InvalidArgument},
		{name: "negative max stderr", spec: Spec{Argv: []string{"true"}, MaxStderr: -1}, want: errs.InvalidArgument},
		{name: "cancelled context", ctx: cancelled, spec: Spec{Argv: []string{"true"}}, want: errs.Cancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			p, err := Start(ctx, tt.spec)
			if err == nil {
				p.Wait()
				t.Fatalf("Start(%q) error = nil, want code %s", tt.spec.Argv, tt.want)
			}
			if p != nil {
				t.Errorf("Start returned a Process with error %v", err)
			}
			if got := errs.CodeOf(err); got != tt.want {
				t.Errorf("Start(%q) code = %s (%v), want %s", tt.spec.Argv, got, err, tt.want)
			}
			if _, rerr := Run(ctx, tt.spec); errs.CodeOf(rerr) != tt.want {
				t.Errorf("Run(%q) code = %s, want %s", tt.spec.Argv, errs.CodeOf(rerr), tt.want)
			}
		})
	}
}

func TestProcessSignal(t *testing.T) {
	t.Parallel()
	p, err := Start(context.Background(), Spec{
		Argv: []string{"sh", "-c", `trap 'echo got; exit 3' USR1; echo ready; while :; do sleep 0.01; done`},
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for out, _ := p.Peek(); !strings.Contains(out.Text, "ready\n"); out, _ = p.Peek() {
		if time.Now().After(deadline) {
			t.Fatal("command never printed ready")
		}
		runtime.Gosched()
	}
	if err := p.Signal(syscall.SIGUSR1); err != nil {
		t.Fatalf("Signal(SIGUSR1) = %v, want nil", err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || !strings.HasSuffix(res.Stdout.Text, "got\n") {
		t.Errorf("exit = %d, stdout %q; want 3, ...got", res.ExitCode, res.Stdout.Text)
	}
	if err := p.Signal(syscall.SIGUSR1); !errors.Is(err, os.ErrProcessDone) || errs.CodeOf(err) != errs.NotFound {
		t.Errorf("Signal after exit = %v, want a NotFound error wrapping os.ErrProcessDone", err)
	}
	if err := p.Signal(fakeSignal{}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Errorf("Signal(non-syscall signal) = %v, want InvalidArgument", err)
	}
}

type fakeSignal struct{}

func (fakeSignal) String() string { return "fake" }
func (fakeSignal) Signal()        {}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestRunSinks(t *testing.T) {
	t.Parallel()
	script := `head -c 100000 /dev/zero | tr '\0' 'o'; head -c 50000 /dev/zero | tr '\0' 'e' >&2`
	t.Run("separate", func(t *testing.T) {
		var out, errb bytes.Buffer
		res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, MaxStdout: 100, MaxStderr: 100, Stdout: &out, Stderr: &errb})
		if err != nil {
			t.Fatal(err)
		}
		if out.Len() != 100000 || errb.Len() != 50000 {
			t.Errorf("sinks got %d and %d bytes, want 100000 and 50000", out.Len(), errb.Len())
		}
		if !res.Stdout.Truncated || res.Stdout.TotalBytes != 100000 || res.Stderr.TotalBytes != 50000 {
			t.Errorf("Result = %+v / %+v, want capped with full counts", res.Stdout.TotalBytes, res.Stderr.TotalBytes)
		}
	})
	t.Run("shared", func(t *testing.T) {
		var both bytes.Buffer // not safe for concurrent use: the race detector checks the serialisation
		_, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, Stdout: &both, Stderr: &both})
		if err != nil {
			t.Fatal(err)
		}
		if both.Len() != 150000 {
			t.Errorf("shared sink got %d bytes, want 150000", both.Len())
		}
	})
	t.Run("failing", func(t *testing.T) {
		fw := &failingWriter{}
		res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, Stdout: fw})
		if err != nil {
			t.Fatal(err)
		}
		if fw.n != 1 {
			t.Errorf("failing sink written %d times, want 1 (dropped after its error)", fw.n)
		}
		if res.Stdout.TotalBytes != 100000 {
			t.Errorf("TotalBytes = %d, want 100000", res.Stdout.TotalBytes)
		}
	})
}

func TestSweepsDoNotTouchOtherRuns(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	long, err := Start(context.Background(), Spec{Argv: []string{"sh", "-c", "cat; sleep 0 & wait"}, Stdin: pr})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", `sleep 0 & echo $HARNESSD_RUN_ID`}})
			if err != nil || res.ExitCode != 0 {
				t.Errorf("Run = %d, %v; want 0, nil", res.ExitCode, err)
			}
			ids[i] = strings.TrimSpace(res.Stdout.Text)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if len(id) != 32 || seen[id] {
			t.Errorf("run id %q is not a fresh 32-digit id", id)
		}
		seen[id] = true
	}
	io.WriteString(pw, "still here\n")
	pw.Close()
	res, err := long.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Signal != "" || res.Stdout.Text != "still here\n" {
		t.Errorf("long run = exit %d, signal %q, stdout %q; want it untouched by other sweeps", res.ExitCode, res.Signal, res.Stdout.Text)
	}
}

func TestResultJSONShape(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Spec{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.DurationMs != float64(res.Duration)/float64(time.Millisecond) {
		t.Errorf("DurationMs = %v, want %v", res.DurationMs, float64(res.Duration)/float64(time.Millisecond))
	}
}

func BenchmarkRunTrue(b *testing.B) {
	ctx := context.Background()
	s := Spec{Argv: []string{"true"}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(ctx, s)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run(true) = %d, %v", res.ExitCode, err)
		}
	}
}

func BenchmarkSweepScan(b *testing.B) {
	id := newRunID()
	b.ReportAllocs()
	for b.Loop() {
		SweepMarked(id, 0)
	}
}

func TestRunClosesDescriptors(t *testing.T) {
	// Not parallel: it counts this process's open descriptors.
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	// Warm up lazily opened descriptors (e.g. /dev/null, the netpoller).
	Run(context.Background(), Spec{Argv: []string{"true"}, Stdin: strings.NewReader("x")})
	before := count()
	for range 20 {
		Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo a; echo b >&2; sleep 60 &"}, Stdin: strings.NewReader("in")})
		Run(context.Background(), Spec{Argv: []string{"sleep", "60"}, Timeout: time.Millisecond})
	}
	if after := count(); after > before {
		t.Errorf("open descriptors = %d after 40 runs, want at most %d", after, before)
	}
}

// TestHelperDaemon is not a test: TestPdeathsig runs the test binary with
// PROC_TEST_HELPER=1 to play a daemon that starts a child and then dies.
func TestHelperDaemon(t *testing.T) {
	if os.Getenv("PROC_TEST_HELPER") != "1" {
		t.Skip("helper process only")
	}
	p, err := Start(context.Background(), Spec{Argv: []string{"sleep", "60"}})
	if err != nil {
		os.Exit(2)
	}
	os.Stdout.WriteString(strconv.Itoa(p.Pid()) + "\n")
	select {} // wait to be killed
}

func TestPdeathsigKillsChildWhenDaemonDies(t *testing.T) {
	t.Parallel()
	daemon := exec.Command(os.Args[0], "-test.run=^TestHelperDaemon$", "-test.count=1")
	daemon.Env = append(os.Environ(), "PROC_TEST_HELPER=1")
	out, err := daemon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		daemon.Process.Kill()
		daemon.Wait()
		t.Fatalf("helper printed %q, %v; want the child's pid", line, err)
	}
	child := firstPid(t, line)
	if !processAlive(child) {
		t.Fatalf("child %d is not running before the daemon dies", child)
	}
	daemon.Process.Kill()
	daemon.Wait()
	requireGone(t, child)
}
