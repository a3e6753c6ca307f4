package pathsafe

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// IdentityOf returns the device and inode of root and of its .git (a
// directory, or the file of a linked worktree), the identity recorded at
// registration and checked before every operation on the repository.
func IdentityOf(root string) (messages.RootIdentity, error) {
	var id messages.RootIdentity
	var st syscall.Stat_t
	if err := syscall.Stat(root, &st); err != nil {
		return id, &os.PathError{Op: "stat", Path: root, Err: err}
	}
	id.Dev, id.Ino = uint64(st.Dev), st.Ino
	git := filepath.Join(root, ".git")
	if err := syscall.Lstat(git, &st); err != nil {
		return id, &os.PathError{Op: "lstat", Path: git, Err: err}
	}
	id.GitDev, id.GitIno = uint64(st.Dev), st.Ino
	return id, nil
}

// CheckIdentity answers REPOSITORY_MOVED when the directory at root is not
// the one registered as repoID (want): it was moved or deleted, or another
// directory (or another repository) is at its path. A zero want (a record
// from before identities were kept) is not checked.
func CheckIdentity(repoID, root string, want messages.RootIdentity) error {
	if want == (messages.RootIdentity{}) {
		return nil
	}
	got, err := IdentityOf(root)
	fix := "nothing was done; if the repository now lives elsewhere, register its new location (repository_register) and use the new repo_id; if this is the repository you mean, register it again to record it"
	switch {
	case errors.Is(err, os.ErrNotExist) && got.Ino == 0:
		return errs.New(errs.RepositoryMoved, "repository %s: its root %s no longer exists (moved or deleted); %s", repoID, root, fix).
			With("repo_id", repoID).With("root", root)
	case errors.Is(err, os.ErrNotExist):
		return errs.New(errs.RepositoryMoved, "repository %s: %s/.git no longer exists: the directory is not the registered work tree; %s", repoID, root, fix).
			With("repo_id", repoID).With("root", root)
	case err != nil:
		return errs.Wrap(errs.Unavailable, err, "repository %s: check its root: %v", repoID, err)
	case got.Dev != want.Dev || got.Ino != want.Ino:
		return errs.New(errs.RepositoryMoved, "repository %s: another directory is at %s than the one registered (replaced or moved there); %s", repoID, root, fix).
			With("repo_id", repoID).With("root", root)
	case got.GitDev != want.GitDev || got.GitIno != want.GitIno:
		return errs.New(errs.RepositoryMoved, "repository %s: %s/.git was replaced: another repository is at the registered path; %s", repoID, root, fix).
			With("repo_id", repoID).With("root", root)
	}
	return nil
}
