package fleet

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// TestHomeCreateIfAbsentEpochIsCreateRevision: the first node to claim a
// repository is its home; a second claim (another node, or the same one
// again at its next join) answers the existing record, whose epoch is its
// create revision; the record survives its node's session ending.
func TestHomeCreateIfAbsentEpochIsCreateRevision(t *testing.T) {
	prefix := testPrefix(t)
	nodes := joinN(t, ClientURLs(shared), prefix, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	h, created, err := nodes[0].ClaimHome(ctx, Home{RepoID: "repo_1", Root: "/srv/a", CheckoutID: "co_1", RegisteredAt: at, Node: "somebody else"})
	if err != nil || !created || h.Node != "n1" || h.Epoch <= 0 || h.Root != "/srv/a" || !h.RegisteredAt.Equal(at) {
		t.Fatalf("ClaimHome = %+v, created %t, %v; want n1's record with an epoch", h, created, err)
	}
	cli := rawClient(t, ClientURLs(shared))
	raw, err := cli.Get(ctx, prefix+"homes/repo_1")
	if err != nil || len(raw.Kvs) != 1 || raw.Kvs[0].CreateRevision != h.Epoch || raw.Kvs[0].Lease != 0 {
		t.Fatalf("stored %v (%v): want one record without a lease, created at the epoch %d", raw.Kvs, err, h.Epoch)
	}
	again, created, err := nodes[1].ClaimHome(ctx, Home{RepoID: "repo_1", Root: "/srv/b"})
	if err != nil || created || again.Node != "n1" || again.Epoch != h.Epoch || again.Root != "/srv/a" {
		t.Fatalf("second ClaimHome = %+v, created %t, %v; want n1's record unchanged", again, created, err)
	}
	same, created, err := nodes[0].ClaimHome(ctx, Home{RepoID: "repo_1", Root: "/srv/a"})
	if err != nil || created || same.Epoch != h.Epoch {
		t.Fatalf("re-claim by the home = %+v, created %t, %v; want the same epoch", same, created, err)
	}
	own, ok, err := nodes[1].Owner(ctx, "repo_1")
	if err != nil || !ok || own.Node != "n1" || own.Epoch != h.Epoch || own.CheckoutID != "co_1" {
		t.Fatalf("Owner = %+v, %t, %v", own, ok, err)
	}
	if _, ok, err := nodes[1].Owner(ctx, "repo_none"); err != nil || ok {
		t.Fatalf("Owner(repo_none) = %t, %v; want none", ok, err)
	}
	if _, _, err := nodes[0].Owner(ctx, "a/b"); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("Owner(a/b) = %v, want INVALID_ARGUMENT", err)
	}
	if _, _, err := nodes[0].ClaimHome(ctx, Home{RepoID: ""}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("ClaimHome without a repo id = %v, want INVALID_ARGUMENT", err)
	}
	h2, _, err := nodes[1].ClaimHome(ctx, Home{RepoID: "repo_0", Root: "/srv/c"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := nodes[0].Homes(ctx)
	if err != nil || len(all) != 2 || all[0].RepoID != "repo_0" || all[0].Node != "n2" || all[0].Epoch != h2.Epoch || all[1].RepoID != "repo_1" {
		t.Fatalf("Homes = %+v, %v; want repo_0 on n2 then repo_1 on n1", all, err)
	}
	st, err := nodes[1].Status(ctx)
	if err != nil || len(st.Owners) != 2 || st.Owners[1] != (OwnerInfo{RepoID: "repo_1", Node: "n1", Epoch: h.Epoch}) {
		t.Fatalf("Status owners = %+v, %v", st.Owners, err)
	}
	// The home's session ends (it leaves): ownership outlives it.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := nodes[0].Close(cctx); err != nil {
		t.Fatal(err)
	}
	own, ok, err = nodes[1].Owner(ctx, "repo_1")
	if err != nil || !ok || own.Node != "n1" || own.Epoch != h.Epoch {
		t.Fatalf("Owner after n1 left = %+v, %t, %v; want n1 still the home", own, ok, err)
	}
}

// TestHomeClaimedOnceUnderRace: 12 claims of one repository on 3 nodes
// at once: one record, every caller answered with it.
func TestHomeClaimedOnceUnderRace(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 3, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	got := make([]Home, 12)
	created := make([]bool, 12)
	errsOf := make([]error, 12)
	for i := range got {
		wg.Go(func() { got[i], created[i], errsOf[i] = nodes[i%3].ClaimHome(ctx, Home{RepoID: "repo_r", Root: "/r"}) })
	}
	wg.Wait()
	creators := 0
	for i := range got {
		if errsOf[i] != nil || got[i].Node != got[0].Node || got[i].Epoch != got[0].Epoch {
			t.Fatalf("claim %d = %+v, %v; want all the same record %+v", i, got[i], errsOf[i], got[0])
		}
		if created[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Fatalf("%d claims created the record, want 1", creators)
	}
}

// TestReleaseHomeComparedOnNode: only the home deletes the record; a new
// claim afterwards gets a higher epoch.
func TestReleaseHomeComparedOnNode(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, _, err := nodes[0].ClaimHome(ctx, Home{RepoID: "repo_d", Root: "/d"})
	if err != nil {
		t.Fatal(err)
	}
	if deleted, err := nodes[1].ReleaseHome(ctx, "repo_d"); err != nil || deleted {
		t.Fatalf("ReleaseHome on n2 = %t, %v; want nothing deleted", deleted, err)
	}
	if own, ok, _ := nodes[1].Owner(ctx, "repo_d"); !ok || own.Node != "n1" {
		t.Fatalf("after n2's release: owner %+v, %t; want n1", own, ok)
	}
	if deleted, err := nodes[0].ReleaseHome(ctx, "repo_d"); err != nil || !deleted {
		t.Fatalf("ReleaseHome on n1 = %t, %v; want deleted", deleted, err)
	}
	if _, ok, _ := nodes[1].Owner(ctx, "repo_d"); ok {
		t.Fatal("the record is still there after its home released it")
	}
	if deleted, err := nodes[0].ReleaseHome(ctx, "repo_d"); err != nil || deleted {
		t.Fatalf("second release = %t, %v; want nothing to delete", deleted, err)
	}
	h2, created, err := nodes[1].ClaimHome(ctx, Home{RepoID: "repo_d", Root: "/d2"})
	if err != nil || !created || h2.Node != "n2" || h2.Epoch <= h.Epoch {
		t.Fatalf("claim after release = %+v, %t, %v; want n2 with an epoch above %d", h2, created, err, h.Epoch)
	}
}

func TestSealHomeCoversTheRecord(t *testing.T) {
	key := []byte("fleet key of the test, 32 bytes!")
	base := Home{RepoID: "repo_1", Node: "n1", Root: "/srv/a", CheckoutID: "co_1", RegisteredAt: time.Unix(1700000000, 5).UTC()}
	base.Seal = sealHome(key, base)
	if !homeSealValid(key, base) {
		t.Fatal("a fresh seal is not valid")
	}
	for _, tc := range []struct {
		name string
		mod  func(*Home)
	}{
		{"other node", func(h *Home) { h.Node = "evil" }},
		{"other repository", func(h *Home) { h.RepoID = "repo_2" }},
		{"other root", func(h *Home) { h.Root = "/tmp" }},
		{"other checkout", func(h *Home) { h.CheckoutID = "co_2" }},
		{"other time", func(h *Home) { h.RegisteredAt = h.RegisteredAt.Add(time.Nanosecond) }},
		{"no seal", func(h *Home) { h.Seal = "" }},
		{"other key", func(h *Home) { h.Seal = sealHome([]byte("another key"), *h) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := base
			tc.mod(&h)
			if homeSealValid(key, h) {
				t.Fatalf("%+v passes as sealed", h)
			}
		})
	}
}

// TestForgedHomeIgnored: with a fleet key, a record written by whoever
// can write etcd but holds no key is no home, and a claim replaces it.
func TestForgedHomeIgnored(t *testing.T) {
	prefix := testPrefix(t)
	key := []byte("fleet key of the test, 32 bytes!")
	cfg := func(name string) Config {
		return Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: name, SealKey: key, BlobDir: t.TempDir()}
	}
	n1, n2 := join(t, cfg("n1")), join(t, cfg("n2"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sealed, _, err := n1.ClaimHome(ctx, Home{RepoID: "repo_s", Root: "/s"})
	if err != nil || sealed.Seal == "" || !homeSealValid(key, sealed) {
		t.Fatalf("ClaimHome = %+v, %v; want a sealed record", sealed, err)
	}
	cli := rawClient(t, ClientURLs(shared))
	forged := sealed
	forged.RepoID, forged.Node = "repo_f", "evil" // a valid seal of another record
	unsealed := Home{RepoID: "repo_u", Node: "evil", Root: "/u"}
	for _, h := range []Home{forged, unsealed} {
		if _, err := cli.Put(ctx, prefix+"homes/"+h.RepoID, string(mustJSON(t, h))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, prefix+"homes/repo_junk", "{not json"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"repo_f", "repo_u", "repo_junk"} {
		if h, ok, err := n2.Owner(ctx, id); err != nil || ok {
			t.Fatalf("Owner(%s) = %+v, %t, %v; want no home", id, h, ok, err)
		}
	}
	all, err := n2.Homes(ctx)
	if err != nil || len(all) != 1 || all[0].RepoID != "repo_s" || all[0].Node != "n1" {
		t.Fatalf("Homes = %+v, %v; want only the sealed repo_s", all, err)
	}
	if deleted, err := n2.ReleaseHome(ctx, "repo_u"); err != nil || deleted {
		t.Fatalf("ReleaseHome of a forged record = %t, %v; want nothing deleted", deleted, err)
	}
	h, created, err := n2.ClaimHome(ctx, Home{RepoID: "repo_u", Root: "/mine"})
	if err != nil || !created || h.Node != "n2" || !strings.HasPrefix(h.Root, "/mine") {
		t.Fatalf("claim over a forged record = %+v, %t, %v; want n2's sealed record", h, created, err)
	}
	if own, ok, _ := n1.Owner(ctx, "repo_u"); !ok || own.Node != "n2" || own.Epoch != h.Epoch {
		t.Fatalf("Owner(repo_u) = %+v, %t; want n2", own, ok)
	}
}
