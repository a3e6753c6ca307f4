// Package mutation holds the Fast Path writes: apply_patch, git_stage and
// git_commit. Each plans its write (paths, resource keys, the fenced write
// itself) and hands it to the mutation engine (op.Call.Write); a batch runs
// the same plans under one lease. It calls only down: the verification
// gate, the pre-images and the commit trailers are hooks of the write path
// (op.WriteHooks), which the concerns that own them register at Open.
package mutation

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/trailer"
)

// Commit and stage limits.
const (
	maxCommitMessage = 4000
	maxMutationPaths = 200
)

// Ops returns the write operations.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[ApplyPatchArgs]{Name: "apply_patch", Output: op.MutationResult{}, Destructive: true, Idempotent: true,
			Route: route.Mutation, Toolset: op.Core, Roles: op.WriteRoles, Verified: true, Topics: []string{"style", "test"}, ChangesCheckout: true, BatchStep: true, HashIgnore: []string{"wait_ms", "on_busy"},
			Description: "Change files of the repository: replace exact text, create, write or delete files, all or nothing. Use it for every edit, never run_command. Read the file first: old_text must match exactly once (or set all). Example: {\"request_id\":\"fix-1\",\"operations\":[{\"op\":\"replace\",\"path\":\"a.go\",\"old_text\":\"n := 1\",\"new_text\":\"n := 2\"}]}",
			Repo:        func(a ApplyPatchArgs) string { return a.RepoID },
			Prepare: func(_ context.Context, c *op.Call, a ApplyPatchArgs) (*op.Plan, error) {
				w, err := PlanApplyPatch(c, a)
				return plan(c, w, a.RequestID, a.ApprovalID, a.WaitMs, a.OnBusy, a.IncludeLatencyBreakdown, hashedPatch(a)), err
			}}),
		op.Def(op.Spec[GitStageArgs]{Name: "git_stage", Output: op.MutationResult{}, Idempotent: true,
			Route: route.IndexMutation, Toolset: op.Git, Roles: op.WriteRoles, Verified: true, Topics: []string{"commit", "style"}, ChangesCheckout: true, BatchStep: true, HashIgnore: []string{"wait_ms", "on_busy"},
			Description: "Stage exactly the named paths (git add) when you build a commit in steps; git_commit with paths needs no staging. Deletions are staged too. Example: {\"request_id\":\"s1\",\"paths\":[\"src/a.go\"]}",
			Repo:        func(a GitStageArgs) string { return a.RepoID },
			Prepare: func(ctx context.Context, c *op.Call, a GitStageArgs) (*op.Plan, error) {
				w, err := PlanGitStage(ctx, c, a)
				h := a
				h.WaitMs, h.IncludeLatencyBreakdown, h.ApprovalID, h.OnBusy = 0, false, "", ""
				return plan(c, w, a.RequestID, a.ApprovalID, a.WaitMs, a.OnBusy, a.IncludeLatencyBreakdown, h), err
			}}),
		op.Def(op.Spec[GitCommitArgs]{Name: "git_commit", Output: op.MutationResult{}, Idempotent: true,
			Route: route.Mutation, Toolset: op.Core, Roles: op.WriteRoles, Verified: true, Topics: []string{"commit", "style"}, ChangesCheckout: true, BatchStep: true, HashIgnore: []string{"wait_ms", "on_busy"},
			Description: "Commit your change once its check passed: the named paths as they are in the work tree (or, without paths, what is staged). Hooks do not run; harnessd appends Harnessd- trailers, so write none. Example: {\"request_id\":\"c1\",\"message\":\"parser: accept empty input\",\"paths\":[\"parse.go\"]}",
			Repo:        func(a GitCommitArgs) string { return a.RepoID },
			Prepare: func(ctx context.Context, c *op.Call, a GitCommitArgs) (*op.Plan, error) {
				w, err := PlanGitCommit(ctx, c, a)
				h := a
				h.WaitMs, h.IncludeLatencyBreakdown, h.ApprovalID, h.OnBusy = 0, false, "", ""
				return plan(c, w, a.RequestID, a.ApprovalID, a.WaitMs, a.OnBusy, a.IncludeLatencyBreakdown, h), err
			}}),
	}
}

// Write is one planned write: what it touches and how to run it under a
// lease. Batches compose several under one lease and ledger entry.
type Write struct {
	Op    string
	Paths []string // rel paths the write may touch
	Keys  []string // resource keys it needs
	// RequireVerified are stages of the caller's run the write asks to
	// have verified (git_commit's require_verified): the gate adds the
	// policy's, and the write path's verification gate (op.WriteHooks)
	// enforces them all before Run writes.
	RequireVerified []string
	Run             func(ctx context.Context, l runtime.Lease, r *op.Receipt) error
}

// plan wraps a planned write as the plan of a standalone operation: gated
// as a write of its paths, run by the mutation engine (queued as a job
// when its files are busy and onBusy is op.OnBusyDurable).
func plan(c *op.Call, w Write, requestID, approvalID string, waitMs int, onBusy string, breakdown bool, hashed any) *op.Plan {
	if w.Run == nil {
		return nil
	}
	return &op.Plan{
		Gate:      govern.Input{Paths: w.Paths, Writes: true, Args: hashed, ApprovalID: approvalID, RequireVerified: w.RequireVerified},
		Breakdown: breakdown,
		Write:     WithWait(op.MutationTxn(op.Txn{Op: w.Op, RequestID: requestID, Hashed: hashed, Paths: w.Paths, Keys: w.Keys, Run: w.Run, OnBusy: onBusy}), waitMs),
	}
}

// WithWait sets a txn's wait for busy keys from wait_ms.
func WithWait(t op.Txn, waitMs int) *op.Txn {
	t.Wait = time.Duration(waitMs) * time.Millisecond
	return &t
}

// ApplyPatchArgs are the arguments of apply_patch.
type ApplyPatchArgs struct {
	RepoID                  string     `json:"repo_id" jsonschema:"from repository_list"`
	RequestID               string     `json:"request_id,omitempty" required:"true" jsonschema:"unique per write; a retry with it replays"`
	Operations              []patch.Op `json:"operations" jsonschema:"applied in order"`
	AllowedPaths            []string   `json:"allowed_paths,omitempty" jsonschema:"globs every path must match, e.g. src/**"`
	WaitMs                  int        `json:"wait_ms,omitempty" jsonschema:"wait for a busy file instead of MUTATION_BUSY (max 30000)"`
	OnBusy                  string     `json:"on_busy,omitempty" enum:"fail,durable" jsonschema:"durable: still busy after wait_ms, queue the write as a job (job_status) instead of MUTATION_BUSY"`
	ApprovalID              string     `json:"approval_id,omitempty" jsonschema:"from APPROVAL_REQUIRED, once a person approved it"`
	IncludeLatencyBreakdown bool       `json:"include_latency_breakdown,omitempty"`
}

func hashedPatch(a ApplyPatchArgs) ApplyPatchArgs {
	a.WaitMs, a.IncludeLatencyBreakdown, a.ApprovalID, a.OnBusy = 0, false, "", ""
	return a
}

// PlanApplyPatch validates a patch and resolves its paths: bad paths fail
// before the ledger sees the request.
func PlanApplyPatch(c *op.Call, args ApplyPatchArgs) (Write, error) {
	if len(args.Operations) == 0 {
		return Write{}, errs.New(errs.InvalidArgument, "operations is empty: nothing to apply")
	}
	if len(args.Operations) > patch.DefaultMaxOps {
		return Write{}, errs.New(errs.InvalidArgument, "%d operations: at most %d in one patch", len(args.Operations), patch.DefaultMaxOps)
	}
	root := c.Root
	var rels []string
	seen := map[string]bool{}
	for _, o := range args.Operations {
		_, rel, err := root.ResolveWrite(o.Path)
		if err != nil {
			return Write{}, err
		}
		if !seen[rel] {
			seen[rel] = true
			rels = append(rels, rel)
		}
	}
	keys := make([]string, len(rels))
	for i, rel := range rels {
		keys[i] = string(lease.PathKey(c.Repo.Repo.CheckoutID, rel))
	}
	ops, allowed := args.Operations, args.AllowedPaths
	return Write{Op: "apply_patch", Paths: rels, Keys: keys, Run: func(ctx context.Context, l runtime.Lease, r *op.Receipt) error {
		res, err := patch.Apply(ctx, root, ops, patch.Options{AllowedPaths: allowed, Fence: l.Fence, PreImage: c.KeepPreImages(r)})
		if err != nil {
			return err
		}
		r.Changes = append(r.Changes, res.Changes...)
		return nil
	}}, nil
}

// GitStageArgs are the arguments of git_stage.
type GitStageArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"from repository_list"`
	RequestID               string   `json:"request_id,omitempty" required:"true" jsonschema:"unique per write; a retry with it replays"`
	Paths                   []string `json:"paths" jsonschema:"up to 200"`
	WaitMs                  int      `json:"wait_ms,omitempty" jsonschema:"wait for a busy file instead of MUTATION_BUSY (max 30000)"`
	OnBusy                  string   `json:"on_busy,omitempty" enum:"fail,durable" jsonschema:"durable: still busy after wait_ms, queue the write as a job (job_status) instead of MUTATION_BUSY"`
	ApprovalID              string   `json:"approval_id,omitempty" jsonschema:"from APPROVAL_REQUIRED, once a person approved it"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
}

// PlanGitStage resolves the paths to stage. harnessd expands pathspecs
// itself: a directory ("." included) or a glob stands for the changed
// files below or matching it (modified, deleted, untracked and not
// ignored), secret paths left out and reported; git gets only file names,
// after "--", so no pathspec magic of its own applies.
func PlanGitStage(ctx context.Context, c *op.Call, args GitStageArgs) (Write, error) {
	root, git := c.Root, c.Env.Git
	if len(args.Paths) == 0 {
		return Write{}, errs.New(errs.InvalidArgument, "paths is empty (use [\".\"] to stage every change but secret files)")
	}
	rels, skipped, err := expandPaths(ctx, c, args.Paths, true)
	if err != nil {
		return Write{}, err
	}
	if len(rels) == 0 {
		return Write{}, errs.New(errs.InvalidArgument, "nothing to stage: no changed file matches %q (secret paths are never staged: %d skipped)", args.Paths, len(skipped)).
			With("skipped_secret_paths", skipped)
	}
	return Write{Op: "git_stage", Paths: rels, Keys: []string{string(lease.GitIndexKey(c.Repo.Repo.CheckoutID))},
		Run: func(ctx context.Context, l runtime.Lease, r *op.Receipt) error {
			if err := l.Fence(); err != nil {
				return err
			}
			gitArgs := append([]string{"add", "--all", "--"}, literal(rels)...)
			if _, _, err := git.Run(ctx, root.Path(), 0, gitArgs...); err != nil {
				return err
			}
			for _, p := range rels {
				r.Changes = append(r.Changes, patch.Change{Path: p, Op: "stage"})
			}
			r.SkippedSecretPaths = skipped
			return nil
		}}, nil
}

// expandPaths resolves the paths of git_stage and git_commit. A plain path
// is checked like any write (a secret path is refused); a directory ("."
// included) or a glob stands for the changed files below or matching it
// (modified, deleted, renamed from, and untracked when untracked), with
// the secret paths left out and returned as skipped.
func expandPaths(ctx context.Context, c *op.Call, paths []string, untracked bool) (rels, skipped []string, err error) {
	root, git := c.Root, c.Env.Git
	if len(paths) > maxMutationPaths {
		return nil, nil, errs.New(errs.InvalidArgument, "%d paths: at most %d", len(paths), maxMutationPaths)
	}
	var changed []string // lazily: the changed files of the work tree
	loadChanged := func() error {
		if changed != nil {
			return nil
		}
		st, err := git.Status(ctx, root.Path())
		if err != nil {
			return err
		}
		if st.Truncated {
			return errs.New(errs.InvalidArgument, "the work tree has too many changes to expand a directory or glob; name the files")
		}
		changed = []string{}
		for _, es := range [][]gitx.Entry{st.Staged, st.Unstaged, st.Conflicted} {
			for _, e := range es {
				changed = append(changed, e.Path)
				if e.OrigPath != "" {
					changed = append(changed, e.OrigPath)
				}
			}
		}
		if untracked {
			changed = append(changed, st.Untracked...)
		}
		return nil
	}
	seen := map[string]bool{}
	skip := map[string]bool{}
	add := func(rel string) {
		if !seen[rel] {
			seen[rel] = true
			rels = append(rels, rel)
		}
	}
	for _, p := range paths {
		pattern, isPattern, err := stagePattern(root, p)
		if err != nil {
			return nil, nil, err
		}
		if !isPattern {
			_, rel, err := root.ResolveWrite(p)
			if err != nil {
				return nil, nil, err
			}
			// Staging copies the content into the object store, where
			// git_diff and git show read it: not through a hard link.
			if err := root.CheckLeafAt(rel); err != nil {
				return nil, nil, err
			}
			add(rel)
			continue
		}
		if err := loadChanged(); err != nil {
			return nil, nil, err
		}
		for _, f := range changed {
			if ok, _ := doublestar.Match(pattern, f); !ok {
				continue
			}
			if _, _, err := root.ResolveWrite(f); err != nil || root.CheckLeafAt(f) != nil {
				// A secret path, a hard link (or one harnessd may not
				// write): never staged.
				if !skip[f] {
					skip[f] = true
					skipped = append(skipped, f)
				}
				continue
			}
			add(f)
		}
	}
	if len(rels) > maxMutationPaths {
		return nil, nil, errs.New(errs.InvalidArgument, "the paths name %d changed files: at most %d at once; name them in smaller groups", len(rels), maxMutationPaths)
	}
	return rels, skipped, nil
}

// stagePattern turns a git_stage path into a doublestar pattern over the
// work tree's changed files when it is a directory or a glob ("." is every
// change); a plain file path is not a pattern.
func stagePattern(root *pathsafe.Root, p string) (string, bool, error) {
	clean := strings.TrimSuffix(strings.TrimPrefix(path.Clean(filepath.ToSlash(p)), "./"), "/")
	if clean == "." || clean == "" {
		return "**", true, nil
	}
	if strings.HasPrefix(clean, ":") {
		return "", false, errs.New(errs.InvalidArgument, "path %q: pathspec magic is not accepted; name files, directories or globs", p).With("path", p)
	}
	if abs, _, err := root.Resolve(p); err == nil {
		if fi, err := os.Lstat(abs); err == nil && !fi.IsDir() {
			return "", false, nil // a file, even if its name looks like a glob
		}
	}
	if strings.ContainsAny(clean, "*?[{") {
		if !doublestar.ValidatePattern(clean) {
			return "", false, errs.New(errs.InvalidArgument, "path %q is not a valid glob", p).With("path", p)
		}
		if strings.HasPrefix(clean, "../") || strings.HasPrefix(clean, "/") {
			return "", false, errs.New(errs.PathOutsideRoot, "path %q escapes the repository root", p).With("path", p)
		}
		return clean, true, nil
	}
	abs, rel, err := root.Resolve(p)
	if err != nil {
		// A deleted file resolves for writing; a bad path fails there.
		return "", false, nil
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return rel + "/**", true, nil
	}
	return "", false, nil
}

// literal marks paths so git takes them as they are (a file named "*.go"
// is that file, not a glob).
func literal(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = ":(literal)" + p
	}
	return out
}

// GitCommitArgs are the arguments of git_commit.
type GitCommitArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"from repository_list"`
	RequestID               string   `json:"request_id,omitempty" required:"true" jsonschema:"unique per write; a retry with it replays"`
	Message                 string   `json:"message" jsonschema:"up to 4000 characters"`
	Paths                   []string `json:"paths,omitempty" jsonschema:"commit these paths as they are (default: what is staged)"`
	AllowEmpty              bool     `json:"allow_empty,omitempty" jsonschema:"commit even with no changes"`
	RequireVerified         string   `json:"require_verified,omitempty" jsonschema:"a stage of the run that must be verified (run_claim, run_verify), else VERIFICATION_REQUIRED"`
	WaitMs                  int      `json:"wait_ms,omitempty" jsonschema:"wait for a busy file instead of MUTATION_BUSY (max 30000)"`
	OnBusy                  string   `json:"on_busy,omitempty" enum:"fail,durable" jsonschema:"durable: still busy after wait_ms, queue the write as a job (job_status) instead of MUTATION_BUSY"`
	ApprovalID              string   `json:"approval_id,omitempty" jsonschema:"from APPROVAL_REQUIRED, once a person approved it"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
}

// PlanGitCommit checks the message and paths and plans the commit.
func PlanGitCommit(ctx context.Context, c *op.Call, args GitCommitArgs) (Write, error) {
	switch {
	case strings.TrimSpace(args.Message) == "":
		return Write{}, errs.New(errs.InvalidArgument, "message is required")
	case len([]rune(args.Message)) > maxCommitMessage:
		return Write{}, errs.New(errs.InvalidArgument, "message has %d characters: at most %d", len([]rune(args.Message)), maxCommitMessage)
	case strings.ContainsRune(args.Message, 0):
		return Write{}, errs.New(errs.InvalidArgument, "message contains a NUL byte")
	}
	if line, ok := trailer.Reserved(args.Message); ok {
		return Write{}, errs.New(errs.InvalidArgument, "message line %q looks like a harnessd provenance trailer: harnessd writes the Harnessd- trailers itself; remove the line", line).
			With("line", line)
	}
	var require []string
	if args.RequireVerified != "" {
		if err := runs.ValidText("require_verified", args.RequireVerified, runs.MaxStage); err != nil {
			return Write{}, errs.New(errs.InvalidArgument, "git_commit: %v", err)
		}
		if c.Caller.RunID == "" {
			return Write{}, errs.New(errs.InvalidArgument, "require_verified %q needs the commit's run: pass run_id (from run_start) or call from an MCP session (its run), claim the stage (run_claim) and verify it (run_verify)", args.RequireVerified).
				With("stage", args.RequireVerified)
		}
		require = []string{args.RequireVerified}
	}
	root, git := c.Root, c.Env.Git
	var rels, skipped []string
	var err error
	if len(args.Paths) > 0 {
		if rels, skipped, err = expandPaths(ctx, c, args.Paths, false); err != nil {
			return Write{}, err
		}
		if len(rels) == 0 {
			return Write{}, errs.New(errs.InvalidArgument, "no changed tracked file matches %q (secret paths are never committed: %d skipped)", args.Paths, len(skipped)).
				With("skipped_secret_paths", skipped)
		}
	}
	st, err := git.Status(ctx, root.Path())
	if err != nil {
		return Write{}, err
	}
	co := c.Repo.Repo.CheckoutID
	keys := []string{string(lease.GitIndexKey(co)), string(lease.GitHeadKey(co))}
	if st.Branch != "" {
		keys = append(keys, string(lease.GitRefKey(co, "refs/heads/"+st.Branch)))
	}
	return Write{Op: "git_commit", Paths: rels, Keys: keys, RequireVerified: require, Run: func(ctx context.Context, l runtime.Lease, r *op.Receipt) error {
		dir := root.Path()
		before, err := git.Head(ctx, dir)
		if err != nil {
			return err
		}
		if !args.AllowEmpty {
			if err := checkSomethingToCommit(ctx, c, dir, rels); err != nil {
				return err
			}
		}
		if err := l.Fence(); err != nil {
			return err
		}
		// Provenance trailers, appended to the message (not --trailer:
		// that runs interpret-trailers, whose trailer.*.command settings a
		// repository could use to run a program).
		var approvals []string
		if args.ApprovalID != "" {
			approvals = []string{args.ApprovalID}
		}
		trailers, err := c.Trailers(r, approvals)
		if err != nil {
			return err
		}
		msg := trailer.Append(args.Message, trailers)
		gitArgs := []string{"commit", "--no-verify", "--quiet", "--no-edit", "--cleanup=strip", "-m", msg}
		if args.AllowEmpty {
			gitArgs = append(gitArgs, "--allow-empty")
		}
		if len(rels) > 0 {
			gitArgs = append(append(gitArgs, "--only", "--"), literal(rels)...)
		}
		r.SkippedSecretPaths = skipped
		_, _, cerr := git.Run(ctx, dir, 0, gitArgs...)
		// From here the commit may exist: what follows records it and is
		// not stopped by a context that ended meanwhile (a lost lease),
		// or the commit would stand in git with no receipt and a retry
		// would find nothing to commit.
		dctx := context.WithoutCancel(ctx)
		if cerr != nil && !committedAnyway(dctx, git, dir, before, r.ReceiptID) {
			return cerr
		}
		after, err := git.Head(dctx, dir)
		if err != nil {
			return err
		}
		// Every path with the sha256 of its blob before and after (Tree:
		// what commit_verify compares with the commit's tree); Changes
		// names the paths, as a commit wrote no file contents.
		c.Committed(dctx, r, after)
		hooks := false
		if r.HeadBefore == "" {
			r.HeadBefore = before
		}
		r.HeadAfter, r.Commit, r.HooksRan = after, after, &hooks
		return nil
	}}, nil
}

// committedAnyway reports whether a git commit that answered an error
// (killed as its context ended, say) made its commit all the same: HEAD
// moved from before to a commit whose Harnessd-Receipt trailer is the
// write's own receipt id.
func committedAnyway(ctx context.Context, git *gitx.Git, dir, before, receiptID string) bool {
	head, err := git.Head(ctx, dir)
	if err != nil || head == before || receiptID == "" {
		return false
	}
	msg, _, err := git.Run(ctx, dir, 0, "log", "-1", "--format=%B", head)
	if err != nil {
		return false
	}
	return trailer.Harnessd(trailer.Parse(string(msg)))[trailer.Receipt] == receiptID
}

// checkSomethingToCommit refuses a commit that would record nothing.
func checkSomethingToCommit(ctx context.Context, c *op.Call, dir string, rels []string) error {
	var args []string
	if len(rels) > 0 {
		args = append([]string{"status", "--porcelain", "-z", "--untracked-files=no", "--"}, rels...)
	} else {
		args = []string{"diff", "--cached", "--name-only", "-z"}
	}
	out, _, err := c.Env.Git.Run(ctx, dir, 0, args...)
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
