package harness_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	hrt "github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/testutil"
)

// Shutdown begins while a lease is held and patches wait for it: the
// waiters are answered UNAVAILABLE (nothing_written) at once, Close does
// not wait out its deadline for them, and after the store is reopened the
// same request ids with the same input run normally (no
// REQUEST_OUTCOME_UNKNOWN, no stored failure: their entries were closed as
// never begun).
func TestShutdownAnswersLeaseWaitersAtOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h, err := harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, map[string]string{"README.md": "hi\n"})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	rt := h.Runtime()
	e, _ := rt.Registry.Lookup(r.ID)
	// The holder stands for a write in progress: it holds the whole
	// checkout until after Close.
	holder, _, err := rt.Leases.Acquire(ctx, e, hrt.LeaseRequest{Owner: "holder", Operation: "apply_patch",
		Keys: []string{string(lease.WorkspaceKey(e.Repo.CheckoutID))}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	args := func(i int) harness.ApplyPatchArgs {
		return harness.ApplyPatchArgs{RepoID: r.ID, RequestID: fmt.Sprintf("waiter-%d", i), WaitMs: 30_000,
			Operations: writeOp(fmt.Sprintf("w%d.txt", i), "written\n")}
	}
	type outcome struct {
		err error
		at  time.Time
	}
	done := make(chan outcome, n)
	for i := range n {
		go func() { _, err := h.ApplyPatch(ctx, args(i)); done <- outcome{err, time.Now()} }()
	}
	// Probe the ledger (a mailbox round trip each) until every waiter has
	// begun; one still on its way to the checkout is refused the same way.
	for i := range n {
		for {
			g, err := rt.Ledger.Get(ctx, args(i).RequestID)
			if err == nil && g.Found && g.Entry.State == "executing" {
				break
			}
			runtime.Gosched()
		}
	}

	const shutdownWait = 20 * time.Second
	cctx, cancel := context.WithTimeout(ctx, shutdownWait)
	defer cancel()
	start := time.Now()
	if err := h.Close(cctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if took := time.Since(start); took > shutdownWait/4 {
		t.Fatalf("close took %s: it waited for the lease waiters", took)
	}
	for range n {
		o := <-done
		ce := errs.From(o.err)
		if ce == nil || ce.Code != errs.Unavailable || ce.Details["nothing_written"] != true {
			t.Fatalf("waiter: %v, want UNAVAILABLE with nothing_written", o.err)
		}
		if took := o.at.Sub(start); took > shutdownWait/4 {
			t.Fatalf("a waiter was answered %s after shutdown began", took)
		}
	}
	holder.Release()

	h, err = harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for i := range n {
		g, err := h.Runtime().Ledger.Get(ctx, args(i).RequestID)
		if err != nil || g.Found {
			t.Fatalf("ledger entry of %s after the restart: %+v, %v; want none", args(i).RequestID, g.Entry, err)
		}
		res, err := h.ApplyPatch(ctx, args(i))
		if err != nil || res.Replayed {
			t.Fatalf("%s after the restart: %+v, %v; want it to run", args(i).RequestID, res, err)
		}
	}
}
