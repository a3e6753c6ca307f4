package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/surfaces/daemon"
)

// harnessd stop shuts a running daemon down gracefully and returns once it
// is gone: the process has exited 0, its socket and pid file are removed.
// A second stop finds nothing and exits 3.
func TestStopE2E(t *testing.T) {
	dataDir := t.TempDir()
	d := startDaemon(t, dataDir)
	p := daemon.PathsOf(dataDir)
	pid := d.cmd.Process.Pid
	if b, err := os.ReadFile(p.Pid); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		t.Fatalf("pid file %q %v, want %d", b, err, pid)
	}
	start := time.Now()
	out, err := exec.Command(harnessdBin, "stop", "--data-dir", dataDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "stopped (pid "+strconv.Itoa(pid)+")") {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	t.Logf("stopped in %s", time.Since(start).Round(time.Millisecond))
	select {
	case <-d.done: // stop returned only after the process was gone
	case <-time.After(2 * time.Second):
		t.Fatal("stop returned but the daemon process is still there")
	}
	if d.err != nil {
		t.Errorf("the daemon did not exit cleanly: %v\n%s", d.err, d.stderr.String())
	}
	for _, f := range []string{p.Socket, p.MCPSocket, p.Pid} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", f, err)
		}
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d still exists: %v", pid, err)
	}
	out, err = exec.Command(harnessdBin, "stop", "--data-dir", dataDir).CombinedOutput()
	if code := exitOf(err); code != 3 || !strings.Contains(string(out), "no harnessd is running") {
		t.Errorf("second stop: exit %d\n%s", code, out)
	}
}

// A stale pid file naming a live process that does not hold the data dir's
// lock gets nobody signalled: exit 3 and the process lives on.
func TestStopStalePidFileSignalsNobody(t *testing.T) {
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = victim.Wait(); close(exited) }()
	t.Cleanup(func() { _ = victim.Process.Kill(); <-exited })
	for _, withLock := range []bool{false, true} {
		dataDir := t.TempDir()
		p := daemon.PathsOf(dataDir)
		if withLock {
			if err := os.WriteFile(p.Lock, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p.Pid, []byte(strconv.Itoa(victim.Process.Pid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(harnessdBin, "stop", "--data-dir", dataDir, "--wait", "2s").CombinedOutput()
		if code := exitOf(err); code != 3 || !strings.Contains(string(out), "stale") {
			t.Errorf("lock file %v: exit %d\n%s", withLock, code, out)
		}
	}
	select {
	case <-exited:
		t.Fatal("stop signalled a process that does not hold the data dir")
	case <-time.After(200 * time.Millisecond):
	}
}

func exitOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// flagLine is one flag of pflag's FlagUsages: the flag, its argument name
// and the text after at least three spaces.
var flagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)((?: \S+)*?)\s{3,}\S`)

func TestHarnessdHelpAndUsage(t *testing.T) {
	for _, args := range [][]string{{"serve", "--help"}, {"mcp", "-h"}, {"stop", "--help"}, {"--help"}, {"help"}} {
		var out, errb bytes.Buffer
		code := exitCode(run(args, &out, &errb), &errb)
		if code != 0 || errb.Len() != 0 || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("%v: exit %d, stderr %q\n%s", args, code, errb.String(), out.String())
		}
		if args[0] == "--help" || args[0] == "help" {
			continue
		}
		// Every flag's argument is one word naming it (pflag takes the
		// first `quoted` word of the usage): --policy file, not
		// --policy harness policy reload.
		n := 0
		for _, l := range strings.Split(out.String(), "\n") {
			m := flagLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			n++
			if strings.Count(m[2], " ") > 1 {
				t.Errorf("%s --%s: argument %q", args[0], m[1], strings.TrimSpace(m[2]))
			}
		}
		if n < 2 {
			t.Errorf("%v: no flags found in\n%s", args, out.String())
		}
	}
	var out bytes.Buffer
	run([]string{"serve", "--help"}, &out, &out)
	if !strings.Contains(out.String(), "--policy file") {
		t.Errorf("--policy's argument is not named file:\n%s", out.String())
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out bytes.Buffer
		if code := exitCode(run(args, &out, &out), &out); code != 0 || !strings.HasPrefix(out.String(), "harnessd ") || !strings.Contains(out.String(), "commit ") || !strings.Contains(out.String(), "go1.") {
			t.Errorf("%v: exit %d %q", args, code, out.String())
		}
	}
	for _, tc := range []struct {
		args       []string
		what, hint string
	}{
		{[]string{"serve", "--bogus"}, "unknown flag: --bogus", "'harnessd serve --help'"},
		{[]string{"stop", "extra"}, "unexpected arguments", "'harnessd stop --help'"},
		{[]string{"serve", "--store-reserve", "lots"}, "--store-reserve", "'harnessd serve --help'"},
		{[]string{"frob"}, `unknown command "frob"`, "'harnessd --help'"},
		{[]string{"version", "x"}, "unexpected arguments", "'harnessd version --help'"},
	} {
		var out, errb bytes.Buffer
		code := exitCode(run(tc.args, &out, &errb), &errb)
		lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
		if code != 2 || out.Len() != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "harnessd: ") || !strings.Contains(lines[0], tc.what) || !strings.Contains(lines[1], tc.hint) {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s", tc.args, code, out.String(), errb.String())
		}
	}
}

func TestParseLocks(t *testing.T) {
	text := `1: FLOCK  ADVISORY  WRITE 26030 fe:00:9996406 0 EOF
2: FLOCK  ADVISORY  WRITE 26031 fe:00:9996228 0 EOF
3: POSIX  ADVISORY  WRITE 777 fe:00:9996228 0 EOF
3: -> FLOCK  ADVISORY  WRITE 888 fe:00:9996228 0 EOF
4: FLOCK  ADVISORY  WRITE x fe:00:9996228 0 EOF
garbage
`
	if got := parseLocks(text, 9996228); len(got) != 1 || got[0] != 26031 {
		t.Errorf("parseLocks = %v, want [26031]", got)
	}
	if got := parseLocks(text, 1); len(got) != 0 {
		t.Errorf("parseLocks(other inode) = %v", got)
	}
}
