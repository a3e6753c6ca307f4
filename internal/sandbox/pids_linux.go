package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// pidsV1Root is the cgroup v1 pids hierarchy: where it is mounted and
// harnessd may write it (a daemon run by root on a v1 or hybrid layout,
// where no delegated cgroup v2 gives pids.max), each command in namespaces
// gets a group whose pids.max the kernel enforces, exactly and before the
// fork, where the launcher's count can only react.
const pidsV1Root = "/sys/fs/cgroup/pids"

var pidsV1 struct {
	once sync.Once
	base string // "" = unavailable
}

// pidsV1Base returns the parent group of harnessd's commands, made once.
func pidsV1Base() string {
	pidsV1.once.Do(func() {
		if unix.Access(filepath.Join(pidsV1Root, "cgroup.procs"), unix.W_OK) != nil {
			return
		}
		base := filepath.Join(pidsV1Root, "harnessd-sandbox")
		if err := os.Mkdir(base, 0o755); err != nil && !os.IsExist(err) {
			return
		}
		if _, err := os.Stat(filepath.Join(base, "pids.max")); err != nil {
			return
		}
		pidsV1.base = base
	})
	return pidsV1.base
}

// newPidsGroup makes a pids group allowing max processes, or returns "".
func newPidsGroup(name string, max int) string {
	base := pidsV1Base()
	if base == "" || max <= 0 {
		return ""
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return ""
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0o644); err != nil {
		_ = os.Remove(dir)
		return ""
	}
	return dir
}

// addToPidsGroup moves pid into the group.
func addToPidsGroup(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// removePidsGroup removes an emptied group (its last processes may take a
// moment to be reaped).
func removePidsGroup(dir string) {
	for i := 0; i < 50; i++ {
		if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
