package harness

import (
	"context"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/messages"
)

// Repository is a registered work tree.
type Repository = messages.Repository

// RegisterArgs are the arguments of repository_register.
type RegisterArgs struct {
	Path string `json:"path" jsonschema:"path of a git work tree (or a directory inside one); it is canonicalised"`
}

// RegisterResult is the result of repository_register.
type RegisterResult struct {
	Repository
	Created bool `json:"created"`
	Meta
}

// RegisterRepository registers the git work tree at args.Path and returns
// its stable repo_id and checkout_id. Registering the same work tree again
// returns the same ids with Created false.
func (h *Harness) RegisterRepository(ctx context.Context, args RegisterArgs) (*RegisterResult, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	tr := startTrace()
	if args.Path == "" {
		return nil, errs.New(errs.InvalidArgument, "path is required")
	}
	p, err := filepath.Abs(args.Path)
	if err != nil {
		return nil, errs.New(errs.InvalidArgument, "path %q: %v", args.Path, err)
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
	root, common, err := h.fast.git.TopLevel(ctx, p)
	if err != nil {
		return nil, err
	}
	tr.mark(segRouting)
	r, err := request[messages.Registered](ctx, h, h.reg, messages.Register{Root: root, CommonDir: common, Now: h.cfg.Now()})
	if err != nil {
		return nil, err
	}
	return &RegisterResult{Repository: r.Repo, Created: r.Created, Meta: Meta{Route: "fast", Latency: tr.finish(segExecution, false)}}, nil
}

// ListArgs are the arguments of repository_list.
type ListArgs struct{}

// ListResult is the result of repository_list.
type ListResult struct {
	Repositories []Repository `json:"repositories"`
	Meta
}

// Repositories lists the registered repositories, sorted by root.
func (h *Harness) Repositories(ctx context.Context, _ ListArgs) (*ListResult, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	tr := startTrace()
	r, err := request[messages.Repos](ctx, h, h.reg, messages.ListRepos{})
	if err != nil {
		return nil, err
	}
	if r.Repos == nil {
		r.Repos = []Repository{}
	}
	return &ListResult{Repositories: r.Repos, Meta: Meta{Route: "fast", Latency: tr.finish(segExecution, false)}}, nil
}

// UnregisterArgs are the arguments of repository_unregister.
type UnregisterArgs struct {
	RepoID string `json:"repo_id" jsonschema:"the repo_id returned by repository_register"`
}

// UnregisterResult is the result of repository_unregister.
type UnregisterResult struct {
	Repository
	Meta
}

// UnregisterRepository forgets a repository. Its files are not touched.
func (h *Harness) UnregisterRepository(ctx context.Context, args UnregisterArgs) (*UnregisterResult, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	tr := startTrace()
	if args.RepoID == "" {
		return nil, errs.New(errs.InvalidArgument, "repo_id is required")
	}
	r, err := request[messages.Unregistered](ctx, h, h.reg, messages.Unregister{RepoID: args.RepoID})
	if err != nil {
		return nil, err
	}
	h.fast.forget(args.RepoID)
	return &UnregisterResult{Repository: r.Repo, Meta: Meta{Route: "fast", Latency: tr.finish(segExecution, false)}}, nil
}

// lookup resolves a repo_id through the registry's published index.
func (h *Harness) lookup(repoID string) (actors.RepoEntry, error) {
	if repoID == "" {
		return actors.RepoEntry{}, errs.New(errs.InvalidArgument, "repo_id is required")
	}
	e, ok := h.index.Lookup(repoID)
	if !ok {
		return actors.RepoEntry{}, errs.New(errs.RepositoryNotRegistered, "repository %q is not registered (see repository_list)", repoID).With("repo_id", repoID)
	}
	return e, nil
}
