package undo

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Limits of receipt_list.
const (
	defaultListLimit = 50
	maxListLimit     = 1000
)

// Ops returns revert, run_revert and receipt_list.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[RevertArgs]{Name: "revert", Output: op.MutationResult{}, Destructive: true, Idempotent: true,
			Route: route.Mutation, Toolset: op.Undo, Roles: op.WriteRoles, Topics: []string{"test"}, ChangesCheckout: true, HashIgnore: []string{"wait_ms"},
			Description: "Undo one write of harnessd's: the files it changed put back (created ones deleted), all or nothing. " +
				"REVERT_CONFLICT names later writes to the same files: revert those first, or set cascade. A run's writes: run_revert. " +
				"Example: {\"request_id\":\"u1\",\"receipt_id\":\"rcpt_1\"}",
			Repo: func(a RevertArgs) string { return a.RepoID },
			Prepare: func(_ context.Context, c *op.Call, a RevertArgs) (*op.Plan, error) {
				if a.ReceiptID == "" {
					return nil, errs.New(errs.InvalidArgument, "receipt_id is required (receipt_list lists the receipts)")
				}
				h := a
				h.WaitMs, h.ApprovalID = 0, ""
				return planWrite(c, "revert", a.RequestID, a.ApprovalID, a.WaitMs, h, a.Cascade, a.ReceiptID, func(all []*op.Receipt) (map[string]bool, error) {
					for _, r := range all {
						if r.ReceiptID == a.ReceiptID {
							return map[string]bool{a.ReceiptID: true}, nil
						}
					}
					return nil, errs.New(errs.NotFound, "receipt %q is not a receipt of repository %s (receipt_list lists them; the oldest beyond 1000 per repository are pruned)", a.ReceiptID, c.Repo.Repo.ID).
						With("receipt_id", a.ReceiptID)
				})
			}}),
		op.Def(op.Spec[RunRevertArgs]{Name: "run_revert", Output: op.MutationResult{}, Destructive: true, Idempotent: true,
			Route: route.Mutation, Toolset: op.Undo, Roles: op.WriteRoles, Topics: []string{"test"}, ChangesCheckout: true, HashIgnore: []string{"wait_ms"},
			Description: "Undo what a run wrote, newest first, all or nothing, when its approach failed: all its writes, or those after to_span. " +
				"REVERT_CONFLICT names a later write outside the run: revert that first. One write: revert. " +
				"Example: {\"request_id\":\"u2\",\"run_id\":\"run_1\"}",
			Prepare: func(ctx context.Context, c *op.Call, a RunRevertArgs) (*op.Plan, error) {
				return prepareRunRevert(ctx, c, a)
			}}),
		op.Def(op.Spec[ListArgs]{Name: "receipt_list", Output: ListResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Undo, Roles: op.ReadRoles,
			Description: "List harnessd's writes (receipts), newest first: files changed, run, and whether revert can undo each alone now. " +
				"Use it to find a receipt_id; the work tree's changes: git_diff. " +
				"Example: {\"run_id\":\"run_1\",\"limit\":10}",
			Prepare: func(_ context.Context, c *op.Call, a ListArgs) (*op.Plan, error) {
				fast := route.Decision{Mode: route.Fast, Reasons: []string{"receipt_list is a readonly Fast Path operation"}, Risk: 5, EstimatedClass: route.Short, Tier: route.Direct}
				return &op.Plan{Gate: govern.Input{Route: &fast, Args: a}, Run: func(context.Context) (any, error) { return list(c, a) }}, nil
			}}),
	}
}

// RevertArgs are the arguments of revert.
type RevertArgs struct {
	RepoID     string `json:"repo_id" jsonschema:"from repository_list"`
	ReceiptID  string `json:"receipt_id" jsonschema:"from the write's result or receipt_list"`
	RequestID  string `json:"request_id,omitempty" required:"true" jsonschema:"unique per revert; a retry with it replays"`
	Cascade    bool   `json:"cascade,omitempty" jsonschema:"also undo later writes to the same files, newest first"`
	WaitMs     int    `json:"wait_ms,omitempty" jsonschema:"wait up to this long for a busy file instead of failing with MUTATION_BUSY (max 30000)"`
	ApprovalID string `json:"approval_id,omitempty" jsonschema:"from APPROVAL_REQUIRED, once a person approved it"`
}

// RunRevertArgs are the arguments of run_revert.
type RunRevertArgs struct {
	RunID      string `json:"run_id" jsonschema:"the run whose writes to undo"`
	ToSpan     string `json:"to_span,omitempty" jsonschema:"keep writes up to this call (run_status include_spans), undo the later ones (default undo all)"`
	RepoID     string `json:"repo_id,omitempty" jsonschema:"when the run wrote to several repositories"`
	RequestID  string `json:"request_id,omitempty" required:"true" jsonschema:"unique per revert; a retry with it replays"`
	WaitMs     int    `json:"wait_ms,omitempty" jsonschema:"wait up to this long for a busy file instead of failing with MUTATION_BUSY (max 30000)"`
	ApprovalID string `json:"approval_id,omitempty" jsonschema:"from APPROVAL_REQUIRED, once a person approved it"`
}

// loadReceipts returns the receipts of a repository's checkout, oldest
// stored first. With needles, only the reverts and the receipts whose
// stored form holds one of them are decoded (the others cannot touch the
// files the needles name).
func loadReceipts(st *persistence.Store, repoID, checkoutID string, needles ...[]byte) ([]*op.Receipt, error) {
	prefix := persistence.ReceiptPrefix(repoID)
	reverts := []byte(`"reverts":[`)
	var out []*op.Receipt
	err := st.ScanRaw(prefix, func(_, value []byte) error {
		if len(needles) > 0 && !bytes.Contains(value, reverts) {
			hit := false
			for _, n := range needles {
				if hit = bytes.Contains(value, n); hit {
					break
				}
			}
			if !hit {
				return nil
			}
		}
		var s slim
		if persistence.Decode(value, &s) != nil || s.ReceiptID == "" {
			return nil
		}
		r := s.receipt()
		if checkoutID != "" && r.CheckoutID != "" && r.CheckoutID != checkoutID {
			return nil
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "read receipts: %v", err)
	}
	return out, nil
}

// findReceipt returns the receipt id of a repository, or nil.
func findReceipt(st *persistence.Store, repoID, id string) *op.Receipt {
	prefix := persistence.ReceiptPrefix(repoID)
	needle, _ := json.Marshal(id)
	needle = append([]byte(`"receipt_id":`), needle...)
	var found *op.Receipt
	_ = st.ScanRaw(prefix, func(_, value []byte) error {
		if found != nil || !bytes.Contains(value, needle) {
			return nil
		}
		var s slim
		if persistence.Decode(value, &s) == nil && s.ReceiptID == id {
			found = s.receipt()
		}
		return nil
	})
	return found
}

// pathNeedles returns what the stored receipts touching the files of rs
// hold: each path as a JSON string.
func pathNeedles(rs []*op.Receipt) [][]byte {
	var out [][]byte
	for _, r := range rs {
		for p := range touched(r) {
			b, _ := json.Marshal(p)
			out = append(out, append([]byte(`"path":`), b...))
		}
	}
	return out
}

// slim is the part of a stored receipt undo reads: decoding only these
// fields (the rest is skipped) keeps a revert's scan of up to 1000
// receipts cheap.
type slim struct {
	ReceiptID     string              `json:"receipt_id"`
	RequestID     string              `json:"request_id"`
	Operation     string              `json:"operation"`
	RepoID        string              `json:"repo_id"`
	CheckoutID    string              `json:"checkout_id"`
	FencingToken  uint64              `json:"fencing_token"`
	FencingTokens map[string]uint64   `json:"fencing_tokens"`
	Changes       []patch.Change      `json:"changes"`
	Commit        string              `json:"commit,omitempty"`
	PreImages     []preimage.Ref      `json:"pre_images,omitempty"`
	Reverts       []string            `json:"reverts,omitempty"`
	RunID         string              `json:"run_id,omitempty"`
	SpanID        string              `json:"span_id,omitempty"`
	At            time.Time           `json:"at"`
	Refs          []op.RefChange      `json:"refs,omitempty"`
	GitFiles      []preimage.Ref      `json:"git_files,omitempty"`
	Resources     *messages.Resources `json:"resources,omitempty"`
}

func (s *slim) receipt() *op.Receipt {
	return &op.Receipt{ReceiptID: s.ReceiptID, RequestID: s.RequestID, Operation: s.Operation, RepoID: s.RepoID, CheckoutID: s.CheckoutID,
		FencingToken: s.FencingToken, FencingTokens: s.FencingTokens, Changes: s.Changes, Commit: s.Commit, PreImages: s.PreImages,
		Reverts: s.Reverts, RunID: s.RunID, SpanID: s.SpanID, At: s.At, Refs: s.Refs, GitFiles: s.GitFiles, Resources: s.Resources}
}

// planWrite plans a revert of the receipts pick chooses: the paths and
// keys are those of the plan made now; under the lease the plan is made
// again from the receipts then, and must stay within the leased paths.
func planWrite(c *op.Call, name, requestID, approvalID string, waitMs int, hashed any, cascade bool, targetID string, pick func([]*op.Receipt) (map[string]bool, error)) (*op.Plan, error) {
	env := c.Env
	co := c.Repo.Repo.CheckoutID
	var picked []*op.Receipt // the targets as Prepare found them
	var needles [][]byte     // without cascade: the targets' files
	if targetID != "" && !cascade {
		if t := findReceipt(env.Store, c.Repo.Repo.ID, targetID); t != nil {
			needles = pathNeedles([]*op.Receipt{t})
		}
	}
	build := func() (*revertPlan, error) {
		all, err := loadReceipts(env.Store, c.Repo.Repo.ID, co, needles...)
		if err != nil {
			return nil, err
		}
		targets, err := pick(all)
		if err != nil {
			return nil, err
		}
		if picked == nil {
			for _, r := range all {
				if targets[r.ReceiptID] {
					picked = append(picked, r)
				}
			}
		}
		return planRevert(all, targets, cascade)
	}
	var paths []string
	pl, err := build()
	if !cascade && picked != nil {
		// Under the lease, read only what can touch the targets' files.
		needles = pathNeedles(picked)
	}
	if err == nil {
		paths = pl.Paths
	} else if picked == nil {
		return nil, err
	} else {
		// A refused plan (REVERT_CONFLICT, a pruned pre-image) is answered
		// by the ledger's request, under the lease of the targets' files,
		// so that a retry of a revert that succeeded replays it.
		seen := map[string]bool{}
		for _, r := range picked {
			for p := range touched(r) {
				if !seen[p] {
					seen[p] = true
					paths = append(paths, p)
				}
			}
		}
		sort.Strings(paths)
	}
	keys := make([]string, len(paths))
	leased := make(map[string]bool, len(paths))
	for i, p := range paths {
		keys[i] = string(lease.PathKey(co, p))
		leased[p] = true
	}
	if gs := gitStateOf(picked); len(gs.refs) > 0 || len(gs.files) > 0 {
		// Refs and the index are set back too: under the index's key,
		// as git_stage and git_commit write them (gitstate.go).
		keys = append(keys, string(lease.GitIndexKey(co)))
	}
	t := op.MutationTxn(op.Txn{Op: name, RequestID: requestID, Hashed: hashed, Paths: paths, Keys: keys,
		Run: func(ctx context.Context, l runtime.Lease, r *op.Receipt) error {
			// The verification gate ran before (op.Call.Apply).
			pl, err := build() // under the lease: no fenced write of these files runs now
			if err != nil {
				return err
			}
			for _, p := range pl.Paths {
				if !leased[p] {
					return errs.New(errs.ConcurrentModification, "a write to %q joined the revert while it waited for its lease; retry with a new request_id", p).With("path", p)
				}
			}
			ops, size, err := restoreOps(env.PreImages, c.Root.Path(), pl)
			if err != nil {
				return err
			}
			for _, t := range pl.Targets {
				r.Reverts = append(r.Reverts, t.ReceiptID)
			}
			// The refs of git-state jobs (gitstate.go): checked before
			// any file is written, set back after.
			gs := gitStateOf(pl.Targets)
			if err := gs.check(ctx, env, c.Root.Path()); err != nil {
				return err
			}
			dirs := dirStates(pl.Targets)
			if len(ops) == 0 {
				// Every file already is as it was: nothing to write but
				// the directories a job made or removed.
				if err := restoreDirs(c.Root, dirs, l.Fence); err != nil {
					return err
				}
				return gs.restore(ctx, env, c.Root.Path(), r)
			}
			res, err := patch.Apply(ctx, c.Root, ops, patch.Options{Fence: l.Fence, Expect: pl.Expect, PreImage: c.KeepPreImages(r),
				MaxOps: len(ops) + 1, MaxBytes: size + 1})
			if err != nil {
				return err
			}
			if err := restoreDirs(c.Root, dirs, l.Fence); err != nil {
				return err
			}
			// A file already as it was is not written: it is no change of the
			// revert's (and not a write a later revert would conflict with).
			kept := map[string]bool{}
			for _, ref := range r.PreImages {
				kept[ref.Path] = true
			}
			for _, ch := range res.Changes {
				if ch.Before != ch.After || kept[ch.Path] {
					r.Changes = append(r.Changes, ch)
				}
			}
			return gs.restore(ctx, env, c.Root.Path(), r)
		}})
	t.Wait = clampWait(waitMs)
	return &op.Plan{
		Gate: govern.Input{Paths: paths, Writes: true, Args: hashed, ApprovalID: approvalID,
			Route: &route.Decision{Mode: route.Fast, Reasons: []string{name + " is a Fast Path mutation under a lease (it restores files from their pre-images)"},
				Risk: 30, EstimatedClass: route.Short, Tier: route.BoundedWork, Mutation: true}},
		Write: &t,
	}, nil
}

// restoreOps expresses a revert as patch operations: a write of the old
// content and mode, or a delete of a file the reverted writes created.
func restoreOps(store *preimage.Store, root string, pl *revertPlan) ([]patch.Op, int, error) {
	var ops []patch.Op
	size := 0
	for _, p := range pl.Paths {
		ref := pl.Final[p]
		switch {
		case ref.Absent:
			if pl.Expect[p] != "" {
				ops = append(ops, patch.Op{Op: patch.OpDelete, Path: p})
			}
		case ref.Link:
			// A job's receipt keeps a link's target (a patch's does not:
			// its ref is NotKept, refused by the plan).
			if store == nil {
				return nil, 0, errs.New(errs.NotFound, "pre-images are off in this harness: %q cannot be restored", p).With("path", p)
			}
			target, err := store.Get(ref.SHA256)
			if err != nil {
				return nil, 0, errs.From(err).With("path", p)
			}
			size += len(target)
			ops = append(ops, patch.Op{Op: patch.OpWrite, Path: p, Content: string(target), Link: true})
		default:
			if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				// A job made it a link: the link goes, the file comes back.
				ops = append(ops, patch.Op{Op: patch.OpDelete, Path: p})
			}
			if store == nil {
				return nil, 0, errs.New(errs.NotFound, "pre-images are off in this harness: %q cannot be restored", p).With("path", p)
			}
			data, err := store.Get(ref.SHA256)
			if err != nil {
				e := errs.From(err)
				return nil, 0, e.With("path", p)
			}
			size += len(data)
			ops = append(ops, patch.Op{Op: patch.OpWrite, Path: p, Content: string(data), Mode: ref.Mode})
		}
	}
	return ops, size, nil
}

// clampWait is wait_ms as a duration, at most 30 s.
func clampWait(ms int) time.Duration {
	return time.Duration(min(max(ms, 0), 30000)) * time.Millisecond
}

// cutoff is the to_span of run_revert: its span, start and receipt.
type cutoff struct {
	span, receipt string
	start         time.Time
}

// prepareRunRevert finds the run's receipts after to_span and plans their
// revert, refusing on a later write outside them.
func prepareRunRevert(ctx context.Context, c *op.Call, a RunRevertArgs) (*op.Plan, error) {
	if a.RunID == "" {
		return nil, errs.New(errs.InvalidArgument, "run_id is required (run_list lists the runs)")
	}
	env := c.Env
	repoID := a.RepoID
	if repoID == "" {
		repos := map[string]bool{}
		_ = env.Store.Scan([]byte(persistence.PrefixReceipt), func(_ []byte, decode func(any) error) error {
			var s slim
			if decode(&s) == nil && s.RunID == a.RunID && s.RepoID != "" && len(touched(s.receipt())) > 0 {
				repos[s.RepoID] = true
			}
			return nil
		})
		switch len(repos) {
		case 0:
			return nil, errs.New(errs.NotFound, "run %q has no receipts of file writes: nothing to revert", a.RunID).With("run_id", a.RunID)
		case 1:
			for id := range repos {
				repoID = id
			}
		default:
			ids := make([]string, 0, len(repos))
			for id := range repos {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			return nil, errs.New(errs.InvalidArgument, "run %q wrote to %d repositories: pass repo_id (one of %v)", a.RunID, len(ids), ids).With("repo_ids", ids)
		}
	}
	if err := c.Resolve(repoID); err != nil {
		return nil, err
	}
	var cut *cutoff
	if a.ToSpan != "" {
		if env.Runs == nil {
			return nil, errs.New(errs.InvalidArgument, "runs are off in this harness: to_span cannot be found")
		}
		got, err := env.Runs.Get(ctx, a.RunID, true)
		if err != nil {
			return nil, err
		}
		for _, s := range got.Spans {
			if s.SpanID == a.ToSpan {
				cut = &cutoff{span: s.SpanID, start: s.Start, receipt: s.ReceiptID}
			}
		}
		if cut == nil {
			return nil, errs.New(errs.NotFound, "span %q is not a span of run %s (run_status with include_spans lists them)", a.ToSpan, a.RunID).
				With("run_id", a.RunID).With("span_id", a.ToSpan)
		}
	}
	h := a
	h.WaitMs, h.ApprovalID = 0, ""
	return planWrite(c, "run_revert", a.RequestID, a.ApprovalID, a.WaitMs, h, false, "", func(all []*op.Receipt) (map[string]bool, error) {
		targets := map[string]bool{}
		undoneBy := liveness(all) // a write already reverted needs no revert
		var keep *op.Receipt
		if cut != nil && cut.receipt != "" {
			for _, r := range all {
				if r.ReceiptID == cut.receipt {
					keep = r
				}
			}
		}
		// The run's writes after the cut; of those, the ones that stand,
		// but not its reverts of its own writes after the cut (the two
		// cancel: both stay as they are).
		after := map[string]bool{}
		for _, r := range all {
			if r.RunID != a.RunID || len(touched(r)) == 0 && len(r.Reverts) == 0 {
				continue
			}
			if cut != nil && (r.SpanID == cut.span || !r.At.After(cut.start) || (keep != nil && !r.At.After(keep.At))) {
				continue
			}
			after[r.ReceiptID] = true
		}
		for _, r := range all {
			if _, undone := undoneBy[r.ReceiptID]; undone || !after[r.ReceiptID] || len(touched(r)) == 0 {
				continue
			}
			own := len(r.Reverts) > 0
			for _, t := range r.Reverts {
				own = own && after[t]
			}
			if !own {
				targets[r.ReceiptID] = true
			}
		}
		if len(targets) == 0 {
			return nil, errs.New(errs.NotFound, "run %q has no file writes to revert in repository %s after %q", a.RunID, c.Repo.Repo.ID, orAll(a.ToSpan)).With("run_id", a.RunID)
		}
		return targets, nil
	})
}

func orAll(s string) string {
	if s == "" {
		return "its start"
	}
	return s
}
