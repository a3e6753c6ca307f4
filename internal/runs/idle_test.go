package runs

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/messages"
)

func TestOnSessionEnd(t *testing.T) {
	implicit := messages.RunState{RunID: "r", Status: messages.RunActive, Implicit: true}
	with := func(f func(*messages.RunState)) messages.RunState {
		st := implicit
		f(&st)
		return st
	}
	tests := []struct {
		name string
		st   messages.RunState
		open Open
		end  bool
		keep []string // each kept reason contains one of these, in order
	}{
		{"an implicit run with nothing open ends", implicit, Open{}, true, nil},
		{"an implicit run with completed stages ends", with(func(s *messages.RunState) { s.CompletedStages = []string{"plan"} }), Open{}, true, nil},
		{"an explicit run is never ended", with(func(s *messages.RunState) { s.Implicit = false }), Open{}, false, []string{"run_start"}},
		{"an open stage keeps it", with(func(s *messages.RunState) { s.CurrentStage = "tests" }), Open{}, false, []string{`stage "tests" is open`}},
		{"a blocked stage keeps it", with(func(s *messages.RunState) { s.CurrentStage, s.Blocked = "tests", true }), Open{}, false, []string{`stage "tests" is blocked`}},
		{"a live job keeps it", implicit, Open{Jobs: []string{"job_1"}}, false, []string{"job job_1"}},
		{"an unverified claim keeps it", implicit, Open{Claims: []string{"tests"}}, false, []string{`stage "tests" has a claim`}},
		{"everything is named", with(func(s *messages.RunState) { s.Implicit, s.CurrentStage = false, "x" }), Open{Jobs: []string{"j"}, Claims: []string{"c"}}, false,
			[]string{"run_start", `stage "x"`, "job j", `stage "c"`}},
		{"an ended run is left alone", with(func(s *messages.RunState) { s.Status = messages.RunEnded }), Open{}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end, keep := OnSessionEnd(tt.st, tt.open)
			if end != tt.end || len(keep) != len(tt.keep) {
				t.Fatalf("OnSessionEnd = %v %q, want %v and %d reasons", end, keep, tt.end, len(tt.keep))
			}
			for i, k := range tt.keep {
				if !strings.Contains(keep[i], k) {
					t.Errorf("reason %d = %q, want it to contain %q", i, keep[i], k)
				}
			}
		})
	}
}

func TestLiveJob(t *testing.T) {
	for state, want := range map[string]bool{
		messages.JobQueued: true, messages.JobRunning: true, "": true,
		messages.JobSucceeded: false, messages.JobFailed: false, messages.JobTimedOut: false,
		messages.JobCancelled: false, messages.JobInterrupted: false,
	} {
		if got := LiveJob(state); got != want {
			t.Errorf("LiveJob(%q) = %v, want %v", state, got, want)
		}
	}
}

func TestListOrder(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	run := func(id, status string, started time.Duration) messages.RunState {
		return messages.RunState{RunID: id, Status: status, StartedAt: t0.Add(started)}
	}
	in := []messages.RunState{
		run("old-ended", messages.RunEnded, 0),
		run("new-ended", messages.RunEnded, 3*time.Hour),
		run("old-active", messages.RunActive, time.Hour),
		run("abandoned", messages.RunAbandoned, 4*time.Hour),
		run("new-active", messages.RunActive, 2*time.Hour),
		run("tie-b", messages.RunEnded, 0),
	}
	slices.SortFunc(in, ListOrder)
	var got []string
	for _, r := range in {
		got = append(got, r.RunID)
	}
	want := []string{"new-active", "old-active", "abandoned", "new-ended", "old-ended", "tie-b"}
	if !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
}
