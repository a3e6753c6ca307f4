// Package proc runs agents' commands as bounded child processes: each runs in
// its own process group with a scrubbed environment, head+tail capped output,
// a timeout, and a kill sequence (SIGTERM to the group, a grace period,
// SIGKILL, then a sweep of escaped descendants) that leaves nothing behind.
//
// # Lifecycle
//
// A command is started with Start (or Run, which is Start followed by Wait).
// The child gets its own process group (Setpgid), Pdeathsig SIGKILL, and the
// environment variable HARNESSD_RUN_ID set to a fresh random 128-bit hex
// marker. A supervisor goroutine then waits for the first of: the leader
// exiting, the Spec timeout, the context being done, or Process.Cancel.
//
// On timeout or cancellation the whole group gets SIGTERM; once the leader
// exits, or Grace elapses, the group gets SIGKILL. After a normal exit of the
// leader the group is killed as well: background leftovers of a command
// (`sh -c 'sleep 60 &'`) never outlive it. The leader is not reaped until the
// group has been killed, so the group id cannot be reused in between.
//
// Then the sweep scans /proc/<pid>/environ of every process it may read for
// the run's marker and SIGKILLs marked processes that left the group (via
// setsid or setpgid), repeating until none are left alive; Result.Swept counts
// them. Marked processes are addressed through pidfds, so a recycled pid is
// never signalled. A descendant that both left the group and dropped the
// marker from its environment (env -i, setsid) cannot be found; if it keeps
// the output pipes open, they are closed after a short drain delay so Wait
// never hangs.
//
// # Caveats
//
// Pdeathsig is tied to the OS thread that forked the child. Start locks the
// goroutine to its thread around the fork, but Go may later hand that thread
// to a goroutine that locks it and exits without unlocking, which ends the
// thread and kills the child early. harnessd never does that. Pdeathsig only
// covers the direct child; grandchildren of a daemon that died are orphaned.
//
// A Spec.Stdin that is not an *os.File is copied by a goroutine. If it blocks
// in Read forever, that goroutine outlives Wait until the Read returns.
package proc
