package harness_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/persistence"
)

func openFaulty(t *testing.T) (*harness.Harness, *persistence.Faults, string) {
	t.Helper()
	faults := &persistence.Faults{}
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, StoreFaults: faults})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		faults.FailWrites(nil)
		faults.DelayWrites(0)
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	root := testutil.Repo(t, map[string]string{"README.md": "# demo\nhello world\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return h, faults, r.ID
}

// read_file and git_status never touch the store, so a frozen store disk
// (every write held for seconds, and Badger's reads waiting for the
// commits in flight) never holds them: they answer in their usual time
// while a patch waits on the disk.
func TestReadsNeverWaitOnTheStoreDisk(t *testing.T) {
	h, faults, id := openFaulty(t)
	ctx := context.Background()
	read := func() {
		t.Helper()
		if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "README.md"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id}); err != nil {
			t.Fatal(err)
		}
	}
	read() // the first read of a session may start its implicit run and watcher
	st := h.Store()
	reads, writes := st.Reads(), st.Writes()
	read()
	if st.Reads() != reads || st.Writes() != writes {
		t.Fatalf("read_file and git_status used the store: %d reads, %d writes", st.Reads()-reads, st.Writes()-writes)
	}

	faults.DelayWrites(3 * time.Second)
	patched := make(chan error, 1)
	go func() {
		_, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: id, RequestID: "frozen-1",
			Operations: replaceOp("README.md", "hello world", "hello frozen")})
		patched <- err
	}()
	start := time.Now()
	for range 5 {
		read()
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("5 reads beside a write held by the disk took %s", d)
	}
	faults.DelayWrites(0)
	if err := <-patched; err != nil {
		t.Fatalf("the patch once the disk thawed: %v", err)
	}
}

// A data dir whose disk refuses writes (read-only after an ext4 error):
// writes answer STORAGE_UNAVAILABLE, never INTERNAL and never OK; reads
// go on.
func TestReadOnlyDiskAnswersStorageUnavailable(t *testing.T) {
	h, faults, id := openFaulty(t)
	ctx := context.Background()
	run, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "ro"})
	if err != nil {
		t.Fatal(err)
	}
	faults.FailWrites(syscall.EROFS)
	if _, err := h.RunStage(ctx, harness.RunStageArgs{RunID: run.RunID, Stage: "plan", Status: "completed"}); errs.CodeOf(err) != errs.StorageUnavailable {
		t.Fatalf("run_stage on a read-only disk = %v, want STORAGE_UNAVAILABLE", err)
	}
	if _, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "lost"}); errs.CodeOf(err) != errs.StorageUnavailable {
		t.Fatalf("run_start on a read-only disk = %v, want STORAGE_UNAVAILABLE", err)
	}
	_, err = h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: id, RequestID: "ro-1", Operations: replaceOp("README.md", "hello world", "hello ro")})
	if errs.CodeOf(err) != errs.StorageUnavailable {
		t.Fatalf("apply_patch on a read-only disk = %v, want STORAGE_UNAVAILABLE", err)
	}
	r, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "README.md"})
	if err != nil || r.Content != "# demo\nhello world\n" {
		t.Fatalf("read_file on a read-only disk = %+v, %v (the refused patch must not have written)", r, err)
	}
}
