package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// Two runs, each holding one checkout through its writing job, each patch
// the other's checkout with wait_ms: a deadlock across repositories. One
// patch fails with DEADLOCK at once (not after its 30 s wait), naming both
// runs; once that run gives up its job, the other patch goes through.
func TestDeadlockAcrossRunsIsBrokenAtOnce(t *testing.T) {
	h, root1, repo1 := fixture(t)
	root2 := testutil.Repo(t, map[string]string{"README.md": "# two\n"})
	r2, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root2})
	if err != nil {
		t.Fatal(err)
	}
	repo2 := r2.ID

	type agent struct {
		name      string
		ctx       context.Context
		run       string
		own, peer string // the repository its job holds, the one it patches
		root      string // the root of peer
		job       string
	}
	agents := []*agent{{name: "a", own: repo1, peer: repo2, root: root2}, {name: "b", own: repo2, peer: repo1, root: root1}}
	for _, a := range agents {
		ctx := session("deadlock-" + a.name)
		r, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "hold one checkout, patch the other"})
		if err != nil {
			t.Fatal(err)
		}
		a.run, a.ctx = r.RunID, harness.WithRun(ctx, r.RunID)
		j, err := h.JobStart(a.ctx, harness.JobStartArgs{RepoID: a.own, Argv: []string{"sleep", "20"}, Writes: true, RequestID: reqID(t)})
		if err != nil {
			t.Fatalf("job_start of run %s: %v", a.name, err)
		}
		a.job = j.JobID
		t.Cleanup(func() { _, _ = h.JobCancel(context.Background(), harness.JobCancelArgs{JobID: j.JobID}) })
	}
	for _, a := range agents {
		waitFor(t, "the writing job of run "+a.name+" to hold its lease", func() bool {
			s, err := h.JobStatus(context.Background(), harness.JobStatusArgs{JobID: a.job})
			return err == nil && s.State == messages.JobRunning && s.LeaseID != ""
		})
	}

	type outcome struct {
		a   *agent
		err error
		in  time.Duration
	}
	done := make(chan outcome, len(agents))
	start := time.Now()
	for _, a := range agents {
		go func() {
			_, err := h.ApplyPatch(a.ctx, harness.ApplyPatchArgs{RepoID: a.peer, RequestID: reqID(t), WaitMs: 30_000,
				Operations: writeOp("from-"+a.name+".txt", "patched by "+a.name+"\n")})
			done <- outcome{a: a, err: err, in: time.Since(start)}
		}()
	}
	first := <-done
	if errs.CodeOf(first.err) != errs.Deadlock {
		t.Fatalf("run %s's patch: %v after %s, want DEADLOCK", first.a.name, first.err, first.in)
	}
	if first.in > 10*time.Second {
		t.Fatalf("DEADLOCK came after %s: the wait was not broken", first.in)
	}
	t.Logf("run %s's patch failed with DEADLOCK after %s", first.a.name, first.in)
	e := errs.From(first.err)
	var other *agent
	for _, a := range agents {
		if a != first.a {
			other = a
		}
	}
	if !strings.Contains(e.Message, first.a.run) || !strings.Contains(e.Message, other.run) || !strings.Contains(e.Message, "workspace:") {
		t.Fatalf("message %q does not name both runs and the keys", e.Message)
	}
	entries, _ := e.Details["cycle"].([]map[string]any)
	var runsInCycle []string
	for _, c := range entries {
		runsInCycle = append(runsInCycle, c["run_id"].(string))
		if c["holds"] == nil || c["waits_for"] == nil {
			t.Fatalf("cycle entry %v", c)
		}
	}
	if !slices.Equal(runsInCycle, []string{first.a.run, other.run}) {
		t.Fatalf("cycle %v, want [%s %s] (the failed run first)", runsInCycle, first.a.run, other.run)
	}
	select {
	case o := <-done:
		t.Fatalf("run %s's patch ended (%v) while run %s's job still holds its checkout", o.a.name, o.err, first.a.name)
	default:
	}

	// The failed run gives up: its job ends, the other run's patch goes through.
	if _, err := h.JobCancel(first.a.ctx, harness.JobCancelArgs{JobID: first.a.job}); err != nil {
		t.Fatal(err)
	}
	second := <-done
	if second.err != nil {
		t.Fatalf("run %s's patch after the other run gave up: %v", second.a.name, second.err)
	}
	if second.in > 25*time.Second {
		t.Fatalf("the surviving patch took %s", second.in)
	}
	if b, err := os.ReadFile(filepath.Join(other.root, "from-"+other.name+".txt")); err != nil || string(b) != "patched by "+other.name+"\n" {
		t.Fatalf("the surviving patch wrote %q (%v)", b, err)
	}
	st := runOf(t, h, context.Background(), first.a.run)
	if st.Counters.Failures == 0 {
		t.Fatalf("run %s counts no failure: %+v", first.a.name, st.Counters)
	}
}
