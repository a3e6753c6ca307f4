package harness

import (
	"sync"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/internal/search"
)

// fastPath holds the mechanisms of the Fast Path, built once per Harness.
type fastPath struct {
	git      *gitx.Git
	deny     *pathsafe.Denylist
	searcher *search.Searcher
	redactor *redact.Redactor

	mu    sync.Mutex // protects roots
	roots map[string]*pathsafe.Root
}

func newFastPath(h *Harness) (*fastPath, error) {
	deny, err := pathsafe.NewDenylist(h.cfg.secretPatterns())
	if err != nil {
		return nil, err
	}
	exclude := func(rel string) bool { _, ok := deny.Match(rel); return ok }
	return &fastPath{
		git:      &gitx.Git{},
		deny:     deny,
		searcher: search.New(exclude, search.Limits{}),
		redactor: redact.Default(),
		roots:    map[string]*pathsafe.Root{},
	}, nil
}

// root returns the cached path checker of a repository.
func (f *fastPath) root(e actors.RepoEntry) (*pathsafe.Root, error) {
	f.mu.Lock()
	r, ok := f.roots[e.Repo.ID]
	f.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := pathsafe.NewRoot(e.Repo.Root, f.deny)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.roots[e.Repo.ID] = r
	f.mu.Unlock()
	return r, nil
}

func (f *fastPath) forget(repoID string) {
	f.mu.Lock()
	delete(f.roots, repoID)
	f.mu.Unlock()
}

func (f *fastPath) close() {}
