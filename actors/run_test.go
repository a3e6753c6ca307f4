package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A run actor that panics comes back with its stored state (stages,
// draws) and keeps counting; the runs supervisor that panics restores its
// active runs from the store.
func TestRunRestartAfterPanicReloadsItsState(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	ix := &RunIndex{}
	cfg := RunsConfig{Store: st, Index: ix, SweepEvery: time.Hour, childWrap: crashable}
	sup := spawnCrashable(t, s, "runs", NewRuns(cfg))
	t.Cleanup(func() { _ = s.Root.PoisonFuture(sup).Wait() })
	run := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Goal: "g", Budget: messages.RunBudget{Commands: 2}})).State
	want[messages.RunGot](t, request(t, s, sup, messages.RunStage{RunID: run.RunID, Stage: "plan", Status: messages.StageCompleted}))
	e, ok := ix.Lookup(run.RunID)
	if !ok {
		t.Fatal("the run is not in the index")
	}
	want[messages.RunCharged](t, request(t, s, e.PID, messages.RunCharge{RunID: run.RunID, Commands: 1}))
	// A span of a mutation stores the state with the draw.
	s.Root.Send(e.PID, messages.RunSpan{SpanID: "sp1", Op: "apply_patch", Outcome: "ok", ReceiptID: "r1", Start: time.Now()})

	crashNow(t, s, e.PID)
	got := want[messages.RunGot](t, request(t, s, e.PID, messages.RunGet{RunID: run.RunID, Spans: true}))
	if len(got.State.CompletedStages) != 1 || got.State.Counters.Commands != 1 || len(got.Spans) != 1 {
		t.Fatalf("after the restart: %+v spans %d", got.State, len(got.Spans))
	}
	// The budget still holds: one command left.
	want[messages.RunCharged](t, request(t, s, e.PID, messages.RunCharge{RunID: run.RunID, Commands: 1}))
	f := want[messages.Failed](t, request(t, s, e.PID, messages.RunCharge{RunID: run.RunID, Commands: 1}))
	if errs.CodeOf(ErrorOf(f)) != errs.BudgetExceeded {
		t.Fatalf("third command: %v", ErrorOf(f))
	}

	crashNow(t, s, sup)
	var stored messages.RunState
	if err := st.Get(persistence.RunKey(run.RunID), &stored); err != nil || stored.Status != messages.RunActive {
		t.Fatalf("stored run: %+v %v", stored, err)
	}
	got = want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: run.RunID}))
	if got.State.RunID != run.RunID || got.State.Status != messages.RunActive {
		t.Fatalf("after the supervisor's restart: %+v", got.State)
	}
}

// An implicit run of a session that only reads stores nothing, and ends
// with its session (reason "session ended", still storing nothing); a run
// its session left with a stage open waits to be resumed, and the sweep
// ends it as abandoned after the resume window.
func TestRunsImplicitReadOnlyStoresNothingAndAbandonment(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	ix := &RunIndex{}
	t0 := time.Unix(1_000_000, 0)
	sup := spawnCrashable(t, s, "runs", NewRuns(RunsConfig{Store: st, Index: ix, SweepEvery: time.Hour, ResumeWindow: time.Hour, Now: func() time.Time { return t0 }}))
	t.Cleanup(func() { _ = s.Root.PoisonFuture(sup).Wait() })
	// Session s2's run has a stage open when its session goes away.
	open := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Implicit: true, Caller: messages.Caller{Session: "s2"}})).State
	want[messages.RunGot](t, request(t, s, sup, messages.RunStage{RunID: open.RunID, Stage: "tests", Status: messages.StageStarted, Now: t0}))

	run := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Implicit: true, Caller: messages.Caller{Session: "s1"}})).State
	again := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Implicit: true, Caller: messages.Caller{Session: "s1"}})).State
	if again.RunID != run.RunID {
		t.Fatalf("a second implicit start of the session made run %s, want %s", again.RunID, run.RunID)
	}
	e, _ := ix.Session("s1")
	before := st.Writes()
	for i := range 10 {
		s.Root.Send(e.PID, messages.RunSpan{SpanID: "r" + string(rune('a'+i)), Op: "read_file", Outcome: "ok", ReadOnly: true, Start: t0})
	}
	got := want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: run.RunID, Spans: true}))
	if got.State.Counters.Reads != 10 || len(got.Spans) != 10 {
		t.Fatalf("reads: %+v", got.State.Counters)
	}
	if st.Writes() != before {
		t.Fatal("an implicit run that only read wrote to the store")
	}
	s.Root.Send(sup, messages.RunSessionClosed{Session: "s1", Now: t0})
	if got := want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: run.RunID})); got.State.Status != messages.RunEnded || got.State.EndReason != "session ended" {
		t.Fatalf("the read-only run after its session closed: %s (%s), want ended (session ended)", got.State.Status, got.State.EndReason)
	}
	if st.Writes() != before {
		t.Fatal("the end of an implicit run that only read wrote to the store")
	}
	if _, ok := ix.Session("s1"); ok {
		t.Fatal("the session still names an ended run")
	}

	noted := observed(t, s, "detached")
	s.Root.Send(sup, messages.RunSessionClosed{Session: "s2", Now: t0})
	if o := <-noted; o.RunID != open.RunID || !strings.Contains(o.Observation.Text, `stage "tests" is open`) {
		t.Fatalf("the run kept active says: %+v", o.Observation)
	}
	want[messages.RunSwept](t, request(t, s, sup, messages.RunSweep{Now: t0.Add(59 * time.Minute)}))
	if got := want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: open.RunID})); got.State.Status != messages.RunActive || got.State.DetachedAt.IsZero() {
		t.Fatalf("abandoned inside the window: %+v", got.State)
	}
	want[messages.RunSwept](t, request(t, s, sup, messages.RunSweep{Now: t0.Add(61 * time.Minute)}))
	if got := want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: open.RunID})); got.State.Status != messages.RunAbandoned {
		t.Fatalf("after the window: %+v", got.State)
	}
	if _, ok := ix.Session("s2"); ok {
		t.Fatal("the session still names an ended run")
	}
}
