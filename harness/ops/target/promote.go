package target

import (
	"context"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// PromoteArgs are the arguments of target_promote.
type PromoteArgs struct {
	TargetID string `json:"target_id" jsonschema:"from target_list"`
	// ApprovalID is the approval a person granted for the git init of a
	// target that is not a git work tree.
	ApprovalID string `json:"approval_id,omitempty" jsonschema:"after APPROVAL_REQUIRED, once a person approved the git init"`
}

// PromoteResult is the result of target_promote.
type PromoteResult struct {
	TargetID string              `json:"target_id"`
	Repo     messages.Repository `json:"repository"`
	// Initialized is true when the promotion ran git init.
	Initialized bool `json:"initialized"`
	// ReceiptsCopied counts the target's receipts copied under the repo_id.
	ReceiptsCopied int `json:"receipts_copied"`
	op.Meta
}

// promoteRisk is the risk of a promotion that runs git init: at the
// gate's approval threshold, so a person confirms it.
const promoteRisk = 85

func promote(ctx context.Context, c *op.Call, a PromoteArgs) (*op.Plan, error) {
	r, err := resolveTarget(c, a.TargetID, false)
	if err != nil {
		return nil, err
	}
	root := r.path()
	isGit := false
	if _, err := os.Lstat(filepath.Join(root, ".git")); err == nil {
		if top, _, err := c.Env.Git.TopLevel(ctx, root); err == nil && top == root {
			isGit = true
		}
	}
	if !isGit && r.Entry.Grant.Access != AccessWrite {
		return nil, errs.New(errs.PolicyDenied, "target %s is not a git work tree and was granted read access only: promoting it would run git init; register it with access \"write\", or run git init yourself and retry", r.id()).
			With("target_id", r.id())
	}
	in := gate(r, "target_promote", nil, !isGit, 20)
	in.Args, in.ApprovalID = PromoteArgs{TargetID: a.TargetID}, a.ApprovalID
	// A repository can do more than a target (commands, jobs, commits):
	// it is granted like one registered afresh, unless a person granted
	// the target for writing.
	g, err := c.Env.GrantFor(ctx, "repository", root)
	if err != nil {
		return nil, err
	}
	tg := r.Entry.Grant.Grant
	inherit := g.Ask != "" && messages.GrantRank(tg) == 2 && r.Entry.Grant.Access == AccessWrite
	if g.Ask != "" && !inherit {
		in.Grant = g.Ask
	}
	if !isGit {
		// The mediator asks a person from a risk at its threshold; it
		// scores commands by class, so git init is scored as the class
		// whose base alone needs a person (the promotion turns a plain
		// directory into a repository: not undone by a retry).
		in.Route = fast("target_promote", promoteRisk, true, "runs git init in a directory that is not a repository: a person must confirm it")
		in.Route.CommandClass = "destructive"
		in.Argv = []string{"git", "init"}
	}
	return &op.Plan{Gate: in, Run: func(ctx context.Context) (any, error) {
		out := &PromoteResult{TargetID: r.id()}
		if !isGit {
			if err := gitInit(ctx, c, r); err != nil {
				return nil, err
			}
			out.Initialized = true
		}
		top, common, err := c.Env.Git.TopLevel(ctx, root)
		if err != nil {
			return nil, err
		}
		if top != root {
			return nil, errs.New(errs.NotAGitRepository, "target %s: %s is inside the work tree %s, not its root; register that repository (repository_register)", r.id(), root, top).With("target_id", r.id())
		}
		ident, err := pathsafe.IdentityOf(root)
		if err != nil {
			return nil, errs.Wrap(errs.NotAGitRepository, err, "target %s: %v", r.id(), err)
		}
		grant := g.Record(a.ApprovalID, c.Env.Now())
		if inherit {
			grant = messages.RootGrant{By: tg.By, At: c.Env.Now().UTC()}
		}
		reg, err := c.Env.RT.Registry.RegisterGranted(ctx, messages.Register{Root: root, CommonDir: common, Identity: ident, Grant: grant, Now: c.Env.Now()})
		if err != nil {
			return nil, err
		}
		c.Env.Suspend(reg.Repo.ID, c.Env.Suspension(reg.Repo.Root, reg.Repo.Grant))
		c.Env.Forget(reg.Repo.ID)
		out.Repo = reg.Repo
		if out.ReceiptsCopied, err = copyReceipts(c.Env.Store, r.id(), reg.Repo.ID); err != nil {
			return nil, errs.Wrap(errs.Internal, err, "copy the receipts of %s under %s: %v", r.id(), reg.Repo.ID, err)
		}
		if _, err := c.Env.RT.Targets.Promote(ctx, r.id(), reg.Repo.ID); err != nil {
			return nil, err
		}
		return out, nil
	}}, nil
}

// gitInit runs git init in the target's root under its mutation slot, with
// a record and a receipt like every target mutation.
func gitInit(ctx context.Context, c *op.Call, r resolved) error {
	m := mutation{Op: "target_promote", Hashed: PromoteArgs{TargetID: r.id()}, Targets: []resolved{r}, Paths: []string{".git"},
		Run: func(ctx context.Context, rec *Receipt) error {
			if _, _, err := c.Env.Git.Run(ctx, r.path(), 0, "init", "--quiet"); err != nil {
				return err
			}
			rec.Changes = append(rec.Changes, patchChange(".git", "git_init"))
			return nil
		}}
	_, err := exec(ctx, c, m, mutationResult, markReplayed)
	return err
}

// copyReceipts copies every receipt of a target under the repository it
// became, so they are found under the new repo_id; the originals stay
// under the target_id.
func copyReceipts(store *persistence.Store, targetID, repoID string) (int, error) {
	prefix := persistence.ReceiptPrefix(targetID)
	type item struct {
		seq uint64
		v   map[string]any
	}
	var items []item
	err := store.Scan(prefix, func(key []byte, decode func(any) error) error {
		var v map[string]any
		if err := decode(&v); err != nil {
			return err
		}
		seq, ok := persistence.SeqOf(key)
		if !ok {
			return nil
		}
		v["repo_id"], v["promoted_from"] = repoID, targetID
		items = append(items, item{seq, v})
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, it := range items {
		if err := store.Put(persistence.ReceiptKey(repoID, it.seq), it.v); err != nil {
			return 0, err
		}
	}
	return len(items), nil
}

func patchChange(path, opName string) patch.Change { return patch.Change{Path: path, Op: opName} }
