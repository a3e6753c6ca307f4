package actors

import (
	"errors"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// TargetID returns the stable id of a grant: the canonical root, the
// access, the owner and the root's identity, so registering the same
// directory with the same access again is idempotent, while a directory
// swapped in under the same path is another target.
func TargetID(root, access, owner string, id messages.RootIdentity) string {
	return "tgt_" + shortHash("target\x00"+root+"\x00"+access+"\x00"+owner+"\x00"+TargetFingerprint(id))
}

// WorkspaceID returns the workspace id of a canonical root: every grant on
// one root shares it.
func WorkspaceID(root string) string { return "ws_" + shortHash("workspace\x00"+root) }

// TargetFingerprint returns the identity fingerprint of a root: a digest
// of its device and inode.
func TargetFingerprint(id messages.RootIdentity) string {
	return "fp_" + shortHash("identity\x00"+strconv.FormatUint(id.Dev, 10)+":"+strconv.FormatUint(id.Ino, 10))
}

// TargetActorName returns the name of a root's target actor below the
// targets actor: target/<canonical root>.
func TargetActorName(root string) string { return "target/" + root }

// TargetEntry is one grant in the published TargetIndex, with the target
// actor of its root.
type TargetEntry struct {
	Grant messages.TargetGrant
	Actor *actor.PID
}

// TargetIndex is the targets actor's published, immutable view of the
// grants (the actor is its only writer and replaces it whole after every
// change): operations resolve a target_id without a round trip.
type TargetIndex struct {
	p atomic.Pointer[map[string]TargetEntry]
}

// Lookup returns the entry of targetID.
func (ix *TargetIndex) Lookup(targetID string) (TargetEntry, bool) {
	m := ix.p.Load()
	if m == nil {
		return TargetEntry{}, false
	}
	e, ok := (*m)[targetID]
	return e, ok
}

// All returns every entry sorted by root, then target id.
func (ix *TargetIndex) All() []TargetEntry {
	m := ix.p.Load()
	if m == nil {
		return nil
	}
	out := make([]TargetEntry, 0, len(*m))
	for _, e := range *m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Grant.Root != out[j].Grant.Root {
			return out[i].Grant.Root < out[j].Grant.Root
		}
		return out[i].Grant.TargetID < out[j].Grant.TargetID
	})
	return out
}

func (ix *TargetIndex) publish(m map[string]TargetEntry) { ix.p.Store(&m) }

// Targets owns the grants of repository-free targets and one target actor
// per canonical root (TargetActorName). It persists every grant with sync
// before it answers and restores them at start.
type Targets struct {
	store *persistence.Store
	index *TargetIndex
	lg    *zap.Logger
	now   func() time.Time

	grants map[string]messages.TargetGrant
	pids   map[string]*actor.PID // canonical root -> target actor
}

// NewTargets returns the producer of the targets actor. now nil = time.Now.
func NewTargets(store *persistence.Store, index *TargetIndex, lg *zap.Logger, now func() time.Time) actor.Producer {
	if lg == nil {
		lg = zap.NewNop()
	}
	if now == nil {
		now = time.Now
	}
	return func() actor.Actor { return &Targets{store: store, index: index, lg: lg, now: now} }
}

// Receive dispatches the targets actor's messages.
func (a *Targets) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "targets"))
		a.restore(ctx)
	case messages.TargetRegister:
		r, err := a.register(ctx, m)
		reply(ctx, r, err)
	case messages.TargetUnregister:
		r, err := a.unregister(ctx, m)
		reply(ctx, r, err)
	case messages.TargetPromote:
		r, err := a.promote(m)
		reply(ctx, r, err)
	case messages.TargetList:
		ctx.Respond(messages.TargetGrants{Grants: a.list()})
	case messages.Counts:
		ctx.Respond(messages.CountsReply{ByKind: map[string]int{"targets": 1, "target": len(a.pids)}})
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		// Grants are persisted when they change; drain the target actors
		// so their holders are answered.
		for _, pid := range a.pids {
			_ = ctx.PoisonFuture(pid).Wait()
		}
	}
}

// restore loads every grant and starts one target actor per root.
// Idempotent: a restarted instance starts empty and rebuilds.
func (a *Targets) restore(ctx actor.Context) {
	a.grants = map[string]messages.TargetGrant{}
	a.pids = map[string]*actor.PID{}
	err := a.store.Scan([]byte(persistence.PrefixTarget), func(_ []byte, decode func(any) error) error {
		var g messages.TargetGrant
		if err := decode(&g); err != nil {
			return err
		}
		a.grants[g.TargetID] = g
		return nil
	})
	if err != nil {
		panic("targets: restore: " + err.Error())
	}
	for _, g := range a.grants {
		a.spawn(ctx, g.Root)
	}
	a.publish()
}

func (a *Targets) register(ctx actor.Context, m messages.TargetRegister) (messages.TargetRegistered, error) {
	if m.Root == "" || m.Root[0] != '/' {
		return messages.TargetRegistered{}, errs.New(errs.InvalidArgument, "target register: root %q is not canonical", m.Root)
	}
	if m.Access != "read" && m.Access != "write" {
		return messages.TargetRegistered{}, errs.New(errs.InvalidArgument, "target register: access %q: use read or write", m.Access)
	}
	id := TargetID(m.Root, m.Access, m.Owner, m.Identity)
	if g, ok := a.grants[id]; ok {
		if m.Grant.By == "" || m.Grant.By == g.Grant.By || messages.GrantRank(m.Grant) < messages.GrantRank(g.Grant) {
			return messages.TargetRegistered{Grant: g}, nil
		}
		// A person confirms (or an area now covers) a grant made before.
		g.Grant = messages.RootGrant{By: m.Grant.By, At: m.Now.UTC()}
		if err := a.store.PutSync(persistence.TargetKey(id), g); err != nil {
			return messages.TargetRegistered{}, errs.Wrap(errs.Internal, err, "persist target: %v", err)
		}
		a.grants[id] = g
		a.publish()
		return messages.TargetRegistered{Grant: g}, nil
	}
	g := messages.TargetGrant{
		TargetID: id, WorkspaceID: WorkspaceID(m.Root), Root: m.Root, Access: m.Access, Owner: m.Owner,
		Identity: m.Identity, Fingerprint: TargetFingerprint(m.Identity), Registered: m.Now.UTC(),
	}
	if m.Grant.By != "" {
		g.Grant = messages.RootGrant{By: m.Grant.By, At: m.Now.UTC()}
	}
	if err := a.store.PutSync(persistence.TargetKey(id), g); err != nil {
		return messages.TargetRegistered{}, errs.Wrap(errs.Internal, err, "persist target: %v", err)
	}
	a.grants[id] = g
	a.spawn(ctx, g.Root)
	a.publish()
	return messages.TargetRegistered{Grant: g, Created: true}, nil
}

func (a *Targets) unregister(ctx actor.Context, m messages.TargetUnregister) (messages.TargetUnregistered, error) {
	g, ok := a.grants[m.TargetID]
	if !ok {
		return messages.TargetUnregistered{}, errTargetNotFound(m.TargetID)
	}
	if err := a.store.DeleteSync(persistence.TargetKey(g.TargetID)); err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return messages.TargetUnregistered{}, errs.Wrap(errs.Internal, err, "delete target: %v", err)
	}
	delete(a.grants, g.TargetID)
	if !a.rootUsed(g.Root) {
		if pid := a.pids[g.Root]; pid != nil {
			ctx.Poison(pid) // a holder keeps its slot until it releases
			delete(a.pids, g.Root)
		}
	}
	a.publish()
	return messages.TargetUnregistered{Grant: g}, nil
}

func (a *Targets) promote(m messages.TargetPromote) (messages.TargetRegistered, error) {
	g, ok := a.grants[m.TargetID]
	if !ok {
		return messages.TargetRegistered{}, errTargetNotFound(m.TargetID)
	}
	if g.PromotedRepo == m.RepoID {
		return messages.TargetRegistered{Grant: g}, nil
	}
	g.PromotedRepo = m.RepoID
	if err := a.store.PutSync(persistence.TargetKey(g.TargetID), g); err != nil {
		return messages.TargetRegistered{}, errs.Wrap(errs.Internal, err, "persist target: %v", err)
	}
	a.grants[g.TargetID] = g
	a.publish()
	return messages.TargetRegistered{Grant: g}, nil
}

func errTargetNotFound(id string) error {
	return errs.New(errs.NotFound, "target %q is not registered (see target_list; register it with target_register)", id).With("target_id", id)
}

func (a *Targets) rootUsed(root string) bool {
	for _, g := range a.grants {
		if g.Root == root {
			return true
		}
	}
	return false
}

func (a *Targets) list() []messages.TargetGrant {
	out := make([]messages.TargetGrant, 0, len(a.grants))
	for _, g := range a.grants {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Root != out[j].Root {
			return out[i].Root < out[j].Root
		}
		return out[i].TargetID < out[j].TargetID
	})
	return out
}

// spawn starts the target actor of root unless it runs.
func (a *Targets) spawn(ctx actor.Context, root string) {
	if a.pids[root] != nil {
		return
	}
	props := actor.PropsFromProducer(NewTarget(root, a.store, a.lg), actor.WithReceiverMiddleware(Recover(a.lg)))
	pid, err := ctx.SpawnNamed(props, TargetActorName(root))
	if err != nil && !errors.Is(err, actor.ErrNameExists) {
		a.lg.Error("spawn target", zap.String("root", root), zap.Error(err))
		return
	}
	a.pids[root] = pid
}

func (a *Targets) publish() {
	m := make(map[string]TargetEntry, len(a.grants))
	for id, g := range a.grants {
		m[id] = TargetEntry{Grant: g, Actor: a.pids[g.Root]}
	}
	a.index.publish(m)
}
