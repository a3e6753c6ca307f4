package undo

import (
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// ListArgs are the arguments of receipt_list.
type ListArgs struct {
	RepoID string `json:"repo_id,omitempty" jsonschema:"only receipts of this repository"`
	RunID  string `json:"run_id,omitempty" jsonschema:"only receipts of this run"`
	Limit  int    `json:"limit,omitempty" jsonschema:"default 50, max 1000"`
}

// ListResult is the result of receipt_list.
type ListResult struct {
	Receipts []Item `json:"receipts"`
	op.Meta
}

// Item is one receipt of receipt_list.
type Item struct {
	ReceiptID    string            `json:"receipt_id"`
	RequestID    string            `json:"request_id"`
	Operation    string            `json:"operation"`
	RepoID       string            `json:"repo_id"`
	RunID        string            `json:"run_id,omitempty"`
	SpanID       string            `json:"span_id,omitempty"`
	At           time.Time         `json:"at"`
	FencingToken uint64            `json:"fencing_token"`
	Tokens       map[string]uint64 `json:"fencing_tokens,omitempty"`
	// Paths are the files whose content the write changed.
	Paths     []string       `json:"paths"`
	PreImages []preimage.Ref `json:"pre_images,omitempty"`
	Reverts   []string       `json:"reverts,omitempty"`
	Commit    string         `json:"commit,omitempty"`
	// Revertable: revert of this receipt alone (no cascade) would run now;
	// NotRevertable says why not (and LaterReceipts name the writes that
	// changed its files again: revert with cascade, or those first).
	Revertable    bool     `json:"revertable"`
	NotRevertable string   `json:"not_revertable,omitempty"`
	LaterReceipts []string `json:"later_receipts,omitempty"`
	// Resources are a job's figures (CPU, peak RSS, I/O, processes), on
	// the receipt of a job that wrote its checkout in place.
	Resources *messages.Resources `json:"resources,omitempty"`
}

func list(c *op.Call, a ListArgs) (*ListResult, error) {
	limit := a.Limit
	switch {
	case limit < 0 || limit > maxListLimit:
		return nil, errs.New(errs.InvalidArgument, "limit %d: between 1 and %d (0 = %d)", limit, maxListLimit, defaultListLimit)
	case limit == 0:
		limit = defaultListLimit
	}
	env := c.Env
	byRepo := map[string][]*op.Receipt{}
	var order []*op.Receipt
	if a.RepoID != "" {
		if _, err := env.Repo(a.RepoID); err != nil {
			return nil, err
		}
		all, err := loadReceipts(env.Store, a.RepoID, "")
		if err != nil {
			return nil, err
		}
		byRepo[a.RepoID], order = all, all
	} else {
		err := env.Store.Scan([]byte(persistence.PrefixReceipt), func(_ []byte, decode func(any) error) error {
			var s slim
			if decode(&s) != nil || s.ReceiptID == "" || s.RepoID == "" {
				return nil
			}
			r := s.receipt()
			byRepo[r.RepoID] = append(byRepo[r.RepoID], r)
			order = append(order, r)
			return nil
		})
		if err != nil {
			return nil, errs.Wrap(errs.Internal, err, "read receipts: %v", err)
		}
	}
	var picked []*op.Receipt
	for _, r := range order {
		if a.RunID == "" || r.RunID == a.RunID {
			picked = append(picked, r)
		}
	}
	sortNewest(picked)
	if len(picked) > limit {
		picked = picked[:limit]
	}
	out := &ListResult{Receipts: make([]Item, 0, len(picked))}
	hists := map[string]*history{}
	for _, r := range picked {
		it := Item{Resources: r.Resources, ReceiptID: r.ReceiptID, RequestID: r.RequestID, Operation: r.Operation, RepoID: r.RepoID, RunID: r.RunID, SpanID: r.SpanID,
			At: r.At, FencingToken: r.FencingToken, Tokens: r.FencingTokens, PreImages: r.PreImages, Reverts: r.Reverts, Commit: r.Commit, Paths: []string{}}
		files := touched(r)
		for p := range files {
			it.Paths = append(it.Paths, p)
		}
		sortStrings(it.Paths)
		key := r.RepoID + "\x00" + r.CheckoutID
		if hists[key] == nil {
			var same []*op.Receipt
			for _, o := range byRepo[r.RepoID] {
				if o.CheckoutID == r.CheckoutID || o.CheckoutID == "" {
					same = append(same, o)
				}
			}
			hists[key] = newHistory(same)
		}
		it.Revertable, it.NotRevertable, it.LaterReceipts = revertable(env.PreImages, hists[key], r, len(files))
		out.Receipts = append(out.Receipts, it)
	}
	return out, nil
}

// revertable reports whether r alone can be reverted now, and why not.
func revertable(store *preimage.Store, hist *history, r *op.Receipt, nfiles int) (bool, string, []string) {
	if nfiles == 0 {
		return false, "it changed no file content (nothing to revert)", nil
	}
	pl, err := hist.plan(map[string]bool{r.ReceiptID: true}, false)
	if err != nil {
		e := errs.From(err)
		var later []string
		if ls, ok := e.Details["later"].([]laterWrite); ok {
			for _, l := range ls {
				later = append(later, l.ReceiptID)
			}
		}
		return false, e.Message, later
	}
	for _, p := range pl.Paths {
		ref := pl.Final[p]
		if ref.Absent {
			continue
		}
		if store == nil || !store.Has(ref.SHA256) {
			return false, "the pre-image of " + p + " is no longer kept (PreImageMaxAge, PreImageMaxBytes)", nil
		}
	}
	return true, "", nil
}
