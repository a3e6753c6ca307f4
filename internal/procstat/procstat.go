package procstat

import (
	"sync"
	"time"

	"github.com/harnessd/harnessd/messages"
)

// DefaultPeriod is how often a Sampler samples when Start is given 0.
const DefaultPeriod = 500 * time.Millisecond

// Figures are the resource figures of one process tree.
type Figures struct {
	// CPUMs is the user+system CPU time of the tree in milliseconds: its
	// live processes and the children they reaped.
	CPUMs int64
	// PeakRSSBytes is the largest resident memory seen: the tree's summed
	// RSS at a sample, the largest single process's (rusage) or the job
	// cgroup's memory.peak, whichever is larger.
	PeakRSSBytes int64
	// IOReadBytes and IOWriteBytes are the bytes the tree made the kernel
	// read from and write to storage (/proc/<pid>/io read_bytes and
	// write_bytes; reads served from the page cache are not counted).
	IOReadBytes  int64
	IOWriteBytes int64
	// Processes is the largest number of processes seen in the tree at
	// once (a sandboxed command's count includes the sandbox's init).
	Processes int
	// Samples is how many samples were taken.
	Samples int
}

// Proc is one process's reading in a sample.
type Proc struct {
	Pid int
	// CPUMs is its own user+system time plus its reaped children's.
	CPUMs    int64
	RSSBytes int64
	// IOReadBytes and IOWriteBytes include its reaped children's too.
	IOReadBytes, IOWriteBytes int64
}

// Aggregate folds one sample of a tree into the running figures prev (see
// the package doc): CPU and I/O keep the largest sum seen, RSS and the
// process count their peaks. An empty sample (the tree is gone) changes
// nothing but the sample count.
func Aggregate(prev Figures, sample []Proc) Figures {
	next := prev
	next.Samples++
	if len(sample) == 0 {
		return next
	}
	var cpu, rss, rd, wr int64
	for _, p := range sample {
		cpu += p.CPUMs
		rss += p.RSSBytes
		rd += p.IOReadBytes
		wr += p.IOWriteBytes
	}
	next.CPUMs = max(prev.CPUMs, cpu)
	next.PeakRSSBytes = max(prev.PeakRSSBytes, rss)
	next.IOReadBytes = max(prev.IOReadBytes, rd)
	next.IOWriteBytes = max(prev.IOWriteBytes, wr)
	next.Processes = max(prev.Processes, len(sample))
	return next
}

// Record returns the figures as a job's record and a check's outcome
// carry them.
func (f Figures) Record() messages.Resources {
	return messages.Resources{CPUMs: f.CPUMs, PeakRSSBytes: f.PeakRSSBytes, IOReadBytes: f.IOReadBytes,
		IOWriteBytes: f.IOWriteBytes, Processes: f.Processes}
}

// Kernel are the kernel's own figures of a tree that ended.
type Kernel struct {
	// CPU is the leader's user+system time including every descendant it
	// (or the sandbox's init) reaped: wait4's rusage.
	CPU time.Duration
	// MaxRSSBytes is the largest RSS of any one of them (ru_maxrss).
	MaxRSSBytes int64
	// CgroupPeakBytes is the job cgroup's memory.peak (0 = none).
	CgroupPeakBytes int64
}

// Final completes sampled figures with the kernel's end figures: the
// larger CPU time (the rusage counts what ran between the last sample and
// the end) and the larger memory peak.
func Final(f Figures, k Kernel) Figures {
	f.CPUMs = max(f.CPUMs, k.CPU.Milliseconds())
	f.PeakRSSBytes = max(f.PeakRSSBytes, k.MaxRSSBytes, k.CgroupPeakBytes)
	return f
}

// Sampler samples one process tree every period until stopped. Its
// methods are safe for concurrent use.
type Sampler struct {
	root   int
	every  time.Duration
	read   func(root int) []Proc
	stopc  chan struct{}
	donec  chan struct{}
	stopMu sync.Once

	mu  sync.Mutex // protects fig
	fig Figures
}

// Start samples the tree rooted at pid root (a host pid) at once and then
// every period (0 = DefaultPeriod) until Stop.
func Start(root int, period time.Duration) *Sampler {
	return start(root, period, Sample)
}

func start(root int, period time.Duration, read func(int) []Proc) *Sampler {
	if period <= 0 {
		period = DefaultPeriod
	}
	s := &Sampler{root: root, every: period, read: read, stopc: make(chan struct{}), donec: make(chan struct{})}
	go s.loop()
	return s
}

func (s *Sampler) loop() {
	defer close(s.donec)
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		sample := s.read(s.root)
		s.mu.Lock()
		s.fig = Aggregate(s.fig, sample)
		s.mu.Unlock()
		select {
		case <-s.stopc:
			return
		case <-t.C:
		}
	}
}

// Figures returns the figures so far.
func (s *Sampler) Figures() Figures {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fig
}

// Stop ends the sampling, waits for its goroutine and returns the
// figures. It may be called more than once.
func (s *Sampler) Stop() Figures {
	s.stopMu.Do(func() { close(s.stopc) })
	<-s.donec
	return s.Figures()
}
