package check

import (
	"testing"

	"github.com/harnessd/harnessd/messages"
)

// A check's span carries the CPU time it used for this call only: a
// reused or joined result ran for another call, and a durable check's
// job is charged to the run when the job ends (not twice).
func TestNoteSpanCPU(t *testing.T) {
	used := &messages.Resources{CPUMs: 1500}
	tests := []struct {
		name string
		r    RunCheckResult
		want int64
	}{
		{"ran here on the Fast Path", RunCheckResult{Passed: true, OriginalRun: OriginalRun{Resources: used}}, 1500},
		{"reused evidence", RunCheckResult{Passed: true, Reused: true, OriginalRun: OriginalRun{Resources: used}}, 0},
		{"joined another call's run", RunCheckResult{Passed: true, Joined: true, OriginalRun: OriginalRun{Resources: used}}, 0},
		{"ran as a job", RunCheckResult{Passed: true, OriginalRun: OriginalRun{JobID: "job_1", Resources: used}}, 0},
		{"no figures", RunCheckResult{Passed: false}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s messages.RunSpan
			tt.r.NoteSpan(&s)
			if s.CPUMs != tt.want {
				t.Fatalf("span cpu_ms = %d, want %d", s.CPUMs, tt.want)
			}
		})
	}
}
