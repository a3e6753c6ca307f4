package suite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The fixture's well-known contents.
const (
	// ReadmePath is the small file read_file reads.
	ReadmePath = "README.md"
	// AppPath is the small source file searched and patched.
	AppPath = "src/app.go"
	// Symbol is the identifier symbol_search looks for; it occurs in AppPath only.
	Symbol = "ResolveWidgetIndex"
	// PatchTextA and PatchTextB alternate in AppPath under small_bounded_patch.
	PatchTextA = `greeting = "hello, bench"`
	PatchTextB = `greeting = "hello, patch"`
)

const readmeText = `# widgets

A small fixture repository for the harnessd bench suite.

It holds one Go source file, src/app.go, with a symbol to search for.
`

// dirtyLine is appended to README.md to make the work tree dirty.
const dirtyLine = "\nThis line is uncommitted: the bench suite made the work tree dirty.\n"

// appText is src/app.go: about 60 lines with Symbol defined and used.
var appText = `// Package app is a fixture for the harnessd bench suite.
package app

import (
	"errors"
	"sort"
	"strings"
)

// greeting is replaced back and forth by the patch case.
const ` + PatchTextA + `

// Widget is something with a name and a weight.
type Widget struct {
	Name   string
	Weight int
}

// ErrNoWidget is returned when a widget is not in the index.
var ErrNoWidget = errors.New("app: no such widget")

// Index finds widgets by name.
type Index struct {
	names []string
	byKey map[string]Widget
}

// NewIndex builds an index over ws.
func NewIndex(ws []Widget) *Index {
	ix := &Index{byKey: make(map[string]Widget, len(ws))}
	for _, w := range ws {
		key := strings.ToLower(w.Name)
		ix.byKey[key] = w
		ix.names = append(ix.names, key)
	}
	sort.Strings(ix.names)
	return ix
}

// ` + Symbol + ` returns the position of name in the sorted index.
func (ix *Index) ` + Symbol + `(name string) (int, error) {
	key := strings.ToLower(name)
	i := sort.SearchStrings(ix.names, key)
	if i == len(ix.names) || ix.names[i] != key {
		return -1, ErrNoWidget
	}
	return i, nil
}

// Heaviest returns the heaviest widget, or false for an empty index.
func (ix *Index) Heaviest() (Widget, bool) {
	var best Widget
	found := false
	for _, k := range ix.names {
		if w := ix.byKey[k]; !found || w.Weight > best.Weight {
			best, found = w, true
		}
	}
	return best, found
}

// Lookup returns the widget called name.
func (ix *Index) Lookup(name string) (Widget, error) {
	if _, err := ix.` + Symbol + `(name); err != nil {
		return Widget{}, err
	}
	return ix.byKey[strings.ToLower(name)], nil
}
`

// Fixture is a throw-away git repository with one commit: README.md and
// src/app.go (plus any extra files), committed with a fixed identity and
// no user or system git configuration.
type Fixture struct {
	// Root is the canonical (symlink-free) work tree.
	Root string
	// Files are the committed contents by slash-separated path.
	Files map[string]string
}

// gitEnv is the environment of the fixture's git commands: no user or
// system config, a fixed identity, no optional locks.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_OPTIONAL_LOCKS=0",
		"GIT_AUTHOR_NAME=harnessd bench", "GIT_AUTHOR_EMAIL=bench@harnessd.invalid",
		"GIT_COMMITTER_NAME=harnessd bench", "GIT_COMMITTER_EMAIL=bench@harnessd.invalid",
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
	)
}

// NewFixture creates the fixture repository in a new directory under
// parent (os.TempDir() when empty). extra adds files (path -> content) to
// the commit; it must not name README.md or src/app.go.
func NewFixture(ctx context.Context, parent string, extra map[string]string) (*Fixture, error) {
	dir, err := os.MkdirTemp(parent, "harnessd-bench-repo-")
	if err != nil {
		return nil, fmt.Errorf("create fixture dir: %w", err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("canonicalise fixture dir: %w", err)
	}
	f := &Fixture{Root: root, Files: map[string]string{ReadmePath: readmeText, AppPath: appText}}
	for p, body := range extra {
		if _, dup := f.Files[p]; dup {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("fixture: extra file %q replaces a standard file", p)
		}
		f.Files[p] = body
	}
	if err := f.build(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return f, nil
}

func (f *Fixture) build(ctx context.Context) error {
	if err := runGit(ctx, f.Root, "init", "-q", "-b", "main"); err != nil {
		return err
	}
	for p := range f.Files {
		if err := f.write(p, []byte(f.Files[p])); err != nil {
			return err
		}
	}
	if err := runGit(ctx, f.Root, "add", "-A"); err != nil {
		return err
	}
	return runGit(ctx, f.Root, "commit", "-q", "-m", "fixture")
}

// runGit runs git with the fixture environment in dir.
func runGit(ctx context.Context, dir string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Path returns the absolute path of the slash-separated rel.
func (f *Fixture) Path(rel string) string { return filepath.Join(f.Root, filepath.FromSlash(rel)) }

func (f *Fixture) write(rel string, body []byte) error {
	p := f.Path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	return nil
}

// Dirty appends an uncommitted line to README.md so that git_diff has
// something to show. Restore undoes it.
func (f *Fixture) Dirty() error {
	return f.write(ReadmePath, []byte(f.Files[ReadmePath]+dirtyLine))
}

// Restore rewrites every committed file whose content changed back to
// its committed content.
func (f *Fixture) Restore() error {
	for p, want := range f.Files {
		got, err := os.ReadFile(f.Path(p))
		if err == nil && string(got) == want {
			continue
		}
		if err := f.write(p, []byte(want)); err != nil {
			return err
		}
	}
	return nil
}
