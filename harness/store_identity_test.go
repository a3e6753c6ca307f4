package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/persistence"
)

// TestLostStoreRefusedWithoutTheMarksFile: a data dir whose store.marks
// was deleted and whose store is gone does not start on an empty store
// (fencing tokens from 1, old request ids running again): the data dir's
// identity refuses it with STORE_DAMAGED and names the recovery. With
// only store.marks deleted the store opens and its tokens go on rising.
func TestLostStoreRefusedWithoutTheMarksFile(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	dir := targetDir(t, map[string]string{"a.txt": "a\n"})
	write := func(h *harness.Harness) uint64 {
		t.Helper()
		g := addTarget(t, h, dir, "write", "")
		r, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: g.TargetID, Path: "a.txt", Content: "b\n", RequestID: "req-identity-1"})
		if err != nil {
			t.Fatal(err)
		}
		return r.FencingToken
	}
	h, err := harness.Open(ctx, harness.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	tok := write(h)
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, persistence.IdentityFile)); err != nil {
		t.Fatalf("no identity in the data dir: %v", err)
	}

	// Only store.marks deleted: the store is intact and opens.
	if err := os.Remove(harness.MarksPath(data)); err != nil {
		t.Fatal(err)
	}
	h, err = harness.Open(ctx, harness.Config{DataDir: data})
	if err != nil {
		t.Fatalf("open with store.marks deleted, store intact: %v", err)
	}
	if again := write(h); again != tok {
		t.Fatalf("the retried request answered token %d, want the recorded %d (replayed)", again, tok)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// store.marks deleted and the store lost: refused.
	if err := os.Remove(harness.MarksPath(data)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(harness.StoreDir(data)); err != nil {
		t.Fatal(err)
	}
	h, err = harness.Open(ctx, harness.Config{DataDir: data})
	if err == nil {
		h.Close(ctx)
		t.Fatal("a lost store opened as an empty one")
	}
	if errs.CodeOf(err) != errs.StoreDamaged || !strings.Contains(err.Error(), "store reset") || !strings.Contains(err.Error(), persistence.IdentityFile) {
		t.Fatalf("open of a lost store = %v (%s), want STORE_DAMAGED naming %s and the recovery", err, errs.CodeOf(err), persistence.IdentityFile)
	}
}
