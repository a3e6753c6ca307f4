package harness_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// undoFiles is a checkout with what a byte-for-byte restore must keep:
// nested files, a binary file, an executable, a symbolic link, an empty
// directory (made by undoTree), an ignored build output.
var undoFiles = map[string]string{
	"README.md":        "# demo\n",
	".gitignore":       "build/\n",
	"pkg/a.go":         "package pkg\n",
	"pkg/sub/b.txt":    "b\n",
	"pkg/bin.dat":      "\x00\x01\x02\xff\xfe binary\x00",
	"pkg/run.sh":       "#!/bin/sh\necho run\n",
	"build/out.o":      "object code",
	"other/keep.txt":   "keep\n",
	"pkg/sub/deep/c.c": "int c;\n",
}

// rmPkg removes pkg file by file (a script's rm -r is refused: only an
// argv's names its effect).
const rmPkg = "rm pkg/a.go pkg/sub/b.txt pkg/bin.dat pkg/run.sh pkg/sub/deep/c.c pkg/link && rmdir pkg/sub/deep pkg/sub pkg/empty pkg"

// undoTree makes the parts of undoFiles a map cannot say.
func undoTree(t *testing.T, root string) {
	t.Helper()
	if err := os.Chmod(filepath.Join(root, "pkg/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.go", filepath.Join(root, "pkg/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "pkg/empty"), 0o750); err != nil {
		t.Fatal(err)
	}
}

// treeHash is the hash of every path of the checkout but .git: kinds,
// modes, contents, link targets, directories.
func treeHash(t *testing.T, root string) (string, *preimage.Tree) {
	t.Helper()
	tr, err := preimage.TakeTree(context.Background(), preimage.TreeOptions{Root: root, MaxBytes: -1, MaxFiles: -1})
	if err != nil {
		t.Fatal(err)
	}
	return preimage.TreeHash(tr), tr
}

func undoJobHarness(t *testing.T, cfg harness.Config) (*harness.Harness, string, string) {
	t.Helper()
	h, id, root := undoHarness(t, cfg, undoFiles)
	undoTree(t, root)
	return h, root, id
}

func finishedJob(t *testing.T, h *harness.Harness, args harness.JobStartArgs) *harness.JobResult {
	t.Helper()
	if args.RequestID == "" {
		args.RequestID = undoID("job")
	}
	r, err := h.JobStart(context.Background(), args)
	if err != nil {
		t.Fatalf("job_start %v: %v", args.Argv, err)
	}
	return waitJob(t, h, r.JobID)
}

func revertJob(t *testing.T, h *harness.Harness, repo, receipt string) (*harness.MutationResult, error) {
	t.Helper()
	return h.Revert(context.Background(), harness.RevertArgs{RepoID: repo, ReceiptID: receipt, RequestID: undoID("rv")})
}

// A writing job that removes a tree, overwrites and creates files: its
// receipt is listed, its id is in job_status, and revert puts the
// checkout back byte for byte (modes, a link as a link, an empty
// directory, a binary file), removing what the job made.
func TestJobUndoRestoresByteForByte(t *testing.T) {
	h, root, repo := undoJobHarness(t, harness.Config{})
	before, _ := treeHash(t, root)
	j := finishedJob(t, h, harness.JobStartArgs{RepoID: repo, Writes: true,
		Argv: []string{"sh", "-c", rmPkg + " && echo new > new.txt && printf more >> README.md && mkdir -p made/deeper && chmod 600 other/keep.txt"}})
	if j.State != messages.JobSucceeded || j.ReceiptID == "" {
		t.Fatalf("job: %s %+v receipt %q; want succeeded with a receipt", j.State, j.Error, j.ReceiptID)
	}
	if _, err := os.Stat(filepath.Join(root, "pkg")); !os.IsNotExist(err) {
		t.Fatalf("pkg still exists after the job: %v", err)
	}
	if after, _ := treeHash(t, root); after == before {
		t.Fatal("the job changed nothing")
	}
	list, err := h.ReceiptList(context.Background(), harness.ReceiptListArgs{RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Receipts, func(it harness.ReceiptItem) bool { return it.ReceiptID == j.ReceiptID })
	if i < 0 || !list.Receipts[i].Revertable || list.Receipts[i].Operation != "job_start" {
		t.Fatalf("receipt_list: %+v; want the job's receipt, revertable", list.Receipts)
	}
	if rs := list.Receipts[i].Resources; rs == nil || rs.Processes < 1 || j.Resources == nil || *rs != *j.Resources {
		t.Fatalf("the receipt's resources %+v, want the job's final figures %+v", rs, j.Resources)
	}
	want := []string{"README.md", "new.txt", "other/keep.txt", "pkg/a.go", "pkg/bin.dat", "pkg/link", "pkg/run.sh", "pkg/sub/b.txt", "pkg/sub/deep/c.c"}
	if got := list.Receipts[i].Paths; !slices.Equal(got, want) {
		t.Fatalf("receipt paths %v, want %v", got, want)
	}
	if _, err := revertJob(t, h, repo, j.ReceiptID); err != nil {
		t.Fatal(err)
	}
	if after, tr := treeHash(t, root); after != before {
		t.Fatalf("tree after the revert differs from before the job: %+v", tr.Entries)
	}
	if fi, err := os.Lstat(filepath.Join(root, "pkg/link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("pkg/link: %v %v; want a symbolic link", fi, err)
	}
}

// A file the job removed and someone changed since (outside harnessd):
// the revert refuses (PATCH_CONFLICT) and writes nothing; a file the job
// left alone is no obstacle.
func TestJobUndoRefusesAChangedFile(t *testing.T) {
	h, root, repo := undoJobHarness(t, harness.Config{})
	j := finishedJob(t, h, harness.JobStartArgs{RepoID: repo, Writes: true, Argv: []string{"sh", "-c", "rm pkg/sub/b.txt pkg/sub/deep/c.c && rmdir pkg/sub/deep pkg/sub && echo job > job.txt"}})
	if j.ReceiptID == "" {
		t.Fatalf("job: %s %+v; want a receipt", j.State, j.Error)
	}
	testutil.WriteFile(t, root, "other/keep.txt", "changed by someone else\n") // not the job's: no conflict
	testutil.WriteFile(t, root, "job.txt", "edited after the job\n")
	mid, _ := treeHash(t, root)
	_, err := revertJob(t, h, repo, j.ReceiptID)
	if errs.CodeOf(err) != errs.PatchConflict {
		t.Fatalf("revert over a changed file: got %v, want PATCH_CONFLICT", err)
	}
	if now, _ := treeHash(t, root); now != mid {
		t.Fatal("a refused revert changed the checkout")
	}
	// Put back as the job left it: the revert runs, the other edit stays.
	testutil.WriteFile(t, root, "job.txt", "job\n")
	if _, err := revertJob(t, h, repo, j.ReceiptID); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, root, "pkg/sub/b.txt", "job.txt", "other/keep.txt")
	if got["pkg/sub/b.txt"] != "b\n" || got["job.txt"] != "<absent>" || got["other/keep.txt"] != "changed by someone else\n" {
		t.Fatalf("after the revert: %v", got)
	}
}

// Over the undo budget the job is refused by job_start itself, from a
// stat-only estimate: no job is queued and no person is asked, the marker
// it would write never appears, and the error names the budget. An rm's
// scope is its operands (so rm -rf pkg is refused while rm -rf of a small
// directory runs); a script's, the whole checkout. Isolation "worktree"
// keeps no undo and is not estimated.
func TestJobUndoBudgetRefusesBeforeRunning(t *testing.T) {
	h, root, repo := undoJobHarness(t, harness.Config{JobUndoMaxBytes: 16})
	ctx := context.Background()
	for _, argv := range [][]string{
		{"sh", "-c", "echo ran > marker.txt; " + rmPkg},
		{"sh", "-c", "echo ran > marker.txt"},
		{"rm", "-rf", "pkg"},
	} {
		_, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: repo, Writes: true, RequestID: undoID("over"), Argv: argv})
		if errs.CodeOf(err) != errs.BudgetExceeded {
			t.Fatalf("job_start %q over the undo budget: %v, want BUDGET_EXCEEDED from the call", argv, err)
		}
		if d := errs.From(err).Details; d["budget"] != "JobUndoMaxBytes" || d["estimated"] != true {
			t.Fatalf("job_start %q: details %v, want the estimate naming JobUndoMaxBytes", argv, d)
		}
	}
	if l, err := h.JobList(ctx, harness.JobListArgs{RepoID: repo}); err != nil || len(l.Jobs) != 0 {
		t.Fatalf("jobs after the refusals: %+v, %v; want none queued", l, err)
	}
	if _, err := os.Stat(filepath.Join(root, "marker.txt")); !os.IsNotExist(err) {
		t.Fatal("a job ran although its undo could not be kept")
	}
	if _, err := os.Stat(filepath.Join(root, "pkg/a.go")); err != nil {
		t.Fatalf("pkg/a.go: %v", err)
	}
	// Within the budget: an rm whose operands are small is asked about and
	// runs once approved, with its receipt.
	args := harness.JobStartArgs{RepoID: repo, Writes: true, RequestID: undoID("small"), Argv: []string{"rm", "-rf", "other"}}
	_, err := h.JobStart(ctx, args)
	apr, _ := errs.From(err).Details["approval_id"].(string)
	if errs.CodeOf(err) != errs.ApprovalRequired || apr == "" {
		t.Fatalf("rm -rf other within the budget: %v, want APPROVAL_REQUIRED", err)
	}
	if _, err := h.DecideApproval(ctx, apr, true, "tester", "remove other"); err != nil {
		t.Fatal(err)
	}
	args.ApprovalID = apr
	r, err := h.JobStart(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, h, r.JobID); j.State != messages.JobSucceeded || j.ReceiptID == "" {
		t.Fatalf("rm -rf other: %s %+v receipt %q", j.State, j.Error, j.ReceiptID)
	}
	// In a worktree nothing of the checkout is kept: no estimate.
	j := finishedJob(t, h, harness.JobStartArgs{RepoID: repo, Writes: true, Isolation: messages.JobIsolationWorktree, Argv: []string{"sh", "-c", "echo ran > marker.txt"}})
	if j.State != messages.JobSucceeded {
		t.Fatalf("a worktree job: %s %+v", j.State, j.Error)
	}
}

// An estimate within the budget queues the job; the snapshot before its
// process still checks exactly. A job queued behind another writer, whose
// scope that writer grows past the budget, fails BUDGET_EXCEEDED when its
// turn comes and never runs.
func TestJobUndoBudgetExactCheckBeforeTheProcess(t *testing.T) {
	h, root, repo := undoJobHarness(t, harness.Config{JobUndoMaxBytes: 4096})
	ctx := context.Background()
	first := startedJob(t, h, harness.JobStartArgs{RepoID: repo, Writes: true,
		Argv: []string{"sh", "-c", "while [ ! -e go.flag ]; do sleep 0.05; done; printf '%08192d' 0 > grown.bin"}})
	waitFor(t, "the first writer to run", func() bool {
		s, err := h.JobStatus(ctx, harness.JobStatusArgs{JobID: first})
		return err == nil && s.State == messages.JobRunning
	})
	second := startedJob(t, h, harness.JobStartArgs{RepoID: repo, Writes: true, Argv: []string{"sh", "-c", "echo ran > marker.txt"}})
	testutil.WriteFile(t, root, "go.flag", "")
	if j := waitJob(t, h, first); j.State != messages.JobSucceeded {
		t.Fatalf("the first writer: %s %+v", j.State, j.Error)
	}
	j := waitJob(t, h, second)
	if j.State != messages.JobFailed || j.Error == nil || j.Error.Code != string(errs.BudgetExceeded) {
		t.Fatalf("the queued job after the checkout grew: %s %+v; want failed BUDGET_EXCEEDED", j.State, j.Error)
	}
	if _, err := os.Stat(filepath.Join(root, "marker.txt")); !os.IsNotExist(err) {
		t.Fatal("the queued job ran although its undo could not be kept")
	}
}

// startedJob starts a job and returns its id.
func startedJob(t *testing.T, h *harness.Harness, args harness.JobStartArgs) string {
	t.Helper()
	if args.RequestID == "" {
		args.RequestID = undoID("job")
	}
	r, err := h.JobStart(context.Background(), args)
	if err != nil {
		t.Fatalf("job_start %v: %v", args.Argv, err)
	}
	return r.JobID
}

// A job's receipt outlives a restart: revert after reopening the data
// dir restores the tree. A job a restart interrupted (the daemon gone
// while it ran, its record still "running") gets its receipt at boot
// from the pre-images stored before it started.
func TestJobUndoAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: dir, LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.Repo(t, undoFiles)
	undoTree(t, root)
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := treeHash(t, root)
	done := finishedJob(t, h, harness.JobStartArgs{RepoID: reg.ID, Writes: true, Argv: []string{"sh", "-c", "rm pkg/sub/b.txt pkg/sub/deep/c.c && rmdir pkg/sub/deep pkg/sub && echo a > a.txt"}})
	if done.ReceiptID == "" {
		t.Fatalf("job: %s %+v; want a receipt", done.State, done.Error)
	}
	// The second job is cut off mid-way: it removed files and then waits.
	r, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: reg.ID, Writes: true, RequestID: undoID("cut"),
		Argv: []string{"sh", "-c", "rm pkg/a.go pkg/bin.dat pkg/run.sh pkg/link && rmdir pkg/empty && echo x > other/keep.txt && touch reached && sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(root, "reached")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			st, err := h.JobStatus(ctx, harness.JobStatusArgs{JobID: r.JobID})
			t.Fatalf("the job did not reach its wait: %+v %v", st, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the file system, not an actor
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}

	h, err = harness.Open(ctx, harness.Config{DataDir: dir, LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	cut, err := h.JobStatus(ctx, harness.JobStatusArgs{JobID: r.JobID})
	if err != nil {
		t.Fatal(err)
	}
	if cut.State != messages.JobInterrupted || cut.ReceiptID == "" {
		t.Fatalf("cut job after the restart: %s receipt %q; want interrupted with a receipt", cut.State, cut.ReceiptID)
	}
	if _, err := revertJob(t, h, reg.ID, cut.ReceiptID); err != nil {
		t.Fatal(err)
	}
	if _, err := revertJob(t, h, reg.ID, done.ReceiptID); err != nil {
		t.Fatal(err)
	}
	if after, tr := treeHash(t, root); after != before {
		t.Fatalf("tree after both reverts differs from before the jobs: %+v", tr.Entries)
	}
}

// The Must-show of #35: `rm -rf pkg` as a job a person approved, then
// revert of its receipt restores every file byte for byte.
func TestJobUndoApprovedRmRf(t *testing.T) {
	h, root, repo := undoJobHarness(t, harness.Config{})
	ctx := context.Background()
	before, _ := treeHash(t, root)
	args := harness.JobStartArgs{RepoID: repo, Writes: true, RequestID: undoID("rmrf"), Argv: []string{"rm", "-rf", "pkg"}}
	_, err := h.JobStart(ctx, args)
	apr, _ := errs.From(err).Details["approval_id"].(string)
	if errs.CodeOf(err) != errs.ApprovalRequired || apr == "" {
		t.Fatalf("rm -rf pkg without a person: got %v, want APPROVAL_REQUIRED", err)
	}
	if _, err := os.Stat(filepath.Join(root, "pkg/a.go")); err != nil {
		t.Fatalf("pkg/a.go before the approval: %v", err)
	}
	if _, err := h.DecideApproval(ctx, apr, true, "tester", "remove pkg"); err != nil {
		t.Fatal(err)
	}
	args.ApprovalID = apr
	r, err := h.JobStart(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, h, r.JobID)
	if j.State != messages.JobSucceeded || j.ReceiptID == "" {
		t.Fatalf("approved rm -rf pkg: %s %+v receipt %q", j.State, j.Error, j.ReceiptID)
	}
	if _, err := os.Lstat(filepath.Join(root, "pkg")); !os.IsNotExist(err) {
		t.Fatalf("pkg after rm -rf: %v", err)
	}
	if _, err := revertJob(t, h, repo, j.ReceiptID); err != nil {
		t.Fatal(err)
	}
	if after, tr := treeHash(t, root); after != before {
		t.Fatalf("tree after the revert differs from before rm -rf: %+v", tr.Entries)
	}
}

// The snapshot before a job reads no secret: neither a secret path of the
// checkout nor, through a hard link, a file outside it reaches the
// pre-image store; a job that removes the hard link gets a receipt whose
// revert refuses it by name (its content was never kept). The benign
// files of the same job are kept.
func TestJobUndoKeepsNoSecret(t *testing.T) {
	dir := t.TempDir()
	const secret = "TOKEN=s3cr3t-undo-attack"
	outside := filepath.Join(t.TempDir(), "id_token")
	if err := os.WriteFile(outside, []byte(secret+"-outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"README.md": "# demo\n", ".env": secret + "\n", "pkg/a.go": "package pkg\n"}
	h, repo, root := undoHarness(t, harness.Config{DataDir: dir}, files)
	if err := os.Link(outside, filepath.Join(root, "pkg/linked.txt")); err != nil {
		t.Fatal(err)
	}
	j := finishedJob(t, h, harness.JobStartArgs{RepoID: repo, Writes: true, Argv: []string{"sh", "-c", "cd pkg && rm -f linked.txt a.go"}})
	if j.ReceiptID == "" {
		t.Fatalf("job: %s %+v; want a receipt", j.State, j.Error)
	}
	err := filepath.WalkDir(harness.PreImageDir(dir), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && containsStr(b, "s3cr3t-undo-attack") {
			t.Errorf("pre-image %s holds the secret", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "pkg/linked.txt")); !os.IsNotExist(err) {
		t.Fatalf("the job did not remove the hard link: %v", err)
	}
	_, err = revertJob(t, h, repo, j.ReceiptID)
	if errs.CodeOf(err) != errs.NotFound || !containsStr([]byte(errs.From(err).Message), "pkg/linked.txt") {
		t.Fatalf("revert of a removed hard link: got %v, want NOT_FOUND naming pkg/linked.txt", err)
	}
	if _, err := os.Stat(filepath.Join(root, "pkg/a.go")); !os.IsNotExist(err) {
		t.Fatal("a refused revert restored a file")
	}
}

func containsStr(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
