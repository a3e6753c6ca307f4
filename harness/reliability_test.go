package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	hrt "github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/persistence"
)

// The pipeline's reliability rules (issue #32): retries are not
// failures, replay before validation, and a cancellation after the
// effect changes nothing but the answer's delivery.

// waitLedger polls the ledger until request id is in state.
func waitLedger(t *testing.T, h *harness.Harness, id, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := h.Runtime().Ledger.Get(context.Background(), id)
		if err == nil && g.Found && g.Entry.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s never reached %s (last %+v, %v)", id, state, g.Entry, err)
		}
		runtime.Gosched()
	}
}

// A client polling its own write while it waits for its lease gets
// REQUEST_IN_PROGRESS as often as it asks, never RETRY_LIMIT, and the
// recorded result once the write lands; a run's retry bound still holds
// for a request_id whose attempt failed. (Before: four REQUEST_IN_PROGRESS,
// then RETRY_LIMIT for the rest of the stage, even after the write landed.)
func TestPollingAnInFlightWriteIsNoRetry(t *testing.T) {
	ctx := context.Background()
	zero := 0
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"a.txt": "old\n"})
	run, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "poll", MaxRetries: &zero})
	if err != nil {
		t.Fatal(err)
	}
	in := harness.WithRun(ctx, run.RunID)
	rt := h.Runtime()
	e, _ := rt.Registry.Lookup(repo)
	holder, _, err := rt.Leases.Acquire(ctx, e, hrt.LeaseRequest{Owner: "someone", Operation: "job_start",
		Keys: []string{string(lease.PathKey(e.Repo.CheckoutID, "a.txt"))}})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	args := func(id string) harness.ApplyPatchArgs {
		return harness.ApplyPatchArgs{RepoID: repo, RequestID: id, WaitMs: 20_000,
			Operations: []patch.Op{{Op: "replace", Path: "a.txt", OldText: "old", NewText: "new"}}}
	}
	first := make(chan error, 1)
	go func() { _, err := h.ApplyPatch(in, args("slow")); first <- err }()
	waitLedger(t, h, "slow", "executing")
	for i := range 6 {
		if _, err := h.ApplyPatch(in, args("slow")); errs.CodeOf(err) != errs.RequestInProgress {
			t.Fatalf("poll %d while the write waits: %v, want REQUEST_IN_PROGRESS", i, err)
		}
	}
	// A real failure of the same call (another request_id, which stopped
	// waiting at its deadline) uses up the bound of 0 retries.
	short, cancel := context.WithTimeout(in, 150*time.Millisecond)
	_, err = h.ApplyPatch(short, args("other"))
	cancel()
	if errs.CodeOf(err) != errs.Timeout {
		t.Fatalf("a write past its deadline: %v, want TIMEOUT", err)
	}
	waitLedger(t, h, "other", "failed")
	// Past the bound, the request in flight is still answered by the
	// ledger (it runs nothing again) ...
	for i := range 3 {
		if _, err := h.ApplyPatch(in, args("slow")); errs.CodeOf(err) != errs.RequestInProgress {
			t.Fatalf("poll %d past the bound: %v, want REQUEST_IN_PROGRESS", i, err)
		}
	}
	// ... but the failed request would run again: refused.
	if _, err := h.ApplyPatch(in, args("other")); errs.CodeOf(err) != errs.RetryLimit {
		t.Fatalf("the failed request again past the bound: %v, want RETRY_LIMIT", err)
	}
	holder.Release()
	if err := <-first; err != nil {
		t.Fatalf("the write after the holder released: %v", err)
	}
	res, err := h.ApplyPatch(in, args("slow"))
	if err != nil || !res.Replayed {
		t.Fatalf("poll after the write landed: %+v, %v; want a replay", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "new\n" {
		t.Fatalf("a.txt = %q", b)
	}
	st, err := h.RunStatus(ctx, harness.RunStatusArgs{RunID: run.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Retries) != 0 {
		t.Fatalf("the replay closes the streak; retries = %+v", st.Retries)
	}
}

// A retry of a request that succeeded answers its recorded result before
// the operation validates its input against a world the first attempt
// changed (before: target_move after success, target_copy after its source
// moved, revert after its receipt was pruned, run_revert: refused).
func TestReplayBeforeValidation(t *testing.T) {
	ctx := context.Background()
	t.Run("target_move", func(t *testing.T) {
		h := open(t)
		dir := targetDir(t, map[string]string{"m.txt": "move me\n"})
		tg := addTarget(t, h, dir, "write", "")
		args := harness.TargetCopyArgs{TargetID: tg.TargetID, From: "m.txt", To: "n.txt", RequestID: "mv-1"}
		first, err := h.TargetMove(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		again, err := h.TargetMove(ctx, args)
		if err != nil || !again.Replayed || again.ReceiptID != first.ReceiptID {
			t.Fatalf("retry after success: %+v, %v; want the replay of %s", again, err, first.ReceiptID)
		}
		noFile(t, filepath.Join(dir, "m.txt"))
	})
	t.Run("target_copy", func(t *testing.T) {
		h := open(t)
		dir := targetDir(t, map[string]string{"s.txt": "source\n"})
		tg := addTarget(t, h, dir, "write", "")
		args := harness.TargetCopyArgs{TargetID: tg.TargetID, From: "s.txt", To: "c.txt", RequestID: "cp-1"}
		first, err := h.TargetCopy(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.TargetMove(ctx, harness.TargetCopyArgs{TargetID: tg.TargetID, From: "s.txt", To: "gone.txt", RequestID: "mv-2"}); err != nil {
			t.Fatal(err)
		}
		again, err := h.TargetCopy(ctx, args)
		if err != nil || !again.Replayed || again.ReceiptID != first.ReceiptID {
			t.Fatalf("retry after the source moved: %+v, %v; want the replay of %s", again, err, first.ReceiptID)
		}
		// Another input under the same request_id is still a conflict.
		other := args
		other.From = "gone.txt"
		if _, err := h.TargetCopy(ctx, other); errs.CodeOf(err) != errs.RequestConflict {
			t.Fatalf("same request_id, other input: %v, want REQUEST_ID_CONFLICT", err)
		}
	})
	t.Run("revert", func(t *testing.T) {
		h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"f": "f0\n"})
		w := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "f", Content: "f1\n"})
		args := harness.RevertArgs{RepoID: repo, ReceiptID: w.ReceiptID, RequestID: "rv-1"}
		first, err := h.Revert(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		// Every receipt of the repository pruned, as the bound prunes the
		// oldest.
		if err := h.Store().PruneOldest(persistence.ReceiptPrefix(repo), 0); err != nil {
			t.Fatal(err)
		}
		again, err := h.Revert(ctx, args)
		if err != nil || !again.Replayed || again.ReceiptID != first.ReceiptID {
			t.Fatalf("retry after the receipt was pruned: %+v, %v; want the replay of %s", again, err, first.ReceiptID)
		}
		if got := readAll(t, root, "f"); got["f"] != "f0\n" {
			t.Fatalf("f = %q", got["f"])
		}
	})
	t.Run("run_revert", func(t *testing.T) {
		h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"f": "f0\n"})
		run, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "undo me"})
		if err != nil {
			t.Fatal(err)
		}
		write(t, h, harness.WithRun(ctx, run.RunID), repo, patch.Op{Op: "write", Path: "f", Content: "f1\n"})
		args := harness.RunRevertArgs{RunID: run.RunID, RequestID: "rr-1"}
		first, err := h.RunRevert(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		again, err := h.RunRevert(ctx, args)
		if err != nil || !again.Replayed || again.ReceiptID != first.ReceiptID {
			t.Fatalf("retry of run_revert: %+v, %v; want the replay of %s", again, err, first.ReceiptID)
		}
		if got := readAll(t, root, "f"); got["f"] != "f0\n" {
			t.Fatalf("f = %q", got["f"])
		}
	})
}

// A git_commit whose request ends at the moment its commit has landed (the
// MCP client's notifications/cancelled on its timeout) is recorded as the
// success it is: one audit entry, succeeded; its receipt listed, its tree
// naming the committed file, so commit_verify passes; and its retry
// replays. (Before: audited failed with no receipt, the retry
// INVALID_ARGUMENT "no changes to commit", a tree without the file.)
func TestCancelledCommitIsRecorded(t *testing.T) {
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"a.go": "package a\n"})
	reqCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	harness.OnCommitted(h, cancel)
	if err := os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\nconst N = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := harness.GitCommitArgs{RepoID: repo, RequestID: "commit-1", Message: "a: N", Paths: []string{"a.go"}}
	res, err := h.GitCommit(reqCtx, args)
	if reqCtx.Err() == nil {
		t.Fatal("the request was not cancelled as the commit landed")
	}
	if err != nil {
		t.Fatalf("a commit that landed as its request ended: %v", err)
	}
	if res.Commit == "" || len(res.Tree) != 1 || res.Tree[0].Path != "a.go" || res.Tree[0].After == "" {
		t.Fatalf("receipt %+v: want the commit and a tree naming a.go", res.Receipt)
	}
	ctx := context.Background()
	au, err := h.Audit(ctx, harness.AuditArgs{Kind: "mutation", RequestID: "commit-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(au.Entries) != 1 || au.Entries[0].Outcome != "succeeded" {
		t.Fatalf("audit entries of the commit: %+v; want one, succeeded", au.Entries)
	}
	l, err := h.ReceiptList(ctx, harness.ReceiptListArgs{RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, r := range l.Receipts {
		listed = listed || r.ReceiptID == res.ReceiptID
	}
	if !listed {
		t.Fatalf("receipt %s not in receipt_list %+v", res.ReceiptID, l.Receipts)
	}
	v, err := h.CommitVerify(ctx, harness.CommitVerifyArgs{RepoID: repo, Rev: res.Commit})
	if err != nil || !v.Verified {
		t.Fatalf("commit_verify: %+v, %v", v, err)
	}
	again, err := h.GitCommit(ctx, args)
	if err != nil || !again.Replayed || again.ReceiptID != res.ReceiptID || again.Commit != res.Commit {
		t.Fatalf("retry: %+v, %v; want the replay of %s", again, err, res.ReceiptID)
	}
}

// One client writes a run's files in sequence, some of its calls cut by
// its own deadline at random moments (before, while and after their
// write), then undoes the run: run_revert restores every file, never
// PATCH_CONFLICT "changed outside harnessd's receipts". A write the client
// gave up on either never began or is recorded with its receipt (before:
// an effect cancelled after it landed had none, 16 of 120 run_reverts
// refused). Repeated over several runs.
func TestRunRevertAfterSequentialWritesWithCancels(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{"a.txt": "a0\n", "b.txt": "b0\n", "c.txt": "c0\n"}
	h, repo, root := undoHarness(t, harness.Config{}, files)
	names := []string{"a.txt", "b.txt", "c.txt"}
	rounds, writes := 8, 30
	if testing.Short() {
		rounds = 3
	}
	cancelled := 0
	for round := range rounds {
		run, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "sequential writes"})
		if err != nil {
			t.Fatal(err)
		}
		in := harness.WithRun(ctx, run.RunID)
		for i := range writes {
			var ops []patch.Op
			for j, n := range names {
				if (i+j)%2 == 0 || j == i%3 {
					ops = append(ops, patch.Op{Op: "write", Path: n, Content: n + " " + undoID("v") + "\n"})
				}
			}
			// wait_ms: a lease a cut call was granted as it gave up is
			// given back in the background, a moment later.
			args := harness.ApplyPatchArgs{RepoID: repo, RequestID: undoID("seq"), Operations: ops, WaitMs: 5000}
			if i%4 != 3 {
				if _, err := h.ApplyPatch(in, args); err != nil {
					t.Fatalf("round %d write %d: %v", round, i, err)
				}
				continue
			}
			// Cut by the client's deadline somewhere in the call.
			cctx, cancel := context.WithTimeout(in, time.Duration(i%7)*300*time.Microsecond)
			_, err := h.ApplyPatch(cctx, args)
			cancel()
			if err != nil {
				if c := errs.CodeOf(err); c != errs.Timeout && c != errs.Cancelled {
					t.Fatalf("round %d write %d cut by its deadline: %v", round, i, err)
				}
				cancelled++
			}
		}
		if _, err := h.RunRevert(ctx, harness.RunRevertArgs{RunID: run.RunID, RequestID: undoID("undo")}); err != nil {
			t.Fatalf("round %d: run_revert after %d sequential writes: %v", round, writes, err)
		}
		if got := readAll(t, root, names...); got["a.txt"] != "a0\n" || got["b.txt"] != "b0\n" || got["c.txt"] != "c0\n" {
			t.Fatalf("round %d: after run_revert the files are %v", round, got)
		}
	}
	t.Logf("%d rounds of %d writes, %d calls answered an error by their deadline", rounds, writes, cancelled)
}
