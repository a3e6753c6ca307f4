package harness

import (
	"sync"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/gitx"
	"github.com/harnessd/harnessd/harness/pathsafe"
)

// fastPath holds the mechanisms of the Fast Path, built once per Harness.
type fastPath struct {
	git  *gitx.Git
	deny *pathsafe.Denylist

	mu    sync.Mutex // protects roots
	roots map[string]*pathsafe.Root
}

func newFastPath(h *Harness) (*fastPath, error) {
	deny, err := pathsafe.NewDenylist(pathsafe.DefaultSecretPatterns())
	if err != nil {
		return nil, err
	}
	return &fastPath{git: &gitx.Git{}, deny: deny, roots: map[string]*pathsafe.Root{}}, nil
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

func fastOps() []Op { return nil }
