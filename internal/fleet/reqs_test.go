package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
)

// TestDecideRequest: a request id the fleet holds is the held record
// when the operation and input are the same, REQUEST_CONFLICT naming
// the first use otherwise, whichever node asks.
func TestDecideRequest(t *testing.T) {
	held := Request{RequestID: "r1", Op: "apply_patch", InputHash: "sha256:a", Node: "n1", Epoch: 7}
	cases := []struct {
		name     string
		want     Request
		conflict bool
	}{
		{"same op and input", Request{RequestID: "r1", Op: "apply_patch", InputHash: "sha256:a", Node: "n2"}, false},
		{"same op and input, the holder again", Request{RequestID: "r1", Op: "apply_patch", InputHash: "sha256:a", Node: "n1", Epoch: 9}, false},
		{"other input", Request{RequestID: "r1", Op: "apply_patch", InputHash: "sha256:b", Node: "n2"}, true},
		{"other operation", Request{RequestID: "r1", Op: "write_file", InputHash: "sha256:a", Node: "n2"}, true},
		{"other operation and input", Request{RequestID: "r1", Op: "git_commit", InputHash: "sha256:c", Node: "n1"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decideRequest(held, c.want)
			if c.conflict {
				e := errs.From(err)
				if e.Code != errs.RequestConflict || e.Details["operation"] != "apply_patch" || e.Details["node"] != "n1" || !strings.Contains(e.Message, "use a new request_id") {
					t.Fatalf("decideRequest = %+v, %v; want REQUEST_CONFLICT naming apply_patch on n1", got, err)
				}
				return
			}
			if err != nil || got != held {
				t.Fatalf("decideRequest = %+v, %v; want the held record", got, err)
			}
		})
	}
}

// TestRequestSealCoversEveryField: changing any field of a request
// record (or the key) changes its seal.
func TestRequestSealCoversEveryField(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	base := Request{RequestID: "r1", Op: "apply_patch", InputHash: "sha256:a", Node: "n1", Epoch: 7, Created: time.Unix(100, 5)}
	want := sealRequest(key, base)
	cases := map[string]func(r *Request){
		"request id": func(r *Request) { r.RequestID = "r2" },
		"op":         func(r *Request) { r.Op = "write_file" },
		"input":      func(r *Request) { r.InputHash = "sha256:b" },
		"node":       func(r *Request) { r.Node = "n2" },
		"epoch":      func(r *Request) { r.Epoch = 8 },
		"created":    func(r *Request) { r.Created = r.Created.Add(1) },
	}
	for name, change := range cases {
		r := base
		change(&r)
		if sealRequest(key, r) == want {
			t.Errorf("changing the %s keeps the seal", name)
		}
	}
	if sealRequest([]byte("another key of sixteen bytes or more"), base) == want {
		t.Error("another key gives the same seal")
	}
}

// TestReserveRequestFleetWide: the first node to use a request id holds
// it (a record with the retention lease, naming the node and its epoch);
// the same id with the same input answers that record on every node
// (the holder again: its own, any epoch); other input or another
// operation anywhere is REQUEST_CONFLICT; an id a job_start used
// conflicts; a node whose session is gone records nothing.
func TestReserveRequestFleetWide(t *testing.T) {
	prefix := testPrefix(t)
	nodes := joinN(t, ClientURLs(shared), prefix, 2, 10*time.Second)
	n1, n2 := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := Request{RequestID: "req-1", Op: "apply_patch", InputHash: "sha256:a", Node: "forged", Epoch: 99}
	got, err := n1.ReserveRequest(ctx, want)
	if err != nil || got.Node != "n1" || got.Epoch != n1.Epoch() || got.Rev <= 0 {
		t.Fatalf("first ReserveRequest = %+v, %v; want n1's record at its epoch %d", got, err, n1.Epoch())
	}
	cli := rawClient(t, ClientURLs(shared))
	raw, err := cli.Get(ctx, prefix+"req/req-1")
	if err != nil || len(raw.Kvs) != 1 || raw.Kvs[0].Lease == 0 {
		t.Fatalf("stored %v (%v): want one record bound to a lease", raw.Kvs, err)
	}
	ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(raw.Kvs[0].Lease))
	if err != nil || time.Duration(ttl.TTL)*time.Second < RequestRetention {
		t.Fatalf("the record's lease has %+v (%v) left; want at least the ledger's retention %s", ttl, err, RequestRetention)
	}
	again, err := n1.ReserveRequest(ctx, want)
	if err != nil || again.Node != "n1" || again.Rev != got.Rev {
		t.Fatalf("the holder again = %+v, %v; want its own record (rev %d)", again, err, got.Rev)
	}
	other, err := n2.ReserveRequest(ctx, want)
	if err != nil || other.Node != "n1" || other.Rev != got.Rev || other.Epoch != got.Epoch {
		t.Fatalf("another node = %+v, %v; want n1's record: the request is n1's", other, err)
	}
	for name, r := range map[string]Request{
		"other input":     {RequestID: "req-1", Op: "apply_patch", InputHash: "sha256:b"},
		"other operation": {RequestID: "req-1", Op: "write_file", InputHash: "sha256:a"},
	} {
		for _, n := range nodes {
			if _, err := n.ReserveRequest(ctx, r); errs.CodeOf(err) != errs.RequestConflict {
				t.Errorf("%s on %s = %v, want REQUEST_CONFLICT", name, n.Name(), err)
			}
		}
	}
	held, ok, err := n2.RequestHolder(ctx, "req-1")
	if err != nil || !ok || held.Node != "n1" || held.Op != "apply_patch" {
		t.Fatalf("RequestHolder = %+v, %t, %v", held, ok, err)
	}
	if _, ok, err := n2.RequestHolder(ctx, "req-none"); err != nil || ok {
		t.Fatalf("RequestHolder(req-none) = %t, %v; want none", ok, err)
	}

	// A job_start's record under the same key: the fleet job's id.
	if _, err := cli.Put(ctx, prefix+"req/req-job", "job_abc"); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.ReserveRequest(ctx, Request{RequestID: "req-job", Op: "write_file", InputHash: "sha256:a"}); errs.CodeOf(err) != errs.RequestConflict || !strings.Contains(err.Error(), "job_abc") {
		t.Fatalf("an id a job_start used = %v; want REQUEST_CONFLICT naming the job", err)
	}

	// Bad input never reaches etcd.
	for _, r := range []Request{{RequestID: "", Op: "x", InputHash: "h"}, {RequestID: "bad id", Op: "x", InputHash: "h"}, {RequestID: "ok", InputHash: "h"}} {
		if _, err := n1.ReserveRequest(ctx, r); err == nil || errs.CodeOf(err) == errs.Internal {
			t.Errorf("ReserveRequest(%+v) = %v; want a coded refusal", r, err)
		}
	}

	// n2's session ends in etcd while n2 still thinks it is live: the
	// member compare refuses the record.
	n2.pauseKeepalive.Store(true)
	defer n2.pauseKeepalive.Store(false)
	n2.mu.Lock()
	lease := n2.sess.lease
	n2.mu.Unlock()
	if _, err := cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.ReserveRequest(ctx, Request{RequestID: "req-2", Op: "apply_patch", InputHash: "sha256:a"}); errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("ReserveRequest after the session ended = %v, want LEASE_LOST", err)
	}
	if _, ok, err := n1.RequestHolder(ctx, "req-2"); err != nil || ok {
		t.Fatalf("a lost node recorded req-2 (%t, %v)", ok, err)
	}
}

// TestReserveRequestSealed: with the fleet key, a record without its seal
// (written by someone who can write etcd but has no key) is replaced; a
// sealed record from another node is honoured.
func TestReserveRequestSealed(t *testing.T) {
	prefix := testPrefix(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	n1 := join(t, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "n1", BlobDir: t.TempDir(), SealKey: key})
	n2 := join(t, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "n2", BlobDir: t.TempDir(), SealKey: key})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	forged, _ := json.Marshal(Request{RequestID: "req-f", Op: "apply_patch", InputHash: "sha256:a", Node: "evil", Epoch: 1, Created: time.Now()})
	cli := rawClient(t, ClientURLs(shared))
	if _, err := cli.Put(ctx, prefix+"req/req-f", string(forged)); err != nil {
		t.Fatal(err)
	}
	got, err := n1.ReserveRequest(ctx, Request{RequestID: "req-f", Op: "apply_patch", InputHash: "sha256:a"})
	if err != nil || got.Node != "n1" || got.Seal == "" {
		t.Fatalf("ReserveRequest over a forged record = %+v, %v; want n1's sealed record", got, err)
	}
	other, err := n2.ReserveRequest(ctx, Request{RequestID: "req-f", Op: "apply_patch", InputHash: "sha256:a"})
	if err != nil || other.Node != "n1" {
		t.Fatalf("n2 = %+v, %v; want n1's sealed record", other, err)
	}
}

// BenchmarkReserveRequest measures what a fleet adds to a mutation with
// a request id against the 3-member embedded cluster: one Txn
// (create-if-absent of req/<id>, compared on the member key); "held" is
// a retry that finds the record.
func BenchmarkReserveRequest(b *testing.B) {
	n, err := Join(context.Background(), Config{Endpoints: ClientURLs(shared), Prefix: fmt.Sprintf("/benchreq%d/", time.Now().UnixNano()), Node: "bench", BlobDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = n.Close(context.Background()) }()
	ctx := context.Background()
	i := 0
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			i++
			if _, err := n.ReserveRequest(ctx, Request{RequestID: fmt.Sprintf("r-%d", i), Op: "apply_patch", InputHash: "sha256:a"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("held", func(b *testing.B) {
		for b.Loop() {
			if r, err := n.ReserveRequest(ctx, Request{RequestID: "r-1", Op: "apply_patch", InputHash: "sha256:a"}); err != nil || r.Node != "bench" {
				b.Fatal(r, err)
			}
		}
	})
}
