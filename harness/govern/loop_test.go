package govern

import (
	"context"
	"strconv"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/loop"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
)

func TestLoopScope(t *testing.T) {
	tests := []struct {
		name   string
		caller messages.Caller
		want   string
	}{
		{"a run", messages.Caller{RunID: "run_1", Session: "s1"}, "run:run_1"},
		{"a session without a run", messages.Caller{Session: "s1"}, "session:s1"},
		{"nobody (the embedded library)", messages.Caller{}, ""},
		{"a client alone says nothing of who", messages.Caller{Client: messages.Client{Name: "x"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LoopScope(tt.caller); got != tt.want {
				t.Fatalf("LoopScope(%+v) = %q, want %q", tt.caller, got, tt.want)
			}
		})
	}
}

// Through the gate and CheckLoop: the repetitions of one run never count
// for another, the same run still trips, and callers with no run and no
// session share the global scope.
func TestGateLoopIsPerCaller(t *testing.T) {
	runA := messages.Caller{RunID: "run_a", Session: "s"}
	runB := messages.Caller{RunID: "run_b", Session: "s"}
	sessC := messages.Caller{Session: "c"}
	nobody := messages.Caller{}
	tests := []struct {
		name     string
		recorded []messages.Caller // each ran the command once, same result
		caller   messages.Caller
		wantLoop bool
	}{
		{"two runs twice each", []messages.Caller{runA, runA, runB}, runB, false},
		{"the same run three times", []messages.Caller{runA, runB, runA, runA}, runA, true},
		{"a session is its own scope", []messages.Caller{runA, runA, runA}, sessC, false},
		{"a run is not charged with a session's", []messages.Caller{sessC, sessC, sessC}, runA, false},
		{"the same session three times", []messages.Caller{sessC, sessC, sessC}, sessC, true},
		{"nobody shares the global scope", []messages.Caller{nobody, nobody, nobody}, nobody, true},
		{"the global scope is not a run's", []messages.Caller{runA, runA, runA}, nobody, false},
	}
	args := map[string]any{"argv": []string{"ls", "pkg"}}
	hash, err := ledger.InputHash("run_command", args)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(Config{Audit: &runtime.FakeAudit{}})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range tt.recorded {
				g.LoopRecord(loop.Observation{Scope: LoopScope(c), Op: "run_command", InputHash: hash, ResultHash: "same", TreeRevision: "T", ReceiptID: "r" + strconv.Itoa(i)})
			}
			in := Input{Tool: "run_command", Kind: route.Command, Argv: []string{"ls", "pkg"}, Args: args, TreeRevision: "T", Caller: tt.caller}
			err = g.CheckLoop(in)
			if got := errs.CodeOf(err) == errs.LoopDetected; got != tt.wantLoop {
				t.Fatalf("CheckLoop: %v, want loop %v", err, tt.wantLoop)
			}
			_, err = g.Gate(context.Background(), in)
			if (tt.wantLoop && errs.CodeOf(err) != errs.LoopDetected) || (!tt.wantLoop && err != nil) {
				t.Fatalf("Gate: %v, want loop %v", err, tt.wantLoop)
			}
		})
	}
}
