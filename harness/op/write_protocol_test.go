package op_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// The mutation engine's numbered protocol (Call.Write) against the
// runtime's fakes: the in-memory ledger with the real transition rules,
// leases that are granted at once and can be revoked, an audit log that
// keeps what it is given. No actor runs.

type putArgs struct {
	RepoID    string `json:"repo_id"`
	RequestID string `json:"request_id,omitempty" required:"true"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	WaitMs    int    `json:"wait_ms,omitempty"`
}

// writeRig is a pipeline of put_file over the fakes, in a real checkout.
type writeRig struct {
	p      *op.Pipeline
	root   string
	store  *persistence.Store
	ledger *runtime.FakeLedger
	leases *runtime.FakeLeases
	audit  *runtime.FakeAudit
	runs   atomic.Int32 // how often put_file's write ran
	// revoke makes the next write lose its lease before it fences.
	revoke atomic.Bool
}

func newWriteRig(t *testing.T) *writeRig {
	t.Helper()
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	id, err := pathsafe.IdentityOf(root)
	if err != nil {
		t.Fatal(err)
	}
	entry := runtime.RepoEntry{Repo: messages.Repository{ID: "repo_1", CheckoutID: "co_1", Root: root, Identity: id}}
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := &writeRig{root: root, store: st, ledger: &runtime.FakeLedger{}, leases: &runtime.FakeLeases{}, audit: &runtime.FakeAudit{Store: st}}
	gov, err := govern.New(govern.Config{Audit: w.audit, LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	env := &op.Env{Gov: gov, Ledger: w.ledger, Leases: w.leases, Store: st, Now: time.Now, Logger: zap.NewNop(),
		Lookup: func(id string) (runtime.RepoEntry, bool) { return entry, id == entry.Repo.ID }}
	w.p = op.NewPipeline(op.NewRegistry([]op.Op{w.putOp()}), env)
	return w
}

// putOp writes one file under a lease over it, fencing first.
func (w *writeRig) putOp() op.Op {
	return op.Def(op.Spec[putArgs]{Name: "put_file", Output: op.MutationResult{}, Route: route.Mutation, Toolset: op.Core, Roles: op.WriteRoles,
		ChangesCheckout: true, HashIgnore: []string{"wait_ms"},
		Repo: func(in putArgs) string { return in.RepoID },
		Prepare: func(_ context.Context, c *op.Call, in putArgs) (*op.Plan, error) {
			abs, rel, err := c.Root.ResolveWrite(in.Path)
			if err != nil {
				return nil, err
			}
			txn := op.MutationTxn(op.Txn{Op: "put_file", RequestID: in.RequestID, Hashed: in, Paths: []string{rel}, Keys: []string{"path:co_1:" + rel},
				Run: func(_ context.Context, l runtime.Lease, r *op.Receipt) error {
					w.runs.Add(1)
					if w.revoke.CompareAndSwap(true, false) {
						w.leases.Revoke(l.Info().ID)
					}
					if err := l.Fence(); err != nil {
						return err
					}
					if err := os.WriteFile(abs, []byte(in.Content), 0o644); err != nil {
						return err
					}
					r.Changes = append(r.Changes, patch.Change{Path: rel, Op: "write"})
					return nil
				}})
			return &op.Plan{Gate: govern.Input{Paths: []string{rel}, Writes: true, Args: in}, Write: &txn}, nil
		}})
}

func (w *writeRig) put(t *testing.T, args putArgs) (*op.MutationResult, error) {
	t.Helper()
	args.RepoID = "repo_1"
	b, _ := json.Marshal(args)
	out, err := w.p.Call(context.Background(), "put_file", b)
	if err != nil {
		return nil, err
	}
	return out.(*op.MutationResult), nil
}

func (w *writeRig) ledgerState(t *testing.T, id string) string {
	t.Helper()
	got, err := w.ledger.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Found {
		return "absent"
	}
	return got.Entry.State
}

func (w *writeRig) file(t *testing.T, name string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(w.root, name))
	return string(b)
}

// A write runs once under its lease and is recorded everywhere: the
// ledger's success with the result, a released lease, the audit entry
// naming the receipt, the stored receipt. The same request again replays
// without writing; another input under its request_id is a conflict; a
// field the hash leaves out (wait_ms) changes nothing.
func TestWriteProtocolAgainstFakes(t *testing.T) {
	w := newWriteRig(t)
	res, err := w.put(t, putArgs{RequestID: "req-1", Path: "a.txt", Content: "one\n"})
	if err != nil {
		t.Fatal(err)
	}
	if w.file(t, "a.txt") != "one\n" || w.runs.Load() != 1 {
		t.Fatalf("file %q after %d runs, want one write", w.file(t, "a.txt"), w.runs.Load())
	}
	r := res.Receipt
	if res.Replayed || r.RequestID != "req-1" || r.Operation != "put_file" || r.RepoID != "repo_1" || r.CheckoutID != "co_1" ||
		r.LeaseID != "fake-1" || r.FencingToken != 1 || r.FencingTokens["path:co_1:a.txt"] != 1 || !strings.HasPrefix(r.ReceiptID, "rcpt_") ||
		len(r.Changes) != 1 || r.At.IsZero() || res.Route != "fast" || len(res.Warnings) != 0 {
		t.Fatalf("result %+v", res)
	}
	if n := w.leases.Held(); n != 0 {
		t.Fatalf("%d leases still held after the write", n)
	}
	if s := w.ledgerState(t, "req-1"); s != "succeeded" {
		t.Fatalf("ledger state %q, want succeeded", s)
	}
	var mutations []messages.AuditEntry
	for _, e := range w.audit.Entries() {
		if e.Kind == "mutation" {
			mutations = append(mutations, e)
		}
	}
	if len(mutations) != 1 || mutations[0].Outcome != "succeeded" || mutations[0].RequestID != "req-1" || mutations[0].FencingToken != 1 ||
		mutations[0].Details["receipt_id"] != r.ReceiptID {
		t.Fatalf("audit mutations %+v, want one success naming receipt %s", mutations, r.ReceiptID)
	}
	if n, err := w.store.Count(persistence.ReceiptPrefix("repo_1")); err != nil || n != 1 {
		t.Fatalf("stored receipts %d (%v), want 1", n, err)
	}

	// The same request again: the stored result, nothing written, no lease.
	again, err := w.put(t, putArgs{RequestID: "req-1", Path: "a.txt", Content: "one\n", WaitMs: 500})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.ReceiptID != r.ReceiptID || w.runs.Load() != 1 {
		t.Fatalf("replay %+v after %d runs, want the first receipt replayed without a run", again.Receipt, w.runs.Load())
	}

	// Another input under the same request_id: refused before any write.
	if _, err := w.put(t, putArgs{RequestID: "req-1", Path: "a.txt", Content: "two\n"}); errs.CodeOf(err) != errs.RequestConflict {
		t.Fatalf("another input under req-1: %v, want REQUEST_CONFLICT", err)
	}
	if w.file(t, "a.txt") != "one\n" || w.runs.Load() != 1 {
		t.Fatalf("the conflicting request wrote: %q", w.file(t, "a.txt"))
	}

	// The next write takes a lease with a higher token.
	next, err := w.put(t, putArgs{RequestID: "req-2", Path: "a.txt", Content: "two\n"})
	if err != nil {
		t.Fatal(err)
	}
	if next.FencingToken <= r.FencingToken || next.LeaseID == r.LeaseID {
		t.Fatalf("second write: lease %s token %d after %s token %d", next.LeaseID, next.FencingToken, r.LeaseID, r.FencingToken)
	}
}

// A write that loses its lease before it fences writes nothing and
// answers LEASE_LOST; the ledger records the failure, so the same request
// may run again, and the audit log has the failure with its code.
func TestWriteProtocolLeaseLost(t *testing.T) {
	w := newWriteRig(t)
	w.revoke.Store(true)
	_, err := w.put(t, putArgs{RequestID: "req-lost", Path: "a.txt", Content: "lost\n"})
	if errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("got %v, want LEASE_LOST", err)
	}
	if w.file(t, "a.txt") != "a\n" {
		t.Fatalf("a write without its lease reached the file: %q", w.file(t, "a.txt"))
	}
	if n := w.leases.Held(); n != 0 {
		t.Fatalf("%d leases still held after the failure", n)
	}
	if s := w.ledgerState(t, "req-lost"); s != "failed" {
		t.Fatalf("ledger state %q, want failed", s)
	}
	var failed []messages.AuditEntry
	for _, e := range w.audit.Entries() {
		if e.Kind == "mutation" && e.Outcome == "failed" {
			failed = append(failed, e)
		}
	}
	if len(failed) != 1 || failed[0].Code != string(errs.LeaseLost) {
		t.Fatalf("audited failures %+v, want one LEASE_LOST", failed)
	}
	// The retry of a failed request runs.
	res, err := w.put(t, putArgs{RequestID: "req-lost", Path: "a.txt", Content: "lost\n"})
	if err != nil || res.Replayed || w.file(t, "a.txt") != "lost\n" {
		t.Fatalf("retry: %+v, %v; file %q", res, err, w.file(t, "a.txt"))
	}
	if s := w.ledgerState(t, "req-lost"); s != "succeeded" {
		t.Fatalf("ledger state after the retry %q, want succeeded", s)
	}
}

// What the engine refuses before the ledger: no request_id, and a path
// outside the checkout (Prepare's check); nothing is recorded.
func TestWriteProtocolRefusesEarly(t *testing.T) {
	w := newWriteRig(t)
	if _, err := w.put(t, putArgs{Path: "a.txt", Content: "x"}); errs.CodeOf(err) != errs.RequestIDRequired {
		t.Fatalf("without request_id: %v, want REQUEST_ID_REQUIRED", err)
	}
	if _, err := w.put(t, putArgs{RequestID: "bad id", Path: "a.txt", Content: "x"}); errs.CodeOf(err) != errs.InvalidArgument ||
		!strings.Contains(err.Error(), "allowed are") {
		t.Fatalf("a request_id with a space: %v, want INVALID_ARGUMENT naming the allowed characters", err)
	}
	if _, err := w.put(t, putArgs{RequestID: "req-out", Path: "../outside.txt", Content: "x"}); err == nil {
		t.Fatal("a path outside the checkout was written")
	}
	if s := w.ledgerState(t, "req-out"); s != "absent" || w.runs.Load() != 0 || w.leases.Held() != 0 {
		t.Fatalf("ledger %q, %d runs, %d leases: want nothing recorded", s, w.runs.Load(), w.leases.Held())
	}
	res, err := w.put(t, putArgs{RequestID: "x", Path: "a.txt", Content: "a\n"})
	if err != nil || res.FencingToken != 1 {
		t.Fatalf("the first accepted write: %+v, %v; want token 1 (nothing refused took a lease)", res, err)
	}
}
