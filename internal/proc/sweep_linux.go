//go:build linux

package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// maxSweepPasses bounds the sweep: each pass kills the marked processes
	// it sees and waits for them; the next pass catches what they forked
	// before dying.
	maxSweepPasses = 8
	// sweepExitWait bounds how long one pass waits for its victims to exit.
	sweepExitWait = 2 * time.Second
	// environBufSize is the read buffer for /proc/<pid>/environ; environ is
	// streamed through it, so its size does not limit what is searched.
	environBufSize = 16 << 10
)

var environBufPool = sync.Pool{New: func() any { b := make([]byte, environBufSize); return &b }}

// procMatchesSelf reports whether /proc shows this process's pid namespace;
// the ns_last_pid shortcut is only sound then.
var procMatchesSelf = sync.OnceValue(func() bool {
	link, err := os.Readlink("/proc/self")
	return err == nil && link == strconv.Itoa(os.Getpid())
})

// SweepMarked SIGKILLs every process whose environment carries
// RunIDEnv=runID, waits for them to exit, and repeats until none are left (at
// most a few passes). It returns how many of them were outside process group
// pgid (pass 0 to count all). Processes whose environ cannot be read (other
// users, unless running as root) are not seen. It scans all of /proc; Run and
// Start sweep their own runs with a cheaper, pid-range-limited scan. It is
// exported for callers that supervise processes of their own with the same
// marker convention.
func SweepMarked(runID string, pgid int) int {
	if runID == "" {
		return 0
	}
	return sweep([]byte(RunIDEnv+"="+runID), pgid, nil)
}

func sweep(needle []byte, pgid int, scope func() func(pid int) bool) int {
	total := 0
	for pass := 0; pass < maxSweepPasses; pass++ {
		var in func(int) bool
		if scope != nil {
			in = scope()
		}
		escaped, found := sweepPass(needle, pgid, in)
		total += escaped
		if found == 0 {
			break
		}
	}
	return total
}

// pidClock is a sample of the kernel's pid allocation state, taken just
// before a run's leader is forked.
type pidClock struct {
	forks uint64 // /proc/stat "processes": tasks forked since boot
	tasks uint64 // /proc/loadavg: tasks alive
	ok    bool
}

func samplePidClock() pidClock {
	if !procMatchesSelf() {
		return pidClock{}
	}
	forks, ok1 := readForks()
	_, tasks, ok2 := readLoadavg()
	return pidClock{forks: forks, tasks: tasks, ok: ok1 && ok2}
}

// sweepRun sweeps a run whose leader (also the group id) has exited but is
// not reaped yet; c0 was sampled before the leader was forked.
//
// Pids are allocated cyclically, so every descendant got a pid in the cyclic
// range (leader, last], where last is the namespace's last allocated pid,
// unless the allocation cursor lapped the whole pid space during the run.
// A lap has to pass every pid once, each either allocated then (at most the
// forks since c0) or in use (at most 3 per task alive at c0: pid, group and
// session), so when forks + 3*tasks stays well below pid_max no lap happened
// and only pids in the range need their environ read. When last is the leader
// itself nothing was forked since, and nothing needs to be read at all.
// Otherwise all of /proc is scanned.
func sweepRun(runID string, leader int, c0 pidClock) int {
	last, _, ok := readLoadavg()
	if c0.ok && ok && last == leader {
		return 0
	}
	scope := func() func(int) bool {
		if !c0.ok {
			return nil
		}
		last, _, ok := readLoadavg()
		forks, ok2 := readForks()
		pidMax, ok3 := readPidMax()
		if !ok || !ok2 || !ok3 || forks < c0.forks || (forks-c0.forks)+3*c0.tasks >= pidMax/2 {
			return nil
		}
		return func(pid int) bool { return inCyclicRange(pid, leader, last) }
	}
	return sweep([]byte(RunIDEnv+"="+runID), leader, scope)
}

// inCyclicRange reports whether pid is in the cyclic range (from, to].
func inCyclicRange(pid, from, to int) bool {
	if from <= to {
		return from < pid && pid <= to
	}
	return pid > from || pid <= to
}

// readLoadavg returns the last pid allocated in this pid namespace and the
// number of tasks alive, from /proc/loadavg ("0.00 0.01 0.05 1/123 4567").
func readLoadavg() (last int, tasks uint64, ok bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 5 {
		return 0, 0, false
	}
	_, t, found := bytes.Cut(f[3], []byte("/"))
	if !found {
		return 0, 0, false
	}
	tasks, err1 := strconv.ParseUint(string(t), 10, 64)
	last, err2 := strconv.Atoi(string(f[4]))
	return last, tasks, err1 == nil && err2 == nil
}

// readForks returns the number of forks since boot from /proc/stat.
func readForks() (uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.Index(b, []byte("\nprocesses "))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len("\nprocesses "):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64)
	return n, err == nil
}

// readPidMax returns this namespace's pid_max.
func readPidMax() (uint64, bool) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	return n, err == nil
}

// victim is a marked process being killed; fd is its pidfd, or -1 when the
// kernel has no pidfds.
type victim struct {
	pid int
	fd  int
}

// sweepPass kills the live marked processes it finds in one /proc scan and
// waits for them to exit. found counts them all, escaped those outside pgid.
// A non-nil in limits the scan to the pids it accepts.
func sweepPass(needle []byte, pgid int, in func(pid int) bool) (escaped, found int) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, 0
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	bp := environBufPool.Get().(*[]byte)
	defer environBufPool.Put(bp)
	buf := *bp
	self := os.Getpid()
	var victims []victim
	for _, name := range names {
		pid, ok := parsePid(name)
		if !ok || pid == self || pid == pgid || (in != nil && !in(pid)) {
			continue
		}
		if !environHas(pid, needle, buf) {
			continue
		}
		v, ok := claim(pid, needle, buf)
		if !ok {
			continue
		}
		found++
		if g, err := syscall.Getpgid(pid); err == nil && (pgid <= 0 || g != pgid) {
			escaped++
		}
		v.kill()
		victims = append(victims, v)
	}
	deadline := time.Now().Add(sweepExitWait)
	for _, v := range victims {
		v.waitExit(deadline)
	}
	return escaped, found
}

// parsePid parses a /proc entry name as a pid.
func parsePid(name string) (int, bool) {
	if name == "" || len(name) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n > 0
}

// environHas reports whether /proc/<pid>/environ contains needle. It streams
// the file through buf, so memory does not depend on the environment's size.
// Exited processes (zombies) have an empty environ.
func environHas(pid int, needle, buf []byte) bool {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/environ", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	keep := 0
	for {
		n, err := syscall.Read(fd, buf[keep:])
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 {
			return false
		}
		data := buf[:keep+n]
		if bytes.Contains(data, needle) {
			return true
		}
		keep = min(len(needle)-1, len(data))
		copy(buf, data[len(data)-keep:])
	}
}

// claim pins pid with a pidfd and checks the marker again through it, so a
// pid recycled since the scan is never signalled.
func claim(pid int, needle, buf []byte) (victim, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ENOSYS {
		return victim{pid: pid, fd: -1}, true // pre-5.3 kernel: best effort
	}
	if err != nil {
		return victim{}, false
	}
	if !environHas(pid, needle, buf) {
		unix.Close(fd)
		return victim{}, false
	}
	return victim{pid: pid, fd: fd}, true
}

func (v victim) kill() {
	if v.fd >= 0 {
		_ = unix.PidfdSendSignal(v.fd, unix.SIGKILL, nil, 0)
		return
	}
	_ = syscall.Kill(v.pid, syscall.SIGKILL)
}

// waitExit waits until the victim has exited (zombie or gone) or deadline,
// and releases its pidfd.
func (v victim) waitExit(deadline time.Time) {
	if v.fd < 0 {
		for time.Now().Before(deadline) && processAlive(v.pid) {
			time.Sleep(time.Millisecond)
		}
		return
	}
	defer unix.Close(v.fd)
	for {
		ms := time.Until(deadline).Milliseconds()
		if ms <= 0 {
			return
		}
		fds := []unix.PollFd{{Fd: int32(v.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(ms))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			return
		}
	}
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the last ')' (the command name may contain one).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	switch b[i+2] {
	case 'Z', 'X', 'x':
		return false
	}
	return true
}

// pidsEvery is how often the process ceiling is checked.
const pidsEvery = 25 * time.Millisecond

// countTree counts pid and its descendants, through the children lists of
// /proc (one read per thread of each process in the tree).
func countTree(pid int) int {
	n := 0
	queue := []int{pid}
	seen := map[int]bool{}
	for len(queue) > 0 && n < 1<<16 {
		q := queue[0]
		queue = queue[1:]
		if seen[q] {
			continue
		}
		seen[q] = true
		n++
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(q) + "/task")
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(q) + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return n
}
