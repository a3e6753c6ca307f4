package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/loop"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/readfile"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/search"
)

func fastOps() []Op {
	return []Op{
		def("read_file", "Read a window of lines of a file in the repository (size and line caps, sha256 of the whole file; binary files are reported, not dumped). Secret paths and .git are refused.", true, (*Harness).ReadFile),
		def("search", "Search the repository's files (tracked and untracked, .gitignore respected, secret paths excluded). Literal by default; regex and glob optional. Bounded results.", true, (*Harness).Search),
		def("git_status", "Branch, HEAD, upstream, ahead/behind and the staged, unstaged, untracked and conflicted paths of the work tree.", true, (*Harness).GitStatus),
		def("git_diff", "Unified diff of the work tree (unstaged), the index (staged) or against a revision, with numstat, optional path filter and a byte cap. Secrets in the patch are redacted.", true, (*Harness).GitDiff),
		def("run_command", "Run a read-only command given as a typed argv (no shell string) on the Fast Path, bounded in time and output. Writing, unknown or long commands answer ROUTE_DURABLE_REQUIRED; destructive or remote-writing ones ROUTE_REJECTED.", true, (*Harness).RunCommand),
		def("route_explain", "Explain how harnessd would route an operation (fast, durable or reject) and why, without executing anything.", true, (*Harness).RouteExplain),
	}
}

// ReadFileArgs are the arguments of read_file.
type ReadFileArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"repository id from repository_register"`
	Path                    string `json:"path" jsonschema:"file path relative to the repository root"`
	OffsetLine              int    `json:"offset_line,omitempty" jsonschema:"1-based first line (default 1)"`
	MaxLines                int    `json:"max_lines,omitempty" jsonschema:"lines to return (default and maximum 2000)"`
	MaxBytes                int    `json:"max_bytes,omitempty" jsonschema:"bytes to return (default and maximum 262144)"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty" jsonschema:"report the latency of each segment"`
}

// ReadFileResult is the result of read_file.
type ReadFileResult struct {
	readfile.Result
	Meta
}

// ReadFile reads a window of a file.
func (h *Harness) ReadFile(ctx context.Context, args ReadFileArgs) (*ReadFileResult, error) {
	e, tr, done, err := h.begin(args.RepoID)
	if err != nil {
		return nil, err
	}
	defer done()
	root, err := h.fast.root(e)
	if err != nil {
		return nil, err
	}
	tr.mark(segRouting)
	if _, err := h.gate(ctx, gateInput{Tool: "read_file", Repo: &e, Root: root, Paths: []string{args.Path}}); err != nil {
		return nil, err
	}
	tr.mark(segPolicy)
	res, err := readfile.Read(root, readfile.Request{Path: args.Path, OffsetLine: args.OffsetLine, MaxLines: args.MaxLines, MaxBytes: args.MaxBytes}, readfile.Limits{})
	if err != nil {
		return nil, err
	}
	return &ReadFileResult{Result: res, Meta: Meta{Route: "fast", Latency: tr.finish(segExecution, args.IncludeLatencyBreakdown)}}, nil
}

// SearchArgs are the arguments of search.
type SearchArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"repository id from repository_register"`
	Query                   string `json:"query" jsonschema:"text to find (literal unless regex is true)"`
	Regex                   bool   `json:"regex,omitempty" jsonschema:"treat query as a regular expression (RE2 syntax)"`
	Glob                    string `json:"glob,omitempty" jsonschema:"only files matching this glob, e.g. src/**/*.go or *.md"`
	CaseInsensitive         bool   `json:"case_insensitive,omitempty"`
	MaxResults              int    `json:"max_results,omitempty" jsonschema:"default 50, maximum 500"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
}

// SearchResult is the result of search.
type SearchResult struct {
	search.Result
	Redactions int `json:"redactions,omitempty"`
	Meta
}

// Search searches the repository's files.
func (h *Harness) Search(ctx context.Context, args SearchArgs) (*SearchResult, error) {
	e, tr, done, err := h.begin(args.RepoID)
	if err != nil {
		return nil, err
	}
	defer done()
	tr.mark(segRouting)
	if _, err := h.gate(ctx, gateInput{Tool: "search", Repo: &e}); err != nil {
		return nil, err
	}
	tr.mark(segPolicy)
	res, err := h.fast.searcher.Search(ctx, e.Repo.Root, search.Request{
		Query: args.Query, Regex: args.Regex, Glob: args.Glob, CaseInsensitive: args.CaseInsensitive, MaxResults: args.MaxResults,
	})
	if err != nil {
		return nil, err
	}
	tr.mark(segExecution)
	n := 0
	for i := range res.Matches {
		var k int
		res.Matches[i].Text, k = h.fast.redactor.String(res.Matches[i].Text)
		n += k
	}
	if res.Matches == nil {
		res.Matches = []search.Match{}
	}
	return &SearchResult{Result: res, Redactions: n, Meta: Meta{Route: "fast", Latency: tr.finish(segReceipt, args.IncludeLatencyBreakdown)}}, nil
}

// GitStatusArgs are the arguments of git_status.
type GitStatusArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"repository id from repository_register"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
}

// GitStatusResult is the result of git_status.
type GitStatusResult struct {
	gitx.Status
	Meta
}

// GitStatus reports the work tree's status with one hardened git call.
func (h *Harness) GitStatus(ctx context.Context, args GitStatusArgs) (*GitStatusResult, error) {
	e, tr, done, err := h.begin(args.RepoID)
	if err != nil {
		return nil, err
	}
	defer done()
	tr.mark(segRouting)
	if _, err := h.gate(ctx, gateInput{Tool: "git_status", Repo: &e}); err != nil {
		return nil, err
	}
	tr.mark(segPolicy)
	st, err := h.fast.git.Status(ctx, e.Repo.Root)
	if err != nil {
		return nil, err
	}
	return &GitStatusResult{Status: emptySlices(st), Meta: Meta{Route: "fast", Latency: tr.finish(segExecution, args.IncludeLatencyBreakdown)}}, nil
}

func emptySlices(st gitx.Status) gitx.Status {
	if st.Staged == nil {
		st.Staged = []gitx.Entry{}
	}
	if st.Unstaged == nil {
		st.Unstaged = []gitx.Entry{}
	}
	if st.Untracked == nil {
		st.Untracked = []string{}
	}
	if st.Conflicted == nil {
		st.Conflicted = []gitx.Entry{}
	}
	return st
}

// GitDiffArgs are the arguments of git_diff.
type GitDiffArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"repository id from repository_register"`
	Staged                  bool     `json:"staged,omitempty" jsonschema:"diff the index against HEAD (or against rev)"`
	Rev                     string   `json:"rev,omitempty" jsonschema:"diff against this revision (e.g. HEAD~1, main, A..B)"`
	Paths                   []string `json:"paths,omitempty" jsonschema:"limit the diff to these paths"`
	MaxBytes                int      `json:"max_bytes,omitempty" jsonschema:"patch byte cap (default 262144)"`
	Context                 int      `json:"context,omitempty" jsonschema:"lines of context (default 3)"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
}

// GitDiffResult is the result of git_diff.
type GitDiffResult struct {
	gitx.Diff
	Redactions int `json:"redactions,omitempty"`
	Meta
}

// GitDiff returns a bounded, redacted diff.
func (h *Harness) GitDiff(ctx context.Context, args GitDiffArgs) (*GitDiffResult, error) {
	e, tr, done, err := h.begin(args.RepoID)
	if err != nil {
		return nil, err
	}
	defer done()
	root, err := h.fast.root(e)
	if err != nil {
		return nil, err
	}
	tr.mark(segRouting)
	if _, err := h.gate(ctx, gateInput{Tool: "git_diff", Repo: &e, Root: root, Paths: args.Paths}); err != nil {
		return nil, err
	}
	tr.mark(segPolicy)
	opts := gitx.DiffOptions{Staged: args.Staged, Rev: args.Rev, Paths: args.Paths, MaxBytes: args.MaxBytes, Context: args.Context}
	d, err := h.fast.git.Diff(ctx, e.Repo.Root, opts)
	if err != nil {
		return nil, err
	}
	// Secret files never show in a diff: when one changed, diff again
	// without it (the first patch is discarded unseen).
	for _, f := range d.Files {
		for _, p := range []string{f.Path, f.OrigPath} {
			if p != "" && root.Excluded(p) {
				opts.Exclude = append(opts.Exclude, p)
			}
		}
	}
	if len(opts.Exclude) > 0 {
		if d, err = h.fast.git.Diff(ctx, e.Repo.Root, opts); err != nil {
			return nil, err
		}
		d.SecretPathsOmitted = len(opts.Exclude)
	}
	tr.mark(segExecution)
	var n int
	d.Patch, n = h.fast.redactor.String(d.Patch)
	if d.Files == nil {
		d.Files = []gitx.FileStat{}
	}
	return &GitDiffResult{Diff: d, Redactions: n, Meta: Meta{Route: "fast", Latency: tr.finish(segReceipt, args.IncludeLatencyBreakdown)}}, nil
}

// RunCommandArgs are the arguments of run_command.
type RunCommandArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"repository id from repository_register"`
	Argv                    []string `json:"argv" jsonschema:"program and arguments, e.g. [\"git\",\"log\",\"--oneline\",\"-5\"]; no shell string"`
	Cwd                     string   `json:"cwd,omitempty" jsonschema:"working directory relative to the repository root"`
	TimeoutMs               int      `json:"timeout_ms,omitempty" jsonschema:"default 10000, Fast Path maximum 15000"`
	ApprovalID              string   `json:"approval_id,omitempty" jsonschema:"an approval a person granted for exactly this command"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
}

// RunCommandResult is the result of run_command.
type RunCommandResult struct {
	proc.Result
	CommandClass string `json:"command_class"`
	Redactions   int    `json:"redactions,omitempty"`
	// TreeChanged is true when the work tree's status differs after the
	// command: a "readonly" command changed files.
	TreeChanged bool     `json:"tree_changed"`
	Warnings    []string `json:"warnings,omitempty"`
	// RunID identifies this run (loop detection names earlier runs by it).
	RunID string `json:"run_id"`
	Meta
}

// Fast Path command limits.
const (
	fastTimeoutDefault = 10 * time.Second
	fastTimeoutMax     = 15 * time.Second
)

// RunCommand runs a read-only command on the Fast Path.
func (h *Harness) RunCommand(ctx context.Context, args RunCommandArgs) (*RunCommandResult, error) {
	e, tr, done, err := h.begin(args.RepoID)
	if err != nil {
		return nil, err
	}
	defer done()
	if len(args.Argv) == 0 || args.Argv[0] == "" {
		return nil, errs.New(errs.InvalidArgument, "argv is required: a program and its arguments")
	}
	if args.TimeoutMs < 0 {
		return nil, errs.New(errs.InvalidArgument, "timeout_ms must not be negative")
	}
	root, err := h.fast.root(e)
	if err != nil {
		return nil, err
	}
	gi := gateInput{Tool: "run_command", Repo: &e, Root: root, Argv: args.Argv, TimeoutMs: args.TimeoutMs, Args: args, ApprovalID: args.ApprovalID}
	d := route.Decide(route.Request{Tool: "run_command", Argv: args.Argv, TimeoutMs: args.TimeoutMs})
	if d.Mode != route.Fast {
		// Not for the Fast Path: the mediator says how (reject, escalate or ask).
		if _, err := h.gate(ctx, gi); err != nil {
			return nil, err
		}
		return nil, routeError(d)
	}
	tr.mark(segRouting)
	if err := root.CheckArgv(args.Argv); err != nil {
		return nil, err
	}
	dir, _, err := commandDir(root, args.Cwd)
	if err != nil {
		return nil, err
	}
	tr.mark(segPolicy)
	before, err := h.treeDigest(ctx, root.Path())
	if err != nil {
		return nil, err
	}
	tr.mark(segSnapshot)
	gi.TreeRevision = before
	gr, err := h.gate(ctx, gi)
	if err != nil {
		return nil, err
	}
	tr.mark(segPolicy)
	timeout := fastTimeoutDefault
	if args.TimeoutMs > 0 {
		timeout = time.Duration(args.TimeoutMs) * time.Millisecond
	}
	argv := shieldArgv(args.Argv, h.fast.deny.Patterns())
	spec := proc.Spec{Argv: argv, Dir: dir, Timeout: timeout}
	if filepath.Base(argv[0]) == "git" {
		// Agent git commands get the same hardening as harnessd's own:
		// no pager, hooks, fsmonitor, external diff or repo-defined drivers.
		cmd := h.fast.git.Cmd(ctx, dir, argv[1:]...)
		if cmd.Err != nil {
			return nil, cmd.Err
		}
		spec.Argv, spec.Env = cmd.Args, proc.ScrubEnv(cmd.Env, nil)
	}
	res, err := proc.Run(ctx, spec)
	if err != nil {
		return nil, err
	}
	tr.mark(segExecution)
	out := &RunCommandResult{Result: res, CommandClass: d.CommandClass}
	var n1, n2 int
	out.Stdout.Text, n1 = h.fast.redactor.String(res.Stdout.Text)
	out.Stderr.Text, n2 = h.fast.redactor.String(res.Stderr.Text)
	out.Redactions = n1 + n2
	after, err := h.treeDigest(ctx, root.Path())
	if err != nil {
		out.Warnings = append(out.Warnings, "could not verify the work tree after the command: "+err.Error())
	} else if after != before {
		out.TreeChanged = true
		out.Warnings = append(out.Warnings, "the work tree changed while this read-only command ran")
		h.lg.Warn("read-only command changed the work tree")
	}
	if res.TimedOut {
		out.Warnings = append(out.Warnings, "timed out after "+timeout.String()+"; the process tree was killed")
	}
	out.RunID = "run_" + strconv.FormatInt(h.cfg.Now().UnixNano(), 36)
	failed := res.ExitCode != 0 || res.TimedOut
	h.loopRecord(loop.Observation{Op: "run_command", InputHash: gr.InputHash, TreeRevision: before, ReceiptID: out.RunID, Failed: failed,
		ResultHash: digestOf(strconv.Itoa(res.ExitCode) + "\x00" + out.Stdout.Text + "\x00" + out.Stderr.Text)})
	if failed {
		h.noteHistory(e.Repo.ID, func(x *mediate.History) { x.RecentFailures++ })
	}
	out.Meta = Meta{Route: "fast", Latency: tr.finish(segReceipt, args.IncludeLatencyBreakdown)}
	return out, nil
}

// treeDigest fingerprints the work tree: the porcelain status plus the size
// and modification time of every changed or untracked file, so a change to
// an already-modified file shows too.
func (h *Harness) treeDigest(ctx context.Context, root string) (string, error) {
	st, err := h.fast.git.Status(ctx, root)
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	add := func(s string) { sum.Write([]byte(s)); sum.Write([]byte{0}) }
	add(st.Head)
	stamp := func(rel string) {
		add(rel)
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			add(strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10) + ":" + fi.Mode().String())
		}
	}
	for _, es := range [][]gitx.Entry{st.Staged, st.Unstaged, st.Conflicted} {
		for _, e := range es {
			add(e.Status)
			stamp(e.Path)
		}
	}
	for _, p := range st.Untracked {
		stamp(p)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// routeError turns a non-fast decision into its coded error.
func routeError(d route.Decision) error {
	switch d.Mode {
	case route.Fast:
		return nil
	case route.Durable:
		msg := "this operation needs the Durable Path"
		if len(d.Reasons) > 0 {
			msg += ": " + d.Reasons[0]
		}
		return errs.New(errs.RouteDurableRequired, "%s", msg).With("decision", d).With("suggested_operation", d.SuggestedOperation)
	default:
		msg := "rejected"
		if len(d.Reasons) > 0 {
			msg += ": " + d.Reasons[0]
		}
		return errs.New(errs.RouteRejected, "%s", msg).With("decision", d)
	}
}

// RouteExplainArgs are the arguments of route_explain.
type RouteExplainArgs struct {
	Tool         string             `json:"tool" jsonschema:"operation name, e.g. run_command, read_file, apply_patch, job_start, batch"`
	Argv         []string           `json:"argv,omitempty" jsonschema:"for run_command, run_check and job_start"`
	TimeoutMs    int                `json:"timeout_ms,omitempty"`
	Writes       bool               `json:"writes,omitempty" jsonschema:"the operation declares workspace writes"`
	Deliverables int                `json:"deliverables,omitempty" jsonschema:"independent deliverables the request declares"`
	Steps        []RouteExplainStep `json:"steps,omitempty" jsonschema:"for batch: the steps, routed together"`
}

// RouteExplainStep is one step of a batch in route_explain.
type RouteExplainStep struct {
	Tool      string   `json:"tool"`
	Argv      []string `json:"argv,omitempty"`
	TimeoutMs int      `json:"timeout_ms,omitempty"`
	Writes    bool     `json:"writes,omitempty"`
}

// RouteExplainResult is the result of route_explain.
type RouteExplainResult struct {
	Decision route.Decision   `json:"decision"`
	Command  *classify.Result `json:"command,omitempty"`
	Meta
}

// RouteExplain returns the routing decision for an operation; nothing runs.
func (h *Harness) RouteExplain(ctx context.Context, args RouteExplainArgs) (*RouteExplainResult, error) {
	tr := startTrace()
	if args.Tool == "" {
		return nil, errs.New(errs.InvalidArgument, "tool is required")
	}
	req := route.Request{Tool: args.Tool, Argv: args.Argv, TimeoutMs: args.TimeoutMs, Writes: args.Writes, Deliverables: args.Deliverables}
	for _, s := range args.Steps {
		req.Steps = append(req.Steps, route.Request{Tool: s.Tool, Argv: s.Argv, TimeoutMs: s.TimeoutMs, Writes: s.Writes})
	}
	out := &RouteExplainResult{Decision: route.Decide(req)}
	if len(args.Argv) > 0 {
		c := classify.Argv(args.Argv)
		out.Command = &c
	}
	out.Meta = Meta{Route: "none", Latency: tr.finish(segRouting, false)}
	return out, nil
}

// commandDir resolves a command's working directory ("" or "." = the root)
// and returns its absolute and root-relative forms.
func commandDir(root *pathsafe.Root, cwd string) (abs, rel string, err error) {
	if cwd == "" || cwd == "." {
		return root.Path(), "", nil
	}
	abs, rel, err = root.Resolve(cwd)
	if err != nil {
		return "", "", err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", "", errs.New(errs.InvalidArgument, "cwd %q is not a directory in the repository", cwd).With("path", cwd)
	}
	return abs, rel, nil
}
