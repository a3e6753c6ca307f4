package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
)

// TestTargetFencingSurvivesReopen: a target's fencing tokens (the
// receipt's fencing_token and hold_seqs) rise across restarts of the
// harness on the same data dir; they used to start at 1 again.
func TestTargetFencingSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	dir := targetDir(t, map[string]string{"a.txt": "a\n"})
	var last uint64
	for round := range 3 {
		h, err := harness.Open(ctx, harness.Config{DataDir: data})
		if err != nil {
			t.Fatal(err)
		}
		g := addTarget(t, h, dir, "write", "")
		for i := range 3 {
			r, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: g.TargetID, Path: "a.txt", Content: "x\n"})
			if err != nil {
				t.Fatal(err)
			}
			if r.FencingToken <= last || len(r.HoldSeqs) != 1 || r.HoldSeqs[0] != r.FencingToken {
				t.Fatalf("round %d write %d: fencing_token %d, hold_seqs %v after %d", round, i, r.FencingToken, r.HoldSeqs, last)
			}
			last = r.FencingToken
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTargetTempLeftoversSwept: temp files a crash left in a write target
// (harnessd's exact pattern, older than the process) are removed when the
// target is registered and when the harness starts, and target_list_dir
// never lists one; a user's files that only look alike stay and are
// listed.
func TestTargetTempLeftoversSwept(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	dir := targetDir(t, map[string]string{"a.txt": "a\n", ".name.tmp": "mine\n", "x.harnessd-tmp": "mine too\n"})
	crash := func(rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.WriteFile(p, []byte("half a file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour) // a process before this one wrote it
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := func(p string) {
		t.Helper()
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("leftover %s was not swept", p)
		}
	}
	names := func(h *harness.Harness, id string) []string {
		t.Helper()
		l, err := h.TargetListDir(ctx, harness.TargetListDirArgs{TargetID: id})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range l.Entries {
			out = append(out, e.Name)
		}
		return out
	}
	want := []string{".name.tmp", "a.txt", "x.harnessd-tmp"}

	first := crash(".a.txt.harnessd-tmp-3141592")
	h, err := harness.Open(ctx, harness.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	g := addTarget(t, h, dir, "write", "")
	gone(first)
	// One written now (a write in flight, as far as a sweep can tell) is
	// kept, but never listed.
	live := filepath.Join(dir, ".b.txt.harnessd-tmp-ff")
	if err := os.WriteFile(live, []byte("in flight\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := names(h, g.TargetID); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(live); err != nil {
		t.Fatal(err)
	}

	second := crash(".a.txt.harnessd-tmp-2718281")
	h, err = harness.Open(ctx, harness.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	gone(second)
	if got := names(h, g.TargetID); !slices.Equal(got, want) {
		t.Fatalf("after restart listed %v, want %v", got, want)
	}
}
