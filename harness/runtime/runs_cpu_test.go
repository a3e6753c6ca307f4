package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/messages"
)

// CPU reaches every budget above the run that used it: a check's (its
// span, counted by the run itself) and a job's (Use, when it ends) are
// the child's own counters and its ancestors' draws; an ancestor whose
// cpu_seconds are used refuses a command of any run below it, and a
// read-only draw of nothing passes.
func TestRunsCPUReachesAncestors(t *testing.T) {
	r := startRuntime(t)
	ctx := context.Background()
	start := func(m messages.RunStart) RunEntry {
		t.Helper()
		st, err := r.Runs.Start(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := r.Runs.Lookup(st.RunID)
		if !ok {
			t.Fatalf("run %s is not in the index", st.RunID)
		}
		return e
	}
	top := start(messages.RunStart{Goal: "top", Budget: messages.RunBudget{CPUSeconds: 2}})
	mid := start(messages.RunStart{Goal: "mid", ParentRunID: top.ID})
	leaf := start(messages.RunStart{Goal: "leaf", ParentRunID: mid.ID})

	r.Runs.Record(leaf, messages.RunSpan{SpanID: "sp_1", Op: "run_check", Outcome: "ok", Start: time.Now(), CPUMs: 700})
	r.Runs.Use(leaf.ID, 800)
	r.Runs.Use("run_gone", 5000) // a run that is not live is charged nothing
	state := func(e RunEntry) messages.RunState {
		t.Helper()
		g, err := r.Runs.Get(ctx, e.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		return g.State
	}
	if st := state(leaf); st.Counters.CPUMs != 1500 || st.Drawn.CPUMs != 0 {
		t.Fatalf("leaf counters %+v drawn %+v; want its own 1500 ms", st.Counters, st.Drawn)
	}
	for _, e := range []RunEntry{mid, top} {
		if st := state(e); st.Drawn.CPUMs != 1500 || st.Counters.CPUMs != 0 {
			t.Fatalf("%s counters %+v drawn %+v; want 1500 ms drawn by its descendant", e.ID, st.Counters, st.Drawn)
		}
	}
	if err := r.Runs.Charge(ctx, leaf, runs.Draw{Commands: 1}); err != nil {
		t.Fatalf("1.5 of 2 CPU seconds used: %v", err)
	}
	r.Runs.Use(mid.ID, 600)
	err := r.Runs.Charge(ctx, leaf, runs.Draw{Commands: 1})
	if errs.CodeOf(err) != errs.BudgetExceeded || errs.From(err).Details["resource"] != "cpu_seconds" || errs.From(err).Details["run_id"] != top.ID {
		t.Fatalf("2.1 of 2 CPU seconds used: %v, want BUDGET_EXCEEDED cpu_seconds of %s", err, top.ID)
	}
	if err := r.Runs.Charge(ctx, leaf, runs.Draw{}); err != nil {
		t.Fatalf("a draw of nothing past cpu_seconds: %v", err)
	}
	// The refused draw was refunded on the runs below the one that refused.
	if st := state(leaf); st.Counters.Commands != 1 {
		t.Fatalf("leaf commands %d after one granted and one refused draw, want 1", st.Counters.Commands)
	}
}
