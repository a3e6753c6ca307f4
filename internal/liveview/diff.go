package liveview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"weak"

	"github.com/harnessd/harnessd/internal/gitdiff"
	"github.com/harnessd/harnessd/internal/gitdiff/odb"
	"github.com/harnessd/harnessd/internal/gitindex"
	"github.com/harnessd/harnessd/internal/gitx"
)

// The work tree diff in process. `git diff` (unstaged, no revision) is
// the index against the work tree: for each path the live status lists
// as changed, the index blob (read from .git/objects) against the file,
// printed by internal/gitdiff as git prints it, with the index line's
// object names abbreviated as git abbreviates them. Everything that could
// make git print something else — a diff.* or core.* setting that changes
// the output, an attribute anywhere on the path, a binary file, a mode or
// type change, a path git quotes, a pathspec with magic — makes the whole
// diff run git instead (Source exec, with the reason). A changed
// submodule entry is the exception: git is asked for that entry alone
// (`git diff -- <submodule>`) and its lines take their place among the
// files diffed in process. A diff whose files changed while they were
// read is computed again.

// DiffResult is a diff with where it came from.
type DiffResult struct {
	gitx.Diff
	// Source is SourceIndex (computed in process), SourceCache (an
	// earlier identical diff, the tree unchanged since) or SourceExec.
	Source string
	// Reason says why the diff was not computed in process.
	Reason string
}

// maxDiffFile bounds the files diffed in process: a larger one runs git.
const maxDiffFile = 32 << 20

// maxPatchDrain is gitx's drain: past MaxBytes+32 MiB of patch gitx stops
// reading, and the byte count depends on when: such diffs run git.
const maxPatchDrain = 32 << 20

// Diff returns `git diff` as gitx.Git.Diff runs it for o: from the cache
// when the watcher proves the tree unchanged since the same diff, in
// process when it can be git's byte for byte, else by running git.
func (v *View) Diff(ctx context.Context, o gitx.DiffOptions) (DiffResult, error) {
	key, _ := json.Marshal(o)
	k := "diff " + string(key)
	var why string
	var pos Position
	for attempt := 0; ; attempt++ {
		r, hit, p, err := v.Lookup(ctx, k)
		if err != nil {
			return DiffResult{}, err
		}
		if hit {
			return DiffResult{Diff: r.(gitx.Diff), Source: SourceCache}, nil
		}
		pos = p
		if !pos.Valid {
			why = v.Reason()
			if why == "" {
				why = "the view cannot answer"
			}
			break
		}
		d, reason, err := v.diffInProcess(ctx, pos, o)
		if err != nil {
			return DiffResult{}, err
		}
		if reason != "" {
			why = reason
			break
		}
		// The files were read after the position was taken: only if
		// nothing changed since is the diff the tree's at pos.
		now, err := v.Position(ctx)
		if err != nil {
			return DiffResult{}, err
		}
		if now == pos {
			v.Store(pos, k, d)
			return DiffResult{Diff: d, Source: SourceIndex}, nil
		}
		if attempt == 2 {
			why = "the tree kept changing while it was read"
			break
		}
	}
	d, err := v.git.Diff(ctx, v.root, o)
	if err != nil {
		return DiffResult{}, err
	}
	// Kept as Cached keeps it: a change during the run is seen at the
	// next sync, which drops every result kept at pos.
	v.Store(pos, k, d)
	return DiffResult{Diff: d, Source: SourceExec, Reason: why}, nil
}

// diffState is what the in-process diff keeps per view beside it (the
// view's own fields belong to its status and search): the settings read
// with the index the view's status is built on, and the object store.
type diffState struct {
	mu    sync.Mutex
	ix    *gitindex.Index // the index settings and flags were read with
	set   diffSettings
	flags string // why the index itself rules the diff out ("" = it does not)
	store *odb.Store
	dir   string // the store's objects directory
}

// diffStates holds each live View's diffState; an entry goes with its
// View (weak key, cleanup).
var diffStates sync.Map // weak.Pointer[View] -> *diffState

func (v *View) diffState() *diffState {
	k := weak.Make(v)
	if s, ok := diffStates.Load(k); ok {
		return s.(*diffState)
	}
	s, loaded := diffStates.LoadOrStore(k, &diffState{})
	if !loaded {
		runtime.AddCleanup(v, func(k weak.Pointer[View]) {
			if s, ok := diffStates.LoadAndDelete(k); ok {
				if st := s.(*diffState).store; st != nil {
					st.Close()
				}
			}
		}, k)
	}
	return s.(*diffState)
}

// unstaged is what diffInProcess takes from the view under its lock.
type unstaged struct {
	entries []gitx.Entry
	ix      *gitindex.Index
}

// snapshot returns the unstaged entries and the index of the view's
// status at pos, ok false when the view moved on or is not in process.
func (v *View) snapshot(pos Position) (unstaged, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.epoch != pos.Epoch || v.gen != pos.Gen || !v.eligible || v.base == nil || v.ix == nil || len(v.pending) > 0 {
		return unstaged{}, false
	}
	return unstaged{entries: slices.Clone(v.base.Unstaged), ix: v.ix}, true
}

// diffInProcess computes the diff of o at pos; reason says why it cannot
// (then the caller runs git).
func (v *View) diffInProcess(ctx context.Context, pos Position, o gitx.DiffOptions) (gitx.Diff, string, error) {
	if o.Staged || o.Rev != "" {
		return gitx.Diff{}, "staged and revision diffs run git", nil
	}
	spec, reason := literalPathspecs(o.Paths, o.Exclude)
	if reason != "" {
		return gitx.Diff{}, reason, nil
	}
	if o.Context < 0 || o.Context > gitx.MaxContext || o.MaxBytes < 0 {
		return gitx.Diff{}, "options git refuses", nil
	}
	snap, ok := v.snapshot(pos)
	if !ok {
		return gitx.Diff{}, "the view moved on", nil
	}
	gitDir, common, err := gitDirs(v.root)
	if err != nil {
		return gitx.Diff{}, "git dir: " + err.Error(), nil
	}
	ds := v.diffState()
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.ix != snap.ix {
		out, truncated, err := v.git.Run(ctx, v.root, 1<<20, "config", "-z", "--list")
		if err != nil {
			if ctx.Err() != nil {
				return gitx.Diff{}, "", ctx.Err()
			}
			return gitx.Diff{}, "git config: " + err.Error(), nil
		}
		if truncated {
			return gitx.Diff{}, "git config past 1 MiB", nil
		}
		ds.set = parseDiffSettings(gitindex.ParseConfigList(out))
		ds.flags = indexFlags(snap.ix)
		ds.ix = snap.ix
	}
	set := ds.set
	if set.reason != "" {
		return gitx.Diff{}, set.reason, nil
	}
	if ds.flags != "" {
		return gitx.Diff{}, ds.flags, nil
	}
	for _, dir := range []string{gitDir, common} {
		if _, err := os.Lstat(filepath.Join(dir, "info", "attributes")); err == nil {
			return gitx.Diff{}, "gitattributes", nil
		}
	}
	objects := filepath.Join(common, "objects")
	if ds.store == nil || ds.dir != objects {
		if ds.store != nil {
			ds.store.Close()
		}
		ds.store, ds.dir = nil, ""
		st, err := odb.Open(objects)
		if err != nil {
			return gitx.Diff{}, "objects: " + err.Error(), nil
		}
		ds.store, ds.dir = st, objects
	} else if err := ds.store.Refresh(); err != nil {
		return gitx.Diff{}, "objects: " + err.Error(), nil
	}

	opts := set.opts
	if o.Context > 0 {
		opts.Context = o.Context
	}
	entries := snap.entries
	slices.SortFunc(entries, func(a, b gitx.Entry) int { return strings.Compare(a.Path, b.Path) })
	attrs := attrChecker{root: v.root, ix: snap.ix, seen: map[string]bool{}}
	var patch []byte
	files := []gitx.FileStat{}
	subs := 0
	for _, e := range entries {
		if !spec.selects(e.Path) {
			continue
		}
		if e.Submodule {
			// Only git knows what its diff of a submodule says (its
			// commits, whether its work tree is dirty, diff.submodule):
			// that entry is asked of git, in its place in the order.
			if subs++; subs > maxSubmoduleDiffs {
				return gitx.Diff{}, "more than " + strconv.Itoa(maxSubmoduleDiffs) + " submodules changed", nil
			}
			sd, reason, err := v.submoduleDiff(ctx, e.Path, o)
			if err != nil || reason != "" {
				return gitx.Diff{}, reason, err
			}
			patch = append(patch, sd.Patch...)
			files = append(files, sd.Files...)
			continue
		}
		if e.Status != gitx.StatusModified && e.Status != gitx.StatusDeleted {
			return gitx.Diff{}, "a " + e.Status + " path", nil
		}
		if attrs.any(e.Path) {
			return gitx.Diff{}, "gitattributes", nil
		}
		ie, ok := snap.ix.Lookup(e.Path)
		if !ok || ie.Stage != 0 {
			return gitx.Diff{}, "a path the index does not hold", nil
		}
		f, reason, err := v.diffSides(ds.store, e.Path, ie, set.abbrev)
		if err != nil || reason != "" {
			return gitx.Diff{}, reason, err
		}
		if f == nil {
			continue // the file is as the index has it
		}
		var st gitdiff.Stat
		n := len(patch)
		patch, st, err = gitdiff.WritePatch(patch, *f, opts, set.opts)
		if err != nil {
			return gitx.Diff{}, err.Error(), nil
		}
		if len(patch) > n {
			files = append(files, gitx.FileStat{Path: e.Path, Added: st.Added, Deleted: st.Deleted})
		}
	}
	return bound(patch, files, o.MaxBytes)
}

// maxSubmoduleDiffs is how many changed submodule entries a diff asks
// of git one by one; past it the whole diff runs git (one process then
// costs less than many).
const maxSubmoduleDiffs = 8

// maxSubmoduleDiff bounds what git prints for one submodule entry (a
// line or two, unless diff.submodule=diff prints its content's diff);
// past it the whole diff runs git.
const maxSubmoduleDiff = 1 << 20

// submoduleDiff runs `git diff` for the submodule entry at rel alone, with
// o's context and excludes: what the whole diff prints for that entry.
func (v *View) submoduleDiff(ctx context.Context, rel string, o gitx.DiffOptions) (gitx.Diff, string, error) {
	if strings.ContainsAny(rel, "*?[\\") || strings.HasPrefix(rel, ":") || strings.HasPrefix(rel, "-") {
		return gitx.Diff{}, "a submodule path git would read as a pattern", nil
	}
	d, err := v.git.Diff(ctx, v.root, gitx.DiffOptions{Paths: []string{rel}, Exclude: o.Exclude, Context: o.Context, MaxBytes: maxSubmoduleDiff})
	switch {
	case err != nil && ctx.Err() != nil:
		return gitx.Diff{}, "", ctx.Err()
	case err != nil:
		return gitx.Diff{}, "git diff of a submodule: " + err.Error(), nil
	case d.Truncated:
		return gitx.Diff{}, "a submodule's diff past 1 MiB", nil
	}
	return d, "", nil
}

// bound caps the patch as gitx.Git.Diff does: at MaxBytes (default
// 256 KiB), cut back to a line end.
func bound(patch []byte, files []gitx.FileStat, maxBytes int) (gitx.Diff, string, error) {
	if maxBytes == 0 {
		maxBytes = gitx.DefaultDiffBytes
	}
	if len(patch) > maxBytes+maxPatchDrain {
		return gitx.Diff{}, "patch past the read cap", nil
	}
	d := gitx.Diff{Files: files, Bytes: len(patch)}
	if len(patch) > maxBytes {
		cut := patch[:maxBytes]
		if i := bytes.LastIndexByte(cut, '\n'); i >= 0 {
			cut = cut[:i+1]
		}
		patch, d.Truncated = cut, true
	}
	d.Patch = string(patch)
	return d, "", nil
}

// diffSides reads both sides of rel: the index blob and the work tree
// file. It returns nil when they are equal (git prints nothing), or the
// reason git must print this one.
func (v *View) diffSides(store *odb.Store, rel string, ie gitindex.Entry, abbrev int) (*gitdiff.File, string, error) {
	if ie.Mode != gitindex.ModeRegular && ie.Mode != gitindex.ModeExecutable {
		return nil, "a file that is not a regular one", nil
	}
	f := &gitdiff.File{Path: rel, OldMode: ie.Mode}
	newMode, data, reason := readWorktree(v.root, rel)
	if reason != "" {
		return nil, reason, nil
	}
	var newID []byte
	if newMode != 0 {
		newID = odb.HashBlob(data)
		if newMode == ie.Mode && bytes.Equal(newID, ie.OID) {
			return nil, "", nil
		}
		if newMode != ie.Mode {
			return nil, "a mode change", nil
		}
	} else {
		newID = make([]byte, odb.HashSize)
	}
	old, err := store.Blob(ie.OID, maxDiffFile)
	if err != nil {
		return nil, "index blob: " + err.Error(), nil
	}
	f.Old, f.New, f.NewMode = old, data, newMode
	if f.OldID, err = store.Abbrev(ie.OID, abbrev); err != nil {
		return nil, "abbreviate: " + err.Error(), nil
	}
	if f.NewID, err = store.Abbrev(newID, abbrev); err != nil {
		return nil, "abbreviate: " + err.Error(), nil
	}
	return f, "", nil
}

// readWorktree reads the work tree side of rel as git's diff sees it:
// mode 0 when it is gone (or a parent is no longer a directory), else its
// mode and content; reason when it is something git diffs otherwise (a
// symlink, a directory, a symlinked parent, a large file).
func readWorktree(root, rel string) (uint32, []byte, string) {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(d)))
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return 0, nil, ""
		case err != nil:
			return 0, nil, "lstat: " + err.Error()
		case !fi.IsDir():
			if fi.Mode()&fs.ModeSymlink != 0 {
				return 0, nil, "a symlinked parent directory"
			}
			return 0, nil, ""
		}
	}
	p := filepath.Join(root, filepath.FromSlash(rel))
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return 0, nil, ""
	case errors.Is(err, syscall.ELOOP):
		return 0, nil, "a type change (symlink)"
	case err != nil:
		return 0, nil, "open: " + err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, "stat: " + err.Error()
	}
	if !fi.Mode().IsRegular() {
		return 0, nil, "a type change"
	}
	if fi.Size() > maxDiffFile {
		return 0, nil, "a file larger than " + strconv.Itoa(maxDiffFile>>20) + " MiB"
	}
	data := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, "read: " + err.Error()
		}
		if len(data) == cap(data) {
			if len(data) > maxDiffFile {
				return 0, nil, "a file larger than " + strconv.Itoa(maxDiffFile>>20) + " MiB"
			}
			data = slices.Grow(data, 4096)
		}
	}
	mode := uint32(gitindex.ModeRegular)
	if fi.Mode().Perm()&0o100 != 0 {
		mode = gitindex.ModeExecutable
	}
	return mode, data, ""
}

// gitDirs returns the git dir and the common dir of the work tree root
// (a linked worktree's .git is a "gitdir:" file; its git dir may name a
// common dir).
func gitDirs(root string) (gitDir, common string, err error) {
	gitDir = filepath.Join(root, ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return "", "", err
	}
	if fi.Mode().IsRegular() {
		b, err := os.ReadFile(gitDir)
		if err != nil {
			return "", "", err
		}
		d, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
		if !ok {
			return "", "", fmt.Errorf("%s is not a gitdir file", gitDir)
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(root, d)
		}
		gitDir = d
	} else if !fi.IsDir() {
		return "", "", fmt.Errorf("%s is neither a directory nor a gitdir file", gitDir)
	}
	common = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	return gitDir, common, nil
}

// attrChecker finds a .gitattributes that may apply to a path: in any of
// its directories, in the work tree or in the index (git reads the
// index's copy of a deleted one).
type attrChecker struct {
	root string
	ix   *gitindex.Index
	seen map[string]bool // directory -> has one
}

func (a *attrChecker) any(rel string) bool {
	for d := path.Dir(rel); ; d = path.Dir(d) {
		has, ok := a.seen[d]
		if !ok {
			p := ".gitattributes"
			if d != "." {
				p = d + "/.gitattributes"
			}
			_, err := os.Lstat(filepath.Join(a.root, filepath.FromSlash(p)))
			_, inIndex := a.ix.Lookup(p)
			has = err == nil || inIndex
			a.seen[d] = has
		}
		if has {
			return true
		}
		if d == "." {
			return false
		}
	}
}

// indexFlags says why the index itself rules the in-process diff out:
// entries git diff shows or hides in ways the diff does not model.
func indexFlags(ix *gitindex.Index) string {
	if ix.HashSize != odb.HashSize {
		return "object format"
	}
	for i := range ix.Entries {
		e := &ix.Entries[i]
		switch {
		case e.Stage != 0:
			return "unmerged entries"
		case e.IntentToAdd:
			return "intent-to-add entries"
		case e.SkipWorktree:
			return "sparse checkout"
		case e.AssumeValid:
			return "assume-unchanged entries"
		}
	}
	return ""
}

// pathspecs is a diff's path filter when every path is a literal path.
type pathspecs struct {
	include, exclude []string
}

// literalPathspecs accepts paths and excludes that select as literal
// paths (a file, or a directory and everything below); anything with
// pathspec magic, glob characters or parent components gives a reason.
func literalPathspecs(paths, exclude []string) (pathspecs, string) {
	var s pathspecs
	clean := func(p string) (string, bool) {
		if p == "" || strings.HasPrefix(p, ":") || strings.ContainsAny(p, "*?[\\") || strings.HasPrefix(p, "/") {
			return "", false
		}
		c := path.Clean(p)
		if c == ".." || strings.HasPrefix(c, "../") {
			return "", false
		}
		return c, true
	}
	for _, p := range paths {
		c, ok := clean(p)
		if !ok {
			return pathspecs{}, "a pathspec with magic or globs"
		}
		s.include = append(s.include, c)
	}
	for _, p := range exclude {
		if p == "" || strings.HasPrefix(p, "/") {
			return pathspecs{}, "an exclude that is not a relative path"
		}
		c := path.Clean(p)
		if c == ".." || strings.HasPrefix(c, "../") {
			return pathspecs{}, "an exclude that is not a relative path"
		}
		s.exclude = append(s.exclude, c)
	}
	return s, ""
}

func under(p, spec string) bool {
	return spec == "." || p == spec || strings.HasPrefix(p, spec+"/")
}

func (s pathspecs) selects(p string) bool {
	for _, e := range s.exclude {
		if under(p, e) {
			return false
		}
	}
	if len(s.include) == 0 {
		return true
	}
	for _, i := range s.include {
		if under(p, i) {
			return true
		}
	}
	return false
}

// diffSettings are the settings of a repository's configuration that
// shape `git diff`, or the reason one of them is not modelled.
type diffSettings struct {
	opts   gitdiff.Options // the default context (diff.context), interhunk, indent heuristic
	abbrev int             // core.abbrev: -1 auto, else the length
	reason string
}

// parseDiffSettings reads cfg (`git config -z --list` as harnessd's git
// sees it, its -c settings included) for what `git diff --no-ext-diff
// --no-textconv --no-color` depends on. Anything not modelled — another
// algorithm, suppressBlankEmpty, an order file, a line-ending or
// filemode setting, another object format, an unknown diff.* variable —
// gives a reason.
func parseDiffSettings(cfg map[string][]string) diffSettings {
	s := diffSettings{opts: gitdiff.DefaultOptions, abbrev: -1}
	last := func(k string) (string, bool) {
		v := cfg[k]
		if len(v) == 0 {
			return "", false
		}
		return v[len(v)-1], true
	}
	fail := func(why string) diffSettings { return diffSettings{reason: why} }
	for k := range cfg {
		sec, rest, _ := strings.Cut(k, ".")
		if sec != "diff" || strings.Contains(rest, ".") {
			continue // diff.<driver>.<key> applies only through attributes
		}
		switch rest {
		case "algorithm", "indentheuristic", "context", "interhunkcontext", "noprefix", "mnemonicprefix",
			"srcprefix", "dstprefix", "relative", "external", "autorefreshindex", "suppressblankempty",
			"orderfile", "colormoved", "colormovedws", "wserrorhighlight", "renames", "renamelimit",
			"statgraphwidth", "dirstat", "tool", "guitool", "wordregex", "submodule", "ignoresubmodules", "trustexitcode":
		default:
			return fail("diff." + rest + " is set")
		}
	}
	if v, ok := last("diff.algorithm"); ok && !strings.EqualFold(v, "myers") && !strings.EqualFold(v, "default") {
		return fail("diff.algorithm=" + v)
	}
	if v, ok := last("diff.indentheuristic"); ok {
		b, valid := gitBool(v)
		if !valid {
			return fail("diff.indentHeuristic=" + v)
		}
		s.opts.IndentHeuristic = b
	}
	for _, c := range []struct {
		key string
		dst *int
	}{{"diff.context", &s.opts.Context}, {"diff.interhunkcontext", &s.opts.InterHunkContext}} {
		if v, ok := last(c.key); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > gitx.MaxContext {
				return fail(c.key + "=" + v)
			}
			*c.dst = n
		}
	}
	for k, want := range map[string]string{
		"diff.noprefix": "false", "diff.mnemonicprefix": "false", "diff.relative": "false",
		"diff.srcprefix": "a/", "diff.dstprefix": "b/", "diff.external": "",
		"diff.suppressblankempty": "false", "diff.orderfile": "", "diff.autorefreshindex": "true",
		"diff.colormoved": "false",
	} {
		v, ok := last(k)
		if !ok {
			continue
		}
		if want == "true" || want == "false" {
			b, valid := gitBool(v)
			if valid && b == (want == "true") {
				continue
			}
		} else if v == want {
			continue
		}
		return fail(k + "=" + v)
	}
	if v, ok := last("core.abbrev"); ok {
		switch strings.ToLower(v) {
		case "auto":
			s.abbrev = -1
		case "false", "no", "off", "":
			s.abbrev = 2 * odb.HashSize
		default:
			n, err := strconv.Atoi(v)
			if err != nil || n < 4 || n > 2*odb.HashSize {
				return fail("core.abbrev=" + v)
			}
			s.abbrev = n
		}
	}
	if v, ok := last("extensions.objectformat"); ok && !strings.EqualFold(v, "sha1") {
		return fail("extensions.objectFormat=" + v)
	}
	for k, bad := range map[string]func(string) bool{
		"core.autocrlf":               func(v string) bool { b, ok := gitBool(v); return !ok || b },
		"core.eol":                    func(v string) bool { return v != "" },
		"core.filemode":               func(v string) bool { b, ok := gitBool(v); return !ok || !b },
		"core.symlinks":               func(v string) bool { b, ok := gitBool(v); return !ok || !b },
		"core.ignorecase":             func(v string) bool { b, ok := gitBool(v); return !ok || b },
		"core.precomposeunicode":      func(v string) bool { b, ok := gitBool(v); return !ok || b },
		"core.bigfilethreshold":       func(string) bool { return true },
		"core.checkroundtripencoding": func(string) bool { return true },
		"core.quotepath":              func(v string) bool { b, ok := gitBool(v); return !ok || b },
		"core.attributesfile":         func(v string) bool { return v != "" && v != "/dev/null" },
	} {
		if v, ok := last(k); ok && bad(v) {
			return fail(k + "=" + v)
		}
	}
	return s
}

// gitBool parses a git boolean as git_config_bool does for the values a
// setting can hold (an integer counts as true when not 0).
func gitBool(v string) (val, ok bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off", "":
		return false, true
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n != 0, true
	}
	return false, false
}
