// Package wall tells an agent when its process failed because of the
// sandbox, which wall stopped it, at what, and the legitimate way through.
//
// [Diagnose] reads a failed process's exit status and output (the head
// and tail harnessd returns) for the messages the kernel's walls cause:
//
//   - EROFS ("read-only file system"): a write to a read-only bind of the
//     mount namespace (the checkout, a tool directory);
//   - EACCES/EPERM on a path: a closed secret path or hidden directory,
//     or, where Landlock confines alone, a write outside the writable
//     directories or a read of $HOME;
//   - ENOENT on a path that exists outside the sandbox but is not mounted
//     inside it, and a program that the daemon's PATH has but the
//     sandbox's view does not ("command not found", "sh: 1: x: not
//     found", `exec: "x": executable file not found`, "spawn x ENOENT");
//   - a denied socket (seccomp: "socket: operation not permitted"; Landlock:
//     "bind: permission denied"), an unreachable network or failed name
//     resolution in the network namespace.
//
// It is pure: what the confinement allowed comes in as [Facts], and the
// only question it asks outside is Facts.Exists (is this program on the
// daemon's PATH, does this path exist outside). It claims the sandbox
// only when a message names the errno and the facts agree that the wall
// stands there: an ordinary test failure, a missing tool that is missing
// outside too, a network error when the network was granted, or a denial
// harnessd's walls cannot cause (a privileged port, EROFS without a mount
// namespace) get no diagnosis. A wrong diagnosis sends an agent after the
// wrong fix, which is worse than none.
package wall
