package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// retention bounds how long evidence stays in etcd: result records,
// action-cache records and blobs are put with a retention lease, one
// per period (a quarter of the retention) shared fleet-wide through
// <prefix>retention/<period> (the key is bound to the lease it names).
// A lease lives retention + period, so evidence stays between retention
// and retention + period after it was recorded, and etcd never fills
// with it (a full etcd refuses every write, claims and leases too).
type retention struct {
	cli    *clientv3.Client
	keep   time.Duration
	period time.Duration
	key    func(period int64) string // the shared key of a period's lease

	mu     sync.Mutex // protects bucket, id
	bucket int64
	id     clientv3.LeaseID
}

func newRetention(cli *clientv3.Client, k keys, keep time.Duration) *retention {
	return &retention{cli: cli, keep: keep, period: keep / 4, key: k.retention, bucket: -1}
}

// lease answers the retention lease of the current period, granting it
// (or adopting the one another node granted first).
func (r *retention) lease(ctx context.Context) (clientv3.LeaseID, error) {
	b := time.Now().UnixNano() / int64(r.period)
	r.mu.Lock()
	if r.bucket == b {
		id := r.id
		r.mu.Unlock()
		return id, nil
	}
	r.mu.Unlock()
	k := r.key(b)
	lr, err := r.cli.Grant(ctx, int64((r.keep+r.period+time.Second-1)/time.Second))
	if err != nil {
		return 0, etcdError(err, "grant the evidence retention lease")
	}
	resp, err := r.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, strconv.FormatInt(int64(lr.ID), 10), clientv3.WithLease(lr.ID))).
		Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		_, _ = r.cli.Revoke(context.WithoutCancel(ctx), lr.ID)
		return 0, etcdError(err, "record the evidence retention lease")
	}
	id := lr.ID
	if !resp.Succeeded {
		_, _ = r.cli.Revoke(ctx, lr.ID) // another node granted this period's first
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return 0, etcdError(context.DeadlineExceeded, "read the evidence retention lease")
		}
		id = clientv3.LeaseID(kvs[0].Lease)
	}
	r.mu.Lock()
	r.bucket, r.id = b, id
	r.mu.Unlock()
	return id, nil
}

// forget drops the cached lease if it is id (gone from etcd).
func (r *retention) forget(id clientv3.LeaseID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id == id {
		r.bucket = -1
	}
}

// sweepLoop sweeps dir at once and then every period until ctx ends.
func (r *retention) sweepLoop(ctx context.Context, dir string, lg *zap.Logger, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(r.period)
	defer t.Stop()
	for {
		if k := r.sweep(dir); k > 0 {
			lg.Info("fleet: removed blobs past the evidence retention", zap.Int("blobs", k))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep removes the blobs in dir not written or used for longer than the
// lease of the oldest evidence that could name them.
func (r *retention) sweep(dir string) (removed int) {
	if dir == "" {
		return 0
	}
	cutoff := time.Now().Add(-(r.keep + r.period))
	entries, err := os.ReadDir(filepath.Join(dir, "sha256"))
	if err != nil {
		return 0
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.ModTime().After(cutoff) {
			continue
		}
		if os.Remove(filepath.Join(dir, "sha256", e.Name())) == nil {
			removed++
		}
	}
	return removed
}
