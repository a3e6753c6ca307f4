package harness_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
)

// undoHarness opens an in-memory harness with a repository of files.
func undoHarness(t *testing.T, cfg harness.Config, files map[string]string) (*harness.Harness, string, string) {
	t.Helper()
	ctx := context.Background()
	if cfg.DataDir == "" {
		cfg.InMemory = true
	}
	cfg.LoopThreshold = -1
	h, err := harness.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	root := testutil.Repo(t, files)
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return h, reg.ID, root
}

// undoID returns a new request id.
func undoID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func write(t *testing.T, h *harness.Harness, ctx context.Context, repo string, ops ...patch.Op) *harness.MutationResult {
	t.Helper()
	r, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo, RequestID: undoID("w"), Operations: ops})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readAll(t *testing.T, root string, paths ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, p))
		switch {
		case os.IsNotExist(err):
			out[p] = "<absent>"
		case err != nil:
			t.Fatal(err)
		default:
			out[p] = string(b)
		}
	}
	return out
}

func mode(t *testing.T, root, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(filepath.Join(root, p))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// A revert puts back content and mode, deletes what the write created,
// recreates what it deleted, and is itself a receipt that can be reverted.
func TestUndoRevertRestoresExactlyAndRevertsARevert(t *testing.T) {
	ctx := context.Background()
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"a.txt": "A0\n", "b.sh": "echo b\n", "gone.txt": "G\n"})
	_ = os.Chmod(filepath.Join(root, "b.sh"), 0o755)
	before := readAll(t, root, "a.txt", "b.sh", "gone.txt", "new.txt")
	w := write(t, h, ctx, repo,
		patch.Op{Op: "replace", Path: "a.txt", OldText: "A0", NewText: "A1"},
		patch.Op{Op: "write", Path: "b.sh", Content: "echo B\n", Mode: "0600"},
		patch.Op{Op: "delete", Path: "gone.txt"},
		patch.Op{Op: "create", Path: "new.txt", Content: "N\n"})
	if len(w.PreImages) != 4 {
		t.Fatalf("pre-images %+v, want 4", w.PreImages)
	}
	after := readAll(t, root, "a.txt", "b.sh", "gone.txt", "new.txt")
	rv, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w.ReceiptID, RequestID: undoID("r")})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, root, "a.txt", "b.sh", "gone.txt", "new.txt"); !mapsEqual(got, before) {
		t.Fatalf("after revert %v, want %v", got, before)
	}
	if m := mode(t, root, "b.sh"); m != 0o755 {
		t.Fatalf("b.sh mode %v, want 0755", m)
	}
	if rv.Operation != "revert" || !slices.Equal(rv.Reverts, []string{w.ReceiptID}) || len(rv.PreImages) != 4 {
		t.Fatalf("revert receipt %+v", rv.Receipt)
	}
	// A replay writes nothing again.
	again, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w.ReceiptID, RequestID: rv.RequestID})
	if err != nil || !again.Replayed {
		t.Fatalf("replay: %+v %v", again, err)
	}
	// Revert of the revert: the write is back.
	if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: rv.ReceiptID, RequestID: undoID("rr")}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, root, "a.txt", "b.sh", "gone.txt", "new.txt"); !mapsEqual(got, after) {
		t.Fatalf("after revert of revert %v, want %v", got, after)
	}
	if m := mode(t, root, "b.sh"); m != 0o600 {
		t.Fatalf("b.sh mode %v, want 0600", m)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A later write of the same file refuses the revert with REVERT_CONFLICT
// naming it; cascade undoes the later one first, newest first.
func TestUndoConflictDetailsAndCascadeOrder(t *testing.T) {
	ctx := context.Background()
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"f": "0\n", "g": "g0\n", "h": "h0\n"})
	w1 := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "f", Content: "1\n"})
	w2 := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "f", Content: "2\n"}, patch.Op{Op: "write", Path: "g", Content: "g2\n"})
	w3 := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "g", Content: "g3\n"}) // later on g only: joins by cascade
	w4 := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "h", Content: "h4\n"}) // unrelated: stays
	_, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w1.ReceiptID, RequestID: undoID("r")})
	e := errs.From(err)
	if e.Code != errs.RevertConflict || !strings.Contains(e.Message, w2.ReceiptID) {
		t.Fatalf("revert under a later write: %v", err)
	}
	raw, _ := json.Marshal(e.Details)
	var d struct {
		Later []struct {
			ReceiptID string   `json:"receipt_id"`
			Paths     []string `json:"paths"`
		} `json:"later"`
		Paths []string `json:"paths"`
	}
	_ = json.Unmarshal(raw, &d)
	if len(d.Later) != 1 || d.Later[0].ReceiptID != w2.ReceiptID || !slices.Equal(d.Later[0].Paths, []string{"f"}) || !slices.Equal(d.Paths, []string{"f"}) {
		t.Fatalf("details %s", raw)
	}
	if got := readAll(t, root, "f", "g", "h"); got["f"] != "2\n" || got["g"] != "g3\n" {
		t.Fatalf("a refused revert wrote: %v", got)
	}
	l, err := h.ReceiptList(ctx, harness.ReceiptListArgs{RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]harness.ReceiptItem{}
	for _, it := range l.Receipts {
		byID[it.ReceiptID] = it
	}
	if it := byID[w1.ReceiptID]; it.Revertable || !slices.Equal(it.LaterReceipts, []string{w2.ReceiptID}) || !slices.Equal(it.Paths, []string{"f"}) {
		t.Fatalf("receipt_list of w1: %+v", it)
	}
	if it := byID[w4.ReceiptID]; !it.Revertable || it.FencingToken == 0 {
		t.Fatalf("receipt_list of w4: %+v", it)
	}
	rv, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w1.ReceiptID, RequestID: undoID("rc"), Cascade: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{w3.ReceiptID, w2.ReceiptID, w1.ReceiptID}; !slices.Equal(rv.Reverts, want) {
		t.Fatalf("cascade reverted %v, want newest first %v", rv.Reverts, want)
	}
	if got := readAll(t, root, "f", "g", "h"); got["f"] != "0\n" || got["g"] != "g0\n" || got["h"] != "h4\n" {
		t.Fatalf("after cascade %v", got)
	}
	_ = w4
	// The cascade is one receipt: reverting it brings all three back.
	if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: rv.ReceiptID, RequestID: undoID("rr")}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, root, "f", "g", "h"); got["f"] != "2\n" || got["g"] != "g3\n" {
		t.Fatalf("after reverting the cascade %v", got)
	}
}

// A file changed outside harnessd since the write is not overwritten.
func TestUndoRefusesOverAnOutsideChange(t *testing.T) {
	ctx := context.Background()
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"f": "0\n"})
	w := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "f", Content: "1\n"})
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("human edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w.ReceiptID, RequestID: undoID("r")})
	if errs.CodeOf(err) != errs.PatchConflict {
		t.Fatalf("revert over an outside change: %v, want PATCH_CONFLICT", err)
	}
	if got := readAll(t, root, "f"); got["f"] != "human edit\n" {
		t.Fatalf("the outside change was lost: %q", got["f"])
	}
}

// Pre-images beyond the size bound are not kept, and those past the age
// bound are pruned: the revert says so and names the setting.
func TestUndoPreImageBounds(t *testing.T) {
	ctx := context.Background()
	t.Run("size", func(t *testing.T) {
		h, repo, root := undoHarness(t, harness.Config{PreImageMaxBytes: 16}, map[string]string{"big": strings.Repeat("x", 100), "small": "s\n"})
		w := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "big", Content: "y"})
		_, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w.ReceiptID, RequestID: undoID("r")})
		if errs.CodeOf(err) != errs.NotFound || !strings.Contains(err.Error(), "PreImageMaxBytes") {
			t.Fatalf("revert without its pre-image: %v", err)
		}
		if got := readAll(t, root, "big"); got["big"] != "y" {
			t.Fatalf("a refused revert wrote %q", got["big"])
		}
		ws := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "small", Content: "t\n"})
		if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: ws.ReceiptID, RequestID: undoID("r")}); err != nil {
			t.Fatalf("a small pre-image within the bound: %v", err)
		}
		if st := h.PreImageStats(); st.Bytes > 16 {
			t.Fatalf("store holds %d bytes, over the bound", st.Bytes)
		}
	})
	t.Run("age", func(t *testing.T) {
		var mu sync.Mutex
		offset := time.Duration(0)
		now := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return time.Now().Add(offset)
		}
		h, repo, _ := undoHarness(t, harness.Config{PreImageMaxAge: time.Hour, Now: now}, map[string]string{"f": "old\n", "g": "g\n"})
		w := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "f", Content: "new\n"})
		mu.Lock()
		offset = 2 * time.Hour
		mu.Unlock()
		write(t, h, ctx, repo, patch.Op{Op: "write", Path: "g", Content: "g2\n"}) // its Put sweeps
		_, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w.ReceiptID, RequestID: undoID("r")})
		if errs.CodeOf(err) != errs.NotFound || !strings.Contains(err.Error(), "PreImageMaxAge") {
			t.Fatalf("revert of a pruned pre-image: %v", err)
		}
		l, err := h.ReceiptList(ctx, harness.ReceiptListArgs{RepoID: repo})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Receipts {
			if it.ReceiptID == w.ReceiptID && (it.Revertable || !strings.Contains(it.NotRevertable, "PreImageMaxAge")) {
				t.Fatalf("receipt_list of a pruned receipt: %+v", it)
			}
		}
	})
}

// An attacker's try to get a secret file's bytes into the pre-image store
// (to read them back through a revert) fails: secret paths are never
// patched, so never kept, and no kept pre-image holds the secret value.
func TestUndoSecretPathsNeverStored(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	const secret = "hunter2-undo-secret-value"
	h, repo, _ := undoHarness(t, harness.Config{DataDir: data}, map[string]string{".env": "TOKEN=" + secret + "\n", "ok.txt": "ok\n"})
	for _, o := range []patch.Op{{Op: "write", Path: ".env", Content: "x"}, {Op: "delete", Path: ".env"}, {Op: "replace", Path: ".env", OldText: "TOKEN", NewText: "T"}} {
		_, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo, RequestID: undoID("s"), Operations: []patch.Op{{Op: "write", Path: "ok.txt", Content: "ok2\n"}, o}})
		if errs.CodeOf(err) != errs.SecretPathDenied {
			t.Fatalf("%s of .env: %v, want SECRET_PATH_DENIED", o.Op, err)
		}
	}
	write(t, h, ctx, repo, patch.Op{Op: "write", Path: "ok.txt", Content: "ok3\n"})
	dir := harness.PreImageDir(data)
	n := 0
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		n++
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("pre-image %s has mode %v, want 0600", p, fi.Mode().Perm())
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
			t.Errorf("pre-image %s holds the secret value", p)
		}
		return nil
	})
	if n != 1 {
		t.Fatalf("%d pre-image files, want 1 (ok.txt's)", n)
	}
}

// run_revert undoes one run's writes, refuses over another run's later
// write of the same file (naming its receipt and run), keeps what came up
// to to_span, and leaves what was already reverted alone.
func TestUndoRunRevertAcrossTwoRuns(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{"f": "f0\n", "g": "g0\n", "k": "k0\n"}
	h, repo, root := undoHarness(t, harness.Config{}, files)
	ra, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "b"})
	if err != nil {
		t.Fatal(err)
	}
	inA, inB := harness.WithRun(ctx, ra.RunID), harness.WithRun(ctx, rb.RunID)
	a1 := write(t, h, inA, repo, patch.Op{Op: "write", Path: "k", Content: "k1\n"})
	b1 := write(t, h, inB, repo, patch.Op{Op: "write", Path: "g", Content: "gb\n"})
	a2 := write(t, h, inA, repo, patch.Op{Op: "write", Path: "f", Content: "fa\n"})
	b2 := write(t, h, inB, repo, patch.Op{Op: "write", Path: "k", Content: "k2\n"})
	if a1.RunID != ra.RunID || a1.SpanID == "" || b1.RunID != rb.RunID {
		t.Fatalf("receipts without their runs: %+v %+v", a1.Receipt, b1.Receipt)
	}
	_, err = h.RunRevert(ctx, harness.RunRevertArgs{RunID: ra.RunID, RequestID: undoID("ra")})
	e := errs.From(err)
	if e.Code != errs.RevertConflict || !strings.Contains(e.Message, b2.ReceiptID) {
		t.Fatalf("run_revert under the other run's later write: %v", err)
	}
	raw, _ := json.Marshal(e.Details["later"])
	if !strings.Contains(string(raw), rb.RunID) || strings.Contains(string(raw), b1.ReceiptID) {
		t.Fatalf("later %s: want b2 of run b only", raw)
	}
	if got := readAll(t, root, "f", "g", "k"); got["f"] != "fa\n" || got["k"] != "k2\n" {
		t.Fatalf("a refused run_revert wrote: %v", got)
	}
	// Up to a1: only a2 is undone (b2 wrote k, not f).
	r1, err := h.RunRevert(ctx, harness.RunRevertArgs{RunID: ra.RunID, ToSpan: a1.SpanID, RequestID: undoID("ra1")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r1.Reverts, []string{a2.ReceiptID}) {
		t.Fatalf("to_span reverted %v, want [a2]", r1.Reverts)
	}
	if got := readAll(t, root, "f", "g", "k"); got["f"] != "f0\n" || got["g"] != "gb\n" || got["k"] != "k2\n" {
		t.Fatalf("after run_revert to a1: %v", got)
	}
	rB, err := h.RunRevert(ctx, harness.RunRevertArgs{RunID: rb.RunID, RequestID: undoID("rb")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rB.Reverts, []string{b2.ReceiptID, b1.ReceiptID}) {
		t.Fatalf("run b reverted %v, want newest first [b2 b1]", rB.Reverts)
	}
	// b's writes of k are undone: a's revert no longer conflicts, and a2
	// (already undone) is not reverted twice.
	rA, err := h.RunRevert(ctx, harness.RunRevertArgs{RunID: ra.RunID, RequestID: undoID("ra2")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rA.Reverts, []string{a1.ReceiptID}) {
		t.Fatalf("run a reverted %v, want [a1]", rA.Reverts)
	}
	if got := readAll(t, root, "f", "g", "k"); !mapsEqual(got, files) {
		t.Fatalf("after both runs' reverts %v, want %v", got, files)
	}
	l, err := h.ReceiptList(ctx, harness.ReceiptListArgs{RunID: ra.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Receipts) != 2 || l.Receipts[0].ReceiptID != a2.ReceiptID || l.Receipts[1].ReceiptID != a1.ReceiptID {
		t.Fatalf("receipt_list --run a: %+v", l.Receipts)
	}
}

// BenchmarkUndoApplyPatchNewPreImage is a one-file write whose pre-image is
// new every time (stored with fsync on the disk store), then
// BenchmarkUndoRevert is the revert of such a write.
func BenchmarkUndoApplyPatchNewPreImage(b *testing.B) {
	for _, disk := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory-store", true: "disk-store"}[disk], func(b *testing.B) {
			h, id := benchHarness(b, !disk)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: id, RequestID: fmt.Sprintf("bench-%d", i),
					Operations: []patch.Op{{Op: "write", Path: "src/app.go", Content: fmt.Sprintf("package app\n\nvar v = %d\n", i)}}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUndoRevert(b *testing.B) {
	for _, disk := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory-store", true: "disk-store"}[disk], func(b *testing.B) {
			h, id := benchHarness(b, !disk)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				w, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: id, RequestID: fmt.Sprintf("bench-w-%d", i),
					Operations: []patch.Op{{Op: "write", Path: "src/app.go", Content: fmt.Sprintf("package app\n\nvar v = %d\n", i)}}})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: id, ReceiptID: w.ReceiptID, RequestID: fmt.Sprintf("bench-r-%d", i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Reverting a revert is refused when bringing the write back would also
// bring back an older write someone reverted since.
func TestUndoRevertOfRevertOverAnOlderRevert(t *testing.T) {
	ctx := context.Background()
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"f": "0\n"})
	x := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "f", Content: "x\n"})
	w := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "f", Content: "w\n"})
	v, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w.ReceiptID, RequestID: undoID("v")})
	if err != nil {
		t.Fatal(err)
	}
	u, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: x.ReceiptID, RequestID: undoID("u")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: v.ReceiptID, RequestID: undoID("vv")})
	if e := errs.From(err); e.Code != errs.RevertConflict || !strings.Contains(e.Message, u.ReceiptID) {
		t.Fatalf("revert of a revert over the revert of an older write: %v, want REVERT_CONFLICT naming %s", err, u.ReceiptID)
	}
	if got := readAll(t, root, "f"); got["f"] != "0\n" {
		t.Fatalf("f = %q", got["f"])
	}
	// Reverting the same receipt twice: the revert that undid it conflicts.
	_, err = h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w.ReceiptID, RequestID: undoID("w2")})
	if e := errs.From(err); e.Code != errs.RevertConflict {
		t.Fatalf("second revert of %s: %v", w.ReceiptID, err)
	}
}

// An integrated proposal keeps its pre-images and is reverted like a patch.
func TestUndoRevertOfAnIntegratedProposal(t *testing.T) {
	ctx := context.Background()
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"src/a.go": "package a\n"})
	val, err := h.PatchProposalValidate(ctx, harness.PatchProposalValidateArgs{RepoID: repo, Proposals: []harness.Proposal{
		{ID: "p", Operations: []patch.Op{{Op: "replace", Path: "src/a.go", OldText: "package a", NewText: "package a // p"}, {Op: "create", Path: "src/b.go", Content: "package a\n"}}}}})
	if err != nil || val.Proposals[0].ProposalID == "" {
		t.Fatalf("validate: %+v %v", val, err)
	}
	in, err := h.PatchProposalIntegrate(ctx, harness.PatchProposalIntegrateArgs{RepoID: repo, RequestID: undoID("i"), ProposalIDs: []string{val.Proposals[0].ProposalID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.PreImages) != 2 {
		t.Fatalf("integrate pre-images %+v", in.PreImages)
	}
	if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: in.ReceiptID, RequestID: undoID("r")}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, root, "src/a.go", "src/b.go"); got["src/a.go"] != "package a\n" || got["src/b.go"] != "<absent>" {
		t.Fatalf("after revert %v", got)
	}
}

// A write undone by a cascade that left its file as it was (it wrote a,
// a later write deleted a, and the cascade took both back to "no a") is
// reverted once: a second revert of it is REVERT_CONFLICT naming the
// revert that undid it, not a receipt of nothing (found by
// TestUndoPropertyTwoAgentsNeverLoseAWrite).
func TestUndoRevertOfAnUndoneWriteConflicts(t *testing.T) {
	ctx := context.Background()
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"a": "a0\n", "c": "c0\n"})
	write(t, h, ctx, repo, patch.Op{Op: "delete", Path: "a"})
	w2 := write(t, h, ctx, repo, patch.Op{Op: "write", Path: "a", Content: "a2\n"})
	write(t, h, ctx, repo, patch.Op{Op: "delete", Path: "a"}, patch.Op{Op: "write", Path: "c", Content: "c4\n"})
	rv, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w2.ReceiptID, RequestID: undoID("rc"), Cascade: true})
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, root, "a", "c")
	_, err = h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w2.ReceiptID, RequestID: undoID("again")})
	if e := errs.From(err); e.Code != errs.RevertConflict || !strings.Contains(e.Message, rv.ReceiptID) {
		t.Fatalf("second revert of an undone write: %v, want REVERT_CONFLICT naming %s", err, rv.ReceiptID)
	}
	if got := readAll(t, root, "a", "c"); !mapsEqual(got, before) {
		t.Fatalf("a refused revert wrote: %v, was %v", got, before)
	}
	l, err := h.ReceiptList(ctx, harness.ReceiptListArgs{RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range l.Receipts {
		if it.ReceiptID == w2.ReceiptID && (it.Revertable || !slices.Equal(it.LaterReceipts, []string{rv.ReceiptID})) {
			t.Fatalf("receipt_list of the undone write: %+v", it)
		}
	}
	// Reverting the cascade brings it back, and then it can be reverted.
	if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: rv.ReceiptID, RequestID: undoID("rr")}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w2.ReceiptID, RequestID: undoID("ok"), Cascade: true}); err != nil {
		t.Fatalf("revert after its revert was reverted: %v", err)
	}
}
