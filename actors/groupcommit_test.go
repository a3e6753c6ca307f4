package actors

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// record encodes v under key as a caller hands it to AuditAppend.With.
func record(t *testing.T, key []byte, v any) messages.StoreRecord {
	t.Helper()
	b, err := persistence.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return messages.StoreRecord{Key: key, Value: b}
}

// An append's records are written in the entry's transaction: one synced
// commit for the entry, the head and the records, durable before the
// answer. A record that is not an envelope, has no key or is a fencing
// mark refuses its append (INVALID_ARGUMENT) before anything is sealed,
// so the chain goes on without a gap. While the store fails, the records
// stay buffered with their entry and are written with it once it
// recovers, never apart from it.
func TestAuditWritesRecordsWithTheEntry(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	a := newAudit(st, zap.NewNop(), quietAudit)
	var failing atomic.Bool
	write := a.persist
	a.persist = func(batch []pendingAudit, head audit.Head) error {
		if failing.Load() {
			return errors.New("disk full")
		}
		return write(batch, head)
	}
	pid := spawnAudit(t, s, func() actor.Actor { return a })

	syncs := st.Syncs()
	got := want[messages.AuditAppended](t, request(t, s, pid, messages.AuditAppend{Entry: auditEntry(1),
		With: []messages.StoreRecord{record(t, []byte("ledger/req-1"), map[string]string{"state": "succeeded"}), record(t, []byte("receipt/r1"), 7)}}))
	if got.Seq != 1 {
		t.Fatalf("seq %d, want 1", got.Seq)
	}
	if n := st.Syncs() - syncs; n != 1 {
		t.Fatalf("%d synced commits for an entry and its records, want 1", n)
	}
	var l map[string]string
	var r int
	if err := st.Get([]byte("ledger/req-1"), &l); err != nil || l["state"] != "succeeded" {
		t.Fatalf("ledger record %v, %v", l, err)
	}
	if err := st.Get([]byte("receipt/r1"), &r); err != nil || r != 7 {
		t.Fatalf("receipt record %v, %v", r, err)
	}

	for name, bad := range map[string]messages.StoreRecord{
		"not an envelope": {Key: []byte("ledger/req-2"), Value: []byte(`{"state":"succeeded"}`)},
		"no key":          record(t, nil, 1),
		"a fencing mark":  record(t, persistence.FenceKey("co", "path:co:a"), uint64(9)),
	} {
		f := want[messages.Failed](t, request(t, s, pid, messages.AuditAppend{Entry: auditEntry(2), With: []messages.StoreRecord{bad}}))
		if errs.CodeOf(ErrorOf(f)) != errs.InvalidArgument {
			t.Fatalf("%s: %v, want INVALID_ARGUMENT", name, ErrorOf(f))
		}
	}
	if has, _ := st.Has([]byte("ledger/req-2")); has {
		t.Fatal("a refused record was written")
	}

	failing.Store(true)
	f := want[messages.Failed](t, request(t, s, pid, messages.AuditAppend{Entry: auditEntry(3),
		With: []messages.StoreRecord{record(t, []byte("ledger/req-3"), map[string]string{"state": "succeeded"})}}))
	if errs.CodeOf(ErrorOf(f)) != errs.Unavailable {
		t.Fatalf("append while the store fails: %v, want UNAVAILABLE", ErrorOf(f))
	}
	if has, _ := st.Has([]byte("ledger/req-3")); has {
		t.Fatal("a record was written while its entry was not")
	}
	failing.Store(false)
	want[messages.AuditFlushed](t, request(t, s, pid, messages.AuditFlush{}))
	es := storedAudit(t, st)
	if len(es) != 2 || es[1].Seq != 2 || es[1].RequestID != "req-3" {
		t.Fatalf("stored %+v, want the first entry and the buffered one as seq 2", es)
	}
	if has, _ := st.Has([]byte("ledger/req-3")); !has {
		t.Fatal("the buffered entry was written without its record")
	}
	if v := verifyAudit(t, s, pid); !v.OK || v.Checked != 2 {
		t.Fatalf("verify = %+v, want OK with 2 checked", v)
	}
}

// A deferred completion is decided like a completion (compare-and-set
// from executing) and written by the caller: until the caller's commit
// the ledger still says executing (a retry is in progress), after it the
// request replays. A completion of a request that is not executing is
// refused.
func TestLedgerDeferredCompletion(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewLedger(st, zap.NewNop(), LedgerConfig{PruneEvery: -1})), "ledger")
	if err != nil {
		t.Fatal(err)
	}
	begin := messages.LedgerBegin{RequestID: "r1", Operation: "apply_patch", InputHash: "sha256:a", Paths: []string{"a.txt"}}
	want[messages.LedgerBegun](t, request(t, s, pid, begin))
	syncs := st.Syncs()
	d := want[messages.LedgerDone](t, request(t, s, pid, messages.LedgerComplete{RequestID: "r1", Result: []byte(`{"ok":true}`), Deferred: true}))
	if d.Entry.State != string(ledger.StateSucceeded) || string(d.Record.Key) != string(persistence.LedgerKey("r1")) {
		t.Fatalf("deferred completion %+v", d)
	}
	if n := st.Syncs() - syncs; n != 0 {
		t.Fatalf("a deferred completion wrote %d synced commits, want none", n)
	}
	f := want[messages.Failed](t, request(t, s, pid, begin))
	if errs.CodeOf(ErrorOf(f)) != errs.RequestInProgress {
		t.Fatalf("retry before the caller's commit: %v, want REQUEST_IN_PROGRESS", ErrorOf(f))
	}
	if err := st.Update(true, func(tx *persistence.Txn) error { return tx.PutEncoded(d.Record.Key, d.Record.Value) }); err != nil {
		t.Fatal(err)
	}
	b := want[messages.LedgerBegun](t, request(t, s, pid, begin))
	if !b.Replay || string(b.Entry.Result) != `{"ok":true}` {
		t.Fatalf("retry after the caller's commit: %+v, want a replay of the result", b)
	}
	f = want[messages.Failed](t, request(t, s, pid, messages.LedgerComplete{RequestID: "r1", Result: []byte(`{}`), Deferred: true}))
	if errs.CodeOf(ErrorOf(f)) != errs.Internal {
		t.Fatalf("deferred completion of a succeeded request: %v, want INTERNAL", ErrorOf(f))
	}
	f = want[messages.Failed](t, request(t, s, pid, messages.LedgerComplete{RequestID: "nope", Result: []byte(`{}`), Deferred: true}))
	if errs.CodeOf(ErrorOf(f)) != errs.Internal {
		t.Fatalf("deferred completion of a missing request: %v, want INTERNAL", ErrorOf(f))
	}
}
