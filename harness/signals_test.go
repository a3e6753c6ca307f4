package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// Loop detection is per run: agent B running what agent A ran twice is not
// a loop, while each agent repeating itself still is.
func TestLoopDetectionIsPerRun(t *testing.T) {
	h, _, id := fixture(t)
	a, b := session("loop-a"), session("loop-b")
	args := harness.RunCommandArgs{RepoID: id, Argv: []string{"cat", "missing-file"}}
	for _, step := range []struct {
		who  string
		ctx  context.Context
		loop bool
	}{
		{"a", a, false}, {"a", a, false}, // a fails twice
		{"b", b, false}, {"b", b, false}, // b is not charged with a's failures
		{"a", a, true}, // a's third try on the same tree is a loop
		{"b", b, true}, // and so is b's
	} {
		r, err := h.RunCommand(step.ctx, args)
		if got := errs.CodeOf(err) == errs.LoopDetected; got != step.loop {
			t.Fatalf("agent %s: %+v, %v; want loop %v", step.who, r, err, step.loop)
		}
	}
	// The same holds for an explicit run_id: two runs of one session are
	// two scopes.
	r1, err := h.RunStart(a, harness.RunStartArgs{Goal: "one"})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := h.RunStart(a, harness.RunStartArgs{Goal: "two"})
	if err != nil {
		t.Fatal(err)
	}
	ls := harness.RunCommandArgs{RepoID: id, Argv: []string{"ls", "src"}}
	for range 3 {
		if _, err := h.RunCommand(harness.WithRun(a, r1.RunID), ls); err != nil {
			t.Fatalf("run one: %v", err)
		}
	}
	if _, err := h.RunCommand(harness.WithRun(a, r2.RunID), ls); err != nil {
		t.Fatalf("run two's first ls after run one's three: %v", err)
	}
	if _, err := h.RunCommand(harness.WithRun(a, r1.RunID), ls); errs.CodeOf(err) != errs.LoopDetected {
		t.Fatalf("run one's fourth ls: %v, want LOOP_DETECTED", err)
	}
}

// tree_changed names who changed the tree while a read-only command ran.
// The command is `cat fifo`, which blocks until the test opens the fifo for
// writing: meanwhile another agent patches a file (tree_changed_by
// "others", naming its receipt), or a process outside harnessd changes one
// (unconfined: "command"; confined the command cannot write, and nobody
// else held the checkout: no change is reported).
func TestTreeChangedSaysWho(t *testing.T) {
	for _, mode := range []string{"auto", "off"} {
		t.Run("sandbox "+mode, func(t *testing.T) {
			ctx := context.Background()
			h, err := harness.Open(ctx, harness.Config{InMemory: true, Sandbox: mode, LoopThreshold: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close(ctx) })
			root := testutil.Repo(t, map[string]string{"a.txt": "old\n", ".gitignore": "fifo\n"})
			r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
			if err != nil {
				t.Fatal(err)
			}
			confined := false
			for _, l := range h.SandboxStatus() {
				confined = confined || (l.Profile == "read" && l.Mode != "none")
			}
			fifo := filepath.Join(root, "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			reader := session("reader")
			// during runs `cat fifo` and, once it reads, f; then lets it end.
			during := func(f func()) *harness.RunCommandResult {
				t.Helper()
				type res struct {
					r   *harness.RunCommandResult
					err error
				}
				done := make(chan res, 1)
				go func() {
					r, err := h.RunCommand(reader, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"cat", "fifo"}})
					done <- res{r, err}
				}()
				opened := make(chan *os.File, 1)
				go func() {
					w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until cat opens it
					if err != nil {
						t.Error(err)
					}
					opened <- w
				}()
				var w *os.File
				select {
				case w = <-opened:
				case x := <-done:
					// The command ended without opening the fifo: release
					// the blocked open, then fail.
					rd, _ := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
					if w := <-opened; w != nil {
						w.Close()
					}
					rd.Close()
					t.Fatalf("cat fifo ended before it read: %+v, %v", x.r, x.err)
				}
				f()
				w.WriteString("read\n")
				w.Close()
				x := <-done
				if x.err != nil || x.r.Stdout.Text != "read\n" {
					t.Fatalf("cat fifo: %+v, %v", x.r, x.err)
				}
				return x.r
			}

			// Nobody wrote: nothing changed.
			if got := during(func() {}); got.TreeChanged || got.TreeChangedBy != "" || len(got.ConcurrentWrites) != 0 {
				t.Fatalf("nobody wrote, yet: %+v", got)
			}

			// Another agent patched a file meanwhile.
			var receipt string
			got := during(func() {
				res, err := h.ApplyPatch(session("writer"), harness.ApplyPatchArgs{RepoID: r.ID, RequestID: "concurrent-patch", Operations: writeOp("a.txt", "new\n")})
				if err != nil {
					t.Fatal(err)
				}
				receipt = res.ReceiptID
			})
			if !got.TreeChanged || got.TreeChangedBy != "others" || len(got.ConcurrentWrites) != 1 ||
				got.ConcurrentWrites[0].Owner != "concurrent-patch" || got.ConcurrentWrites[0].ReceiptID != receipt ||
				!slices.Contains(got.ConcurrentReceipts, receipt) {
				t.Fatalf("another agent patched a.txt (receipt %s): %+v", receipt, got)
			}
			for _, w := range got.Warnings {
				if w == "the work tree changed while this read-only command ran" {
					t.Fatalf("the reader was blamed: %v", got.Warnings)
				}
			}

			// A process outside harnessd changed a file meanwhile.
			got = during(func() { testutil.WriteFile(t, root, "a.txt", "outside\n") })
			switch {
			case confined && got.TreeChanged:
				t.Fatalf("confined, nobody else held the checkout, yet: %+v", got)
			case !confined && (!got.TreeChanged || got.TreeChangedBy != "command" || len(got.ConcurrentWrites) != 0):
				t.Fatalf("unconfined, a.txt changed under nobody's lease: %+v, want tree_changed_by command", got)
			}
		})
	}
}
