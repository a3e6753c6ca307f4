package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/persistence"
)

func replaceOp(path, old, new string) []patch.Op {
	return []patch.Op{{Op: "replace", Path: path, OldText: old, NewText: new}}
}

func readFile(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestApplyPatchReplayConflictAndRetry(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	args := harness.ApplyPatchArgs{RepoID: id, RequestID: "req-1", Operations: replaceOp("README.md", "hello world", "hello harness"), AllowedPaths: []string{"*.md"}}
	r, err := h.ApplyPatch(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if r.Replayed || r.FencingToken == 0 || len(r.Changes) != 1 || r.Changes[0].Before == r.Changes[0].After || r.ReceiptID == "" {
		t.Fatalf("first apply = %+v", r)
	}
	if got := readFile(t, root, "README.md"); !strings.Contains(got, "hello harness") {
		t.Fatalf("file = %q", got)
	}
	// Revert by hand: a replay must not write again.
	testutil.WriteFile(t, root, "README.md", "# demo\nhello world\n")
	r2, err := h.ApplyPatch(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Replayed || r2.ReceiptID != r.ReceiptID || r2.FencingToken != r.FencingToken {
		t.Fatalf("replay = %+v, want the stored result", r2)
	}
	if got := readFile(t, root, "README.md"); strings.Contains(got, "harness") {
		t.Fatal("replay wrote the file again")
	}
	// Timing fields do not change the input; the operations do.
	args.WaitMs, args.IncludeLatencyBreakdown = 100, true
	if r3, err := h.ApplyPatch(ctx, args); err != nil || !r3.Replayed {
		t.Fatalf("replay with other timing fields: %+v, %v", r3, err)
	}
	args.Operations = replaceOp("README.md", "hello world", "other")
	if _, err := h.ApplyPatch(ctx, args); errs.CodeOf(err) != errs.RequestConflict {
		t.Fatalf("same id, other input: %v, want REQUEST_CONFLICT", err)
	}
	// A failed request may be retried with the same id and input.
	bad := harness.ApplyPatchArgs{RepoID: id, RequestID: "req-2", Operations: replaceOp("README.md", "absent text", "x")}
	if _, err := h.ApplyPatch(ctx, bad); errs.CodeOf(err) != errs.PatchConflict {
		t.Fatalf("conflict: %v, want PATCH_CONFLICT", err)
	}
	testutil.WriteFile(t, root, "README.md", "absent text\n")
	if r, err := h.ApplyPatch(ctx, bad); err != nil || r.Replayed {
		t.Fatalf("retry after failure = %+v, %v", r, err)
	}
}

func TestApplyPatchInputErrors(t *testing.T) {
	h, _, id := fixture(t)
	ctx := context.Background()
	tests := []struct {
		name string
		args harness.ApplyPatchArgs
		want errs.Code
	}{
		{"no request id", harness.ApplyPatchArgs{RepoID: id, Operations: replaceOp("README.md", "a", "b")}, errs.RequestIDRequired},
		{"long request id", harness.ApplyPatchArgs{RepoID: id, RequestID: strings.Repeat("x", 256), Operations: replaceOp("README.md", "a", "b")}, errs.InvalidArgument},
		{"no ops", harness.ApplyPatchArgs{RepoID: id, RequestID: "r"}, errs.InvalidArgument},
		{"secret", harness.ApplyPatchArgs{RepoID: id, RequestID: "r", Operations: []patch.Op{{Op: "write", Path: ".env", Content: "x"}}}, errs.SecretPathDenied},
		{"outside", harness.ApplyPatchArgs{RepoID: id, RequestID: "r", Operations: []patch.Op{{Op: "write", Path: "../x", Content: "x"}}}, errs.PathOutsideRoot},
		{"git dir", harness.ApplyPatchArgs{RepoID: id, RequestID: "r", Operations: []patch.Op{{Op: "write", Path: ".git/config", Content: "x"}}}, errs.PathNotAllowed},
		{"not allowed", harness.ApplyPatchArgs{RepoID: id, RequestID: "r3", Operations: []patch.Op{{Op: "write", Path: "src/x.go", Content: "x"}}, AllowedPaths: []string{"docs/**"}}, errs.PathNotAllowed},
		{"unknown op", harness.ApplyPatchArgs{RepoID: id, RequestID: "r4", Operations: []patch.Op{{Op: "chmod", Path: "a"}}}, errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.ApplyPatch(ctx, tt.args)
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("code %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

// 32 concurrent patches on distinct and on overlapping files: no lost or
// torn write, each either succeeds or gets MUTATION_BUSY, tokens unique.
func TestApplyPatchConcurrent(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	const n = 32
	for i := 0; i < n; i++ {
		testutil.WriteFile(t, root, fmt.Sprintf("d/f%02d.txt", i), "v0\n")
	}
	testutil.WriteFile(t, root, "shared.txt", "")
	type outcome struct {
		res *harness.MutationResult
		err error
	}
	results := make([]outcome, 2*n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func(i int) { // distinct files
			defer wg.Done()
			r, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: id, RequestID: fmt.Sprintf("distinct-%d", i),
				Operations: replaceOp(fmt.Sprintf("d/f%02d.txt", i), "v0", fmt.Sprintf("v1-%d", i))})
			results[i] = outcome{r, err}
		}(i)
		go func(i int) { // one shared file
			defer wg.Done()
			r, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: id, RequestID: fmt.Sprintf("shared-%d", i),
				Operations: []patch.Op{{Op: "write", Path: "shared.txt", Content: strings.Repeat(fmt.Sprintf("%02d", i), 5000)}}})
			results[n+i] = outcome{r, err}
		}(i)
	}
	wg.Wait()
	tokens := map[uint64]bool{}
	sharedOK := 0
	for i, o := range results {
		if o.err != nil {
			if i < n || errs.CodeOf(o.err) != errs.MutationBusy {
				t.Fatalf("call %d: %v", i, o.err)
			}
			continue
		}
		if i >= n {
			sharedOK++
			if tokens[o.res.FencingToken] {
				t.Fatalf("token %d issued twice for shared.txt", o.res.FencingToken)
			}
			tokens[o.res.FencingToken] = true
		}
	}
	for i := 0; i < n; i++ {
		if got := readFile(t, root, fmt.Sprintf("d/f%02d.txt", i)); got != fmt.Sprintf("v1-%d\n", i) {
			t.Fatalf("f%02d = %q: lost write", i, got)
		}
	}
	if sharedOK == 0 {
		t.Fatal("no shared write succeeded")
	}
	got := readFile(t, root, "shared.txt")
	if len(got) != 10000 || strings.Count(got, got[:2]) != 5000 {
		t.Fatalf("shared.txt torn: %d bytes, starts %q", len(got), got[:4])
	}
}

func TestStageAndCommit(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "hook-ran")
	testutil.WriteFile(t, root, ".git/hooks/pre-commit", "#!/bin/sh\ntouch "+marker+"\n")
	if err := os.Chmod(filepath.Join(root, ".git/hooks/pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "c0", Message: "empty"}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("commit with nothing staged: %v, want INVALID_ARGUMENT", err)
	}
	testutil.WriteFile(t, root, "src/new.go", "package main\n")
	testutil.WriteFile(t, root, "README.md", "changed\n")
	s, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: id, RequestID: "s1", Paths: []string{"src/new.go"}})
	if err != nil || len(s.Changes) != 1 {
		t.Fatalf("stage = %+v, %v", s, err)
	}
	st, _ := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
	if len(st.Staged) != 1 || st.Staged[0].Path != "src/new.go" || len(st.Unstaged) != 1 {
		t.Fatalf("after stage: %+v", st)
	}
	c, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "c1", Message: "add new.go"})
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadBefore == "" || c.HeadAfter == c.HeadBefore || c.HooksRan == nil || *c.HooksRan || len(c.Changes) != 1 || c.Changes[0].Path != "src/new.go" {
		t.Fatalf("commit = %+v", c)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the pre-commit hook ran")
	}
	if got := testutil.Git(t, root, "log", "-1", "--format=%s"); got != "add new.go" {
		t.Fatalf("HEAD subject %q", got)
	}
	// README.md stays modified, not committed.
	st, _ = h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
	if len(st.Unstaged) != 1 || st.Unstaged[0].Path != "README.md" {
		t.Fatalf("after commit: %+v", st)
	}
	// Commit only a named path.
	c2, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "c2", Message: "readme", Paths: []string{"README.md"}})
	if err != nil || c2.HeadBefore != c.HeadAfter {
		t.Fatalf("commit paths = %+v, %v", c2, err)
	}
	for _, bad := range []harness.GitCommitArgs{
		{RepoID: id, RequestID: "c3", Message: ""},
		{RepoID: id, RequestID: "c3", Message: strings.Repeat("m", 4001)},
		{RepoID: id, RequestID: "c3", Message: "a\x00b"},
	} {
		if _, err := h.GitCommit(ctx, bad); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("commit %q: %v, want INVALID_ARGUMENT", bad.Message, err)
		}
	}
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: id, RequestID: "s2", Paths: []string{".env"}}); errs.CodeOf(err) != errs.SecretPathDenied {
		t.Fatalf("stage .env: %v", err)
	}
}

func TestFencingTokensSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{"a.txt": "0\n"})
	var last uint64
	for round := 0; round < 3; round++ {
		h, err := harness.Open(ctx, harness.Config{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			m, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: r.ID, RequestID: fmt.Sprintf("r%d-%d", round, i),
				Operations: []patch.Op{{Op: "write", Path: "a.txt", Content: fmt.Sprintf("%d-%d\n", round, i)}}})
			if err != nil {
				t.Fatal(err)
			}
			if m.FencingToken <= last {
				t.Fatalf("token %d after %d", m.FencingToken, last)
			}
			last = m.FencingToken
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// An entry a crash left executing answers REQUEST_OUTCOME_UNKNOWN with the
// files' current digests, and never runs again.
func TestOutcomeUnknownAfterCrash(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{"a.txt": "old\n"})
	args := harness.ApplyPatchArgs{RequestID: "crashed", Operations: replaceOp("a.txt", "old", "new")}

	h, err := harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	args.RepoID = r.ID
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash mid-request: an executing entry with this input.
	st, err := persistence.Open(persistence.Options{Dir: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	hashed := args
	hash, _ := ledger.InputHash("apply_patch", hashed)
	e, _, _ := ledger.Begin(nil, "crashed", "apply_patch", hash, []string{"a.txt"}, testNow())
	if err := st.PutSync(persistence.LedgerKey("crashed"), e); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h, err = harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	_, err = h.ApplyPatch(ctx, args)
	ce := errs.From(err)
	if ce.Code != errs.RequestOutcomeUnknown {
		t.Fatalf("got %v, want REQUEST_OUTCOME_UNKNOWN", err)
	}
	digests, _ := ce.Details["digests"].(map[string]string)
	if d := digests["a.txt"]; len(d) != 64 {
		t.Fatalf("digests = %+v, want the current sha256 of a.txt", ce.Details)
	}
	if got := readFile(t, root, "a.txt"); got != "old\n" {
		t.Fatalf("a.txt = %q: the request ran again", got)
	}
}
