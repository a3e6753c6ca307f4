package fleet

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // git's object ids, not a security boundary (the blob's sha256 and the seal are)
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/worktree"
)

// CaptureState answers the uncommitted state of the checkout at root
// against commit (its HEAD) as a local worktree job gets it
// (worktree.CreateSkipping with skip): the tracked changes as
// worktree.TrackedDiffArgs diffs them, the untracked files
// worktree.UntrackedNames lists that skip.File does not leave out
// (regular files and symlinks; sockets, fifos and devices are not
// carried), with their directories. The checkout is only read. A state
// over StateMax is refused (BUDGET_EXCEEDED).
func CaptureState(ctx context.Context, g *gitx.Git, root, commit string, skip worktree.Skip) (State, error) {
	var s State
	patch, truncated, err := g.Run(ctx, root, StateMax, worktree.TrackedDiffArgs(commit, skip.Paths)...)
	if err != nil {
		return State{}, err
	}
	if truncated {
		return State{}, tooBig()
	}
	if len(patch) > 0 {
		s.Patch = patch
	}
	names, err := worktree.UntrackedNames(ctx, g, root, skip.Paths)
	if err != nil {
		return State{}, err
	}
	if len(names) == 0 {
		return s, nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return State{}, errs.Wrap(errs.Internal, err, "open %q: %v", root, err)
	}
	defer func() { _ = r.Close() }()
	dirs := map[string]bool{}
	total := int64(len(s.Patch))
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return State{}, errs.Wrap(errs.CodeOf(err), err, "fleet: capturing the uncommitted state: %v", err)
		}
		if ValidStateName(name) != nil {
			continue // git lists no such name; never shipped
		}
		fi, err := r.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // vanished meanwhile, as a local copy skips it
		}
		if err != nil {
			return State{}, errs.Wrap(errs.Internal, err, "untracked %q: %v", name, err)
		}
		if skip.File != nil && skip.File(name, fi) {
			continue
		}
		f := StateFile{Name: name, Mode: fi.Mode().Perm()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := r.Readlink(name)
			if err != nil {
				return State{}, errs.Wrap(errs.Internal, err, "read link %q: %v", name, err)
			}
			f.Mode, f.Data = fs.ModeSymlink|0o777, []byte(target)
		case fi.Mode().IsRegular():
			if total+fi.Size() > StateMax {
				return State{}, tooBig()
			}
			if f.Data, err = readAt(r, name, StateMax-total); err != nil {
				return State{}, err
			}
		default:
			continue
		}
		total += int64(len(f.Data)) + int64(len(name))
		if total > StateMax {
			return State{}, tooBig()
		}
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			perm := fs.FileMode(0o755)
			if di, err := r.Lstat(d); err == nil && di.IsDir() {
				perm = di.Mode().Perm()
			}
			s.Files = append(s.Files, StateFile{Name: d, Mode: fs.ModeDir | perm})
		}
		s.Files = append(s.Files, f)
	}
	slices.SortFunc(s.Files, func(a, b StateFile) int { return strings.Compare(a.Name, b.Name) })
	return s, nil
}

func tooBig() error {
	return errs.New(errs.BudgetExceeded, "the uncommitted state is over %d MiB", StateMax>>20)
}

// readAt reads the file name of r, at most limit bytes.
func readAt(r *os.Root, name string, limit int64) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "open %q: %v", name, err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "read %q: %v", name, err)
	}
	if int64(len(b)) > limit {
		return nil, tooBig()
	}
	return b, nil
}

// StateTree answers the tree id of commit with s applied, computed in a
// temporary index in the git directory of the checkout at dir (neither
// its index nor its work tree is touched): read-tree of commit, the
// patch applied to the index (git apply --cached), each untracked file
// added as the blob of its bytes (symlinks as links, an executable
// owner bit as 100755), write-tree. Two nodes with the same commit and
// the same state answer the same id.
func StateTree(ctx context.Context, g *gitx.Git, dir, commit string, s State) (string, error) {
	out, _, err := g.Run(ctx, dir, 0, "rev-parse", "--path-format=absolute", "--git-dir", "--show-object-format")
	if err != nil {
		return "", err
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 {
		return "", errs.New(errs.Internal, "git rev-parse answered %q", out)
	}
	gitDir, format := lines[0], lines[1]
	var newHash func() hash.Hash
	switch format {
	case "sha1":
		newHash = sha1.New
	case "sha256":
		newHash = sha256.New
	default:
		return "", errs.New(errs.Unavailable, "object format %q is not known", format)
	}
	var rb [8]byte
	_, _ = rand.Read(rb[:])
	index := filepath.Join(gitDir, "harnessd-state-"+hex.EncodeToString(rb[:])+".index")
	defer func() {
		_ = os.Remove(index)
		_ = os.Remove(index + ".lock")
	}()
	if _, err := gitIndex(ctx, g, dir, index, nil, "read-tree", commit); err != nil {
		return "", err
	}
	if len(s.Patch) > 0 {
		if _, err := gitIndex(ctx, g, dir, index, s.Patch, "apply", "--cached", "--binary", "--whitespace=nowarn", "-"); err != nil {
			return "", err
		}
	}
	var info bytes.Buffer
	for _, f := range s.Files {
		mode := "100644"
		switch {
		case f.Mode.IsDir():
			continue
		case f.Mode&fs.ModeSymlink != 0:
			mode = "120000"
		case f.Mode&0o100 != 0:
			mode = "100755"
		}
		h := newHash()
		gitx.WriteBlobHeader(h, int64(len(f.Data)))
		h.Write(f.Data)
		info.WriteString(mode + " " + hex.EncodeToString(h.Sum(nil)) + "\t" + f.Name)
		info.WriteByte(0)
	}
	if info.Len() > 0 {
		if _, err := gitIndex(ctx, g, dir, index, info.Bytes(), "update-index", "-z", "--add", "--replace", "--index-info"); err != nil {
			return "", err
		}
	}
	tree, err := gitIndex(ctx, g, dir, index, nil, "write-tree", "--missing-ok")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(tree)), nil
}

// gitIndex runs git args in dir on the index file index (nil: the
// repository's own), stdin on its input, and answers its stdout.
func gitIndex(ctx context.Context, g *gitx.Git, dir, index string, stdin []byte, args ...string) ([]byte, error) {
	cmd := g.Cmd(ctx, dir, args...)
	if index != "" {
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+index)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	wait, err := g.Start(ctx, cmd, dir, args...)
	if err == nil {
		err = wait()
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			code := errs.Cancelled
			if errors.Is(cerr, context.DeadlineExceeded) {
				code = errs.Timeout
			}
			return nil, errs.Wrap(code, cerr, "git %s: %v", args[0], cerr)
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000]
		}
		if msg == "" {
			msg = err.Error()
		}
		code := errs.Internal
		if args[0] == "apply" {
			code = errs.PatchConflict
		}
		return nil, errs.Wrap(code, err, "git %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
}

// MaterializeState makes dest a detached worktree of the checkout at
// checkout at commit with s applied as a local worktree job gets it:
// the patch through `git apply --binary --index` (staged there), the
// untracked files written with their modes (symlinks as symlinks),
// their directories created where absent. dest must not exist; on any
// failure it is removed.
func MaterializeState(ctx context.Context, g *gitx.Git, checkout, commit, dest string, s State) (err error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return errs.Wrap(errs.Internal, err, "create %s: %v", filepath.Dir(dest), err)
	}
	if _, err := gitIndex(ctx, g, checkout, "", nil, "worktree", "add", "--detach", "--", dest, commit); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if rerr := worktree.Remove(cctx, g, checkout, dest); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	if len(s.Patch) > 0 {
		if _, err := gitIndex(ctx, g, dest, "", s.Patch, "apply", "--binary", "--index", "--whitespace=nowarn", "-"); err != nil {
			return err
		}
	}
	if len(s.Files) == 0 {
		return nil
	}
	r, err := os.OpenRoot(dest)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "open %q: %v", dest, err)
	}
	defer func() { _ = r.Close() }()
	for _, f := range s.Files {
		if err := writeEntry(r, f); err != nil {
			return err
		}
	}
	return nil
}

// writeEntry writes one untracked entry into r (a root: nothing reaches
// outside it).
func writeEntry(r *os.Root, f StateFile) error {
	name := filepath.FromSlash(f.Name)
	if d := filepath.Dir(name); d != "." {
		if err := r.MkdirAll(d, 0o755); err != nil {
			return errs.Wrap(errs.Internal, err, "create directory %q: %v", d, err)
		}
	}
	switch {
	case f.Mode.IsDir():
		if _, err := r.Lstat(name); err == nil {
			return nil // the commit has it: kept as it is, like a local worktree's copy
		}
		if err := r.Mkdir(name, f.Mode.Perm()); err != nil {
			return errs.Wrap(errs.Internal, err, "create directory %q: %v", f.Name, err)
		}
		if err := r.Chmod(name, f.Mode.Perm()); err != nil {
			return errs.Wrap(errs.Internal, err, "chmod %q: %v", f.Name, err)
		}
	case f.Mode&fs.ModeSymlink != 0:
		if err := r.Symlink(string(f.Data), name); err != nil {
			return errs.Wrap(errs.Internal, err, "create link %q: %v", f.Name, err)
		}
	default:
		out, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.Mode.Perm())
		if err != nil {
			return errs.Wrap(errs.Internal, err, "create %q: %v", f.Name, err)
		}
		_, err = out.Write(f.Data)
		if err == nil {
			err = out.Chmod(f.Mode.Perm()) // not narrowed by the umask
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return errs.Wrap(errs.Internal, err, "write %q: %v", f.Name, err)
		}
	}
	return nil
}
