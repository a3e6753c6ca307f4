package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// TestCheckoutTokenBlock: a fleet's block raises the floor of every key
// (one never used too), a grant above its ceiling is refused with
// nothing written until a higher block comes, a lower floor never
// lowers it, and a new incarnation of the actor (the same producer, as
// a restart makes) keeps the block.
func TestCheckoutTokenBlock(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	prod := NewCheckout(testRepo, st, zap.NewNop(), clk.now)
	co, err := s.Root.SpawnNamed(actor.PropsFromProducer(prod), "co")
	if err != nil {
		t.Fatal(err)
	}
	grant := func(pid *actor.PID, rel string) (uint64, error) {
		t.Helper()
		switch v := acquire(t, s, pid, messages.Acquire{Owner: "o", Operation: "apply_patch", Keys: []string{pathKey(rel)}}).(type) {
		case messages.Acquired:
			want[messages.Released](t, request(t, s, pid, messages.Release{LeaseID: v.Lease.ID}))
			return v.Lease.Tokens[pathKey(rel)], nil
		case messages.Failed:
			return 0, ErrorOf(v)
		default:
			t.Fatalf("acquire answered %T", v)
			return 0, nil
		}
	}
	first, err := grant(co, "a.go")
	if err != nil || first != 1 {
		t.Fatalf("first token = %d, %v; want 1 (no block: the single-node path)", first, err)
	}
	if got := want[TokenBlockSet](t, request(t, s, co, TokenBlock{})); got.High != 1 {
		t.Fatalf("a query = %+v, want High 1", got)
	}
	set := want[TokenBlockSet](t, request(t, s, co, TokenBlock{Floor: 5000, Ceiling: 5002}))
	if set.High != 1 {
		t.Fatalf("TokenBlockSet = %+v, want High 1", set)
	}
	for _, rel := range []string{"a.go", "never-used.go"} {
		if tok, err := grant(co, rel); err != nil || tok != 5001 {
			t.Fatalf("token of %s after the block = %d, %v; want 5001", rel, tok, err)
		}
	}
	if tok, err := grant(co, "a.go"); err != nil || tok != 5002 {
		t.Fatalf("the last token of the block = %d, %v; want 5002", tok, err)
	}
	_, err = grant(co, "a.go")
	if e := errs.From(err); e.Code != errs.Unavailable || e.Details[DetailNothingWritten] != true {
		t.Fatalf("a grant past the ceiling = %v, want UNAVAILABLE with nothing written", err)
	}
	// A lower floor never lowers it; a higher ceiling lets grants on.
	if got := want[TokenBlockSet](t, request(t, s, co, TokenBlock{Floor: 10, Ceiling: 9000})); got.High != 5002 {
		t.Fatalf("TokenBlockSet = %+v, want High 5002", got)
	}
	if tok, err := grant(co, "b.go"); err != nil || tok != 5001 {
		t.Fatalf("a fresh key after a lower floor = %d, %v; want 5001", tok, err)
	}

	// Another incarnation of the same producer keeps the block: its
	// tokens stay above the floor and at most the ceiling.
	s.Root.Stop(co)
	co2, err := s.Root.SpawnNamed(actor.PropsFromProducer(prod), "co2")
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := grant(co2, "c.go"); err != nil || tok <= 5000 || tok > 9000 {
		t.Fatalf("a new incarnation's token = %d, %v; want in (5000, 9000]", tok, err)
	}
	if got := want[TokenBlockSet](t, request(t, s, co2, TokenBlock{})); got.High <= 5002 {
		t.Fatalf("the new incarnation's High = %+v, want above 5002 (its restored reservations)", got)
	}
}
