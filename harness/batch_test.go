package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/persistence"
)

func step(kind string, args map[string]any) harness.BatchStep {
	return harness.BatchStep{Kind: kind, Args: args}
}

func patchArgs(path, old, new string) map[string]any {
	return map[string]any{"operations": []any{map[string]any{"op": "replace", "path": path, "old_text": old, "new_text": new}}}
}

func hasLedger(t *testing.T, h *harness.Harness, id string) bool {
	t.Helper()
	ok, err := h.Store().Has(persistence.LedgerKey(id))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// stepNumber finds "step N (kind)" in a message or reason.
var stepNumber = regexp.MustCompile(`step (\d+) \(`)

func TestBatchRefusedRunsNothing(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		steps    []harness.BatchStep
		mode     string
		want     errs.Code
		wantStep int
	}{
		{"durable step", []harness.BatchStep{
			step("apply_patch", patchArgs("README.md", "hello world", "changed")),
			step("run_command", map[string]any{"argv": []string{"touch", "new.txt"}}),
		}, "", errs.RouteDurableRequired, 1},
		{"fast mode durable step", []harness.BatchStep{
			step("apply_patch", patchArgs("README.md", "hello world", "changed")),
			step("run_command", map[string]any{"argv": []string{"sleep", "1"}, "timeout_ms": 60000}),
		}, "fast", errs.RouteDurableRequired, 1},
		{"rejected step", []harness.BatchStep{
			step("apply_patch", patchArgs("README.md", "hello world", "changed")),
			step("read_file", map[string]any{"path": "README.md"}),
			step("run_command", map[string]any{"argv": []string{"rm", "-rf", "/"}}),
		}, "", errs.RouteRejected, 2},
		{"bad args", []harness.BatchStep{
			step("apply_patch", patchArgs("README.md", "hello world", "changed")),
			step("read_file", map[string]any{"path": "README.md", "bogus": 1}),
		}, "", errs.InvalidArgument, 1},
		{"secret path", []harness.BatchStep{
			step("apply_patch", patchArgs("README.md", "hello world", "changed")),
			step("read_file", map[string]any{"path": ".env"}),
		}, "", errs.SecretPathDenied, 1},
		{"unknown kind", []harness.BatchStep{
			step("apply_patch", patchArgs("README.md", "hello world", "changed")),
			step("batch", nil),
		}, "", errs.InvalidArgument, 1},
		{"request id in step", []harness.BatchStep{
			step("apply_patch", map[string]any{"request_id": "x", "operations": []any{}}),
		}, "", errs.InvalidArgument, 0},
		{"durable mode", []harness.BatchStep{step("git_status", nil)}, "durable", errs.RouteDurableRequired, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqID := "refused-" + strings.ReplaceAll(tt.name, " ", "-")
			_, err := h.Batch(ctx, harness.BatchArgs{RepoID: id, RequestID: reqID, Steps: tt.steps, Mode: tt.mode})
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("code = %s (%v), want %s", got, err, tt.want)
			}
			if tt.wantStep >= 0 {
				if got := errs.From(err).Details["step"]; got != tt.wantStep {
					t.Fatalf("details.step = %v, want %d (%v)", got, tt.wantStep, err)
				}
				// The message and the route's reasons (details) name the
				// step as details.step does: one numbering.
				e := errs.From(err)
				d, _ := json.Marshal(e.Details)
				for _, where := range []string{e.Message, string(d)} {
					for _, m := range stepNumber.FindAllStringSubmatch(where, -1) {
						if m[1] != strconv.Itoa(tt.wantStep) {
							t.Errorf("%q names step %s, details.step is %d", where, m[1], tt.wantStep)
						}
					}
				}
				if !stepNumber.MatchString(e.Message) {
					t.Errorf("message %q does not name the step", e.Message)
				}
			}
			if got := readFile(t, root, "README.md"); got != "# demo\nhello world\n" {
				t.Fatalf("README.md = %q, want it unchanged", got)
			}
			if _, err := os.Stat(filepath.Join(root, "new.txt")); err == nil {
				t.Fatal("new.txt exists: a step ran")
			}
			if hasLedger(t, h, reqID) {
				t.Fatal("a ledger entry was written for a refused batch")
			}
		})
	}
}

func TestBatchFailingPatchRollsBackAndStops(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	r, err := h.Batch(ctx, harness.BatchArgs{RepoID: id, RequestID: "fail-1", Steps: []harness.BatchStep{
		step("apply_patch", patchArgs("README.md", "hello world", "hello batch")),
		step("apply_patch", map[string]any{"operations": []any{
			map[string]any{"op": "create", "path": "made.txt", "content": "x"},
			map[string]any{"op": "replace", "path": "src/main.go", "old_text": "not there", "new_text": "y"},
		}}),
		step("read_file", map[string]any{"path": "README.md"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || r.StoppedAt == nil || *r.StoppedAt != 1 {
		t.Fatalf("ok = %v, stopped_at = %v, want false, 1", r.OK, r.StoppedAt)
	}
	want := []string{"ok", "failed", "skipped"}
	for i, s := range r.Steps {
		if s.Status != want[i] {
			t.Fatalf("step %d status = %s, want %s", i, s.Status, want[i])
		}
	}
	if c := r.Steps[1].Error.Code; c != errs.PatchConflict {
		t.Fatalf("step 1 error = %s, want PATCH_CONFLICT", c)
	}
	if _, err := os.Stat(filepath.Join(root, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("made.txt: %v, want it rolled back", err)
	}
	if got := readFile(t, root, "README.md"); !strings.Contains(got, "hello batch") {
		t.Fatalf("README.md = %q, want step 0's write", got)
	}
	if r.Receipt == nil || len(r.Receipt.Changes) != 1 || r.Receipt.FencingToken == 0 {
		t.Fatalf("receipt = %+v, want one change under a fencing token", r.Receipt)
	}
	// Without stop_on_error the later step runs.
	no := false
	r, err = h.Batch(ctx, harness.BatchArgs{RepoID: id, RequestID: "fail-2", StopOnError: &no, Steps: []harness.BatchStep{
		step("apply_patch", patchArgs("README.md", "absent", "x")),
		step("read_file", map[string]any{"path": "README.md"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Steps[0].Status != "failed" || r.Steps[1].Status != "ok" || r.StoppedAt != nil {
		t.Fatalf("steps = %+v, want failed then ok", r.Steps)
	}
	// Nothing was written: the ledger lets the request id be retried.
	r, err = h.Batch(ctx, harness.BatchArgs{RepoID: id, RequestID: "fail-2", StopOnError: &no, Steps: []harness.BatchStep{
		step("apply_patch", patchArgs("README.md", "absent", "x")),
		step("read_file", map[string]any{"path": "README.md"}),
	}})
	if err != nil || r.Replayed {
		t.Fatalf("retry = %+v, %v; want a fresh run", r, err)
	}
}

func TestBatchReplay(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	args := harness.BatchArgs{RepoID: id, RequestID: "replay-1", Steps: []harness.BatchStep{
		step("read_file", map[string]any{"path": "README.md"}),
		step("apply_patch", patchArgs("README.md", "hello world", "hello replay")),
		step("git_status", nil),
	}}
	r, err := h.Batch(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Replayed || !r.Mutating || r.NonAtomic || len(r.Steps) != 3 {
		t.Fatalf("first run = %+v", r)
	}
	var st struct {
		Unstaged []struct{ Path string } `json:"unstaged"`
	}
	if err := json.Unmarshal(r.Steps[2].Result, &st); err != nil || len(st.Unstaged) != 1 {
		t.Fatalf("git_status step result = %s (%v), want README.md unstaged", r.Steps[2].Result, err)
	}
	testutil.WriteFile(t, root, "README.md", "# demo\nhello world\n")
	r2, err := h.Batch(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Replayed || r2.BatchID != r.BatchID || r2.Receipt.ReceiptID != r.Receipt.ReceiptID {
		t.Fatalf("replay = %+v, want the stored result", r2)
	}
	if got := readFile(t, root, "README.md"); got != "# demo\nhello world\n" {
		t.Fatalf("README.md = %q: the replay wrote", got)
	}
	// Same request id, other input: a conflict, not a replay.
	args.Steps = args.Steps[:2]
	if _, err := h.Batch(ctx, args); errs.CodeOf(err) != errs.RequestConflict {
		t.Fatalf("changed input: %v, want REQUEST_CONFLICT", err)
	}
	// A writing batch needs a request id; a read-only one does not.
	if _, err := h.Batch(ctx, harness.BatchArgs{RepoID: id, Steps: args.Steps}); errs.CodeOf(err) != errs.RequestIDRequired {
		t.Fatalf("no request id: %v, want REQUEST_ID_REQUIRED", err)
	}
	ro, err := h.Batch(ctx, harness.BatchArgs{RepoID: id, Steps: []harness.BatchStep{step("git_status", nil), step("search", map[string]any{"query": "hello"})}})
	if err != nil || !ro.OK || ro.Mutating || ro.Receipt != nil {
		t.Fatalf("read-only batch = %+v, %v", ro, err)
	}
}

func TestBatchStageCommitIsNonAtomic(t *testing.T) {
	h, root, id := fixture(t)
	r, err := h.Batch(context.Background(), harness.BatchArgs{RepoID: id, RequestID: "commit-1", Steps: []harness.BatchStep{
		step("apply_patch", patchArgs("README.md", "hello world", "hello commit")),
		step("git_stage", map[string]any{"paths": []string{"README.md"}}),
		step("git_commit", map[string]any{"message": "batch commit"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || !r.NonAtomic || r.Receipt.Commit == "" {
		t.Fatalf("result = %+v, want ok, non_atomic and a commit", r)
	}
	if got := testutil.Git(t, root, "log", "-1", "--format=%s"); strings.TrimSpace(got) != "batch commit" {
		t.Fatalf("last commit = %q", got)
	}
}

func TestBatchLargeResultByReference(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	big := strings.Repeat(strings.Repeat("0123456789abcdef", 12)+"\n", 600) // ~113 KiB, 600 lines
	testutil.WriteFile(t, root, "big.txt", big)
	r, err := h.Batch(ctx, harness.BatchArgs{RepoID: id, Steps: []harness.BatchStep{
		step("read_file", map[string]any{"path": "big.txt"}),
		step("read_file", map[string]any{"path": "README.md"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Steps[0]
	if s.ResultRef == "" || s.Result != nil || s.ResultBytes <= 64<<10 {
		t.Fatalf("big step = ref %q, %d inline bytes, result_bytes %d; want a reference", s.ResultRef, len(s.Result), s.ResultBytes)
	}
	if r.Steps[1].Result == nil {
		t.Fatal("small step result not inline")
	}
	got, err := h.BatchResultGet(ctx, harness.BatchResultArgs{Ref: s.ResultRef})
	if err != nil {
		t.Fatal(err)
	}
	var rf struct{ Content string }
	if err := json.Unmarshal(got.Result, &rf); err != nil || rf.Content != big {
		t.Fatalf("fetched content: %d bytes (%v), want %d", len(rf.Content), err, len(big))
	}
	if _, err := h.BatchResultGet(ctx, harness.BatchResultArgs{Ref: "bres_nope"}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("unknown ref: %v, want NOT_FOUND", err)
	}
}

func TestBatchThroughCallOp(t *testing.T) {
	h, _, id := fixture(t)
	raw := `{"repo_id":"` + id + `","steps":[{"kind":"read_file","args":{"path":"README.md"}},{"kind":"run_command","args":{"argv":["git","rev-parse","HEAD"]}}]}`
	out, err := h.CallOp(context.Background(), "batch", json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	if r := out.(*harness.BatchResult); !r.OK || len(r.Steps) != 2 || r.Steps[1].DurationMs <= 0 {
		t.Fatalf("batch = %+v", r)
	}
}
