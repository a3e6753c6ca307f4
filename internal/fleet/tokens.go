package fleet

import (
	"context"
	"encoding/json"
	"math/bits"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
)

// Fencing tokens that rise fleet-wide for a checkout (docs/fleet.md).
//
//	tokens/<repo_id>   {high, node, epoch}: the highest fencing token the
//	                   fleet ever reserved for the repository's checkout (no lease)
//
// The checkout's own actor issues its tokens (per resource key, never
// going back on its node); in a fleet its home node also reserves them
// in blocks from etcd, ahead of need: a block (Floor, Ceiling] is taken
// by a CAS on the key that moves high from at most Floor to Ceiling,
// compared on this node's member key (a node whose session is gone
// reserves nothing). The checkout's floor is raised to the block's
// Floor and it refuses a token above the Ceiling until a higher block
// comes. A new owner (the same node in a new session, or another node
// that became the repository's home) reserves above everything ever
// reserved, so each of its tokens is above every token an earlier owner
// could issue, also after that owner lost its session.

// TokenBlockMin and TokenBlockMax bound the size of a reserved block: a
// checkout that issues tokens fast is given larger blocks (blockSize).
const (
	TokenBlockMin = 1024
	TokenBlockMax = 1 << 20
)

// MaxToken is the highest fencing token a fleet reserves: JSON numbers
// stay exact below 2^53.
const MaxToken = 1<<53 - 1

// TokenBlock is a block of fencing tokens reserved for a checkout:
// every token of it is above Floor and at most Ceiling.
type TokenBlock struct {
	RepoID  string
	Floor   uint64
	Ceiling uint64
	Epoch   int64 // the session epoch that reserved it
}

// tokenValue is the stored value of tokens/<repo_id>.
type tokenValue struct {
	High  uint64 `json:"high"`
	Node  string `json:"node"`
	Epoch int64  `json:"epoch"`
}

// nextBlock is the pure reservation: the block of size above both the
// fleet's reserved high-water and the checkout's own highest token.
func nextBlock(fleetHigh, localHigh, size uint64) (floor, ceiling uint64, err error) {
	floor = max(fleetHigh, localHigh)
	if size == 0 || floor > MaxToken-size {
		return 0, 0, errs.New(errs.Internal, "fleet: the fencing tokens of this checkout are exhausted (reserved up to %d, the limit is %d)", floor, uint64(MaxToken))
	}
	return floor, floor + size, nil
}

// NeedBlock reports whether a checkout whose highest token is high,
// holding block cur, needs a new block now: it has none, cur was
// reserved in another session than epoch, or less than half of cur is
// left.
func NeedBlock(cur TokenBlock, high uint64, epoch int64) bool {
	if cur.Ceiling == 0 || cur.Epoch != epoch || high >= cur.Ceiling {
		return true
	}
	return cur.Ceiling-high < (cur.Ceiling-cur.Floor)/2
}

// BlockSize is the size of the next block for a checkout that used
// `used` tokens since the last look: four times that (a power of two),
// between TokenBlockMin and TokenBlockMax, so a burst does not outrun
// the reservation ahead of it.
func BlockSize(used uint64) uint64 {
	if used >= TokenBlockMax/4 {
		return TokenBlockMax
	}
	want := max(used*4, TokenBlockMin)
	return min(uint64(1)<<bits.Len64(want-1), TokenBlockMax)
}

// ReserveTokens reserves the next block of size tokens for repoID's
// checkout, above everything the fleet reserved for it and above
// localHigh (the checkout's own highest token): a read, then a CAS on
// tokens/<repo_id> compared on its revision and on this node's member
// key. A node whose session is lost reserves nothing (LEASE_LOST).
func (n *Node) ReserveTokens(ctx context.Context, repoID string, localHigh, size uint64) (TokenBlock, error) {
	if err := validRepoID(repoID); err != nil {
		return TokenBlock{}, err
	}
	if size < TokenBlockMin || size > TokenBlockMax {
		return TokenBlock{}, errs.New(errs.InvalidArgument, "fleet: a token block of %d is outside %d..%d", size, TokenBlockMin, TokenBlockMax)
	}
	s, err := n.liveSession()
	if err != nil {
		return TokenBlock{}, err
	}
	tk, mk := n.keys.tokens(repoID), n.keys.member(n.cfg.Node)
	resp, err := n.cli.Get(ctx, tk)
	if err != nil {
		return TokenBlock{}, etcdError(err, "read the fencing tokens of repository "+repoID)
	}
	var mod int64
	var fleetHigh uint64
	if len(resp.Kvs) > 0 {
		mod = resp.Kvs[0].ModRevision
		if fleetHigh, err = tokenHigh(tk, resp.Kvs[0].Value); err != nil {
			return TokenBlock{}, err
		}
	}
	for range 16 {
		floor, ceiling, err := nextBlock(fleetHigh, localHigh, size)
		if err != nil {
			return TokenBlock{}, err
		}
		b, _ := json.Marshal(tokenValue{High: ceiling, Node: n.cfg.Node, Epoch: s.epoch})
		tr, err := n.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(tk), "=", mod), clientv3.Compare(clientv3.CreateRevision(mk), "=", s.epoch)).
			Then(clientv3.OpPut(tk, string(b))).
			Else(clientv3.OpGet(tk), clientv3.OpGet(mk)).Commit()
		if err != nil {
			return TokenBlock{}, etcdError(err, "reserve fencing tokens of repository "+repoID)
		}
		if tr.Succeeded {
			return TokenBlock{RepoID: repoID, Floor: floor, Ceiling: ceiling, Epoch: s.epoch}, nil
		}
		if mkv := firstKV(tr, 1); mkv == nil || mkv.CreateRevision != s.epoch {
			return TokenBlock{}, errs.New(errs.LeaseLost, "fleet: node %s's session (epoch %d) ended; it reserves no fencing tokens until it rejoins", n.cfg.Node, s.epoch).
				With("node", n.cfg.Node)
		}
		mod, fleetHigh = 0, 0 // another reservation came first: above it
		if kv := firstKV(tr, 0); kv != nil {
			mod = kv.ModRevision
			if fleetHigh, err = tokenHigh(tk, kv.Value); err != nil {
				return TokenBlock{}, err
			}
		}
	}
	return TokenBlock{}, errs.New(errs.Unavailable, "fleet: the fencing tokens of repository %s keep changing; retry", repoID).With("repo_id", repoID)
}

// tokenHigh reads the high-water of a tokens/ value: the JSON record, or
// a bare number (set by hand); anything else is refused, never read as
// lower than it may have been.
func tokenHigh(key string, v []byte) (uint64, error) {
	var tv tokenValue
	if json.Unmarshal(v, &tv) == nil {
		return tv.High, nil
	}
	if h, err := strconv.ParseUint(string(v), 10, 64); err == nil {
		return h, nil
	}
	return 0, errs.New(errs.Internal, "fleet: %s holds no token reservation; put {\"high\": N} there, N at least the highest fencing token any node issued for it", key)
}

// TokensReserved answers the fleet's reserved high-water for repoID (0
// when none was ever reserved).
func (n *Node) TokensReserved(ctx context.Context, repoID string) (uint64, error) {
	if err := validRepoID(repoID); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
	defer cancel()
	resp, err := n.cli.Get(ctx, n.keys.tokens(repoID))
	if err != nil {
		return 0, etcdError(err, "read the fencing tokens of repository "+repoID)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return tokenHigh(n.keys.tokens(repoID), resp.Kvs[0].Value)
}
