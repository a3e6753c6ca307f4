// Package sandbox confines the processes harnessd starts with the kernel's
// own walls: Landlock rulesets, a seccomp filter, rlimits and no_new_privs
// on every confined command, and for checks and jobs, where the kernel
// allows unprivileged user namespaces, mount, network and pid namespaces in
// which the data dir and secret files are absent and the checkout and tool
// caches are copy-on-write. A Policy (plain data the operations build:
// profile, root, secrets, writable paths, network) becomes a Prepared
// confinement; the Fast Path (profile Read) confines a forking thread and
// reuses it per policy, the other profiles re-execute the program as the
// launcher (Main, LaunchArg), which confines itself and then execs the
// command. Probe says what the kernel offers and Status what a missing
// layer weakens.
//
// The package decides nothing about whether a command may run (the
// classifier, the policy and the gate do) and must not widen a Policy: what
// the caller did not grant stays closed. A layer the kernel lacks is never
// hidden: Status names what it weakens, and Require mode refuses to run
// commands without Landlock. It imports nothing of harnessd but the error
// codes and the path mechanisms (authority, pathsafe), and its tests are
// attacks: a missing kernel feature skips them unless
// HARNESSD_REQUIRE_SANDBOX says it must be there.
package sandbox
