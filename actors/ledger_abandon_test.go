package actors

import (
	"errors"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// An abandoned request (it gave up before writing anything) leaves no
// entry, in the store either: the same request begins anew, not as a
// replay, an unknown outcome or a stored failure. Abandon is a
// compare-and-delete on the executing attempt.
func TestLedgerAbandon(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewLedger(st, zap.NewNop(), LedgerConfig{PruneEvery: -1})), "ledger")
	if err != nil {
		t.Fatal(err)
	}
	begin := func(id, hash string) any {
		return request(t, s, pid, messages.LedgerBegin{RequestID: id, Operation: "apply_patch", InputHash: hash, Paths: []string{"a.txt"}})
	}
	want[messages.LedgerBegun](t, begin("r1", "sha256:a"))
	// Another input may not close the executing attempt.
	f := want[messages.Failed](t, request(t, s, pid, messages.LedgerAbandon{RequestID: "r1", InputHash: "sha256:b"}))
	if errs.CodeOf(ErrorOf(f)) != errs.Internal {
		t.Fatalf("abandon with another input: %v, want INTERNAL", ErrorOf(f))
	}
	want[messages.LedgerDone](t, request(t, s, pid, messages.LedgerAbandon{RequestID: "r1", InputHash: "sha256:a"}))
	if g := want[messages.LedgerGot](t, request(t, s, pid, messages.LedgerGet{RequestID: "r1"})); g.Found {
		t.Fatalf("abandoned entry still found: %+v", g.Entry)
	}
	var e ledger.Entry
	if err := st.Get(persistence.LedgerKey("r1"), &e); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("abandoned entry in the store: %+v, %v", e, err)
	}
	// Boot recovery finds nothing executing to mark unknown.
	if err := RecoverLedger(st, nil, e.Updated); err != nil {
		t.Fatal(err)
	}
	b := want[messages.LedgerBegun](t, begin("r1", "sha256:a"))
	if b.Replay || b.Entry.State != string(ledger.StateExecuting) {
		t.Fatalf("begin after abandon: %+v, want a new executing entry", b)
	}
	// A begin right behind an abandon (perhaps in the same group commit)
	// sees the deletion it follows.
	s.Root.Send(pid, messages.LedgerAbandon{RequestID: "r1", InputHash: "sha256:a"})
	b = want[messages.LedgerBegun](t, begin("r1", "sha256:b"))
	if b.Replay || b.Entry.InputHash != "sha256:b" {
		t.Fatalf("begin with another input right after abandon: %+v", b)
	}
	// A finished entry is never abandoned.
	want[messages.LedgerDone](t, request(t, s, pid, messages.LedgerComplete{RequestID: "r1", Result: []byte(`{}`)}))
	f = want[messages.Failed](t, request(t, s, pid, messages.LedgerAbandon{RequestID: "r1", InputHash: "sha256:b"}))
	if errs.CodeOf(ErrorOf(f)) != errs.Internal {
		t.Fatalf("abandon of a succeeded entry: %v", ErrorOf(f))
	}
	if g := want[messages.LedgerGot](t, request(t, s, pid, messages.LedgerGet{RequestID: "r1"})); !g.Found || g.Entry.State != string(ledger.StateSucceeded) {
		t.Fatalf("succeeded entry after a refused abandon: %+v", g)
	}
	// An entry that does not exist is an error, not a silent success.
	f = want[messages.Failed](t, request(t, s, pid, messages.LedgerAbandon{RequestID: "nope", InputHash: "sha256:a"}))
	if errs.CodeOf(ErrorOf(f)) != errs.Internal {
		t.Fatalf("abandon of a missing entry: %v", ErrorOf(f))
	}
}
