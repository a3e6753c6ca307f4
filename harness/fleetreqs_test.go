package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/testutil"
)

// forwardServer is a node's /v1/fleet/forward/ route as the daemon
// serves it (fleet secret, then CallForwarded), for in-process nodes.
type forwardServer struct {
	h atomic.Pointer[harness.Harness]
}

func (s *forwardServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.h.Load()
	if h == nil || h.Fleet() == nil || !h.Fleet().Authorized(r) {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	out, err := h.CallForwarded(r.Context(), r.Header.Get(fleet.HeaderForwardedFrom),
		fleet.Forwarded{Client: r.Header.Get(fleet.HeaderClient), Session: r.Header.Get(fleet.HeaderSession), Role: r.Header.Get(fleet.HeaderRole)},
		strings.TrimPrefix(r.URL.Path, fleet.ForwardPath), body)
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": errs.From(err)})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// openFleetNode opens a node on dataDir advertising srv's URL.
func openFleetNode(t *testing.T, endpoint, name, dataDir string, srv *httptest.Server, fs *forwardServer) *harness.Harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := harness.Open(ctx, harness.Config{DataDir: dataDir, StoreReserve: -1,
		Fleet: harness.FleetConfig{Endpoints: []string{endpoint}, Node: name, TTL: 2 * time.Second, Advertise: srv.URL}})
	if err != nil {
		t.Fatalf("open node %s: %v", name, err)
	}
	fs.h.Store(h)
	return h
}

// mutation answers a mutation's answer as a map, or its error.
func mutation(ctx context.Context, h *harness.Harness, args map[string]any) (map[string]any, error) {
	b, _ := json.Marshal(args)
	out, err := h.CallOp(ctx, "apply_patch", b)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(out)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m, nil
}

func createArgs(repo, rid, path, content string) map[string]any {
	return map[string]any{"repo_id": repo, "request_id": rid, "operations": []any{map[string]any{"op": "create", "path": path, "content": content}}}
}

// TestFleetRequestIDsAndTokens: two nodes have the same checkout
// registered (the same repo_id: one directory), node a is its home.
//   - A request id is one request fleet-wide: a retry through the other
//     node is forwarded to the node that holds it and replays there; the
//     same id with other input is REQUEST_CONFLICT on any node; a node
//     that holds one and is down is UNAVAILABLE naming it, never a
//     second run.
//   - The home node's checkout issues fencing tokens from blocks the
//     fleet reserved; restarted (a new epoch), even a key it never
//     wrote gets a token above every token reserved before.
func TestFleetRequestIDsAndTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	etcd, err := fleet.StartEmbedded(ctx, fleet.EmbedConfig{Name: "e1", Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	fsA, fsB := &forwardServer{}, &forwardServer{}
	srvA, srvB := httptest.NewServer(fsA), httptest.NewServer(fsB)
	t.Cleanup(srvA.Close)
	dirA, dirB := t.TempDir(), t.TempDir()
	a := openFleetNode(t, etcd.ClientURL(), "a", dirA, srvA, fsA)
	aOpen := true
	t.Cleanup(func() {
		if aOpen {
			_ = a.Close(context.Background())
		}
	})
	b := openFleetNode(t, etcd.ClientURL(), "b", dirB, srvB, fsB)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n"})
	register := func(h *harness.Harness) string {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"path": root})
		out, err := h.CallOp(harness.AsPerson(ctx, "test"), "repository_register", b)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(out)
		var r struct {
			ID string `json:"repo_id"`
		}
		_ = json.Unmarshal(raw, &r)
		return r.ID
	}
	ra, rb := register(a), register(b)
	if ra == "" || rb != ra {
		t.Fatalf("a registers %q, b %q; want the same repo_id", ra, rb)
	}
	repo := ra
	if home, ok, err := a.Fleet().Owner(ctx, repo); err != nil || !ok || home.Node != "a" {
		t.Fatalf("home = %+v, %t, %v; want a", home, ok, err)
	}

	// r1 on a; its retry through b replays on a ("create" would fail if it ran twice).
	first, err := mutation(ctx, a, createArgs(repo, "r1", "one.txt", "one\n"))
	if err != nil {
		t.Fatal(err)
	}
	tok1 := uint64(first["fencing_token"].(float64))
	retry, err := mutation(ctx, b, createArgs(repo, "r1", "one.txt", "one\n"))
	if err != nil || retry["forwarded_to"] != "a" || retry["replayed"] != true || retry["receipt_id"] != first["receipt_id"] {
		t.Fatalf("retry through b = %v, %v; want a's receipt %v replayed, forwarded to a", retry, err, first["receipt_id"])
	}
	for _, h := range []*harness.Harness{a, b} {
		if _, err := mutation(ctx, h, createArgs(repo, "r1", "one.txt", "other\n")); errs.CodeOf(err) != errs.RequestConflict {
			t.Fatalf("r1 with other input = %v, want REQUEST_CONFLICT", err)
		}
	}

	// r2 first on b (its own checkout: b holds it); a retry through a replays on b.
	second, err := mutation(ctx, b, createArgs(repo, "r2", "two.txt", "two\n"))
	if err != nil || second["forwarded_to"] != nil {
		t.Fatalf("r2 on b = %v, %v; want it run on b", second, err)
	}
	again, err := mutation(ctx, a, createArgs(repo, "r2", "two.txt", "two\n"))
	if err != nil || again["forwarded_to"] != "b" || again["replayed"] != true {
		t.Fatalf("r2 through a = %v, %v; want it replayed by b", again, err)
	}

	// The home's tokens come from the fleet's blocks.
	reserved, err := a.Fleet().TokensReserved(ctx, repo)
	if err != nil || tok1 == 0 || reserved < tok1 || reserved < fleet.TokenBlockMin {
		t.Fatalf("token %d, the fleet reserved up to %d (%v): want the token inside a reserved block", tok1, reserved, err)
	}

	// b goes down: its request is UNAVAILABLE through a, naming b, never run on a.
	srvB.Close()
	_, err = mutation(ctx, a, createArgs(repo, "r2", "two.txt", "two\n"))
	if e := errs.From(err); e.Code != errs.Unavailable || e.Details["node"] != "b" || !strings.Contains(e.Message, "once b is back") {
		t.Fatalf("r2 with b down = %v, want UNAVAILABLE naming b", err)
	}

	// a restarts (a new session, a new epoch): a key it never wrote gets
	// a token above everything reserved before.
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	aOpen = false
	a = openFleetNode(t, etcd.ClientURL(), "a", dirA, srvA, fsA)
	aOpen = true
	fresh, err := mutation(ctx, a, createArgs(repo, "r3", "fresh.txt", "fresh\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tok := uint64(fresh["fencing_token"].(float64)); tok <= reserved {
		t.Fatalf("the restarted home's first token on a new key is %d, not above the %d reserved before", tok, reserved)
	}
	// r1 is still a's: a retry replays from its ledger.
	if replay, err := mutation(ctx, a, createArgs(repo, "r1", "one.txt", "one\n")); err != nil || replay["replayed"] != true {
		t.Fatalf("r1 on the restarted a = %v, %v; want replayed", replay, err)
	}
}

// BenchmarkFleetMutation measures what a fleet adds to a mutation with a
// request id: apply_patch on a fleet node (one etcd member, fsync off)
// and on a node outside a fleet, calls interleaved, medians reported
// (fleet_ms, local_ms, added_ms), and the request id's etcd Txn alone
// (reserve_ms), interleaved with them.
func BenchmarkFleetMutation(b *testing.B) {
	ctx := context.Background()
	etcd, err := fleet.StartEmbedded(ctx, fleet.EmbedConfig{Name: "e1", Dir: b.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer etcd.Close()
	open := func(fc harness.FleetConfig) (*harness.Harness, string) {
		h, err := harness.Open(ctx, harness.Config{DataDir: b.TempDir(), StoreReserve: -1, Fleet: fc})
		if err != nil {
			b.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"path": testutil.Repo(b, map[string]string{"README.md": "hello\n"})})
		out, err := h.CallOp(harness.AsPerson(ctx, "bench"), "repository_register", args)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(out)
		var r struct {
			ID string `json:"repo_id"`
		}
		_ = json.Unmarshal(raw, &r)
		return h, r.ID
	}
	fl, flRepo := open(harness.FleetConfig{Endpoints: []string{etcd.ClientURL()}, Node: "a", TTL: 2 * time.Second})
	defer func() { _ = fl.Close(ctx) }()
	lo, loRepo := open(harness.FleetConfig{})
	defer func() { _ = lo.Close(ctx) }()
	var fleetD, localD, reserveD []time.Duration
	i := 0
	write := func(h *harness.Harness, repo string, into *[]time.Duration) {
		args := map[string]any{"repo_id": repo, "request_id": fmt.Sprintf("bench-%d", i),
			"operations": []any{map[string]any{"op": "write", "path": "f.txt", "content": fmt.Sprintf("%d\n", i)}}}
		start := time.Now()
		if _, err := mutation(ctx, h, args); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(start))
	}
	for b.Loop() {
		i++
		if i%2 == 0 {
			write(fl, flRepo, &fleetD)
			write(lo, loRepo, &localD)
		} else {
			write(lo, loRepo, &localD)
			write(fl, flRepo, &fleetD)
		}
		start := time.Now()
		if _, err := fl.Fleet().ReserveRequest(ctx, fleet.Request{RequestID: fmt.Sprintf("bench-r-%d", i), Op: "apply_patch", InputHash: "sha256:x"}); err != nil {
			b.Fatal(err)
		}
		reserveD = append(reserveD, time.Since(start))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	f, l := med(fleetD), med(localD)
	b.ReportMetric(f, "fleet_ms")
	b.ReportMetric(l, "local_ms")
	b.ReportMetric(f-l, "added_ms")
	b.ReportMetric(med(reserveD), "reserve_ms")
}
