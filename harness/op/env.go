package op

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/internal/ctxasm"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/liveview"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/search"
	"github.com/harnessd/harnessd/internal/watch"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Env holds what operations run with: the store, the actors' clients, the
// governor and the Fast Path mechanisms. One Env per open Harness, built
// explicitly by harness.Open; all per-instance state lives here, none in
// package variables.
type Env struct {
	Store *persistence.Store
	// RT is the actor runtime: registry, jobs, checks and lanes.
	RT *runtime.Runtime
	// Ledger, Leases and Audit are RT's by default; tests pass fakes.
	Ledger runtime.Ledger
	Leases runtime.Leases
	Gov    *govern.Governor

	Git      *gitx.Git
	Deny     *pathsafe.Denylist
	Searcher *search.Searcher
	Redactor *redact.Redactor
	// Probe caches tool version probes of check identities.
	Probe *checkid.EnvProbe
	// Results keeps large batch step results by reference.
	Results *ResultCache
	// Sandbox confines the processes operations start (nil = none).
	Sandbox *sandbox.Sandbox
	// Secrets knows the secret paths and values of checkouts (nil = none).
	Secrets Secrets
	// PreImages keeps the pre-images of the files writes change, for
	// revert (nil = none kept: receipts cannot be reverted).
	PreImages *preimage.Store
	// JobUndoMaxBytes and JobUndoMaxFiles are the undo budget of a job
	// that writes its checkout in place (harness.Config's; 0 = the
	// preimage defaults): job_start estimates it before queueing one.
	JobUndoMaxBytes int64
	JobUndoMaxFiles int
	// Hidden are the directories no confined process may see (the data
	// dir, the runtime's job logs and worktrees): no checkout may hold one.
	Hidden []string
	// Authority decides who may grant agents which roots (nil = no
	// allowed areas: every root an agent registers needs a person).
	Authority *Authority
	// Wiring holds the write hooks and the check and job services the
	// operation packages lend each other (ops.Wiring, set at Open).
	Wiring

	Logger         *zap.Logger
	Now            func() time.Time
	RequestTimeout time.Duration
	// Runs records the spans of calls in runs and draws their budgets; nil
	// = runs off (no spans, no budgets).
	Runs *runtime.Runs
	// Lookup resolves a repo_id; nil = RT's registry index.
	Lookup func(repoID string) (runtime.RepoEntry, bool)
	// ContextCache keeps the parsed files of context_assemble, revalidated
	// by (size, mtime, inode); the zero value is ready.
	ContextCache ctxasm.Cache

	// NoLiveIndex turns the live checkout index off: status, search and
	// diffs run git or rg every time (Source "exec").
	NoLiveIndex bool

	// Fence, if set, is asked before every write begins: an error (a
	// fleet node that lost its session answers LEASE_LOST) refuses the
	// write before anything is recorded or changed.
	Fence func() error
	// FleetJobs, if set, lets job_start's jobs outlive their node in a
	// fleet (harness/fleetjobs.go).
	FleetJobs FleetJobs

	mu    sync.Mutex // protects roots and views
	roots map[string]*pathsafe.Root
	views map[string]*liveview.View

	denies denyCache // the denylist and Searcher of each root (DenyFor)

	receipts atomic.Uint64 // receipts stored, for the periodic prune
	gens     sync.Map      // repo id -> *atomic.Uint64: harnessd's writes to the checkout

	knownOnce sync.Once
	knownBase *redact.Redactor // no rules: the base of KnownFor
}

// Generation counts harnessd's own writes to a checkout (mutations, writing
// jobs): part of the cheap tree revision of loop detection.
func (e *Env) Generation(repoID string) uint64 {
	if v, ok := e.gens.Load(repoID); ok {
		return v.(*atomic.Uint64).Load()
	}
	return 0
}

// Wrote records a write of harnessd to a checkout.
func (e *Env) Wrote(repoID string) {
	v, _ := e.gens.LoadOrStore(repoID, &atomic.Uint64{})
	v.(*atomic.Uint64).Add(1)
}

// Repo resolves a repo_id through the registry's published index.
func (e *Env) Repo(repoID string) (runtime.RepoEntry, error) {
	if repoID == "" {
		return runtime.RepoEntry{}, errs.New(errs.InvalidArgument, "repo_id is required")
	}
	lookup := e.Lookup
	if lookup == nil {
		lookup = e.RT.Registry.Lookup
	}
	r, ok := lookup(repoID)
	if !ok {
		return runtime.RepoEntry{}, errs.New(errs.RepositoryNotRegistered, "repository %q is not registered (see repository_list)", repoID).With("repo_id", repoID)
	}
	if why, ok := e.Suspended(repoID); ok {
		return runtime.RepoEntry{}, SuspendedRepo(repoID, r.Repo.Root, why)
	}
	return r, nil
}

// Root returns the cached path checker of a repository (or a target),
// deciding on secret paths with the root's own list (DenyFor): rebuilt
// when that list changes (a policy reload changed its exceptions).
func (e *Env) Root(r runtime.RepoEntry) (*pathsafe.Root, error) {
	deny := e.DenyFor(r.Repo.Root)
	e.mu.Lock()
	root, ok := e.roots[r.Repo.ID]
	e.mu.Unlock()
	if ok && root.Deny() == deny {
		return root, nil
	}
	root, err := pathsafe.NewRoot(r.Repo.Root, deny)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.roots == nil {
		e.roots = map[string]*pathsafe.Root{}
	}
	e.roots[r.Repo.ID] = root
	e.mu.Unlock()
	return root, nil
}

// Forget drops a repository's cached path checker and live index.
func (e *Env) Forget(repoID string) {
	e.mu.Lock()
	v := e.views[repoID]
	delete(e.roots, repoID)
	delete(e.views, repoID)
	e.mu.Unlock()
	if v != nil {
		v.Close()
	}
}

// CloseViews closes every live index (their cookie files are removed).
func (e *Env) CloseViews() {
	e.mu.Lock()
	views := e.views
	e.views = nil
	e.mu.Unlock()
	for _, v := range views {
		v.Close()
	}
}

// Head returns the commit HEAD names in r's checkout ("" on an unborn
// branch): from the live index when the checkout has one (no git process
// while nothing changed), else git rev-parse.
func (e *Env) Head(ctx context.Context, r runtime.RepoEntry) (string, error) {
	if v := e.View(r); v != nil {
		st, err := v.Status(ctx)
		if err == nil && st.Source == liveview.SourceIndex {
			return st.Head, nil
		}
	}
	return e.Git.Head(ctx, r.Repo.Root)
}

// View returns the live index of a repository's checkout, nil when the
// live index is off (the caller runs git or rg).
func (e *Env) View(r runtime.RepoEntry) *liveview.View {
	if e.NoLiveIndex || e.RT == nil || r.Checkout == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.views[r.Repo.ID]; ok {
		return v
	}
	if e.views == nil {
		e.views = map[string]*liveview.View{}
	}
	rt := e.RT
	v := liveview.New(r.Repo.Root, rt.CookieDir(r.Repo.Root), e.Git, func(ctx context.Context, cookie string, epoch, gen uint64) (liveview.Sync, error) {
		st, err := rt.WatchSync(ctx, r, messages.WatchSync{Cookie: cookie, Epoch: epoch, Gen: gen})
		if err != nil {
			return liveview.Sync{}, err
		}
		return liveview.Sync{Ready: st.Ready, Reason: st.Reason, Watches: st.Watches, CookieSeen: st.CookieSeen, State: watch.State{
			Epoch: st.Epoch, Gen: st.Gen, Complete: st.Complete, Changed: st.Changed, Meta: st.Meta, Reason: st.Reason}}, nil
	}, nil)
	e.views[r.Repo.ID] = v
	return v
}
