//go:build linux

package procstat

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/shirou/gopsutil/v3/cpu"
	"github.com/shirou/gopsutil/v3/process"
)

// maxTree bounds the processes one sample reads (a fork bomb is the
// pids ceiling's to stop, not the sampler's to follow).
const maxTree = 4096

// Tree returns root and its descendants, host pids, parents first: the
// children lists of every thread of each process of the host's /proc.
// It follows pid namespaces (a sandboxed command is a child of the
// sandbox's launcher, listed there by its host pid), which gopsutil's
// Children (pgrep) does by starting a process per call.
func Tree(root int) []int {
	var out []int
	queue := []int{root}
	seen := map[int]bool{}
	for len(queue) > 0 && len(out) < maxTree {
		q := queue[0]
		queue = queue[1:]
		if seen[q] {
			continue
		}
		seen[q] = true
		dir := "/proc/" + strconv.Itoa(q) + "/task"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // gone
		}
		out = append(out, q)
		for _, t := range tasks {
			b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil && c > 0 {
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// Sample reads the figures of every process of the tree rooted at root.
// A process that is gone before its CPU time is read is left out; a
// figure that cannot be read (I/O of a process of another user) is 0.
func Sample(root int) []Proc {
	ctx := context.Background()
	pids := Tree(root)
	out := make([]Proc, 0, len(pids))
	for _, pid := range pids {
		p := &process.Process{Pid: int32(pid)}
		t, err := p.TimesWithContext(ctx)
		if err != nil {
			continue
		}
		r := Proc{Pid: pid, CPUMs: int64((t.User+t.System)*1000) + reapedMs(pid)}
		if m, err := p.MemoryInfoWithContext(ctx); err == nil {
			r.RSSBytes = int64(m.RSS)
		}
		if io, err := p.IOCountersWithContext(ctx); err == nil {
			r.IOReadBytes, r.IOWriteBytes = int64(io.ReadBytes), int64(io.WriteBytes)
		}
		out = append(out, r)
	}
	return out
}

// reapedMs is the CPU time of the children pid reaped (cutime + cstime of
// /proc/<pid>/stat, fields 16 and 17), which gopsutil's Times leaves out.
func reapedMs(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return parseReapedMs(b, cpu.ClocksPerSec)
}

// parseReapedMs parses cutime and cstime from a /proc/<pid>/stat line in
// milliseconds, with ticks clock ticks per second; 0 when malformed.
func parseReapedMs(stat []byte, ticks float64) int64 {
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted after its last ')'. Field 3 (state) is rest[0].
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || ticks <= 0 {
		return 0
	}
	rest := strings.Fields(string(stat[i+1:]))
	// cutime is field 16, cstime field 17: rest[13], rest[14].
	if len(rest) < 15 {
		return 0
	}
	cu, err1 := strconv.ParseFloat(rest[13], 64)
	cs, err2 := strconv.ParseFloat(rest[14], 64)
	if err1 != nil || err2 != nil || cu < 0 || cs < 0 {
		return 0
	}
	return int64((cu + cs) / ticks * 1000)
}
