package fleet

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
)

// Node is this daemon's membership of the fleet: its etcd client, its
// session (a lease it renews itself, so it knows its own deadline) and
// the check single flight. Safe for concurrent use.
type Node struct {
	cfg    Config
	keys   keys
	lg     *zap.Logger
	cli    *clientv3.Client
	cache  Cache
	etcdc  *EtcdCache // cache, when it is the etcd one (its writes join the completion Txn)
	ret    *retention // the evidence retention lease
	reqs   *retention // the request id records' retention lease (reqs.go)
	blobs  blobDir
	secret string
	hc     *http.Client // node-to-node blob fetch
	fwd    *http.Client // operations forwarded to a repository's home node (homes.go)

	stopCtx  context.Context // cancelled by Close once the flights are done: stops the session loop
	stop     context.CancelFunc
	donec    chan struct{} // closed when the session loop returns
	sweptc   chan struct{} // closed when the blob sweep loop returns
	leavingc chan struct{} // closed when Close starts
	flights  sync.WaitGroup
	close    sync.Once
	closeErr error

	// pauseKeepalive is a test hook: while set, the session loop sends
	// no keepalive (as if the process were paused or cut off).
	pauseKeepalive atomic.Bool

	mu       sync.Mutex // protects the fields below
	sess     *session   // the current session (never nil after Join)
	lost     bool       // the session is lost; rejoining
	lostAt   time.Time  // when the last session expired
	rejoinAt time.Time  // earliest rejoin
	leaving  bool       // Close started: no new claims
	closed   bool       // Close finished its leave
}

// session is one lease and the member key bound to it.
type session struct {
	lease    clientv3.LeaseID
	epoch    int64 // the member key's create revision
	ctx      context.Context
	cancel   context.CancelFunc
	deadline time.Time // guarded by Node.mu: last keepalive (or grant) sent + TTL
}

// Join connects to etcd, grants the session lease, registers
// members/<node> bound to it and creates the fleet secret if absent. A
// member key of the same name held by another live session (renewed
// for longer than its TTL while Join waits) fails Join; a key left by
// this node's previous process goes with that process's lease.
func Join(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	lg := cfg.Logger.With(zap.String("fleet_node", cfg.Node))
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Logger:      lg.Named("etcdclient").WithOptions(zap.IncreaseLevel(zap.ErrorLevel)),
		Context:     context.Background(),
	})
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "fleet: connect to etcd %v: %v", cfg.Endpoints, err)
	}
	n := &Node{cfg: cfg, keys: keys{cfg.Prefix}, lg: lg, cli: cli, cache: cfg.Cache,
		blobs: blobDir{cfg.BlobDir}, hc: &http.Client{Timeout: 60 * time.Second,
			// A node answers a blob itself; a redirect is not followed
			// (the bearer token stays with the node it was meant for).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		donec: make(chan struct{}), sweptc: make(chan struct{}), leavingc: make(chan struct{})}
	n.ret = newRetention(cli, n.keys, cfg.Retention)
	n.reqs = newRequestRetention(cli, n.keys)
	n.fwd = &http.Client{CheckRedirect: n.hc.CheckRedirect} // no timeout: the caller's context bounds a forwarded call
	if n.cache == nil {
		n.etcdc = &EtcdCache{cli: cli, keys: n.keys, inlineMax: cfg.InlineBlobMax, ret: n.ret}
		n.cache = n.etcdc
	}
	n.stopCtx, n.stop = context.WithCancel(context.Background())
	jctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout+2*cfg.TTL+2*time.Second)
	defer cancel()
	sctx, scancel := context.WithTimeout(jctx, cfg.DialTimeout)
	if cfg.SealKey != nil {
		n.secret = hex.EncodeToString(cfg.SealKey) // the person's key, never etcd's
	} else {
		n.secret, err = n.ensureSecret(sctx)
	}
	scancel()
	if err != nil {
		n.stop()
		_ = cli.Close()
		if ctx.Err() == nil && errs.CodeOf(err) == errs.Timeout {
			return nil, errs.Wrap(errs.Unavailable, err, "fleet: etcd at %v did not answer within %s; check --cluster-store and that etcd has a quorum", cfg.Endpoints, cfg.DialTimeout)
		}
		return nil, err
	}
	s, err := n.establish(jctx, 0)
	if err != nil {
		n.stop()
		_ = cli.Close()
		return nil, err
	}
	n.sess = s
	go n.loop(s)
	go n.ret.sweepLoop(n.stopCtx, cfg.BlobDir, lg, n.sweptc)
	lg.Info("fleet: joined", zap.Int64("epoch", s.epoch), zap.Duration("ttl", cfg.TTL))
	return n, nil
}

// ensureSecret creates <prefix>secret (32 random bytes, hex) if absent
// and answers it.
func (n *Node) ensureSecret(ctx context.Context) (string, error) {
	k := n.keys.secret()
	fresh := randomHex(32)
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, fresh)).
		Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return "", etcdError(err, "create the fleet secret")
	}
	if resp.Succeeded {
		return fresh, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 || len(kvs[0].Value) < 32 {
		return "", errs.New(errs.Internal, "fleet: the fleet secret at %s is missing or too short; delete the key to have a new one made", k)
	}
	return string(kvs[0].Value), nil
}

// establish grants a lease and registers the member key bound to it.
// prev is the lease of this node's previous session (0 on Join): a
// member key still bound to it is revoked first. A key held by another
// lease is waited out (awaitGone), then a fresh lease is granted.
func (n *Node) establish(ctx context.Context, prev clientv3.LeaseID) (*session, error) {
	ttl := n.cfg.TTL
	for {
		sent := time.Now()
		gctx, gcancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
		lr, err := n.cli.Grant(gctx, int64(ttl/time.Second))
		gcancel()
		if err != nil {
			return nil, etcdError(err, "grant the session lease")
		}
		s := &session{lease: lr.ID, deadline: sent.Add(ttl)}
		holder, rev, err := n.register(ctx, s, prev)
		if err == nil && holder == 0 {
			s.ctx, s.cancel = context.WithCancel(context.Background())
			return s, nil
		}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_, _ = n.cli.Revoke(rctx, lr.ID)
		rcancel()
		if err != nil {
			return nil, err
		}
		if err := n.awaitGone(ctx, n.keys.member(n.cfg.Node), holder, rev); err != nil {
			return nil, err
		}
	}
}

// register creates members/<node> bound to s.lease; its create revision
// is s.epoch. A key bound to another lease than prev is answered as its
// holder and the revision it was seen at.
func (n *Node) register(ctx context.Context, s *session, prev clientv3.LeaseID) (clientv3.LeaseID, int64, error) {
	k := n.keys.member(n.cfg.Node)
	mv := memberValue{Name: n.cfg.Node, Advertise: n.cfg.Advertise, Started: time.Now().UTC()}
	for {
		b, _ := json.Marshal(mv)
		resp, err := n.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(b), clientv3.WithLease(s.lease))).
			Else(clientv3.OpGet(k)).Commit()
		if err != nil {
			return 0, 0, etcdError(err, "register this node")
		}
		if resp.Succeeded {
			s.epoch = resp.Header.Revision
			mv.Epoch = s.epoch
			b, _ = json.Marshal(mv)
			if _, err := n.cli.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(k), "=", s.epoch)).
				Then(clientv3.OpPut(k, string(b), clientv3.WithLease(s.lease))).Commit(); err != nil {
				return 0, 0, etcdError(err, "register this node")
			}
			return 0, 0, nil
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			continue
		}
		holder := clientv3.LeaseID(kvs[0].Lease)
		if holder == prev && prev != 0 {
			if _, err := n.cli.Revoke(ctx, prev); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return 0, 0, etcdError(err, "revoke this node's previous session")
			}
			continue
		}
		// Another session holds the name: a previous process of this
		// node (its lease runs out within its TTL) or a live other node
		// (it keeps renewing).
		return holder, resp.Header.Revision, nil
	}
}

// awaitGone waits until key (bound to lease holder) is deleted, for at
// most the lease's remaining TTL plus a second; a key still there then
// belongs to a live other node.
func (n *Node) awaitGone(ctx context.Context, key string, holder clientv3.LeaseID, rev int64) error {
	remain := n.cfg.TTL
	if tl, err := n.cli.TimeToLive(ctx, holder); err == nil && tl.GrantedTTL > 0 {
		remain = time.Duration(tl.GrantedTTL) * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, remain+time.Second)
	defer cancel()
	for wr := range n.cli.Watch(wctx, key, clientv3.WithRev(rev+1)) {
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return nil
			}
		}
		if wr.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return etcdError(ctx.Err(), "register this node")
	}
	return errs.New(errs.InvalidArgument, "fleet: another node named %s is live; pick --node-name", n.cfg.Node)
}

// loop keeps the session alive and, when it is lost, rejoins after the
// hold-off with a new lease and epoch, until Close.
func (n *Node) loop(s *session) {
	defer close(n.donec)
	for {
		n.keepAlive(s)
		now := time.Now()
		n.mu.Lock()
		s.cancel()
		if n.stopCtx.Err() != nil {
			n.mu.Unlock()
			return
		}
		n.lost = true
		n.lostAt = s.deadline
		if now.Before(n.lostAt) {
			n.lostAt = now // etcd answered the lease is gone before our deadline
		}
		n.rejoinAt = now.Add(n.cfg.TTL)
		n.mu.Unlock()
		n.lg.Warn("fleet: session lost; claims cancelled, rejoining after one TTL",
			zap.Int64("epoch", s.epoch), zap.Time("expired_at", n.lostAt), zap.Time("rejoin_at", n.rejoinAt))
		ns := n.rejoin(s.lease)
		if ns == nil {
			return
		}
		n.mu.Lock()
		n.sess, n.lost = ns, false
		n.mu.Unlock()
		n.lg.Info("fleet: rejoined", zap.Int64("epoch", ns.epoch))
		s = ns
	}
}

// rejoin waits out the hold-off (one TTL, so the other nodes have seen
// the old lease go), then establishes a new session, retrying with
// backoff; nil when Close stopped it.
func (n *Node) rejoin(prev clientv3.LeaseID) *session {
	if !n.sleep(time.Until(n.rejoinAt)) {
		return nil
	}
	backoff := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(n.stopCtx, n.cfg.TTL)
		ns, err := n.establish(ctx, prev)
		cancel()
		if err == nil {
			return ns
		}
		if n.stopCtx.Err() != nil {
			return nil
		}
		n.lg.Warn("fleet: rejoin failed; retrying", zap.Error(err), zap.Duration("backoff", backoff))
		if !n.sleep(backoff) {
			return nil
		}
		backoff = min(2*backoff, n.cfg.TTL)
	}
}

// sleep waits d or until Close; false on Close.
func (n *Node) sleep(d time.Duration) bool {
	if d <= 0 {
		return n.stopCtx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.stopCtx.Done():
		return false
	}
}

// keepAlive renews s every TTL/3 (sooner after a failed attempt) and
// returns when the session is lost: its deadline passed unrenewed, or
// etcd answered the lease is gone; or on Close. Each renewal moves the
// deadline to the time the keepalive was sent plus the TTL.
func (n *Node) keepAlive(s *session) {
	ttl := n.cfg.TTL
	interval := ttl / 3
	next := time.Now().Add(interval)
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		n.mu.Lock()
		dl := s.deadline
		n.mu.Unlock()
		now := time.Now()
		if !now.Before(dl) {
			return
		}
		if now.Before(next) {
			t.Reset(min(next.Sub(now), dl.Sub(now)))
			select {
			case <-n.stopCtx.Done():
				return
			case <-t.C:
			}
			continue
		}
		if n.pauseKeepalive.Load() {
			next = now.Add(interval / 4)
			continue
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(n.stopCtx, dl)
		resp, err := n.cli.KeepAliveOnce(ctx, s.lease)
		cancel()
		switch {
		case err == nil && resp.TTL > 0:
			nd := sent.Add(min(ttl, time.Duration(resp.TTL)*time.Second))
			n.mu.Lock()
			if nd.After(s.deadline) {
				s.deadline = nd
			}
			n.mu.Unlock()
			next = sent.Add(interval)
		case errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && resp.TTL <= 0):
			return // etcd expired or revoked the lease
		case n.stopCtx.Err() != nil:
			return
		default:
			next = time.Now().Add(200 * time.Millisecond) // etcd unreachable: retry until the deadline
		}
	}
}

// Name answers this node's name.
func (n *Node) Name() string { return n.cfg.Node }

// Secret answers the fleet secret (node-to-node auth); never log it.
func (n *Node) Secret() string { return n.secret }

// Epoch answers the create revision of the current session's member
// key; it changes on every rejoin.
func (n *Node) Epoch() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sess.epoch
}

// TTL answers the session lease TTL.
func (n *Node) TTL() time.Duration { return n.cfg.TTL }

// Live answers nil while the session is live: its deadline is ahead and
// it is not rejoining. Otherwise LEASE_LOST saying since when and when
// the node rejoins (UNAVAILABLE once the node has left).
func (n *Node) Live() error {
	_, err := n.liveSession()
	return err
}

// deadlineOf answers s's deadline (a renewal moves it).
func (n *Node) deadlineOf(s *session) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return s.deadline
}

// liveSession answers the current session while it is live.
func (n *Node) liveSession() (*session, error) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.liveSessionLocked(now)
}

func (n *Node) liveSessionLocked(now time.Time) (*session, error) {
	switch {
	case n.closed:
		return nil, errs.New(errs.Unavailable, "fleet: node %s has left the fleet", n.cfg.Node)
	case n.lost:
		return nil, lostError(n.lostAt, n.rejoinAt, now)
	case !now.Before(n.sess.deadline):
		return nil, lostError(n.sess.deadline, n.sess.deadline.Add(n.cfg.TTL), now)
	}
	return n.sess, nil
}

// lostError is the LEASE_LOST answer of a node whose session expired at
// at and rejoins at rejoin.
func lostError(at, rejoin, now time.Time) error {
	if now.Before(rejoin) {
		return errs.New(errs.LeaseLost, "this node's fleet session expired at %s; it rejoins at %s with a new epoch; retry then",
			stamp(at), stamp(rejoin)).With("expired_at", at.UTC()).With("rejoin_at", rejoin.UTC())
	}
	return errs.New(errs.LeaseLost, "this node's fleet session expired at %s; it is rejoining (etcd unreachable or without quorum since %s); retry shortly",
		stamp(at), stamp(rejoin)).With("expired_at", at.UTC()).With("rejoin_at", rejoin.UTC())
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// Close leaves the fleet gracefully, in order: (1) new SingleFlight
// calls answer UNAVAILABLE and waiters return; (2) runs in flight finish
// and publish (until ctx ends); (3) the session loop stops; (4) the lease
// is revoked, so the member key and any claim vanish at once; (5) the
// client closes. Idempotent.
func (n *Node) Close(ctx context.Context) error {
	n.close.Do(func() {
		n.mu.Lock()
		n.leaving = true
		close(n.leavingc)
		n.mu.Unlock()
		drained := make(chan struct{})
		go func() { n.flights.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-ctx.Done():
			n.lg.Warn("fleet: leaving before the runs in flight finished", zap.Error(ctx.Err()))
		}
		n.stop()
		<-n.donec
		<-n.sweptc
		n.mu.Lock()
		s := n.sess
		s.cancel()
		n.closed = true
		n.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.DialTimeout)
		if _, err := n.cli.Revoke(rctx, s.lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			n.lg.Warn("fleet: revoking the session lease failed; it expires within its TTL", zap.Error(err))
		}
		cancel()
		if err := n.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
			n.closeErr = errs.Wrap(errs.Internal, err, "fleet: close the etcd client")
		}
		n.lg.Info("fleet: left")
	})
	return n.closeErr
}

// enter counts a SingleFlight call, unless the node is leaving.
func (n *Node) enter() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.leaving {
		return errs.New(errs.Unavailable, "fleet: node %s is leaving the fleet; ask another node", n.cfg.Node)
	}
	n.flights.Add(1)
	return nil
}
