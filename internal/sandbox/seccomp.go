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
// only; this covers UDP, raw, netlink, packet and the rest).
func filterPolicy(network bool) seccomp.Policy {
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: deniedSyscalls()}}
	if !network {
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
			{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: syscall.AF_UNIX}}},
			{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: syscall.AF_UNIX}}},
		}})
	}
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
}

// filterFor returns the seccomp filter of a network setting, for the
// calling thread only (no TSYNC): it sets no_new_privs first.
func filterFor(network bool) seccomp.Filter {
	return seccomp.Filter{NoNewPrivs: true, Policy: filterPolicy(network)}
}

// loadFilter loads the filter on the calling thread only: the caller is a
// locked thread about to fork the command.
func loadFilter(network bool) error { return loadSeccomp(filterFor(network)) }

func loadSeccomp(f seccomp.Filter) error { return seccomp.LoadFilter(f) }
