package gitindex

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/harnessd/harnessd/internal/gitx"
)

// GitUnstaged returns Checkout.AskGit for the work tree root: git's own
// status restricted to the paths asked (`git status --porcelain=v2 -z
// --untracked-files=all -- :(literal)<path>...`, the flags of the status
// the base came from, so submodules are judged the same way), its unstaged
// entries.
func GitUnstaged(ctx context.Context, git *gitx.Git, root string) func(paths []string) ([]gitx.Entry, error) {
	return func(paths []string) ([]gitx.Entry, error) {
		args := []string{"status", "--porcelain=v2", "-z", "--untracked-files=all", "--"}
		for _, p := range paths {
			args = append(args, ":(literal)"+p)
		}
		out, truncated, err := git.Run(ctx, root, 64<<20, args...)
		if err != nil {
			return nil, err
		}
		if truncated {
			return nil, inexact("git status of %d paths past 64 MiB", len(paths))
		}
		st, err := gitx.ParseStatus(out)
		if err != nil {
			return nil, fmt.Errorf("git status of %d paths: %w", len(paths), err)
		}
		return st.Unstaged, nil
	}
}

// GitBlob returns NewAttributes' readBlob for the repository of the work
// tree root: `git cat-file blob <oid>`.
func GitBlob(ctx context.Context, git *gitx.Git, root string) func(oid []byte) ([]byte, error) {
	return func(oid []byte) ([]byte, error) {
		out, truncated, err := git.Run(ctx, root, attrMaxFile, "cat-file", "blob", hex.EncodeToString(oid))
		if err != nil {
			return nil, err
		}
		if truncated {
			return nil, fmt.Errorf("%w: blob %x", ErrAttrTooLarge, oid)
		}
		return out, nil
	}
}
