package harness

import (
	"context"
	"strings"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// Commit and stage limits.
const (
	maxCommitMessage = 4000
	maxMutationPaths = 200
)

func mutationOps() []Op {
	return []Op{
		def("apply_patch", "Apply edit operations (replace, create, write, delete) to files of the repository, all-or-nothing with rollback, under a write lease with a fencing token. request_id is required: a retry with the same request_id and input replays the stored result instead of writing twice.", false, (*Harness).ApplyPatch),
		def("git_stage", "Stage exactly the named paths (git add), under a lease on the index. request_id is required (idempotent retries).", false, (*Harness).GitStage),
		def("git_commit", "Commit what is staged (or only the named paths) with a message; repository hooks do not run. request_id is required (idempotent retries).", false, (*Harness).GitCommit),
	}
}

// ApplyPatchArgs are the arguments of apply_patch.
type ApplyPatchArgs struct {
	RepoID                  string     `json:"repo_id" jsonschema:"repository id from repository_register"`
	RequestID               string     `json:"request_id,omitempty" jsonschema:"required: unique id of this write (up to 255 characters); retries reuse it"`
	Operations              []patch.Op `json:"operations" jsonschema:"edit operations applied in order: replace (old_text must match exactly once unless all), create, write, delete"`
	AllowedPaths            []string   `json:"allowed_paths,omitempty" jsonschema:"globs (e.g. src/**) every operation's path must match"`
	WaitMs                  int        `json:"wait_ms,omitempty" jsonschema:"wait up to this long for a busy file instead of failing with MUTATION_BUSY (max 30000)"`
	ApprovalID              string     `json:"approval_id,omitempty" jsonschema:"an approval a person granted for exactly this input"`
	IncludeLatencyBreakdown bool       `json:"include_latency_breakdown,omitempty"`
}

// mutStep is one planned write: what it touches and how to run it under a
// lease. Batches compose several steps under one lease and ledger entry.
type mutStep struct {
	op    string
	paths []string // rel paths the step may write
	keys  []string // resource keys it needs
	run   func(ctx context.Context, l *heldLease, r *Receipt) error
}

// ApplyPatch applies edit operations all-or-nothing under a lease.
func (h *Harness) ApplyPatch(ctx context.Context, args ApplyPatchArgs) (*MutationResult, error) {
	hashed := args
	hashed.WaitMs, hashed.IncludeLatencyBreakdown, hashed.ApprovalID = 0, false, ""
	return h.runMutation(ctx, mutationCall{repoID: args.RepoID, requestID: args.RequestID, approvalID: args.ApprovalID,
		waitMs: args.WaitMs, breakdown: args.IncludeLatencyBreakdown, hashed: hashed,
		plan: func(_ context.Context, e actors.RepoEntry) (mutStep, error) { return h.planApplyPatch(e, args) }})
}

// mutationCall is what the public mutation methods share: the common
// arguments, the arguments to hash (without timing and approval fields)
// and how to plan the write.
type mutationCall struct {
	repoID, requestID, approvalID string
	waitMs                        int
	breakdown                     bool
	hashed                        any
	plan                          func(ctx context.Context, e actors.RepoEntry) (mutStep, error)
}

// runMutation plans a write, sends it through the gate and runs it under
// the ledger and a lease (mutate).
func (h *Harness) runMutation(ctx context.Context, c mutationCall) (*MutationResult, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	tr := startTrace()
	e, err := h.lookup(c.repoID)
	if err != nil {
		return nil, err
	}
	st, err := c.plan(ctx, e)
	if err != nil {
		return nil, err
	}
	if _, err := h.gate(ctx, gateInput{Tool: st.op, Repo: &e, Paths: st.paths, Writes: true, Args: c.hashed, ApprovalID: c.approvalID}); err != nil {
		return nil, err
	}
	return h.mutate(ctx, &tr, mutation{
		op: st.op, repo: e, requestID: c.requestID, args: c.hashed, paths: st.paths, keys: st.keys,
		wait: time.Duration(c.waitMs) * time.Millisecond, breakdown: c.breakdown, run: st.run,
	})
}

// planApplyPatch validates a patch and resolves its paths: bad paths fail
// before the ledger sees the request.
func (h *Harness) planApplyPatch(e actors.RepoEntry, args ApplyPatchArgs) (mutStep, error) {
	if len(args.Operations) == 0 {
		return mutStep{}, errs.New(errs.InvalidArgument, "operations is empty: nothing to apply")
	}
	if len(args.Operations) > patch.DefaultMaxOps {
		return mutStep{}, errs.New(errs.InvalidArgument, "%d operations: at most %d in one patch", len(args.Operations), patch.DefaultMaxOps)
	}
	root, err := h.fast.root(e)
	if err != nil {
		return mutStep{}, err
	}
	var rels []string
	seen := map[string]bool{}
	for _, op := range args.Operations {
		_, rel, err := root.ResolveWrite(op.Path)
		if err != nil {
			return mutStep{}, err
		}
		if !seen[rel] {
			seen[rel] = true
			rels = append(rels, rel)
		}
	}
	keys := make([]string, len(rels))
	for i, rel := range rels {
		keys[i] = string(lease.PathKey(e.Repo.CheckoutID, rel))
	}
	ops, allowed := args.Operations, args.AllowedPaths
	return mutStep{op: "apply_patch", paths: rels, keys: keys, run: func(ctx context.Context, l *heldLease, r *Receipt) error {
		res, err := patch.Apply(ctx, root, ops, patch.Options{AllowedPaths: allowed, Fence: l.fence})
		if err != nil {
			return err
		}
		r.Changes = append(r.Changes, res.Changes...)
		return nil
	}}, nil
}

// GitStageArgs are the arguments of git_stage.
type GitStageArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"repository id from repository_register"`
	RequestID               string   `json:"request_id,omitempty" jsonschema:"required: unique id of this write; retries reuse it"`
	Paths                   []string `json:"paths" jsonschema:"paths to stage (up to 200); deletions are staged too"`
	WaitMs                  int      `json:"wait_ms,omitempty"`
	ApprovalID              string   `json:"approval_id,omitempty"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
}

// GitStage stages exactly the named paths.
func (h *Harness) GitStage(ctx context.Context, args GitStageArgs) (*MutationResult, error) {
	hashed := args
	hashed.WaitMs, hashed.IncludeLatencyBreakdown, hashed.ApprovalID = 0, false, ""
	return h.runMutation(ctx, mutationCall{repoID: args.RepoID, requestID: args.RequestID, approvalID: args.ApprovalID,
		waitMs: args.WaitMs, breakdown: args.IncludeLatencyBreakdown, hashed: hashed,
		plan: func(_ context.Context, e actors.RepoEntry) (mutStep, error) { return h.planGitStage(e, args) }})
}

func (h *Harness) planGitStage(e actors.RepoEntry, args GitStageArgs) (mutStep, error) {
	root, err := h.fast.root(e)
	if err != nil {
		return mutStep{}, err
	}
	rels, err := checkPaths(root, args.Paths, true)
	if err != nil {
		return mutStep{}, err
	}
	return mutStep{op: "git_stage", paths: rels, keys: []string{string(lease.GitIndexKey(e.Repo.CheckoutID))},
		run: func(ctx context.Context, l *heldLease, r *Receipt) error {
			if err := l.fence(); err != nil {
				return err
			}
			gitArgs := append([]string{"add", "--all", "--"}, rels...)
			if _, _, err := h.fast.git.Run(ctx, root.Path(), 0, gitArgs...); err != nil {
				return err
			}
			for _, p := range rels {
				r.Changes = append(r.Changes, patch.Change{Path: p, Op: "stage"})
			}
			return nil
		}}, nil
}

// GitCommitArgs are the arguments of git_commit.
type GitCommitArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"repository id from repository_register"`
	RequestID               string   `json:"request_id,omitempty" jsonschema:"required: unique id of this write; retries reuse it"`
	Message                 string   `json:"message" jsonschema:"commit message (up to 4000 characters)"`
	Paths                   []string `json:"paths,omitempty" jsonschema:"commit only these paths (their work-tree content); default: what is staged"`
	AllowEmpty              bool     `json:"allow_empty,omitempty" jsonschema:"allow a commit with no changes"`
	WaitMs                  int      `json:"wait_ms,omitempty"`
	ApprovalID              string   `json:"approval_id,omitempty"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
}

// GitCommit commits the index (or only the named paths). Hooks do not run.
func (h *Harness) GitCommit(ctx context.Context, args GitCommitArgs) (*MutationResult, error) {
	hashed := args
	hashed.WaitMs, hashed.IncludeLatencyBreakdown, hashed.ApprovalID = 0, false, ""
	return h.runMutation(ctx, mutationCall{repoID: args.RepoID, requestID: args.RequestID, approvalID: args.ApprovalID,
		waitMs: args.WaitMs, breakdown: args.IncludeLatencyBreakdown, hashed: hashed,
		plan: func(ctx context.Context, e actors.RepoEntry) (mutStep, error) { return h.planGitCommit(ctx, e, args) }})
}

func (h *Harness) planGitCommit(ctx context.Context, e actors.RepoEntry, args GitCommitArgs) (mutStep, error) {
	switch {
	case strings.TrimSpace(args.Message) == "":
		return mutStep{}, errs.New(errs.InvalidArgument, "message is required")
	case len([]rune(args.Message)) > maxCommitMessage:
		return mutStep{}, errs.New(errs.InvalidArgument, "message has %d characters: at most %d", len([]rune(args.Message)), maxCommitMessage)
	case strings.ContainsRune(args.Message, 0):
		return mutStep{}, errs.New(errs.InvalidArgument, "message contains a NUL byte")
	}
	root, err := h.fast.root(e)
	if err != nil {
		return mutStep{}, err
	}
	var rels []string
	if len(args.Paths) > 0 {
		if rels, err = checkPaths(root, args.Paths, true); err != nil {
			return mutStep{}, err
		}
	}
	st, err := h.fast.git.Status(ctx, root.Path())
	if err != nil {
		return mutStep{}, err
	}
	keys := []string{string(lease.GitIndexKey(e.Repo.CheckoutID)), string(lease.GitHeadKey(e.Repo.CheckoutID))}
	if st.Branch != "" {
		keys = append(keys, string(lease.GitRefKey(e.Repo.CheckoutID, "refs/heads/"+st.Branch)))
	}
	return mutStep{op: "git_commit", paths: rels, keys: keys, run: func(ctx context.Context, l *heldLease, r *Receipt) error {
		dir := root.Path()
		before, err := h.head(ctx, dir)
		if err != nil {
			return err
		}
		if !args.AllowEmpty {
			if err := h.checkSomethingToCommit(ctx, dir, rels); err != nil {
				return err
			}
		}
		if err := l.fence(); err != nil {
			return err
		}
		gitArgs := []string{"commit", "--no-verify", "--quiet", "--no-edit", "--cleanup=strip", "-m", args.Message}
		if args.AllowEmpty {
			gitArgs = append(gitArgs, "--allow-empty")
		}
		if len(rels) > 0 {
			gitArgs = append(append(gitArgs, "--only", "--"), rels...)
		}
		if _, _, err := h.fast.git.Run(ctx, dir, 0, gitArgs...); err != nil {
			return err
		}
		after, err := h.head(ctx, dir)
		if err != nil {
			return err
		}
		out, _, err := h.fast.git.Run(ctx, dir, 0, "diff-tree", "--no-commit-id", "--name-status", "-r", "-z", "--root", after)
		if err == nil {
			r.Changes = append(r.Changes, parseNameStatus(out)...)
		}
		hooks := false
		if r.HeadBefore == "" {
			r.HeadBefore = before
		}
		r.HeadAfter, r.Commit, r.HooksRan = after, after, &hooks
		return nil
	}}, nil
}

// checkPaths resolves agent paths (up to 200) for stage and commit: inside
// the root, not secret, not .git. Deleted files are fine.
func checkPaths(root *pathsafe.Root, paths []string, required bool) ([]string, error) {
	if required && len(paths) == 0 {
		return nil, errs.New(errs.InvalidArgument, "paths is empty")
	}
	if len(paths) > maxMutationPaths {
		return nil, errs.New(errs.InvalidArgument, "%d paths: at most %d", len(paths), maxMutationPaths)
	}
	rels := make([]string, 0, len(paths))
	for _, p := range paths {
		_, rel, err := root.ResolveWrite(p)
		if err != nil {
			return nil, err
		}
		rels = append(rels, rel)
	}
	return rels, nil
}

func (h *Harness) head(ctx context.Context, dir string) (string, error) {
	out, _, err := h.fast.git.Run(ctx, dir, 0, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil {
		if errs.CodeOf(err) == errs.NotFound || len(out) == 0 {
			return "", nil // unborn branch
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// checkSomethingToCommit refuses a commit that would record nothing.
func (h *Harness) checkSomethingToCommit(ctx context.Context, dir string, rels []string) error {
	var args []string
	if len(rels) > 0 {
		args = append([]string{"status", "--porcelain", "-z", "--untracked-files=no", "--"}, rels...)
	} else {
		args = []string{"diff", "--cached", "--name-only", "-z"}
	}
	out, _, err := h.fast.git.Run(ctx, dir, 0, args...)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(out))) == 0 {
		what := "nothing is staged"
		if len(rels) > 0 {
			what = "the named paths have no changes to commit"
		}
		return errs.New(errs.InvalidArgument, "%s (stage changes with git_stage, or pass allow_empty)", what)
	}
	return nil
}

// parseNameStatus parses `git diff-tree --name-status -z` output.
func parseNameStatus(b []byte) []patch.Change {
	f := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	var out []patch.Change
	for i := 0; i+1 < len(f); {
		st := f[i]
		if st == "" {
			i++
			continue
		}
		if st[0] == 'R' || st[0] == 'C' {
			if i+2 < len(f) {
				out = append(out, patch.Change{Path: f[i+2], Op: "rename"})
			}
			i += 3
			continue
		}
		op := map[byte]string{'A': "create", 'M': "modify", 'D': "delete", 'T': "type_change"}[st[0]]
		if op == "" {
			op = "modify"
		}
		out = append(out, patch.Change{Path: f[i+1], Op: op})
		i += 2
	}
	return out
}
