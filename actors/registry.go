package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// RepoID returns the stable repository id of a canonical work-tree root.
func RepoID(root string) string { return "repo_" + shortHash("repo\x00"+root) }

// CheckoutID returns the stable checkout id of a canonical work-tree root.
func CheckoutID(root string) string { return "co_" + shortHash("checkout\x00"+root) }

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// RepoEntry is one repository in the published RepoIndex.
type RepoEntry struct {
	Repo     messages.Repository
	Checkout *actor.PID
}

// RepoIndex is the registry's published, immutable view of the registered
// repositories: the registry actor is its only writer and replaces it whole
// after every change, so Fast Path callers resolve a repo_id without a
// round trip through the mailbox.
type RepoIndex struct {
	p atomic.Pointer[map[string]RepoEntry]
}

// Lookup returns the entry for repoID.
func (ix *RepoIndex) Lookup(repoID string) (RepoEntry, bool) {
	m := ix.p.Load()
	if m == nil {
		return RepoEntry{}, false
	}
	e, ok := (*m)[repoID]
	return e, ok
}

// Len returns the number of registered repositories.
func (ix *RepoIndex) Len() int {
	m := ix.p.Load()
	if m == nil {
		return 0
	}
	return len(*m)
}

// All returns every entry sorted by root.
func (ix *RepoIndex) All() []RepoEntry {
	m := ix.p.Load()
	if m == nil {
		return nil
	}
	out := make([]RepoEntry, 0, len(*m))
	for _, e := range *m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Repo.Root < out[j].Repo.Root })
	return out
}

func (ix *RepoIndex) publish(m map[string]RepoEntry) { ix.p.Store(&m) }

// CheckoutFactory builds the props of a checkout actor for a repository.
type CheckoutFactory func(repo messages.Repository) *actor.Props

// Registry owns the set of registered repositories and one checkout actor
// per checkout.
type Registry struct {
	store     *persistence.Store
	index     *RepoIndex
	lg        *zap.Logger
	checkouts CheckoutFactory

	repos map[string]messages.Repository
	pids  map[string]*actor.PID
}

// NewRegistry returns the registry's producer.
func NewRegistry(store *persistence.Store, index *RepoIndex, checkouts CheckoutFactory, lg *zap.Logger) actor.Producer {
	return func() actor.Actor {
		return &Registry{store: store, index: index, checkouts: checkouts, lg: lg}
	}
}

// Receive dispatches the registry's messages.
func (a *Registry) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.restore(ctx)
	case messages.Register:
		r, err := a.register(ctx, m)
		reply(ctx, r, err)
	case messages.Unregister:
		r, err := a.unregister(ctx, m)
		reply(ctx, r, err)
	case messages.ListRepos:
		ctx.Respond(messages.Repos{Repos: a.list()})
	case messages.Counts:
		ctx.Respond(messages.CountsReply{ByKind: map[string]int{"registry": 1, "checkout": len(a.pids)}})
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		// Every change is persisted with sync when it happens; drain the
		// checkouts so their queued work finishes.
		for _, pid := range a.pids {
			_ = ctx.PoisonFuture(pid).Wait()
		}
	}
}

// restore loads every repository from the store and starts its checkout
// actor. Idempotent: a restarted instance starts empty and rebuilds.
func (a *Registry) restore(ctx actor.Context) {
	a.repos = map[string]messages.Repository{}
	a.pids = map[string]*actor.PID{}
	err := a.store.Scan([]byte(persistence.PrefixRepo), func(_ []byte, decode func(any) error) error {
		var r messages.Repository
		if err := decode(&r); err != nil {
			return err
		}
		a.repos[r.ID] = r
		return nil
	})
	if err != nil {
		// A store we cannot read is a broken invariant: crash and let the
		// supervisor decide.
		panic("registry: restore: " + err.Error())
	}
	for _, r := range a.repos {
		a.spawnCheckout(ctx, r)
	}
	a.publish()
}

func (a *Registry) register(ctx actor.Context, m messages.Register) (messages.Registered, error) {
	if m.Root == "" {
		return messages.Registered{}, errs.New(errs.InvalidArgument, "register: empty root")
	}
	id := RepoID(m.Root)
	if r, ok := a.repos[id]; ok {
		regrant := m.Grant.By != "" && m.Grant.By != r.Grant.By && messages.GrantRank(m.Grant) >= messages.GrantRank(r.Grant)
		if (m.Identity == (messages.RootIdentity{}) || r.Identity == m.Identity) && !regrant {
			return messages.Registered{Repo: r}, nil
		}
		if regrant {
			// A person confirms (or an area now covers) a grant made before.
			r.Grant = messages.RootGrant{By: m.Grant.By, At: m.Now.UTC()}
		}
		// The directory at the path may not be the one recorded (or none
		// was): record this one, so REPOSITORY_MOVED stops.
		old := r.Identity
		moved := m.Identity != (messages.RootIdentity{}) && r.Identity != m.Identity
		if moved {
			r.Identity, r.CommonDir = m.Identity, m.CommonDir
		}
		if err := a.store.PutSync(persistence.RepoKey(id), r); err != nil {
			return messages.Registered{}, errs.Wrap(errs.Internal, err, "persist repository: %v", err)
		}
		a.repos[id] = r
		a.publish()
		return messages.Registered{Repo: r, Reidentified: moved && old != (messages.RootIdentity{})}, nil
	}
	r := messages.Repository{ID: id, CheckoutID: CheckoutID(m.Root), Root: m.Root, CommonDir: m.CommonDir, Registered: m.Now.UTC(), Identity: m.Identity}
	if m.Grant.By != "" {
		r.Grant = messages.RootGrant{By: m.Grant.By, At: m.Now.UTC()}
	}
	if err := a.store.PutSync(persistence.RepoKey(id), r); err != nil {
		return messages.Registered{}, errs.Wrap(errs.Internal, err, "persist repository: %v", err)
	}
	a.repos[id] = r
	a.spawnCheckout(ctx, r)
	a.publish()
	return messages.Registered{Repo: r, Created: true}, nil
}

func (a *Registry) unregister(ctx actor.Context, m messages.Unregister) (messages.Unregistered, error) {
	r, ok := a.repos[m.RepoID]
	if !ok {
		return messages.Unregistered{}, errs.New(errs.RepositoryNotRegistered, "repository %q is not registered", m.RepoID).With("repo_id", m.RepoID)
	}
	if err := a.store.DeleteSync(persistence.RepoKey(r.ID)); err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return messages.Unregistered{}, errs.Wrap(errs.Internal, err, "delete repository: %v", err)
	}
	delete(a.repos, r.ID)
	if pid := a.pids[r.ID]; pid != nil {
		ctx.Poison(pid)
		delete(a.pids, r.ID)
	}
	a.publish()
	return messages.Unregistered{Repo: r}, nil
}

func (a *Registry) list() []messages.Repository {
	out := make([]messages.Repository, 0, len(a.repos))
	for _, r := range a.repos {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Root < out[j].Root })
	return out
}

func (a *Registry) spawnCheckout(ctx actor.Context, r messages.Repository) {
	if a.checkouts == nil {
		return
	}
	pid, err := ctx.SpawnNamed(a.checkouts(r), "checkout-"+r.CheckoutID)
	if err != nil {
		// The name is taken only if a previous instance's child is still
		// stopping; reuse it.
		if errors.Is(err, actor.ErrNameExists) {
			a.pids[r.ID] = pid
			return
		}
		a.lg.Error("spawn checkout", zap.String("repo_id", r.ID), zap.Error(err))
		return
	}
	a.pids[r.ID] = pid
}

func (a *Registry) publish() {
	m := make(map[string]RepoEntry, len(a.repos))
	for id, r := range a.repos {
		m[id] = RepoEntry{Repo: r, Checkout: a.pids[id]}
	}
	a.index.publish(m)
}
