package worktree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
)

// Worktree is a detached worktree made by Create.
type Worktree struct {
	Path  string // absolute path of the worktree
	Base  string // the HEAD commit id it was made from
	Dirty bool   // dirty changes of the main checkout were carried over
}

// maxListOutput bounds the output of ls-files and worktree list.
const maxListOutput = 256 << 20

// lockRetryDelay is the pause before the one retry after a lock conflict.
const lockRetryDelay = 150 * time.Millisecond

// maxStderr bounds the stderr kept from diff and apply.
const maxStderr = 16 << 10

// Create makes a detached worktree of repoRoot's HEAD at dest and carries
// the main checkout's dirty state over: tracked changes (staged and
// unstaged, including deletions, renames, mode changes, symlinks and binary
// files) through `git diff --binary HEAD` piped into `git apply --binary
// --index` in the worktree, so they show as staged changes there, and
// untracked, non-ignored files by copying (modes kept, symlinks as
// symlinks). Ignored files, nested repositories and submodule changes are
// not carried over.
//
// dest must be absolute and must not exist; its parent is created with mode
// 0700. The main checkout is only read (no stash, no index refresh). On any
// failure the half-made worktree is removed. A git lock conflict (another
// Create running concurrently) is retried once.
func Create(ctx context.Context, g *gitx.Git, repoRoot, dest string) (Worktree, error) {
	return CreateSkipping(ctx, g, repoRoot, dest, Skip{})
}

// Skip is what CreateSkipping does not carry over.
type Skip struct {
	// Paths are slash-separated, relative to the repository root; a
	// directory skips everything below it. Neither their dirty changes
	// nor, untracked, the files themselves are carried.
	Paths []string
	// File, when set, is asked about every untracked entry (with its
	// lstat): true leaves it out.
	File func(rel string, fi fs.FileInfo) bool
}

// CreateSkipping is Create, but carries nothing skip names over. Jobs pass
// a checkout's secret files, and leave out untracked hard links, which a
// copy would turn into plain files under harmless names.
func CreateSkipping(ctx context.Context, g *gitx.Git, repoRoot, dest string, skip Skip) (Worktree, error) {
	if err := checkAbs("repository root", repoRoot); err != nil {
		return Worktree{}, err
	}
	if err := checkAbs("worktree path", dest); err != nil {
		return Worktree{}, err
	}
	dest = filepath.Clean(dest)
	if _, err := os.Lstat(dest); err == nil {
		return Worktree{}, errs.New(errs.InvalidArgument, "worktree path %q already exists", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Worktree{}, errs.Wrap(errs.Internal, err, "worktree path %q: %v", dest, err)
	}
	if within(dest, repoRoot) {
		return Worktree{}, errs.New(errs.InvalidArgument, "worktree path %q is inside the repository %q", dest, repoRoot)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return Worktree{}, errs.Wrap(errs.Internal, err, "create parent of %q: %v", dest, err)
	}
	out, _, err := g.Run(ctx, repoRoot, 0, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return Worktree{}, errs.Wrap(errs.CodeOf(err), err, "worktree: repository %q has no HEAD commit: %v", repoRoot, err)
	}
	wt := Worktree{Path: dest, Base: strings.TrimSpace(string(out))}

	// git itself races when two `worktree add` run on one repository (one
	// may read the other's half-written .git/worktrees entry): serialise
	// them within this process.
	mu := repoLock(repoRoot)
	mu.Lock()
	defer mu.Unlock()
	for attempt := 0; ; attempt++ {
		err = create(ctx, g, repoRoot, &wt, skip)
		if err == nil {
			return wt, nil
		}
		// Never leave a half-made worktree behind; use a fresh context so
		// a cancelled ctx still cleans up.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		rerr := Remove(cctx, g, repoRoot, dest)
		cancel()
		if rerr != nil {
			return Worktree{}, errors.Join(err, rerr)
		}
		if attempt > 0 || !isLockError(err) || ctx.Err() != nil {
			return Worktree{}, err
		}
		t := time.NewTimer(lockRetryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return Worktree{}, err
		case <-t.C:
		}
		wt.Dirty = false
	}
}

// repoLocks holds one mutex per repository root for Create.
var repoLocks sync.Map // string -> *sync.Mutex

func repoLock(root string) *sync.Mutex {
	m, _ := repoLocks.LoadOrStore(filepath.Clean(root), &sync.Mutex{})
	return m.(*sync.Mutex)
}

// create does one attempt of Create.
func create(ctx context.Context, g *gitx.Git, repoRoot string, wt *Worktree, skip Skip) error {
	if _, _, err := g.Run(ctx, repoRoot, 0, "worktree", "add", "--detach", "--", wt.Path, wt.Base); err != nil {
		return err
	}
	applied, err := carryTracked(ctx, g, repoRoot, wt.Path, wt.Base, skip.Paths)
	if err != nil {
		return err
	}
	copied, err := carryUntracked(ctx, g, repoRoot, wt.Path, skip)
	if err != nil {
		return err
	}
	wt.Dirty = applied || copied
	return nil
}

// carryTracked streams `git diff --binary <base>` of the main checkout into
// `git apply --binary --index` in the worktree. It reports whether the
// patch was non-empty.
func carryTracked(ctx context.Context, g *gitx.Git, repoRoot, dest, base string, skip []string) (bool, error) {
	args := TrackedDiffArgs(base, skip)
	diff := g.Cmd(ctx, repoRoot, args...)
	diffErr := &limitedBuffer{max: maxStderr}
	diff.Stderr = diffErr
	stdout, err := diff.StdoutPipe()
	if err != nil {
		return false, errs.Wrap(errs.Internal, err, "git diff: %v", err)
	}
	// harnessd's own git runs confined, like an agent's (gitx.Git.Start).
	waitDiff, err := g.Start(ctx, diff, repoRoot, args...)
	if err != nil {
		return false, startError("diff", err)
	}
	br := bufio.NewReaderSize(stdout, 64<<10)
	if _, perr := br.Peek(1); perr != nil {
		// Nothing to carry (or diff failed: Wait says which).
		if werr := waitDiff(); werr != nil {
			return false, cmdError(ctx, "diff", werr, diffErr)
		}
		return false, nil
	}
	applyArgs := []string{"apply", "--binary", "--index", "--whitespace=nowarn", "-"}
	apply := g.Cmd(ctx, dest, applyArgs...)
	applyErr := &limitedBuffer{max: maxStderr}
	apply.Stdin = br
	apply.Stderr = applyErr
	aerr := func() error {
		wait, err := g.Start(ctx, apply, dest, applyArgs...)
		if err != nil {
			return err
		}
		return wait()
	}()
	if aerr != nil {
		// Stop diff if apply quit early and left it blocked on the pipe.
		if diff.Process != nil {
			diff.Process.Kill()
		}
	}
	// Drain whatever apply did not read so diff can finish.
	io.Copy(io.Discard, br)
	derr := waitDiff()
	if aerr != nil {
		return false, cmdError(ctx, "apply", aerr, applyErr)
	}
	if derr != nil {
		return false, cmdError(ctx, "diff", derr, diffErr)
	}
	return true, nil
}

// TrackedDiffArgs are the git arguments of the diff a worktree carries
// over: every tracked change of the work tree against base (binary,
// full index, no renames, submodules ignored), leaving out the paths
// (and what is below them) of skip. The fleet ships the same diff.
func TrackedDiffArgs(base string, skip []string) []string {
	args := []string{"diff", "--binary", "--full-index", "--no-ext-diff", "--no-textconv",
		"--no-color", "--no-renames", "--ignore-submodules=all", base, "--"}
	if len(skip) > 0 {
		args = append(args, ":/")
		for _, p := range skip {
			args = append(args, ":(top,exclude,literal)"+p)
		}
	}
	return args
}

// UntrackedNames answers the untracked, non-ignored paths of the checkout
// at repoRoot that a worktree carries over (sorted as git lists them):
// nested repositories and the paths (and what is below them) of skip are
// left out. Skip.File is for the caller to ask, with each entry's lstat.
func UntrackedNames(ctx context.Context, g *gitx.Git, repoRoot string, skip []string) ([]string, error) {
	out, truncated, err := g.Run(ctx, repoRoot, maxListOutput, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, errs.New(errs.Unavailable, "worktree: too many untracked files in %q", repoRoot)
	}
	var names []string
	for _, rel := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		name := string(rel)
		if name == "" || strings.HasSuffix(name, "/") || skipped(name, skip) {
			continue // a nested repository is not carried over
		}
		names = append(names, name)
	}
	return names, nil
}

// carryUntracked copies the main checkout's untracked, non-ignored files
// into the worktree. It reports whether any was copied.
func carryUntracked(ctx context.Context, g *gitx.Git, repoRoot, dest string, skip Skip) (bool, error) {
	names, err := UntrackedNames(ctx, g, repoRoot, skip.Paths)
	if err != nil {
		return false, err
	}
	if len(names) == 0 {
		return false, nil
	}
	src, err := os.OpenRoot(repoRoot)
	if err != nil {
		return false, errs.Wrap(errs.Internal, err, "open %q: %v", repoRoot, err)
	}
	defer src.Close()
	dst, err := os.OpenRoot(dest)
	if err != nil {
		return false, errs.Wrap(errs.Internal, err, "open %q: %v", dest, err)
	}
	defer dst.Close()
	copied := false
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return false, errs.Wrap(errs.CodeOf(err), err, "worktree: copying untracked files: %v", err)
		}
		ok, err := copyEntry(src, dst, name, skip.File)
		if err != nil {
			return false, err
		}
		copied = copied || ok
	}
	return copied, nil
}

// skipped reports whether name is one of skip or below one of them.
func skipped(name string, skip []string) bool {
	for _, p := range skip {
		if name == p || strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

// copyEntry copies one untracked path from src to dst (both roots, so no
// symlink in a parent can lead outside). Sockets, fifos and devices are
// skipped, as is a path that vanished meanwhile.
func copyEntry(src, dst *os.Root, name string, leaveOut func(string, fs.FileInfo) bool) (bool, error) {
	info, err := src.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, errs.Wrap(errs.Internal, err, "untracked %q: %v", name, err)
	}
	if leaveOut != nil && leaveOut(name, info) {
		return false, nil
	}
	if dir := filepath.Dir(name); dir != "." {
		if err := mkdirLike(src, dst, dir); err != nil {
			return false, err
		}
	}
	switch mode := info.Mode(); {
	case mode&fs.ModeSymlink != 0:
		target, err := src.Readlink(name)
		if err != nil {
			return false, errs.Wrap(errs.Internal, err, "read link %q: %v", name, err)
		}
		if err := dst.Symlink(target, name); err != nil {
			return false, errs.Wrap(errs.Internal, err, "create link %q: %v", name, err)
		}
		return true, nil
	case mode.IsRegular():
		in, err := src.Open(name)
		if err != nil {
			return false, errs.Wrap(errs.Internal, err, "open %q: %v", name, err)
		}
		defer in.Close()
		outF, err := dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
		if err != nil {
			return false, errs.Wrap(errs.Internal, err, "create %q: %v", name, err)
		}
		_, err = io.Copy(outF, in)
		if err == nil {
			err = outF.Chmod(mode.Perm()) // not narrowed by the umask
		}
		if cerr := outF.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, errs.Wrap(errs.Internal, err, "copy %q: %v", name, err)
		}
		return true, nil
	default:
		return false, nil
	}
}

// mkdirLike creates dir and its parents in dst with the modes they have in
// src.
func mkdirLike(src, dst *os.Root, dir string) error {
	if _, err := dst.Lstat(dir); err == nil {
		return nil
	}
	if parent := filepath.Dir(dir); parent != "." {
		if err := mkdirLike(src, dst, parent); err != nil {
			return err
		}
	}
	perm := fs.FileMode(0o755)
	if info, err := src.Lstat(dir); err == nil && info.IsDir() {
		perm = info.Mode().Perm()
	}
	if err := dst.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return errs.Wrap(errs.Internal, err, "create directory %q: %v", dir, err)
	}
	return dst.Chmod(dir, perm)
}

// Remove removes the worktree at path: `git worktree remove --force`, and
// when git refuses (already gone, not registered, submodules) removes the
// directory itself, provided it is a linked worktree of this repository or
// no worktree at all is left there; then `git worktree prune`. Removing a
// worktree that is already gone is not an error.
func Remove(ctx context.Context, g *gitx.Git, repoRoot, path string) error {
	if err := checkAbs("repository root", repoRoot); err != nil {
		return err
	}
	if err := checkAbs("worktree path", path); err != nil {
		return err
	}
	path = filepath.Clean(path)
	if within(repoRoot, path) {
		return errs.New(errs.InvalidArgument, "refusing to remove %q: it contains the repository %q", path, repoRoot)
	}
	_, _, rmErr := g.Run(ctx, repoRoot, 0, "worktree", "remove", "--force", "--", path)
	if rmErr != nil {
		if err := ctx.Err(); err != nil {
			return rmErr
		}
		if err := removeDir(ctx, g, repoRoot, path); err != nil {
			return err
		}
	}
	if _, _, err := g.Run(ctx, repoRoot, 0, "worktree", "prune"); err != nil {
		return err
	}
	return nil
}

// removeDir deletes path after git refused, if it is safe to: the
// directory is absent, empty, or a linked worktree of repoRoot (its .git
// file points into repoRoot's worktrees directory).
func removeDir(ctx context.Context, g *gitx.Git, repoRoot, path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errs.Wrap(errs.Internal, err, "remove worktree %q: %v", path, err)
	}
	if !info.IsDir() {
		return errs.New(errs.InvalidArgument, "refusing to remove %q: not a directory", path)
	}
	if ents, err := os.ReadDir(path); err == nil && len(ents) == 0 {
		return os.Remove(path)
	}
	common, _, err := g.Run(ctx, repoRoot, 0, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	worktrees := filepath.Join(strings.TrimSpace(string(common)), "worktrees")
	dotgit, err := os.ReadFile(filepath.Join(path, ".git"))
	if err != nil {
		return errs.New(errs.InvalidArgument, "refusing to remove %q: it is not a worktree of %q", path, repoRoot)
	}
	gitdir := strings.TrimSpace(strings.TrimPrefix(string(dotgit), "gitdir:"))
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(path, gitdir)
	}
	if !within(gitdir, worktrees) && !within(realPath(gitdir), realPath(worktrees)) {
		return errs.New(errs.InvalidArgument, "refusing to remove %q: it is not a worktree of %q", path, repoRoot)
	}
	if err := os.RemoveAll(path); err != nil {
		return errs.Wrap(errs.Internal, err, "remove worktree %q: %v", path, err)
	}
	return nil
}

// List returns the paths of repoRoot's worktrees from `git worktree list
// --porcelain -z` (git >= 2.36); the main worktree comes first (absent for a
// bare repository).
func List(ctx context.Context, g *gitx.Git, repoRoot string) ([]string, error) {
	out, truncated, err := g.Run(ctx, repoRoot, maxListOutput, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, errs.New(errs.Unavailable, "worktree list of %q is too long", repoRoot)
	}
	return parseList(out), nil
}

// parseList extracts the worktree paths of porcelain -z output: records of
// NUL-terminated attribute lines, separated by an empty line.
func parseList(out []byte) []string {
	var paths []string
	bare := false
	for _, f := range bytes.Split(out, []byte{0}) {
		s := string(f)
		switch {
		case strings.HasPrefix(s, "worktree "):
			paths = append(paths, s[len("worktree "):])
			bare = false
		case s == "bare" && !bare:
			// A bare repository's entry is not a worktree.
			if len(paths) > 0 {
				paths = paths[:len(paths)-1]
			}
			bare = true
		}
	}
	return paths
}

// Prune removes the linked worktrees of repoRoot located under the
// directory under for which keep returns false (keep may be nil: remove
// all), then runs `git worktree prune`. The main worktree is never removed.
// It returns the removed paths; on error, those removed so far.
func Prune(ctx context.Context, g *gitx.Git, repoRoot string, under string, keep func(path string) bool) (removed []string, err error) {
	if err := checkAbs("directory", under); err != nil {
		return nil, err
	}
	under = filepath.Clean(under)
	paths, err := List(ctx, g, repoRoot)
	if err != nil {
		return nil, err
	}
	realUnder := realPath(under)
	var errList []error
	for i, p := range paths {
		if i == 0 {
			continue // the main worktree
		}
		if !within(p, under) && !within(p, realUnder) && !within(realPath(p), realUnder) {
			continue
		}
		if keep != nil && keep(p) {
			continue
		}
		if err := Remove(ctx, g, repoRoot, p); err != nil {
			errList = append(errList, err)
			continue
		}
		removed = append(removed, p)
	}
	if len(errList) > 0 {
		return removed, errors.Join(errList...)
	}
	if _, _, err := g.Run(ctx, repoRoot, 0, "worktree", "prune"); err != nil {
		return removed, err
	}
	return removed, nil
}

// within reports whether p is dir or inside it (both clean and absolute).
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// realPath resolves symlinks where possible.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func checkAbs(what, p string) error {
	if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return errs.New(errs.InvalidArgument, "%s %q must be an absolute path", what, p)
	}
	if filepath.Clean(p) == "/" {
		return errs.New(errs.InvalidArgument, "%s must not be the file system root", what)
	}
	return nil
}

// isLockError reports whether err is a git lock conflict worth one retry.
func isLockError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "index.lock") || strings.Contains(msg, ".lock': File exists") ||
		strings.Contains(msg, "Unable to create") && strings.Contains(msg, ".lock") ||
		strings.Contains(msg, "could not lock") || strings.Contains(msg, "is locked")
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func startError(sub string, err error) error {
	var coded *errs.Error
	if errors.As(err, &coded) {
		return coded
	}
	return errs.Wrap(errs.Unavailable, err, "cannot start git %s: %v", sub, err)
}

// cmdError turns a failed diff/apply into a coded error with its stderr.
func cmdError(ctx context.Context, sub string, err error, stderr *limitedBuffer) error {
	if cerr := ctx.Err(); cerr != nil {
		code := errs.Cancelled
		if errors.Is(cerr, context.DeadlineExceeded) {
			code = errs.Timeout
		}
		return errs.Wrap(code, cerr, "git %s: %v", sub, cerr)
	}
	msg := strings.TrimSpace(stderr.buf.String())
	if msg == "" {
		msg = err.Error()
	}
	code := errs.Internal
	if sub == "apply" {
		code = errs.PatchConflict
	}
	return errs.Wrap(code, err, "worktree: carrying changes over: git %s failed: %s", sub, msg)
}
