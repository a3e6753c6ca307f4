package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A begin and a failure are each one synced commit, answered only once
// written (the write protocol's begin is synced before any file changes:
// docs/DESIGN.md §3).
func TestLedgerBeginAndFailureAreSynced(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewLedger(st, zap.NewNop(), LedgerConfig{PruneEvery: -1})), "ledger")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		msg       any
		syncs     uint64
		wantState ledger.State
	}{
		{"a begin", messages.LedgerBegin{RequestID: "u1", Operation: "apply_patch", InputHash: "sha256:a"}, 1, ledger.StateExecuting},
		{"its failure", messages.LedgerFail{RequestID: "u1", Code: "PATCH_CONFLICT", Message: "no"}, 1, ledger.StateFailed},
		{"its retry", messages.LedgerBegin{RequestID: "u1", Operation: "apply_patch", InputHash: "sha256:a"}, 1, ledger.StateExecuting},
		{"another begin", messages.LedgerBegin{RequestID: "p1", Operation: "apply_patch", InputHash: "sha256:b"}, 1, ledger.StateExecuting},
	} {
		syncs, writes := st.Syncs(), st.Writes()
		r := request(t, s, pid, c.msg)
		if f, ok := r.(messages.Failed); ok {
			t.Fatalf("%s: %v", c.name, ErrorOf(f))
		}
		if n := st.Syncs() - syncs; n != c.syncs {
			t.Errorf("%s: %d synced commits, want %d", c.name, n, c.syncs)
		}
		if n := st.Writes() - writes; n != 1 {
			t.Errorf("%s: %d commits, want 1 (answered only once written)", c.name, n)
		}
		var id string
		switch m := c.msg.(type) {
		case messages.LedgerBegin:
			id = m.RequestID
		case messages.LedgerFail:
			id = m.RequestID
		}
		var e ledger.Entry
		if err := st.Get(persistence.LedgerKey(id), &e); err != nil || e.State != c.wantState {
			t.Errorf("%s: stored %q, %v; want %q", c.name, e.State, err, c.wantState)
		}
	}
}
