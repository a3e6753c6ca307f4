package sandbox

import (
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in every profile: namespaces and mounts
// (the launcher has set them up before the filter), kernel keyrings, BPF,
// perf, userfaultfd, module and kexec loading, handle-based opens (the
// classic container escape), io_uring (it bypasses seccomp for its
// operations), ptrace and cross-process memory access, and the host-wide
// names and clocks (hostname, domain name).
func deniedSyscalls() []string {
	return []string{
		"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
		"unshare", "setns", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
		"open_by_handle_at", "name_to_handle_at", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"ptrace", "process_vm_readv", "process_vm_writev", "swapon", "swapoff", "reboot", "acct", "quotactl",
		"syslog", "lookup_dcookie", "vhangup", "iopl", "ioperm",
		"sethostname", "setdomainname", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	}
}

// setIDBits are the mode bits of set-user-ID and set-group-ID files: a
// confined process never creates one (a daemon run as root would leave a
// setuid-root binary behind for the person's next shell).
const setIDBits = unix.S_ISUID | unix.S_ISGID

// modeArgs are the syscalls that take a file mode, with the index of the
// mode argument: each is refused when the mode carries setIDBits.
var modeArgs = []struct {
	name string
	arg  uint32
}{
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2},
	{"creat", 1}, {"open", 2}, {"openat", 3}, {"mknod", 1}, {"mknodat", 2},
}

// otherProcess are the syscalls that act on another process by pid (arg 0
// for prlimit64 and sched_*; arg 1, "who", for setpriority and
// ioprio_set): refused unless they name the caller itself (0). A confined
// command may change its own limits and niceness, never the daemon's or
// another program's.
var otherProcess = []struct {
	name string
	arg  uint32
}{
	{"prlimit64", 0}, {"sched_setaffinity", 0}, {"sched_setscheduler", 0}, {"sched_setparam", 0}, {"sched_setattr", 0},
	{"setpriority", 1}, {"ioprio_set", 1},
}

// pathMetadata are the path-based syscalls that change a file's metadata
// (mode, owner, times, extended attributes) and need no right Landlock
// checks: without a mount namespace (the Fast Path), every path of the host
// is walkable by name, and a command could loosen the mode of the daemon's
// token or retime its audit key. They are refused there; the fd-based
// forms (fchmod, fchown, futimens, fsetxattr) stay, since opening the file
// needed the rights. fchmodat2 answers ENOSYS (libc then falls back to the
// forms above).
var pathMetadata = []string{"chmod", "fchmodat", "chown", "lchown", "fchownat", "utime", "utimes", "futimesat",
	"setxattr", "lsetxattr", "removexattr", "lremovexattr"}

// filterOpts says what one confined thread's filter allows.
type filterOpts struct {
	// network: sockets of every family (the host's network, or a network
	// namespace of its own that has only loopback).
	network bool
	// noUnix: no socket(AF_UNIX) either (there is no mount namespace to
	// hide the socket files: a unix socket could connect to any of them by
	// its path, the daemon's own included; Landlock does not check connect).
	noUnix bool
	// pathMeta: refuse the path-based metadata syscalls (pathMetadata).
	pathMeta bool
}

// filterPolicy is the seccomp policy of a confined thread: the denied
// syscalls; set-ID modes; other processes' limits and priorities; without
// network, sockets of any family but AF_UNIX (Landlock covers TCP only;
// this covers UDP, raw, netlink, packet and the rest); without a mount
// namespace, AF_UNIX sockets (socketpair stays allowed) and path-based
// metadata changes.
func filterPolicy(o filterOpts) seccomp.Policy {
	denied := deniedSyscalls()
	var conds []seccomp.NameWithConditions
	switch {
	case !o.network && o.noUnix:
		denied = append(denied, "socket")
		conds = append(conds,
			seccomp.NameWithConditions{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: syscall.AF_UNIX}}})
	case !o.network:
		conds = append(conds,
			seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: syscall.AF_UNIX}}},
			seccomp.NameWithConditions{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: syscall.AF_UNIX}}})
	case o.noUnix:
		conds = append(conds, seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.Equal, Value: syscall.AF_UNIX}}})
	}
	for _, m := range modeArgs {
		if m.name == "fchmodat2" && o.pathMeta {
			continue // refused whole below
		}
		conds = append(conds, seccomp.NameWithConditions{Name: m.name,
			Conditions: []seccomp.Condition{{Argument: m.arg, Operation: seccomp.BitsSet, Value: setIDBits}}})
	}
	for _, p := range otherProcess {
		conds = append(conds, seccomp.NameWithConditions{Name: p.name,
			Conditions: []seccomp.Condition{{Argument: p.arg, Operation: seccomp.NotEqual, Value: 0}}})
	}
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: denied}}
	if o.pathMeta {
		names := append([]string(nil), pathMetadata...)
		for _, n := range names {
			// Refused whole: drop their set-ID conditions above (a name
			// may appear in one group only once per action).
			conds = dropCond(conds, n)
		}
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: names},
			seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"fchmodat2"}})
		// utimensat with a path (arg 1 not NULL) changes a file by name;
		// with NULL it is futimens, on an open fd.
		conds = append(conds, seccomp.NameWithConditions{Name: "utimensat",
			Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.NotEqual, Value: 0}}})
	}
	if len(conds) > 0 {
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: conds})
	}
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: onThisArch(groups)}
}

// onThisArch drops the syscall names this architecture does not have
// (arm64 has no open, chmod or creat: only their *at forms).
func onThisArch(groups []seccomp.SyscallGroup) []seccomp.SyscallGroup {
	info, err := arch.GetInfo("")
	if err != nil {
		return groups
	}
	has := func(n string) bool { _, ok := info.SyscallNames[n]; return ok }
	for i := range groups {
		g := &groups[i]
		names := g.Names[:0:0]
		for _, n := range g.Names {
			if has(n) {
				names = append(names, n)
			}
		}
		g.Names = names
		conds := g.NamesWithCondtions[:0:0]
		for _, c := range g.NamesWithCondtions {
			if has(c.Name) {
				conds = append(conds, c)
			}
		}
		g.NamesWithCondtions = conds
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g.Names) > 0 || len(g.NamesWithCondtions) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// dropCond removes the conditions of name from conds.
func dropCond(conds []seccomp.NameWithConditions, name string) []seccomp.NameWithConditions {
	out := conds[:0]
	for _, c := range conds {
		if c.Name != name {
			out = append(out, c)
		}
	}
	return out
}

// filterFor returns the seccomp filter of o, for the calling thread only
// (no TSYNC): it sets no_new_privs first.
func filterFor(o filterOpts) seccomp.Filter {
	return seccomp.Filter{NoNewPrivs: true, Policy: filterPolicy(o)}
}

// loadFilter loads the filter on the calling thread only: the caller is a
// locked thread about to fork the command.
func loadFilter(o filterOpts) error { return loadSeccomp(filterFor(o)) }

func loadSeccomp(f seccomp.Filter) error { return seccomp.LoadFilter(f) }
