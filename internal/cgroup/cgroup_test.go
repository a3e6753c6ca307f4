package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testManager returns the real Manager when Detect succeeds. Otherwise,
// unless the test needs the memory and pids controllers, it falls back to a
// kill-only Manager on the hybrid layout's controller-less cgroup2 hierarchy
// (/sys/fs/cgroup/unified), which still exercises cgroup.procs, cgroup.kill,
// cgroup.events and rmdir for real. It skips with the reason otherwise.
func testManager(t *testing.T, needControllers bool) *Manager {
	t.Helper()
	m, err := Detect()
	if err == nil {
		return m
	}
	if needControllers {
		testutil.NeedSandbox(t, testutil.Cgroup, false, fmt.Sprintf("cgroup v2 with memory+pids not available: %v", err))
	}
	jobs := fmt.Sprintf("harnessd-jobs-test-%d", os.Getpid())
	km, kerr := detect(config{mount: filepath.Join(DefaultMount, "unified"), procCgroup: "/proc/self/cgroup", jobsName: jobs})
	if kerr != nil {
		testutil.NeedSandbox(t, testutil.Cgroup, false, fmt.Sprintf("cgroup v2 not available (%v); kill-only hierarchy not available either (%v)", err, kerr))
	}
	t.Cleanup(func() {
		if err := km.Cleanup(nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := os.Remove(km.jobs); err != nil {
			t.Errorf("remove %s: %v", km.jobs, err)
		}
	})
	return km
}

// testID returns a job id unique to this test run.
func testID(t *testing.T, suffix string) string {
	return fmt.Sprintf("test-%d-%s", os.Getpid(), suffix)
}

func TestDetectReason(t *testing.T) {
	m, err := Detect()
	if err != nil {
		if m != nil {
			t.Errorf("Detect failed but returned a Manager")
		}
		if strings.TrimSpace(err.Error()) == "" || errs.CodeOf(err) != errs.Unavailable {
			t.Errorf("got %v, want an UNAVAILABLE error with a reason", err)
		}
		st := m.Status()
		if !strings.HasPrefix(st, "cgroup v2: jobs not contained: ") || !strings.Contains(st, err.Error()) {
			t.Errorf("Status on nil: got %q, want the reason %q", st, err)
		}
		t.Logf("Detect on this machine: %v", err)
		return
	}
	if st := m.Status(); !strings.HasPrefix(st, "cgroup v2: jobs contained under "+m.jobs+" (memory, pids)") {
		t.Errorf("Status: got %q", st)
	}
}

func TestDetectFailures(t *testing.T) {
	notCgroup := t.TempDir()
	tests := []struct {
		name string
		c    config
		want string
	}{
		{"missing mount", config{mount: filepath.Join(notCgroup, "nope"), procCgroup: "/proc/self/cgroup", controllers: Controllers, jobsName: JobsDir}, "cgroup v2 not mounted: statfs"},
		{"not cgroup2", config{mount: notCgroup, procCgroup: "/proc/self/cgroup", controllers: Controllers, jobsName: JobsDir}, "cgroup v2 not mounted at " + notCgroup},
	}
	if unifiedOK() {
		bad := filepath.Join(t.TempDir(), "cgroup")
		os.WriteFile(bad, []byte("1:name=systemd:/\n"), 0o644)
		tests = append(tests,
			struct {
				name string
				c    config
				want string
			}{"no v2 entry", config{mount: "/sys/fs/cgroup/unified", procCgroup: bad, controllers: Controllers, jobsName: JobsDir}, "no cgroup v2 entry"},
			struct {
				name string
				c    config
				want string
			}{"controller missing", config{mount: "/sys/fs/cgroup/unified", procCgroup: "/proc/self/cgroup", controllers: []string{"memory"}, jobsName: JobsDir}, "memory controller not delegated to /sys/fs/cgroup/unified"},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := detect(tt.c)
			if m != nil || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, %v, want nil and an error containing %q", m, err, tt.want)
			}
			if st := (*Manager)(nil).Status(); !strings.Contains(st, tt.want) {
				t.Errorf("Status: got %q, want it to contain %q", st, tt.want)
			}
		})
	}
}

func unifiedOK() bool {
	var st syscall.Statfs_t
	return syscall.Statfs("/sys/fs/cgroup/unified", &st) == nil && uint32(st.Type) == cgroup2Magic
}

func TestParseProcCgroup(t *testing.T) {
	tests := []struct {
		name, in string
		want     string
		ok       bool
	}{
		{"v2 only", "0::/user.slice/app.service\n", "/user.slice/app.service", true},
		{"root", "0::/\n", "/", true},
		{"hybrid", "9:name=systemd:/\n4:memory:/x\n0::/\n", "/", true},
		{"v1 only", "4:memory:/x\n1:name=systemd:/\n", "", false},
		{"deleted", "0::/gone (deleted)\n", "/gone", true},
		{"relative", "0::x/y\n", "", false},
		{"dotdot", "0::/a/../../etc\n", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseProcCgroup([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %q, %v, want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCheckID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"job_01HX-abc.1", true},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"a/b", false},
		{"a b", false},
		{"cgroup.procs", false},
		{"memory.max", false},
		{strings.Repeat("a", 129), false},
		{"ünicode", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := checkID(tt.id)
			if (err == nil) != tt.ok {
				t.Errorf("got %v, want ok=%v", err, tt.ok)
			}
			if err != nil && errs.CodeOf(err) != errs.InvalidArgument {
				t.Errorf("got code %s, want INVALID_ARGUMENT", errs.CodeOf(err))
			}
		})
	}
}

func TestParsers(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		pids      int
		populated bool
	}{
		{"empty", "", 0, false},
		{"pids", "12\n345\n", 2, false},
		{"events populated", "populated 1\nfrozen 0\n", 0, true},
		{"events empty", "populated 0\nfrozen 0\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.HasPrefix(tt.in, "populated") {
				if got := len(parsePids([]byte(tt.in))); got != tt.pids {
					t.Errorf("pids: got %d, want %d", got, tt.pids)
				}
			}
			if got := parsePopulated([]byte(tt.in)); got != tt.populated {
				t.Errorf("populated: got %v, want %v", got, tt.populated)
			}
		})
	}
}

// startInGroup starts argv in g via CLONE_INTO_CGROUP.
func startInGroup(t *testing.T, g *Group, argv ...string) (*exec.Cmd, *bufio.Reader, io.WriteCloser) {
	t.Helper()
	f, err := g.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd()), Setpgid: true}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(stdout), stdin
}

// escaper is a shell that ignores SIGTERM, waits for a line on stdin, then
// starts a setsid'd grandchild that ignores SIGTERM and prints its pid.
const escaper = `trap '' TERM; read x; setsid sh -c 'trap "" TERM; echo $$; exec sleep 300' & wait`

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func session(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 4 {
		return -1
	}
	n, _ := strconv.Atoi(f[3])
	return n
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testKill(t *testing.T, useKillFile bool) {
	m := testManager(t, false)
	g, err := m.New(testID(t, fmt.Sprintf("kill-%v", useKillFile)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	g.kill = useKillFile
	defer g.Remove()
	// Start outside the group and Add, as callers of proc do.
	cmd := exec.Command("sh", "-c", escaper)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "go\n")
	line, err := bufio.NewReader(stdoutPipe).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the grandchild pid: %v", err)
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	if gc <= 0 || !alive(gc) {
		t.Fatalf("grandchild pid %q not alive", line)
	}
	if session(gc) == session(cmd.Process.Pid) {
		t.Fatalf("grandchild did not setsid")
	}
	// SIGTERM to the process group does nothing; the escaped grandchild is
	// not even in it.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	if _, n, _ := g.Stats(); n < 2 {
		t.Errorf("Stats pids: got %d, want >= 2", n)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("shell: got %v, want killed by SIGKILL", err)
	}
	waitDead(t, gc)
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Path()); !os.IsNotExist(err) {
		t.Errorf("group dir after Remove: %v, want gone", err)
	}
	if err := g.Remove(); err != nil {
		t.Errorf("second Remove: got %v, want nil", err)
	}
}

func TestKillSetsidIgnoringTerm(t *testing.T)      { testKill(t, true) }
func TestKillFallbackWithoutKillFile(t *testing.T) { testKill(t, false) }

func TestRemoveLeavesNothing(t *testing.T) {
	m := testManager(t, false)
	g, err := m.New(testID(t, "remove"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cmd, out, stdin := startInGroup(t, g, "sh", "-c", escaper)
	io.WriteString(stdin, "go\n")
	line, _ := out.ReadString('\n')
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	// A child cgroup made by the job is removed too.
	if err := os.Mkdir(filepath.Join(g.Path(), "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if alive(gc) || alive(cmd.Process.Pid) {
		t.Errorf("processes survived Remove")
	}
	if _, err := os.Stat(g.Path()); !os.IsNotExist(err) {
		t.Errorf("group dir after Remove: %v, want gone", err)
	}
}

func TestCleanup(t *testing.T) {
	m := testManager(t, false)
	keepID, dropID := testID(t, "keep"), testID(t, "drop")
	keep, err := m.New(keepID, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Remove()
	drop, err := m.New(dropID, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, stdin := startInGroup(t, drop, "sh", "-c", "read x")
	defer stdin.Close()
	mine := fmt.Sprintf("test-%d-", os.Getpid())
	err = m.Cleanup(func(id string) bool { return !strings.HasPrefix(id, mine) || id == keepID })
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(drop.Path()); !os.IsNotExist(err) {
		t.Errorf("dropped group: %v, want gone", err)
	}
	if _, err := os.Stat(keep.Path()); err != nil {
		t.Errorf("kept group: %v, want present", err)
	}
}

func TestNewRejects(t *testing.T) {
	m := testManager(t, false)
	id := testID(t, "dup")
	g, err := m.New(id, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	tests := []struct {
		name string
		id   string
		l    Limits
		want errs.Code
	}{
		{"exists", id, Limits{}, errs.InvalidArgument},
		{"bad id", "../x", Limits{}, errs.InvalidArgument},
		{"negative", testID(t, "neg"), Limits{PidsMax: -1}, errs.InvalidArgument},
	}
	if len(m.controllers) == 0 {
		tests = append(tests, struct {
			name string
			id   string
			l    Limits
			want errs.Code
		}{"limit without controller", testID(t, "nolimit"), Limits{MemoryMax: 1 << 20}, errs.Unavailable})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := m.New(tt.id, tt.l)
			if g != nil {
				g.Remove()
			}
			if got := errs.CodeOf(err); got != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
			if tt.id != id {
				if _, err := os.Stat(filepath.Join(m.jobs, tt.id)); err == nil {
					t.Errorf("failed New left %s behind", tt.id)
				}
			}
		})
	}
	var nilM *Manager
	if _, err := nilM.New("x", Limits{}); errs.CodeOf(err) != errs.Unavailable {
		t.Errorf("nil Manager: got %v, want UNAVAILABLE", err)
	}
}

func TestPidsMaxContainsForkBomb(t *testing.T) {
	m := testManager(t, true)
	g, err := m.New(testID(t, "pids"), Limits{PidsMax: 10, MemoryMax: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	cmd, _, stdin := startInGroup(t, g, "sh", "-c", `read x; for i in $(seq 50); do sleep 5 & done; echo started; wait`)
	io.WriteString(stdin, "go\n")
	stdin.Close()
	deadline := time.Now().Add(3 * time.Second)
	maxSeen := 0
	for time.Now().Before(deadline) {
		_, n, err := g.Stats()
		if err != nil {
			t.Fatal(err)
		}
		maxSeen = max(maxSeen, n)
		if n > 10 {
			t.Fatalf("pids: got %d, want <= 10", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	events, _ := os.ReadFile(filepath.Join(g.Path(), "pids.events"))
	if !strings.Contains(string(events), "max ") || strings.Contains(string(events), "max 0") {
		t.Errorf("pids.events: got %q, want forks refused", events)
	}
	if maxSeen < 5 {
		t.Errorf("max pids seen: got %d, want close to 10", maxSeen)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if peak, _, err := g.Stats(); err == nil {
		t.Errorf("Stats after Remove: got peak %d, want an error", peak)
	}
}

func BenchmarkNewRemove(b *testing.B) {
	m, err := Detect()
	if err != nil {
		testutil.NeedSandbox(b, testutil.Cgroup, false, fmt.Sprintf("cgroup v2 not available: %v", err))
	}
	for i := 0; i < b.N; i++ {
		g, err := m.New(fmt.Sprintf("bench-%d-%d", os.Getpid(), i), Limits{PidsMax: 100})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Remove(); err != nil {
			b.Fatal(err)
		}
	}
}
