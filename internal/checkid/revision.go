package checkid

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
)

// Defaults of Options.
const (
	DefaultMaxDirtyFiles       = 10000
	DefaultMaxFileBytes  int64 = 64 << 20
)

// statusMaxOut bounds git status's output. Anything larger is refused: it
// means far more dirty paths than any limit allows.
const statusMaxOut = 64 << 20

// Values of Revision.Dirty besides "sha256:<hex>" (a regular file's
// content).
const (
	// DirtyDeleted marks a path that is in HEAD (or the index) but absent
	// from the work tree.
	DirtyDeleted = "deleted"
	// DirtyExecPrefix prefixes the content digest of an executable file.
	DirtyExecPrefix = "exec:"
	// DirtySymlinkPrefix prefixes the digest of a symlink's target string
	// (the link is not followed).
	DirtySymlinkPrefix = "symlink:"
	// DirtySubmodulePrefix prefixes a submodule's checked-out commit, with
	// "+modified" and/or "+untracked" appended when git reports changes
	// inside it (which are not hashed: submodules are not recursed into).
	DirtySubmodulePrefix = "submodule:"
	// DirtyRepoPrefix prefixes the HEAD commit of an untracked nested
	// repository ("repo:unborn" when it has none, "repo:unknown" when it
	// has no .git entry); its files are not hashed.
	DirtyRepoPrefix = "repo:"
	// DirtySpecialPrefix prefixes the type of a FIFO, socket or device,
	// which is never opened.
	DirtySpecialPrefix = "special:"
)

// Revision is the content a check sees: the HEAD tree plus the work tree's
// differences from it.
type Revision struct {
	Head string `json:"head"` // commit oid ("" unborn)
	Tree string `json:"tree"` // HEAD^{tree} oid ("" unborn)
	// Dirty maps each modified, staged or untracked non-ignored path
	// (relative, slash-separated) to the digest of its work tree state:
	// "sha256:<hex>" for a file, see the Dirty* constants for the rest.
	// Paths whose work tree state equals HEAD (staged, then edited back)
	// are left out. Never nil.
	Dirty map[string]string `json:"dirty"`
	// Clean reports that Dirty is empty: the content equals Tree (apart
	// from excluded paths).
	Clean  bool   `json:"clean"`
	Digest string `json:"digest"` // over Tree + sorted Dirty; see ComputeDigest
}

// Options tunes ContentRevision. The zero value is ready to use.
type Options struct {
	// Exclude reports paths (relative, slash-separated) that are neither
	// hashed nor included: harness artefacts and secret paths.
	Exclude func(rel string) bool
	// MaxDirtyFiles bounds the included dirty paths (0 = 10000); more is a
	// POLICY_DENIED error.
	MaxDirtyFiles int
	// MaxFileBytes bounds each dirty file (0 = 64 MiB); a larger file is a
	// POLICY_DENIED error.
	MaxFileBytes int64
}

func (o Options) withDefaults() Options {
	if o.MaxDirtyFiles <= 0 {
		o.MaxDirtyFiles = DefaultMaxDirtyFiles
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	return o
}

// ContentRevision computes the Revision of the work tree at root, which must
// be the top level of a git work tree.
//
// It runs one `git status --porcelain=v2 -z --untracked-files=all` (which
// also names HEAD) and, the first time a commit is seen, one `git rev-parse`
// for its tree; then it hashes only the dirty paths' work tree content
// (sha256, streamed, a few files at a time). What it records per path:
//   - modified, staged, added, unmerged and untracked files: the work tree
//     content (what a check sees), also when only the index changed;
//   - deletions: "deleted"; a rename is its two paths (the old one deleted);
//   - symlinks: the target string, not followed;
//   - submodules: the checked-out commit from status (one rev-parse inside
//     the submodule when status says its HEAD moved), not recursed into.
//
// Errors: git's coded errors (NOT_FOUND, NOT_A_GIT_REPOSITORY, ...),
// INVALID_ARGUMENT when root is not the top level of a work tree,
// POLICY_DENIED past MaxDirtyFiles or MaxFileBytes, UNAVAILABLE when a file
// keeps changing while it is hashed, CANCELLED/TIMEOUT from ctx.
func ContentRevision(ctx context.Context, g *gitx.Git, root string, o Options) (Revision, error) {
	if root == "" {
		return Revision{}, errs.New(errs.InvalidArgument, "repository root must not be empty")
	}
	if g == nil {
		g = &gitx.Git{}
	}
	o = o.withDefaults()

	out, truncated, err := g.Run(ctx, root, statusMaxOut, statusArgs...)
	if err != nil {
		return Revision{}, err
	}
	if truncated {
		return Revision{}, errs.New(errs.PolicyDenied,
			"git status output exceeds %d MiB: far more than %d dirty files", statusMaxOut>>20, o.MaxDirtyFiles).
			With("limit", o.MaxDirtyFiles)
	}
	st, err := parseStatus(out)
	if err != nil {
		return Revision{}, errs.Wrap(errs.Internal, err, "unexpected git status output: %v", err)
	}

	return revisionOf(ctx, g, root, st.head, st.entries, o)
}

// DirtyPath is a path that differs from HEAD, as a live index knows it
// (ContentRevisionOf): a tracked path that is modified, deleted or changed
// type in the work tree and unchanged in the index (so HEAD's mode and oid
// are the index's), or an untracked path.
type DirtyPath struct {
	Path      string
	Untracked bool
	// Dir marks an untracked nested repository (listed as "sub/").
	Dir bool
	// HeadMode and HeadOID describe the path in HEAD: an octal mode
	// ("100644") and a hex object id; empty for untracked paths.
	HeadMode, HeadOID string
}

// ContentRevisionOf computes the Revision of the work tree at root like
// ContentRevision, without running git status: the caller names HEAD and
// the dirty paths (from a live index that proves them). It still hashes
// those paths' work tree content and resolves HEAD's tree (cached).
func ContentRevisionOf(ctx context.Context, g *gitx.Git, root, head string, dirty []DirtyPath, o Options) (Revision, error) {
	if root == "" {
		return Revision{}, errs.New(errs.InvalidArgument, "repository root must not be empty")
	}
	if g == nil {
		g = &gitx.Git{}
	}
	o = o.withDefaults()
	entries := make([]dirtyEntry, 0, len(dirty))
	for _, d := range dirty {
		e := dirtyEntry{path: d.Path, untracked: d.Untracked, dir: d.Dir}
		if !d.Untracked {
			e.sub, e.headKnown, e.headMode, e.headOID = "N...", true, d.HeadMode, d.HeadOID
		}
		entries = append(entries, e)
	}
	return revisionOf(ctx, g, root, head, entries, o)
}

// revisionOf hashes the dirty entries and resolves HEAD's tree.
func revisionOf(ctx context.Context, g *gitx.Git, root, head string, all []dirtyEntry, o Options) (Revision, error) {
	entries := all[:0:0]
	for _, e := range all {
		if o.Exclude != nil && o.Exclude(e.path) {
			continue
		}
		entries = append(entries, e)
	}
	if len(entries) > o.MaxDirtyFiles {
		return Revision{}, errs.New(errs.PolicyDenied,
			"the work tree has %d changed or untracked files, more than the %d allowed", len(entries), o.MaxDirtyFiles).
			With("dirty_files", len(entries)).With("limit", o.MaxDirtyFiles)
	}

	r, err := openWorkTree(root)
	if err != nil {
		return Revision{}, err
	}
	defer r.Close()
	rev := Revision{Head: head, Dirty: make(map[string]string, len(entries))}
	if len(entries) > 0 {
		h := &hasher{g: g, root: root, r: r, maxBytes: o.MaxFileBytes}
		values, err := h.hashAll(ctx, entries)
		if err != nil {
			return Revision{}, err
		}
		for i, e := range entries {
			if values[i] != "" {
				rev.Dirty[e.path] = values[i]
			}
		}
	}
	if head != "" {
		if rev.Tree, err = treeOf(ctx, g, root, head); err != nil {
			return Revision{}, err
		}
	}
	rev.Clean = len(rev.Dirty) == 0
	rev.Digest = rev.ComputeDigest()
	return rev, nil
}

// openWorkTree opens root for confined reads and checks that it is the top
// level of a work tree (git status paths are relative to the top level).
func openWorkTree(root string) (*os.Root, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errs.Wrap(errs.NotFound, err, "directory %q does not exist", root)
		}
		return nil, errs.Wrap(errs.Unavailable, err, "cannot open %q: %v", root, err)
	}
	if _, err := r.Lstat(".git"); err != nil {
		r.Close()
		return nil, errs.New(errs.InvalidArgument, "%q is not the top level of a git work tree", root)
	}
	return r, nil
}

// treeCacheMax bounds the commit -> tree cache; it is cleared when full.
const treeCacheMax = 4096

// treeCache maps root NUL commit to the commit's tree. Both are immutable
// for a given object database; the root is part of the key because
// replace refs can differ between repositories.
var treeCache struct {
	mu sync.Mutex // protects m
	m  map[string]string
}

// treeOf returns the tree oid of commit, from the cache or one git rev-parse.
func treeOf(ctx context.Context, g *gitx.Git, root, commit string) (string, error) {
	key := root + "\x00" + commit
	treeCache.mu.Lock()
	tree, ok := treeCache.m[key]
	treeCache.mu.Unlock()
	if ok {
		return tree, nil
	}
	out, _, err := g.Run(ctx, root, 4096, "rev-parse", "--verify", "--quiet", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	tree = string(bytes.TrimSpace(out))
	if !isOID(tree) {
		return "", errs.New(errs.Internal, "git rev-parse %s^{tree} gave %q, not an object id", commit, tree)
	}
	treeCache.mu.Lock()
	if treeCache.m == nil || len(treeCache.m) >= treeCacheMax {
		treeCache.m = make(map[string]string)
	}
	treeCache.m[key] = tree
	treeCache.mu.Unlock()
	return tree, nil
}
