package sandbox

import (
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
)

// deniedSyscalls fail with EPERM in every profile: namespaces and mounts
// (the launcher has set them up before the filter), kernel keyrings, BPF,
// perf, userfaultfd, module and kexec loading, handle-based opens (the
// classic container escape), io_uring (it bypasses seccomp for its
// operations), ptrace and cross-process memory access.
func deniedSyscalls() []string {
	return []string{
		"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
		"unshare", "setns", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
		"open_by_handle_at", "name_to_handle_at", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"ptrace", "process_vm_readv", "process_vm_writev", "swapon", "swapoff", "reboot", "acct", "quotactl",
		"syslog", "lookup_dcookie", "vhangup", "iopl", "ioperm",
	}
}

// filterPolicy is the seccomp policy of a profile: the denied syscalls and,
// without network, sockets of any family but AF_UNIX (Landlock covers TCP
// only; this covers UDP, raw, netlink, packet and the rest). Without a
// mount namespace (noUnix) a unix socket could connect to any socket file
// by its path, the daemon's own included (Landlock does not check
// connect): socket(AF_UNIX) is denied too; socketpair stays allowed.
func filterPolicy(network, noUnix bool) seccomp.Policy {
	denied := deniedSyscalls()
	var conds []seccomp.NameWithConditions
	switch {
	case !network && noUnix:
		denied = append(denied, "socket")
		conds = append(conds,
			seccomp.NameWithConditions{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: syscall.AF_UNIX}}})
	case !network:
		conds = append(conds,
			seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: syscall.AF_UNIX}}},
			seccomp.NameWithConditions{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: syscall.AF_UNIX}}})
	case noUnix:
		conds = append(conds, seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.Equal, Value: syscall.AF_UNIX}}})
	}
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: denied}}
	if len(conds) > 0 {
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: conds})
	}
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
}

// filterFor returns the seccomp filter of a network setting, for the
// calling thread only (no TSYNC): it sets no_new_privs first.
func filterFor(network, noUnix bool) seccomp.Filter {
	return seccomp.Filter{NoNewPrivs: true, Policy: filterPolicy(network, noUnix)}
}

// loadFilter loads the filter on the calling thread only: the caller is a
// locked thread about to fork the command.
func loadFilter(network, noUnix bool) error { return loadSeccomp(filterFor(network, noUnix)) }

func loadSeccomp(f seccomp.Filter) error { return seccomp.LoadFilter(f) }
