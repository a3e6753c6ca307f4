// Package repo holds the registry operations: repository_register,
// repository_list and repository_unregister.
package repo

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/authority"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
)

// Ops returns the registry operations.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[RegisterArgs]{Name: "repository_register", Output: RegisterResult{}, Idempotent: true,
			Route: route.Readonly, Toolset: op.Admin, Roles: op.OperatorRoles,
			Description: "Register a git work tree so the other tools can work in it, when repository_list does not show it yet: answers its stable repo_id. Registering again answers the same id. Example: {\"path\":\"/home/me/src/app\"}",
			Prepare:     register}),
		op.Def(op.Spec[ListArgs]{Name: "repository_list", Output: ListResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles, NoRepo: true,
			Description: "List the registered repositories and their repo_id, which the other tools take: call it first. Yours is missing: repository_register (admin set). Example: {}",
			Prepare:     list}),
		op.Def(op.Spec[UnregisterArgs]{Name: "repository_unregister", Output: UnregisterResult{},
			Route: route.Readonly, Toolset: op.Admin, Roles: op.OperatorRoles,
			Description: "Forget a registered repository when harnessd should no longer work in it; its files are not touched. Example: {\"repo_id\":\"repo_1\"}",
			Prepare:     unregister}),
	}
}

// Repository is a registered work tree.
type Repository = messages.Repository

// RegisterArgs are the arguments of repository_register.
type RegisterArgs struct {
	Path string `json:"path" jsonschema:"absolute path of a git work tree or a directory inside one"`
	op.Approval
}

// RegisterResult is the result of repository_register.
type RegisterResult struct {
	Repository
	Created bool `json:"created"`
	// Reidentified: the path was registered, but another directory was
	// there; the record now names this one.
	Reidentified bool `json:"reidentified,omitempty"`
	op.Meta
}

func register(ctx context.Context, c *op.Call, args RegisterArgs) (*op.Plan, error) {
	if args.Path == "" {
		return nil, errs.New(errs.InvalidArgument, "path is required")
	}
	if !filepath.IsAbs(args.Path) {
		// The daemon's working directory is wherever it was started: a
		// relative path would register some other directory.
		return nil, errs.New(errs.InvalidArgument, "path %q is relative: give the absolute path of the work tree, e.g. the output of `pwd` or `git rev-parse --show-toplevel` "+
			"(harnessd never resolves a path against its own working directory; `harness repo add .` makes it absolute for you)", args.Path).With("field", "path")
	}
	p := filepath.Clean(args.Path)
	// Never grantable, whoever asks: decided on the canonical path before
	// git runs in it, and again on the work tree it finds.
	if _, err := c.Env.GrantFor(ctx, "repository", authority.Canonical(p)); errs.CodeOf(err) == errs.PathNotAllowed {
		return nil, err
	}
	st, err := os.Stat(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, errs.New(errs.NotFound, "path %q does not exist", args.Path).With("path", args.Path)
		}
		return nil, errs.New(errs.InvalidArgument, "path %q: %v", args.Path, err)
	}
	if !st.IsDir() {
		return nil, errs.New(errs.NotAGitRepository, "path %q is not a directory, let alone a git work tree", args.Path).With("path", args.Path)
	}
	root, common, err := c.Env.Git.TopLevel(ctx, p)
	if err != nil {
		return nil, err
	}
	if d, ok := holdsHidden(root, c.Env.Hidden); ok {
		return nil, errs.New(errs.PathNotAllowed, "harnessd's data dir %s is inside %s: commands run in the checkout could read its token and store; "+
			"move the data dir (harnessd serve --data-dir DIR) or register a directory that does not hold it", d, root).With("path", args.Path)
	}
	g, err := c.Env.GrantFor(ctx, "repository", root)
	if err != nil {
		return nil, err
	}
	in := op.GateArgs(args)
	if g.Ask != "" {
		// Already granted (by a person, an approval or a valid area):
		// registering it again is idempotent, nothing to ask.
		if e, ok := c.Env.RT.Registry.Lookup(actors.RepoID(root)); !ok || c.Env.Suspension(e.Repo.Root, e.Repo.Grant) != "" {
			in.Grant = g.Ask
		}
	}
	return &op.Plan{Gate: in, Run: func(ctx context.Context) (any, error) {
		ident, err := pathsafe.IdentityOf(root)
		if err != nil {
			return nil, errs.Wrap(errs.NotAGitRepository, err, "path %q: %v", args.Path, err).With("path", args.Path)
		}
		m := messages.Register{Root: root, CommonDir: common, Identity: ident, Now: c.Env.Now()}
		if g.By != "" || in.Grant != "" {
			m.Grant = g.Record(args.ApprovalID, c.Env.Now())
		}
		r, err := c.Env.RT.Registry.RegisterGranted(ctx, m)
		if err != nil {
			return nil, err
		}
		c.Env.Suspend(r.Repo.ID, c.Env.Suspension(r.Repo.Root, r.Repo.Grant))
		c.Env.Forget(r.Repo.ID) // a re-identified root gets a fresh path checker
		if r.Created {
			// Leftovers of an earlier harnessd (a crash, a full disk):
			// nothing of this one writes here yet.
			if _, err := patch.SweepTemp(root); err != nil {
				c.Env.Logger.Warn("register: sweep temp files", zap.String("root", root), zap.Error(err))
			}
		}
		return &RegisterResult{Repository: r.Repo, Created: r.Created, Reidentified: r.Reidentified}, nil
	}}, nil
}

// ListArgs are the arguments of repository_list.
type ListArgs struct {
	op.Approval
}

// ListResult is the result of repository_list.
type ListResult struct {
	Repositories []Repository `json:"repositories"`
	op.Meta
}

func list(_ context.Context, c *op.Call, args ListArgs) (*op.Plan, error) {
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		repos, err := c.Env.RT.Registry.List(ctx)
		if err != nil {
			return nil, err
		}
		if repos == nil {
			repos = []Repository{}
		}
		return &ListResult{Repositories: repos}, nil
	}}, nil
}

// UnregisterArgs are the arguments of repository_unregister.
type UnregisterArgs struct {
	RepoID string `json:"repo_id" jsonschema:"from repository_list"`
	op.Approval
}

// UnregisterResult is the result of repository_unregister.
type UnregisterResult struct {
	Repository
	op.Meta
}

func unregister(_ context.Context, c *op.Call, args UnregisterArgs) (*op.Plan, error) {
	if args.RepoID == "" {
		return nil, errs.New(errs.InvalidArgument, "repo_id is required")
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		r, err := c.Env.RT.Registry.Unregister(ctx, args.RepoID)
		if err != nil {
			return nil, err
		}
		c.Env.Forget(args.RepoID)
		return &UnregisterResult{Repository: r.Repo}, nil
	}}, nil
}

// holdsHidden returns the first of hidden (the data dirs no confined
// process may see) that lies inside root, symlinks resolved.
func holdsHidden(root string, hidden []string) (string, bool) {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	for _, h := range hidden {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		if h == root || strings.HasPrefix(h, strings.TrimSuffix(root, "/")+"/") {
			return h, true
		}
	}
	return "", false
}
