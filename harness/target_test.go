package harness_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/persistence"
)

// targetDir makes a directory with files (no git) and returns its path.
func targetDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func addTarget(t *testing.T, h *harness.Harness, dir, access, owner string) *harness.TargetRegisterResult {
	t.Helper()
	r, err := h.RegisterTarget(context.Background(), harness.TargetRegisterArgs{Path: dir, Access: access, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantCode(t *testing.T, err error, want errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != want {
		t.Fatalf("code %q (%v), want %q", got, err, want)
	}
}

func countKeys(t *testing.T, h *harness.Harness, prefix []byte) int {
	t.Helper()
	n, err := h.Store().Count(prefix)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func receiptPrefix(id string) []byte {
	k := persistence.ReceiptKey(id, 0)
	return k[:len(k)-8]
}

func noFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Fatalf("marker %s exists: the attack wrote outside the target", path)
	}
}

// TestTargetSeedRules asserts the seed's rules of repository-free targets
// one by one, each row named after its rule, written as an attacker where
// the rule is a boundary (a marker that must not appear, a secret that
// must not come back).
func TestTargetSeedRules(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	outside := t.TempDir() // where escapes would land
	const secret = "S3CRET-VALUE-do-not-leak"
	dir := targetDir(t, map[string]string{"a.txt": "alpha\n", ".env": "TOKEN=" + secret + "\n", "src/m.go": "package m\n"})
	if err := os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "victim.txt"), filepath.Join(dir, "victim-link")); err != nil {
		t.Fatal(err)
	}
	w := addTarget(t, h, dir, "write", "")
	ro := addTarget(t, h, dir, "read", "")
	id := w.TargetID

	rules := []struct {
		rule string
		run  func(t *testing.T)
	}{
		{"register: path must be absolute", func(t *testing.T) {
			_, err := h.RegisterTarget(ctx, harness.TargetRegisterArgs{Path: "relative/dir"})
			wantCode(t, err, errs.InvalidArgument)
		}},
		{"register: realpath, idempotent for the same root and access", func(t *testing.T) {
			link := filepath.Join(t.TempDir(), "via-link")
			if err := os.Symlink(dir, link); err != nil {
				t.Fatal(err)
			}
			again := addTarget(t, h, link+"/", "write", "")
			if again.TargetID != id || again.Created || again.CanonicalRoot != w.CanonicalRoot || again.IdentityFingerprint != w.IdentityFingerprint {
				t.Fatalf("re-register through a link = %+v, want the same target %s (not created)", again, id)
			}
			if ro.TargetID == id || ro.WorkspaceID != w.WorkspaceID {
				t.Fatalf("read grant %s / workspace %s: want another target in the same workspace %s", ro.TargetID, ro.WorkspaceID, w.WorkspaceID)
			}
		}},
		{"read: a path with .. is refused", func(t *testing.T) {
			_, err := h.TargetReadFile(ctx, harness.TargetReadFileArgs{TargetID: id, Path: "../" + filepath.Base(outside) + "/victim.txt"})
			wantCode(t, err, errs.PathOutsideRoot)
		}},
		{"read: a symlink inside pointing outside is refused", func(t *testing.T) {
			_, err := h.TargetReadFile(ctx, harness.TargetReadFileArgs{TargetID: id, Path: "victim-link"})
			wantCode(t, err, errs.PathOutsideRoot)
			_, err = h.TargetReadFile(ctx, harness.TargetReadFileArgs{TargetID: id, Path: "escape/victim.txt"})
			wantCode(t, err, errs.PathOutsideRoot)
		}},
		{"write: a symlinked directory pointing outside leaves no marker outside", func(t *testing.T) {
			_, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: id, Path: "escape/marker", Content: "pwned"})
			if err == nil {
				t.Fatal("write through an escaping symlink succeeded")
			}
			noFile(t, filepath.Join(outside, "marker"))
		}},
		{"write: a symlinked file pointing outside is not written through", func(t *testing.T) {
			_, _ = h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: id, Path: "victim-link", Content: "pwned"})
			if b, _ := os.ReadFile(filepath.Join(outside, "victim.txt")); string(b) != "outside\n" {
				t.Fatalf("the file outside now holds %q", b)
			}
		}},
		{"write: a path with .. leaves no marker outside", func(t *testing.T) {
			_, err := h.TargetApplyPatch(ctx, harness.TargetApplyPatchArgs{TargetID: id,
				Operations: []patch.Op{{Op: "create", Path: "../" + filepath.Base(outside) + "/marker2", Content: "pwned"}}})
			wantCode(t, err, errs.PathOutsideRoot)
			noFile(t, filepath.Join(outside, "marker2"))
		}},
		{"copy: a destination through an escaping symlink leaves no marker outside", func(t *testing.T) {
			_, err := h.TargetCopy(ctx, harness.TargetCopyArgs{TargetID: id, From: "a.txt", To: "escape/marker3"})
			if err == nil {
				t.Fatal("copy through an escaping symlink succeeded")
			}
			noFile(t, filepath.Join(outside, "marker3"))
		}},
		{"secret paths: reading .env is denied and its value never comes back", func(t *testing.T) {
			res, err := h.TargetReadFile(ctx, harness.TargetReadFileArgs{TargetID: id, Path: ".env"})
			wantCode(t, err, errs.SecretPathDenied)
			if res != nil || strings.Contains(fmt.Sprint(err), secret) {
				t.Fatal("the secret value came back")
			}
			s, err := h.TargetSearch(ctx, harness.TargetSearchArgs{TargetID: id, Query: secret})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Matches) != 0 {
				t.Fatalf("search found the secret: %+v", s.Matches)
			}
		}},
		{"secret paths: copying .env out and writing .env are denied", func(t *testing.T) {
			_, err := h.TargetCopy(ctx, harness.TargetCopyArgs{TargetID: id, From: ".env", To: "leak.txt"})
			wantCode(t, err, errs.SecretPathDenied)
			noFile(t, filepath.Join(dir, "leak.txt"))
			_, err = h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: id, Path: ".env", Content: "x"})
			wantCode(t, err, errs.SecretPathDenied)
		}},
		{"list_dir: secret paths are left out and counted", func(t *testing.T) {
			l, err := h.TargetListDir(ctx, harness.TargetListDirArgs{TargetID: id})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range l.Entries {
				if e.Name == ".env" {
					t.Fatal("list_dir shows .env")
				}
			}
			if l.Omitted == 0 {
				t.Fatal("nothing omitted")
			}
		}},
		{"read-only command creates no record", func(t *testing.T) {
			led, rc := countKeys(t, h, []byte(persistence.PrefixLedger)), countKeys(t, h, receiptPrefix(id))
			res, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"cat", "a.txt"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stdout.Text != "alpha\n" || res.Receipt != nil {
				t.Fatalf("stdout %q receipt %v", res.Stdout.Text, res.Receipt)
			}
			if l2, r2 := countKeys(t, h, []byte(persistence.PrefixLedger)), countKeys(t, h, receiptPrefix(id)); l2 != led || r2 != rc {
				t.Fatalf("ledger %d->%d receipts %d->%d: a read-only command left a record", led, l2, rc, r2)
			}
		}},
		{"a mutation creates one ledger record, completed, with a local_effect receipt", func(t *testing.T) {
			led, rc := countKeys(t, h, []byte(persistence.PrefixLedger)), countKeys(t, h, receiptPrefix(id))
			res, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: id, Path: "new.txt", Content: "n\n", RequestID: "rule-mutation-1"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Effect != "local_effect" || res.TargetID != id || len(res.Changes) != 1 {
				t.Fatalf("receipt %+v", res.Receipt)
			}
			if l2, r2 := countKeys(t, h, []byte(persistence.PrefixLedger)), countKeys(t, h, receiptPrefix(id)); l2 != led+1 || r2 != rc+1 {
				t.Fatalf("ledger %d->%d receipts %d->%d, want one more of each", led, l2, rc, r2)
			}
			got, err := h.Runtime().Ledger.Get(ctx, "rule-mutation-1")
			if err != nil || !got.Found || got.Entry.State != "succeeded" {
				t.Fatalf("ledger entry %+v, %v: want succeeded in the same request", got, err)
			}
			again, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: id, Path: "new.txt", Content: "n\n", RequestID: "rule-mutation-1"})
			if err != nil || !again.Replayed || again.ReceiptID != res.ReceiptID {
				t.Fatalf("retry = %+v, %v: want the stored result replayed", again, err)
			}
		}},
		{"a read grant cannot write", func(t *testing.T) {
			_, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: ro.TargetID, Path: "ro.txt", Content: "x"})
			wantCode(t, err, errs.PolicyDenied)
			_, err = h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: ro.TargetID, Argv: []string{"touch", "ro.txt"}})
			wantCode(t, err, errs.PolicyDenied)
			noFile(t, filepath.Join(dir, "ro.txt"))
		}},
		{"remote commands are rejected", func(t *testing.T) {
			_, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"curl", "-X", "POST", "https://example.com"}})
			wantCode(t, err, errs.RouteRejected)
		}},
		{"destructive commands are rejected", func(t *testing.T) {
			_, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"rm", "-rf", "src"}})
			wantCode(t, err, errs.RouteRejected)
			if _, err := os.Stat(filepath.Join(dir, "src/m.go")); err != nil {
				t.Fatal("src was removed")
			}
		}},
		{"shell strings that write are refused", func(t *testing.T) {
			// A script that writes is a job on the repository Fast Path:
			// on a target, promote it.
			_, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"sh", "-c", "touch " + filepath.Join(outside, "marker4")}})
			wantCode(t, err, errs.RouteDurableRequired)
			noFile(t, filepath.Join(outside, "marker4"))
			_, err = h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"sh", "-c", "eval \"$X\""}})
			wantCode(t, err, errs.RouteRejected)
		}},
		{"workspace_write off the allowlist (a build) is a job: promote", func(t *testing.T) {
			_, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"make", "all"}})
			wantCode(t, err, errs.RouteDurableRequired)
			if e := errs.From(err); e.Details["suggested_operation"] != "target_promote" || !strings.Contains(e.Message, "target_promote") {
				t.Fatalf("error %v does not suggest target_promote", err)
			}
		}},
		{"workspace_write on the path-governed allowlist runs and leaves a receipt", func(t *testing.T) {
			res, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"mkdir", "-p", "made/here"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || res.Receipt == nil || res.Receipt.Effect != "local_effect" || res.Kind != "filesystem" {
				t.Fatalf("result %+v", res)
			}
			if fi, err := os.Stat(filepath.Join(dir, "made/here")); err != nil || !fi.IsDir() {
				t.Fatal("mkdir did not run")
			}
		}},
		{"workspace_write allowlist refuses a path outside the target", func(t *testing.T) {
			_, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"touch", filepath.Join(outside, "marker5")}})
			wantCode(t, err, errs.PathOutsideRoot)
			_, err = h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"cp", "a.txt", "escape/marker6"}})
			if err == nil {
				t.Fatal("cp through an escaping symlink was allowed")
			}
			noFile(t, filepath.Join(outside, "marker5"))
			noFile(t, filepath.Join(outside, "marker6"))
		}},
		{"git mutations are rejected until the target is promoted", func(t *testing.T) {
			_, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"git", "init"}})
			wantCode(t, err, errs.RouteRejected)
			if !strings.Contains(errs.From(err).Message, "target_promote") {
				t.Fatalf("message %q does not suggest target_promote", errs.From(err).Message)
			}
			noFile(t, filepath.Join(dir, ".git"))
			_, err = h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: id, Path: ".git/config", Content: "x"})
			if err == nil {
				t.Fatal("a write into .git succeeded")
			}
		}},
		{"long-running and background work answer with the suggestion to promote", func(t *testing.T) {
			for _, a := range []harness.TargetExecuteArgs{
				{TargetID: id, Argv: []string{"ls"}, TimeoutMs: 60_000},
				{TargetID: id, Argv: []string{"ls"}, Background: true},
			} {
				_, err := h.TargetExecuteCommand(ctx, a)
				wantCode(t, err, errs.RouteDurableRequired)
				if e := errs.From(err); e.Details["suggested_operation"] != "target_promote" || !strings.Contains(e.Message, "target_promote") {
					t.Fatalf("error %v does not suggest target_promote", err)
				}
			}
		}},
		{"a command's output never carries the secret value", func(t *testing.T) {
			res, err := h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: id, Argv: []string{"cat", ".env"}})
			if err == nil && strings.Contains(res.Stdout.Text+res.Stderr.Text, secret) {
				t.Fatal("cat .env printed the secret value")
			}
		}},
	}
	for _, r := range rules {
		t.Run(r.rule, r.run)
	}
}

// TestTargetSwappedDirectory swaps another directory in under a target's
// path: the fingerprint (device and inode) catches it before anything
// runs, for reads and writes.
func TestTargetSwappedDirectory(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	parent := t.TempDir()
	dir := filepath.Join(parent, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("granted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := addTarget(t, h, dir, "write", "")
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("impostor\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.TargetReadFile(ctx, harness.TargetReadFileArgs{TargetID: g.TargetID, Path: "a.txt"})
	wantCode(t, err, errs.TargetMoved)
	_, err = h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: g.TargetID, Path: "marker", Content: "x"})
	wantCode(t, err, errs.TargetMoved)
	noFile(t, filepath.Join(dir, "marker"))
	noFile(t, filepath.Join(dir+".old", "marker"))
	_, err = h.TargetExecuteCommand(ctx, harness.TargetExecuteArgs{TargetID: g.TargetID, Argv: []string{"ls"}})
	wantCode(t, err, errs.TargetMoved)
	again := addTarget(t, h, dir, "write", "")
	if again.TargetID == g.TargetID || again.IdentityFingerprint == g.IdentityFingerprint {
		t.Fatalf("the swapped-in directory got the old target %s / fingerprint %s", again.TargetID, again.IdentityFingerprint)
	}
	if err := os.RemoveAll(dir); err != nil { // deleted: still TARGET_MOVED
		t.Fatal(err)
	}
	_, err = h.TargetListDir(ctx, harness.TargetListDirArgs{TargetID: again.TargetID})
	wantCode(t, err, errs.TargetMoved)
}

// TestTargetSameRootSerializes holds two grants (different owners) on one
// root: their mutations share the root's slot. A write through the second
// grant while the first holds the root answers MUTATION_BUSY after its
// bounded wait and writes nothing; concurrent holders through both grants
// are never inside the root at the same time.
func TestTargetSameRootSerializes(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	dir := targetDir(t, map[string]string{"f.txt": "0\n"})
	a := addTarget(t, h, dir, "write", "alice")
	b := addTarget(t, h, dir, "write", "bob")
	if a.TargetID == b.TargetID || a.WorkspaceID != b.WorkspaceID {
		t.Fatalf("grants %s %s workspaces %s %s", a.TargetID, b.TargetID, a.WorkspaceID, b.WorkspaceID)
	}
	ts := h.Runtime().Targets
	ea, _ := ts.Lookup(a.TargetID)
	eb, _ := ts.Lookup(b.TargetID)
	if ea.Actor == nil || ea.Actor.String() != eb.Actor.String() {
		t.Fatalf("grants on one root have different actors %v %v", ea.Actor, eb.Actor)
	}
	if !strings.HasSuffix(ea.Actor.Id, "targets/target/"+a.CanonicalRoot) {
		t.Fatalf("actor %s is not targets/target/<canonical root>", ea.Actor.Id)
	}

	hold, err := ts.Acquire(ctx, 0, ea)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: b.TargetID, Path: "f.txt", Content: "bob\n", WaitMs: 50})
	wantCode(t, err, errs.MutationBusy)
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "0\n" {
		t.Fatalf("f.txt = %q while alice held the root", b)
	}
	done := make(chan *harness.TargetMutationResult, 1)
	go func() {
		r, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: b.TargetID, Path: "f.txt", Content: "bob\n", WaitMs: 10_000})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	held := hold.Seqs[0]
	hold.Release()
	if r := <-done; r == nil || r.HoldSeqs[0] <= held {
		t.Fatalf("the queued write's hold %v does not come after alice's %d", r, held)
	}

	// Overlapping write attempts through both grants: an atomic counter of
	// holders inside the root never exceeds one.
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := ea
			if i%2 == 1 {
				e = eb
			}
			hd, err := ts.Acquire(ctx, 20*time.Second, e)
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for {
				m := maxInside.Load()
				if n <= m || maxInside.CompareAndSwap(m, n) {
					break
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
				t.Error(err)
			}
			inside.Add(-1)
			hd.Release()
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders were inside one root at once", maxInside.Load())
	}

	// The same through the operations: concurrent writes through both
	// grants each get a grant of the one slot of their root of its own.
	seqs := make([]uint64, 20)
	for i := range seqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := a.TargetID
			if i%2 == 1 {
				id = b.TargetID
			}
			r, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: id, Path: "f.txt", Content: fmt.Sprintf("w%d\n", i), WaitMs: 20_000})
			if err != nil {
				t.Error(err)
				return
			}
			seqs[i] = r.HoldSeqs[0]
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, s := range seqs {
		if s == 0 || seen[s] {
			t.Fatalf("hold grants %v: two writes shared one grant of the root", seqs)
		}
		seen[s] = true
	}
}

// TestTargetDifferentRootsOverlap: while one root is held, a write to
// another root completes (different roots stay concurrent).
func TestTargetDifferentRootsOverlap(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	a := addTarget(t, h, targetDir(t, nil), "write", "")
	bdir := targetDir(t, nil)
	b := addTarget(t, h, bdir, "write", "")
	ea, _ := h.Runtime().Targets.Lookup(a.TargetID)
	hold, err := h.Runtime().Targets.Acquire(ctx, 0, ea)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	if _, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: b.TargetID, Path: "x.txt", Content: "b", WaitMs: 1}); err != nil {
		t.Fatalf("a write to root B waited for root A: %v", err)
	}
	if _, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: a.TargetID, Path: "x.txt", Content: "a", WaitMs: 1}); errs.CodeOf(err) != errs.MutationBusy {
		t.Fatalf("a write to the held root A = %v, want MUTATION_BUSY", err)
	}
}

// TestTargetCrossCopiesNoDeadlock runs 1,000 concurrent copies A→B and
// B→A (100 with -short): both roots are taken in canonical path order, so
// every copy finishes, and every file is whole (one of the two contents,
// never a mix).
func TestTargetCrossCopiesNoDeadlock(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	h := open(t)
	ctx := context.Background()
	contentA, contentB := strings.Repeat("A", 32<<10), strings.Repeat("B", 32<<10)
	adir := targetDir(t, map[string]string{"x.bin": contentA})
	bdir := targetDir(t, map[string]string{"y.bin": contentB})
	a := addTarget(t, h, adir, "write", "")
	b := addTarget(t, h, bdir, "write", "")
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := harness.TargetCopyArgs{TargetID: a.TargetID, From: "x.bin", ToTargetID: b.TargetID, To: "y.bin", Overwrite: true, WaitMs: 30_000}
			if i%2 == 1 {
				args = harness.TargetCopyArgs{TargetID: b.TargetID, From: "y.bin", ToTargetID: a.TargetID, To: "x.bin", Overwrite: true, WaitMs: 30_000}
			}
			if _, err := h.TargetCopy(ctx, args); err != nil {
				if failed.Add(1) < 5 {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d copies failed", failed.Load(), n)
	}
	for _, p := range []string{filepath.Join(adir, "x.bin"), filepath.Join(bdir, "y.bin")} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(got); s != contentA && s != contentB {
			t.Fatalf("%s is torn: %d bytes, not one whole content", p, len(got))
		}
	}
	if c := countKeys(t, h, receiptPrefix(a.TargetID)) + countKeys(t, h, receiptPrefix(b.TargetID)); c != n {
		t.Fatalf("%d receipts for %d copies", c, n)
	}
}

// TestTargetMove moves a file across two targets and within one.
func TestTargetMove(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	adir, bdir := targetDir(t, map[string]string{"m.txt": "move me\n"}), targetDir(t, nil)
	a, b := addTarget(t, h, adir, "write", ""), addTarget(t, h, bdir, "write", "")
	r, err := h.TargetMove(ctx, harness.TargetCopyArgs{TargetID: a.TargetID, From: "m.txt", ToTargetID: b.TargetID, To: "sub/m.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Targets) != 2 || len(r.HoldSeqs) != 2 {
		t.Fatalf("receipt %+v: want both targets held", r.Receipt)
	}
	noFile(t, filepath.Join(adir, "m.txt"))
	if got, _ := os.ReadFile(filepath.Join(bdir, "sub/m.txt")); string(got) != "move me\n" {
		t.Fatalf("moved file holds %q", got)
	}
	if _, err := h.TargetMove(ctx, harness.TargetCopyArgs{TargetID: b.TargetID, From: "sub/m.txt", To: "n.txt"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(bdir, "n.txt")); string(got) != "move me\n" {
		t.Fatalf("moved file holds %q", got)
	}
}

// TestTargetPromote promotes a plain directory: APPROVAL_REQUIRED first
// (the promotion runs git init), then, with a person's approval, a
// registered repository whose receipts include the target's.
func TestTargetPromote(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	h := open(t)
	ctx := context.Background()
	dir := targetDir(t, map[string]string{"a.txt": "a\n"})
	g := addTarget(t, h, dir, "write", "")
	if _, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: g.TargetID, Path: "b.txt", Content: "b\n"}); err != nil {
		t.Fatal(err)
	}
	_, err := h.PromoteTarget(ctx, harness.TargetPromoteArgs{TargetID: g.TargetID})
	wantCode(t, err, errs.ApprovalRequired)
	noFile(t, filepath.Join(dir, ".git"))
	approval, _ := errs.From(err).Details["approval_id"].(string)
	if approval == "" {
		t.Fatalf("no approval_id in %v", err)
	}
	if _, err := h.DecideApproval(ctx, approval, true, "tester", "ok"); err != nil {
		t.Fatal(err)
	}
	res, err := h.PromoteTarget(ctx, harness.TargetPromoteArgs{TargetID: g.TargetID, ApprovalID: approval})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Initialized || res.Repo.ID == "" || res.ReceiptsCopied < 2 {
		t.Fatalf("promotion %+v: want git init, a repo_id and the write's and init's receipts", res)
	}
	if n := countKeys(t, h, receiptPrefix(res.Repo.ID)); n < 2 {
		t.Fatalf("%d receipts under the new repo", n)
	}
	rf, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: res.Repo.ID, Path: "b.txt"})
	if err != nil || rf.Content != "b\n" {
		t.Fatalf("read through the repository: %v %v", rf, err)
	}
	l, err := h.Targets(ctx, harness.TargetListArgs{})
	if err != nil || len(l.Targets) != 1 || l.Targets[0].PromotedRepo != res.Repo.ID {
		t.Fatalf("target list %+v, %v", l, err)
	}
	// A target that already is a git work tree promotes without approval.
	repo := targetDir(t, map[string]string{"r.txt": "r\n"})
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	g2 := addTarget(t, h, repo, "read", "")
	res2, err := h.PromoteTarget(ctx, harness.TargetPromoteArgs{TargetID: g2.TargetID})
	if err != nil || res2.Initialized {
		t.Fatalf("promote a git work tree: %+v %v", res2, err)
	}
}

// TestTargetGrantsRestored: grants survive a restart (persisted in the
// store, restored at boot) and unregister forgets them.
func TestTargetGrantsRestored(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	dir := targetDir(t, map[string]string{"a.txt": "a\n"})
	h, err := harness.Open(ctx, harness.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	g := addTarget(t, h, dir, "write", "ci")
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h, err = harness.Open(ctx, harness.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	l, err := h.Targets(ctx, harness.TargetListArgs{})
	if err != nil || len(l.Targets) != 1 || l.Targets[0].TargetID != g.TargetID || l.Targets[0].Owner != "ci" {
		t.Fatalf("after restart: %+v %v", l, err)
	}
	if _, err := h.TargetWriteFile(ctx, harness.TargetWriteFileArgs{TargetID: g.TargetID, Path: "b.txt", Content: "b"}); err != nil {
		t.Fatalf("write after restart: %v", err)
	}
	if _, err := h.UnregisterTarget(ctx, harness.TargetUnregisterArgs{TargetID: g.TargetID}); err != nil {
		t.Fatal(err)
	}
	_, err = h.TargetReadFile(ctx, harness.TargetReadFileArgs{TargetID: g.TargetID, Path: "a.txt"})
	wantCode(t, err, errs.NotFound)
}

// TestTargetSecretNeverInCommandOutput: a recursive read-only command
// (which names no secret path, so the argv check lets it run) reaches the
// target's .env; with the sandbox the kernel keeps it closed, without it
// the output is redacted. The value never comes back either way; a
// command in a target inside a git repository does not read the
// enclosing repository.
func TestTargetSecretNeverInCommandOutput(t *testing.T) {
	const secret = "plainS3CRETvalue"
	for _, sb := range []string{"", "off"} {
		t.Run("sandbox="+sb, func(t *testing.T) {
			h, err := harness.Open(context.Background(), harness.Config{InMemory: true, Sandbox: sb})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			dir := targetDir(t, map[string]string{".env": secret + "\n", "a.txt": "x\n"})
			g := addTarget(t, h, dir, "read", "")
			for _, argv := range [][]string{{"grep", "-r", "S3CRET", "."}, {"rg", "S3CRET"}, {"cat", ".env"}, {"head", ".env"}} {
				r, err := h.TargetExecuteCommand(context.Background(), harness.TargetExecuteArgs{TargetID: g.TargetID, Argv: argv})
				if err == nil && strings.Contains(r.Stdout.Text+r.Stderr.Text, secret) {
					t.Fatalf("%q printed the secret value", argv)
				}
				if err != nil && strings.Contains(err.Error(), secret) {
					t.Fatalf("%q: the error carries the secret value", argv)
				}
			}
		})
	}
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, Sandbox: "off"}) // the kernel would hide the parent anyway
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	repo := targetDir(t, map[string]string{"inner/a.txt": "a\n"})
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	g := addTarget(t, h, filepath.Join(repo, "inner"), "read", "")
	r, err := h.TargetExecuteCommand(context.Background(), harness.TargetExecuteArgs{TargetID: g.TargetID, Argv: []string{"git", "status", "--porcelain"}})
	if err == nil && r.ExitCode == 0 {
		t.Fatalf("git in a target inside a repository read the enclosing repository: %q", r.Stdout.Text)
	}
}
