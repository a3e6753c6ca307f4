package harness_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	hrt "github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
)

// A retry that arrives while the first attempt still runs (here: waits for
// a busy file) answers REQUEST_IN_PROGRESS and runs nothing.
func TestRequestInProgress(t *testing.T) {
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	root := testutil.Repo(t, map[string]string{"a.txt": "old\n"})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	rt := h.Runtime()
	e, _ := rt.Registry.Lookup(r.ID)
	holder, _, err := rt.Leases.Acquire(ctx, e, hrt.LeaseRequest{Owner: "someone", Operation: "job_start",
		Keys: []string{string(lease.PathKey(e.Repo.CheckoutID, "a.txt"))}})
	if err != nil {
		t.Fatal(err)
	}
	args := harness.ApplyPatchArgs{RepoID: r.ID, RequestID: "slow", WaitMs: 10_000, Operations: []patch.Op{{Op: "replace", Path: "a.txt", OldText: "old", NewText: "new"}}}
	first := make(chan error, 1)
	go func() { _, err := h.ApplyPatch(ctx, args); first <- err }()
	// Probe the ledger (a mailbox round trip each time) until the first
	// attempt has begun.
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := rt.Ledger.Get(ctx, "slow")
		if err == nil && g.Found && g.Entry.State == "executing" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first attempt never began")
		}
		runtime.Gosched()
	}
	if _, err := h.ApplyPatch(ctx, args); errs.CodeOf(err) != errs.RequestInProgress {
		t.Fatalf("retry while running: %v, want REQUEST_IN_PROGRESS", err)
	}
	holder.Release()
	if err := <-first; err != nil {
		t.Fatalf("first attempt after the holder released: %v", err)
	}
	res, err := h.ApplyPatch(ctx, args)
	if err != nil || !res.Replayed {
		t.Fatalf("retry after success: %+v, %v", res, err)
	}
}
