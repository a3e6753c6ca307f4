package preimage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// A stat-only walk (job_start's estimate) finds the paths, sizes and
// budget answers the snapshot itself finds, and reads nothing.
func TestTakeTreeStatOnlyMatchesTheSnapshot(t *testing.T) {
	root := treeFixture(t)
	if err := os.Symlink("a.txt", filepath.Join(root, "pkg/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "pkg/b.txt"), filepath.Join(root, "pkg/hard")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "pkg/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := func(rel string) bool { return rel == "secret.env" }
	skip := func(rel string, dir bool) bool { return dir && rel == "out" }
	cases := []struct {
		name     string
		scope    []string
		maxBytes int64
		maxFiles int
		budget   string // "" = within
	}{
		{"whole checkout within", nil, 0, 0, ""},
		{"whole checkout over bytes", nil, 5, 0, "JobUndoMaxBytes"},
		{"whole checkout over files", nil, 0, 4, "JobUndoMaxFiles"},
		{"an operand within", []string{"pkg/c"}, 3, 2, ""},
		{"an operand over bytes", []string{"pkg"}, 3, 0, "JobUndoMaxBytes"},
		{"no bound", nil, -1, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _ := Open(Config{})
			o := TreeOptions{Root: root, Scope: c.scope, Secret: secret, Skip: skip, MaxBytes: c.maxBytes, MaxFiles: c.maxFiles}
			o.Store = st
			full, ferr := TakeTree(context.Background(), o)
			o.Store, o.StatOnly = nil, true
			est, eerr := TakeTree(context.Background(), o)
			if got, want := budgetOf(eerr), budgetOf(ferr); errs.CodeOf(eerr) != errs.CodeOf(ferr) || got != want {
				t.Fatalf("estimate %v, snapshot %v: want the same answer", eerr, ferr)
			}
			if c.budget != "" {
				if errs.CodeOf(eerr) != errs.BudgetExceeded || budgetOf(eerr) != c.budget {
					t.Fatalf("estimate: %v, want BUDGET_EXCEEDED naming %s", eerr, c.budget)
				}
				return
			}
			if eerr != nil {
				t.Fatal(eerr)
			}
			if !slices.Equal(paths(est), paths(full)) || est.Bytes != full.Bytes {
				t.Fatalf("estimate %q (%d bytes), snapshot %q (%d bytes)", paths(est), est.Bytes, paths(full), full.Bytes)
			}
			for _, e := range est.Entries {
				if e.SHA256 != "" {
					t.Fatalf("%s: digest %s; a stat-only walk reads no content", e.Path, e.SHA256)
				}
			}
		})
	}
}

// A file too large to read in time (1 TiB, sparse) is refused by the
// estimate at once, from its size alone.
func TestTakeTreeStatOnlyNeverReads(t *testing.T) {
	root := treeFixture(t)
	f, err := os.Create(filepath.Join(root, "pkg/huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		t.Skipf("the file system does not make a sparse 1 TiB file: %v", err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err = TakeTree(ctx, TreeOptions{Root: root, Scope: []string{"pkg"}, StatOnly: true})
	if errs.CodeOf(err) != errs.BudgetExceeded || budgetOf(err) != "JobUndoMaxBytes" {
		t.Fatalf("got %v, want BUDGET_EXCEEDED on JobUndoMaxBytes", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the estimate took %s: it read the file", d)
	}
}

// budgetOf is the budget a refusal names ("" for none).
func budgetOf(err error) any {
	if err == nil {
		return ""
	}
	return errs.From(err).Details["budget"]
}
