package op_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/persistence"
)

// The child of TestKillAroundTheOneCommit: a harness over the parent's data
// dir applies one patch and is killed by HARNESSD_FAILPOINT (a real
// SIGKILL from inside the write protocol). Skipped unless the parent runs it.
func TestOneCommitCrashChild(t *testing.T) {
	dir, repo := os.Getenv("ONESYNC_CHILD_DATA"), os.Getenv("ONESYNC_CHILD_REPO")
	if dir == "" {
		t.Skip("run by TestKillAroundTheOneCommit")
	}
	h, err := harness.Open(context.Background(), harness.Config{DataDir: dir, LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: repo})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.ApplyPatch(context.Background(), harness.ApplyPatchArgs{RepoID: r.ID, RequestID: "crash-1",
		Operations: []patch.Op{{Op: "replace", Path: "a.txt", OldText: "v1", NewText: "v2"}}})
	t.Fatalf("the write answered (%v): the failpoint %q did not kill the process", err, os.Getenv("HARNESSD_FAILPOINT"))
}

// A small patch pays one synced commit: its ledger begin is written
// unsynced before the file changes and its pre-image's file without an
// fsync. A real kill -9 at each side of that commit (a failpoint in the
// write protocol, set by the environment of a child process):
//   - before it, the file changed and nothing is recorded but the
//     executing begin, which a kill -9 keeps: the retry answers
//     REQUEST_OUTCOME_UNKNOWN with the file's current digest, and the
//     pre-image's file is there;
//   - after it, the retry replays with its receipt, and revert finds its
//     pre-image, also when the pre-image's file was lost as a power cut
//     loses a file never fsynced: the start restores it from the durable
//     copy the commit stored, and deletes the copies.
func TestKillAroundTheOneCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, c := range []struct {
		point    string
		loseFile bool // the pre-image's file lost, as by a power cut
	}{
		{"before-commit", false},
		{"after-commit", false},
		{"after-commit", true},
	} {
		name := c.point
		if c.loseFile {
			name += "/pre-image file lost"
		}
		t.Run(name, func(t *testing.T) {
			dataDir := t.TempDir()
			repo := testutil.Repo(t, map[string]string{"a.txt": "v1\n"})
			cmd := exec.Command(os.Args[0], "-test.run=^TestOneCommitCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HARNESSD_FAILPOINT="+c.point, "ONESYNC_CHILD_DATA="+dataDir, "ONESYNC_CHILD_REPO="+repo)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want killed by SIGKILL\n%s", err, out)
			}
			if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "v2\n" {
				t.Fatalf("a.txt is %q after the kill, want the write's effect", b)
			}
			pre := preimage.Digest([]byte("v1\n"))
			preFile := filepath.Join(harness.PreImageDir(dataDir), pre[:2], pre[2:])
			if _, err := os.Stat(preFile); err != nil {
				t.Fatalf("the pre-image's file after a kill -9: %v", err)
			}
			if c.loseFile {
				if err := os.Remove(preFile); err != nil {
					t.Fatal(err)
				}
			}

			ctx := context.Background()
			h, err := harness.Open(ctx, harness.Config{DataDir: dataDir, LoopThreshold: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			if n, err := h.Store().Count([]byte(persistence.PrefixPreImage)); err != nil || n != 0 {
				t.Fatalf("%d durable copies of pre-images left after the start (%v), want them restored and deleted", n, err)
			}
			r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: repo})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: r.ID, RequestID: "crash-1",
				Operations: []patch.Op{{Op: "replace", Path: "a.txt", OldText: "v1", NewText: "v2"}}})
			if c.point == "before-commit" {
				ce := errs.From(err)
				if errs.CodeOf(err) != errs.RequestOutcomeUnknown {
					t.Fatalf("retry: %v, want REQUEST_OUTCOME_UNKNOWN", err)
				}
				if d, _ := ce.Details["digests"].(map[string]string); d["a.txt"] == "" || d["a.txt"] == "absent" {
					t.Fatalf("retry's digests %v, want a.txt's current digest", ce.Details["digests"])
				}
				if b, err := os.ReadFile(preFile); err != nil || string(b) != "v1\n" {
					t.Fatalf("the pre-image's file: %q, %v", b, err)
				}
				return
			}
			if err != nil || !res.Replayed || res.ReceiptID == "" {
				t.Fatalf("retry: %+v, %v; want a replay with its receipt", res, err)
			}
			if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: r.ID, ReceiptID: res.ReceiptID, RequestID: "rv-1"}); err != nil {
				t.Fatalf("revert of the replayed receipt: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "v1\n" {
				t.Fatalf("a.txt is %q after the revert, want its pre-image", b)
			}
		})
	}
}

// The pending pre-images are settled in the background once enough are
// pending: their files fsynced, their durable copies deleted.
func TestPreImagesSettle(t *testing.T) {
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: t.TempDir(), LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	repo := testutil.Repo(t, map[string]string{"a.txt": "n" + itoa(0) + "\n"})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: repo})
	if err != nil {
		t.Fatal(err)
	}
	copies := func() int {
		n, err := h.Store().Count([]byte(persistence.PrefixPreImage))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	const writes = 80
	most := 0
	for i := range writes {
		if _, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: r.ID, RequestID: "s-" + itoa(i),
			Operations: []patch.Op{{Op: "replace", Path: "a.txt", OldText: "n" + itoa(i) + "\n", NewText: "n" + itoa(i+1) + "\n"}}}); err != nil {
			t.Fatal(err)
		}
		most = max(most, copies())
	}
	if most == 0 {
		t.Fatal("no durable copy was ever stored: the pre-images were fsynced one by one")
	}
	// 64 pending make a settle due (preimage.Store.Due).
	deadline := time.Now().Add(10 * time.Second)
	for copies() >= 64 || h.PreImageStats().Pending >= 64 {
		if time.Now().After(deadline) {
			t.Fatalf("%d copies and %+v after %d writes: never settled", copies(), h.PreImageStats(), writes)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

func itoa(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }
