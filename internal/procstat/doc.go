// Package procstat measures what a job's or a check's process tree uses:
// CPU time (user+system), peak resident memory, storage I/O bytes and the
// peak number of processes, sampled through the tree while it runs and
// completed from the kernel's own figures when it ends.
//
// # What is gopsutil's and what is not
//
// Each process's figures are read with github.com/shirou/gopsutil/v3
// (Times from /proc/<pid>/stat, MemoryInfo from statm, IOCounters from
// io). The rest is harnessd's own, because gopsutil does not cover it:
//   - the tree: gopsutil's Children runs pgrep (a process per call); Tree
//     reads /proc/<pid>/task/<tid>/children of the host's /proc, which
//     names the host pids of a sandboxed command running in a pid
//     namespace of its own under the sandbox's launcher (its init);
//   - the CPU of reaped children: gopsutil's Times leaves out cutime and
//     cstime, where the kernel moves a child's time when its parent reaps
//     it, so the short-lived processes of a build are counted (reapedMs);
//   - the kernel's end figures: wait4's rusage of the tree's leader
//     (proc.Result.CPU, MaxRSSBytes) and the job cgroup's memory.peak,
//     folded in by Final.
//
// # Aggregation
//
// Aggregate folds one sample into the running Figures. CPU and I/O are
// counters: a sample's sum over the live tree (each process's own counts
// plus those of the children it reaped) only rises while nothing leaves
// the tree, so the figure is the largest sum seen. RSS and processes are
// peaks of the sample's sums. A process that exits between the listing
// and its reading is skipped: its counts reach its parent when reaped.
//
// # Sampler
//
// Start samples a tree every period on a goroutine of its own until Stop;
// Figures may be read at any time, from any goroutine.
package procstat
