// Package target holds the operations on repository-free targets: an
// authorized local directory (its canonical root) that needs no git. Reads
// are root-bounded and symlink-safe (the repository's pathsafe, readfile
// and search engines); every physical mutation takes the root's mutation
// slot from the root's target actor (actors.Target), so two grants on one
// directory serialize while different roots run side by side, and leaves
// one lightweight ledger record and a local_effect receipt. Work that
// needs git, recovery or a durable job answers with a suggestion to
// promote the target into a registered repository (target_promote).
package target

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/authority"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
	itarget "github.com/harnessd/harnessd/internal/target"
	"github.com/harnessd/harnessd/messages"
)

// Ops returns the target operations.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[RegisterArgs]{Name: "target_register", Output: RegisterResult{}, Idempotent: true,
			Route: route.Registry, Toolset: op.Targets, Roles: op.OperatorRoles,
			Description: "Grant the target_* tools a local directory that is not a git repository (notes, scratch, output), read-only or, with access write, read-write. " +
				"A git work tree: repository_register. " +
				"Example: {\"path\":\"/home/me/notes\",\"access\":\"write\"}",
			Prepare: register}),
		op.Def(op.Spec[ListArgs]{Name: "target_list", Output: ListResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Targets, Roles: op.ReadRoles,
			Description: "List the directories granted with target_register (target_id, root, access) when you lost a target_id or want to see what you may touch. " +
				"Git repositories: repository_list. " +
				"Example: {}",
			Prepare: list}),
		op.Def(op.Spec[UnregisterArgs]{Name: "target_unregister", Output: UnregisterResult{}, Idempotent: true,
			Route: route.Registry, Toolset: op.Targets, Roles: op.OperatorRoles,
			Description: "Withdraw a target grant when the target_* tools should no longer reach the directory; its files stay. " +
				"To work in it with git and jobs: target_promote. " +
				"Example: {\"target_id\":\"tgt_1\"}",
			Prepare: unregister}),
		op.Def(op.Spec[ReadFileArgs]{Name: "target_read_file", Output: ReadFileResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Targets, Roles: op.ReadRoles,
			Description: "Read a file of a target, or a window of its lines, with its sha256. " +
				"Where text occurs: target_search; a repository's file: read_file. " +
				"Example: {\"target_id\":\"tgt_1\",\"path\":\"todo.md\",\"offset_line\":200}",
			Prepare: readFile}),
		op.Def(op.Spec[ListDirArgs]{Name: "target_list_dir", Output: ListDirResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Targets, Roles: op.ReadRoles,
			Description: "List a directory of a target to see what it holds before reading or writing; secret files and .git are left out. " +
				"Files by their text: target_search; a repository's files: search. " +
				"Example: {\"target_id\":\"tgt_1\",\"path\":\"docs\"}",
			Prepare: listDir}),
		op.Def(op.Spec[SearchArgs]{Name: "target_search", Output: SearchResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Targets, Roles: op.ReadRoles,
			Description: "Find text in a target's files: where a name occurs, which files mention it; literal unless regex. " +
				"A file you already know: target_read_file; a repository: search. " +
				"Example: {\"target_id\":\"tgt_1\",\"query\":\"TODO\",\"glob\":\"**/*.md\"}",
			Prepare: searchTarget}),
		op.Def(op.Spec[WriteFileArgs]{Name: "target_write_file", Output: MutationResult{}, Destructive: true,
			Route: route.Mutation, Toolset: op.Targets, Roles: op.WriteRoles, HashIgnore: []string{"wait_ms"},
			Description: "Create or replace a whole file, atomically, in a write target. " +
				"A small change to an existing file: target_apply_patch; files of a repository: apply_patch. " +
				"Example: {\"target_id\":\"tgt_1\",\"path\":\"plan.md\",\"content\":\"# Plan\\n\"}",
			Prepare: writeFile}),
		op.Def(op.Spec[ApplyPatchArgs]{Name: "target_apply_patch", Output: MutationResult{}, Destructive: true,
			Route: route.Mutation, Toolset: op.Targets, Roles: op.WriteRoles, HashIgnore: []string{"wait_ms"},
			Description: "Edit files of a write target: replace exact text, create, write or delete files, all or nothing; old_text must match once (or set all). " +
				"Files of a repository: apply_patch. " +
				"Example: {\"target_id\":\"tgt_1\",\"operations\":[{\"op\":\"replace\",\"path\":\"a.md\",\"old_text\":\"v1\",\"new_text\":\"v2\"}]}",
			Prepare: applyPatch}),
		op.Def(op.Spec[CopyArgs]{Name: "target_copy", Output: MutationResult{}, Destructive: true,
			Route: route.Mutation, Toolset: op.Targets, Roles: op.WriteRoles, HashIgnore: []string{"wait_ms"},
			Description: "Copy a file inside a write target, or into another write target (to_target_id), atomically; an existing file is replaced only with overwrite. " +
				"To move or rename: target_move. " +
				"Example: {\"target_id\":\"tgt_1\",\"from\":\"a.txt\",\"to\":\"backup/a.txt\"}",
			Prepare: func(ctx context.Context, c *op.Call, a CopyArgs) (*op.Plan, error) { return copyMove(ctx, c, a, false) }}),
		op.Def(op.Spec[CopyArgs]{Name: "target_move", Output: MutationResult{}, Destructive: true,
			Route: route.Mutation, Toolset: op.Targets, Roles: op.WriteRoles, HashIgnore: []string{"wait_ms"},
			Description: "Move or rename a file inside a write target, or into another write target (to_target_id): copied, then the source deleted. " +
				"To keep the source: target_copy. " +
				"Example: {\"target_id\":\"tgt_1\",\"from\":\"draft.md\",\"to\":\"done/draft.md\"}",
			Prepare: func(ctx context.Context, c *op.Call, a CopyArgs) (*op.Plan, error) { return copyMove(ctx, c, a, true) }}),
		op.Def(op.Spec[ExecuteArgs]{Name: "target_execute_command", Output: ExecuteResult{}, Destructive: true,
			Route: route.Command, Toolset: op.Targets, Roles: op.WriteRoles, HashIgnore: []string{"wait_ms"},
			Description: executeDescription,
			Prepare:     execute}),
		op.Def(op.Spec[PromoteArgs]{Name: "target_promote", Output: PromoteResult{},
			Route: route.Registry, Toolset: op.Targets, Roles: op.OperatorRoles,
			Description: "Turn a target into a registered repository, answering its repo_id, when its work needs git, builds, tests or jobs. " +
				"Not a git work tree: git init needs a person's approval (APPROVAL_REQUIRED: retry with approval_id). " +
				"Example: {\"target_id\":\"tgt_1\"}",
			Prepare: promote}),
	}
}

// Access values of a grant.
const (
	AccessRead  = "read"
	AccessWrite = "write"
)

// Effect is the effect every target receipt records.
const Effect = "local_effect"

// promoteHint is the suggestion of every refusal that a repository would
// allow.
const promoteHint = "promote the target into a registered repository (target_promote) and use the repository's operations (job_start, git_commit, ...)"

// Target is a grant as the operations report it.
type Target = messages.TargetGrant

// resolved is a target resolved for one call: its grant, its root actor
// and its path checker.
type resolved struct {
	Entry runtime.TargetEntry
	Root  *pathsafe.Root
}

func (r resolved) id() string   { return r.Entry.Grant.TargetID }
func (r resolved) path() string { return r.Entry.Grant.Root }

// resolveTarget resolves a target_id: the grant, a check that the
// directory at its root is still the one granted (TARGET_MOVED), the
// access the call needs, and the cached path checker of the root.
func resolveTarget(c *op.Call, targetID string, write bool) (resolved, error) {
	if targetID == "" {
		return resolved{}, errs.New(errs.InvalidArgument, "target_id is required (from target_register or target_list)")
	}
	e, ok := c.Env.RT.Targets.Lookup(targetID)
	if !ok {
		return resolved{}, errs.New(errs.NotFound, "target %q is not registered (see target_list; register it with target_register)", targetID).With("target_id", targetID)
	}
	g := e.Grant
	if why, ok := c.Env.Suspended(g.TargetID); ok {
		return resolved{}, op.SuspendedTarget(g.TargetID, g.Root, why)
	}
	if err := itarget.CheckIdentity(g.TargetID, g.Root, g.Identity.Dev, g.Identity.Ino); err != nil {
		c.Env.Forget(g.TargetID)
		return resolved{}, err
	}
	if write && g.Access != AccessWrite {
		return resolved{}, errs.New(errs.PolicyDenied, "target %s was granted read access only; register the directory with access \"write\" for a write target", g.TargetID).
			With("target_id", g.TargetID)
	}
	root, err := c.Env.Root(repoEntry(g))
	if err != nil {
		return resolved{}, err
	}
	return resolved{Entry: e, Root: root}, nil
}

// repoEntry describes a target as a repository entry for the Env's
// caches (path checker, sandbox policy): its id is the target_id.
func repoEntry(g messages.TargetGrant) runtime.RepoEntry {
	return runtime.RepoEntry{Repo: messages.Repository{ID: g.TargetID, CheckoutID: g.WorkspaceID, Root: g.Root}}
}

// fast is the routing decision of a target operation: the Fast Path (the
// router knows only the repository's operations).
func fast(tool string, risk int, mutation bool, why string) *route.Decision {
	tier := route.Direct
	if mutation {
		tier = route.BoundedWork
	}
	return &route.Decision{Mode: route.Fast, Reasons: []string{tool + " " + why}, Risk: risk, EstimatedClass: route.Short, Tier: tier, Mutation: mutation}
}

// gate is the gate input of an operation on r.
func gate(r resolved, tool string, paths []string, writes bool, risk int) govern.Input {
	why := "is a read-only Fast Path operation on a repository-free target"
	if writes {
		why = "is a Fast Path mutation of a repository-free target, serialized by its root"
	}
	return govern.Input{Root: r.Root, Paths: paths, Writes: writes, Route: fast(tool, risk, writes, why)}
}

// RegisterArgs are the arguments of target_register.
type RegisterArgs struct {
	Path   string `json:"path" jsonschema:"the directory, absolute"`
	Access string `json:"access,omitempty" jsonschema:"read (default) or write"`
	Owner  string `json:"owner,omitempty" jsonschema:"who it is for (free text, ≤ 200 characters)"`
	op.Approval
}

// RegisterResult is the result of target_register.
type RegisterResult struct {
	TargetID            string `json:"target_id"`
	WorkspaceID         string `json:"workspace_id"`
	CanonicalRoot       string `json:"canonical_root"`
	Access              string `json:"access"`
	IdentityFingerprint string `json:"identity_fingerprint"`
	Owner               string `json:"owner,omitempty"`
	Created             bool   `json:"created"`
	op.Meta
}

func register(ctx context.Context, c *op.Call, args RegisterArgs) (*op.Plan, error) {
	if args.Path == "" {
		return nil, errs.New(errs.InvalidArgument, "path is required: the absolute path of a directory")
	}
	if !filepath.IsAbs(args.Path) {
		return nil, errs.New(errs.InvalidArgument, "path %q is not absolute; pass an absolute path (harness target add makes it absolute)", args.Path).With("path", args.Path)
	}
	access := args.Access
	if access == "" {
		access = AccessRead
	}
	if access != AccessRead && access != AccessWrite {
		return nil, errs.New(errs.InvalidArgument, "access %q: use \"read\" or \"write\"", args.Access)
	}
	if len(args.Owner) > 200 || strings.ContainsAny(args.Owner, "\x00\n") {
		return nil, errs.New(errs.InvalidArgument, "owner must be one line of at most 200 characters")
	}
	root, err := filepath.EvalSymlinks(filepath.Clean(args.Path))
	if err != nil {
		if os.IsNotExist(err) {
			if _, gerr := c.Env.GrantFor(ctx, "target", authority.Canonical(filepath.Clean(args.Path))); gerr != nil {
				return nil, gerr // never grantable, whether or not it exists
			}
			return nil, errs.New(errs.NotFound, "path %q does not exist", args.Path).With("path", args.Path)
		}
		return nil, errs.New(errs.InvalidArgument, "path %q: %v", args.Path, err).With("path", args.Path)
	}
	// Never grantable, whoever asks; else inside an allowed area, by a
	// person, or with a person's approval of exactly this request.
	g, err := c.Env.GrantFor(ctx, "target", root)
	if err != nil {
		return nil, err
	}
	dev, ino, err := itarget.Identity(root)
	if err != nil {
		return nil, errs.New(errs.InvalidArgument, "path %q is not a directory", args.Path).With("path", args.Path)
	}
	for _, h := range c.Env.Hidden {
		if h == root || strings.HasPrefix(h, root+"/") || strings.HasPrefix(root, h+"/") {
			return nil, errs.New(errs.PathNotAllowed, "harnessd's own data (%s) is inside or around %s: grant a directory that does not hold it", h, root).With("path", args.Path)
		}
	}
	ident := messages.RootIdentity{Dev: dev, Ino: ino}
	in := op.GateArgs(args)
	in.Route = fast("target_register", 10, false, "records a grant; it touches no file")
	if g.Ask != "" {
		// Already granted (by a person, an approval or a valid area):
		// registering it again is idempotent, nothing to ask.
		e, ok := c.Env.RT.Targets.Lookup(actors.TargetID(root, access, args.Owner, ident))
		if !ok || c.Env.Suspension(e.Grant.Root, e.Grant.Grant) != "" {
			in.Grant = g.Ask
		}
	}
	return &op.Plan{Gate: in, Run: func(ctx context.Context) (any, error) {
		m := messages.TargetRegister{Root: root, Access: access, Owner: args.Owner, Identity: ident, Now: c.Env.Now()}
		if g.By != "" || in.Grant != "" {
			m.Grant = g.Record(args.ApprovalID, c.Env.Now())
		}
		r, err := c.Env.RT.Targets.Register(ctx, m)
		if err != nil {
			return nil, err
		}
		c.Env.Suspend(r.Grant.TargetID, c.Env.Suspension(r.Grant.Root, r.Grant.Grant))
		c.Env.Forget(r.Grant.TargetID)
		if access == AccessWrite {
			// Temp files a crash left under an earlier process: never a
			// write in flight (those are younger than this process).
			if n, err := itarget.SweepTemp(root); n > 0 || err != nil {
				c.Env.Logger.Info("target: swept temp files a crash left", zap.String("target_id", r.Grant.TargetID), zap.Int("removed", n), zap.Error(err))
			}
		}
		return registerResult(r.Grant, r.Created), nil
	}}, nil
}

func registerResult(g messages.TargetGrant, created bool) *RegisterResult {
	return &RegisterResult{TargetID: g.TargetID, WorkspaceID: g.WorkspaceID, CanonicalRoot: g.Root, Access: g.Access,
		IdentityFingerprint: g.Fingerprint, Owner: g.Owner, Created: created}
}

// ListArgs are the arguments of target_list.
type ListArgs struct {
	op.Approval
}

// ListResult is the result of target_list.
type ListResult struct {
	Targets []Target `json:"targets"`
	op.Meta
}

func list(_ context.Context, c *op.Call, args ListArgs) (*op.Plan, error) {
	in := op.GateArgs(args)
	in.Route = fast("target_list", 5, false, "lists grants")
	return &op.Plan{Gate: in, Run: func(ctx context.Context) (any, error) {
		gs, err := c.Env.RT.Targets.List(ctx)
		if err != nil {
			return nil, err
		}
		if gs == nil {
			gs = []Target{}
		}
		return &ListResult{Targets: gs}, nil
	}}, nil
}

// UnregisterArgs are the arguments of target_unregister.
type UnregisterArgs struct {
	TargetID string `json:"target_id" jsonschema:"from target_list"`
	op.Approval
}

// UnregisterResult is the result of target_unregister.
type UnregisterResult struct {
	Target
	op.Meta
}

func unregister(_ context.Context, c *op.Call, args UnregisterArgs) (*op.Plan, error) {
	if args.TargetID == "" {
		return nil, errs.New(errs.InvalidArgument, "target_id is required")
	}
	in := op.GateArgs(args)
	in.Route = fast("target_unregister", 10, false, "forgets a grant; it touches no file")
	return &op.Plan{Gate: in, Run: func(ctx context.Context) (any, error) {
		r, err := c.Env.RT.Targets.Unregister(ctx, args.TargetID)
		if err != nil {
			return nil, err
		}
		c.Env.Forget(args.TargetID)
		return &UnregisterResult{Target: r.Grant}, nil
	}}, nil
}
