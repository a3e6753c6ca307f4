package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
)

// SingleFlight answers the check of identity ("sha256:<64 hex>") once
// fleet-wide: from the action cache when a record's blobs fetch and
// verify ("reused"); else it claims <prefix>check/<identity>/run and
// runs it ("ran"), or waits for the node that holds the claim and answers
// its result ("joined"), retaking the claim if that node's session ends
// first. A run this node's session outlived is recorded in one Txn that
// compares the claim (its token): a stale run's result is refused
// (LEASE_LOST), never recorded. run is called with the claim's context.
func (n *Node) SingleFlight(ctx context.Context, identity string, run RunFunc) (Result, error) {
	ad, err := ActionDigest(identity)
	if err != nil {
		return Result{}, err
	}
	if run == nil {
		return Result{}, errs.New(errs.InvalidArgument, "fleet: SingleFlight needs a RunFunc")
	}
	if err := n.enter(); err != nil {
		return Result{}, err
	}
	defer n.flights.Done()
	s, err := n.liveSession()
	if err != nil {
		return Result{}, err
	}
	f := &flight{n: n, s: s, id: identity, ad: ad, run: run}
	return f.do(ctx)
}

// flight is one SingleFlight call.
type flight struct {
	n       *Node
	s       *session
	id      string
	ad      Digest
	run     RunFunc
	refused []string
}

// opCtx answers ctx, also ended when the session ends.
func (f *flight) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	octx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(f.s.ctx, cancel)
	return octx, func() { stop(); cancel() }
}

// fail maps an error of an etcd operation: the caller's context ends as
// TIMEOUT or CANCELLED, the session's as LEASE_LOST (or UNAVAILABLE when
// the node is leaving), anything else as UNAVAILABLE.
func (f *flight) fail(ctx context.Context, err error, doing string) error {
	if ctx.Err() != nil {
		return errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "fleet: check %s: gave up while it %s", f.id, doing)
	}
	if f.s.ctx.Err() != nil || f.n.isLeaving() {
		if lerr := f.n.Live(); lerr != nil {
			return lerr
		}
		if f.n.isLeaving() {
			return errs.New(errs.Unavailable, "fleet: node %s is leaving the fleet; ask another node", f.n.cfg.Node)
		}
		return lostError(time.Now(), time.Now().Add(f.n.cfg.TTL), time.Now())
	}
	if c := errs.CodeOf(err); c != errs.Internal && c != "" {
		return err
	}
	return etcdError(err, doing)
}

func (n *Node) isLeaving() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leaving
}

func (f *flight) do(ctx context.Context) (Result, error) {
	n := f.n
	octx, cancel := f.opCtx(ctx)
	defer cancel()
	runKey, resKey := n.keys.run(f.id), n.keys.result(f.id)

	// The last result's revision: the claim below is taken only if no
	// result was recorded since (else this call joins that result).
	gr, err := n.cli.Get(octx, resKey)
	if err != nil {
		return Result{}, f.fail(ctx, err, "read its last result")
	}
	var resultRev int64
	if len(gr.Kvs) > 0 {
		resultRev = gr.Kvs[0].ModRevision
	}

	if r, ok, err := f.reuse(octx, ctx); err != nil || ok {
		return r, err
	}

	for {
		if n.isLeaving() {
			return Result{}, errs.New(errs.Unavailable, "fleet: node %s is leaving the fleet; ask another node", n.cfg.Node)
		}
		runID := "fr-" + randomHex(8)
		cv, _ := json.Marshal(claimValue{Node: n.cfg.Node, RunID: runID, Epoch: f.s.epoch})
		resp, err := n.cli.Txn(octx).
			If(clientv3.Compare(clientv3.CreateRevision(runKey), "=", 0),
				clientv3.Compare(clientv3.ModRevision(resKey), "=", resultRev)).
			Then(clientv3.OpPut(runKey, string(cv), clientv3.WithLease(f.s.lease))).
			Else(clientv3.OpGet(runKey), clientv3.OpGet(resKey)).Commit()
		if err != nil {
			return Result{}, f.fail(ctx, err, "claimed it")
		}
		if resp.Succeeded {
			c := Claim{Identity: f.id, Token: resp.Header.Revision, RunID: runID, Node: n.cfg.Node, Epoch: f.s.epoch}
			return f.runClaimed(ctx, c, string(cv))
		}
		// A result recorded since this call began: join it. (A result
		// gone with its retention lease only moves the compare on.)
		var cur int64
		rkvs := resp.Responses[1].GetResponseRange().GetKvs()
		if len(rkvs) > 0 {
			cur = rkvs[0].ModRevision
		}
		if cur != resultRev {
			resultRev = cur
			if cur != 0 {
				if r, ok := f.joined(octx, rkvs[0].Value); ok {
					return r, nil
				}
			}
			continue
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			continue
		}
		token := kvs[0].CreateRevision
		rec, rev, err := f.wait(octx, ctx, token, resp.Header.Revision+1)
		if err != nil {
			return Result{}, err
		}
		if rec == nil {
			continue // the owner's session ended without a result: retake
		}
		resultRev = rev
		if r, ok := f.joined(octx, rec); ok {
			return r, nil
		}
	}
}

// reuse answers the action cache's record of the check when its blobs
// fetch and verify.
func (f *flight) reuse(octx, ctx context.Context) (Result, bool, error) {
	n := f.n
	rec, err := n.cache.GetActionResult(octx, f.ad)
	switch {
	case err == nil:
	case errs.CodeOf(err) == errs.NotFound:
		return Result{}, false, nil
	case octx.Err() != nil:
		return Result{}, false, f.fail(ctx, err, "read the action cache")
	case errs.CodeOf(err) == errs.InvalidArgument:
		f.refuse("the action-cache record of check " + f.id + " is unreadable (" + err.Error() + "); ran again")
		return Result{}, false, nil
	default:
		n.lg.Warn("fleet: action cache unavailable; treated as a miss", zap.String("identity", f.id), zap.Error(err))
		return Result{}, false, nil
	}
	if !rec.Passed {
		return Result{}, false, nil // only passes are evidence
	}
	out, ok := f.load(octx, rec)
	if !ok {
		return Result{}, false, nil
	}
	return Result{Outcome: out, Source: SourceReused, RunID: rec.RunID, Node: rec.Node, Token: rec.Token, Refused: f.refused}, true, nil
}

// joined answers the result record b (a serialized ActionRecord) when
// its blobs fetch and verify.
func (f *flight) joined(octx context.Context, b []byte) (Result, bool) {
	rec, err := UnmarshalActionRecord(b)
	if err != nil {
		f.refuse("the result record of check " + f.id + " is unreadable (" + err.Error() + "); ran again")
		return Result{}, false
	}
	out, ok := f.load(octx, rec)
	if !ok {
		return Result{}, false
	}
	return Result{Outcome: out, Source: SourceJoined, RunID: rec.RunID, Node: rec.Node, Token: rec.Token, Refused: f.refused}, true
}

func (f *flight) refuse(why string) {
	f.n.lg.Warn("fleet: evidence refused", zap.String("identity", f.id), zap.String("why", why))
	f.refused = append(f.refused, why)
}

// load fetches and verifies rec's stdout and stderr; with a fleet key,
// a record without its valid seal is refused first.
func (f *flight) load(ctx context.Context, rec *ActionRecord) (Outcome, bool) {
	if key := f.n.cfg.SealKey; key != nil && !sealValid(key, f.id, rec) {
		f.refuse("the record of check " + f.id + " (run " + rec.RunID + " on node " + rec.Node + ") carries no valid seal of the fleet key; refused; ran again")
		return Outcome{}, false
	}
	stdout, ok := f.blob(ctx, rec.Stdout, rec.Node)
	if !ok {
		return Outcome{}, false
	}
	stderr, ok := f.blob(ctx, rec.Stderr, rec.Node)
	if !ok {
		return Outcome{}, false
	}
	return rec.outcome(stdout, stderr), true
}

// blob answers the blob of d from the first source that has it: this
// node's BlobDir, the cache, the producing node. A blob whose digest does
// not match is refused (and so is the record).
func (f *flight) blob(ctx context.Context, d Digest, producer string) ([]byte, bool) {
	if d.Size == 0 && d == DigestOf(nil) {
		return nil, true
	}
	n := f.n
	type source struct {
		name string
		get  func() ([]byte, error)
	}
	sources := []source{
		{"this node's blob dir", func() ([]byte, error) { return n.blobs.get(d.Hash, d.Size+1) }},
		{"the cache", func() ([]byte, error) { return n.cache.GetBlob(ctx, d) }},
	}
	if producer != "" && producer != n.cfg.Node {
		sources = append(sources, source{"node " + producer, func() ([]byte, error) { return n.fetchFrom(ctx, producer, d) }})
	}
	var missing []string
	for _, src := range sources {
		b, err := src.get()
		if err != nil {
			if errs.CodeOf(err) != errs.NotFound {
				missing = append(missing, src.name+": "+err.Error())
			}
			continue
		}
		if !d.verify(b) {
			f.refuse("blob sha256:" + d.Hash + " of check " + f.id + " failed its digest check (from " + src.name + "); ran again")
			return nil, false
		}
		return b, true
	}
	why := "blob sha256:" + d.Hash + " of check " + f.id + " is unavailable (not in this node's blob dir, the cache, or on node " + producer + ")"
	for _, m := range missing {
		why += "; " + m
	}
	f.refuse(why + "; ran again")
	return nil, false
}

// fetchFrom GETs the blob of d from node's advertised URL.
func (n *Node) fetchFrom(ctx context.Context, node string, d Digest) ([]byte, error) {
	base, err := n.advertised(ctx, node)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+BlobPath+d.Hash, nil)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: build a blob request to node %s", node)
	}
	req.Header.Set("Authorization", "Bearer "+n.secret)
	hr, err := n.hc.Do(req)
	if err != nil {
		return nil, errs.New(errs.Unavailable, "node %s unreachable at %s", node, base)
	}
	defer func() { _ = hr.Body.Close() }()
	switch hr.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, errs.New(errs.NotFound, "node %s does not keep blob %s", node, d.Hash)
	default:
		return nil, errs.New(errs.Unavailable, "node %s answered %s", node, hr.Status)
	}
	b, err := io.ReadAll(io.LimitReader(hr.Body, d.Size+1))
	if err != nil {
		return nil, errs.New(errs.Unavailable, "node %s: reading blob %s failed", node, d.Hash)
	}
	return b, nil
}

// advertised answers the URL node advertises (its member key's), without
// a trailing slash: NOT_FOUND when it is not a live member or advertises
// none.
func (n *Node) advertised(ctx context.Context, node string) (string, error) {
	resp, err := n.cli.Get(ctx, n.keys.member(node))
	if err != nil {
		return "", etcdError(err, "look up node "+node)
	}
	if len(resp.Kvs) == 0 {
		return "", errs.New(errs.NotFound, "node %s is not a live member of the fleet", node)
	}
	var mv memberValue
	if err := json.Unmarshal(resp.Kvs[0].Value, &mv); err != nil || mv.Advertise == "" {
		return "", errs.New(errs.NotFound, "node %s advertises no URL (harnessd serve --cluster-advertise, or --listen)", node)
	}
	return strings.TrimRight(mv.Advertise, "/"), nil
}

// wait watches the check's keys from rev until the claim of token
// either records its result (answered as the record and its revision)
// or goes without one (nil: retake).
func (f *flight) wait(octx, ctx context.Context, token, rev int64) ([]byte, int64, error) {
	n := f.n
	runKey, resKey := n.keys.run(f.id), n.keys.result(f.id)
	for {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(octx))
		wch := n.cli.Watch(wctx, n.keys.check(f.id), clientv3.WithPrefix(), clientv3.WithRev(rev))
		rec, recRev, gone, ok := f.watch(wch, token, runKey, resKey)
		cancel()
		if ok {
			return rec, recRev, nil
		}
		if gone {
			return nil, 0, nil
		}
		if octx.Err() != nil {
			return nil, 0, f.fail(ctx, octx.Err(), "waited for another node's run")
		}
		// The watch ended (compacted, no leader, reconnect): read the
		// keys again and watch on from there.
		resp, err := n.cli.Txn(octx).Then(clientv3.OpGet(resKey), clientv3.OpGet(runKey)).Commit()
		if err != nil {
			return nil, 0, f.fail(ctx, err, "waited for another node's run")
		}
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			if r, err := UnmarshalActionRecord(kvs[0].Value); err == nil && r.Token == token {
				return kvs[0].Value, kvs[0].ModRevision, nil
			}
		}
		if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) == 0 || kvs[0].CreateRevision != token {
			return nil, 0, nil
		}
		rev = resp.Header.Revision + 1
	}
}

// watch reads wch until the result of token is put (ok), the claim is
// deleted without it (gone), or the watch ends (neither). A node that is
// leaving keeps its waiters until the run they wait for records (Close
// waits for them, until its context ends).
func (f *flight) watch(wch clientv3.WatchChan, token int64, runKey, resKey string) (rec []byte, rev int64, gone, ok bool) {
	for wr := range wch {
		if wr.Canceled || wr.Err() != nil {
			return nil, 0, false, false
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.PUT && string(ev.Kv.Key) == resKey {
				if r, err := UnmarshalActionRecord(ev.Kv.Value); err == nil && r.Token == token {
					return ev.Kv.Value, ev.Kv.ModRevision, false, true
				}
			}
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE && string(ev.Kv.Key) == runKey {
				return nil, 0, true, false
			}
		}
	}
	return nil, 0, false, false
}

// runClaimed runs the check this node claimed and records its result.
//
// The run is not stopped when the session ends: a check only reads, and
// whether a run whose claim may have been retaken meanwhile is recorded
// is decided by its token where it is recorded (etcd's compare, a
// fencing remote cache), not by this node's clock, which a pause makes
// wrong.
func (f *flight) runClaimed(ctx context.Context, c Claim, cv string) (Result, error) {
	rctx, cancel := context.WithCancel(ctx)
	out, err := f.run(rctx, c)
	cancel()
	if err == nil && out.Cancelled && ctx.Err() != nil {
		err = f.fail(ctx, context.Cause(rctx), "ran")
	}
	if err != nil {
		f.release(c)
		if f.s.ctx.Err() != nil {
			return Result{}, f.lostClaim(c)
		}
		return Result{}, err
	}
	if err := f.publish(c, cv, out); err != nil {
		return Result{}, err
	}
	return Result{Outcome: out, Source: SourceRan, RunID: c.RunID, Node: c.Node, Token: c.Token, Refused: f.refused}, nil
}

// lostClaim is the LEASE_LOST answer of a run whose claim went while it
// ran.
func (f *flight) lostClaim(c Claim) error {
	return errs.New(errs.LeaseLost, "this node lost its claim on check %s (token %d) while it ran; its result was not recorded; ask again",
		f.id, c.Token).With("token", c.Token)
}

// release deletes the claim (if still this run's), so a waiter retakes.
func (f *flight) release(c Claim) {
	ctx, cancel := context.WithTimeout(f.s.ctx, f.n.cfg.TTL)
	defer cancel()
	k := f.n.keys.run(f.id)
	if _, err := f.n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", c.Token)).
		Then(clientv3.OpDelete(k)).Commit(); err != nil {
		f.n.lg.Warn("fleet: releasing a claim failed; it goes with the session", zap.String("identity", f.id), zap.Error(err))
	}
}

// publish records the run in one Txn that compares the claim: the result
// record, the action-cache record (passes only) and small blobs (the
// etcd cache), the claim's deletion. Blobs go first to BlobDir (and a
// remote cache), then a remote cache's action-cache record with its
// token (a fencing cache refuses a stale one), then the Txn.
//
// Nothing here asks whether this node's session is still live: a run
// whose node was paused past its deadline tries to record itself like
// any other, and its token decides, at the cache and at etcd, which both
// refuse it once a newer run took the claim. Its caller then gets
// LEASE_LOST.
func (f *flight) publish(c Claim, cv string, out Outcome) error {
	n := f.n
	// Bounded, but not by the session: the decision is etcd's.
	pctx, pcancel := context.WithTimeout(context.Background(), 2*n.cfg.TTL)
	defer pcancel()
	blobs := [][]byte{[]byte(out.Stdout), []byte(out.Stderr)}
	rec := recordOf(c, out)
	if key := n.cfg.SealKey; key != nil {
		rec.Seal = sealRecord(key, f.id, rec)
	}
	recBytes, err := rec.Marshal()
	if err != nil {
		f.release(c)
		return err
	}
	for _, b := range blobs {
		if len(b) == 0 {
			continue
		}
		if err := n.blobs.put(b); err != nil {
			n.lg.Warn("fleet: keeping a blob failed", zap.Error(err))
		}
		if n.etcdc == nil {
			if err := n.cache.PutBlob(pctx, DigestOf(b), b); err != nil {
				n.lg.Warn("fleet: remote cache refused a blob", zap.Error(err))
			}
		}
	}
	if n.etcdc == nil && out.Passed {
		if err := n.cache.UpdateActionResult(pctx, f.ad, rec); err != nil {
			// A fencing cache's refusal (LEASE_LOST) is etcd's answer
			// too, below: the Txn still asks.
			n.lg.Warn("fleet: remote cache refused the action record", zap.String("identity", f.id), zap.Int64("token", c.Token), zap.Error(err))
		}
	}
	runKey := n.keys.run(f.id)
	rl, err := n.ret.lease(pctx)
	if err != nil {
		f.release(c)
		if f.s.ctx.Err() != nil {
			return f.lostClaim(c)
		}
		return err
	}
	build := func(rl clientv3.LeaseID) []clientv3.Op {
		ops := []clientv3.Op{clientv3.OpPut(n.keys.result(f.id), string(recBytes), clientv3.WithLease(rl)), clientv3.OpDelete(runKey)}
		if n.etcdc != nil {
			var ac *ActionRecord
			if out.Passed {
				ac = rec
			}
			ops = append(ops, n.etcdc.ops(f.ad, ac, recBytes, blobs, rl)...)
		}
		return ops
	}
	ops := build(rl)
	// Retry etcd's unavailability for up to two TTLs: a claim left
	// behind goes with its session.
	backoff := 50 * time.Millisecond
	for {
		resp, err := n.cli.Txn(pctx).
			If(clientv3.Compare(clientv3.ModRevision(runKey), "=", c.Token),
				clientv3.Compare(clientv3.Value(runKey), "=", cv)).
			Then(ops...).Commit()
		if err == nil {
			if !resp.Succeeded {
				return f.lostClaim(c)
			}
			return nil
		}
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			// The retention lease went (revoked, or etcd restored from an
			// older snapshot): take the current one.
			n.ret.forget(rl)
			if nl, lerr := n.ret.lease(pctx); lerr == nil {
				rl, ops = nl, build(nl)
			}
		}
		n.lg.Warn("fleet: recording a result failed; retrying", zap.String("identity", f.id), zap.Error(err))
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-pctx.Done():
			t.Stop()
			if f.s.ctx.Err() != nil {
				return f.lostClaim(c)
			}
			return etcdError(err, "record check "+f.id)
		}
		backoff = min(2*backoff, time.Second)
	}
}
