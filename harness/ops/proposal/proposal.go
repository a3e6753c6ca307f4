// Package proposal holds patch_proposal_validate (check proposals against
// each other and the checkout without writing, and keep the valid ones) and
// patch_proposal_integrate (apply chosen proposals together, all or nothing).
package proposal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/persistence"
)

// Ops returns the proposal operations.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[ValidateArgs]{Name: "patch_proposal_validate", Output: ValidateResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Git, Roles: op.CheckRoles, Topics: []string{"style", "test"}, ChangesCheckout: true,
			Description: "Dry-run several independent edits (proposals, e.g. from parallel agents) without writing: conflicts between them and with the checkout, lockfile and migration warnings. " +
				"Valid ones are kept 30 minutes for patch_proposal_integrate. One edit of your own: apply_patch. " +
				"Example: {\"proposals\":[{\"id\":\"a\",\"operations\":[{\"op\":\"delete\",\"path\":\"old.go\"}]}]}",
			Repo: func(a ValidateArgs) string { return a.RepoID }, Prepare: validate}),
		op.Def(op.Spec[IntegrateArgs]{Name: "patch_proposal_integrate", Output: IntegrateResult{}, Destructive: true, Idempotent: true,
			Route: route.Mutation, Toolset: op.Git, Roles: op.WriteRoles, Verified: true, Topics: []string{"style", "test", "commit"}, ChangesCheckout: true, HashIgnore: []string{"wait_ms"},
			Description: "Apply proposals patch_proposal_validate accepted, together, all or nothing. " +
				"PATCH_CONFLICT when HEAD or a touched file changed since, or the chosen proposals conflict: validate again. One edit of your own: apply_patch. " +
				"Example: {\"request_id\":\"p1\",\"proposal_ids\":[\"prop_1\"]}",
			Repo: func(a IntegrateArgs) string { return a.RepoID }, Prepare: integrate}),
	}
}

// Proposal limits.
const (
	maxProposals = 16
	proposalTTL  = 30 * time.Minute
)

// Proposal is one agent's patch proposal.
type Proposal struct {
	ID           string     `json:"id" jsonschema:"your name for it, unique in this call"`
	Operations   []patch.Op `json:"operations" jsonschema:"as for apply_patch"`
	AllowedPaths []string   `json:"allowed_paths,omitempty" jsonschema:"globs every path must match"`
}

// ValidateArgs are the arguments of patch_proposal_validate.
type ValidateArgs struct {
	RepoID                  string     `json:"repo_id" jsonschema:"from repository_list"`
	Proposals               []Proposal `json:"proposals" jsonschema:"1 to 16"`
	IncludeLatencyBreakdown bool       `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// ProposalConflict is a clash between two proposals over one path.
type ProposalConflict struct {
	With string `json:"with" jsonschema:"id of the other proposal"`
	Path string `json:"path"`
	// Kind is write_write (both rewrite the file, or both edit it in place)
	// or write_read (one rewrites, creates or deletes the file and the other
	// edits it with replace, i.e. reads the old content).
	Kind string `json:"kind"`
}

// ProposalWarning flags a touched file that deserves a person's look.
type ProposalWarning struct {
	Path    string `json:"path"`
	Kind    string `json:"kind" jsonschema:"lockfile or schema"`
	Message string `json:"message"`
}

// ProposalVerdict is the validation of one proposal.
type ProposalVerdict struct {
	ID         string             `json:"id"`
	ProposalID string             `json:"proposal_id,omitempty"`
	Valid      bool               `json:"valid"`
	Error      *errs.Error        `json:"error,omitempty"`
	Conflicts  []ProposalConflict `json:"conflicts"`
	Warnings   []ProposalWarning  `json:"warnings"`
	WritePaths []string           `json:"write_paths"`
	ExpiresAt  *time.Time         `json:"expires_at,omitempty"`
}

// ValidateResult is the result of patch_proposal_validate.
type ValidateResult struct {
	Head      string            `json:"head"`
	Proposals []ProposalVerdict `json:"proposals"`
	op.Meta
}

// storedProposal is what validation keeps under proposal/<id>.
type storedProposal struct {
	ProposalID   string            `json:"proposal_id"`
	ID           string            `json:"id"`
	RepoID       string            `json:"repo_id"`
	CheckoutID   string            `json:"checkout_id"`
	Operations   []patch.Op        `json:"operations"`
	AllowedPaths []string          `json:"allowed_paths,omitempty"`
	WritePaths   []string          `json:"write_paths"`
	ReadPaths    []string          `json:"read_paths"`
	Head         string            `json:"head"`
	Files        map[string]string `json:"files"` // rel -> sha256 at validation ("" = absent)
	OpsDigest    string            `json:"ops_digest"`
	Created      time.Time         `json:"created"`
	Expires      time.Time         `json:"expires"`
}

// isLockfile reports dependency lockfiles: edits deserve a regenerate, not
// a patch.
func isLockfile(base string) bool {
	switch base {
	case "go.sum", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "poetry.lock", "Gemfile.lock", "composer.lock":
		return true
	}
	return false
}

// proposalWarnings flags lockfiles and schema or migration files.
func proposalWarnings(rel string) []ProposalWarning {
	base := path.Base(rel)
	var w []ProposalWarning
	if isLockfile(base) {
		w = append(w, ProposalWarning{Path: rel, Kind: "lockfile", Message: base + " is a generated lockfile: regenerate it with its tool rather than patching it"})
	}
	migration, _ := doublestar.Match("**/migrations/**", rel)
	schema, _ := doublestar.Match("schema.*", base)
	if migration || schema || strings.HasSuffix(base, ".sql") || strings.HasSuffix(base, ".prisma") {
		w = append(w, ProposalWarning{Path: rel, Kind: "schema", Message: "schema or migration file: changes may need a migration plan and review"})
	}
	return w
}

// proposalShape is what conflict detection needs of a proposal.
type proposalShape struct {
	id     string
	writes map[string]bool // every touched path
	reads  map[string]bool // paths edited with replace (their old content matters)
}

// proposalConflicts returns, for each proposal, its conflicts with the others.
func proposalConflicts(ps []proposalShape) [][]ProposalConflict {
	out := make([][]ProposalConflict, len(ps))
	for i := range ps {
		out[i] = []ProposalConflict{}
	}
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			for _, p := range sortedSet(ps[i].writes) {
				if !ps[j].writes[p] {
					continue
				}
				kind := "write_write"
				if ps[i].reads[p] != ps[j].reads[p] {
					kind = "write_read"
				}
				out[i] = append(out[i], ProposalConflict{With: ps[j].id, Path: p, Kind: kind})
				out[j] = append(out[j], ProposalConflict{With: ps[i].id, Path: p, Kind: kind})
			}
		}
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// validate checks proposals without writing and stores the valid ones.
// Each proposal that resolves is a step of the one gate crossing: a refused
// proposal is invalid, the others go on.
func validate(ctx context.Context, c *op.Call, args ValidateArgs) (*op.Plan, error) {
	switch {
	case len(args.Proposals) == 0:
		return nil, errs.New(errs.InvalidArgument, "proposals is empty")
	case len(args.Proposals) > maxProposals:
		return nil, errs.New(errs.InvalidArgument, "%d proposals: at most %d", len(args.Proposals), maxProposals)
	}
	seen := map[string]bool{}
	for i, p := range args.Proposals {
		switch {
		case strings.TrimSpace(p.ID) == "":
			return nil, errs.New(errs.InvalidArgument, "proposals[%d].id is required", i)
		case seen[p.ID]:
			return nil, errs.New(errs.InvalidArgument, "proposal id %q appears twice", p.ID)
		}
		seen[p.ID] = true
	}
	root := c.Root
	shapes := make([]proposalShape, len(args.Proposals))
	resolved := make([]resolvedProposal, len(args.Proposals))
	gate := govern.Input{Args: args}
	for i, p := range args.Proposals {
		shapes[i] = proposalShape{id: p.ID, writes: map[string]bool{}, reads: map[string]bool{}}
		resolved[i] = resolveProposal(root, p, &shapes[i])
		if resolved[i].err == nil {
			resolved[i].step = len(gate.Steps)
			gate.Steps = append(gate.Steps, govern.Input{Tool: "patch_proposal_validate", Root: root, Paths: sortedSet(shapes[i].writes), Args: p})
		}
	}
	if c.HasRepo() {
		repo := c.Repo.Repo
		for i := range gate.Steps {
			gate.Steps[i].Repo = &repo
		}
	}
	return &op.Plan{Gate: gate, Breakdown: args.IncludeLatencyBreakdown, Run: func(ctx context.Context) (any, error) {
		head, err := c.Env.Head(ctx, c.Repo)
		if err != nil {
			return nil, err
		}
		env := c.Env
		now := env.Now()
		pruneProposals(env.Store, now)
		gated := c.Gated().Steps
		out := &ValidateResult{Head: head, Proposals: make([]ProposalVerdict, len(args.Proposals))}
		stored := make([]*storedProposal, len(args.Proposals))
		for i, p := range args.Proposals {
			v := ProposalVerdict{ID: p.ID, Conflicts: []ProposalConflict{}, Warnings: []ProposalWarning{}, WritePaths: []string{}}
			for _, w := range sortedSet(shapes[i].writes) {
				v.WritePaths = append(v.WritePaths, w)
				v.Warnings = append(v.Warnings, proposalWarnings(w)...)
			}
			err := resolved[i].err
			if err == nil && resolved[i].step < len(gated) {
				err = gated[resolved[i].step].Err
			}
			var sp *storedProposal
			if err == nil {
				sp, err = checkProposal(ctx, c, head, p, resolved[i].files, shapes[i])
			}
			if err != nil {
				v.Error = errs.From(err)
			} else {
				v.Valid = true
				stored[i] = sp
			}
			out.Proposals[i] = v
		}
		for i, cs := range proposalConflicts(shapes) {
			out.Proposals[i].Conflicts = cs
		}
		for i, sp := range stored {
			if sp == nil {
				continue
			}
			sp.Created, sp.Expires = now.UTC(), now.Add(proposalTTL).UTC()
			if err := env.Store.Put(persistence.ProposalKey(sp.ProposalID), sp); err != nil {
				out.Proposals[i].Valid = false
				out.Proposals[i].Error = errs.New(errs.Internal, "store proposal: %v", err)
				continue
			}
			exp := sp.Expires
			out.Proposals[i].ProposalID, out.Proposals[i].ExpiresAt = sp.ProposalID, &exp
		}
		return out, nil
	}}, nil
}

// resolvedProposal is a proposal's paths as resolved at prepare time.
type resolvedProposal struct {
	files map[string]string // rel -> sha256 at validation ("" = absent)
	err   error
	step  int // its step in the gate input
}

// resolveProposal resolves a proposal's paths, filling shape, and records
// the current digest of each.
func resolveProposal(root *pathsafe.Root, p Proposal, shape *proposalShape) resolvedProposal {
	if len(p.Operations) == 0 {
		return resolvedProposal{err: errs.New(errs.InvalidArgument, "operations is empty")}
	}
	if len(p.Operations) > patch.DefaultMaxOps {
		return resolvedProposal{err: errs.New(errs.InvalidArgument, "%d operations: at most %d in one proposal", len(p.Operations), patch.DefaultMaxOps)}
	}
	files := map[string]string{}
	var resolveErr error
	for _, o := range p.Operations {
		abs, rel, err := root.ResolveWrite(o.Path)
		if err != nil {
			if resolveErr == nil {
				resolveErr = err
			}
			continue
		}
		shape.writes[rel] = true
		if o.Op == patch.OpReplace {
			shape.reads[rel] = true
		}
		if _, ok := files[rel]; !ok {
			// Not through a hard link: the dry run would read, and the
			// digest answer for, another name's content.
			d, err := patch.DigestChecked(abs, func(fi fs.FileInfo) error { return root.CheckLeaf(rel, fi) })
			if err != nil && resolveErr == nil {
				resolveErr = err
			}
			files[rel] = d
		}
	}
	return resolvedProposal{files: files, err: resolveErr}
}

// checkProposal dry-runs one gated proposal and returns the record to store.
func checkProposal(ctx context.Context, c *op.Call, head string, p Proposal, files map[string]string, shape proposalShape) (*storedProposal, error) {
	root, e := c.Root, c.Repo
	writes := sortedSet(shape.writes)
	if err := dryRun(ctx, root, p.Operations, p.AllowedPaths); err != nil {
		return nil, err
	}
	opsJSON, _ := json.Marshal(struct {
		Ops     []patch.Op `json:"ops"`
		Allowed []string   `json:"allowed"`
	}{p.Operations, p.AllowedPaths})
	opsSum := sha256.Sum256(opsJSON)
	idSum := sha256.New()
	for _, s := range []string{e.Repo.ID, p.ID, hex.EncodeToString(opsSum[:]), head} {
		idSum.Write([]byte(s))
		idSum.Write([]byte{0})
	}
	for _, rel := range writes {
		idSum.Write([]byte(rel + "\x00" + files[rel] + "\x00"))
	}
	return &storedProposal{
		ProposalID: "prop_" + hex.EncodeToString(idSum.Sum(nil)[:12]), ID: p.ID, RepoID: e.Repo.ID, CheckoutID: e.Repo.CheckoutID,
		Operations: p.Operations, AllowedPaths: p.AllowedPaths, WritePaths: writes, ReadPaths: sortedSet(shape.reads),
		Head: head, Files: files, OpsDigest: hex.EncodeToString(opsSum[:]),
	}, nil
}

// dryRun applies ops to a private copy of the files they touch, in a temp
// dir, with the real patch engine: same checks and conflicts as apply_patch,
// and the checkout is never written.
func dryRun(ctx context.Context, root *pathsafe.Root, ops []patch.Op, allowed []string) error {
	dir, err := os.MkdirTemp("", "harnessd-proposal-")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "dry run: %v", err)
	}
	defer os.RemoveAll(dir)
	sb := &sandbox{root: root, dir: dir, mirrored: map[string]bool{}}
	_, err = patch.Apply(ctx, sb, ops, patch.Options{AllowedPaths: allowed, NoSync: true})
	if err != nil {
		if sb.err != nil {
			return sb.err
		}
		return err
	}
	return nil
}

// sandbox resolves paths like the checkout's root but into a temp dir that
// mirrors each touched file (and its nearest existing ancestors).
type sandbox struct {
	root     *pathsafe.Root
	dir      string
	mirrored map[string]bool
	err      error // an I/O error while mirroring
}

// ResolveWrite implements patch.Resolver.
func (s *sandbox) ResolveWrite(p string) (string, string, error) {
	abs, rel, err := s.root.ResolveWrite(p)
	if err != nil {
		return "", "", err
	}
	dst := filepath.Join(s.dir, filepath.FromSlash(rel))
	if !s.mirrored[rel] {
		s.mirrored[rel] = true
		if err := s.mirror(abs, rel); err != nil {
			if errs.CodeOf(err) == errs.PathNotAllowed {
				return "", "", err // a hard link: refused, not an I/O error
			}
			s.err = errs.Wrap(errs.Internal, err, "dry run: copy %q: %v", rel, err)
			return "", "", s.err
		}
	}
	return dst, rel, nil
}

// mirror copies the file at abs (rel) into the sandbox; when it does not
// exist, the nearest existing ancestor is mirrored instead (a directory, or
// a file that makes the path impossible, as on disk).
func (s *sandbox) mirror(abs, rel string) error {
	for {
		fi, err := os.Lstat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if rel == "." || rel == "" || !strings.Contains(rel, "/") {
				return nil
			}
			abs, rel = filepath.Dir(abs), path.Dir(rel)
			continue
		case err != nil:
			return err
		}
		dst := filepath.Join(s.dir, filepath.FromSlash(rel))
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t, err := os.Readlink(abs)
			if err != nil {
				return err
			}
			return os.Symlink(t, dst)
		}
		if !fi.Mode().IsRegular() {
			return errs.New(errs.InvalidArgument, "path %q is not a regular file", rel)
		}
		if fi.Size() > patch.MaxFileBytes {
			return errs.New(errs.InvalidArgument, "file %q is larger than %d bytes", rel, patch.MaxFileBytes)
		}
		// A hard link's content is another name's: never copied (a dry
		// run's PATCH_CONFLICT would tell what it holds).
		if err := s.root.CheckLeaf(rel, fi); err != nil {
			return err
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode().Perm())
	}
}

// pruneProposals drops expired proposals.
func pruneProposals(store *persistence.Store, now time.Time) {
	var old [][]byte
	_ = store.Scan([]byte(persistence.PrefixProposal), func(k []byte, decode func(any) error) error {
		var sp storedProposal
		if decode(&sp) != nil || !now.Before(sp.Expires) {
			old = append(old, append([]byte(nil), k...))
		}
		return nil
	})
	for _, k := range old {
		_ = store.Delete(k)
	}
}

// IntegrateArgs are the arguments of patch_proposal_integrate.
type IntegrateArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"from repository_list"`
	ProposalIDs             []string `json:"proposal_ids" jsonschema:"from patch_proposal_validate"`
	RequestID               string   `json:"request_id,omitempty" required:"true" jsonschema:"unique per write; a retry with it replays"`
	WaitMs                  int      `json:"wait_ms,omitempty"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// IntegrateResult is the result of patch_proposal_integrate.
type IntegrateResult struct {
	op.MutationResult
	ProposalIDs []string `json:"proposal_ids"`
}

// integrate applies validated proposals together.
func integrate(_ context.Context, c *op.Call, args IntegrateArgs) (*op.Plan, error) {
	if len(args.ProposalIDs) == 0 {
		return nil, errs.New(errs.InvalidArgument, "proposal_ids is empty")
	}
	if len(args.ProposalIDs) > maxProposals {
		return nil, errs.New(errs.InvalidArgument, "%d proposals: at most %d", len(args.ProposalIDs), maxProposals)
	}
	root, e, env := c.Root, c.Repo, c.Env
	now := env.Now()
	props := make([]storedProposal, len(args.ProposalIDs))
	shapes := make([]proposalShape, len(args.ProposalIDs))
	seen := map[string]bool{}
	var ops []patch.Op
	var paths, keys []string
	for i, id := range args.ProposalIDs {
		if seen[id] {
			return nil, errs.New(errs.InvalidArgument, "proposal %q appears twice", id)
		}
		seen[id] = true
		sp := &props[i]
		err := env.Store.Get(persistence.ProposalKey(id), sp)
		if errors.Is(err, persistence.ErrNotFound) || (err == nil && !now.Before(sp.Expires)) {
			return nil, errs.New(errs.NotFound, "proposal %q is unknown or expired (proposals are kept %s); validate it again", id, proposalTTL).With("proposal_id", id)
		}
		if err != nil {
			return nil, errs.Wrap(errs.Internal, err, "load proposal %q: %v", id, err)
		}
		if sp.RepoID != e.Repo.ID {
			return nil, errs.New(errs.InvalidArgument, "proposal %q belongs to repository %s", id, sp.RepoID).With("proposal_id", id)
		}
		shapes[i] = proposalShape{id: id, writes: map[string]bool{}, reads: map[string]bool{}}
		for _, w := range sp.WritePaths {
			shapes[i].writes[w] = true
		}
		for _, r := range sp.ReadPaths {
			shapes[i].reads[r] = true
		}
		// Write paths must still resolve to what was validated.
		for _, o := range sp.Operations {
			_, rel, err := root.ResolveWrite(o.Path)
			if err != nil {
				return nil, err
			}
			if !shapes[i].writes[rel] {
				return nil, errs.New(errs.PatchConflict, "proposal %q: %q now resolves to %q, which was not validated", id, o.Path, rel).With("proposal_id", id).With("path", rel)
			}
		}
		if len(ops)+len(sp.Operations) > patch.DefaultMaxOps {
			return nil, errs.New(errs.InvalidArgument, "the chosen proposals have more than %d operations together", patch.DefaultMaxOps)
		}
		ops = append(ops, sp.Operations...)
		for _, w := range sp.WritePaths {
			paths = append(paths, w)
			keys = append(keys, string(lease.PathKey(e.Repo.CheckoutID, w)))
		}
	}
	for i, cs := range proposalConflicts(shapes) {
		if len(cs) > 0 {
			x := cs[0]
			return nil, errs.New(errs.PatchConflict, "proposals %q and %q both write %q (%s)", args.ProposalIDs[i], x.With, x.Path, x.Kind).
				With("path", x.Path).With("proposals", []string{args.ProposalIDs[i], x.With}).With("kind", x.Kind)
		}
	}
	hashed := args
	hashed.WaitMs, hashed.IncludeLatencyBreakdown = 0, false
	txn := op.MutationTxn(op.Txn{Op: "patch_proposal_integrate", RequestID: args.RequestID, Hashed: hashed, Paths: paths, Keys: keys,
		Wait: time.Duration(args.WaitMs) * time.Millisecond,
		Run: func(ctx context.Context, l runtime.Lease, r *op.Receipt) error {
			// Under the lease, past the verification gate (op.Call.Apply):
			// nothing can change the files until we write.
			head, err := c.Env.Head(ctx, c.Repo)
			if err != nil {
				return err
			}
			for _, sp := range props {
				if head != sp.Head {
					return errs.New(errs.PatchConflict, "HEAD moved from %s to %s since proposal %q was validated; validate it again", short(sp.Head), short(head), sp.ProposalID).
						With("proposal_id", sp.ProposalID).With("head_before", sp.Head).With("head", head)
				}
				for rel, want := range sp.Files {
					abs, _, err := root.ResolveWrite(rel)
					if err != nil {
						return err
					}
					got, err := patch.DigestChecked(abs, func(fi fs.FileInfo) error { return root.CheckLeaf(rel, fi) })
					if err != nil {
						return err
					}
					if got != want {
						return errs.New(errs.PatchConflict, "%q changed since proposal %q was validated; validate it again", rel, sp.ProposalID).
							With("path", rel).With("proposal_id", sp.ProposalID).With("sha256_validated", want).With("sha256_now", got)
					}
				}
			}
			r.HeadBefore, r.HeadAfter = head, head
			res, err := patch.Apply(ctx, root, ops, patch.Options{Fence: l.Fence, PreImage: c.KeepPreImages(r)})
			if err != nil {
				return err
			}
			r.Changes = append(r.Changes, res.Changes...)
			return nil
		}})
	txn.Result = func(r *op.Receipt) (any, *op.Receipt, bool) {
		out := &IntegrateResult{MutationResult: op.MutationResult{Receipt: *r}, ProposalIDs: args.ProposalIDs}
		return out, &out.Receipt, true
	}
	txn.Replay = func(stored json.RawMessage) (any, error) {
		var out IntegrateResult
		if err := json.Unmarshal(stored, &out); err != nil {
			return nil, err
		}
		out.Replayed = true
		return &out, nil
	}
	return &op.Plan{Gate: govern.Input{Paths: paths, Writes: true, Args: args}, Breakdown: args.IncludeLatencyBreakdown, Write: &txn}, nil
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	if oid == "" {
		return "(no commit)"
	}
	return oid
}
