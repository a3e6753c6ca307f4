// Package command holds run_command (a read-only command on the Fast
// Path) and route_explain (the routing decision of any operation).
package command

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/liveview"
	"github.com/harnessd/harnessd/internal/loop"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/wall"
)

// Ops returns run_command and route_explain.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[RunCommandArgs]{Name: "run_command", Output: RunCommandResult{}, Draw: runs.Draw{Commands: 1}, ReadOnly: true,
			Route: route.Command, Toolset: op.Core, Roles: op.WriteRoles, BatchStep: true, Lane: true,
			Description: runCommandDescription,
			Repo:        func(a RunCommandArgs) string { return a.RepoID }, Prepare: runCommand}),
		op.Def(op.Spec[RouteExplainArgs]{Name: "route_explain", Output: RouteExplainResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Admin, Roles: op.ReadRoles, NoRepo: true,
			Description: "Explain, without running anything, how harnessd would route a call (fast, durable or reject) and why: before a command you are unsure of, or after ROUTE_DURABLE_REQUIRED. Example: {\"tool\":\"run_command\",\"argv\":[\"make\",\"test\"]}",
			Prepare:     routeExplain}),
	}
}

// runCommandDescription is run_command's description in the tool list:
// when to use it rather than run_check or job_start, and the result field
// that needs saying.
const runCommandDescription = "Run a one-off read-only command (git log, ls, go list) and get its output within 15 s. " +
	"A test or build whose pass is evidence: run_check; longer or writing work: job_start. " +
	"tree_changed: files changed meanwhile (tree_changed_by says who). " +
	"Example: {\"argv\":[\"git\",\"log\",\"--oneline\",\"-5\"]}"

// RunCommandArgs are the arguments of run_command.
type RunCommandArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"from repository_list"`
	Argv                    []string `json:"argv" jsonschema:"program and arguments; no shell string"`
	Cwd                     string   `json:"cwd,omitempty" jsonschema:"relative to the repository root"`
	TimeoutMs               int      `json:"timeout_ms,omitempty" jsonschema:"default 10000, max 15000"`
	ApprovalID              string   `json:"approval_id,omitempty" jsonschema:"from APPROVAL_REQUIRED, once approved"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
}

// RunCommandResult is the result of run_command.
type RunCommandResult struct {
	proc.Result
	CommandClass string `json:"command_class"`
	Redactions   int    `json:"redactions,omitempty"`
	// TreeChanged is true when the work tree changed while the command
	// ran; TreeChangedBy says who (ChangedByCommand, ChangedByOthers or
	// ChangedByCommandAndOthers). Under the sandbox's read-only profile
	// the command cannot write: it is true there only when other writers
	// held the checkout while the command ran.
	TreeChanged   bool   `json:"tree_changed"`
	TreeChangedBy string `json:"tree_changed_by,omitempty"`
	// Source is "exec" (the command ran) or "cache": a pure git query
	// (Cacheable) whose identical run's output is replayed because the
	// live index proves nothing in the repository changed since; nothing
	// ran, the timings are that run's.
	Source string `json:"source"`
	// ConcurrentWrites are the other writers that held write leases on the
	// checkout while the command ran (reported with TreeChanged), and
	// ConcurrentReceipts the receipts of their writes already stored.
	ConcurrentWrites   []ConcurrentWrite `json:"concurrent_writes,omitempty"`
	ConcurrentReceipts []string          `json:"concurrent_receipts,omitempty"`
	Warnings           []string          `json:"warnings,omitempty"`
	// SandboxHints name the wall of the sandbox a failed command ran
	// into (the layer, the path or syscall, the fix).
	SandboxHints []wall.Diagnosis `json:"sandbox_hints,omitempty"`
	// RunID identifies this run (loop detection names earlier runs by it).
	RunID string `json:"run_id"`
	op.Meta
}

// Fast Path command limits.
const (
	// FastTimeoutDefault is a Fast Path command's timeout when it names none.
	FastTimeoutDefault = 10 * time.Second
	fastTimeoutMax     = 15 * time.Second
)

func runCommand(ctx context.Context, c *op.Call, args RunCommandArgs) (*op.Plan, error) {
	if len(args.Argv) == 0 || args.Argv[0] == "" {
		return nil, errs.New(errs.InvalidArgument, "argv is required: a program and its arguments")
	}
	if args.TimeoutMs < 0 {
		return nil, errs.New(errs.InvalidArgument, "timeout_ms must not be negative")
	}
	root := c.Root
	confinedJobs := c.Env.Confines(sandbox.Job)
	plan := &op.Plan{Breakdown: args.IncludeLatencyBreakdown,
		Gate: govern.Input{Argv: args.Argv, TimeoutMs: args.TimeoutMs, Args: args, ApprovalID: args.ApprovalID, Confined: confinedJobs}}
	d := route.Decide(route.Request{Tool: "run_command", Kind: c.Op.Route, Argv: args.Argv, TimeoutMs: args.TimeoutMs, Confined: confinedJobs})
	if d.Mode != route.Fast {
		// Not for the Fast Path: the gate says how (reject, escalate or
		// ask); should it allow, the route still refuses.
		plan.Run = func(context.Context) (any, error) { return nil, op.RouteError(d) }
		return plan, nil
	}
	c.Mark(op.SegRouting)
	if err := root.CheckArgv(args.Argv); err != nil {
		return nil, c.Refuse(plan.Gate, err)
	}
	dir, _, err := root.Dir(args.Cwd)
	if err != nil {
		return nil, err
	}
	c.Mark(op.SegPolicy)
	if c.Env.Confines(sandbox.Read) {
		// The kernel keeps the command from writing anything but its
		// private tmp: the work tree cannot change under it, so no
		// snapshot, and loop detection keys on a cheap revision (HEAD,
		// the index, harnessd's own writes). In a batch it is taken when
		// the step runs, with the loop check.
		if c.InBatch {
			plan.Run = func(ctx context.Context) (any, error) {
				rev := CheapRevision(root.Path(), c.Env.Generation(c.Repo.Repo.ID))
				in := plan.Gate
				in.Tool, in.TreeRevision, in.Caller = c.Op.Name, rev, c.Caller
				repo := c.Repo.Repo
				in.Repo = &repo
				if err := c.Env.Gov.CheckLoop(in); err != nil {
					return nil, err
				}
				return execute(ctx, c, args, d, dir, rev, treeWatch{})
			}
			return plan, nil
		}
		rev := CheapRevision(root.Path(), c.Env.Generation(c.Repo.Repo.ID))
		plan.Gate.TreeRevision = rev
		plan.Run = func(ctx context.Context) (any, error) { return execute(ctx, c, args, d, dir, rev, treeWatch{}) }
		return plan, nil
	}
	if c.InBatch {
		// A step is prepared before the steps ahead of it run: its tree is
		// known only when it runs, so it snapshots then, and its loop check
		// (the one part of the gate that needs the tree) runs then too.
		plan.Run = func(ctx context.Context) (any, error) {
			w, err := watchTree(ctx, c)
			if err != nil {
				return nil, err
			}
			c.Mark(op.SegSnapshot)
			in := plan.Gate
			in.Tool, in.TreeRevision, in.Caller = c.Op.Name, w.before.digest, c.Caller
			if c.HasRepo() {
				repo := c.Repo.Repo
				in.Repo = &repo
			}
			if err := c.Env.Gov.CheckLoop(in); err != nil {
				return nil, err
			}
			return execute(ctx, c, args, d, dir, w.before.digest, w)
		}
		return plan, nil
	}
	w, err := watchTree(ctx, c)
	if err != nil {
		return nil, err
	}
	c.Mark(op.SegSnapshot)
	plan.Gate.TreeRevision = w.before.digest
	plan.Run = func(ctx context.Context) (any, error) { return execute(ctx, c, args, d, dir, w.before.digest, w) }
	return plan, nil
}

// treeStatus is the status snapshots are taken from: the live index of
// the checkout when it has one (no git process), else git status.
func treeStatus(c *op.Call) statusFunc {
	if v := c.Env.View(c.Repo); v != nil {
		return func(ctx context.Context) (gitx.Status, error) {
			st, err := v.Status(ctx)
			return st.Status, err
		}
	}
	return gitStatusOf(c.Env.Git, c.Root.Path())
}

// treeWatch is how execute tells whether the tree changed while the
// command ran: unconfined, the snapshot before it (and when it was
// taken); confined (the zero treeWatch), nothing, since the command cannot
// write: only other writers can.
type treeWatch struct {
	since  time.Time
	before treeState
	taken  bool
}

// watchTree snapshots the tree before an unconfined command.
func watchTree(ctx context.Context, c *op.Call) (treeWatch, error) {
	since := c.Env.Now()
	before, err := snapshotTree(ctx, treeStatus(c), c.Root.Path())
	if err != nil {
		return treeWatch{}, err
	}
	return treeWatch{since: since, before: before, taken: true}, nil
}

// execute runs the command in the read profile of the sandbox (when
// confined, the command cannot change the work tree: no snapshot after it
// either, only the question whether others wrote meanwhile). before is the
// tree revision of loop detection.
func execute(ctx context.Context, c *op.Call, args RunCommandArgs, d route.Decision, dir, before string, w treeWatch) (*RunCommandResult, error) {
	env := c.Env
	if !w.taken {
		w.since = env.Now()
	}
	timeout := FastTimeoutDefault
	if args.TimeoutMs > 0 {
		timeout = time.Duration(args.TimeoutMs) * time.Millisecond
	}
	// The root's list decides (its exceptions are left out of the closed
	// files; grep, rg and git cannot re-include one below a pattern, so an
	// excepted fixture stays out of their recursive reads).
	argv, err := shieldArgv(args.Argv, c.Root.Deny().Patterns(), closedFiles(ctx, c, args.Argv))
	if err != nil {
		return nil, err
	}
	spec := proc.Spec{Argv: argv, Dir: dir, Timeout: timeout}
	if filepath.Base(argv[0]) == "git" {
		// Agent git commands get the same hardening as harnessd's own:
		// no pager, hooks, fsmonitor, external diff or repo-defined drivers.
		cmd := env.Git.Cmd(ctx, dir, argv[1:]...)
		if cmd.Err != nil {
			return nil, cmd.Err
		}
		spec.Argv, spec.Env = cmd.Args, append(gitx.StripGitEnv(proc.ScrubEnv(cmd.Env, nil)), configEnv(dir)...)
	} else {
		cmdEnv, err := op.CommandEnv(dir)
		if err != nil {
			return nil, err
		}
		spec.Env = cmdEnv
	}
	c.Mark(op.SegExecution)
	// A pure git query over a tree the watcher proves unchanged since the
	// same query ran answers with that run's output: nothing runs.
	var cache *liveview.View
	var cachePos liveview.Position
	key := ""
	if Cacheable(args.Argv) {
		if cache = env.View(c.Repo); cache != nil {
			key = "run_command\x00" + dir + "\x00" + strings.Join(args.Argv, "\x00") + "\x00" + timeout.String()
			r, hit, pos, err := cache.Lookup(ctx, key)
			if err != nil {
				return nil, err
			}
			if hit {
				res := r.(proc.Result)
				return finish(ctx, c, args, d, before, w, res, liveview.SourceCache, timeout, 0), nil
			}
			cachePos = pos
		}
	}
	prep, err := env.Confine(ctx, sandbox.Read, c.Repo, nil)
	if err != nil {
		return nil, err
	}
	op.ApplyConfinement(&spec, prep)
	if prep == nil {
		// Unconfined, the runner's watchdog still bounds the process tree.
		spec.PidsMax = sandbox.DefaultPidsFast
	}
	c.Mark(op.SegSandbox)
	res, err := proc.Run(ctx, spec)
	if prep != nil {
		c.Move(op.SegExecution, op.SegSandbox, prep.Cost())
	}
	if err != nil {
		prep.Done()
		return nil, err
	}
	c.Mark(op.SegExecution)
	if cache != nil && !res.TimedOut && !res.PidsExceeded && !res.Stdout.Truncated && !res.Stderr.Truncated {
		cache.Store(cachePos, key, res)
	}
	return finish(ctx, c, args, d, before, w, res, liveview.SourceExec, timeout, spec.PidsMax), nil
}

// finish makes the result of a run (or of a cached run): redaction, the
// tree check, warnings, loop detection.
func finish(ctx context.Context, c *op.Call, args RunCommandArgs, d route.Decision, before string, w treeWatch, res proc.Result, source string, timeout time.Duration, pidsMax int) *RunCommandResult {
	env := c.Env
	out := &RunCommandResult{Result: res, CommandClass: d.CommandClass, Source: source}
	red := env.RedactorFor(ctx, c.Root.Path())
	var n1, n2 int
	out.Stdout.Text, n1 = red.String(res.Stdout.Text)
	out.Stderr.Text, n2 = red.String(res.Stderr.Text)
	out.Redactions = n1 + n2
	checkTree(ctx, c, w, out)
	if res.TimedOut {
		out.Warnings = append(out.Warnings, "timed out after "+timeout.String()+"; the process tree was killed")
	}
	if res.PidsExceeded {
		out.Warnings = append(out.Warnings, "killed: it started more processes than the Fast Path allows ("+strconv.Itoa(pidsMax)+")")
	}
	out.RunID = "run_" + strconv.FormatInt(env.Now().UnixNano(), 36)
	// A search without a match is an answer, not a failure; and no exit
	// status raises the risk score (only refusals do): nothing to note
	// beyond loop detection.
	env.Gov.LoopRecord(loop.Observation{Scope: govern.LoopScope(c.Caller), Op: "run_command", InputHash: c.Gated().InputHash, TreeRevision: before, ReceiptID: out.RunID,
		Failed:     govern.CommandFailed(args.Argv, res.ExitCode, res.TimedOut),
		ResultHash: govern.Digest(strconv.Itoa(res.ExitCode) + "\x00" + out.Stdout.Text + "\x00" + out.Stderr.Text)})
	// A wall of the sandbox the command ran into, named with its fix.
	if dir, _, err := c.Root.Dir(args.Cwd); err == nil {
		out.SandboxHints = env.Jobs.Walls(ctx, env, wall.ToolRunCommand, sandbox.Read, c.Repo, nil, dir, res.ExitCode, out.Stderr.Text+"\n"+out.Stdout.Text)
		for _, w := range out.SandboxHints {
			out.Warnings = append(out.Warnings, "sandbox ("+string(w.Layer)+") stopped "+w.What+": "+w.Fix)
		}
	}
	c.FinishIn(op.SegReceipt)
	return out
}

// cacheableGit reports the git subcommands whose output is a function of
// the repository's state alone (work tree, index, HEAD, refs, config,
// objects): no clock, no network, no environment but what gitx fixes.
func cacheableGit(sub string) bool {
	switch sub {
	case "status", "rev-parse", "diff", "ls-files", "ls-tree", "show", "cat-file", "describe",
		"merge-base", "rev-list", "blame", "grep", "shortlog":
		return true
	}
	return false
}

// Cacheable reports whether argv is a git query whose result run_command
// may replay while the watcher proves the tree unchanged: `git <sub> ...`
// with sub in cacheableGit and no option that brings in the clock
// (relative dates, --since and friends) or the terminal.
func Cacheable(argv []string) bool {
	if len(argv) < 2 || argv[0] != "git" || !cacheableGit(argv[1]) {
		return false
	}
	for _, a := range argv[2:] {
		if strings.Contains(a, "ignored") || (argv[1] == "ls-files" && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'i')) {
			return false // ignored files: the watcher does not watch ignored directories
		}
		switch {
		case strings.HasPrefix(a, "--since"), strings.HasPrefix(a, "--until"), strings.HasPrefix(a, "--after"),
			strings.HasPrefix(a, "--before"), strings.HasPrefix(a, "--date"), strings.HasPrefix(a, "--relative-date"),
			strings.HasPrefix(a, "--max-age"), strings.HasPrefix(a, "--min-age"),
			strings.Contains(a, "%ar"), strings.Contains(a, "%cr"), strings.Contains(a, "%ah"), strings.Contains(a, "%ch"), // relative dates
			strings.Contains(a, "@{"),          // reflogs (.git/logs) are not watched
			strings.HasPrefix(a, "--no-index"): // files outside the repository
			return false
		}
	}
	return true
}

// checkTree tells whether the work tree changed while the command ran and
// who changed it. Unconfined, a second snapshot says whether it changed,
// and the checkout's leases who held the changed paths meanwhile (asked
// only when something changed). Confined, the command cannot write: the
// tree changed only if other writers held the checkout meanwhile (one
// round trip to the checkout, no git).
func checkTree(ctx context.Context, c *op.Call, w treeWatch, out *RunCommandResult) {
	env := c.Env
	var paths []string
	var head bool
	if w.taken {
		after, err := snapshotTree(ctx, treeStatus(c), c.Root.Path())
		if err != nil {
			out.Warnings = append(out.Warnings, "could not verify the work tree after the command: "+err.Error())
			return
		}
		if after.digest == w.before.digest {
			return
		}
		paths, head = after.changedSince(w.before)
	}
	until := env.Now()
	held, complete, err := concurrentWrites(ctx, c, w.since, until)
	if err != nil {
		out.Warnings = append(out.Warnings, "could not ask which writers held the checkout while the command ran: "+err.Error())
	}
	if !complete {
		defer func() {
			if out.TreeChanged {
				out.Warnings = append(out.Warnings, "the checkout's memory of ended leases did not reach back to the command's start: some writers may be missing from concurrent_writes")
			}
		}()
	}
	if !w.taken {
		if len(held) == 0 {
			return
		}
		out.TreeChanged, out.TreeChangedBy = true, ChangedByOthers
		out.ConcurrentWrites, out.ConcurrentReceipts = describeWrites(c, held, w.since, until)
		out.Warnings = append(out.Warnings, plural(len(held), "other writer")+" held the checkout while this command ran (concurrent_writes): its output may reflect their changes; the command itself cannot write (the sandbox's read-only profile)")
		return
	}
	by, writers, unheld := attribute(c.Repo.Repo.CheckoutID, held, paths, head)
	out.TreeChanged, out.TreeChangedBy = true, by
	if len(writers) > 0 {
		out.ConcurrentWrites, out.ConcurrentReceipts = describeWrites(c, writers, w.since, until)
	}
	switch by {
	case ChangedByOthers:
		out.Warnings = append(out.Warnings, "the work tree changed while this command ran: "+plural(len(writers), "other writer")+" held what changed (concurrent_writes); its output may reflect their changes")
	case ChangedByCommandAndOthers:
		out.Warnings = append(out.Warnings, "the work tree changed while this read-only command ran: "+plural(len(writers), "other writer")+
			" changed some of it (concurrent_writes), but none held "+clipList(unheld)+": the command or a process outside harnessd changed that")
		env.Logger.Warn("read-only command changed the work tree", zap.Strings("paths", unheld))
	default:
		out.Warnings = append(out.Warnings, "the work tree changed while this read-only command ran and no other writer held what changed: the command or a process outside harnessd changed "+clipList(unheld))
		env.Logger.Warn("read-only command changed the work tree", zap.Strings("paths", unheld))
	}
}

// configEnv is gitx.ConfigEnv without its error (a failure of the scanner
// already failed the git command's own hardening).
func configEnv(dir string) []string {
	e, _ := gitx.ConfigEnv(dir)
	return e
}

// CheapRevision identifies the work tree's state for loop detection
// without running git: HEAD and the ref it names, the index's size and
// mtime, and gen, the count of harnessd's own writes to the checkout. It
// stands in for a status snapshot where the sandbox keeps commands from
// changing the tree.
func CheapRevision(root string, gen uint64) string {
	sum := sha256.New()
	add := func(s string) { sum.Write([]byte(s)); sum.Write([]byte{0}) }
	add(strconv.FormatUint(gen, 10))
	gitDir := filepath.Join(root, ".git")
	if b, err := os.ReadFile(gitDir); err == nil {
		// A linked worktree: .git names its git dir.
		if gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
			gitDir = strings.TrimSpace(gd)
			if !filepath.IsAbs(gitDir) {
				gitDir = filepath.Join(root, gitDir)
			}
		}
	}
	head, _ := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	add(string(head))
	if ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: "); ok {
		b, _ := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(ref)))
		add(string(b))
	}
	if fi, err := os.Stat(filepath.Join(gitDir, "index")); err == nil {
		add(strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10))
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// RouteExplainArgs are the arguments of route_explain.
type RouteExplainArgs struct {
	Tool         string             `json:"tool" jsonschema:"operation name, e.g. run_command, read_file, apply_patch, job_start, batch"`
	Argv         []string           `json:"argv,omitempty" jsonschema:"for run_command, run_check and job_start"`
	TimeoutMs    int                `json:"timeout_ms,omitempty"`
	Writes       bool               `json:"writes,omitempty" jsonschema:"the operation declares workspace writes"`
	Deliverables int                `json:"deliverables,omitempty" jsonschema:"independent deliverables the request declares"`
	Steps        []RouteExplainStep `json:"steps,omitempty" jsonschema:"for batch: the steps, routed together"`
	op.Approval
}

// RouteExplainStep is one step of a batch in route_explain.
type RouteExplainStep struct {
	Tool      string   `json:"tool" jsonschema:"the step's operation name, e.g. read_file, run_command, apply_patch"`
	Argv      []string `json:"argv,omitempty" jsonschema:"for run_command and run_check steps: program and arguments"`
	TimeoutMs int      `json:"timeout_ms,omitempty"`
	Writes    bool     `json:"writes,omitempty" jsonschema:"the step declares workspace writes"`
}

// RouteExplainResult is the result of route_explain.
type RouteExplainResult struct {
	Decision route.Decision   `json:"decision"`
	Command  *classify.Result `json:"command,omitempty"`
	// Risk is the score the gate decides with, for this caller now: its
	// parts (base by class, mutation, sensitive paths, the caller's recent
	// refusals of this command) and whether it alone would ask. The
	// decision's own risk is the router's estimate, which decides nothing.
	Risk mediate.Score `json:"risk"`
	op.Meta
}

func routeExplain(_ context.Context, c *op.Call, args RouteExplainArgs) (*op.Plan, error) {
	if args.Tool == "" {
		return nil, errs.New(errs.InvalidArgument, "tool is required")
	}
	c.SetRoute("none")
	return &op.Plan{Gate: op.GateArgs(args), Run: func(context.Context) (any, error) {
		// Each operation routes by its descriptor's class; a name the
		// registry does not know has none and is rejected as unknown.
		reg := c.Pipeline().Registry()
		req := route.Request{Tool: args.Tool, Kind: reg.RouteKind(args.Tool), Argv: args.Argv, TimeoutMs: args.TimeoutMs, Writes: args.Writes, Deliverables: args.Deliverables}
		for _, s := range args.Steps {
			req.Steps = append(req.Steps, route.Request{Tool: s.Tool, Kind: reg.RouteKind(s.Tool), Argv: s.Argv, TimeoutMs: s.TimeoutMs, Writes: s.Writes})
		}
		out := &RouteExplainResult{Decision: route.Decide(req)}
		out.Risk = c.Env.Gov.Score(govern.Input{Tool: args.Tool, Kind: req.Kind, Argv: args.Argv, TimeoutMs: args.TimeoutMs, Writes: args.Writes,
			Route: &out.Decision, Caller: c.Caller})
		if len(args.Argv) > 0 {
			cl := classify.Argv(args.Argv)
			out.Command = &cl
		}
		c.FinishIn(op.SegRouting)
		return out, nil
	}}, nil
}
