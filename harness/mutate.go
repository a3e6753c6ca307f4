package harness

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Receipt records one mutation: who wrote what under which fencing token.
type Receipt struct {
	ReceiptID     string            `json:"receipt_id"`
	RequestID     string            `json:"request_id"`
	Operation     string            `json:"operation"`
	RepoID        string            `json:"repo_id"`
	CheckoutID    string            `json:"checkout_id"`
	LeaseID       string            `json:"lease_id"`
	FencingToken  uint64            `json:"fencing_token"`
	FencingTokens map[string]uint64 `json:"fencing_tokens"`
	Changes       []patch.Change    `json:"changes"`
	HeadBefore    string            `json:"head_before,omitempty"`
	HeadAfter     string            `json:"head_after,omitempty"`
	Commit        string            `json:"commit,omitempty"`
	HooksRan      *bool             `json:"hooks_ran,omitempty"`
	At            time.Time         `json:"at"`
	LatencyMs     float64           `json:"latency_ms"`
}

// MutationResult is the result of apply_patch, git_stage and git_commit.
type MutationResult struct {
	Receipt
	// Replayed is true when this request_id already succeeded: the stored
	// result is returned and nothing ran again.
	Replayed bool `json:"replayed"`
	// Warnings report bookkeeping that failed beside a successful write
	// (ledger or receipt persistence); the write itself happened.
	Warnings []string `json:"warnings,omitempty"`
	Meta
}

// mutation describes one write for mutate.
type mutation struct {
	op        string
	repo      actors.RepoEntry
	requestID string
	args      any      // hashed for the ledger (request_id and timing fields dropped)
	paths     []string // rel paths the write may touch (for REQUEST_OUTCOME_UNKNOWN answers)
	keys      []string // resource keys to lease
	wait      time.Duration
	breakdown bool
	run       func(ctx context.Context, l *heldLease, r *Receipt) error
}

// mutate runs a write under the request ledger and a lease:
//  1. ledger begin (create-if-absent): a replay returns the stored result;
//  2. lease over the resource keys (MUTATION_BUSY, or wait in order);
//  3. the write itself, fenced;
//  4. ledger completion and receipt, whose failures are reported beside
//     the success, never instead of it.
func (h *Harness) mutate(ctx context.Context, tr *trace, m mutation) (*MutationResult, error) {
	if m.requestID == "" {
		return nil, errs.New(errs.RequestIDRequired, "%s needs a request_id (any unique string up to 255 characters) so a retry replays instead of writing twice", m.op)
	}
	if err := ledger.ValidateRequestID(m.requestID); err != nil {
		return nil, err
	}
	hash, err := ledger.InputHash(m.op, m.args)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	tr.mark(segRouting)

	begun, err := request[messages.LedgerBegun](ctx, h, h.ledger, messages.LedgerBegin{RequestID: m.requestID, Operation: m.op, InputHash: hash, Paths: m.paths})
	if err != nil {
		if errs.CodeOf(err) == errs.RequestOutcomeUnknown {
			return nil, h.withDigests(err, m.repo)
		}
		return nil, err
	}
	if begun.Replay {
		var out MutationResult
		if err := json.Unmarshal(begun.Entry.Result, &out); err != nil {
			return nil, errs.Wrap(errs.Internal, err, "decode stored result of %q: %v", m.requestID, err)
		}
		out.Replayed = true
		out.Meta = Meta{Route: "fast", Latency: tr.finish(segSnapshot, m.breakdown)}
		return &out, nil
	}
	auditEntry := audit.Entry{Kind: audit.KindMutation, Operation: m.op, RepoID: m.repo.Repo.ID, RequestID: m.requestID, Paths: m.paths, InputHash: hash}
	fail := func(cause error) error {
		e := auditEntry
		e.Outcome, e.Code, e.Reason = "failed", string(errs.CodeOf(cause)), errs.From(cause).Message
		h.auditAppend(e)
		if _, ferr := request[messages.LedgerDone](context.Background(), h, h.ledger, messages.LedgerFail{RequestID: m.requestID, Err: cause}); ferr != nil {
			h.lg.Warn("ledger: record failure")
		}
		return cause
	}

	l, lctx, err := h.acquireLease(ctx, m.repo.Checkout, m.requestID, m.op, m.keys, m.wait, "ephemeral", 0)
	if err != nil {
		return nil, fail(err)
	}
	tr.mark(segPolicy)
	rec := Receipt{
		RequestID: m.requestID, Operation: m.op, RepoID: m.repo.Repo.ID, CheckoutID: m.repo.Repo.CheckoutID,
		LeaseID: l.info.ID, FencingToken: l.maxToken(), FencingTokens: l.info.Tokens,
	}
	err = m.run(lctx, l, &rec)
	if err != nil && lctx.Err() != nil && errs.CodeOf(context.Cause(lctx)) == errs.LeaseLost {
		err = context.Cause(lctx)
	}
	l.release()
	if err != nil {
		return nil, fail(err)
	}
	tr.mark(segExecution)

	now := h.cfg.Now()
	rec.At = now.UTC()
	rec.ReceiptID = "rcpt_" + strconv.FormatInt(now.UnixNano(), 36) + "_" + strconv.FormatUint(rec.FencingToken, 10)
	if rec.Changes == nil {
		rec.Changes = []patch.Change{}
	}
	out := &MutationResult{Receipt: rec}
	stored, _ := json.Marshal(out)
	if _, err := request[messages.LedgerDone](context.Background(), h, h.ledger, messages.LedgerComplete{RequestID: m.requestID, Result: stored}); err != nil {
		out.Warnings = append(out.Warnings, "the write succeeded but the ledger could not record it: "+errs.From(err).Message)
	}
	auditEntry.Outcome, auditEntry.FencingToken = "succeeded", rec.FencingToken
	auditEntry.Details = map[string]string{"receipt_id": rec.ReceiptID, "lease_id": rec.LeaseID}
	h.auditAppend(auditEntry)
	lat := tr.finish(segReceipt, m.breakdown)
	out.LatencyMs = lat.TotalMs
	if err := h.persistReceipt(out.Receipt); err != nil {
		out.Warnings = append(out.Warnings, "the write succeeded but its receipt could not be stored: "+err.Error())
	}
	out.Meta = Meta{Route: "fast", Latency: lat}
	return out, nil
}

// withDigests adds the current digests of an unknown-outcome request's
// paths: what is known about the files it may have written.
func (h *Harness) withDigests(err error, e actors.RepoEntry) error {
	ce := errs.From(err)
	paths, _ := ce.Details["paths"].([]string)
	digests := make(map[string]string, len(paths))
	for _, p := range paths {
		d, derr := patch.Digest(filepath.Join(e.Repo.Root, filepath.FromSlash(p)))
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

var receiptSeq atomic.Uint64

func (h *Harness) persistReceipt(r Receipt) error {
	seq := uint64(h.cfg.Now().UnixNano())
	if err := h.store.Put(persistence.ReceiptKey(r.RepoID, seq), r); err != nil {
		return err
	}
	if receiptSeq.Add(1)%64 == 0 {
		go h.pruneReceipts(r.RepoID)
	}
	return nil
}

// pruneReceipts drops the oldest receipts of a repository beyond the bound.
func (h *Harness) pruneReceipts(repoID string) {
	if h.enter() != nil {
		return
	}
	defer h.leave()
	prefix := persistence.ReceiptKey(repoID, 0)
	prefix = prefix[:len(prefix)-8]
	n, err := h.store.Count(prefix)
	if err != nil || n <= maxReceiptsPerRepo {
		return
	}
	extra := n - maxReceiptsPerRepo
	var old [][]byte
	_ = h.store.ScanRaw(prefix, func(k, _ []byte) error {
		if len(old) < extra {
			old = append(old, k)
		}
		return nil
	})
	_ = h.store.Update(false, func(tx *persistence.Txn) error {
		for _, k := range old {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
