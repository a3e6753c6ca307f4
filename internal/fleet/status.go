package fleet

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Status is what `harness status` shows of the fleet.
type Status struct {
	Node      string      `json:"node"`
	State     string      `json:"state"` // "live", "lost" (rejoining), "leaving" or "left"
	Epoch     int64       `json:"epoch"`
	TTL       string      `json:"ttl"`
	Deadline  time.Time   `json:"deadline"`           // the session's deadline (last renewal sent + TTL)
	LostAt    time.Time   `json:"lost_at,omitzero"`   // when the last lost session expired
	RejoinAt  time.Time   `json:"rejoin_at,omitzero"` // earliest rejoin, while lost
	Members   []Member    `json:"members"`            // from etcd, sorted by name
	Claims    []ClaimInfo `json:"claims"`             // checks running now, sorted by identity
	Owners    []OwnerInfo `json:"owners"`             // repository homes (homes.go), sorted by repo id
	Endpoints []string    `json:"endpoints"`
}

// Member is one node of the fleet, as registered in etcd.
type Member struct {
	Name      string    `json:"name"`
	Advertise string    `json:"advertise,omitempty"`
	Epoch     int64     `json:"epoch"`
	Started   time.Time `json:"started"`
	Live      bool      `json:"live"` // its key exists, so its lease is live
}

// ClaimInfo is a check claimed now: its identity, the node running it
// and its token.
type ClaimInfo struct {
	Identity string `json:"identity"`
	Node     string `json:"node"`
	Token    int64  `json:"token"`
	RunID    string `json:"run_id"`
}

// Status answers the fleet as etcd has it and this node's session. When
// etcd does not answer (in time), the local part is filled in and the
// error is returned with it.
func (n *Node) Status(ctx context.Context) (Status, error) {
	now := time.Now()
	n.mu.Lock()
	st := Status{Node: n.cfg.Node, Epoch: n.sess.epoch, TTL: n.cfg.TTL.String(), Deadline: n.sess.deadline.UTC(),
		Endpoints: n.cfg.Endpoints, Members: []Member{}, Claims: []ClaimInfo{}}
	switch {
	case n.closed:
		st.State = "left"
	case n.leaving:
		st.State = "leaving"
	case n.lost || !now.Before(n.sess.deadline):
		st.State = "lost"
		st.RejoinAt = n.rejoinAt.UTC()
		if !n.lost {
			st.RejoinAt = n.sess.deadline.Add(n.cfg.TTL).UTC()
		}
	default:
		st.State = "live"
	}
	if !n.lostAt.IsZero() {
		st.LostAt = n.lostAt.UTC()
	}
	n.mu.Unlock()
	// Members, and the check keys without their values (results and
	// records pile up; only the claims' values are read).
	resp, err := n.cli.Txn(ctx).Then(
		clientv3.OpGet(n.keys.members(), clientv3.WithPrefix()),
		clientv3.OpGet(n.keys.checks(), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return st, etcdError(err, "read the fleet's members and claims")
	}
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		var mv memberValue
		if json.Unmarshal(kv.Value, &mv) != nil {
			continue
		}
		st.Members = append(st.Members, Member{Name: mv.Name, Advertise: mv.Advertise, Epoch: kv.CreateRevision, Started: mv.Started, Live: true})
	}
	var runKeys []clientv3.Op
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		if n.keys.identityOfRun(string(kv.Key)) != "" {
			runKeys = append(runKeys, clientv3.OpGet(string(kv.Key)))
		}
	}
	for len(runKeys) > 0 {
		chunk := runKeys[:min(len(runKeys), 100)] // etcd's --max-txn-ops is 128
		runKeys = runKeys[len(chunk):]
		cr, err := n.cli.Txn(ctx).Then(chunk...).Commit()
		if err != nil {
			return st, etcdError(err, "read the fleet's claims")
		}
		for _, r := range cr.Responses {
			for _, kv := range r.GetResponseRange().GetKvs() {
				var cv claimValue
				_ = json.Unmarshal(kv.Value, &cv)
				st.Claims = append(st.Claims, ClaimInfo{Identity: n.keys.identityOfRun(string(kv.Key)), Node: cv.Node, Token: kv.CreateRevision, RunID: cv.RunID})
			}
		}
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].Name < st.Members[j].Name })
	sort.Slice(st.Claims, func(i, j int) bool { return st.Claims[i].Identity < st.Claims[j].Identity })
	st.Owners = n.owners(ctx)
	return st, nil
}
