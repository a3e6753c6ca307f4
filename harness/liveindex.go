package harness

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/gitx"
)

// ignoredDirs lists the directories of the work tree at root that git
// ignores entirely (`git ls-files --others --ignored --exclude-standard
// --directory`): the watcher does not watch them. On any error it returns
// nil, and every directory is watched.
func ignoredDirs(git *gitx.Git, root string) map[string]bool {
	if git == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, truncated, err := git.Run(ctx, root, 16<<20, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil || truncated {
		return nil
	}
	dirs := map[string]bool{}
	for _, e := range bytes.Split(out, []byte{0}) {
		if d, ok := strings.CutSuffix(string(e), "/"); ok && d != "" {
			dirs[d] = true
		}
	}
	return dirs
}

// Rescan makes the live index of a repository's checkout forget what it
// knows, as if its watcher's event queue had overflowed: the next query
// rebuilds from git. Operators use it when they suspect the index; tests
// use it to prove answers survive an overflow.
func (h *Harness) Rescan(ctx context.Context, repoID string) error {
	e, err := h.env.Repo(repoID)
	if err != nil {
		return err
	}
	_, err = h.rt.WatchOverflow(ctx, e)
	return err
}

// WarmLiveIndex waits until the live index of a repository's checkout has
// built its view. A view builds in the background on its first use (the
// watcher's walk, then a base from git; for a big checkout, the search
// index) and answers by running git and rg meanwhile, so a first call
// costs what git costs; benchmarks and tests
// that measure or prove in-process answers call this first. It returns
// nil when the live index is off.
func (h *Harness) WarmLiveIndex(ctx context.Context, repoID string) error {
	e, err := h.env.Repo(repoID)
	if err != nil {
		return err
	}
	v := h.env.View(e)
	if v == nil {
		return nil
	}
	if _, err = v.Warm(ctx); err != nil {
		return err
	}
	_, err = v.FillSearch(ctx, h.env.SearcherFor(e.Repo.Root))
	return err
}
