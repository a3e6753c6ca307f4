package search

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
)

// listFiles returns the candidate files under root, slash-separated and
// relative to root, deduplicated and sorted by pathCompare. Entries naming
// directories (nested repositories, submodules) are dropped.
func (p *plan) listFiles(ctx context.Context) ([]string, error) {
	root := p.root
	out, err := p.gitOutput(ctx, root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err == errNotRepo {
		return walkFiles(ctx, root)
	}
	if err != nil {
		return nil, err
	}
	return splitList(out), nil
}

// trackedIgnored returns the tracked files under root that match an ignore
// rule: git searches them, rg's walk does not.
func (p *plan) trackedIgnored(ctx context.Context) ([]string, error) {
	out, err := p.gitOutput(ctx, p.root, "ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
	if err == errNotRepo {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return splitList(out), nil
}

func splitList(out []byte) []string {
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) == 0 || f[len(f)-1] == '/' {
			continue
		}
		files = append(files, string(f))
	}
	slices.SortFunc(files, pathCompare)
	return slices.Compact(files) // unmerged paths are listed once per stage
}

var errNotRepo = errs.New(errs.NotAGitRepository, "not a git work tree")

// gitOutput is plan.gitOutput unconfined (tests list files with it).
func gitOutput(ctx context.Context, root string, args ...string) ([]byte, error) {
	return (&plan{}).gitOutput(ctx, root, args...)
}

// gitOutput runs git in root without locks, fsmonitor, pager or prompts,
// with the caller's GIT_* environment removed and, of the global and
// system configuration, only what harnessd's own git keeps (the user's
// ignore file among it: gitx.UserConfigEnv), started as the Searcher says
// (confined).
func (p *plan) gitOutput(ctx context.Context, root string, args ...string) ([]byte, error) {
	pre := []string{"-c", "core.fsmonitor=false", "-c", "core.quotePath=false", "-c", "core.hooksPath=/dev/null", "--no-pager"}
	args = append(pre, args...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = root
	env := make([]string, 0, len(os.Environ())+4)
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "GIT_") || strings.HasPrefix(e, "LC_ALL=") || strings.HasPrefix(e, "LANG=") {
			continue
		}
		env = append(env, e)
	}
	cmd.Env = append(env, "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", gitx.UserConfigEnv(), "LC_ALL=C", "LANG=C")
	var stderr, stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	wait, err := p.run(ctx, root, cmd)
	if err == nil {
		err = wait()
	}
	out := stdout.Bytes()
	if err == nil {
		return out, nil
	}
	if errs.CodeOf(err) != "" && errs.CodeOf(err) != errs.Internal {
		return nil, err // the confinement refused
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if _, ok := err.(*exec.ExitError); ok {
		if bytes.Contains(stderr.Bytes(), []byte("not a git repository")) {
			return nil, errNotRepo
		}
		return nil, errs.Wrap(errs.Internal, err, "git %s: %s", args[len(args)-1], strings.TrimSpace(stderr.String()))
	}
	// git is not installed: every file is a candidate.
	return nil, errNotRepo
}

// walkFiles lists every non-directory entry under root except .git, without
// following symbolic links.
func walkFiles(ctx context.Context, root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // unreadable entries are skipped, as rg does
		}
		if d.Name() == ".git" && p != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if err := ctx.Err(); err != nil {
				return err
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errs.Wrap(errs.Internal, err, "walking %q: %v", root, err)
	}
	slices.SortFunc(files, pathCompare)
	return files, nil
}

// pathCompare orders slash-separated paths component by component, each in
// byte order: '/' sorts before every other byte. This is the order of a
// sorted directory walk and of rg --sort path.
func pathCompare(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// globFilter is a Request.Glob.
type globFilter struct {
	pat     string
	neg     bool // "!pat": drop files the pattern (or a parent directory) matches
	base    bool // no '/' in pat: match the base name (each component for neg)
	dirOnly bool // trailing '/': the pattern names directories only
}

func newGlobFilter(glob string) (*globFilter, error) {
	g := &globFilter{pat: glob}
	if strings.HasPrefix(g.pat, "!") {
		g.neg = true
		g.pat = g.pat[1:]
	}
	if strings.HasSuffix(g.pat, "/") {
		g.dirOnly = true
		g.pat = strings.TrimRight(g.pat, "/")
	}
	anchored := strings.HasPrefix(g.pat, "/")
	g.pat = strings.TrimLeft(g.pat, "/")
	g.base = !anchored && !strings.Contains(g.pat, "/")
	if g.pat == "" || strings.IndexByte(glob, 0) >= 0 || !doublestar.ValidatePattern(g.pat) {
		return nil, errs.New(errs.InvalidArgument, "bad glob %q", glob)
	}
	return g, nil
}

func (g *globFilter) matchOne(p string, isDir bool) bool {
	if g.dirOnly && !isDir {
		return false
	}
	if g.base {
		p = p[strings.LastIndexByte(p, '/')+1:]
	}
	ok, _ := doublestar.Match(g.pat, p)
	return ok
}

// match reports whether the file rel is selected.
func (g *globFilter) match(rel string) bool {
	if !g.neg {
		return g.matchOne(rel, false)
	}
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && g.matchOne(rel[:i], true) {
			return false
		}
	}
	return !g.matchOne(rel, false)
}

func lastIndexByte(s []byte, c byte) int { return bytes.LastIndexByte(s, c) }

// indexByteFrom returns the index of c in s at or after from, or len(s).
func indexByteFrom(s []byte, from int, c byte) int {
	if i := bytes.IndexByte(s[from:], c); i >= 0 {
		return from + i
	}
	return len(s)
}

func countNL(s []byte) int { return bytes.Count(s, []byte{'\n'}) }
