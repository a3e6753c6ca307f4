package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/gitx"
)

// The everyday verbs (cat, grep, diff, status, patch, log, check) work in
// the repository of the current directory, as git does: the registered
// root that contains it (the longest, after symlinks are resolved), and
// paths given relative to the current directory are sent relative to that
// root. --repo REPO_ID names another.

// here is the repository a command works in and where the person stands
// in it.
type here struct {
	ID   string // repo_id
	Root string // the registered root, symlinks resolved
	// Prefix is the current directory relative to Root, slash-separated
	// ("" at the root, or when --repo named a repository the current
	// directory is not in).
	Prefix string
	cwd    string // the current directory, symlinks resolved ("" with --repo elsewhere)
}

// registered is one registered repository as the resolution sees it.
type registered struct {
	ID, Root string
}

// realPath is p absolute and with its symlinks resolved; a path that does
// not exist (yet) keeps its unresolved tail under its longest existing
// parent.
func realPath(p string) string {
	p, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if dir == p {
		return p
	}
	return filepath.Join(realPath(dir), base)
}

// within reports whether p is root or under it (both clean and absolute).
func within(p, root string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// containing is the registered repository whose root contains dir (both
// resolved): the longest such root, since a registered repository may
// hold another (a submodule, a nested work tree).
func containing(dir string, repos []registered) (registered, bool) {
	best, found := registered{}, false
	for _, r := range repos {
		if within(dir, r.Root) && (!found || len(r.Root) > len(best.Root)) {
			best, found = r, true
		}
	}
	return best, found
}

// repoPath converts a path the person typed (relative to the current
// directory, or absolute) to one relative to the repository root,
// slash-separated; "." is the root itself. A path outside the root is a
// usage error naming it.
func (h here) repoPath(arg string) (string, error) {
	if arg == "" {
		return "", usageErr{"empty path"}
	}
	var abs string
	switch {
	case filepath.IsAbs(arg):
		abs = realPath(arg)
	case h.cwd != "":
		abs = realPath(filepath.Join(h.cwd, arg))
	default:
		// --repo names a repository the current directory is not in:
		// relative paths are relative to its root.
		abs = realPath(filepath.Join(h.Root, arg))
	}
	if !within(abs, h.Root) {
		return "", usageErr{fmt.Sprintf("%s is outside the repository %s (%s)", arg, h.ID, h.Root)}
	}
	rel, err := filepath.Rel(h.Root, abs)
	if err != nil {
		return "", usageErr{fmt.Sprintf("path %q: %v", arg, err)}
	}
	return filepath.ToSlash(rel), nil
}

// display is a repository-relative path as the person sees it from the
// current directory (git's way: ../x from a subdirectory).
func (h here) display(rel string) string {
	if h.cwd == "" || h.Prefix == "" {
		return rel
	}
	d, err := filepath.Rel(h.cwd, filepath.Join(h.Root, filepath.FromSlash(rel)))
	if err != nil {
		return rel
	}
	return filepath.ToSlash(d)
}

// listRepos asks the daemon for the registered repositories.
func (c *cli) listRepos(ctx context.Context) ([]registered, error) {
	raw, err := c.c.Call(ctx, "repository_list", nil)
	if err != nil {
		return nil, err
	}
	var l harness.ListResult
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decode repository_list: %w", err)
	}
	out := make([]registered, 0, len(l.Repositories))
	for _, r := range l.Repositories {
		out = append(out, registered{ID: r.ID, Root: realPath(r.Root)})
	}
	return out, nil
}

// notHere is the error of a current directory in no registered
// repository: what to run instead.
func notHere(cwd string) error {
	if top := gitx.WorkTreeTop(cwd); top != "" {
		return usageHint{fmt.Sprintf("%s is a git work tree harnessd does not know", top),
			"register it with `harness repo add " + shellWord(top) + "` (or add --register to this command), or name one with --repo REPO_ID"}
	}
	return usageHint{fmt.Sprintf("%s is in no registered repository", cwd),
		"cd into one ('harness repo ls' lists them) or name one with --repo REPO_ID"}
}

// shellWord is s as one shell word: as it is when nothing in it is
// special to a shell, else quoted.
func shellWord(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./,:@+=-", r)) {
			return shellQuote(s)
		}
	}
	if s == "" {
		return "''"
	}
	return s
}

// resolve finds the repository of the current directory, or the one
// repoID names. register registers the git work tree of the current
// directory when it is not registered yet.
func (c *cli) resolve(ctx context.Context, repoID string, register bool) (here, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return here{}, fmt.Errorf("current directory: %w", err)
	}
	cwd = realPath(cwd)
	repos, err := c.listRepos(ctx)
	if err != nil {
		return here{}, err
	}
	return c.resolveIn(ctx, cwd, repos, repoID, register)
}

func (c *cli) resolveIn(ctx context.Context, cwd string, repos []registered, repoID string, register bool) (here, error) {
	if repoID != "" {
		for _, r := range repos {
			if r.ID == repoID {
				return placed(r, cwd), nil
			}
		}
		return here{}, usageHint{fmt.Sprintf("no registered repository %q", repoID), "'harness repo ls' lists the registered repositories"}
	}
	if r, ok := containing(cwd, repos); ok {
		return placed(r, cwd), nil
	}
	top := gitx.WorkTreeTop(cwd)
	if !register || top == "" {
		return here{}, notHere(cwd)
	}
	raw, err := c.c.Call(ctx, "repository_register", map[string]any{"path": top})
	if err != nil {
		return here{}, err
	}
	var rr harness.RegisterResult
	if err := json.Unmarshal(raw, &rr); err != nil {
		return here{}, fmt.Errorf("decode repository_register: %w", err)
	}
	fmt.Fprintf(c.stderr, "harness: registered %s as %s\n", esc(rr.Root), esc(rr.ID))
	return placed(registered{ID: rr.ID, Root: realPath(rr.Root)}, cwd), nil
}

// placed is repository r seen from cwd.
func placed(r registered, cwd string) here {
	h := here{ID: r.ID, Root: r.Root}
	if within(cwd, r.Root) {
		h.cwd = cwd
		if rel, err := filepath.Rel(r.Root, cwd); err == nil && rel != "." {
			h.Prefix = filepath.ToSlash(rel)
		}
	}
	return h
}
