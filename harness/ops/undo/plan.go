package undo

import (
	"sort"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/preimage"
)

// file is what one receipt did to one file: its digest before and after
// ("" = absent) and the pre-image it names (nil when it names none).
type file struct {
	before, after string
	ref           *preimage.Ref
}

// touched returns the files a receipt changed the content of: the paths
// of its changes that carry a digest (a staged or committed path carries
// none: git_stage and git_commit change no file of the work tree) and of
// its pre-images.
func touched(r *op.Receipt) map[string]*file {
	out := map[string]*file{}
	for _, ch := range r.Changes {
		if ch.Before == "" && ch.After == "" {
			continue
		}
		f := out[ch.Path]
		if f == nil {
			f = &file{before: ch.Before}
			out[ch.Path] = f
		}
		f.after = ch.After
	}
	for i := range r.PreImages {
		ref := &r.PreImages[i]
		if f := out[ref.Path]; f != nil {
			f.ref = ref
		}
	}
	if len(r.PreImages) > 0 {
		// A receipt that keeps pre-images has one for every file it
		// changed: a path without one was written with its own bytes.
		for p, f := range out {
			if f.ref == nil && f.before == f.after {
				delete(out, p)
			}
		}
	}
	return out
}

// later reports whether a wrote path p after b: by the fencing tokens of
// the path's key when both receipts hold one (each lease of a key has a
// greater token), else by time.
func later(a, b *op.Receipt, p string) bool {
	key := string(lease.PathKey(a.CheckoutID, p))
	ta, oka := a.FencingTokens[key]
	tb, okb := b.FencingTokens[key]
	if oka && okb && ta != tb {
		return ta > tb
	}
	if !a.At.Equal(b.At) {
		return a.At.After(b.At)
	}
	return a.ReceiptID > b.ReceiptID
}

// laterWrite is a receipt outside the reverted set that wrote some of its
// files after it.
type laterWrite struct {
	ReceiptID string   `json:"receipt_id"`
	Operation string   `json:"operation"`
	RunID     string   `json:"run_id,omitempty"`
	Paths     []string `json:"paths"`
}

// revertPlan is what a revert restores: per path the pre-image to put
// back and the digest the file must have now.
type revertPlan struct {
	Targets []*op.Receipt // newest first
	Paths   []string      // sorted
	Final   map[string]preimage.Ref
	Expect  map[string]string
}

// liveness tells, for every receipt, whether its write stands: a
// receipt is undone when a revert that stands lists it (a revert of a
// revert makes the first revert's receipts stand again). It returns the
// receipts undone, each with the revert that undid it.
func liveness(all []*op.Receipt) map[string]string {
	byTime := append([]*op.Receipt(nil), all...)
	sortNewest(byTime)
	undoneBy := map[string]string{}
	for _, r := range byTime {
		if _, undone := undoneBy[r.ReceiptID]; undone {
			continue
		}
		for _, t := range r.Reverts {
			if _, ok := undoneBy[t]; !ok {
				undoneBy[t] = r.ReceiptID
			}
		}
	}
	return undoneBy
}

// planRevert plans the revert of targets (receipt ids) over all, the
// receipts of the checkout. Per file of the set, a receipt outside it
// that wrote the file after a member is
//   - nothing to fear when its write no longer stands (a revert undid it)
//     or it is a standing revert of receipts outside the set (it undid
//     later writes): such receipts only tell what the file holds now;
//   - else a conflict: with cascade it joins the set (until none is left),
//     without, the answer is REVERT_CONFLICT naming them. A target that
//     was already reverted conflicts with the revert that undid it.
//
// Each file goes back to the pre-image of the set's oldest write of it,
// and must now have the digest of the newest write of it.
func planRevert(all []*op.Receipt, targets map[string]bool, cascade bool) (*revertPlan, error) {
	return newHistory(all).plan(targets, cascade)
}

// history is the receipts of a checkout with what planning needs of
// them, computed once (receipt_list plans one revert per receipt).
type history struct {
	all      []*op.Receipt
	files    map[*op.Receipt]map[string]*file
	undoneBy map[string]string
	byID     map[string]*op.Receipt
}

func newHistory(all []*op.Receipt) *history {
	h := &history{all: all, files: make(map[*op.Receipt]map[string]*file, len(all)), undoneBy: liveness(all), byID: make(map[string]*op.Receipt, len(all))}
	for _, r := range all {
		h.files[r] = touched(r)
		h.byID[r.ReceiptID] = r
	}
	return h
}

func (h *history) plan(targets map[string]bool, cascade bool) (*revertPlan, error) {
	all, files, undoneBy, byID := h.all, h.files, h.undoneBy, h.byID
	in := map[string]bool{}
	var members []*op.Receipt
	for id := range targets {
		in[id] = true
		if r := byID[id]; r != nil {
			members = append(members, r)
		}
	}
	// A target a standing revert undid is not there to revert, even where
	// that revert left a file as it was (a write and a later delete of the
	// same file, undone together, change nothing): reverting it again
	// would write a receipt of nothing, and the model of undo (a write is
	// reverted once; a revert of its revert brings it back) would break.
	ids := make([]string, 0, len(targets))
	for id := range targets {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if by, undone := undoneBy[id]; undone {
			return nil, errs.New(errs.RevertConflict, "receipt %s was already reverted by %s; revert %s to bring it back", id, by, by).
				With("receipt_id", id).With("reverted_by", by).
				With("later", []laterWrite{{ReceiptID: by, Operation: opOf(byID[by]), Paths: []string{}}})
		}
	}
	// absorbable: r, later than the member t on p, changes nothing the
	// revert would lose: its write was undone, or it is a standing revert
	// of writes of p that all came after t (a revert of an older write of
	// p is a conflict: restoring t's pre-image would bring it back).
	absorbable := func(r, t *op.Receipt, p string) bool {
		if _, undone := undoneBy[r.ReceiptID]; undone {
			return true
		}
		if len(r.Reverts) == 0 {
			return false
		}
		for _, id := range r.Reverts {
			x := byID[id]
			if in[id] {
				return false
			}
			if x == nil {
				continue // pruned, or not read: it did not write p
			}
			if _, wrote := files[x][p]; wrote && !later(x, t, p) {
				return false
			}
		}
		return true
	}
	var absorbed map[string][]*op.Receipt // path -> receipts that only tell its state
	for {
		var conflicts []laterWrite
		var conflictPaths []string
		seenPath := map[string]bool{}
		absorbed = map[string][]*op.Receipt{}
		for _, r := range all {
			if in[r.ReceiptID] {
				continue
			}
			var paths []string
			for p := range files[r] {
				for _, t := range members {
					if _, ok := files[t][p]; ok && later(r, t, p) {
						if absorbable(r, t, p) {
							absorbed[p] = append(absorbed[p], r)
						} else {
							paths = append(paths, p)
						}
						break
					}
				}
			}
			if len(paths) == 0 {
				continue
			}
			sort.Strings(paths)
			conflicts = append(conflicts, laterWrite{ReceiptID: r.ReceiptID, Operation: r.Operation, RunID: r.RunID, Paths: paths})
			for _, p := range paths {
				if !seenPath[p] {
					seenPath[p] = true
					conflictPaths = append(conflictPaths, p)
				}
			}
		}
		if len(conflicts) == 0 {
			break
		}
		if !cascade {
			sort.Strings(conflictPaths)
			ids := make([]string, len(conflicts))
			for i, c := range conflicts {
				ids[i] = c.ReceiptID
			}
			return nil, errs.New(errs.RevertConflict, "later writes touched the same files: %s (paths %s); revert them first, or pass cascade: true to revert them too, newest first",
				strings.Join(ids, ", "), strings.Join(conflictPaths, ", ")).
				With("later", conflicts).With("paths", conflictPaths)
		}
		for _, c := range conflicts {
			in[c.ReceiptID] = true
			members = append(members, byID[c.ReceiptID])
		}
	}
	var set []*op.Receipt
	for _, r := range all {
		if in[r.ReceiptID] {
			set = append(set, r)
		}
	}
	if len(set) != len(in) {
		for id := range in {
			found := false
			for _, r := range set {
				found = found || r.ReceiptID == id
			}
			if !found {
				return nil, errs.New(errs.NotFound, "receipt %q is not among the repository's receipts (receipt_list lists them; the oldest beyond 1000 per repository are pruned)", id).With("receipt_id", id)
			}
		}
	}
	byPath := map[string][]*op.Receipt{}
	for _, r := range set {
		for p := range files[r] {
			byPath[p] = append(byPath[p], r)
		}
	}
	pl := &revertPlan{Final: map[string]preimage.Ref{}, Expect: map[string]string{}}
	for p, rs := range byPath {
		rs = append(rs, absorbed[p]...)
		sort.Slice(rs, func(i, j int) bool { return later(rs[j], rs[i], p) })
		first := files[rs[0]][p]
		if first.ref == nil {
			return nil, errs.New(errs.InvalidArgument, "receipt %s (%s) names no pre-image of %q: it was written without one (before pre-images were kept, or by an operation that keeps none), so it cannot be reverted", rs[0].ReceiptID, rs[0].Operation, p).
				With("receipt_id", rs[0].ReceiptID).With("path", p)
		}
		if first.ref.NotKept != "" {
			return nil, errs.New(errs.NotFound, "the pre-image of %q in receipt %s was not kept: %s", p, rs[0].ReceiptID, first.ref.NotKept).
				With("receipt_id", rs[0].ReceiptID).With("path", p)
		}
		for i := 1; i < len(rs); i++ {
			if prev, cur := files[rs[i-1]][p], files[rs[i]][p]; prev.after != cur.before {
				return nil, errs.New(errs.PatchConflict, "%q was changed outside harnessd's receipts between %s and %s (a command or job wrote it): it cannot be restored without losing that change", p, rs[i-1].ReceiptID, rs[i].ReceiptID).
					With("path", p).With("receipt_ids", []string{rs[i-1].ReceiptID, rs[i].ReceiptID})
			}
		}
		pl.Final[p] = *first.ref
		pl.Expect[p] = files[rs[len(rs)-1]][p].after
		pl.Paths = append(pl.Paths, p)
	}
	sort.Strings(pl.Paths)
	sort.Slice(set, func(i, j int) bool { return newer(set[i], set[j]) })
	pl.Targets = set
	return pl, nil
}

func opOf(r *op.Receipt) string {
	if r == nil {
		return ""
	}
	return r.Operation
}

// newer orders receipts newest first: by their greatest fencing token on
// a shared path when they share one, else by time.
func newer(a, b *op.Receipt) bool {
	for p := range touched(a) {
		if _, ok := touched(b)[p]; ok {
			return later(a, b, p)
		}
	}
	if !a.At.Equal(b.At) {
		return a.At.After(b.At)
	}
	return a.ReceiptID > b.ReceiptID
}

// sortNewest orders receipts newest first.
func sortNewest(rs []*op.Receipt) {
	sort.SliceStable(rs, func(i, j int) bool {
		if !rs[i].At.Equal(rs[j].At) {
			return rs[i].At.After(rs[j].At)
		}
		return rs[i].ReceiptID > rs[j].ReceiptID
	})
}

func sortStrings(s []string) { sort.Strings(s) }
