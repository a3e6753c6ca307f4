package liveview

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/internal/gitindex"
)

// Bounds of the submodules whose files the view searches: the watcher's
// (internal/watch), past which the checkout is not watched at all.
const (
	maxSubmodules     = 64
	maxSubmoduleDepth = 8
)

// underSubmodule reports whether p is a submodule of ix (a gitlink) or a
// path inside one: a change there may change the submodule's files, which
// git lists for the search candidates (submoduleFiles).
func underSubmodule(ix *gitindex.Index, p string) bool {
	if ix == nil {
		return false
	}
	for q := p; q != "." && q != "/" && q != ""; q = path.Dir(q) {
		if e, ok := ix.Lookup(q); ok && e.Mode == gitindex.ModeGitlink {
			return true
		}
	}
	return false
}

// submoduleFiles lists the files of the populated submodules of ix (a
// superproject at root), nested ones too, as paths of the superproject's
// work tree: what rg finds there, and what the superproject's index does
// not list (a gitlink is one entry). Each submodule's files are asked of
// git in it (`git ls-files --cached --others --exclude-standard` and its
// gitlinks with --stage), for those paths only.
func (v *View) submoduleFiles(ctx context.Context, ix *gitindex.Index) ([]string, error) {
	type sub struct {
		rel   string
		depth int
	}
	var todo []sub
	for _, e := range ix.Entries {
		if e.Mode == gitindex.ModeGitlink {
			todo = append(todo, sub{e.Path, 1})
		}
	}
	var files []string
	for n := 0; len(todo) > 0; n++ {
		s := todo[0]
		todo = todo[1:]
		if n >= maxSubmodules || s.depth > maxSubmoduleDepth {
			return nil, fmt.Errorf("more than %d submodules, or nested deeper than %d", maxSubmodules, maxSubmoduleDepth)
		}
		dir := filepath.Join(v.root, filepath.FromSlash(s.rel))
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
			continue // not populated: an empty directory, nothing to search
		}
		listed, err := v.lsSub(ctx, dir, "--cached", "--others", "--exclude-standard")
		if err != nil {
			return nil, err
		}
		staged, err := v.lsSub(ctx, dir, "--stage")
		if err != nil {
			return nil, err
		}
		links := map[string]bool{}
		for _, l := range staged {
			// "<mode> <oid> <stage>\t<path>"
			if meta, p, ok := strings.Cut(l, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
				links[p] = true
				todo = append(todo, sub{s.rel + "/" + p, s.depth + 1})
			}
		}
		for _, f := range listed {
			if !links[f] {
				files = append(files, s.rel+"/"+f)
			}
		}
	}
	return files, nil
}

// lsSub runs `git ls-files -z <args>` in a submodule's work tree.
func (v *View) lsSub(ctx context.Context, dir string, args ...string) ([]string, error) {
	out, truncated, err := v.git.Run(ctx, dir, 64<<20, append([]string{"ls-files", "-z"}, args...)...)
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, fmt.Errorf("git ls-files output past 64 MiB in %s", dir)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files, nil
}
