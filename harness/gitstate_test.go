package harness_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// gitStateRepo is a checkout with two commits (a.txt and b.txt changed by
// the second, c.txt added by it) on main.
func gitStateRepo(t *testing.T) (*harness.Harness, string, string) {
	t.Helper()
	h, repo, root := undoHarness(t, harness.Config{}, map[string]string{"a.txt": "a1\n", "b.txt": "b1\n", "keep.txt": "keep\n"})
	testutil.WriteFile(t, root, "a.txt", "a2\n")
	testutil.WriteFile(t, root, "b.txt", "b2\n")
	testutil.WriteFile(t, root, "c.txt", "c2\n")
	testutil.Git(t, root, "add", "-A")
	testutil.Git(t, root, "commit", "-q", "-m", "second")
	return h, repo, root
}

// approvedJob starts argv, expects APPROVAL_REQUIRED (checking that
// nothing changed: unchanged() is called then), approves it as a person
// and starts it again with the approval; it returns the ended job.
func approvedJob(t *testing.T, h *harness.Harness, repo string, argv []string, unchanged func()) *harness.JobResult {
	t.Helper()
	ctx := context.Background()
	args := harness.JobStartArgs{RepoID: repo, RequestID: undoID("gs"), Argv: argv}
	_, err := h.JobStart(ctx, args)
	apr, _ := errs.From(err).Details["approval_id"].(string)
	if errs.CodeOf(err) != errs.ApprovalRequired || apr == "" {
		t.Fatalf("%v without a person: got %v, want APPROVAL_REQUIRED", argv, err)
	}
	unchanged()
	if _, err := h.DecideApproval(ctx, apr, true, "tester", "approved"); err != nil {
		t.Fatal(err)
	}
	args.ApprovalID = apr
	r, err := h.JobStart(ctx, args)
	if err != nil {
		t.Fatalf("%v approved: %v", argv, err)
	}
	return waitJob(t, h, r.JobID)
}

// gsRevert reverts a receipt, waiting (as a client may) for the job's
// lease if its release is still under way when job_status answered.
func gsRevert(h *harness.Harness, repo, receipt string) (*harness.MutationResult, error) {
	return h.Revert(context.Background(), harness.RevertArgs{RepoID: repo, ReceiptID: receipt, RequestID: undoID("rv"), WaitMs: 10000})
}

// gitStateSnap is what a git-state job and its revert must keep or restore:
// the refs, the index (what is staged) and the work tree byte for byte.
type gitStateSnap struct {
	refs, staged, status, tree string
}

func snapGitState(t *testing.T, root string) gitStateSnap {
	t.Helper()
	tree, _ := treeHash(t, root)
	return gitStateSnap{
		refs:   testutil.Git(t, root, "for-each-ref", "--format=%(refname) %(objectname)") + "\nHEAD " + testutil.Git(t, root, "symbolic-ref", "HEAD"),
		staged: testutil.Git(t, root, "diff", "--cached", "--binary"),
		status: testutil.Git(t, root, "status", "--porcelain=v1", "--untracked-files=all"),
		tree:   tree,
	}
}

// An approved `git reset --hard HEAD~1` runs no process: harnessd moves
// HEAD (compare-and-swap) and resets the index and the work tree with its
// own confined git; its receipt holds the ref, the work tree's pre-images
// and the index; revert restores HEAD, the staged change, the dirty and
// the untracked files byte for byte. Without a person nothing changes.
func TestGitResetHardApprovedThenReverted(t *testing.T) {
	h, repo, root := gitStateRepo(t)
	first := testutil.Git(t, root, "rev-parse", "HEAD~1")
	second := testutil.Git(t, root, "rev-parse", "HEAD")
	testutil.WriteFile(t, root, "a.txt", "a dirty\n")        // a dirty tracked file
	testutil.WriteFile(t, root, "b.txt", "b staged\n")       // a staged change
	testutil.Git(t, root, "add", "b.txt")                    //
	testutil.WriteFile(t, root, "b.txt", "b staged+dirty\n") // and dirty on top
	testutil.WriteFile(t, root, "new.txt", "untracked\n")    // untracked: reset leaves it
	before := snapGitState(t, root)

	j := approvedJob(t, h, repo, []string{"git", "reset", "--hard", "HEAD~1"}, func() {
		if now := snapGitState(t, root); now != before {
			t.Fatalf("an unapproved reset changed the checkout:\n%+v\nwas\n%+v", now, before)
		}
	})
	if j.State != messages.JobSucceeded || j.ReceiptID == "" || j.PerformedBy == "" || j.Pid != 0 {
		t.Fatalf("approved reset: %s %+v receipt %q performed_by %q pid %d; want succeeded by harnessd with a receipt", j.State, j.Error, j.ReceiptID, j.PerformedBy, j.Pid)
	}
	if got := testutil.Git(t, root, "rev-parse", "HEAD"); got != first {
		t.Fatalf("HEAD after the reset: %s, want %s", got, first)
	}
	if got := testutil.Git(t, root, "rev-parse", "ORIG_HEAD"); got != second {
		t.Fatalf("ORIG_HEAD after the reset: %s, want %s", got, second)
	}
	for name, want := range map[string]string{"a.txt": "a1\n", "b.txt": "b1\n", "new.txt": "untracked\n"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
			t.Fatalf("%s after the reset: %q %v, want %q", name, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "c.txt")); !os.IsNotExist(err) {
		t.Fatalf("c.txt (not in HEAD~1) after the reset: %v", err)
	}
	if st := testutil.Git(t, root, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Fatalf("status after the reset: %q, want clean", st)
	}

	rv, err := gsRevert(h, repo, j.ReceiptID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rv.Refs) != 1 || rv.Refs[0].New != second {
		t.Fatalf("the revert's receipt refs: %+v; want its move back to %s", rv.Refs, second)
	}
	if after := snapGitState(t, root); after != before {
		t.Fatalf("after the revert:\n%+v\nwant\n%+v", after, before)
	}
}

// A revert refuses (PATCH_CONFLICT) when the ref moved since the job, and
// then writes nothing: neither the ref nor a file.
func TestGitResetRevertRefusesAMovedRef(t *testing.T) {
	h, repo, root := gitStateRepo(t)
	j := approvedJob(t, h, repo, []string{"git", "reset", "--hard", "HEAD~1"}, func() {})
	if j.State != messages.JobSucceeded || j.ReceiptID == "" {
		t.Fatalf("approved reset: %s %+v", j.State, j.Error)
	}
	testutil.WriteFile(t, root, "d.txt", "d\n")
	testutil.Git(t, root, "add", "d.txt")
	testutil.Git(t, root, "commit", "-q", "-m", "after the reset")
	before := snapGitState(t, root)
	_, err := gsRevert(h, repo, j.ReceiptID)
	if errs.CodeOf(err) != errs.PatchConflict || errs.From(err).Details["ref"] != "refs/heads/main" {
		t.Fatalf("revert after main moved: %v, want PATCH_CONFLICT naming refs/heads/main", err)
	}
	if after := snapGitState(t, root); after != before {
		t.Fatalf("a refused revert changed the checkout:\n%+v\nwas\n%+v", after, before)
	}
}

// `git branch -D feature` and `git tag -f v1 HEAD~1` as approved jobs:
// the branch is gone, the tag moved; revert brings the branch back at its
// commit and the tag back where it was.
func TestGitBranchDeleteAndTagForceThenReverted(t *testing.T) {
	h, repo, root := gitStateRepo(t)
	testutil.Git(t, root, "branch", "feature", "HEAD~1")
	testutil.Git(t, root, "tag", "v1")
	before := snapGitState(t, root)
	feature := testutil.Git(t, root, "rev-parse", "feature")

	del := approvedJob(t, h, repo, []string{"git", "branch", "-D", "feature"}, func() {
		if now := snapGitState(t, root); now != before {
			t.Fatal("an unapproved branch -D changed the refs")
		}
	})
	if del.State != messages.JobSucceeded || del.ReceiptID == "" || del.PerformedBy == "" {
		t.Fatalf("approved branch -D: %s %+v receipt %q", del.State, del.Error, del.ReceiptID)
	}
	if out := testutil.Git(t, root, "branch", "--list", "feature"); out != "" {
		t.Fatalf("feature after branch -D: %q", out)
	}
	tag := approvedJob(t, h, repo, []string{"git", "tag", "-f", "v1", "HEAD~1"}, func() {})
	if tag.State != messages.JobSucceeded || tag.ReceiptID == "" {
		t.Fatalf("approved tag -f: %s %+v", tag.State, tag.Error)
	}
	if got := testutil.Git(t, root, "rev-parse", "v1"); got != feature {
		t.Fatalf("v1 after tag -f: %s, want %s", got, feature)
	}
	if _, err := gsRevert(h, repo, del.ReceiptID); err != nil {
		t.Fatal(err)
	}
	if got := testutil.Git(t, root, "rev-parse", "refs/heads/feature"); got != feature {
		t.Fatalf("feature after the revert: %s, want %s", got, feature)
	}
	if _, err := gsRevert(h, repo, tag.ReceiptID); err != nil {
		t.Fatal(err)
	}
	if after := snapGitState(t, root); after != before {
		t.Fatalf("after both reverts:\n%+v\nwant\n%+v", after, before)
	}
}

// The attacker plants a smudge/clean filter (.gitattributes and the
// repository's config) and hooks that would write a marker outside the
// checkout: harnessd's reset runs none of them, and still resets. The
// positive control: the same trap fires for a plain git reset --hard in a
// copy of the checkout.
func TestGitResetRunsNoPlantedFilterOrHook(t *testing.T) {
	h, repo, root := gitStateRepo(t)
	outside := t.TempDir()
	marker := filepath.Join(outside, "pwned")
	trap := "sh -c 'echo ran >> " + marker + "; cat'"
	testutil.WriteFile(t, root, ".gitattributes", "*.txt filter=evil\n")
	testutil.Git(t, root, "add", ".gitattributes")
	testutil.Git(t, root, "commit", "-q", "-m", "attributes")
	testutil.Git(t, root, "config", "filter.evil.smudge", trap)
	testutil.Git(t, root, "config", "filter.evil.clean", trap)
	for _, hook := range []string{"post-checkout", "reference-transaction", "post-rewrite", "post-index-change", "pre-commit"} {
		p := filepath.Join(root, ".git", "hooks", hook)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+hook+" >> "+marker+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Remove(marker) // the commit above ran pre-commit: start clean
	control := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", root, control).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	testutil.WriteFile(t, root, "a.txt", "dirty\n")
	j := approvedJob(t, h, repo, []string{"git", "reset", "--hard", "HEAD~2"}, func() {})
	if j.State != messages.JobSucceeded {
		t.Fatalf("approved reset with a planted filter: %s %+v %v", j.State, j.Error, j.Summary)
	}
	if b, err := os.ReadFile(filepath.Join(root, "a.txt")); err != nil || string(b) != "a1\n" {
		t.Fatalf("a.txt after the reset: %q %v", b, err)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("a planted filter or hook ran during harnessd's reset: %q", b)
	}
	cmd := exec.Command("git", "reset", "--hard", "-q", "HEAD~2")
	cmd.Dir, cmd.Env = control, testutil.GitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("control reset: %v %s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("control: a plain git reset --hard did not run the trap (%v): the test proves nothing", err)
	}
}

// Forms harnessd does not perform are refused before anything runs:
// INVALID_ARGUMENT naming the forms, no approval asked, HEAD unmoved.
func TestGitStateUnsupportedFormsRefused(t *testing.T) {
	h, repo, root := gitStateRepo(t)
	before := snapGitState(t, root)
	for _, argv := range [][]string{
		{"git", "reset", "--hard", "HEAD~1", "--", "a.txt"},
		{"git", "reset", "--hard", "HEAD~1", "a.txt"},
		{"git", "reset", "--hard", "--recurse-submodules"},
		{"git", "reset", "--hard", "HEAD;touch x"},
		{"git", "reset", "--hard", "$(touch x)"},
		{"git", "reset", "--hard", "HEAD~1..HEAD"},
		{"git", "-C", ".", "reset", "--hard"},
		{"git", "branch", "-D", "-r", "origin/main"},
		{"git", "tag", "-f", "-a", "v1", "-m", "x"},
		{"git", "checkout", "--", "../outside.txt"},
		{"git", "checkout", "--", "/etc/passwd"},
		{"git", "checkout", "HEAD~1", "--", "a.txt"},
		{"git", "checkout", "-p", "--", "a.txt"},
		{"git", "restore", "--staged", "a.txt"},
		{"git", "restore", "--source=HEAD~1", "a.txt"},
		{"git", "restore", ":(glob)*.txt"},
		{"git", "restore", "*.txt"},
		{"git", "restore"},
	} {
		_, err := h.JobStart(context.Background(), harness.JobStartArgs{RepoID: repo, RequestID: undoID("bad"), Argv: argv})
		if code := errs.CodeOf(err); code != errs.InvalidArgument || !strings.Contains(errs.From(err).Message, "git reset --hard [<rev>]") {
			t.Errorf("%q: %v, want INVALID_ARGUMENT naming the forms harnessd performs", argv, err)
		}
	}
	// A retry after a restart would resolve HEAD~1 again from where the
	// first attempt left HEAD: refused, like isolation.
	for _, args := range []harness.JobStartArgs{
		{RepoID: repo, RequestID: undoID("retry"), Argv: []string{"git", "reset", "--hard", "HEAD~1"}, Retry: &harness.RetryPolicy{Max: 1}},
		{RepoID: repo, RequestID: undoID("iso"), Argv: []string{"git", "reset", "--hard", "HEAD~1"}, Isolation: "worktree"},
	} {
		if _, err := h.JobStart(context.Background(), args); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("reset with retry %v isolation %q: %v, want INVALID_ARGUMENT", args.Retry, args.Isolation, err)
		}
	}
	if after := snapGitState(t, root); after != before {
		t.Fatalf("a refused command changed the checkout")
	}
	list, err := h.JobList(context.Background(), harness.JobListArgs{RepoID: repo})
	if err != nil || len(list.Jobs) != 0 {
		t.Fatalf("jobs after refusals: %v %v, want none", list, err)
	}
}

// `git checkout -- .` and `git restore a.txt` take the index's lock, which
// a job's processes never may (.git is read-only to them): harnessd sets
// the files back with its own confined git. An approved `git checkout --
// .` discards every uncommitted change of the work tree (staged content
// stays staged), and revert of its receipt brings the changes back byte
// for byte; a restore of one path touches that path only.
func TestGitCheckoutPathsApprovedThenReverted(t *testing.T) {
	h, repo, root := gitStateRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a dirty\n")
	testutil.WriteFile(t, root, "b.txt", "b staged\n")
	testutil.Git(t, root, "add", "b.txt")
	testutil.WriteFile(t, root, "b.txt", "b staged+dirty\n")
	testutil.WriteFile(t, root, "new.txt", "untracked\n")
	before := snapGitState(t, root)

	j := approvedJob(t, h, repo, []string{"git", "checkout", "--", "."}, func() {
		if now := snapGitState(t, root); now != before {
			t.Fatalf("an unapproved checkout changed the checkout")
		}
	})
	if j.State != messages.JobSucceeded || j.ReceiptID == "" || j.PerformedBy == "" || j.Pid != 0 {
		t.Fatalf("approved checkout: %s %+v receipt %q performed_by %q pid %d; want succeeded by harnessd with a receipt", j.State, j.Error, j.ReceiptID, j.PerformedBy, j.Pid)
	}
	for name, want := range map[string]string{"a.txt": "a2\n", "b.txt": "b staged\n", "new.txt": "untracked\n"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
			t.Fatalf("%s after the checkout: %q %v, want %q", name, b, err, want)
		}
	}
	if _, err := gsRevert(h, repo, j.ReceiptID); err != nil {
		t.Fatal(err)
	}
	if after := snapGitState(t, root); after != before {
		t.Fatalf("after the revert:\n%+v\nwant\n%+v", after, before)
	}

	// One path, as a plain workspace write (no person needed for it).
	testutil.WriteFile(t, root, "a.txt", "a dirty again\n")
	r, err := h.JobStart(context.Background(), harness.JobStartArgs{RepoID: repo, RequestID: undoID("rs"), Argv: []string{"git", "restore", "a.txt"}})
	if err != nil {
		t.Fatalf("git restore a.txt: %v", err)
	}
	if j := waitJob(t, h, r.JobID); j.State != messages.JobSucceeded {
		t.Fatalf("git restore a.txt: %s %+v", j.State, j.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a2\n" {
		t.Fatalf("a.txt after git restore: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b.txt")); string(b) != "b staged+dirty\n" {
		t.Fatalf("b.txt, not named, after git restore a.txt: %q", b)
	}
}
