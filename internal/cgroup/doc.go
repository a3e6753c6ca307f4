// Package cgroup contains durable jobs in cgroup v2 groups with memory and
// pid limits and a kill that no descendant can escape.
//
// # Layout
//
// Detect works inside the daemon's own cgroup <ours> (from /proc/self/cgroup)
// and creates <ours>/harnessd-jobs/<id> per job. cgroup v2's "no internal
// processes" rule forbids a non-root cgroup from holding processes while it
// enables controllers for its children, so when <ours> holds the daemon,
// Detect moves the daemon into the leaf <ours>/harnessd-daemon before it
// writes "+memory +pids" to <ours>/cgroup.subtree_control. Run under systemd
// with Delegate=yes (or in a container with a writable, delegated cgroup
// namespace) for this to work.
//
// # Caveats
//
// Group.Add moves a process after it started; whatever it forked before
// that stays outside the group. Starting the process inside the group with
// SysProcAttr.UseCgroupFD (see Group.Open) avoids the race. The process
// group kill and sweep of package proc still apply either way.
//
// On machines with a cgroup v1 or hybrid layout, or without delegation,
// Detect fails with the reason and jobs run uncontained; Manager.Status
// (also on a nil Manager) reports it for `harness status`.
package cgroup
