package check

import (
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/messages"
)

func TestBudgetOf(t *testing.T) {
	tests := []struct {
		name      string
		spec      messages.CheckSpec
		fastCap   time.Duration
		fast      time.Duration
		durableMs int // 0 = times out on the Fast Path
	}{
		{name: "default timeout under the default cap", spec: messages.CheckSpec{TimeoutMs: focusedTimeoutMs, DefaultTimeout: true},
			fastCap: 15 * time.Second, fast: 15 * time.Second, durableMs: unfocusedTimeoutMs},
		{name: "default timeout under a small cap", spec: messages.CheckSpec{TimeoutMs: focusedTimeoutMs, DefaultTimeout: true},
			fastCap: 300 * time.Millisecond, fast: 300 * time.Millisecond, durableMs: unfocusedTimeoutMs},
		{name: "own timeout within the cap times out", spec: messages.CheckSpec{TimeoutMs: 5_000},
			fastCap: 15 * time.Second, fast: 5 * time.Second},
		{name: "own timeout equal to the cap times out", spec: messages.CheckSpec{TimeoutMs: 15_000},
			fastCap: 15 * time.Second, fast: 15 * time.Second},
		{name: "own timeout beyond the cap continues with it", spec: messages.CheckSpec{TimeoutMs: 10_000},
			fastCap: time.Second, fast: time.Second, durableMs: 10_000},
		{name: "a cap beyond the default timeout", spec: messages.CheckSpec{TimeoutMs: focusedTimeoutMs, DefaultTimeout: true},
			fastCap: time.Minute, fast: 15 * time.Second, durableMs: unfocusedTimeoutMs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := budgetOf(tt.spec, tt.fastCap)
			if b.fast != tt.fast || b.durableMs != tt.durableMs || b.capMs != int(tt.fastCap/time.Millisecond) {
				t.Fatalf("budget = %+v, want fast %v, durable %d ms, cap %v", b, tt.fast, tt.durableMs, tt.fastCap)
			}
		})
	}
}

func TestBudgetEscalates(t *testing.T) {
	capped := budget{fast: time.Second, durableMs: unfocusedTimeoutMs, capMs: 1000}
	own := budget{fast: time.Second, capMs: 15_000}
	tests := []struct {
		name string
		b    budget
		o    messages.CheckOutcome
		want bool
	}{
		{name: "the cap stopped it", b: capped, o: messages.CheckOutcome{ExitCode: 143, TimedOut: true}, want: true},
		{name: "its own timeout stopped it", b: own, o: messages.CheckOutcome{ExitCode: 143, TimedOut: true}},
		{name: "it failed fast", b: capped, o: messages.CheckOutcome{ExitCode: 1}},
		{name: "it passed", b: capped, o: messages.CheckOutcome{Passed: true}},
		{name: "it was cancelled", b: capped, o: messages.CheckOutcome{ExitCode: -1, TimedOut: true, Cancelled: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.escalates(tt.o); got != tt.want {
				t.Fatalf("escalates(%+v) = %v, want %v", tt.o, got, tt.want)
			}
		})
	}
}

func TestDefineMarksTheDefaultTimeout(t *testing.T) {
	d, err := Define([]string{"go", "test", "./pkg", "-run", "TestX"}, "", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !d.DefaultTimeout || d.TimeoutMs != focusedTimeoutMs {
		t.Fatalf("no timeout: got %+v, want the default %d ms marked", d, focusedTimeoutMs)
	}
	d, err = Define([]string{"go", "test", "./pkg", "-run", "TestX"}, "", focusedTimeoutMs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.DefaultTimeout {
		t.Fatalf("an explicit timeout: got %+v, want it not marked default", d)
	}
}

func TestEscalationReasonNamesTheCapTheJobAndTheFollowUp(t *testing.T) {
	r := escalationReason(15*time.Second, "job_9")
	for _, want := range []string{"Fast Path cap of 15s", "durable job job_9", "job_status"} {
		if !strings.Contains(r, want) {
			t.Errorf("reason %q lacks %q", r, want)
		}
	}
}
