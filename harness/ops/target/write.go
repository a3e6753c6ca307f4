package target

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/patch"
	itarget "github.com/harnessd/harnessd/internal/target"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Receipt records one mutation of a target: what changed, under which
// hold of the root, with the effect local_effect. It is stored under
// receipt/<target id>/ (and copied under the repo_id by target_promote).
type Receipt struct {
	op.Receipt
	TargetID    string `json:"target_id"`
	WorkspaceID string `json:"workspace_id"`
	Effect      string `json:"effect"`
	// Targets are every target the mutation held (two for a copy or move
	// across targets), in the order their roots were taken.
	Targets []string `json:"targets"`
	// HoldSeqs are the grant numbers of the roots' mutation slots.
	HoldSeqs []uint64 `json:"hold_seqs"`
}

// MutationResult is the result of the target writes.
type MutationResult struct {
	Receipt
	// Replayed is true when this request_id already succeeded: the stored
	// result is returned and nothing ran again.
	Replayed bool     `json:"replayed"`
	Warnings []string `json:"warnings,omitempty"`
	op.Meta
}

// Warn adds a warning.
func (m *MutationResult) Warn(w string) { m.Warnings = append(m.Warnings, w) }

// Waits for a busy root.
const (
	waitDefault = 2 * time.Second
	waitMax     = 30 * time.Second
	// maxCopy bounds a copied or moved file.
	maxCopy = 16 << 20
)

// mutation is one planned physical mutation of one or two targets.
type mutation struct {
	Op        string
	RequestID string
	Hashed    any
	// Targets are the targets to hold; the first owns the receipt.
	Targets []resolved
	Paths   []string
	WaitMs  int
	// Run writes under the hold and records what it changed in rec.
	Run func(ctx context.Context, rec *Receipt) error
}

func waitOf(ms int) (time.Duration, error) {
	if ms < 0 || time.Duration(ms)*time.Millisecond > waitMax {
		return 0, errs.New(errs.InvalidArgument, "wait_ms must be between 0 and %d", waitMax.Milliseconds())
	}
	if ms == 0 {
		return waitDefault, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// exec runs m: one lightweight ledger record (begin, then completed in
// this same request), the roots' mutation slots in canonical path order,
// the identity of every root checked again under the hold, the write,
// and a local_effect receipt and audit entry. A request_id is optional:
// without one the record is made under a generated id and a retry runs
// again; with one a retry replays the stored result.
func exec[R any](ctx context.Context, c *op.Call, m mutation, wrap func(Receipt) *R, replayed func(*R)) (*R, error) {
	env := c.Env
	wait, err := waitOf(m.WaitMs)
	if err != nil {
		return nil, err
	}
	reqID := m.RequestID
	if reqID == "" {
		reqID = "tgt_" + strconv.FormatInt(env.Now().UnixNano(), 36) + "_" + m.Targets[0].id()
	} else if err := ledger.ValidateRequestID(reqID); err != nil {
		return nil, err
	}
	hash, err := c.InputHash(m.Op, m.Hashed)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	begun, err := env.Ledger.Begin(ctx, messages.LedgerBegin{RequestID: reqID, Operation: m.Op, InputHash: hash, Paths: m.Paths})
	if err != nil {
		return nil, err
	}
	if begun.Replay {
		var out R
		if err := json.Unmarshal(begun.Entry.Result, &out); err != nil {
			return nil, errs.Wrap(errs.Internal, err, "decode stored result of %q: %v", reqID, err)
		}
		replayed(&out)
		return &out, nil
	}
	owner := m.Targets[0]
	entry := audit.Entry{Kind: audit.KindMutation, Operation: m.Op, RepoID: owner.id(), RequestID: reqID, Paths: m.Paths, InputHash: hash}
	govern.Identify(&entry, c.Caller)
	fail := func(cause error, nothing bool) error {
		e := entry
		e.Outcome, e.Code, e.Reason = "failed", string(errs.CodeOf(cause)), errs.From(cause).Message
		env.Gov.AuditAppend(e)
		if nothing {
			if aerr := env.Ledger.Abandon(context.Background(), reqID, hash); aerr == nil {
				return cause
			}
		}
		if ferr := env.Ledger.Fail(context.Background(), reqID, cause); ferr != nil {
			env.Logger.Warn("ledger: record failure", zap.String("request_id", reqID), zap.Error(ferr))
		}
		return cause
	}
	entries := make([]runtime.TargetEntry, len(m.Targets))
	for i, t := range m.Targets {
		entries[i] = t.Entry
	}
	hold, err := env.RT.Targets.Acquire(ctx, wait, entries...)
	if err != nil {
		return nil, fail(err, true)
	}
	rec := Receipt{Receipt: op.Receipt{RequestID: reqID, Operation: m.Op, RepoID: owner.id(), CheckoutID: owner.Entry.Grant.WorkspaceID,
		FencingTokens: map[string]uint64{}}, TargetID: owner.id(), WorkspaceID: owner.Entry.Grant.WorkspaceID, Effect: Effect, HoldSeqs: hold.Seqs}
	for _, t := range m.Targets {
		rec.Targets = append(rec.Targets, t.id())
	}
	// The roots are ours now: a directory swapped in since the call was
	// prepared is refused before anything is written.
	for _, t := range m.Targets {
		g := t.Entry.Grant
		if err := itarget.CheckIdentity(g.TargetID, g.Root, g.Identity.Dev, g.Identity.Ino); err != nil {
			hold.Release()
			env.Forget(g.TargetID)
			return nil, fail(err, true)
		}
	}
	err = m.Run(ctx, &rec)
	hold.Release()
	for _, t := range m.Targets {
		env.Wrote(t.id())
	}
	if err != nil {
		return nil, fail(err, false)
	}
	now := env.Now()
	rec.At = now.UTC()
	rec.ReceiptID = "rcpt_" + strconv.FormatInt(now.UnixNano(), 36) + "_t" + strconv.FormatUint(hold.Seqs[0], 10)
	rec.FencingToken = hold.Seqs[0]
	if rec.Changes == nil {
		rec.Changes = []patch.Change{}
	}
	out := wrap(rec)
	warn := func(w string) {
		if x, ok := any(out).(interface{ Warn(string) }); ok {
			x.Warn(w)
		}
	}
	// One synced commit after the write, as a repository's (op.Call.Write):
	// the audit entry, the ledger's completion and the receipt durable
	// together or not at all, so a kill -9 leaves the request replayable
	// with its receipt, or executing (REQUEST_OUTCOME_UNKNOWN) with
	// nothing of it recorded, never audited yet unknown to the ledger.
	entry.Outcome = "succeeded"
	entry.Details = map[string]string{"receipt_id": rec.ReceiptID, "effect": Effect}
	stored, _ := json.Marshal(out)
	var with []messages.StoreRecord
	if done, err := env.Ledger.Completion(context.Background(), reqID, stored); err != nil {
		warn("the write succeeded but the ledger could not record it: " + errs.From(err).Message)
	} else {
		with = append(with, done)
	}
	if r, err := receiptRecord(env.Store, rec, now); err != nil {
		warn("the write succeeded but its receipt could not be stored: " + errs.From(err).Message)
	} else {
		with = append(with, r)
	}
	if err := env.Gov.AuditAppendDurable(entry, with...)(); err != nil {
		warn("the write succeeded but its audit entry, ledger completion and receipt could not be made durable: " + errs.From(err).Message)
	} else if rec.FencingToken%64 == 0 {
		pruneReceipts(env.Store, rec.TargetID)
	}
	return out, nil
}

// receiptRecord is the store record of a receipt, receipt/<target
// id>/<seq>, seq the nanoseconds of now (moved on past a taken key),
// written in the audit entry's transaction; every 64th grant of the
// root's slot prunes the target's oldest receipts beyond the bound once
// it is stored.
func receiptRecord(store *persistence.Store, rec Receipt, now time.Time) (messages.StoreRecord, error) {
	seq := uint64(now.UnixNano())
	for range 64 {
		ok, err := store.Has(persistence.ReceiptKey(rec.TargetID, seq))
		if err != nil {
			return messages.StoreRecord{}, err
		}
		if !ok {
			break
		}
		seq++
	}
	b, err := persistence.Encode(rec)
	if err != nil {
		return messages.StoreRecord{}, err
	}
	return messages.StoreRecord{Key: persistence.ReceiptKey(rec.TargetID, seq), Value: b}, nil
}

// maxReceiptsPerTarget bounds the receipts kept per target (like a
// repository's).
const maxReceiptsPerTarget = 1000

// pruneReceipts drops the oldest receipts of a target beyond the bound.
func pruneReceipts(store *persistence.Store, targetID string) {
	_ = store.PruneOldest(persistence.ReceiptPrefix(targetID), maxReceiptsPerTarget)
}

func mutationResult(r Receipt) *MutationResult { return &MutationResult{Receipt: r} }
func markReplayed(r *MutationResult)           { r.Replayed = true }

// writePlan is the plan of a mutation: gated as a write of its paths.
func writePlan(c *op.Call, m mutation, approvalID string) *op.Plan {
	in := gate(m.Targets[0], m.Op, m.Paths, true, 30)
	in.Args, in.ApprovalID = m.Hashed, approvalID
	return &op.Plan{Gate: in, Run: func(ctx context.Context) (any, error) {
		return exec(ctx, c, m, mutationResult, markReplayed)
	}}
}

// WriteFileArgs are the arguments of target_write_file.
type WriteFileArgs struct {
	TargetID   string `json:"target_id" jsonschema:"a write target, from target_list"`
	Path       string `json:"path" jsonschema:"relative to the target root"`
	Content    string `json:"content" jsonschema:"the whole new content"`
	Mode       string `json:"mode,omitempty" jsonschema:"octal, e.g. 0755 (default 0644, or the existing mode)"`
	RequestID  string `json:"request_id,omitempty" jsonschema:"unique per write; a retry with it replays"`
	WaitMs     int    `json:"wait_ms,omitempty" jsonschema:"wait up to this long for a busy root (default 2000, max 30000), then MUTATION_BUSY"`
	ApprovalID string `json:"approval_id,omitempty"`
}

func writeFile(_ context.Context, c *op.Call, a WriteFileArgs) (*op.Plan, error) {
	r, err := resolveTarget(c, a.TargetID, true)
	if err != nil {
		return nil, err
	}
	_, rel, err := r.Root.ResolveWrite(a.Path)
	if err != nil {
		return nil, err
	}
	h := a
	h.WaitMs, h.ApprovalID = 0, ""
	ops := []patch.Op{{Op: "write", Path: a.Path, Content: a.Content, Mode: a.Mode}}
	return writePlan(c, mutation{Op: "target_write_file", RequestID: a.RequestID, Hashed: h, Targets: []resolved{r}, Paths: []string{rel}, WaitMs: a.WaitMs,
		Run: func(ctx context.Context, rec *Receipt) error {
			res, err := patch.Apply(ctx, r.Root, ops, patch.Options{})
			rec.Changes = append(rec.Changes, res.Changes...)
			return err
		}}, a.ApprovalID), nil
}

// ApplyPatchArgs are the arguments of target_apply_patch.
type ApplyPatchArgs struct {
	TargetID     string     `json:"target_id" jsonschema:"a write target, from target_list"`
	Operations   []patch.Op `json:"operations" jsonschema:"applied in order"`
	AllowedPaths []string   `json:"allowed_paths,omitempty" jsonschema:"globs every path must match"`
	RequestID    string     `json:"request_id,omitempty" jsonschema:"unique per write; a retry with it replays"`
	WaitMs       int        `json:"wait_ms,omitempty" jsonschema:"wait up to this long for a busy root (default 2000, max 30000)"`
	ApprovalID   string     `json:"approval_id,omitempty"`
}

func applyPatch(_ context.Context, c *op.Call, a ApplyPatchArgs) (*op.Plan, error) {
	if len(a.Operations) == 0 {
		return nil, errs.New(errs.InvalidArgument, "operations is empty: nothing to apply")
	}
	if len(a.Operations) > patch.DefaultMaxOps {
		return nil, errs.New(errs.InvalidArgument, "%d operations: at most %d in one patch", len(a.Operations), patch.DefaultMaxOps)
	}
	r, err := resolveTarget(c, a.TargetID, true)
	if err != nil {
		return nil, err
	}
	var rels []string
	seen := map[string]bool{}
	for _, o := range a.Operations {
		_, rel, err := r.Root.ResolveWrite(o.Path)
		if err != nil {
			return nil, err
		}
		if !seen[rel] {
			seen[rel] = true
			rels = append(rels, rel)
		}
	}
	h := a
	h.WaitMs, h.ApprovalID = 0, ""
	return writePlan(c, mutation{Op: "target_apply_patch", RequestID: a.RequestID, Hashed: h, Targets: []resolved{r}, Paths: rels, WaitMs: a.WaitMs,
		Run: func(ctx context.Context, rec *Receipt) error {
			res, err := patch.Apply(ctx, r.Root, a.Operations, patch.Options{AllowedPaths: a.AllowedPaths})
			rec.Changes = append(rec.Changes, res.Changes...)
			return err
		}}, a.ApprovalID), nil
}

// CopyArgs are the arguments of target_copy and target_move.
type CopyArgs struct {
	TargetID   string `json:"target_id" jsonschema:"the target holding from"`
	From       string `json:"from" jsonschema:"source file, relative to its target's root"`
	ToTargetID string `json:"to_target_id,omitempty" jsonschema:"the write target to put it in (default target_id)"`
	To         string `json:"to" jsonschema:"destination file, relative to that target's root"`
	Overwrite  bool   `json:"overwrite,omitempty" jsonschema:"replace an existing destination"`
	RequestID  string `json:"request_id,omitempty" jsonschema:"unique per write; a retry with it replays"`
	WaitMs     int    `json:"wait_ms,omitempty" jsonschema:"wait up to this long for a busy root (default 2000, max 30000)"`
	ApprovalID string `json:"approval_id,omitempty"`
}

func copyMove(_ context.Context, c *op.Call, a CopyArgs, move bool) (*op.Plan, error) {
	name := "target_copy"
	if move {
		name = "target_move"
	}
	if a.From == "" || a.To == "" {
		return nil, errs.New(errs.InvalidArgument, "%s: from and to are required", name)
	}
	src, err := resolveTarget(c, a.TargetID, move)
	if err != nil {
		return nil, err
	}
	dst := src
	if a.ToTargetID != "" && a.ToTargetID != a.TargetID {
		if dst, err = resolveTarget(c, a.ToTargetID, true); err != nil {
			return nil, err
		}
	} else if src.Entry.Grant.Access != AccessWrite {
		return nil, errs.New(errs.PolicyDenied, "target %s was granted read access only; copy into a write target (to_target_id)", src.id()).With("target_id", src.id())
	}
	_, fromRel, err := src.Root.ResolveRead(a.From)
	if err != nil {
		return nil, err
	}
	_, toRel, err := dst.Root.ResolveWrite(a.To)
	if err != nil {
		return nil, err
	}
	if src.path() == dst.path() && fromRel == toRel {
		return nil, errs.New(errs.InvalidArgument, "%s: from and to are the same file", name)
	}
	targets := []resolved{src}
	if dst.path() != src.path() || dst.id() != src.id() {
		targets = append(targets, dst)
	}
	h := a
	h.WaitMs, h.ApprovalID = 0, ""
	return writePlan(c, mutation{Op: name, RequestID: a.RequestID, Hashed: h, Targets: targets, Paths: []string{fromRel, toRel}, WaitMs: a.WaitMs,
		Run: func(ctx context.Context, rec *Receipt) error {
			data, mode, err := readSource(src, a.From)
			if err != nil {
				return err
			}
			res, err := patch.Apply(ctx, dst.Root, []patch.Op{{Op: "create", Path: a.To, Content: data, Overwrite: a.Overwrite, Mode: mode}}, patch.Options{MaxBytes: maxCopy})
			if err != nil {
				return err
			}
			rec.Changes = append(rec.Changes, res.Changes...)
			if !move {
				return nil
			}
			del, err := patch.Apply(ctx, src.Root, []patch.Op{{Op: "delete", Path: a.From}}, patch.Options{})
			if err != nil {
				// The source stays: take back the copy when it is new.
				if len(res.Changes) == 1 && res.Changes[0].Before == "" {
					_, _ = patch.Apply(context.Background(), dst.Root, []patch.Op{{Op: "delete", Path: a.To}}, patch.Options{})
				}
				return err
			}
			rec.Changes = append(rec.Changes, del.Changes...)
			return nil
		}}, a.ApprovalID), nil
}

// readSource reads a regular file of a target without following a link
// its leaf became since it was resolved (the descriptor must be the file
// resolved), at most maxCopy bytes.
func readSource(src resolved, p string) (string, string, error) {
	abs, rel, leaf, err := src.Root.ResolveReadLeaf(p)
	if err != nil {
		return "", "", err
	}
	if leaf.Mode != 0 {
		return "", "", errs.New(errs.IsDirectory, "%q is not a regular file: only files are copied", rel).With("path", rel)
	}
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", "", errs.Wrap(errs.NotFound, err, "open %q: %v", rel, err).With("path", rel)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || uint64(st.Dev) != leaf.Dev || st.Ino != leaf.Ino {
		return "", "", errs.New(errs.ConcurrentModification, "%q changed while it was opened; nothing was written; retry", rel).With("path", rel)
	}
	// A hard link is refused: a copy (or a move's copy) would turn another
	// name's content, a secret's or a file's outside the root, into a plain
	// file of its own.
	if err := src.Root.CheckLeafStat(rel, &st); err != nil {
		return "", "", err
	}
	if st.Size > maxCopy {
		return "", "", errs.New(errs.InvalidArgument, "%q has %d bytes: at most %d are copied", rel, st.Size, maxCopy).With("path", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCopy+1))
	if err != nil {
		return "", "", errs.Wrap(errs.Internal, err, "read %q: %v", rel, err)
	}
	if len(b) > maxCopy {
		return "", "", errs.New(errs.InvalidArgument, "%q grew past %d bytes while it was read", rel, maxCopy)
	}
	return string(b), "0" + strconv.FormatUint(uint64(st.Mode&0o777), 8), nil
}
