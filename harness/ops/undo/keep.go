// Package undo holds revert, run_revert and receipt_list: the undo of
// harnessd's writes from the pre-images their receipts name (see
// docs/undo.md), and Keep, which the writes use to keep those pre-images.
package undo

import (
	"fmt"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/preimage"
)

// Keep returns the patch.Options.PreImage hook of a write: it stores the
// pre-image of every file the patch changes in env's pre-image store and
// names it in r (the first pre-image of a path wins, so a batch that edits
// a file twice records its state before the batch). A secret path is never
// stored: the resolver refuses it before, and Keep refuses it again.
func Keep(env *op.Env, r *op.Receipt) func(patch.PreImage) error {
	return func(pi patch.PreImage) error {
		if pat, secret := env.Deny.Match(pi.Rel); secret {
			return errs.New(errs.SecretPathDenied, "path %q matches the secret pattern %q: its content is never kept", pi.Rel, pat).With("path", pi.Rel)
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
			} else if _, err := env.PreImages.Put(pi.Data); err != nil {
				ref.NotKept = errs.From(err).Message
			}
		}
		r.PreImages = append(r.PreImages, ref)
		return nil
	}
}
