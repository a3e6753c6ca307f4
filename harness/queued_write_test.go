package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// holdCheckout starts a job that writes the checkout and sleeps, holding
// its durable lease, and waits until it runs.
func holdCheckout(t *testing.T, h *harness.Harness, repo string, argv ...string) *harness.JobResult {
	t.Helper()
	if len(argv) == 0 {
		argv = []string{"sleep", "300"}
	}
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo, Argv: argv, Writes: true})
	waitFor(t, "the writing job to hold the checkout", func() bool {
		s, err := h.JobStatus(context.Background(), harness.JobStatusArgs{JobID: r.JobID})
		return err == nil && s.State == messages.JobRunning && s.Pid > 0
	})
	return r
}

// validOutput checks v against the output schema of operation name.
func validOutput(t *testing.T, name string, v any) {
	t.Helper()
	for _, o := range harness.Ops() {
		if o.Name != name {
			continue
		}
		rs, err := o.OutputSchema.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var inst any
		if err := json.Unmarshal(b, &inst); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(inst); err != nil {
			t.Fatalf("%s result does not validate against its output schema: %v\n%s", name, err, b)
		}
		return
	}
	t.Fatalf("no operation %s", name)
}

// mutationAudits returns the outcomes of the mutation audit entries of a
// request, oldest first, and their entries.
func mutationAudits(t *testing.T, h *harness.Harness, requestID string) ([]string, []messages.AuditEntry) {
	t.Helper()
	a, err := h.Audit(context.Background(), harness.AuditArgs{Kind: "mutation", RequestID: requestID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range a.Entries {
		out = append(out, e.Outcome)
	}
	return out, a.Entries
}

// receiptsOf counts the receipts of a request in a repository.
func receiptsOf(t *testing.T, h *harness.Harness, repo, requestID string) []string {
	t.Helper()
	l, err := h.ReceiptList(context.Background(), harness.ReceiptListArgs{RepoID: repo, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range l.Receipts {
		if r.RequestID == requestID {
			ids = append(ids, r.ReceiptID)
		}
	}
	return ids
}

// A write that finds the checkout busy answers MUTATION_BUSY as before;
// with on_busy "durable" it is queued as a job with its own handle, a
// retry joins that job, and once the holder ends the write lands exactly
// once, with its receipt, audited as its caller; a retry after that
// replays it.
func TestQueuedWriteLandsOnceWhenTheLeaseFrees(t *testing.T) {
	h, root, repo := jobFixture(t)
	ctx := context.Background()
	holder := holdCheckout(t, h, repo)

	patch := harness.ApplyPatchArgs{RepoID: repo, RequestID: reqID(t), Operations: replaceOp("README.md", "hello world", "hello queue")}
	if _, err := h.ApplyPatch(ctx, patch); errs.CodeOf(err) != errs.MutationBusy {
		t.Fatalf("without on_busy: got %v, want MUTATION_BUSY", err)
	} else if hint, _ := errs.From(err).Details["on_busy"].(string); hint == "" {
		t.Fatalf("MUTATION_BUSY names no way out: %v", errs.From(err).Details)
	}
	run, err := h.RunStart(ctx, harness.RunStartArgs{Goal: "queue a write"})
	if err != nil {
		t.Fatal(err)
	}
	cctx := harness.WithCaller(ctx, harness.Caller{RunID: run.RunID, Session: "sess-q", Client: messages.Client{Name: "tester", Version: "1"}})
	patch.OnBusy = "durable"
	q, err := h.ApplyPatch(cctx, patch)
	if err != nil {
		t.Fatalf("with on_busy durable: %v", err)
	}
	if q.Queued == nil || q.Queued.JobID == "" || q.Queued.State != messages.JobQueued || q.ReceiptID != "" || q.Route != "durable" {
		t.Fatalf("queued answer = %+v (queued %+v), want queued with a job and no receipt", q, q.Queued)
	}
	validOutput(t, "apply_patch", q)
	if got := readFile(t, root, "README.md"); got != "# demo\nhello world\n" {
		t.Fatalf("the queued write wrote before the lease freed: %q", got)
	}
	// A retry with the same request_id joins the job.
	again, err := h.ApplyPatch(cctx, patch)
	if err != nil || again.Queued == nil || again.Queued.JobID != q.Queued.JobID {
		t.Fatalf("retry while queued: %+v %v, want the same job %s", again, err, q.Queued.JobID)
	}
	js, err := h.JobStatus(ctx, harness.JobStatusArgs{JobID: q.Queued.JobID})
	if err != nil || js.Finished() || len(js.Argv) != 0 {
		t.Fatalf("job_status of the queued write: %+v %v", js, err)
	}

	if _, err := h.JobCancel(ctx, harness.JobCancelArgs{JobID: holder.JobID}); err != nil {
		t.Fatal(err)
	}
	done := waitJob(t, h, q.Queued.JobID)
	if done.State != messages.JobSucceeded || done.ReceiptID == "" {
		t.Fatalf("queued write ended %s (%+v), receipt %q; want succeeded with a receipt", done.State, done.Error, done.ReceiptID)
	}
	if got := readFile(t, root, "README.md"); got != "# demo\nhello queue\n" {
		t.Fatalf("README after the queued write: %q", got)
	}
	if ids := receiptsOf(t, h, repo, patch.RequestID); len(ids) != 1 || ids[0] != done.ReceiptID {
		t.Fatalf("receipts of the request: %v, want exactly the job's %s", ids, done.ReceiptID)
	}
	// The receipt and the audit name the caller that queued it.
	outcomes, entries := mutationAudits(t, h, patch.RequestID)
	succeeded := 0
	for _, e := range entries {
		if e.Outcome == "succeeded" {
			succeeded++
			if e.RunID != run.RunID || e.Session != "sess-q" || e.Client != "tester 1" || e.Details["job_id"] != q.Queued.JobID || e.Details["receipt_id"] != done.ReceiptID {
				t.Fatalf("the write's audit entry does not name its caller and job: %+v", e)
			}
		}
	}
	if succeeded != 1 {
		t.Fatalf("audited outcomes %v: want exactly one succeeded", outcomes)
	}
	// A retry now replays the write: the same receipt, nothing written again.
	testutil.WriteFile(t, root, "README.md", "# demo\nhello world\n")
	r, err := h.ApplyPatch(cctx, patch)
	if err != nil || !r.Replayed || r.ReceiptID != done.ReceiptID || r.Queued != nil || r.RunID != run.RunID {
		t.Fatalf("retry after the job: %+v %v, want the replay of receipt %s", r, err, done.ReceiptID)
	}
	if got := readFile(t, root, "README.md"); got != "# demo\nhello world\n" {
		t.Fatalf("the replay wrote again: %q", got)
	}
}

// A restart between the queue and the write: the queued write is durable,
// runs after the restart once the holder's lease is released, and lands
// once.
func TestQueuedWriteSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	root := testutil.Repo(t, map[string]string{"README.md": "# demo\nhello world\n", "src/a.go": "package a\n"})
	ctx := context.Background()
	h := openAt(t, dir, nil)
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	holdCheckout(t, h, reg.ID)
	stage := harness.GitStageArgs{RepoID: reg.ID, RequestID: reqID(t), Paths: []string{"src/a.go"}, OnBusy: "durable"}
	testutil.WriteFile(t, root, "src/a.go", "package a\n\nvar A = 1\n")
	q, err := h.GitStage(ctx, stage)
	if err != nil || q.Queued == nil {
		t.Fatalf("git_stage on a busy checkout: %+v %v, want queued", q, err)
	}
	closeH(t, h)

	h = openAt(t, dir, nil)
	defer closeH(t, h)
	done := waitJob(t, h, q.Queued.JobID)
	// The wait for the lease began nothing: the job was still queued at
	// the restart (its first attempt), not interrupted.
	if done.State != messages.JobSucceeded || done.ReceiptID == "" || done.Attempt != 1 {
		t.Fatalf("queued git_stage after the restart: %s attempt %d %+v", done.State, done.Attempt, done.Error)
	}
	if got := testutil.Git(t, root, "diff", "--cached", "--name-only"); got != "src/a.go" {
		t.Fatalf("staged after the restart: %q, want src/a.go", got)
	}
	if ids := receiptsOf(t, h, reg.ID, stage.RequestID); len(ids) != 1 {
		t.Fatalf("receipts of the request: %v, want one", ids)
	}
	r, err := h.GitStage(ctx, stage)
	if err != nil || !r.Replayed || r.ReceiptID != done.ReceiptID {
		t.Fatalf("retry after the restart: %+v %v, want the replay of %s", r, err, done.ReceiptID)
	}
}

// A precondition that no longer holds when the queued write runs fails it
// with the code the Fast Path gives, recorded in the job and the ledger.
func TestQueuedWriteStalePreconditionFailsLikeTheFastPath(t *testing.T) {
	h, root, repo := jobFixture(t)
	ctx := context.Background()
	testutil.WriteFile(t, root, "change.sh", "printf '# demo\\nhello moved\\n' > README.md\nsleep 300\n")
	holder := holdCheckout(t, h, repo, "sh", "change.sh")
	waitFor(t, "the holder to change README.md", func() bool { return readFile(t, root, "README.md") == "# demo\nhello moved\n" })
	patch := harness.ApplyPatchArgs{RepoID: repo, RequestID: reqID(t), Operations: replaceOp("README.md", "hello world", "hello stale"), OnBusy: "durable"}
	q, err := h.ApplyPatch(ctx, patch)
	if err != nil || q.Queued == nil {
		t.Fatalf("queue: %+v %v", q, err)
	}
	if _, err := h.JobCancel(ctx, harness.JobCancelArgs{JobID: holder.JobID}); err != nil {
		t.Fatal(err)
	}
	done := waitJob(t, h, q.Queued.JobID)
	fast := patch
	fast.RequestID, fast.OnBusy = reqID(t), ""
	_, ferr := h.ApplyPatch(ctx, fast)
	if ferr == nil {
		t.Fatal("the same patch on the Fast Path succeeded")
	}
	if done.State != messages.JobFailed || done.Error == nil || done.Error.Code != string(errs.CodeOf(ferr)) {
		t.Fatalf("queued write ended %s %+v; the Fast Path answers %s", done.State, done.Error, errs.CodeOf(ferr))
	}
	if got := readFile(t, root, "README.md"); got != "# demo\nhello moved\n" {
		t.Fatalf("README changed: %q", got)
	}
	if outcomes, _ := mutationAudits(t, h, patch.RequestID); len(outcomes) != 2 || outcomes[0] != "queued" || outcomes[1] != "failed" {
		t.Fatalf("audited outcomes %v, want queued then failed", outcomes)
	}
}

// on_busy never opens a way around the gate or the denylist: a write the
// Fast Path refuses is refused the same with on_busy "durable", no job is
// queued, and nothing appears. A batch step may not carry on_busy.
func TestQueuedWriteCrossesTheGateFirst(t *testing.T) {
	h, root, repo := jobFixture(t)
	ctx := context.Background()
	holdCheckout(t, h, repo)
	before, err := h.JobList(ctx, harness.JobListArgs{RepoID: repo})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".env", "../outside.txt", "sub/.env"} {
		_, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo, RequestID: reqID(t), Operations: writeOp(p, "TOKEN=stolen\n"), OnBusy: "durable"})
		if code := errs.CodeOf(err); code != errs.SecretPathDenied && code != errs.PathOutsideRoot {
			t.Fatalf("write of %s with on_busy durable: got %v, want the Fast Path's refusal", p, err)
		}
	}
	after, err := h.JobList(ctx, harness.JobListArgs{RepoID: repo})
	if err != nil || len(after.Jobs) != len(before.Jobs) {
		t.Fatalf("jobs after refused writes: %d, before %d (%v)", len(after.Jobs), len(before.Jobs), err)
	}
	if got := readFile(t, root, ".env"); got != "TOKEN=supersecret\n" {
		t.Fatalf(".env changed: %q", got)
	}
	for _, p := range []string{filepath.Join(root, "sub", ".env"), filepath.Join(filepath.Dir(root), "outside.txt")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s appeared", p)
		}
	}
	step := map[string]any{"operations": []map[string]any{{"op": "write", "path": "README.md", "content": "x\n"}}, "on_busy": "durable"}
	_, err = h.Batch(ctx, harness.BatchArgs{RepoID: repo, RequestID: reqID(t), Steps: []harness.BatchStep{{Kind: "apply_patch", Args: step}}})
	if errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("batch step with on_busy: got %v, want INVALID_ARGUMENT", err)
	}
	// Benign: with a free checkout, on_busy changes nothing.
	h2, root2, repo2 := fixture(t)
	r, err := h2.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo2, RequestID: reqID(t), Operations: replaceOp("README.md", "hello world", "hello free"), OnBusy: "durable"})
	if err != nil || r.Queued != nil || r.ReceiptID == "" || r.Route != "fast" {
		t.Fatalf("on_busy with a free checkout: %+v %v, want an ordinary write", r, err)
	}
	if got := readFile(t, root2, "README.md"); got != "# demo\nhello free\n" {
		t.Fatalf("README: %q", got)
	}
}
