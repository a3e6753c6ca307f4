package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A checkout whose store cannot be read at start does not panic into a
// restart loop (a restart would read the same store): it logs the error
// once and answers every lease request with it, naming the fix, while it
// still answers Ping and hands the live index its syncs.
func TestCheckoutWithAnUnreadableStoreRefusesLeaseRequests(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(t *testing.T, st *persistence.Store)
	}{
		{"a fencing mark that does not decode", func(t *testing.T, st *persistence.Store) {
			if err := st.Put(persistence.FenceKey(testRepo.CheckoutID, pathKey("f")), "not a token"); err != nil {
				t.Fatal(err)
			}
		}},
		{"a durable lease that does not decode", func(t *testing.T, st *persistence.Store) {
			if err := st.Put(persistence.LeaseKey(testRepo.CheckoutID, "l-1-x"), []string{"not", "a", "lease"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"a closed store", func(t *testing.T, st *persistence.Store) {
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := newTestSystem(t), newStore(t)
			tt.breakIt(t, st)
			core, logs := observer.New(zapcore.DebugLevel)
			lg := zap.New(core)
			clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			co, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewCheckout(testRepo, st, lg, clk.now), actor.WithReceiverMiddleware(Recover(lg))), "co")
			if err != nil {
				t.Fatal(err)
			}
			requests := []any{
				messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("f")}},
				messages.Acquire{Owner: "a", Operation: "apply_patch", Keys: []string{pathKey("f")}, Wait: time.Second},
				messages.Renew{LeaseID: "l-1-x"},
				messages.Release{LeaseID: "l-1-x"},
				messages.Fence{LeaseID: "l-1-x"},
				messages.ListLeases{},
				messages.LeaseHistory{Since: clk.now()},
			}
			for _, m := range requests {
				start := time.Now()
				e := errs.From(ErrorOf(want[messages.Failed](t, request(t, s, co, m))))
				if e.Code != errs.Unavailable || !strings.Contains(e.Message, "harness store verify") || !strings.Contains(e.Message, testRepo.CheckoutID) {
					t.Fatalf("%T: %v, want UNAVAILABLE naming the checkout and the fix", m, e)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Fatalf("%T answered after %s", m, d)
				}
			}
			want[messages.Pong](t, request(t, s, co, messages.Ping{}))
			if d := want[messages.LeaseDrained](t, request(t, s, co, messages.LeaseDrain{})); d.Refused != 0 {
				t.Fatalf("drain of a broken checkout refused %d", d.Refused)
			}
			if n := logs.FilterMessageSnippet("cannot read its leases").Len(); n != 1 {
				t.Fatalf("logged the store error %d times, want once", n)
			}
			if n := logs.FilterMessage("actor panicked").Len(); n != 0 {
				t.Fatalf("the checkout panicked %d times", n)
			}
		})
	}
}

// The store's own code comes through: a damaged store answers
// STORE_DAMAGED, not a generic UNAVAILABLE.
func TestStoreErrorKeepsTheStoresCode(t *testing.T) {
	damaged := &persistence.DamageError{File: "/data/store", Problem: "the store directory was removed", Recovery: "stop this daemon"}
	e := errs.From(storeError("co_x", damaged))
	if e.Code != "STORE_DAMAGED" || !strings.Contains(e.Message, "stop this daemon") || !strings.Contains(e.Message, "co_x") {
		t.Fatalf("storeError(damage) = %v, want STORE_DAMAGED with the store's recovery", e)
	}
	if e := errs.From(storeError("co_x", persistence.ErrClosed)); e.Code != errs.Unavailable {
		t.Fatalf("storeError(closed) = %v, want UNAVAILABLE", e)
	}
}
