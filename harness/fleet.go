package harness

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/messages"
)

// FleetConfig joins a Harness to a fleet of harnessd nodes whose shared
// state is in etcd (docs/fleet.md). The zero value is no fleet.
type FleetConfig struct {
	// Endpoints are etcd client URLs (harnessd serve --cluster-store).
	Endpoints []string
	// Embed runs an etcd member in this process first (--embed-etcd);
	// Endpoints default to its client URL.
	Embed *fleet.EmbedConfig
	// Node is this node's name in the fleet (required in a fleet).
	Node string
	// Advertise is the URL other nodes fetch this node's evidence blobs
	// from (its HTTP API); "" = it serves none.
	Advertise string
	// TTL is the session lease's (0 = fleet's default, 10 s).
	TTL time.Duration
	// RemoteCache is a bazel-remote style HTTP cache for the evidence
	// (action results and blobs); "" = etcd.
	RemoteCache string
}

func (c FleetConfig) enabled() bool { return len(c.Endpoints) > 0 || c.Embed != nil }

// joinFleet starts the embedded etcd member (if any) and joins the fleet.
func (h *Harness) joinFleet(ctx context.Context, dataDir string) error {
	fc := h.cfg.Fleet
	if !fc.enabled() {
		return nil
	}
	if h.cfg.InMemory || dataDir == "" {
		return errs.New(errs.InvalidArgument, "a fleet node needs a data dir on disk (not InMemory): its evidence blobs and etcd member live there")
	}
	if fc.Embed != nil {
		e, err := fleet.StartEmbedded(ctx, *fc.Embed)
		if err != nil {
			return err
		}
		h.etcd = e
		if len(fc.Endpoints) == 0 {
			fc.Endpoints = []string{e.ClientURL()}
		}
	}
	var cache fleet.Cache
	if fc.RemoteCache != "" {
		c, err := fleet.NewHTTPCache(fc.RemoteCache)
		if err != nil {
			return err
		}
		cache = c
	}
	key, err := fleetKey(dataDir)
	if err != nil {
		return err
	}
	n, err := fleet.Join(ctx, fleet.Config{Endpoints: fc.Endpoints, Node: fc.Node, Advertise: fc.Advertise, TTL: fc.TTL,
		Logger: h.lg.With(zap.String("component", "fleet")), Cache: cache, BlobDir: filepath.Join(dataDir, "fleet-blobs"), SealKey: key})
	if err != nil {
		return err
	}
	h.fleet = n
	// Request ids are fleet-wide (fleethome.go); the token keeper starts
	// with the actor tree (claimHomes).
	h.env.Ledger = fleetLedger{Ledger: h.env.Ledger, n: n, toks: newTokenKeeper(n, h.rt, h.lg.With(zap.String("component", "fleet-tokens")))}
	h.lg.Info("joined the fleet", zap.String("node", n.Name()), zap.Int64("epoch", n.Epoch()), zap.Strings("etcd", fc.Endpoints), zap.Bool("sealed", key != nil))
	if key == nil {
		h.lg.Warn("the fleet's evidence is not sealed: whoever can write etcd can forge it; put the fleet key in " + FleetKeyPath(dataDir) + " on every node (docs/fleet.md)")
	}
	return nil
}

// FleetKeyPath is where a node's fleet key lives: in the data dir, hidden
// from every confined process.
func FleetKeyPath(dataDir string) string { return filepath.Join(dataDir, "fleet.secret") }

// fleetKey reads the fleet key a person put in the data dir (nil when
// there is none). A key others may read is refused: it is the proof
// that a node of the fleet recorded a piece of evidence.
func fleetKey(dataDir string) ([]byte, error) {
	p := FleetKeyPath(dataDir)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "fleet key %s: %v", p, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, errs.New(errs.InvalidArgument, "fleet key %s is readable by others (mode %v): chmod 600 it", p, fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "fleet key %s: %v", p, err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < 16 {
		return nil, errs.New(errs.InvalidArgument, "fleet key %s has %d bytes; give at least 16 (head -c 32 /dev/urandom | xxd -p -c 64 > %s), the same on every node", p, len(key), p)
	}
	return key, nil
}

// leaveFleet leaves the fleet gracefully: no new claims; the runs in
// flight publish first; then the session ends (its claims vanish).
func (h *Harness) leaveFleet(ctx context.Context) {
	if h.fleet == nil {
		return
	}
	h.stopFleetJobs() // its attempts go with the lease, for other nodes to take over
	h.tokens().close()
	if err := h.fleet.Close(ctx); err != nil {
		h.lg.Warn("leave the fleet", zap.Error(err))
	}
}

// closeFleet ends the session (if leaveFleet did not) and stops the
// embedded etcd member.
func (h *Harness) closeFleet() {
	if h.fleet != nil {
		h.tokens().close() // idempotent
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = h.fleet.Close(ctx) // idempotent
		cancel()
	}
	if h.etcd != nil {
		h.etcd.Close()
	}
}

// Fleet returns this node's membership of its fleet, or nil outside one
// (the HTTP surface serves its evidence blobs to the other nodes).
func (h *Harness) Fleet() *fleet.Node { return h.fleet }

// tokens answers the node's token keeper (nil outside a fleet; its
// methods do nothing then).
func (h *Harness) tokens() *tokenKeeper {
	if h.env == nil {
		return nil
	}
	fl, _ := h.env.Ledger.(fleetLedger)
	return fl.toks
}

// tokenKeeper reserves the fencing tokens of the checkouts this node is
// the home of, in blocks from etcd, ahead of need (internal/fleet
// tokens.go): a goroutine looks at each checkout's highest token every
// min(TTL/3, 1 s) (a message to its actor, which also re-sends the
// block) and reserves the next block when less than half of the block is
// left or the node's session changed (a new epoch reserves above every
// token ever reserved), sized to the checkout's pace. The checkout's
// actor raises its floor to the block and refuses tokens above it
// (actors.TokenBlock). Never inside an actor's Receive.
type tokenKeeper struct {
	n     *fleet.Node
	rt    *runtime.Runtime
	lg    *zap.Logger
	ctx   context.Context
	stop  context.CancelFunc
	donec chan struct{}
	start sync.Once
	shut  sync.Once

	pass  sync.Mutex // one pass at a time
	mu    sync.Mutex // protects repos
	repos map[string]*keptTokens
}

// keptTokens is a home checkout's block, its highest token at the last
// look, and the floor its session's first block gave it.
type keptTokens struct {
	blk    fleet.TokenBlock
	seen   uint64
	floor  uint64
	failed string // the last failure logged (logged again only when it changes)
}

func newTokenKeeper(n *fleet.Node, rt *runtime.Runtime, lg *zap.Logger) *tokenKeeper {
	k := &tokenKeeper{n: n, rt: rt, lg: lg, donec: make(chan struct{}), repos: map[string]*keptTokens{}}
	k.ctx, k.stop = context.WithCancel(context.Background())
	return k
}

// run starts the keeper's goroutine (once).
func (k *tokenKeeper) run() {
	if k == nil {
		return
	}
	k.start.Do(func() {
		go func() {
			defer close(k.donec)
			t := time.NewTicker(max(min(k.n.TTL()/3, time.Second), 50*time.Millisecond))
			defer t.Stop()
			for {
				select {
				case <-k.ctx.Done():
					return
				case <-t.C:
				}
				k.mu.Lock()
				ids := make([]string, 0, len(k.repos))
				for id := range k.repos {
					ids = append(ids, id)
				}
				k.mu.Unlock()
				for _, id := range ids {
					k.keep(k.ctx, id)
				}
			}
		}()
	})
}

// close stops the goroutine and waits for it; idempotent.
func (k *tokenKeeper) close() {
	if k == nil {
		return
	}
	k.shut.Do(func() {
		k.stop()
		k.start.Do(func() { close(k.donec) }) // never started
		<-k.donec
	})
}

// add keeps repoID's tokens (this node is its home) and reserves its
// first block now, so its checkout issues no token below the fleet's.
func (k *tokenKeeper) add(ctx context.Context, repoID string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	if _, ok := k.repos[repoID]; !ok {
		k.repos[repoID] = &keptTokens{}
	}
	k.mu.Unlock()
	k.keep(ctx, repoID)
}

// remove stops keeping repoID's tokens (unregistered).
func (k *tokenKeeper) remove(repoID string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	delete(k.repos, repoID)
	k.mu.Unlock()
}

// keep looks at repoID's checkout and reserves its next block if it
// needs one. A node whose session is lost reserves nothing: the checkout
// keeps its block and refuses tokens above it.
func (k *tokenKeeper) keep(ctx context.Context, repoID string) {
	k.pass.Lock()
	defer k.pass.Unlock()
	k.mu.Lock()
	kt := k.repos[repoID]
	var cur fleet.TokenBlock
	var seen, floor uint64
	if kt != nil {
		cur, seen, floor = kt.blk, kt.seen, kt.floor
	}
	k.mu.Unlock()
	e, ok := k.rt.Registry.Lookup(repoID)
	if kt == nil || !ok {
		k.remove(repoID)
		return
	}
	set, err := k.send(e.Checkout, actors.TokenBlock{Floor: floor, Ceiling: cur.Ceiling})
	if err != nil {
		k.warn(repoID, "fleet tokens: ask the checkout", err)
		return
	}
	epoch := k.n.Epoch()
	if !fleet.NeedBlock(cur, set.High, epoch) {
		k.note(repoID, cur, set.High, floor)
		return
	}
	used := uint64(0)
	if cur.Epoch == epoch && set.High > seen {
		used = set.High - seen
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	blk, err := k.n.ReserveTokens(rctx, repoID, set.High, fleet.BlockSize(used))
	cancel()
	if err != nil {
		if errs.CodeOf(err) != errs.LeaseLost {
			k.warn(repoID, "fleet tokens: reserve a block", err)
		}
		return
	}
	floor = sessionFloor(cur, blk, floor)
	if _, err := k.send(e.Checkout, actors.TokenBlock{Floor: floor, Ceiling: blk.Ceiling}); err != nil {
		k.warn(repoID, "fleet tokens: give the checkout its block", err)
		return
	}
	k.note(repoID, blk, set.High, floor)
}

// sessionFloor is the checkout's floor once blk follows cur: a block that
// continues the session's last one (the same epoch, no other reservation
// between) keeps the session's floor (every token above it is above every
// earlier owner's, and the checkout's tokens do not jump); any other
// block raises it to the block's start.
func sessionFloor(cur, blk fleet.TokenBlock, floor uint64) uint64 {
	if blk.Epoch != cur.Epoch || blk.Floor != cur.Ceiling {
		return blk.Floor
	}
	return floor
}

// warn logs a failure of repoID's pass unless it is the one logged last.
func (k *tokenKeeper) warn(repoID, what string, err error) {
	msg := what + ": " + errs.From(err).Message
	k.mu.Lock()
	kt := k.repos[repoID]
	repeat := kt != nil && kt.failed == msg
	if kt != nil {
		kt.failed = msg
	}
	k.mu.Unlock()
	if !repeat {
		k.lg.Warn(what, zap.String("repo_id", repoID), zap.Error(err))
	}
}

// note records repoID's block, its highest token at this look and the
// floor the checkout has.
func (k *tokenKeeper) note(repoID string, blk fleet.TokenBlock, high, floor uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if kt := k.repos[repoID]; kt != nil {
		kt.blk, kt.seen, kt.floor, kt.failed = blk, high, floor, ""
	}
}

// send gives a checkout's actor a token block (or asks its highest token).
func (k *tokenKeeper) send(pid *actor.PID, m actors.TokenBlock) (actors.TokenBlockSet, error) {
	v, err := k.rt.System().Root.RequestFuture(pid, m, 5*time.Second).Result()
	if err != nil {
		return actors.TokenBlockSet{}, errs.Wrap(errs.Unavailable, err, "the checkout did not answer: %v", err)
	}
	switch v := v.(type) {
	case actors.TokenBlockSet:
		return v, nil
	case messages.Failed:
		return actors.TokenBlockSet{}, actors.ErrorOf(v)
	}
	return actors.TokenBlockSet{}, errs.New(errs.Internal, "the checkout answered a token block with %T", v)
}
