package procstat

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAggregate(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name   string
		prev   Figures
		sample []Proc
		want   Figures
	}{
		{name: "first sample sums the tree", sample: []Proc{
			{Pid: 1, CPUMs: 10, RSSBytes: 4 * mib, IOReadBytes: 100, IOWriteBytes: 7},
			{Pid: 2, CPUMs: 250, RSSBytes: 60 * mib, IOReadBytes: 4096, IOWriteBytes: 8192},
		}, want: Figures{CPUMs: 260, PeakRSSBytes: 64 * mib, IOReadBytes: 4196, IOWriteBytes: 8199, Processes: 2, Samples: 1}},
		{name: "counters rise, peaks stay",
			prev:   Figures{CPUMs: 260, PeakRSSBytes: 64 * mib, IOReadBytes: 4196, IOWriteBytes: 8199, Processes: 2, Samples: 1},
			sample: []Proc{{Pid: 1, CPUMs: 900, RSSBytes: 4 * mib, IOReadBytes: 5000, IOWriteBytes: 9000}},
			want:   Figures{CPUMs: 900, PeakRSSBytes: 64 * mib, IOReadBytes: 5000, IOWriteBytes: 9000, Processes: 2, Samples: 2}},
		{name: "a child that exited unreaped does not lower the counters",
			prev:   Figures{CPUMs: 900, PeakRSSBytes: 8 * mib, IOReadBytes: 5000, Processes: 3, Samples: 4},
			sample: []Proc{{Pid: 1, CPUMs: 20, RSSBytes: 9 * mib, IOReadBytes: 10}},
			want:   Figures{CPUMs: 900, PeakRSSBytes: 9 * mib, IOReadBytes: 5000, Processes: 3, Samples: 5}},
		{name: "more processes at once raise the peak count",
			prev:   Figures{Processes: 1, Samples: 1},
			sample: []Proc{{Pid: 1}, {Pid: 2}, {Pid: 3}, {Pid: 4}},
			want:   Figures{Processes: 4, Samples: 2}},
		{name: "an empty sample (the tree is gone) keeps everything",
			prev: Figures{CPUMs: 5, PeakRSSBytes: 6, IOReadBytes: 7, IOWriteBytes: 8, Processes: 9, Samples: 10},
			want: Figures{CPUMs: 5, PeakRSSBytes: 6, IOReadBytes: 7, IOWriteBytes: 8, Processes: 9, Samples: 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Aggregate(tt.prev, tt.sample); got != tt.want {
				t.Errorf("Aggregate = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFinal(t *testing.T) {
	tests := []struct {
		name string
		f    Figures
		k    Kernel
		want Figures
	}{
		{name: "rusage counts CPU after the last sample",
			f: Figures{CPUMs: 1200, PeakRSSBytes: 50, Processes: 2, Samples: 3}, k: Kernel{CPU: 1500 * time.Millisecond},
			want: Figures{CPUMs: 1500, PeakRSSBytes: 50, Processes: 2, Samples: 3}},
		{name: "a sampled sum above the kernel's stays",
			f: Figures{CPUMs: 1200, PeakRSSBytes: 500}, k: Kernel{CPU: time.Second, MaxRSSBytes: 300, CgroupPeakBytes: 400},
			want: Figures{CPUMs: 1200, PeakRSSBytes: 500}},
		{name: "a peak no sample saw: the largest process",
			f: Figures{PeakRSSBytes: 10}, k: Kernel{MaxRSSBytes: 300},
			want: Figures{PeakRSSBytes: 300}},
		{name: "a peak no sample saw: the cgroup's",
			f: Figures{PeakRSSBytes: 10}, k: Kernel{MaxRSSBytes: 300, CgroupPeakBytes: 700},
			want: Figures{PeakRSSBytes: 700}},
		{name: "a process too short to be sampled", k: Kernel{CPU: 3 * time.Millisecond, MaxRSSBytes: 4096},
			want: Figures{CPUMs: 3, PeakRSSBytes: 4096}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Final(tt.f, tt.k); got != tt.want {
				t.Errorf("Final = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSamplerStopsAndKeepsFigures(t *testing.T) {
	var n atomic.Int64
	read := func(root int) []Proc {
		c := n.Add(1)
		return []Proc{{Pid: root, CPUMs: 10 * c, RSSBytes: 100}}
	}
	s := start(42, time.Millisecond, read)
	deadline := time.Now().Add(5 * time.Second)
	for s.Figures().Samples < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("samples = %d after 5s, want at least 3", s.Figures().Samples)
		}
		time.Sleep(time.Millisecond) // polls the sampler's figures, not an actor
	}
	got := s.Stop()
	if got.CPUMs < 30 || got.PeakRSSBytes != 100 || got.Processes != 1 {
		t.Errorf("figures = %+v, want cpu_ms >= 30, peak 100, 1 process", got)
	}
	if again := s.Stop(); again != got {
		t.Errorf("second Stop = %+v, want %+v", again, got)
	}
	after := n.Load()
	if s.Figures() != got || n.Load() != after {
		t.Errorf("the sampler went on after Stop")
	}
}
