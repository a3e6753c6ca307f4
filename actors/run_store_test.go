package actors

import (
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// With a disk that refuses writes (full, read-only), run_start,
// run_stage, run_observe, run_escalate and run_end answer the refusal
// (STORAGE_FULL, STORAGE_UNAVAILABLE) and change nothing, in memory or in
// the store; once the disk takes writes again the same calls succeed and
// are stored.
func TestRunCallsAnswerOnlyWhatWasStored(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		code  errs.Code
	}{
		{"full", syscall.ENOSPC, errs.StorageFull},
		{"read-only", syscall.EROFS, errs.StorageUnavailable},
		{"io error", syscall.EIO, errs.StorageUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := &persistence.Faults{}
			st, err := persistence.Open(persistence.Options{InMemory: true, Faults: faults, RetryWritesAfter: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			s, ix := newTestSystem(t), &RunIndex{}
			sup := spawnCrashable(t, s, "runs", NewRuns(RunsConfig{Store: st, Index: ix, SweepEvery: time.Hour}))
			t.Cleanup(func() { _ = s.Root.PoisonFuture(sup).Wait() })
			run := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Goal: "g"})).State
			want[messages.RunGot](t, request(t, s, sup, messages.RunStage{RunID: run.RunID, Stage: "plan", Status: messages.StageCompleted}))

			faults.FailWrites(tc.cause)
			refused := func(what string, msg any) {
				t.Helper()
				f := want[messages.Failed](t, request(t, s, sup, msg))
				if errs.Code(f.Code) != tc.code {
					t.Fatalf("%s on a refusing disk = %s %q, want %s", what, f.Code, f.Message, tc.code)
				}
			}
			refused("run_start", messages.RunStart{Goal: "lost"})
			refused("run_start of a child", messages.RunStart{Goal: "child", ParentRunID: run.RunID})
			refused("run_stage", messages.RunStage{RunID: run.RunID, Stage: "build", Status: messages.StageCompleted})
			refused("run_observe", messages.RunObserve{RunID: run.RunID, Observation: messages.RunObservation{Source: "agent", Kind: "note", Text: "x"}})
			refused("run_escalate", messages.RunEscalate{RunID: run.RunID, To: messages.TierCampaign, Reason: "bigger"})
			refused("run_end", messages.RunEnd{RunID: run.RunID, Reason: "done"})

			got := want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: run.RunID})).State
			if got.Status != messages.RunActive || len(got.CompletedStages) != 1 || len(got.Observations) != len(run.Observations) ||
				len(got.Children) != 0 || got.Tier != run.Tier {
				t.Fatalf("after refused calls the run changed in memory: %+v", got)
			}
			if e, _ := ix.Lookup(run.RunID); e.Ended() || e.Tier() != run.Tier {
				t.Fatalf("after a refused end the index says ended=%v tier=%q", e.Ended(), e.Tier())
			}
			// The refused starts left no run behind, live or stored.
			deadline := time.Now().Add(5 * time.Second)
			for len(ix.Live()) != 1 {
				if time.Now().After(deadline) {
					t.Fatalf("live runs after refused starts: %d, want 1", len(ix.Live()))
				}
				time.Sleep(5 * time.Millisecond) // the refused run actors stopping
			}
			faults.FailWrites(nil)
			if n, err := st.Count([]byte(persistence.PrefixRun)); err != nil || n != 1 {
				t.Fatalf("stored runs = %d, %v; want 1", n, err)
			}

			// The disk takes writes again (after the store's probe window):
			// the same call succeeds and is stored.
			for {
				v := request(t, s, sup, messages.RunStage{RunID: run.RunID, Stage: "build", Status: messages.StageCompleted})
				if _, ok := v.(messages.RunGot); ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("run_stage after the disk was repaired: %v", v)
				}
				time.Sleep(10 * time.Millisecond) // the store's probe window
			}
			want[messages.RunGot](t, request(t, s, sup, messages.RunEnd{RunID: run.RunID, Reason: "done"}))
			var stored messages.RunState
			if err := st.Get(persistence.RunKey(run.RunID), &stored); err != nil || stored.Status != messages.RunEnded || len(stored.CompletedStages) != 2 {
				t.Fatalf("stored run = %+v, %v; want ended with 2 stages", stored, err)
			}
		})
	}
}
