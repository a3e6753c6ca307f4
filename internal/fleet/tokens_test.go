package fleet

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestNextBlock(t *testing.T) {
	cases := []struct {
		name                   string
		fleet, local, size     uint64
		wantFloor, wantCeiling uint64
		exhausted              bool
	}{
		{"first block", 0, 0, 1024, 0, 1024, false},
		{"above the fleet", 5000, 10, 1024, 5000, 6024, false},
		{"above the checkout's own tokens", 5000, 9000, 1024, 9000, 10024, false},
		{"equal", 7, 7, 2048, 7, 2055, false},
		{"at the JSON limit", MaxToken - 1024, 0, 1024, MaxToken - 1024, MaxToken, false},
		{"past the JSON limit", MaxToken - 1023, 0, 1024, 0, 0, true},
		{"a checkout past it", 0, MaxToken, 1024, 0, 0, true},
		{"no size", 1, 1, 0, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, cl, err := nextBlock(c.fleet, c.local, c.size)
			if c.exhausted {
				if errs.CodeOf(err) != errs.Internal {
					t.Fatalf("nextBlock = (%d, %d], %v; want exhausted", f, cl, err)
				}
				return
			}
			if err != nil || f != c.wantFloor || cl != c.wantCeiling {
				t.Fatalf("nextBlock = (%d, %d], %v; want (%d, %d]", f, cl, err, c.wantFloor, c.wantCeiling)
			}
		})
	}
}

func TestNeedBlock(t *testing.T) {
	blk := TokenBlock{Floor: 1000, Ceiling: 2024, Epoch: 5}
	cases := []struct {
		name  string
		cur   TokenBlock
		high  uint64
		epoch int64
		want  bool
	}{
		{"no block yet", TokenBlock{}, 0, 5, true},
		{"fresh block", blk, 1000, 5, false},
		{"just under half used", blk, 1511, 5, false},
		{"half used", blk, 1513, 5, true},
		{"used up", blk, 2024, 5, true},
		{"past it (restored reservations)", blk, 3000, 5, true},
		{"another session", blk, 1000, 6, true},
	}
	for _, c := range cases {
		if got := NeedBlock(c.cur, c.high, c.epoch); got != c.want {
			t.Errorf("%s: NeedBlock(%+v, %d, %d) = %t, want %t", c.name, c.cur, c.high, c.epoch, got, c.want)
		}
	}
}

func TestBlockSize(t *testing.T) {
	cases := map[uint64]uint64{0: 1024, 1: 1024, 256: 1024, 257: 2048, 1000: 4096, 1 << 18: 1 << 20, 1 << 40: 1 << 20}
	for used, want := range cases {
		if got := BlockSize(used); got != want {
			t.Errorf("BlockSize(%d) = %d, want %d", used, got, want)
		}
	}
}

// issuer is the checkout's side of a fleet block as actors/checkout.go
// keeps it: per-key tokens that never go back, above the floor, and
// none above the ceiling.
type issuer struct {
	hw             map[string]uint64
	floor, ceiling uint64
	high           uint64
	issued         []uint64
}

func newIssuer() *issuer { return &issuer{hw: map[string]uint64{}} }

func (s *issuer) set(b TokenBlock) {
	s.floor, s.ceiling = max(s.floor, b.Floor), b.Ceiling
}

// issue answers the next token of key, or false above the ceiling.
func (s *issuer) issue(key string) (uint64, bool) {
	tok := max(s.hw[key], s.floor) + 1
	if s.ceiling > 0 && tok > s.ceiling {
		return 0, false
	}
	s.hw[key] = tok
	s.high = max(s.high, tok)
	s.issued = append(s.issued, tok)
	return tok, true
}

func minMax(toks []uint64) (lo, hi uint64) {
	lo = ^uint64(0)
	for _, t := range toks {
		lo, hi = min(lo, t), max(hi, t)
	}
	return lo, hi
}

// keep is the home node's keeper in small: reserve a block when the
// issuer needs one.
func keep(t *testing.T, n *Node, repo string, s *issuer, cur *TokenBlock) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !NeedBlock(*cur, s.high, n.Epoch()) {
		return nil
	}
	b, err := n.ReserveTokens(ctx, repo, s.high, TokenBlockMin)
	if err != nil {
		return err
	}
	*cur = b
	s.set(b)
	return nil
}

// TestTokensRiseAcrossOwners: owner 1 (n1) reserves blocks and issues
// tokens on several keys; its session ends (it does not notice: it goes
// on issuing until its block's ceiling, and reserves nothing more);
// owner 2 (n2) reserves above everything ever reserved: every token of
// owner 2 is above every token of owner 1, those it issued after its
// session ended included. Then n1 rejoins (a partition healed: a new
// epoch): its next block is above every token owner 2 issued meanwhile.
func TestTokensRiseAcrossOwners(t *testing.T) {
	prefix := testPrefix(t)
	nodes := joinN(t, ClientURLs(shared), prefix, 2, MinTTL)
	n1, n2 := nodes[0], nodes[1]
	const repo = "repo_tok"
	keys := []string{"a", "b", "c"}
	rng := rand.New(rand.NewPCG(1, 2))

	own1, blk1 := newIssuer(), TokenBlock{}
	for range 3000 { // spans several blocks
		if err := keep(t, n1, repo, own1, &blk1); err != nil {
			t.Fatal(err)
		}
		if _, ok := own1.issue(keys[rng.IntN(len(keys))]); !ok {
			t.Fatalf("owner 1 ran out of its block (%+v) while its session was live", blk1)
		}
	}
	epoch1 := n1.Epoch()

	// n1's session ends in etcd; n1 does not notice (a partition).
	n1.pauseKeepalive.Store(true)
	n1.mu.Lock()
	lease := n1.sess.lease
	n1.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rawClient(t, ClientURLs(shared)).Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.ReserveTokens(ctx, repo, own1.high, TokenBlockMin); errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("a reservation after the session ended = %v, want LEASE_LOST", err)
	}
	refused := 0
	for i := 0; refused < 100 && i < 1<<20; i++ { // owner 1 goes on issuing: up to its ceiling, never past it
		if _, ok := own1.issue(keys[rng.IntN(len(keys))]); !ok {
			refused++
		}
	}
	if refused == 0 || own1.high > blk1.Ceiling {
		t.Fatalf("owner 1 issued up to %d with %d refused; want it stopped at its ceiling %d", own1.high, refused, blk1.Ceiling)
	}

	own2, blk2 := newIssuer(), TokenBlock{}
	for range 2000 {
		if err := keep(t, n2, repo, own2, &blk2); err != nil {
			t.Fatal(err)
		}
		if _, ok := own2.issue(keys[rng.IntN(len(keys))]); !ok {
			t.Fatalf("owner 2 ran out of its block (%+v)", blk2)
		}
	}
	_, max1 := minMax(own1.issued)
	min2, max2 := minMax(own2.issued)
	if min2 <= max1 {
		t.Fatalf("owner 2's lowest token %d is not above owner 1's highest %d", min2, max1)
	}

	// The partition heals: n1 rejoins with a new epoch and reserves
	// above everything, owner 2's tokens included.
	n1.pauseKeepalive.Store(false)
	deadline := time.Now().Add(20 * time.Second)
	for n1.Live() != nil || n1.Epoch() == epoch1 {
		if time.Now().After(deadline) {
			t.Fatalf("n1 did not rejoin: %v", n1.Live())
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !NeedBlock(blk1, own1.high, n1.Epoch()) {
		t.Fatal("a new epoch must need a new block")
	}
	before := len(own1.issued)
	for range 100 {
		if err := keep(t, n1, repo, own1, &blk1); err != nil {
			t.Fatal(err)
		}
		if _, ok := own1.issue(keys[rng.IntN(len(keys))]); !ok {
			t.Fatalf("n1 ran out of its new block %+v", blk1)
		}
	}
	after, _ := minMax(own1.issued[before:])
	if after <= max2 {
		t.Fatalf("n1's lowest token after healing %d is not above owner 2's highest %d", after, max2)
	}
	reserved, err := n2.TokensReserved(ctx, repo)
	if err != nil || reserved < own1.high || reserved < max2 {
		t.Fatalf("TokensReserved = %d, %v; want at least every token issued", reserved, err)
	}
}

// TestReserveTokensRacing: nodes reserving for the same repository at
// get disjoint blocks, and the high-water covers them all.
func TestReserveTokensRacing(t *testing.T) {
	prefix := testPrefix(t)
	nodes := joinN(t, ClientURLs(shared), prefix, 3, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type got struct {
		b   TokenBlock
		err error
	}
	out := make(chan got, 30)
	for _, n := range nodes {
		go func() {
			for range 10 {
				b, err := n.ReserveTokens(ctx, "repo_race", 0, TokenBlockMin)
				out <- got{b, err}
			}
		}()
	}
	var blocks []TokenBlock
	for range 30 {
		g := <-out
		if g.err != nil {
			t.Fatal(g.err)
		}
		blocks = append(blocks, g.b)
	}
	for i, a := range blocks {
		for j, b := range blocks {
			if i != j && a.Floor < b.Ceiling && b.Floor < a.Ceiling {
				t.Fatalf("blocks %+v and %+v overlap", a, b)
			}
		}
	}
	high, err := nodes[0].TokensReserved(ctx, "repo_race")
	if err != nil || high != 30*TokenBlockMin {
		t.Fatalf("TokensReserved = %d, %v; want %d", high, err, 30*TokenBlockMin)
	}
	if _, err := nodes[0].ReserveTokens(ctx, "repo_race", 0, 10); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("a block of 10 = %v, want INVALID_ARGUMENT", err)
	}
	cli := rawClient(t, ClientURLs(shared))
	if _, err := cli.Put(ctx, prefix+"tokens/repo_bad", "garbage"); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].ReserveTokens(ctx, "repo_bad", 0, TokenBlockMin); err == nil {
		t.Fatal("a reservation over an unreadable value succeeded")
	}
	if _, err := cli.Put(ctx, prefix+"tokens/repo_num", "5000"); err != nil {
		t.Fatal(err)
	}
	if b, err := nodes[0].ReserveTokens(ctx, "repo_num", 0, TokenBlockMin); err != nil || b.Floor != 5000 {
		t.Fatalf("a reservation over a bare 5000 = %+v, %v; want above it", b, err)
	}
}
