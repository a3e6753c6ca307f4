package op

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/preimage"
)

// The git-state work harnessd performs itself (git reset --hard, git
// branch -D, git tag -f as approved jobs, and their revert): a job's
// processes never write .git (hooks, config, filters), so harnessd's own
// git does it, hardened as every git of harnessd's (gitx: no hooks, no
// global or system config, repository-defined drivers neutralised) and
// confined like it (ConfineGit: the read profile, writable only the
// checkout and its git directories, no network).

// GitStateFiles returns the files of a work tree's git directory that git
// reset --hard replaces or removes: the index, ORIG_HEAD and the state of
// a merge, cherry-pick or revert in progress.
func GitStateFiles() []string {
	return []string{"index", "ORIG_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "AUTO_MERGE",
		"CHERRY_PICK_HEAD", "REVERT_HEAD", "SQUASH_MSG"}
}

// maxGitStderr bounds the stderr quoted from one git process.
const maxGitStderr = 4 << 10

// GitWrite runs harnessd's own git with args in the checkout at root,
// its work tree and git directories writable (see above), stdin fed to
// it. It returns stdout; a failure is an error quoting git's stderr, with
// code (or INTERNAL when code is "").
func (e *Env) GitWrite(ctx context.Context, root, stdin string, code errs.Code, args ...string) ([]byte, error) {
	if e.Git == nil {
		return nil, errs.New(errs.Unavailable, "git is not configured in this harness")
	}
	cmd := e.Git.Cmd(ctx, root, args...)
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	writable := append([]string{root}, gitx.Writable(root, args)...)
	start, done, err := e.ConfineGit(ctx, root, writable)
	if err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "confine harnessd's git: %v", errs.From(err).Message)
	}
	defer done()
	var out, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := start(cmd); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "start git %s: %v", args[0], err)
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.Cancelled, ctx.Err(), "git %s: %v", args[0], ctx.Err())
		}
		if code == "" {
			code = errs.Internal
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > maxGitStderr {
			msg = msg[:maxGitStderr] + "..."
		}
		return nil, errs.New(code, "git %s: %s", args[0], msg)
	}
	return out.Bytes(), nil
}

// RefValue returns the object a ref names now ("" when it does not exist).
func (e *Env) RefValue(ctx context.Context, root, ref string) (string, error) {
	if e.Git == nil {
		return "", errs.New(errs.Unavailable, "git is not configured in this harness")
	}
	out, _, err := e.Git.Run(ctx, root, 0, "rev-parse", "-q", "--verify", ref)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", nil // rev-parse -q --verify fails silently for a ref that does not exist
	}
	return strings.TrimSpace(string(out)), nil
}

// CheckRefs refuses (PATCH_CONFLICT) unless every ref still names Old.
func (e *Env) CheckRefs(ctx context.Context, root string, changes []RefChange) error {
	for _, c := range changes {
		cur, err := e.RefValue(ctx, root, c.Ref)
		if err != nil {
			return err
		}
		if cur != c.Old {
			return errs.New(errs.PatchConflict, "%s is at %s, not at %s as expected: it moved since (someone's git); nothing was changed", c.Ref, orAbsent(cur), orAbsent(c.Old)).
				With("ref", c.Ref).With("expected", c.Old).With("found", cur)
		}
	}
	return nil
}

func orAbsent(v string) string {
	if v == "" {
		return "absent"
	}
	return v
}

// UpdateRefs moves every ref of changes from Old to New ("" = absent) in
// one transaction of git update-ref --stdin: each compared and swapped,
// all or none (PATCH_CONFLICT when one moved since).
func (e *Env) UpdateRefs(ctx context.Context, root, msg string, changes []RefChange) error {
	var in strings.Builder
	for _, c := range changes {
		switch {
		case c.New == "":
			fmt.Fprintf(&in, "delete %s %s\n", c.Ref, c.Old)
		case c.Old == "":
			fmt.Fprintf(&in, "create %s %s\n", c.Ref, c.New)
		default:
			fmt.Fprintf(&in, "update %s %s %s\n", c.Ref, c.New, c.Old)
		}
	}
	if in.Len() == 0 {
		return nil
	}
	_, err := e.GitWrite(ctx, root, in.String(), errs.PatchConflict, "update-ref", "-m", msg, "--stdin")
	return err
}

// GitDir returns the git directory of the work tree at root (a linked
// worktree's own, where its index and HEAD live).
func (e *Env) GitDir(ctx context.Context, root string) (string, error) {
	if e.Git == nil {
		return "", errs.New(errs.Unavailable, "git is not configured in this harness")
	}
	out, _, err := e.Git.Run(ctx, root, 0, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// KeepGitFiles keeps the files names of the git directory gitDir in the
// pre-image store (synced): a Ref per name, Absent for a missing one.
func (e *Env) KeepGitFiles(gitDir string, names []string) ([]preimage.Ref, error) {
	if e.PreImages == nil {
		return nil, errs.New(errs.Unavailable, "pre-images are off in this harness: the git directory's files cannot be kept for undo")
	}
	var out []preimage.Ref
	for _, n := range names {
		p := filepath.Join(gitDir, n)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			out = append(out, preimage.Ref{Path: n, Absent: true})
			continue
		}
		if err != nil {
			return nil, errs.Wrap(errs.Internal, err, "read %s of the git directory: %v", n, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, errs.New(errs.PolicyDenied, "%s of the git directory is not a regular file: harnessd does not change it", n).With("path", n)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, errs.Wrap(errs.Internal, err, "read %s of the git directory: %v", n, err)
		}
		d, err := e.PreImages.Put(b)
		if err != nil {
			return nil, errs.Wrap(errs.CodeOf(err), err, "keep %s of the git directory: %v", n, errs.From(err).Message)
		}
		out = append(out, preimage.Ref{Path: n, SHA256: d, Mode: fmt.Sprintf("%04o", fi.Mode().Perm())})
	}
	return out, nil
}

// RestoreGitFiles puts the files of refs back in the git directory gitDir
// as git writes them (a name.lock created exclusively, then renamed over
// the name), removing those that were absent.
func (e *Env) RestoreGitFiles(gitDir string, refs []preimage.Ref) error {
	for _, r := range refs {
		if strings.ContainsAny(r.Path, "/\\") || r.Path == "" || r.Path[0] == '.' {
			return errs.New(errs.InvalidArgument, "%q is not a file of the git directory", r.Path)
		}
		p := filepath.Join(gitDir, r.Path)
		if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
			return errs.New(errs.PolicyDenied, "%s of the git directory is not a regular file now: harnessd does not replace it", r.Path).With("path", r.Path)
		}
		if r.Absent {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return errs.Wrap(errs.Internal, err, "remove %s of the git directory: %v", r.Path, err)
			}
			continue
		}
		if e.PreImages == nil {
			return errs.New(errs.NotFound, "pre-images are off in this harness: %s of the git directory cannot be restored", r.Path)
		}
		b, err := e.PreImages.Get(r.SHA256)
		if err != nil {
			return errs.From(err).With("path", ".git/"+r.Path)
		}
		if err := writeLocked(p, b); err != nil {
			return err
		}
	}
	return nil
}

// writeLocked writes p as git does: p.lock created exclusively (a git at
// work on the same file makes this fail), synced, renamed over p.
func writeLocked(p string, b []byte) error {
	lock := p + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errs.New(errs.MutationBusy, "%s exists: a git is at work on %s; retry once it ended", lock, filepath.Base(p))
		}
		return errs.Wrap(errs.Internal, err, "write %s: %v", p, err)
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(lock)
		return errs.Wrap(errs.StorageFull, err, "write %s: %v", p, err)
	}
	if err := os.Rename(lock, p); err != nil {
		_ = os.Remove(lock)
		return errs.Wrap(errs.Internal, err, "write %s: %v", p, err)
	}
	return nil
}
