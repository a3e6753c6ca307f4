package op

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/internal/search"
)

// maxBoundLists bounds the roots whose lists are kept (repositories,
// targets and job worktrees over the life of the daemon); past it the
// cache starts over.
const maxBoundLists = 4096

// denyCache keeps the denylist and the Searcher of each root, per policy
// digest (the exceptions come from the policy).
type denyCache struct {
	mu sync.Mutex // protects m
	m  map[string]boundDeny
}

type boundDeny struct {
	digest   string
	list     *pathsafe.Denylist
	searcher *search.Searcher // nil until SearcherFor asks
}

// DenyFor returns the secret denylist of the directory at root (a
// repository's work tree, a target, a job's worktree): e.Deny bound to
// root's canonical path (pathsafe.Denylist.ForRoot), with the exceptions
// the loaded policy makes for that repository (secret_exceptions; a job's
// worktree has its repository's). It is the one list every surface of the
// root decides with: path checks, the gate, the secrets the sandbox
// closes and redaction learns, search, listings, undo, context. It is
// cached per root and per policy digest: a reload that changes the
// exceptions gives a new list (and a new Searcher, root checker and
// secret set).
func (e *Env) DenyFor(root string) *pathsafe.Denylist {
	var p *policy.Policy
	if e.Gov != nil {
		p = e.Gov.LoadedPolicy()
	}
	digest := p.Digest()
	e.denies.mu.Lock()
	b, ok := e.denies.m[root]
	e.denies.mu.Unlock()
	if ok && b.digest == digest {
		return b.list
	}
	canon := pathsafe.CanonicalDir(root)
	exceptions := exceptionsFor(p, canon)
	if len(p.SecretExceptions()) > 0 {
		if origin := e.worktreeOrigin(canon); origin != "" {
			exceptions = append(exceptions, exceptionsFor(p, pathsafe.CanonicalDir(origin))...)
		}
	}
	list, err := e.Deny.ForRoot(root, exceptions)
	if err != nil {
		// A policy checks its exceptions when it loads; if one got
		// through anyway, the root keeps the whole list (fail closed).
		if e.Logger != nil {
			e.Logger.Warn("denylist: exceptions not applied", zap.String("root", root), zap.Error(err))
		}
		if list, err = e.Deny.ForRoot(root, nil); err != nil {
			return e.Deny
		}
	}
	e.denies.mu.Lock()
	if e.denies.m == nil || len(e.denies.m) >= maxBoundLists {
		e.denies.m = map[string]boundDeny{}
	}
	won := true
	if cur, ok := e.denies.m[root]; ok && cur.digest == digest {
		list, won = cur.list, false // a concurrent caller won: one list per root and digest
	} else {
		e.denies.m[root] = boundDeny{digest: digest, list: list}
	}
	e.denies.mu.Unlock()
	if won && e.Logger != nil && len(list.Exceptions()) > 0 {
		e.Logger.Info("denylist: a person's exceptions apply", zap.String("root", list.Root()),
			zap.Strings("paths", list.Exceptions()), zap.String("policy_digest", digest))
	}
	return list
}

// SearcherFor returns the Searcher of the directory at root: e.Searcher's
// engine and limits, excluding the secret paths of DenyFor(root). nil when
// e has no Searcher. One Searcher per list, so a live index's content cache
// (bound to a Searcher) starts over when the list changes.
func (e *Env) SearcherFor(root string) *search.Searcher {
	if e.Searcher == nil {
		return nil
	}
	list := e.DenyFor(root)
	e.denies.mu.Lock()
	defer e.denies.mu.Unlock()
	b := e.denies.m[root]
	if b.list != list {
		// Evicted or replaced meanwhile: a Searcher of this list, not kept.
		return e.searcherOf(list)
	}
	if b.searcher == nil {
		b.searcher = e.searcherOf(list)
		e.denies.m[root] = b
	}
	return b.searcher
}

// searcherOf is e.Searcher (its engine, limits and confinement) with the
// exclusions of list.
func (e *Env) searcherOf(list *pathsafe.Denylist) *search.Searcher {
	s := *e.Searcher
	s.Exclude = func(rel string) bool {
		_, ok := list.Match(rel)
		return ok
	}
	return &s
}

// exceptionsFor returns the globs p's secret_exceptions name for the
// repository whose canonical work tree is root.
func exceptionsFor(p *policy.Policy, root string) []string {
	var out []string
	for _, x := range p.SecretExceptions() {
		if x.Repo == root || pathsafe.CanonicalDir(x.Repo) == root {
			out = append(out, x.Paths...)
		}
	}
	return out
}

// worktreeOrigin returns the repository root a job's worktree was made
// from ("" when root is none): worktrees live in the runtime's data dir,
// named after their job (<data dir>/worktrees/<job id>[-<attempt>]), which
// no agent can write, and the job's record names its repository.
func (e *Env) worktreeOrigin(root string) string {
	if e.RT == nil || e.RT.DataDir() == "" {
		return ""
	}
	dir := pathsafe.CanonicalDir(filepath.Join(e.RT.DataDir(), "worktrees"))
	rest, ok := strings.CutPrefix(root, dir+"/")
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return ""
	}
	id := rest
	if i := strings.LastIndexByte(id, '-'); i > 0 && allDigits(id[i+1:]) {
		id = id[:i]
	}
	timeout := e.RequestTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	j, err := e.RT.Jobs.Get(ctx, id)
	if err != nil {
		return ""
	}
	return j.Root
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
