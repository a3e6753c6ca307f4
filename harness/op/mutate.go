package op

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Write is the mutation engine. It runs t in the call's repository:
//  1. ledger begin (create-if-absent): a replay returns the stored result
//     and writes nothing; a conflict, a request in progress or an unknown
//     outcome (with the current digests of t.Paths) is the answer;
//  2. a lease over t.Keys (MUTATION_BUSY, or wait in mailbox order; a
//     write with on_busy "durable" that finds them busy is queued as a
//     write job instead, its ledger entry closed as never begun: see
//     queued.go);
//  3. under the lease, fenced (a lost lease cancels it), Apply: the
//     verification gate (WriteHooks.Verify), then t.Run, which calls the
//     hooks of what it writes: Keep before each file changes, Trailers
//     and Committed around a commit (see WriteHooks for the order);
//  4. one synced commit: the audit entry, the ledger's completion, the
//     receipt and the durable copies of the pre-images whose files are
//     not yet fsynced (preimages.go) in the audit actor's transaction
//     (AuditAppend.With), whose failures are reported beside the success,
//     never instead of it.
//
// So a write pays two synced commits of the store: step 1's begin, synced
// before any file changes, and step 4's; a small pre-image's file is
// written without an fsync, its bytes riding step 4. The begin stays
// synced: a data dir whose file system was aborted read-only takes an
// unsynced write without an error (it lands in Badger's mapped log), so
// only the begin's sync refuses the write before the file changes, and it
// keeps a retry after a power cut from running twice (docs/DESIGN.md §3).
//
// A failure before or during the write is audited and recorded in the
// ledger as failed, so the request may be retried.
func (c *Call) Write(ctx context.Context, t Txn) (any, error) {
	hash, err := c.writeHash(t)
	if err != nil {
		return nil, err
	}
	c.Mark(SegRouting)
	env := c.Env
	if env.Fence != nil {
		if err := env.Fence(); err != nil {
			return nil, err
		}
	}
	out, replayed, err := c.begin(ctx, t, hash)
	if err != nil || replayed {
		return out, err
	}
	w := c.writing(t, hash)

	// The request's end (a client that stopped waiting: MCP's
	// notifications/cancelled, or its deadline) reaches the wait for the
	// lease and the verification gate, never the write: once the lease is
	// held, the write runs to its end (only a lost lease stops it) and is
	// recorded with its audit entry, ledger completion and receipt, so a
	// client that gave up meanwhile finds it by replay. A cancellation
	// after the effect changes nothing but the answer's delivery.
	l, lctx, err := env.Leases.Acquire(ctx, c.Repo, runtime.LeaseRequest{Owner: t.RequestID, Operation: t.Op, Keys: t.Keys, Wait: t.Wait, Visibility: "ephemeral", RunID: c.Caller.RunID})
	if err != nil {
		if queueable(t, err) {
			return c.queue(ctx, t, w, err) // on_busy: "durable" (queued.go)
		}
		return nil, w.fail(busyHint(t, err))
	}
	return c.leased(ctx, t, w, l, lctx)
}

// writeHash validates t's request id and returns its input hash.
func (c *Call) writeHash(t Txn) (string, error) {
	if t.RequestID == "" {
		return "", errs.New(errs.RequestIDRequired, "%s needs a request_id (any unique string up to 255 characters) so a retry replays instead of writing twice", t.Op)
	}
	if err := ledger.ValidateRequestID(t.RequestID); err != nil {
		return "", err
	}
	hash, err := c.InputHash(t.Op, t.Hashed)
	if err != nil {
		return "", errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	return hash, nil
}

// begin is step 1: the ledger's begin of t. A replay answers the stored
// result (replayed true); a conflict, a request in progress or an unknown
// outcome (with the current digests of t.Paths) is the error.
func (c *Call) begin(ctx context.Context, t Txn, hash string) (any, bool, error) {
	begun, err := c.Env.Ledger.Begin(ctx, messages.LedgerBegin{RequestID: t.RequestID, Operation: t.Op, InputHash: hash, Paths: t.Paths})
	if err != nil {
		if errs.CodeOf(err) == errs.RequestOutcomeUnknown {
			return nil, false, withDigests(err, c.Repo)
		}
		return nil, false, err
	}
	if !begun.Replay {
		return nil, false, nil
	}
	out, err := t.Replay(begun.Entry.Result)
	if err != nil {
		return nil, false, errs.Wrap(errs.Internal, err, "decode stored result of %q: %v", t.RequestID, err)
	}
	c.FinishIn(SegSnapshot)
	return out, true, nil
}

// writing is a write whose ledger entry is executing: its audit entry,
// and how it fails.
type writing struct {
	c     *Call
	t     Txn
	hash  string
	entry audit.Entry
}

// writing returns the write of t begun in the ledger with hash.
func (c *Call) writing(t Txn, hash string) *writing {
	e := audit.Entry{Kind: audit.KindMutation, Operation: t.Op, RepoID: c.Repo.Repo.ID, RequestID: t.RequestID, Paths: t.Paths, InputHash: hash}
	govern.Identify(&e, c.Caller)
	if c.job != "" {
		e.Details = map[string]string{"job_id": c.job}
	}
	return &writing{c: c, t: t, hash: hash, entry: e}
}

// fail audits the write's failure and records it in the ledger, so the
// request may be retried; it returns cause.
func (w *writing) fail(cause error) error {
	env, id := w.c.Env, w.t.RequestID
	e := w.entry
	e.Outcome, e.Code, e.Reason = "failed", string(errs.CodeOf(cause)), errs.From(cause).Message
	env.Gov.AuditAppend(e)
	if runtime.NothingWritten(cause) {
		// Answered before it held its lease (harnessd began shutting
		// down while it waited): nothing was written, so the entry is
		// closed as never begun and the same request runs normally
		// after the restart, not REQUEST_OUTCOME_UNKNOWN.
		aerr := env.Ledger.Abandon(context.Background(), id, w.hash)
		if aerr == nil {
			return cause
		}
		env.Logger.Warn("ledger: close a request as never begun", zap.String("request_id", id), zap.Error(aerr))
	}
	if ferr := env.Ledger.Fail(context.Background(), id, cause); ferr != nil {
		env.Logger.Warn("ledger: record failure", zap.String("request_id", id), zap.Error(ferr))
	}
	return cause
}

// leased runs steps 3 and 4 of Write under the lease l (lctx ends when
// it is lost) and releases it.
func (c *Call) leased(ctx context.Context, t Txn, w *writing, l runtime.Lease, lctx context.Context) (any, error) {
	env := c.Env
	c.Mark(SegPolicy)
	info := l.Info()
	rec := Receipt{
		RequestID: t.RequestID, Operation: t.Op, RepoID: c.Repo.Repo.ID, CheckoutID: c.Repo.Repo.CheckoutID,
		LeaseID: info.ID, FencingToken: l.MaxToken(), FencingTokens: info.Tokens, RunID: c.Caller.RunID,
	}
	if c.run != nil {
		rec.RunID, rec.SpanID = c.run.entry.ID, c.run.spanID
	}
	// The receipt id is known before the write runs: git_commit records it
	// in the commit's trailers (Harnessd-Receipt).
	rec.ReceiptID = "rcpt_" + strconv.FormatInt(env.Now().UnixNano(), 36) + "_" + strconv.FormatUint(rec.FencingToken, 10)
	err := c.apply(lctx, ctx, t, l, &rec)
	if err != nil && lctx.Err() != nil && errs.CodeOf(context.Cause(lctx)) == errs.LeaseLost {
		err = context.Cause(lctx)
	}
	l.Release()
	if err != nil {
		env.Wrote(c.Repo.Repo.ID) // a failed write may have touched files before its rollback
		return nil, w.fail(err)
	}
	c.Mark(SegExecution)
	c.FinishIn(SegReceipt)

	now := env.Now()
	rec.At = now.UTC()
	if rec.Changes == nil {
		rec.Changes = []patch.Change{}
	}
	out, kept, wrote := t.Result(&rec)
	if !wrote {
		// Nothing was written: the request may be retried as it is.
		_ = w.fail(errs.New(errs.Internal, "no write of %s %s succeeded", t.Op, t.RequestID))
		return out, nil
	}
	env.Wrote(c.Repo.Repo.ID)
	// One synced commit after the write (step 4): the audit actor writes
	// the mutation's entry, the ledger's completion (decided by the ledger,
	// compare-and-set, not written by it) and the receipt in one
	// transaction, so they are durable together or not at all. After a
	// kill -9 or a power loss, either the request replays its result,
	// audited and with its receipt, or the ledger still says executing and
	// a retry answers REQUEST_OUTCOME_UNKNOWN (the truth). The answer waits
	// for that commit: acknowledged means durable.
	auditEntry := w.entry
	auditEntry.Outcome, auditEntry.FencingToken = "succeeded", rec.FencingToken
	auditEntry.Details = map[string]string{"receipt_id": rec.ReceiptID, "lease_id": rec.LeaseID}
	if c.job != "" {
		auditEntry.Details["job_id"] = c.job
	}
	stored, _ := json.Marshal(out)
	var with []messages.StoreRecord
	done, err := env.Ledger.Completion(context.Background(), t.RequestID, stored)
	if err != nil {
		warn(out, "the write succeeded but the ledger could not record it: "+errs.From(err).Message)
	} else {
		with = append(with, done)
	}
	// The stored receipt's latency is the call's up to this commit; the
	// answer's is the whole call's (the pipeline sets it last).
	kept.LatencyMs = float64(time.Since(c.trace.start).Microseconds()) / 1000
	if r, err := receiptRecord(*kept, env.Now()); err != nil {
		warn(out, "the write succeeded but its receipt could not be stored: "+err.Error())
	} else {
		with = append(with, r)
	}
	// The pre-images the receipt names whose files are not yet fsynced
	// (preimage.Store.PutPending) ride the same commit as durable copies.
	if pres, err := preImageRecords(env.PreImages, kept); err != nil {
		warn(out, "the write succeeded but its pre-images could not be stored: "+err.Error())
	} else {
		with = append(with, pres...)
	}
	CrashAt("before-commit")
	if err := env.Gov.AuditAppendDurable(auditEntry, with...)(); err != nil {
		warn(out, "the write succeeded but its audit entry, ledger completion and receipt could not be made durable (harnessd retries them): "+errs.From(err).Message)
	} else {
		c.pruneReceipts(kept.RepoID)
		c.settlePreImages()
	}
	CrashAt("after-commit")
	c.receipt = kept
	return out, nil
}

// apply is Apply for Write (step 3) with the request's context req
// beside the lease's ctx: the verification gate ends with either (nothing
// is written yet), the write with the lease's alone. A composite
// operation (its gate decided steps) verifies nothing of its own, since
// each of its write steps runs Apply with the step's call and the step's
// decision.
func (c *Call) apply(ctx, req context.Context, t Txn, l runtime.Lease, r *Receipt) error {
	if len(c.gated.Steps) == 0 {
		vctx, cancel := context.WithCancelCause(ctx)
		stop := context.AfterFunc(req, func() { cancel(context.Cause(req)) })
		err := c.verify(vctx, r)
		stop()
		cancel(nil)
		if err != nil {
			return err
		}
	}
	return t.Run(ctx, l, r)
}

// Resolve resolves the call's repository in Prepare, for an operation
// whose repository is known only from its input's records (run_revert):
// the same checks as a Repo of the spec.
func (c *Call) Resolve(repoID string) error { return c.resolve(repoID) }

// MutationTxn completes t for the operations whose result is a
// MutationResult (apply_patch, git_stage, git_commit, proposals).
func MutationTxn(t Txn) Txn {
	t.Queued = func(r Receipt, q *QueuedWrite) any {
		return &MutationResult{Receipt: r, Queued: q}
	}
	t.Result = func(r *Receipt) (any, *Receipt, bool) {
		out := &MutationResult{Receipt: *r}
		return out, &out.Receipt, true
	}
	t.Replay = func(stored json.RawMessage) (any, error) {
		var out MutationResult
		if err := json.Unmarshal(stored, &out); err != nil {
			return nil, err
		}
		out.Replayed = true
		return &out, nil
	}
	return t
}

// withDigests adds the current digests of an unknown-outcome request's
// paths: what is known about the files it may have written.
func withDigests(err error, e runtime.RepoEntry) error {
	ce := errs.From(err)
	var paths []string
	switch v := ce.Details["paths"].(type) {
	case []string:
		paths = v
	case []any:
		for _, p := range v {
			if s, ok := p.(string); ok {
				paths = append(paths, s)
			}
		}
	}
	digests := make(map[string]string, len(paths))
	for _, p := range paths {
		// Not through a hard link: its digest would answer for another
		// name's content (pathsafe.Root.CheckLeaf refuses it everywhere).
		d, derr := patch.DigestChecked(filepath.Join(e.Repo.Root, filepath.FromSlash(p)), func(fi fs.FileInfo) error {
			if pathsafe.HardLinked(fi) {
				return errs.New(errs.PathNotAllowed, "a hard link")
			}
			return nil
		})
		if derr != nil {
			d = "unreadable: " + derr.Error()
		} else if d == "" {
			d = "absent"
		}
		digests[p] = d
	}
	return ce.With("digests", digests)
}

// maxReceiptsPerRepo bounds the receipts kept per repository.
const maxReceiptsPerRepo = 1000

// warn adds w to out's warnings, if out has any.
func warn(out any, w string) {
	if x, ok := out.(warner); ok {
		x.Warn(w)
	}
}

// receiptRecord is the store record of receipt r stored at now
// (receipt/<repo>/<nanoseconds>), written in the audit's transaction with
// the ledger's completion.
func receiptRecord(r Receipt, now time.Time) (messages.StoreRecord, error) {
	b, err := persistence.Encode(r)
	if err != nil {
		return messages.StoreRecord{}, err
	}
	return messages.StoreRecord{Key: persistence.ReceiptKey(r.RepoID, uint64(now.UnixNano())), Value: b}, nil
}

// pruneReceipts counts a stored receipt; every 64th prunes the oldest of
// the repository beyond the bound, in a goroutine.
func (c *Call) pruneReceipts(repoID string) {
	env := c.Env
	if env.receipts.Add(1)%64 != 0 {
		return
	}
	leave, err := c.pipe.Enter()
	if err != nil {
		return
	}
	env.RT.Tasks().Go(func() {
		defer leave()
		_ = env.Store.PruneOldest(persistence.ReceiptPrefix(repoID), maxReceiptsPerRepo)
	})
}
