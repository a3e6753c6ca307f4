package actors

import (
	"testing"

	"github.com/harnessd/harnessd/messages"
)

func TestJobTransition(t *testing.T) {
	tests := []struct {
		name    string
		from    string
		ev      JobEvent
		want    string
		wantErr bool
	}{
		{"start", messages.JobQueued, JobEvStart, messages.JobRunning, false},
		{"cancel queued", messages.JobQueued, JobEvCancel, messages.JobCancelled, false},
		{"fail queued", messages.JobQueued, JobEvFail, messages.JobFailed, false},
		{"interrupt queued", messages.JobQueued, JobEvInterrupt, messages.JobInterrupted, false},
		{"succeed queued", messages.JobQueued, JobEvSucceed, messages.JobQueued, true},
		{"timeout queued", messages.JobQueued, JobEvTimeout, messages.JobQueued, true},
		{"succeed", messages.JobRunning, JobEvSucceed, messages.JobSucceeded, false},
		{"fail", messages.JobRunning, JobEvFail, messages.JobFailed, false},
		{"timeout", messages.JobRunning, JobEvTimeout, messages.JobTimedOut, false},
		{"cancel running", messages.JobRunning, JobEvCancel, messages.JobCancelled, false},
		{"interrupt running", messages.JobRunning, JobEvInterrupt, messages.JobInterrupted, false},
		{"start running", messages.JobRunning, JobEvStart, messages.JobRunning, true},
		{"retry interrupted", messages.JobInterrupted, JobEvRetry, messages.JobQueued, false},
		{"retry failed", messages.JobFailed, JobEvRetry, messages.JobFailed, true},
		{"cancel succeeded", messages.JobSucceeded, JobEvCancel, messages.JobSucceeded, true},
		{"start cancelled", messages.JobCancelled, JobEvStart, messages.JobCancelled, true},
		{"interrupt timed out", messages.JobTimedOut, JobEvInterrupt, messages.JobTimedOut, true},
		{"unknown state", "bogus", JobEvStart, "bogus", true},
		{"unknown event", messages.JobQueued, "explode", messages.JobQueued, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := JobTransition(tt.from, tt.ev)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("JobTransition(%s, %s) = %s, %v; want %s, error %v", tt.from, tt.ev, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestJobFinal(t *testing.T) {
	tests := []struct {
		state string
		want  bool
	}{
		{messages.JobQueued, false}, {messages.JobRunning, false},
		{messages.JobSucceeded, true}, {messages.JobFailed, true}, {messages.JobTimedOut, true},
		{messages.JobCancelled, true}, {messages.JobInterrupted, true},
	}
	for _, tt := range tests {
		if got := JobFinal(tt.state); got != tt.want {
			t.Errorf("JobFinal(%s) = %v, want %v", tt.state, got, tt.want)
		}
	}
}
