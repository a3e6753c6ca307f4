package fleet

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/ledger"
)

// Fleet-wide request ids (docs/fleet.md).
//
//	req/<request_id>   the Request a mutation's request id was first used
//	                   for: the node that holds it, that node's session
//	                   epoch, the operation and its input hash; bound to a
//	                   request retention lease (RequestRetention)
//
// A mutation with a request id records it create-if-absent, in one Txn
// that also compares this node's member key (a node whose session is
// gone records nothing), before its local ledger begins. The record
// decides where the request runs: on the node that holds it, whose local
// ledger replays, refuses or runs it as on a single node. The same id
// with another operation or input anywhere in the fleet is
// REQUEST_CONFLICT. A job_start's record under the same key is the id of
// the fleet job it started (jobs.go): a mutation that finds one
// conflicts with it.
//
// A record outlives its node's session: a node that restarts (or
// rejoins with a new epoch) still holds its request ids, and its local
// ledger is authoritative for them (a request reserved whose write never
// began runs there on its retry; it never runs on another node).

// RequestRetention is how long a request id's record stays in etcd: the
// local ledger's retention (ledger.DefaultRetention, from the entry's
// last change) plus an hour for its prune interval and long writes. A
// record lives between RequestRetention and 1.25 × RequestRetention.
const RequestRetention = ledger.DefaultRetention + time.Hour

// newRequestRetention answers the retention of the request records,
// its leases shared fleet-wide under reqretention/<period>.
func newRequestRetention(cli *clientv3.Client, k keys) *retention {
	r := newRetention(cli, k, RequestRetention)
	r.key = k.reqRetention
	return r
}

// Request is the fleet's record of a mutation's request id.
type Request struct {
	RequestID string    `json:"request_id"`
	Op        string    `json:"op"`
	InputHash string    `json:"input_hash"`
	Node      string    `json:"node"`  // the node that holds the request (its ledger has it)
	Epoch     int64     `json:"epoch"` // that node's session epoch when it recorded it
	Created   time.Time `json:"created"`
	// Seal is the HMAC under the fleet key (sealRequest); "" without a
	// key. A node with the key replaces a record whose seal is missing
	// or wrong: whoever can write etcd but does not hold the key cannot
	// send a request's retry to a node of its choosing.
	Seal string `json:"seal,omitempty"`
	// Rev is the record's create revision (read, never stored).
	Rev int64 `json:"-"`
}

// requestSealDomain separates request seals from every other use of the key.
const requestSealDomain = "harnessd-fleet-request-v1"

// sealRequest answers the seal of r under key.
func sealRequest(key []byte, r Request) string {
	m := hmac.New(sha256.New, key)
	w := sealWriter{h: m}
	w.str(requestSealDomain)
	w.str(r.RequestID)
	w.str(r.Op)
	w.str(r.InputHash)
	w.str(r.Node)
	w.u64(uint64(r.Epoch))
	w.u64(uint64(r.Created.UnixNano()))
	return hex.EncodeToString(m.Sum(nil))
}

// requestRecord decodes a stored record: ok false for a value that is
// not one (a job_start's job id, a torn or forged record), with the job
// id when it is one.
func (n *Node) requestRecord(value []byte, createRev int64) (r Request, jobID string, ok bool) {
	if !bytes.HasPrefix(value, []byte("{")) {
		return Request{}, string(value), false
	}
	if json.Unmarshal(value, &r) != nil || r.RequestID == "" || r.Node == "" || r.Op == "" || r.InputHash == "" {
		return Request{}, "", false
	}
	if key := n.cfg.SealKey; key != nil && !hmac.Equal([]byte(r.Seal), []byte(sealRequest(key, r))) {
		return Request{}, "", false
	}
	r.Rev = createRev
	return r, "", true
}

// requestConflict is the refusal of a request id reused with another
// operation or input: the single node's ledger's code and words.
func requestConflict(id, op, node string) error {
	return errs.New(errs.RequestConflict,
		"request_id %q was already used for a %s request with different input (on node %s); use a new request_id", id, op, node).
		With("request_id", id).With("operation", op).With("node", node)
}

// decideRequest is the pure decision on a request id the fleet already
// holds: the same operation and input is the held record (the caller
// runs it where prev.Node says); anything else is REQUEST_CONFLICT.
func decideRequest(prev, want Request) (Request, error) {
	if prev.Op != want.Op || prev.InputHash != want.InputHash {
		return Request{}, requestConflict(want.RequestID, prev.Op, prev.Node)
	}
	return prev, nil
}

// ReserveRequest records request id r.RequestID for r.Op with r.InputHash
// as this node's, create-if-absent, in one Txn compared on this node's
// session (its member key's epoch): one etcd round trip.
// It answers the record that holds: this node's (new, or its own from
// before, any epoch: its local ledger decides), or another node's with
// the same operation and input (the request is that node's: forward it
// there). The same id with another operation or input, or an id a
// job_start used, is REQUEST_CONFLICT; a node whose session is lost
// records nothing (LEASE_LOST).
func (n *Node) ReserveRequest(ctx context.Context, r Request) (Request, error) {
	if err := ledger.ValidateRequestID(r.RequestID); err != nil {
		return Request{}, err
	}
	if r.Op == "" || r.InputHash == "" {
		return Request{}, errs.New(errs.InvalidArgument, "fleet: request %q needs its operation and input hash", r.RequestID)
	}
	s, err := n.liveSession()
	if err != nil {
		return Request{}, err
	}
	// Bounded by the session's deadline: a node cut from etcd answers
	// LEASE_LOST once its session is past, not whenever its caller gives up.
	parent := ctx
	ctx, cancel := context.WithDeadline(ctx, n.deadlineOf(s))
	defer cancel()
	lost := func(err error) error {
		if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if lerr := n.Live(); lerr != nil {
				return lerr
			}
		}
		return err
	}
	r.Node, r.Epoch, r.Rev = n.cfg.Node, s.epoch, 0
	if r.Created.IsZero() {
		r.Created = time.Now().UTC()
	}
	r.Created = r.Created.UTC()
	r.Seal = ""
	if key := n.cfg.SealKey; key != nil {
		r.Seal = sealRequest(key, r)
	}
	b, _ := json.Marshal(r)
	rk, mk := n.keys.req(r.RequestID), n.keys.member(n.cfg.Node)
	for range 5 {
		rl, err := n.reqs.lease(ctx)
		if err != nil {
			return Request{}, lost(err)
		}
		resp, err := n.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(rk), "=", 0), clientv3.Compare(clientv3.CreateRevision(mk), "=", s.epoch)).
			Then(clientv3.OpPut(rk, string(b), clientv3.WithLease(rl))).
			Else(clientv3.OpGet(rk)).Commit()
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			n.reqs.forget(rl) // the period's lease expired or was revoked: a new one
			continue
		}
		if err != nil {
			return Request{}, lost(etcdError(err, "record request "+r.RequestID))
		}
		if resp.Succeeded {
			r.Rev = resp.Header.Revision
			return r, nil
		}
		kv := firstKV(resp, 0)
		if kv == nil {
			// The request id is free, so the member compare failed: the
			// session this node records under is gone.
			return Request{}, errs.New(errs.LeaseLost, "fleet: node %s's session (epoch %d) ended before request %s was recorded; nothing was written; retry once it rejoins", n.cfg.Node, s.epoch, r.RequestID).
				With("node", n.cfg.Node)
		}
		prev, jobID, ok := n.requestRecord(kv.Value, kv.CreateRevision)
		if ok {
			return decideRequest(prev, r)
		}
		if jobID != "" {
			return Request{}, errs.New(errs.RequestConflict, "request_id %q already started fleet job %s (job_start); use a new request_id", r.RequestID, jobID).
				With("request_id", r.RequestID).With("job_id", jobID)
		}
		// Torn, unsealed or forged: replace it, compared on its revision
		// (changed since the read or deleted: the next round decides).
		if _, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(rk), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(rk)).Commit(); err != nil {
			return Request{}, etcdError(err, "replace the forged record of request "+r.RequestID)
		}
	}
	return Request{}, errs.New(errs.Unavailable, "fleet: the record of request %s keeps changing; retry", r.RequestID).With("request_id", r.RequestID)
}

// RequestHolder answers the record of request id rid (ok false when the
// fleet has none, or none this node can trust).
func (n *Node) RequestHolder(ctx context.Context, rid string) (Request, bool, error) {
	if err := ledger.ValidateRequestID(rid); err != nil {
		return Request{}, false, err
	}
	resp, err := n.cli.Get(ctx, n.keys.req(rid))
	if err != nil {
		return Request{}, false, etcdError(err, "read request "+rid)
	}
	if len(resp.Kvs) == 0 {
		return Request{}, false, nil
	}
	r, _, ok := n.requestRecord(resp.Kvs[0].Value, resp.Kvs[0].CreateRevision)
	return r, ok, nil
}
