package fleet

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestEvidenceIsRetainedByALease: records and blobs are bound to the
// retention lease (TTL between the retention and 1.25 × it); when it
// goes, so does the evidence, the check runs again, and the new record
// gets the current lease.
func TestEvidenceIsRetainedByALease(t *testing.T) {
	keep := time.Hour
	prefix := testPrefix(t)
	n := join(t, Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: "n1", Retention: keep})
	id := identity(t.Name())
	var calls atomic.Int64
	if _, err := n.SingleFlight(context.Background(), id, passing(&calls, 0, "kept")); err != nil {
		t.Fatal(err)
	}
	ad, _ := ActionDigest(id)
	evidence := []string{n.keys.result(id), n.keys.ac(ad.Hash), n.keys.cas(DigestOf([]byte("kept")).Hash)}
	ctx := context.Background()
	var lease clientv3.LeaseID
	for _, k := range evidence {
		resp, err := n.cli.Get(ctx, k)
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
			t.Fatalf("%s: %v, %+v; want a key bound to a lease", k, err, resp.Kvs)
		}
		if lease != 0 && clientv3.LeaseID(resp.Kvs[0].Lease) != lease {
			t.Fatalf("%s is bound to another lease than the rest", k)
		}
		lease = clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	tl, err := n.cli.TimeToLive(ctx, lease)
	if err != nil || time.Duration(tl.GrantedTTL)*time.Second < keep || time.Duration(tl.GrantedTTL)*time.Second > keep+keep/4+time.Second {
		t.Fatalf("retention lease TTL = %d s, %v; want between %s and 1.25 × it", tl.GrantedTTL, err, keep)
	}

	// The lease ends (as at its expiry): the evidence goes with it.
	if _, err := rawClient(t, ClientURLs(shared)).Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	for _, k := range evidence {
		if resp, err := n.cli.Get(ctx, k); err != nil || len(resp.Kvs) != 0 {
			t.Fatalf("%s outlived its retention lease", k)
		}
	}
	r, err := n.SingleFlight(ctx, id, passing(&calls, 0, "kept"))
	if err != nil || r.Source != SourceRan || calls.Load() != 2 {
		t.Fatalf("after the retention = %+v, %v (runs %d); want ran again", r, err, calls.Load())
	}
	resp, err := n.cli.Get(ctx, n.keys.ac(ad.Hash))
	if err != nil || len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) == lease || resp.Kvs[0].Lease == 0 {
		t.Fatalf("the new record: %v, %+v; want it bound to a new retention lease", err, resp.Kvs)
	}
}

func TestSweepRemovesOnlyBlobsPastTheRetention(t *testing.T) {
	dir := t.TempDir()
	b := blobDir{dir}
	old, fresh, reused := []byte("old"), []byte("fresh"), []byte("reused")
	for _, x := range [][]byte{old, fresh, reused} {
		if err := b.put(x); err != nil {
			t.Fatal(err)
		}
	}
	r := newRetention(nil, keys{"/p/"}, 8*time.Hour) // period 2h: blobs go after 10h
	long := time.Now().Add(-11 * time.Hour)
	for _, x := range [][]byte{old, reused} {
		if err := os.Chtimes(b.path(DigestOf(x).Hash), long, long); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.put(reused); err != nil { // named by new evidence again
		t.Fatal(err)
	}
	if got := r.sweep(dir); got != 1 {
		t.Fatalf("swept %d blobs, want 1", got)
	}
	for x, want := range map[string]bool{"old": false, "fresh": true, "reused": true} {
		_, err := os.Stat(b.path(DigestOf([]byte(x)).Hash))
		if (err == nil) != want {
			t.Errorf("blob %q present = %v, want %v", x, err == nil, want)
		}
	}
	if got := r.sweep(filepath.Join(dir, "absent")); got != 0 {
		t.Fatalf("sweep of a missing dir = %d", got)
	}
}
