package fleet

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
)

// Checkouts stay home (docs/fleet.md).
//
//	homes/<repo_id>   the Home of a registered repository (no lease)
//
// A repository's checkout lives on the node it was registered on: that
// node writes its home record create-if-absent when the repository is
// registered (and, at join, for every repository it already has), and
// deletes it, compared on its own name, when the repository is
// unregistered. The record has no lease: ownership outlives a session
// (a node that restarts is still the home of its checkouts), and its
// create revision is the ownership epoch. Other nodes forward the
// operations that name the repository to its home node.

// Home is the record of where a repository's checkout lives.
type Home struct {
	RepoID       string    `json:"repo_id"`
	Node         string    `json:"node"`
	Root         string    `json:"root"`
	CheckoutID   string    `json:"checkout_id,omitempty"`
	RegisteredAt time.Time `json:"registered_at"`
	// Epoch is the record's create revision (read, never stored).
	Epoch int64 `json:"epoch,omitempty"`
	// Seal is the HMAC under the fleet key of the record (sealHome); ""
	// without a key. A node with the key ignores a record whose seal is
	// missing or wrong: whoever can write etcd but does not hold the key
	// cannot send a repository's operations to a node of its choosing.
	Seal string `json:"seal,omitempty"`
}

// homeSealDomain separates home seals from every other use of the key.
const homeSealDomain = "harnessd-fleet-home-v1"

// sealHome answers the seal of h under key.
func sealHome(key []byte, h Home) string {
	m := hmac.New(sha256.New, key)
	w := sealWriter{h: m}
	w.str(homeSealDomain)
	w.str(h.RepoID)
	w.str(h.Node)
	w.str(h.Root)
	w.str(h.CheckoutID)
	w.u64(uint64(h.RegisteredAt.UnixNano()))
	return hex.EncodeToString(m.Sum(nil))
}

// homeSealValid reports whether h carries its seal under key (compared in
// constant time).
func homeSealValid(key []byte, h Home) bool {
	return hmac.Equal([]byte(h.Seal), []byte(sealHome(key, h)))
}

// homes is <prefix>homes/.
func (k keys) homes() string { return k.prefix + "homes/" }

// home is <prefix>homes/<repo_id>.
func (k keys) home(repoID string) string { return k.homes() + repoID }

// validRepoID checks a repository id a home record is keyed by.
func validRepoID(repoID string) error {
	if repoID == "" || len(repoID) > 128 || strings.ContainsAny(repoID, "/ \t\n") {
		return errs.New(errs.InvalidArgument, "fleet home: repo_id %q must be 1-128 characters without '/' or spaces", repoID)
	}
	return nil
}

// decodeHome answers the home record of kv, or false when it is
// unreadable or, with a fleet key, unsealed or forged.
func (n *Node) decodeHome(value []byte, createRev int64) (Home, bool) {
	var h Home
	if json.Unmarshal(value, &h) != nil || h.RepoID == "" || h.Node == "" {
		return Home{}, false
	}
	if key := n.cfg.SealKey; key != nil && !homeSealValid(key, h) {
		return Home{}, false
	}
	h.Epoch = createRev
	return h, true
}

// ClaimHome records this node as the home of h.RepoID (Root,
// CheckoutID and RegisteredAt from h; Node is this node) unless a node
// already is: create-if-absent. It answers the record that holds after
// the call and whether this call created it. A record another node holds
// is answered unchanged (the repository is registered on two nodes: the
// first stays its home). With a fleet key, an unsealed or forged record
// is replaced, compared on its revision.
func (n *Node) ClaimHome(ctx context.Context, h Home) (Home, bool, error) {
	if err := validRepoID(h.RepoID); err != nil {
		return Home{}, false, err
	}
	if err := n.Live(); err != nil {
		return Home{}, false, err
	}
	h.Node, h.Epoch = n.cfg.Node, 0
	if h.RegisteredAt.IsZero() {
		h.RegisteredAt = time.Now().UTC()
	}
	h.RegisteredAt = h.RegisteredAt.UTC()
	h.Seal = ""
	if key := n.cfg.SealKey; key != nil {
		h.Seal = sealHome(key, h)
	}
	b, _ := json.Marshal(h)
	k := n.keys.home(h.RepoID)
	for range 5 {
		resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(b))).Else(clientv3.OpGet(k)).Commit()
		if err != nil {
			return Home{}, false, etcdError(err, "record the home of repository "+h.RepoID)
		}
		if resp.Succeeded {
			h.Epoch = resp.Header.Revision
			return h, true, nil
		}
		kv := firstKV(resp, 0)
		if kv == nil {
			continue // deleted since: try again
		}
		if prev, ok := n.decodeHome(kv.Value, kv.CreateRevision); ok {
			return prev, false, nil
		}
		// Unreadable, unsealed or forged: replace it, compared on its revision.
		// Changed since the read or deleted: the next round decides.
		if _, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(k)).Commit(); err != nil {
			return Home{}, false, etcdError(err, "replace the forged home record of repository "+h.RepoID)
		}
	}
	return Home{}, false, errs.New(errs.Unavailable, "fleet: the home record of repository %s keeps changing; register it again", h.RepoID)
}

// ReleaseHome deletes the home record of repoID if this node holds it
// (compared on the node and the record's revision): a node unregistering
// a repository it is not the home of changes nothing. It answers whether
// a record was deleted.
func (n *Node) ReleaseHome(ctx context.Context, repoID string) (bool, error) {
	if err := validRepoID(repoID); err != nil {
		return false, err
	}
	k := n.keys.home(repoID)
	for range 5 {
		resp, err := n.cli.Get(ctx, k)
		if err != nil {
			return false, etcdError(err, "read the home of repository "+repoID)
		}
		if len(resp.Kvs) == 0 {
			return false, nil
		}
		kv := resp.Kvs[0]
		h, ok := n.decodeHome(kv.Value, kv.CreateRevision)
		if !ok || h.Node != n.cfg.Node {
			return false, nil
		}
		tr, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(k)).Commit()
		if err != nil {
			return false, etcdError(err, "delete the home of repository "+repoID)
		}
		if tr.Succeeded {
			return true, nil
		}
	}
	return false, errs.New(errs.Unavailable, "fleet: the home record of repository %s keeps changing; unregister it again", repoID)
}

// Owner answers the home of repoID and whether it has one (a record
// unsealed or forged under a fleet key counts as none).
func (n *Node) Owner(ctx context.Context, repoID string) (Home, bool, error) {
	if err := validRepoID(repoID); err != nil {
		return Home{}, false, err
	}
	resp, err := n.cli.Get(ctx, n.keys.home(repoID))
	if err != nil {
		return Home{}, false, etcdError(err, "read the home of repository "+repoID)
	}
	if len(resp.Kvs) == 0 {
		return Home{}, false, nil
	}
	h, ok := n.decodeHome(resp.Kvs[0].Value, resp.Kvs[0].CreateRevision)
	return h, ok, nil
}

// Homes answers every valid home record, sorted by repository id.
func (n *Node) Homes(ctx context.Context) ([]Home, error) {
	resp, err := n.cli.Get(ctx, n.keys.homes(), clientv3.WithPrefix())
	if err != nil {
		return nil, etcdError(err, "read the fleet's repository homes")
	}
	out := []Home{}
	for _, kv := range resp.Kvs {
		if h, ok := n.decodeHome(kv.Value, kv.CreateRevision); ok {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RepoID < out[j].RepoID })
	return out, nil
}

// OwnerInfo is one repository's home as `harness status` shows it.
type OwnerInfo struct {
	RepoID string `json:"repo_id"`
	Node   string `json:"node"`
	Epoch  int64  `json:"epoch"`
}

// owners answers the homes as Status shows them (nil when etcd does not
// answer: the rest of the status stands).
func (n *Node) owners(ctx context.Context) []OwnerInfo {
	hs, err := n.Homes(ctx)
	if err != nil {
		return nil
	}
	out := make([]OwnerInfo, len(hs))
	for i, h := range hs {
		out[i] = OwnerInfo{RepoID: h.RepoID, Node: h.Node, Epoch: h.Epoch}
	}
	return out
}

// ForwardPath is the route of the home node's HTTP API a forwarded
// operation is posted to: ForwardPath+<operation>.
const ForwardPath = "/v1/fleet/forward/"

// Headers of a forwarded call: the node that forwards it and who called
// it there (the client, its session and role). The home node's audit
// entry names them; none of them is a credential.
const (
	HeaderForwardedFrom = "X-Harnessd-Forwarded-From"
	HeaderClient        = "X-Harnessd-Client"
	HeaderSession       = "X-Harnessd-Session"
	HeaderRole          = "X-Harnessd-Role"
)

// ForwardMaxAnswer bounds the answer a home node may send back.
const ForwardMaxAnswer = 64 << 20

// Forwarded is who a forwarded call is made for.
type Forwarded struct {
	Client  string // the caller's client, "name version"
	Session string
	Role    string
}

// Authorized reports whether r carries the fleet secret as its bearer
// token (compared in constant time): the credential of a node of the
// fleet.
func (n *Node) Authorized(r *http.Request) bool {
	return authorized(r.Header.Get("Authorization"), n.secret)
}

// Forward posts an operation and its raw arguments to the home node of
// a repository (h.Node's advertised URL) with the fleet secret, and
// answers the home node's answer unchanged: its JSON result, or its
// coded error (the code kept). A home node that is not live, advertises
// no URL or does not answer is UNAVAILABLE naming it.
func (n *Node) Forward(ctx context.Context, h Home, op string, args []byte, who Forwarded) (json.RawMessage, error) {
	base, err := n.advertised(ctx, h.Node)
	if errs.CodeOf(err) == errs.NotFound {
		return nil, errs.New(errs.Unavailable, "repository %s lives on node %s: %s; retry once it is back", h.RepoID, h.Node, errs.From(err).Message).
			With("node", h.Node).With("repo_id", h.RepoID)
	}
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+ForwardPath+url.PathEscape(op), bytes.NewReader(args))
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: build the forwarded request to node %s", h.Node)
	}
	req.Header.Set("Authorization", "Bearer "+n.secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderForwardedFrom, n.cfg.Node)
	for k, v := range map[string]string{HeaderClient: who.Client, HeaderSession: who.Session, HeaderRole: who.Role} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	// No client timeout: the operation may wait (a lease, an approval)
	// as long as the caller's context allows.
	hr, err := n.fwd.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.Cancelled, ctx.Err(), "the call forwarded to node %s was cancelled", h.Node)
		}
		return nil, errs.New(errs.Unavailable, "repository %s lives on node %s, unreachable at %s", h.RepoID, h.Node, base).
			With("node", h.Node).With("repo_id", h.RepoID)
	}
	defer func() { _ = hr.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(hr.Body, ForwardMaxAnswer+1))
	if err != nil || len(body) > ForwardMaxAnswer {
		return nil, errs.New(errs.Unavailable, "node %s: the forwarded %s answer was cut off or larger than %d bytes", h.Node, op, ForwardMaxAnswer).With("node", h.Node)
	}
	if hr.StatusCode == http.StatusOK {
		return body, nil
	}
	var e struct {
		Error *errs.Error `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Code != "" {
		return nil, e.Error
	}
	if hr.StatusCode == http.StatusUnauthorized {
		return nil, errs.New(errs.Unauthenticated, "node %s refused this node's fleet secret: every node of the fleet must join the same etcd prefix", h.Node).With("node", h.Node)
	}
	return nil, errs.New(errs.Unavailable, "node %s answered the forwarded %s with HTTP %d", h.Node, op, hr.StatusCode).With("node", h.Node)
}
