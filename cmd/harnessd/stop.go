package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// stopCmd is `harnessd stop`: SIGTERM to the daemon holding the data dir's
// lock, then wait until the process is gone.
func stopCmd(args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("stop", "Asks the daemon of the data dir to shut down gracefully (SIGTERM to the pid holding <data-dir>/harnessd.lock) and waits until it is gone.\nExit codes: 0 stopped, 1 still running after --wait, 2 usage, 3 no daemon running.", stdout)
	dataDir := fs.String("data-dir", harness.DefaultDataDir(), "data `directory` (env HARNESSD_DATA_DIR)")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the daemon to exit")
	if err := parse(fs, args); err != nil {
		return helpedOK(err)
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return usageError{error: err, cmd: "stop"}
	}
	p := daemon.PathsOf(dir)
	pid, err := daemonPid(p)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return notRunning{fmt.Errorf("no harnessd is running on %s (pid %d is gone)", dir, pid)}
		}
		return fmt.Errorf("signal pid %d: %w", pid, err)
	}
	fmt.Fprintf(stdout, "harnessd: stopping pid %d on %s ...\n", pid, dir)
	deadline := time.Now().Add(*wait)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d is still running after %s (it waits up to its --shutdown-wait for running operations; `kill -9 %d` forces it, nothing acknowledged is lost)", pid, *wait, pid)
		}
		time.Sleep(50 * time.Millisecond) // polling another process
	}
	fmt.Fprintf(stdout, "harnessd: stopped (pid %d)\n", pid)
	return nil
}

// daemonPid is the pid of the daemon holding the data dir: the pid file's,
// confirmed by /proc/locks when it can be read (so a stale pid file never
// gets another process signalled). notRunning when no daemon holds it.
func daemonPid(p daemon.Paths) (int, error) {
	b, err := os.ReadFile(p.Pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, notRunning{fmt.Errorf("no harnessd is running on %s (no pid file %s)", p.DataDir, p.Pid)}
		}
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s holds %q, not a pid", p.Pid, strings.TrimSpace(string(b)))
	}
	holders, ok := lockHolders(p.Lock)
	if ok {
		if len(holders) == 0 {
			return 0, notRunning{fmt.Errorf("no harnessd is running on %s (its lock is free; the pid file %s is stale)", p.DataDir, p.Pid)}
		}
	}
	if !processAlive(pid) {
		return 0, notRunning{fmt.Errorf("no harnessd is running on %s (pid %d is gone)", p.DataDir, pid)}
	}
	return pid, nil
}

// lockHolders lists the pids holding a flock on the file at path, from
// /proc/locks; ok is false when that cannot be read.
func lockHolders(path string) (pids []int, ok bool) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, errors.Is(err, os.ErrNotExist)
	}
	sys, isUnix := st.Sys().(*syscall.Stat_t)
	if !isUnix {
		return nil, false
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil, false
	}
	return parseLocks(string(b), sys.Ino), true
}

// parseLocks returns the pids of the FLOCK entries of /proc/locks text on
// inode ino. A line reads "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF".
// The device is not compared: overlay file systems report another one in
// stat than in /proc/locks; the inode alone only errs towards "held".
func parseLocks(text string, ino uint64) []int {
	var pids []int
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] == "->" || f[1] != "FLOCK" {
			continue
		}
		pid, err1 := strconv.Atoi(f[4])
		parts := strings.Split(f[5], ":")
		if err1 != nil || len(parts) != 3 {
			continue
		}
		n, err := strconv.ParseUint(parts[2], 10, 64)
		if err != nil || n != ino {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// processAlive reports a process that exists and is not a zombie.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// "pid (comm) S ...": the state follows the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
