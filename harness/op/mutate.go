package op

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strconv"

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
//  2. a lease over t.Keys (MUTATION_BUSY, or wait in mailbox order);
//  3. under the lease, fenced (a lost lease cancels it), Apply: the
//     verification gate (WriteHooks.Verify), then t.Run, which calls the
//     hooks of what it writes: Keep before each file changes, Trailers
//     and Committed around a commit (see WriteHooks for the order);
//  4. ledger completion, audit and (kept for the pipeline's last stage)
//     the receipt, whose failures are reported beside the success, never
//     instead of it.
//
// A failure before or during the write is audited and recorded in the
// ledger as failed, so the request may be retried.
func (c *Call) Write(ctx context.Context, t Txn) (any, error) {
	if t.RequestID == "" {
		return nil, errs.New(errs.RequestIDRequired, "%s needs a request_id (any unique string up to 255 characters) so a retry replays instead of writing twice", t.Op)
	}
	if err := ledger.ValidateRequestID(t.RequestID); err != nil {
		return nil, err
	}
	hash, err := c.InputHash(t.Op, t.Hashed)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	c.Mark(SegRouting)
	env := c.Env
	begun, err := env.Ledger.Begin(ctx, messages.LedgerBegin{RequestID: t.RequestID, Operation: t.Op, InputHash: hash, Paths: t.Paths})
	if err != nil {
		if errs.CodeOf(err) == errs.RequestOutcomeUnknown {
			return nil, withDigests(err, c.Repo)
		}
		return nil, err
	}
	if begun.Replay {
		out, err := t.Replay(begun.Entry.Result)
		if err != nil {
			return nil, errs.Wrap(errs.Internal, err, "decode stored result of %q: %v", t.RequestID, err)
		}
		c.FinishIn(SegSnapshot)
		return out, nil
	}
	auditEntry := audit.Entry{Kind: audit.KindMutation, Operation: t.Op, RepoID: c.Repo.Repo.ID, RequestID: t.RequestID, Paths: t.Paths, InputHash: hash}
	govern.Identify(&auditEntry, c.Caller)
	fail := func(cause error) error {
		e := auditEntry
		e.Outcome, e.Code, e.Reason = "failed", string(errs.CodeOf(cause)), errs.From(cause).Message
		env.Gov.AuditAppend(e)
		if runtime.NothingWritten(cause) {
			// Answered before it held its lease (harnessd began shutting
			// down while it waited): nothing was written, so the entry is
			// closed as never begun and the same request runs normally
			// after the restart, not REQUEST_OUTCOME_UNKNOWN.
			aerr := env.Ledger.Abandon(context.Background(), t.RequestID, hash)
			if aerr == nil {
				return cause
			}
			env.Logger.Warn("ledger: close a request as never begun", zap.String("request_id", t.RequestID), zap.Error(aerr))
		}
		if ferr := env.Ledger.Fail(context.Background(), t.RequestID, cause); ferr != nil {
			env.Logger.Warn("ledger: record failure", zap.String("request_id", t.RequestID), zap.Error(ferr))
		}
		return cause
	}

	l, lctx, err := env.Leases.Acquire(ctx, c.Repo, runtime.LeaseRequest{Owner: t.RequestID, Operation: t.Op, Keys: t.Keys, Wait: t.Wait, Visibility: "ephemeral", RunID: c.Caller.RunID})
	if err != nil {
		return nil, fail(err)
	}
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
	err = c.apply(lctx, t, l, &rec)
	if err != nil && lctx.Err() != nil && errs.CodeOf(context.Cause(lctx)) == errs.LeaseLost {
		err = context.Cause(lctx)
	}
	l.Release()
	if err != nil {
		env.Wrote(c.Repo.Repo.ID) // a failed write may have touched files before its rollback
		return nil, fail(err)
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
		_ = fail(errs.New(errs.Internal, "no write of %s %s succeeded", t.Op, t.RequestID))
		return out, nil
	}
	env.Wrote(c.Repo.Repo.ID)
	// The audit entry is durable before the ledger records success (the
	// audit actor's group commit): after a kill -9 every request the
	// ledger calls succeeded, and so every acknowledged one, has its
	// entry; a kill between the two leaves an audited write whose ledger
	// entry answers REQUEST_OUTCOME_UNKNOWN, which is the truth.
	auditEntry.Outcome, auditEntry.FencingToken = "succeeded", rec.FencingToken
	auditEntry.Details = map[string]string{"receipt_id": rec.ReceiptID, "lease_id": rec.LeaseID}
	if err := env.Gov.AuditAppendDurable(auditEntry)(); err != nil {
		if w, ok := out.(warner); ok {
			w.Warn("the write succeeded but its audit entry could not be made durable: " + errs.From(err).Message)
		}
	}
	stored, _ := json.Marshal(out)
	if err := env.Ledger.Complete(context.Background(), t.RequestID, stored); err != nil {
		if w, ok := out.(warner); ok {
			w.Warn("the write succeeded but the ledger could not record it: " + errs.From(err).Message)
		}
	}
	c.receipt = kept
	return out, nil
}

// Resolve resolves the call's repository in Prepare, for an operation
// whose repository is known only from its input's records (run_revert):
// the same checks as a Repo of the spec.
func (c *Call) Resolve(repoID string) error { return c.resolve(repoID) }

// MutationTxn completes t for the operations whose result is a
// MutationResult (apply_patch, git_stage, git_commit, proposals).
func MutationTxn(t Txn) Txn {
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

// persistReceipt stores a receipt; every 64th store prunes the oldest of
// the repository beyond the bound, in a goroutine.
func (c *Call) persistReceipt(r Receipt) error {
	env := c.Env
	seq := uint64(env.Now().UnixNano())
	if err := env.Store.Put(persistence.ReceiptKey(r.RepoID, seq), r); err != nil {
		return err
	}
	if env.receipts.Add(1)%64 == 0 {
		leave, err := c.pipe.Enter()
		if err == nil {
			env.RT.Tasks().Go(func() {
				defer leave()
				pruneReceipts(env.Store, r.RepoID)
			})
		}
	}
	return nil
}

// pruneReceipts drops the oldest receipts of a repository beyond the bound.
func pruneReceipts(store *persistence.Store, repoID string) {
	_ = store.PruneOldest(persistence.ReceiptPrefix(repoID), maxReceiptsPerRepo)
}
