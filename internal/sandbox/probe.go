package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Kernel is what the running kernel offers for confinement, probed once.
type Kernel struct {
	// LandlockABI is the Landlock ABI version (0 = none).
	LandlockABI int
	// Seccomp is true when seccomp filters can be loaded.
	Seccomp bool
	// UserNS is true when this process may create a user namespace (and,
	// in it, mount, network and pid namespaces).
	UserNS bool
	// UserNSReason says why not, when UserNS is false.
	UserNSReason string
}

// probeOnce remembers the probe of this process: the kernel does not change.
var probeOnce = sync.OnceValue(probeKernel)

// Probe returns what the kernel offers (probed once per process).
func Probe() Kernel { return probeOnce() }

func probeKernel() Kernel {
	k := Kernel{Seccomp: seccomp.Supported()}
	if v, err := ll.LandlockGetABIVersion(); err == nil {
		k.LandlockABI = v
	}
	k.UserNS, k.UserNSReason = probeUserNS()
	return k
}

// probeUserNS tries to start a process in new user, mount, network and pid
// namespaces: the sysctls that forbid it are many (kernel, Debian, Ubuntu's
// AppArmor restriction, container seccomp), the attempt is the truth.
func probeUserNS() (bool, string) {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false, "user.max_user_namespaces is 0"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" && os.Getuid() != 0 {
		return false, "kernel.unprivileged_userns_clone is 0"
	}
	exe, err := os.Executable()
	if err != nil {
		return false, "cannot find the harnessd executable: " + err.Error()
	}
	// The probe runs /bin/true (or this executable with no arguments
	// would start a daemon): any small program will do.
	prog := "/bin/true"
	if _, err := os.Stat(prog); err != nil {
		prog = "/usr/bin/true"
	}
	if _, err := os.Stat(prog); err != nil {
		prog = exe
	}
	cmd := exec.Command(prog)
	cmd.Args = []string{prog, "--version"}
	cmd.SysProcAttr = nsAttr(os.Getuid(), os.Getgid(), true)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if prog == exe && asExit(err, &ee) {
			return true, "" // it started in the namespaces
		}
		return false, "creating user, mount, network and pid namespaces failed: " + err.Error()
	}
	return true, ""
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*ee = e
	}
	return ok
}

// nsAttr is the SysProcAttr of a process in new user, mount, pid, ipc and
// uts namespaces (and network, when isolate). The outer uid and gid map to
// 0 inside, so the launcher keeps its capabilities in the namespace across
// its exec (it needs them to mount); it drops every one of them before it
// runs the command (dropCaps).
func nsAttr(uid, gid int, isolate bool) *syscall.SysProcAttr {
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	if isolate {
		flags |= syscall.CLONE_NEWNET
	}
	return &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Setpgid:                    true,
		Pdeathsig:                  syscall.SIGKILL,
	}
}

// Layers are the confinement layers of a profile, for status.
type Layers struct {
	Profile     Profile `json:"profile"`
	Mode        string  `json:"mode"` // "namespaces", "landlock" or "none"
	UserNS      bool    `json:"user_namespace"`
	MountNS     bool    `json:"mount_namespace"`
	NetNS       bool    `json:"network_namespace"`
	PidNS       bool    `json:"pid_namespace"`
	LandlockABI int     `json:"landlock_abi"`
	Seccomp     bool    `json:"seccomp"`
	PidsLimit   string  `json:"pids_limit"`
	// Weakened says what a missing layer weakens, one line each.
	Weakened []string `json:"weakened,omitempty"`
}

func (l Layers) String() string {
	var b strings.Builder
	b.WriteString(string(l.Profile) + ": " + l.Mode)
	if l.LandlockABI > 0 {
		b.WriteString(", landlock abi " + strconv.Itoa(l.LandlockABI))
	}
	if l.UserNS {
		b.WriteString(", user+mount+pid")
		if l.NetNS {
			b.WriteString("+net")
		}
		b.WriteString(" namespaces")
	}
	if l.Seccomp {
		b.WriteString(", seccomp")
	}
	b.WriteString(", pids " + l.PidsLimit)
	return b.String()
}
