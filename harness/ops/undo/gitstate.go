package undo

import (
	"context"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/preimage"
)

// gitState is what a revert sets back in .git: the refs git-state jobs
// moved (git reset --hard, git branch -D, git tag -f, performed by
// harnessd itself) and the git directory's files they replaced.
type gitState struct {
	refs  []op.RefChange // Old: where the ref must be now; New: where it goes back
	files []preimage.Ref // the files as they were before the oldest target
}

// gitStateOf combines the targets (newest first): each ref goes from
// where the newest target left it back to where the oldest found it, each
// git file back to the oldest target's pre-image.
func gitStateOf(targets []*op.Receipt) gitState {
	var g gitState
	at := map[string]int{}
	file := map[string]int{}
	for _, t := range targets {
		for _, c := range t.Refs {
			if i, ok := at[c.Ref]; ok {
				g.refs[i].New = c.Old
				continue
			}
			at[c.Ref] = len(g.refs)
			g.refs = append(g.refs, op.RefChange{Ref: c.Ref, Old: c.New, New: c.Old})
		}
		for _, f := range t.GitFiles {
			if i, ok := file[f.Path]; ok {
				g.files[i] = f
				continue
			}
			file[f.Path] = len(g.files)
			g.files = append(g.files, f)
		}
	}
	return g
}

// check refuses (PATCH_CONFLICT) when a ref moved since the targets: run
// before any file is restored.
func (g gitState) check(ctx context.Context, env *op.Env, root string) error {
	if len(g.refs) == 0 {
		return nil
	}
	return env.CheckRefs(ctx, root, g.refs)
}

// restore puts the git files back, then moves the refs back in one
// compare-and-swap transaction, recording both in r (the revert's
// receipt: the refs it moved, the git files as they were before it) so a
// revert of the revert sets them again.
func (g gitState) restore(ctx context.Context, env *op.Env, root string, r *op.Receipt) error {
	if len(g.refs) == 0 && len(g.files) == 0 {
		return nil
	}
	if len(g.files) > 0 {
		gitDir, err := env.GitDir(ctx, root)
		if err != nil {
			return err
		}
		names := make([]string, len(g.files))
		for i, f := range g.files {
			names[i] = f.Path
		}
		if r.GitFiles, err = env.KeepGitFiles(gitDir, names); err != nil {
			return err
		}
		if err := env.RestoreGitFiles(gitDir, g.files); err != nil {
			return err
		}
	}
	if err := env.UpdateRefs(ctx, root, "harnessd: revert", g.refs); err != nil {
		return err
	}
	r.Refs = append(r.Refs, g.refs...)
	return nil
}
