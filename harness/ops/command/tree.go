package command

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Who changed the work tree while a read-only command ran
// (RunCommandResult.TreeChangedBy).
const (
	// ChangedByCommand: no other harnessd writer held the checkout, so the
	// command itself (or a process outside harnessd, such as an editor)
	// changed it. Impossible under the sandbox's read-only profile.
	ChangedByCommand = "command"
	// ChangedByOthers: other writers held write leases on the checkout
	// while the command ran (ConcurrentWrites), and every change is under
	// what they held.
	ChangedByOthers = "others"
	// ChangedByCommandAndOthers: other writers held the checkout, but some
	// change is under nothing they held: the command or a process outside
	// harnessd made that one.
	ChangedByCommandAndOthers = "command_and_others"
)

// ConcurrentWrite is another writer that held a write lease on the
// checkout while a command ran.
type ConcurrentWrite struct {
	Operation string `json:"operation"`
	// Owner is the writer's request_id (a mutation) or job id.
	Owner   string `json:"owner"`
	LeaseID string `json:"lease_id"`
	// ReceiptID is its receipt, once stored (a write in flight, a failed
	// one or a job has none).
	ReceiptID string `json:"receipt_id,omitempty"`
	RunID     string `json:"run_id,omitempty"`
}

// treeState is a snapshot of the work tree: the fingerprint of TreeDigest
// and, per changed or untracked path, its status and stamp, so two
// snapshots tell which paths changed.
type treeState struct {
	digest string
	head   string
	paths  map[string]string // rel path -> status and stamp
}

// statusFunc returns the status of a work tree.
type statusFunc func(ctx context.Context) (gitx.Status, error)

// gitStatusOf is the status of root by running git.
func gitStatusOf(git *gitx.Git, root string) statusFunc {
	return func(ctx context.Context) (gitx.Status, error) { return git.Status(ctx, root) }
}

// snapshotTree takes a treeState: the porcelain status (status; from the
// live index when the checkout has one) plus the size and modification
// time of every changed or untracked file.
func snapshotTree(ctx context.Context, status statusFunc, root string) (treeState, error) {
	st, err := status(ctx)
	if err != nil {
		return treeState{}, err
	}
	ts := treeState{head: st.Head, paths: map[string]string{}}
	sum := sha256.New()
	add := func(s string) { sum.Write([]byte(s)); sum.Write([]byte{0}) }
	add(st.Head)
	stamp := func(status, rel string) {
		s := status + "\x00"
		add(rel)
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			v := strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10) + ":" + fi.Mode().String()
			add(v)
			s += v
		}
		ts.paths[rel] += s + "\x00"
	}
	for _, es := range [][]gitx.Entry{st.Staged, st.Unstaged, st.Conflicted} {
		for _, e := range es {
			add(e.Status)
			stamp(e.Status, e.Path)
		}
	}
	for _, p := range st.Untracked {
		stamp("untracked", p)
	}
	ts.digest = hex.EncodeToString(sum.Sum(nil))
	return ts, nil
}

// changedSince returns the paths whose status or stamp differ between b
// (before) and a (after), sorted, and whether HEAD moved.
func (a treeState) changedSince(b treeState) (paths []string, head bool) {
	for p, v := range a.paths {
		if b.paths[p] != v {
			paths = append(paths, p)
		}
	}
	for p := range b.paths {
		if _, ok := a.paths[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths, a.head != b.head
}

// attribute says who changed the tree, given the leases other writers
// held on checkout while the command ran (held) and what changed: the
// changed paths and whether HEAD moved. A writer is concerned by a change
// under a key it held (a path key over the path, the index key for any
// path: staging changes a path's status without touching the file, the
// HEAD key for HEAD). It returns ChangedByOthers when every change
// concerns some writer, ChangedByCommand when none does, else
// ChangedByCommandAndOthers; the writers concerned, in the order of held;
// and the changes that concern none ("HEAD" for HEAD).
func attribute(checkout string, held []messages.HeldLease, paths []string, head bool) (by string, writers []messages.HeldLease, unheld []string) {
	concerned := make([]bool, len(held))
	covers := func(k lease.Key) bool {
		hit := false
		for i, l := range held {
			for _, hk := range l.Keys {
				if lease.Overlaps(lease.Key(hk), k) {
					concerned[i], hit = true, true
					break
				}
			}
		}
		return hit
	}
	index := covers(lease.GitIndexKey(checkout))
	for _, p := range paths {
		if !covers(lease.PathKey(checkout, p)) && !index {
			unheld = append(unheld, p)
		}
	}
	if head && !covers(lease.GitHeadKey(checkout)) {
		unheld = append(unheld, "HEAD")
	}
	for i, l := range held {
		if concerned[i] {
			writers = append(writers, l)
		}
	}
	switch {
	case len(writers) == 0:
		return ChangedByCommand, nil, unheld
	case len(unheld) == 0:
		return ChangedByOthers, writers, nil
	}
	return ChangedByCommandAndOthers, writers, unheld
}

// concurrentWrites returns the leases other writers held on the call's
// checkout at some moment between since and until (one round trip to the
// checkout), and whether the checkout's memory reached back that far.
func concurrentWrites(ctx context.Context, c *op.Call, since, until time.Time) ([]messages.HeldLease, bool, error) {
	if c.Env.RT == nil || c.Repo.Checkout == nil {
		return nil, true, nil
	}
	h, err := c.Env.RT.LeaseHistory(ctx, c.Repo, since)
	if err != nil {
		return nil, false, err
	}
	held := h.Leases[:0]
	for _, l := range h.Leases {
		if !l.Granted.After(until) {
			held = append(held, l)
		}
	}
	return held, h.Complete, nil
}

// describeWrites names the writers of held, each with its receipt when
// stored: receipts of the repository stored since since (their keys are
// ordered by the time they were stored, so older ones are skipped
// without decoding), matched by lease, plus any other receipt of a write
// that ended by until. It returns the writers and the receipt ids.
func describeWrites(c *op.Call, held []messages.HeldLease, since, until time.Time) ([]ConcurrentWrite, []string) {
	writes := make([]ConcurrentWrite, len(held))
	byLease := make(map[string]int, len(held))
	for i, l := range held {
		writes[i] = ConcurrentWrite{Operation: l.Operation, Owner: l.Owner, LeaseID: l.ID, RunID: l.RunID}
		byLease[l.ID] = i
	}
	var receipts []string
	if c.Env.Store == nil {
		return writes, receipts
	}
	prefix := persistence.ReceiptPrefix(c.Repo.Repo.ID)
	from := uint64(max(since.UnixNano(), 0))
	// Receipts are keyed by time: read from the command's start, not the
	// repository's whole history.
	_ = c.Env.Store.ScanFrom(prefix, persistence.ReceiptKey(c.Repo.Repo.ID, from), func(key []byte, decode func(any) error) error {
		if seq, ok := persistence.SeqOf(key); !ok || seq < from {
			return nil
		}
		var r op.Receipt
		if decode(&r) != nil {
			return nil
		}
		i, ok := byLease[r.LeaseID]
		if ok {
			writes[i].ReceiptID = r.ReceiptID
		}
		if ok || (!r.At.IsZero() && !r.At.After(until)) {
			receipts = append(receipts, r.ReceiptID)
		}
		return nil
	})
	return writes, receipts
}

// plural returns "1 path" or "n paths".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// clipList joins at most 5 names ("the work tree" for none).
func clipList(names []string) string {
	if len(names) == 0 {
		return "the work tree"
	}
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + ", ..."
	}
	return strings.Join(names, ", ")
}
