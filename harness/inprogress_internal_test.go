package harness

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// A retry that arrives while the first attempt still runs (here: waits for
// a busy file) answers REQUEST_IN_PROGRESS and runs nothing.
func TestRequestInProgress(t *testing.T) {
	ctx := context.Background()
	h, err := Open(ctx, Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	root := testutil.Repo(t, map[string]string{"a.txt": "old\n"})
	r, err := h.RegisterRepository(ctx, RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := h.lookup(r.ID)
	holder, _, err := h.acquireLease(ctx, e.Checkout, "someone", "job_start", []string{string(lease.PathKey(e.Repo.CheckoutID, "a.txt"))}, 0, "ephemeral", 0)
	if err != nil {
		t.Fatal(err)
	}
	args := ApplyPatchArgs{RepoID: r.ID, RequestID: "slow", WaitMs: 10_000, Operations: []patch.Op{{Op: "replace", Path: "a.txt", OldText: "old", NewText: "new"}}}
	first := make(chan error, 1)
	go func() { _, err := h.ApplyPatch(ctx, args); first <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := request[messages.LedgerGot](ctx, h, h.ledger, messages.LedgerGet{RequestID: "slow"})
		if err == nil && g.Found && g.Entry.State == "executing" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first attempt never began")
		}
		time.Sleep(5 * time.Millisecond) // polling the ledger for the other goroutine's progress
	}
	if _, err := h.ApplyPatch(ctx, args); errs.CodeOf(err) != errs.RequestInProgress {
		t.Fatalf("retry while running: %v, want REQUEST_IN_PROGRESS", err)
	}
	holder.release()
	if err := <-first; err != nil {
		t.Fatalf("first attempt after the holder released: %v", err)
	}
	res, err := h.ApplyPatch(ctx, args)
	if err != nil || !res.Replayed {
		t.Fatalf("retry after success: %+v, %v", res, err)
	}
}
