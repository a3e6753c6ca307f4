// Package undo holds revert, run_revert and receipt_list: the undo of
// harnessd's writes from the pre-images their receipts name (see
// docs/undo.md), and Keep, the write path's pre-image hook (KeepFor is
// op.WriteHooks.Keep, registered at Open): every write keeps its files'
// pre-images through it.
package undo

import (
	"fmt"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/preimage"
)

// KeepFor is the write path's Keep hook (op.WriteHooks): Keep for the
// call's environment and repository.
func KeepFor(c *op.Call, r *op.Receipt) func(patch.PreImage) error {
	return Keep(c.Env, c.Root, r)
}

// Keep returns the patch.Options.PreImage hook of a write to root: it
// stores the pre-image of every file the patch changes in env's pre-image
// store and names it in r (the first pre-image of a path wins, so a batch
// that edits a file twice records its state before the batch). A secret
// path or a hard link is never stored (a revert would bring its content
// back as a plain file): the patch refuses them before, and Keep refuses
// them again with the same check (root.CheckLeaf).
func Keep(env *op.Env, root *pathsafe.Root, r *op.Receipt) func(patch.PreImage) error {
	return func(pi patch.PreImage) error {
		if err := root.CheckLeaf(pi.Rel, pi.Info); err != nil {
			return err
		}
		for _, have := range r.PreImages {
			if have.Path == pi.Rel {
				return nil
			}
		}
		ref := preimage.Ref{Path: pi.Rel}
		switch {
		case !pi.Existed:
			ref.Absent = true
		case pi.Link:
			ref.SHA256, ref.Link, ref.NotKept = pi.Digest, true, "a symbolic link: revert does not recreate links"
		default:
			ref.SHA256, ref.Mode = pi.Digest, fmt.Sprintf("%04o", pi.Mode.Perm())
			if env.PreImages == nil {
				ref.NotKept = "pre-images are off in this harness"
			} else if _, err := env.PreImages.PutPending(pi.Data); err != nil {
				ref.NotKept = errs.From(err).Message
			}
		}
		r.PreImages = append(r.PreImages, ref)
		return nil
	}
}
