package patch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// threeFileOps touches an existing 0755 file, a new file in new directories,
// and an existing file to delete.
func threeFileSetup(t *testing.T) (string, []Op) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "bin/run.sh", "#!/bin/sh\necho old\n", 0o755)
	writeFile(t, dir, "gone.txt", "bye\n", 0o600)
	ops := []Op{
		{Op: OpReplace, Path: "bin/run.sh", OldText: "old", NewText: "new"},
		{Op: OpCreate, Path: "new/deep/file.txt", Content: "fresh\n", Mode: "0640"},
		{Op: OpDelete, Path: "gone.txt"},
	}
	return dir, ops
}

func TestFenceErrorRollsBack(t *testing.T) {
	for _, sync := range []bool{true, false} {
		name := "sync"
		if !sync {
			name = "nosync"
		}
		t.Run(name, func(t *testing.T) {
			dir, ops := threeFileSetup(t)
			before := snapshot(t, dir)
			lost := errs.New(errs.LeaseLost, "fencing token 7 is stale")
			calls := 0
			var midway map[string]entry
			o := Options{NoSync: !sync, Fence: func() error {
				calls++
				if calls == 3 {
					midway = snapshot(t, dir)
					return lost
				}
				return nil
			}}
			_, err := Apply(context.Background(), testRoot{dir}, ops, o)
			if !errors.Is(err, lost) {
				t.Fatalf("err = %v, want the fence error", err)
			}
			if calls != 3 {
				t.Fatalf("fence calls = %d, want 3", calls)
			}
			// Files 1 and 2 were written before the third fence.
			if got := midway["bin/run.sh"].Data; got != "#!/bin/sh\necho new\n" {
				t.Fatalf("before rollback run.sh = %q, want the new content", got)
			}
			if got := midway["new/deep/file.txt"]; got != fileEntry("fresh\n", 0o640) {
				t.Fatalf("before rollback new file = %v, want it written", got)
			}
			assertTree(t, dir, before)
		})
	}
}

func TestUncodedFenceErrorIsLeaseLost(t *testing.T) {
	dir, ops := threeFileSetup(t)
	before := snapshot(t, dir)
	boom := errors.New("token mismatch")
	_, err := Apply(context.Background(), testRoot{dir}, ops, Options{NoSync: true, Fence: func() error { return boom }})
	if got := codeOf(err); got != errs.LeaseLost {
		t.Fatalf("code = %q, want %q", got, errs.LeaseLost)
	}
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want it to wrap the fence error", err)
	}
	assertTree(t, dir, before)
}

func TestIOFailureRollsBack(t *testing.T) {
	// After file 1 is prepared, a file appears where file 2's parent
	// directory must be created, so creating it fails with ENOTDIR.
	dir, ops := threeFileSetup(t)
	before := snapshot(t, dir)
	calls := 0
	o := Options{NoSync: true, Fence: func() error {
		calls++
		if calls == 1 {
			writeFile(t, dir, "new", "blocker", 0o644)
		}
		return nil
	}}
	_, err := Apply(context.Background(), testRoot{dir}, ops, o)
	if got := codeOf(err); got != errs.Internal {
		t.Fatalf("code = %q (%v), want %q", got, err, errs.Internal)
	}
	before["new"] = fileEntry("blocker", 0o644) // the blocker is not ours
	assertTree(t, dir, before)
}

func TestRenameOntoDirectoryRollsBack(t *testing.T) {
	// The target of file 2 becomes a non-empty directory after the plan:
	// the rename fails, file 1 is restored. The directory is foreign and
	// stays; rollback must not remove it, and reports it.
	dir := setup(t, map[string]string{"a.txt": "a", "b.txt": "b"})
	ops := []Op{
		{Op: OpWrite, Path: "a.txt", Content: "A"},
		{Op: OpWrite, Path: "c.txt", Content: "C"},
	}
	calls := 0
	o := Options{NoSync: true, Fence: func() error {
		calls++
		if calls == 2 {
			writeFile(t, dir, "c.txt/inner", "i", 0o644)
		}
		return nil
	}}
	_, err := Apply(context.Background(), testRoot{dir}, ops, o)
	if got := codeOf(err); got != errs.PatchRollbackIncomplete {
		t.Fatalf("code = %q (%v), want %q", got, err, errs.PatchRollbackIncomplete)
	}
	if got := details(t, err)["paths"]; !reflect.DeepEqual(got, []string{"c.txt"}) {
		t.Errorf("paths = %v, want [c.txt]", got)
	}
	assertTree(t, dir, map[string]entry{
		"a.txt":       fileEntry("a", 0o644),
		"b.txt":       fileEntry("b", 0o644),
		"c.txt":       {Kind: "dir", Mode: 0o755},
		"c.txt/inner": fileEntry("i", 0o644),
	})
}

func TestRollbackVerificationFailure(t *testing.T) {
	dir, ops := threeFileSetup(t)
	lost := errs.New(errs.LeaseLost, "stale")
	calls := 0
	o := Options{NoSync: true, Fence: func() error {
		calls++
		if calls == 3 {
			return lost
		}
		return nil
	}}
	testHookBeforeVerify = func() {
		writeFile(t, dir, "bin/run.sh", "tampered", 0o755)
	}
	t.Cleanup(func() { testHookBeforeVerify = nil })
	_, err := Apply(context.Background(), testRoot{dir}, ops, o)
	if got := codeOf(err); got != errs.PatchRollbackIncomplete {
		t.Fatalf("code = %q (%v), want %q", got, err, errs.PatchRollbackIncomplete)
	}
	if !errors.Is(err, lost) {
		t.Errorf("err = %v, want it to wrap the original error", err)
	}
	d := details(t, err)
	if got := d["paths"]; !reflect.DeepEqual(got, []string{"bin/run.sh"}) {
		t.Errorf("paths = %v, want [bin/run.sh]", got)
	}
	if cause, ok := d["cause"].(*errs.Error); !ok || cause.Code != errs.LeaseLost {
		t.Errorf("cause detail = %v, want the LEASE_LOST error", d["cause"])
	}
}

func TestCreatedDirNotEmptyIsReported(t *testing.T) {
	dir, ops := threeFileSetup(t)
	calls := 0
	o := Options{NoSync: true, Fence: func() error {
		calls++
		if calls == 3 {
			// A foreign file lands in a directory the patch created.
			writeFile(t, dir, "new/other.txt", "x", 0o644)
			return errs.New(errs.LeaseLost, "stale")
		}
		return nil
	}}
	_, err := Apply(context.Background(), testRoot{dir}, ops, o)
	if got := codeOf(err); got != errs.PatchRollbackIncomplete {
		t.Fatalf("code = %q (%v), want %q", got, err, errs.PatchRollbackIncomplete)
	}
	if got := details(t, err)["paths"]; !reflect.DeepEqual(got, []string{"new"}) {
		t.Errorf("paths = %v, want [new]", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "new/deep")); !os.IsNotExist(err) {
		t.Errorf("new/deep still exists (%v), want it removed", err)
	}
}

func TestContextCancelled(t *testing.T) {
	t.Run("before start", func(t *testing.T) {
		dir, ops := threeFileSetup(t)
		before := snapshot(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Apply(ctx, testRoot{dir}, ops, noSync())
		if got := codeOf(err); got != errs.Cancelled {
			t.Fatalf("code = %q, want %q", got, errs.Cancelled)
		}
		assertTree(t, dir, before)
	})
	t.Run("mid patch", func(t *testing.T) {
		dir, ops := threeFileSetup(t)
		before := snapshot(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		o := Options{NoSync: true, Fence: func() error { cancel(); return nil }}
		_, err := Apply(ctx, testRoot{dir}, ops, o)
		if got := codeOf(err); got != errs.Cancelled {
			t.Fatalf("code = %q (%v), want %q", got, err, errs.Cancelled)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want it to wrap context.Canceled", err)
		}
		assertTree(t, dir, before)
	})
}

func TestSymlinkDeleteRollsBack(t *testing.T) {
	dir := setup(t, map[string]string{"target.txt": "t", "b.txt": "b"})
	if err := os.Symlink("target.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	ops := []Op{
		{Op: OpDelete, Path: "link"},
		{Op: OpDelete, Path: "dangling"},
		{Op: OpWrite, Path: "b.txt", Content: "B"},
	}
	calls := 0
	o := Options{NoSync: true, Fence: func() error {
		calls++
		if calls == 3 {
			return errs.New(errs.LeaseLost, "stale")
		}
		return nil
	}}
	if _, err := Apply(context.Background(), testRoot{dir}, ops, o); codeOf(err) != errs.LeaseLost {
		t.Fatalf("err = %v, want LEASE_LOST", err)
	}
	assertTree(t, dir, before)

	// Without the failure the links go and the target stays.
	res, err := Apply(context.Background(), testRoot{dir}, ops, noSync())
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes[0].Before != sha("target.txt") {
		t.Errorf("link before = %s, want the digest of its target text", res.Changes[0].Before)
	}
	assertTree(t, dir, map[string]entry{"target.txt": fileEntry("t", 0o644), "b.txt": fileEntry("B", 0o644)})
}

func TestReplaceSymlinkAfterDelete(t *testing.T) {
	dir := setup(t, map[string]string{"target.txt": "t"})
	if err := os.Symlink("target.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	ops := []Op{
		{Op: OpDelete, Path: "link"},
		{Op: OpCreate, Path: "link", Content: "now a file"},
	}
	if _, err := Apply(context.Background(), testRoot{dir}, ops, noSync()); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, map[string]entry{"target.txt": fileEntry("t", 0o644), "link": fileEntry("now a file", 0o644)})
}
