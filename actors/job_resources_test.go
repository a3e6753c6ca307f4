package actors

import (
	"testing"

	"github.com/harnessd/harnessd/messages"
)

func TestEndedResources(t *testing.T) {
	rs := func(cpu, peak, rd, wr int64, procs int) *messages.Resources {
		return &messages.Resources{CPUMs: cpu, PeakRSSBytes: peak, IOReadBytes: rd, IOWriteBytes: wr, Processes: procs}
	}
	tests := []struct {
		name string
		jobs map[string]*messages.Job
		want messages.Resources
	}{
		{name: "none", want: messages.Resources{}},
		{name: "ended jobs add up, peaks are the largest", jobs: map[string]*messages.Job{
			"a": {State: messages.JobSucceeded, Resources: rs(1500, 64<<20, 10, 20, 2)},
			"b": {State: messages.JobFailed, Resources: rs(500, 8<<20, 1, 2, 5)},
			"c": {State: messages.JobCancelled, Resources: rs(1, 1, 1, 1, 1)},
		}, want: messages.Resources{CPUMs: 2001, PeakRSSBytes: 64 << 20, IOReadBytes: 12, IOWriteBytes: 23, Processes: 5}},
		{name: "live jobs and jobs without figures are left out", jobs: map[string]*messages.Job{
			"run":   {State: messages.JobRunning, Resources: rs(900, 900, 900, 900, 9)},
			"queue": {State: messages.JobQueued},
			"old":   {State: messages.JobSucceeded},
			"done":  {State: messages.JobTimedOut, Resources: rs(7, 7, 7, 7, 1)},
		}, want: messages.Resources{CPUMs: 7, PeakRSSBytes: 7, IOReadBytes: 7, IOWriteBytes: 7, Processes: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := endedResources(tt.jobs); got != tt.want {
				t.Errorf("endedResources = %+v, want %+v", got, tt.want)
			}
		})
	}
}
