package actors

import (
	"github.com/harnessd/harnessd/internal/cgroup"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/procstat"
	"github.com/harnessd/harnessd/messages"
)

// liveResources are a running job's figures so far (nil before the first
// sample, or for a process adopted without its sampler).
func liveResources(s *procstat.Sampler) *messages.Resources {
	if s == nil {
		return nil
	}
	f := s.Figures()
	if f.Samples == 0 {
		return nil
	}
	r := f.Record()
	return &r
}

// finalResources completes a dead tree's sampled figures with the kernel's:
// the leader's rusage and the job cgroup's memory peak (read before the
// group is removed; group may be nil).
func finalResources(f procstat.Figures, res proc.Result, group *cgroup.Group) messages.Resources {
	k := procstat.Kernel{CPU: res.CPU, MaxRSSBytes: res.MaxRSSBytes}
	if group != nil {
		if peak, _, err := group.Stats(); err == nil {
			k.CgroupPeakBytes = peak
		}
	}
	return procstat.Final(f, k).Record()
}

// endedResources sums the figures of the ended jobs among jobs: CPU time
// and I/O added up, the peak RSS and process count the largest of one job.
func endedResources(jobs map[string]*messages.Job) messages.Resources {
	var sum messages.Resources
	for _, j := range jobs {
		if j.Resources == nil || j.State == messages.JobQueued || j.State == messages.JobRunning {
			continue
		}
		r := j.Resources
		sum.CPUMs += r.CPUMs
		sum.IOReadBytes += r.IOReadBytes
		sum.IOWriteBytes += r.IOWriteBytes
		sum.PeakRSSBytes = max(sum.PeakRSSBytes, r.PeakRSSBytes)
		sum.Processes = max(sum.Processes, r.Processes)
	}
	return sum
}
