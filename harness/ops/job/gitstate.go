package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/messages"
)

// Git-state jobs: git reset --hard, git branch -D, git tag -f and the
// path forms of git checkout and git restore (they take the index's lock)
// change .git, which a job's processes never may write (hooks, config, filters:
// docs/authority.md). An approved job of one of them runs no process:
// harnessd performs it with its own confined git (op.Env.GitWrite), the
// refs moved by compare-and-swap (git update-ref), and its receipt holds
// the refs (old, new), the work tree's pre-images (a reset's) and the git
// directory's files it replaced, so revert restores all three.

// Kinds of git-state work.
const (
	gsReset        = "reset --hard"
	gsBranchDelete = "branch -D"
	gsTagForce     = "tag -f"
	gsCheckout     = "checkout -- <paths>"
)

// gitStateForms names what harnessd performs itself, for error messages.
const gitStateForms = "git reset --hard [<rev>], git branch -D <branch>..., git tag -f <tag> [<rev>], git checkout [-f] -- <path>..., git restore [-W] <path>..."

// PerformedByHarnessd is job_status's performed_by of a git-state job.
const PerformedByHarnessd = "harnessd: its own confined git (a job's processes never write .git)"

// gitState is one git-state command.
type gitState struct {
	Kind  string
	Rev   string   // reset's and tag's revision ("" = HEAD)
	Names []string // branch -D's branches, tag -f's tag
	Paths []string // checkout's and restore's paths, relative to the job's cwd
}

// refsOnly reports whether the command leaves the work tree alone.
func (g gitState) refsOnly() bool { return g.Kind == gsBranchDelete || g.Kind == gsTagForce }

// gitGlobalWithValue reports whether a is one of git's options before the
// subcommand that take the next argument as their value.
func gitGlobalWithValue(a string) bool {
	switch a {
	case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path", "--super-prefix", "--list-cmds":
		return true
	}
	return false
}

// parseGitState reports whether argv is a git-state command harnessd
// performs itself (ok), and refuses (INVALID_ARGUMENT, naming the forms)
// one whose options or operands it does not support: pathspecs,
// --recurse-submodules, git's global options, a revision or name that is
// not plainly one.
func parseGitState(argv []string) (gitState, bool, error) {
	if len(argv) < 2 || filepath.Base(argv[0]) != "git" {
		return gitState{}, false, nil
	}
	i := 1
	for i < len(argv) && strings.HasPrefix(argv[i], "-") {
		if gitGlobalWithValue(argv[i]) {
			i++
		}
		i++
	}
	if i >= len(argv) {
		return gitState{}, false, nil
	}
	sub, rest := argv[i], argv[i+1:]
	kind := ""
	switch {
	case sub == "reset" && hasFlag(rest, "--hard", 0):
		kind = gsReset
	case sub == "branch" && (hasFlag(rest, "-D", 'D') || (hasFlag(rest, "-d", 'd') || hasFlag(rest, "--delete", 0)) && (hasFlag(rest, "-f", 'f') || hasFlag(rest, "--force", 0))):
		kind = gsBranchDelete
	case sub == "tag" && (hasFlag(rest, "-f", 'f') || hasFlag(rest, "--force", 0)):
		kind = gsTagForce
	case sub == "checkout" && slices.Contains(rest, "--"), sub == "restore":
		// Only the path forms: git checkout <branch> stays a process.
		return parsePathsForm(argv, i, sub, rest)
	default:
		return gitState{}, false, nil
	}
	g := gitState{Kind: kind}
	refuse := func(format string, a ...any) (gitState, bool, error) {
		return g, true, errs.New(errs.InvalidArgument, "git %s: %s. harnessd performs %s itself (a job's processes never write .git); nothing ran",
			kind, fmt.Sprintf(format, a...), gitStateForms).With("argv", argv)
	}
	if i != 1 {
		return refuse("git's options before the subcommand (%s) are not supported: give the command without them", strings.Join(argv[1:i], " "))
	}
	var operands []string
	for _, a := range rest {
		switch {
		case a == "--":
			return refuse("pathspecs are not supported (%q)", strings.Join(rest, " "))
		case strings.HasPrefix(a, "-") && !allowedFlag(kind, a):
			return refuse("option %q is not supported", a)
		case strings.HasPrefix(a, "-"):
		default:
			operands = append(operands, a)
		}
	}
	switch kind {
	case gsReset:
		if len(operands) > 1 {
			return refuse("one revision at most; pathspecs are not supported (%q)", strings.Join(operands[1:], " "))
		}
		if len(operands) == 1 {
			g.Rev = operands[0]
		}
	case gsBranchDelete:
		if len(operands) == 0 {
			return refuse("name the branch to delete")
		}
		g.Names = operands
	case gsTagForce:
		if len(operands) == 0 || len(operands) > 2 {
			return refuse("give the tag and at most one revision")
		}
		g.Names = operands[:1]
		if len(operands) == 2 {
			g.Rev = operands[1]
		}
	}
	if g.Rev != "" && !validRev(g.Rev) {
		return refuse("%q is not a plain revision (letters, digits and . _ / - ~ ^ @ { } only, no range)", g.Rev)
	}
	for _, n := range g.Names {
		if !validRefName(n) {
			return refuse("%q is not a valid branch or tag name", n)
		}
	}
	return g, true, nil
}

// parsePathsForm parses git checkout [-f] [-q] -- <path>... and git
// restore [-W] [-q] <path>...: the work tree's files set back from the
// index. A source, --staged, patches and pathspec magic are refused.
func parsePathsForm(argv []string, i int, sub string, rest []string) (gitState, bool, error) {
	g := gitState{Kind: gsCheckout}
	refuse := func(format string, a ...any) (gitState, bool, error) {
		return g, true, errs.New(errs.InvalidArgument, "git %s: %s. harnessd performs %s itself (a job's processes never write .git); nothing ran",
			sub, fmt.Sprintf(format, a...), gitStateForms).With("argv", argv)
	}
	if i != 1 {
		return refuse("git's options before the subcommand (%s) are not supported: give the command without them", strings.Join(argv[1:i], " "))
	}
	dashes := false
	for _, a := range rest {
		switch {
		case a == "--" && !dashes:
			dashes = true
		case !dashes && strings.HasPrefix(a, "-"):
			if !pathsFormFlag(sub, a) {
				return refuse("option %q is not supported", a)
			}
		case sub == "checkout" && !dashes:
			return refuse("%q before --: only paths after -- are supported (a branch switch is not performed here)", a)
		default:
			if !validPathspec(a) {
				return refuse("%q is not a plain relative path (no .., no leading /, no pathspec magic or wildcards)", a)
			}
			g.Paths = append(g.Paths, a)
		}
	}
	if len(g.Paths) == 0 {
		return refuse("name the paths to set back")
	}
	return g, true, nil
}

// pathsFormFlag reports whether a is an option of checkout's or restore's
// path form harnessd performs.
func pathsFormFlag(sub, a string) bool {
	switch a {
	case "-q", "--quiet":
		return true
	case "-f", "--force":
		return sub == "checkout"
	case "-W", "--worktree":
		return sub == "restore"
	}
	return false
}

// validPathspec reports whether p is a plain path relative to the job's
// directory: "." or names without .., a leading / or ~, pathspec magic
// (:) or wildcards.
func validPathspec(p string) bool {
	if p == "" || len(p) > 4096 || p[0] == '/' || p[0] == '~' || p[0] == ':' || p[0] == '-' || strings.ContainsAny(p, "*?[\\\x00") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return false
		}
	}
	return true
}

// hasFlag reports whether args hold flag, or short in a cluster of short
// options (-fd).
func hasFlag(args []string, flag string, short byte) bool {
	for _, a := range args {
		if a == flag {
			return true
		}
		if short != 0 && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], short) >= 0 {
			return true
		}
	}
	return false
}

// allowedFlag reports whether a is an option of kind harnessd performs.
func allowedFlag(kind, a string) bool {
	switch kind {
	case gsReset:
		return a == "--hard" || a == "-q" || a == "--quiet"
	case gsBranchDelete:
		if a == "--delete" || a == "--force" || a == "--quiet" {
			return true
		}
		return len(a) > 1 && a[1] != '-' && strings.Trim(a[1:], "dDfq") == ""
	case gsTagForce:
		return a == "-f" || a == "--force"
	}
	return false
}

// validRev reports whether rev is a plain revision: a name, an object id,
// with ~N, ^N, @{...} suffixes; never an option, a range or a path.
func validRev(rev string) bool {
	if rev == "" || len(rev) > 256 || rev[0] == '-' || strings.Contains(rev, "..") {
		return false
	}
	for _, c := range rev {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._/-~^@{}", c)) {
			return false
		}
	}
	return true
}

// validRefName reports whether n is a branch or tag name git accepts
// (git check-ref-format's rules, within a plain character set).
func validRefName(n string) bool {
	if n == "" || len(n) > 200 || n[0] == '-' || n == "HEAD" || strings.Contains(n, "..") || strings.Contains(n, "//") ||
		strings.Contains(n, "@{") || strings.HasSuffix(n, "/") || strings.HasSuffix(n, ".") || strings.HasSuffix(n, ".lock") {
		return false
	}
	for _, part := range strings.Split(n, "/") {
		if part == "" || part[0] == '.' {
			return false
		}
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._/-", c)) {
			return false
		}
	}
	return true
}

// GitState returns the performer of git-state jobs (a dependency of the
// jobs actor, actors.JobNative).
func GitState(env *op.Env) actors.JobNative { return gitStateRunner{env: env} }

type gitStateRunner struct{ env *op.Env }

// Performs reports whether j is a git-state command (a malformed one too:
// it fails with its error, never as a process).
func (g gitStateRunner) Performs(j messages.Job) bool {
	_, ok, _ := parseGitState(j.Argv)
	return ok && j.Write == nil
}

// gitStatePlan is what a git-state job is about to do, saved durably
// beside its logs before it changes anything: the refs (old, new) and the
// git directory's files as they were. Its receipt is made from it.
type gitStatePlan struct {
	Refs     []op.RefChange `json:"refs"`
	GitFiles []preimage.Ref `json:"git_files,omitempty"`
	Head     bool           `json:"head,omitempty"` // Refs[0] is what HEAD names
}

func planFile(j messages.Job) string {
	return filepath.Join(j.LogDir, "gitstate-"+strconv.Itoa(j.Attempt)+".json")
}

// Perform does a git-state job's work in its checkout, under its lease.
func (g gitStateRunner) Perform(ctx context.Context, j messages.Job, out io.Writer) error {
	gs, _, err := parseGitState(j.Argv)
	if err != nil {
		return err
	}
	if j.Worktree != "" || j.Isolation == messages.JobIsolationWorktree {
		return errs.New(errs.InvalidArgument, "git %s changes the checkout's own refs: run it without isolation", gs.Kind)
	}
	env, root := g.env, j.Root
	p, err := g.plan(ctx, root, gs)
	if err != nil {
		return err
	}
	if err := savePlan(planFile(j), p); err != nil {
		return err
	}
	msg := "harnessd: git " + gs.Kind + " (job " + j.ID + ")"
	if err := env.UpdateRefs(ctx, root, msg, p.Refs); err != nil {
		return err
	}
	switch gs.Kind {
	case gsReset:
		// HEAD names the new commit: reset's own hard reset brings the
		// index and the work tree to it and ends a merge in progress.
		if _, err := env.GitWrite(ctx, root, "", "", "reset", "--hard", "-q"); err != nil {
			back := op.RefChange{Ref: p.Refs[0].Ref, Old: p.Refs[0].New, New: p.Refs[0].Old}
			if berr := env.UpdateRefs(context.Background(), root, msg+": undone", []op.RefChange{back}); berr != nil {
				return errs.Wrap(errs.CodeOf(err), err, "%s; and %s could not be set back: %s", errs.From(err).Message, back.Ref, errs.From(berr).Message)
			}
			return err
		}
		if _, err := env.GitWrite(ctx, root, "", "", "update-ref", "-m", msg, "ORIG_HEAD", p.Refs[0].Old); err != nil {
			_, _ = fmt.Fprintf(out, "ORIG_HEAD not set: %s\n", errs.From(err).Message)
		}
		_, _ = fmt.Fprintf(out, "HEAD (%s) is now at %s, was %s; the index and work tree are reset to it\n", p.Refs[0].Ref, p.Refs[0].New, p.Refs[0].Old)
	case gsBranchDelete:
		for _, r := range p.Refs {
			_, _ = fmt.Fprintf(out, "Deleted branch %s (was %s).\n", strings.TrimPrefix(r.Ref, "refs/heads/"), r.Old)
		}
	case gsCheckout:
		args := []string{"checkout", "-q", "--"}
		for _, p := range gs.Paths {
			args = append(args, path.Join(".", j.Cwd, p)) // relative to the root: "." is the cwd
		}
		if _, err := env.GitWrite(ctx, root, "", "", args...); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(out, "Set %s back from the index\n", strings.Join(gs.Paths, ", "))
	case gsTagForce:
		r := p.Refs[0]
		if r.Old == "" {
			_, _ = fmt.Fprintf(out, "Created tag '%s' at %s\n", gs.Names[0], r.New)
		} else {
			_, _ = fmt.Fprintf(out, "Updated tag '%s' (was %s)\n", gs.Names[0], r.Old)
		}
	}
	return nil
}

// plan resolves what gs changes in the checkout at root, refusing what git
// would refuse (a branch checked out, a revision that is no commit) and,
// for a reset, keeping the git directory's files it replaces.
func (g gitStateRunner) plan(ctx context.Context, root string, gs gitState) (gitStatePlan, error) {
	env := g.env
	var p gitStatePlan
	switch gs.Kind {
	case gsReset:
		head, err := env.RefValue(ctx, root, "HEAD")
		if err != nil {
			return p, err
		}
		if head == "" {
			return p, errs.New(errs.InvalidArgument, "HEAD names no commit yet: there is nothing to reset to")
		}
		rev := gs.Rev
		if rev == "" {
			rev = "HEAD"
		}
		to, err := g.resolve(ctx, root, rev+"^{commit}")
		if err != nil {
			return p, err
		}
		ref := "HEAD"
		if out, _, err := env.Git.Run(ctx, root, 0, "symbolic-ref", "-q", "HEAD"); err == nil {
			ref = strings.TrimSpace(string(out)) // the branch HEAD names; else HEAD is detached
		}
		if err := g.ignoredInTheWay(ctx, root, to); err != nil {
			return p, err
		}
		gitDir, err := env.GitDir(ctx, root)
		if err != nil {
			return p, err
		}
		files, err := env.KeepGitFiles(gitDir, op.GitStateFiles())
		if err != nil {
			return p, err
		}
		p.Refs, p.GitFiles, p.Head = []op.RefChange{{Ref: ref, Old: head, New: to}}, files, true
	case gsBranchDelete:
		out, _, err := env.Git.Run(ctx, root, 0, "worktree", "list", "--porcelain")
		if err != nil {
			return p, err
		}
		for _, n := range gs.Names {
			ref := "refs/heads/" + n
			old, err := env.RefValue(ctx, root, ref)
			if err != nil {
				return p, err
			}
			if old == "" {
				return p, errs.New(errs.NotFound, "branch %q not found", n).With("branch", n)
			}
			if where := checkedOut(string(out), ref); where != "" {
				return p, errs.New(errs.InvalidArgument, "branch %q is checked out at %s: switch that work tree to another branch first", n, where).With("branch", n)
			}
			p.Refs = append(p.Refs, op.RefChange{Ref: ref, Old: old})
		}
	case gsCheckout:
		// No ref moves; git rewrites the index (its stat data) as it sets
		// the files back: the index is kept for the revert.
		gitDir, err := env.GitDir(ctx, root)
		if err != nil {
			return p, err
		}
		files, err := env.KeepGitFiles(gitDir, op.GitStateFiles())
		if err != nil {
			return p, err
		}
		p.GitFiles = files
	case gsTagForce:
		ref := "refs/tags/" + gs.Names[0]
		old, err := env.RefValue(ctx, root, ref)
		if err != nil {
			return p, err
		}
		rev := gs.Rev
		if rev == "" {
			rev = "HEAD"
		}
		to, err := g.resolve(ctx, root, rev+"^{object}")
		if err != nil {
			return p, err
		}
		p.Refs = []op.RefChange{{Ref: ref, Old: old, New: to}}
	}
	return p, nil
}

// resolve returns the object rev names, or INVALID_ARGUMENT.
func (g gitStateRunner) resolve(ctx context.Context, root, rev string) (string, error) {
	out, _, err := g.env.Git.Run(ctx, root, 0, "rev-parse", "-q", "--verify", rev)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", errs.New(errs.InvalidArgument, "%q names no object of this repository", strings.TrimSuffix(strings.TrimSuffix(rev, "^{commit}"), "^{object}")).With("rev", rev)
	}
	return strings.TrimSpace(string(out)), nil
}

// checkedOut returns the work tree of porcelain (git worktree list
// --porcelain) whose HEAD names ref, or "".
func checkedOut(porcelain, ref string) string {
	wt := ""
	for _, line := range strings.Split(porcelain, "\n") {
		if v, ok := strings.CutPrefix(line, "worktree "); ok {
			wt = v
		}
		if line == "branch "+ref {
			return wt
		}
	}
	return ""
}

// ignoredInTheWay refuses a reset that would overwrite an ignored file
// (one the commit to has at that path): the undo snapshot leaves ignored
// files out, so its revert could not bring it back.
func (g gitStateRunner) ignoredInTheWay(ctx context.Context, root, to string) error {
	ign, _, err := g.env.Git.Run(ctx, root, 0, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil || len(ign) == 0 {
		return err
	}
	tracked, _, err := g.env.Git.Run(ctx, root, 0, "ls-tree", "-r", "-z", "--name-only", to)
	if err != nil {
		return err
	}
	if p := inTheWay(strings.Split(string(ign), "\x00"), strings.Split(string(tracked), "\x00")); p != "" {
		return errs.New(errs.InvalidArgument, "%q is an ignored file where %s has a file: the reset would overwrite it and revert could not restore it; move it away first", p, to).With("path", p)
	}
	return nil
}

// inTheWay returns the first ignored path (dir/ for a directory) that
// holds or is a path of tracked, or "".
func inTheWay(ignored, tracked []string) string {
	set := map[string]bool{}
	for _, p := range ignored {
		if p != "" {
			set[p] = true
		}
	}
	for _, t := range tracked {
		if t == "" {
			continue
		}
		if set[t] {
			return t
		}
		for i := strings.IndexByte(t, '/'); i >= 0; i = nextSlash(t, i) {
			if set[t[:i+1]] {
				return t[:i+1]
			}
		}
	}
	return ""
}

func nextSlash(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func savePlan(file string, p gitStatePlan) error {
	return preimage.SaveJSON(file, p, "the job's git plan")
}

// addGitState adds to r what the git-state job j changed in .git: the
// refs of its plan that are at their new value now, and (when it changed
// anything) the git directory's files it kept. A job that never saved its
// plan changed nothing there.
func (u *undoer) addGitState(ctx context.Context, j messages.Job, r *op.Receipt) error {
	b, err := os.ReadFile(planFile(j))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errs.Wrap(errs.Internal, err, "read the job's git plan: %v", err)
	}
	var p gitStatePlan
	if err := json.Unmarshal(b, &p); err != nil {
		return errs.Wrap(errs.Internal, err, "decode the job's git plan: %v", err)
	}
	for _, c := range p.Refs {
		cur, err := u.env.RefValue(ctx, j.Root, c.Ref)
		if err != nil {
			return err
		}
		if cur == c.New && c.New != c.Old {
			r.Refs = append(r.Refs, c)
		}
	}
	if len(r.Refs) > 0 || len(r.Changes) > 0 {
		r.GitFiles = p.GitFiles
	}
	if p.Head && len(r.Refs) > 0 {
		r.HeadBefore, r.HeadAfter = p.Refs[0].Old, p.Refs[0].New
	}
	return nil
}
