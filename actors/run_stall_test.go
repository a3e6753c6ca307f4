package actors

import (
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A run whose stage makes no progress for the stall window is marked
// stuck at a sweep (with an observation, and stored); a failed call does
// not clear it, a call that succeeds does. The clock is the sweep's Now:
// no sleeps.
func TestRunStageStallsAndProgressClearsIt(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	t0 := time.Unix(2_000_000, 0)
	tasks := &Tasks{}
	t.Cleanup(func() { tasks.Wait(10 * time.Second) })
	ix := &RunIndex{}
	sup := spawnCrashable(t, s, "runs", NewRuns(RunsConfig{Store: st, Index: ix, Tasks: tasks, SweepEvery: time.Hour, StallAfter: 10 * time.Minute, Now: func() time.Time { return t0 }}))
	t.Cleanup(func() { _ = s.Root.PoisonFuture(sup).Wait() })

	run := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Goal: "g", RepoID: "repo_1", Now: t0})).State
	want[messages.RunGot](t, request(t, s, sup, messages.RunStage{RunID: run.RunID, Stage: "tests", Status: messages.StageStarted, Now: t0}))
	get := func() messages.RunState {
		return want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: run.RunID})).State
	}

	want[messages.RunSwept](t, request(t, s, sup, messages.RunSweep{Now: t0.Add(10*time.Minute - time.Second)}))
	if got := get(); got.Stuck {
		t.Fatalf("stuck before the window: %+v", got)
	}
	stuck := observed(t, s, "stuck")
	want[messages.RunSwept](t, request(t, s, sup, messages.RunSweep{Now: t0.Add(10 * time.Minute)}))
	if o := <-stuck; o.RunID != run.RunID {
		t.Fatalf("no stuck observation: %+v", o.Observation)
	}
	got := get()
	if !got.Stuck || !got.StuckSince.Equal(t0) {
		t.Fatalf("after the window: stuck %v since %v, want since %v", got.Stuck, got.StuckSince, t0)
	}
	var stored messages.RunState
	if err := st.Get(persistence.RunKey(run.RunID), &stored); err != nil || !stored.Stuck {
		t.Fatalf("the stored run: stuck %v, %v", stored.Stuck, err)
	}

	e, ok := ix.Lookup(run.RunID)
	if !ok {
		t.Fatal("the run is not in the index")
	}
	at := t0.Add(11 * time.Minute)
	s.Root.Send(e.PID, messages.RunSpan{SpanID: "f", Op: "run_command", Outcome: "error", ErrorCode: "TIMEOUT", Start: at})
	if got := get(); !got.Stuck {
		t.Fatal("a failed call cleared stuck")
	}
	unstuck := observed(t, s, "unstuck")
	s.Root.Send(e.PID, messages.RunSpan{SpanID: "ok", Op: "apply_patch", Outcome: "ok", ReceiptID: "rcpt_1", Start: at.Add(time.Minute)})
	if o := <-unstuck; o.RunID != run.RunID {
		t.Fatalf("no unstuck observation: %+v", o.Observation)
	}
	if got := get(); got.Stuck || !got.StageProgressAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("after progress: stuck %v, progress at %v", got.Stuck, got.StageProgressAt)
	}
	// The window counts again from the progress.
	want[messages.RunSwept](t, request(t, s, sup, messages.RunSweep{Now: at.Add(5 * time.Minute)}))
	if got := get(); got.Stuck {
		t.Fatal("stuck again within the window after progress")
	}
}

// A run that ends writes its summary: stored with its state and under its
// repository, where the next session finds it.
func TestRunSummaryWrittenAtTheEnd(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	t0 := time.Unix(3_000_000, 0)
	tasks := &Tasks{}
	t.Cleanup(func() { tasks.Wait(10 * time.Second) })
	ix := &RunIndex{}
	sup := spawnCrashable(t, s, "runs", NewRuns(RunsConfig{Store: st, Index: ix, Tasks: tasks, SweepEvery: time.Hour, Now: func() time.Time { return t0 }}))
	t.Cleanup(func() { _ = s.Root.PoisonFuture(sup).Wait() })

	run := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Goal: "g", RepoID: "repo_1", Now: t0})).State
	e, _ := ix.Lookup(run.RunID)
	s.Root.Send(e.PID, messages.RunSpan{SpanID: "w", Op: "apply_patch", Outcome: "ok", ReceiptID: "rcpt_9", RepoID: "repo_1", Start: t0})
	s.Root.Send(e.PID, messages.RunSpan{SpanID: "c", Op: "run_check", Outcome: "ok", CheckID: "chk_1", Verdict: "pass", RepoID: "repo_1", Start: t0.Add(time.Second)})

	summed := make(chan messages.RunSummary, 1)
	sub := s.EventStream.Subscribe(func(ev any) {
		if e, ok := ev.(messages.RunEvent); ok && e.Type == "state" && e.RunID == run.RunID && e.State != nil && e.State.Summary != nil {
			select {
			case summed <- *e.State.Summary:
			default:
			}
		}
	})
	defer s.EventStream.Unsubscribe(sub)
	want[messages.RunGot](t, request(t, s, sup, messages.RunEnd{RunID: run.RunID, Reason: "done", Now: t0.Add(time.Minute)}))
	var sum messages.RunSummary
	select {
	case sum = <-summed:
	case <-time.After(10 * time.Second):
		t.Fatal("no summary within 10 s of the end")
	}
	if sum.Trigger != runs.SummaryEnded || len(sum.Changes) != 1 || sum.Changes[0].ReceiptID != "rcpt_9" || len(sum.Checks) != 1 || sum.Checks[0].Verdict != "pass" {
		t.Fatalf("summary: %+v", sum)
	}
	var stored messages.RunState
	if err := st.Get(persistence.RunKey(run.RunID), &stored); err != nil || stored.Summary == nil || stored.Summary.Text != sum.Text {
		t.Fatalf("the stored run's summary: %+v, %v", stored.Summary, err)
	}
	var byRepo []messages.RunSummary
	_ = st.Scan(persistence.RunSummaryPrefix("repo_1"), func(_ []byte, decode func(any) error) error {
		var s messages.RunSummary
		if err := decode(&s); err != nil {
			return err
		}
		byRepo = append(byRepo, s)
		return nil
	})
	if len(byRepo) != 1 || byRepo[0].RunID != run.RunID {
		t.Fatalf("the repository's summaries: %+v", byRepo)
	}
}

// A run that only read (an implicit run never stored) leaves no summary.
func TestReadOnlyRunLeavesNoSummary(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	t0 := time.Unix(4_000_000, 0)
	tasks := &Tasks{}
	ix := &RunIndex{}
	sup := spawnCrashable(t, s, "runs", NewRuns(RunsConfig{Store: st, Index: ix, Tasks: tasks, SweepEvery: time.Hour, Now: func() time.Time { return t0 }}))
	t.Cleanup(func() { _ = s.Root.PoisonFuture(sup).Wait() })
	run := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Implicit: true, Caller: messages.Caller{Session: "s1"}, Now: t0})).State
	e, _ := ix.Lookup(run.RunID)
	s.Root.Send(e.PID, messages.RunSpan{SpanID: "r", Op: "read_file", Outcome: "ok", ReadOnly: true, RepoID: "repo_1", Start: t0})
	want[messages.RunGot](t, request(t, s, sup, messages.RunEnd{RunID: run.RunID, Now: t0}))
	tasks.Wait(10 * time.Second)
	n, err := st.Count([]byte(persistence.PrefixRunSummary))
	if err != nil || n != 0 {
		t.Fatalf("summaries stored for a read-only run: %d, %v", n, err)
	}
}
