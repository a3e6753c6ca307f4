package target

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/sandbox"
	itarget "github.com/harnessd/harnessd/internal/target"
)

const executeDescription = "Run a quick read-only command (ls, grep, go vet) in a target, at most 30 s; in a write target also mkdir, touch, cp or mv inside it. " +
	"Builds, tests and other long work: target_promote, then job_start. " +
	"Example: {\"target_id\":\"tgt_1\",\"argv\":[\"ls\",\"-la\"]}"

// ExecuteArgs are the arguments of target_execute_command.
type ExecuteArgs struct {
	TargetID  string   `json:"target_id" jsonschema:"from target_list"`
	Argv      []string `json:"argv" jsonschema:"program and arguments; no shell string"`
	Cwd       string   `json:"cwd,omitempty" jsonschema:"relative to the target root (default the root)"`
	TimeoutMs int      `json:"timeout_ms,omitempty" jsonschema:"default 10000, max 30000"`
	// Background asks for work that outlives the request (a server, a
	// watch, a recoverable job): a target has no durable path.
	Background bool   `json:"background,omitempty" jsonschema:"long or background work (answered: promote the target)"`
	RequestID  string `json:"request_id,omitempty" jsonschema:"for mkdir, touch, cp, mv: unique per command; a retry with it replays"`
	WaitMs     int    `json:"wait_ms,omitempty" jsonschema:"for a workspace_write command: wait up to this long for a busy root (default 2000, max 30000)"`
	ApprovalID string `json:"approval_id,omitempty"`
}

// ExecuteResult is the result of target_execute_command.
type ExecuteResult struct {
	proc.Result
	TargetID     string `json:"target_id"`
	CommandClass string `json:"command_class"`
	// Kind is how a workspace_write command was allowed: "filesystem"
	// ("" for a read-only command).
	Kind       string   `json:"kind,omitempty"`
	Confined   bool     `json:"confined"`
	Redactions int      `json:"redactions,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// Receipt is the local_effect receipt of a workspace_write command;
	// nil for a read-only one (it leaves no record).
	Receipt  *Receipt `json:"receipt,omitempty"`
	Replayed bool     `json:"replayed,omitempty"`
	op.Meta
}

// Warn adds a warning.
func (r *ExecuteResult) Warn(w string) { r.Warnings = append(r.Warnings, w) }

const execDefault = 10 * time.Second

func routeErr(code errs.Code, class, msg string) error {
	return errs.New(code, "%s", msg).With("command_class", class).With("suggested_operation", "target_promote")
}

func execute(_ context.Context, c *op.Call, a ExecuteArgs) (*op.Plan, error) {
	if len(a.Argv) == 0 || a.Argv[0] == "" {
		return nil, errs.New(errs.InvalidArgument, "argv is required: a program and its arguments")
	}
	if a.TimeoutMs < 0 {
		return nil, errs.New(errs.InvalidArgument, "timeout_ms must not be negative")
	}
	r, err := resolveTarget(c, a.TargetID, false)
	if err != nil {
		return nil, err
	}
	// The classifier and router of the repository Fast Path (run_command):
	// what runs there runs here; what is a job there is a job here (a
	// target has none: promote it). The target's own 30 s cap stands for
	// the Fast Path's 15 s.
	d := route.Decide(route.Request{Tool: "run_command", Kind: route.Command, Argv: a.Argv})
	class := d.CommandClass
	why := strings.Join(d.Reasons, "; ")
	if a.Background {
		return nil, routeErr(errs.RouteDurableRequired, class, "a target has no durable path for long-running, background or recoverable work; "+promoteHint)
	}
	if a.TimeoutMs > itarget.CommandLimitMs {
		return nil, routeErr(errs.RouteDurableRequired, class, "timeout_ms "+strconv.Itoa(a.TimeoutMs)+" is past a target's 30000 ms cap: long-running work needs a durable job; "+promoteHint)
	}
	prog := filepath.Base(a.Argv[0])
	var kind itarget.Kind
	var touched []string
	switch {
	case d.Mode == route.Fast:
	case d.Mode == route.Reject, d.Effect != nil:
		// Remote, destructive, shell: never on a target (a repository's
		// durable job, behind a person, is where the effect is stated).
		return nil, routeErr(errs.RouteRejected, class, "route rejected: "+why)
	case class == classify.WorkspaceWrite.String() && prog == "git":
		return nil, routeErr(errs.RouteRejected, class, "git mutations are rejected on a target until it is promoted ("+why+"); "+promoteHint)
	case class == classify.WorkspaceWrite.String() && r.Entry.Grant.Access != AccessWrite:
		return nil, errs.New(errs.PolicyDenied, "%s writes the workspace (%s) and target %s was granted read access only; register it with access \"write\"", prog, why, r.id()).
			With("command_class", class)
	default:
		k, paths := itarget.Refused, []string(nil)
		if class == classify.WorkspaceWrite.String() {
			var err error
			k, paths, err = itarget.AllowWrite(a.Argv, func(p string) error { _, _, err := r.Root.ResolveWrite(p); return err })
			if err != nil {
				return nil, err
			}
		}
		if k == itarget.Refused {
			// Builds, tests and whatever else runs code of the target
			// (go build -toolexec, a build.rs, a Makefile): a job, as on
			// the repository Fast Path.
			what := "this command is not read-only"
			if d.SuggestedOperation == route.SuggestRunCheck {
				what = "tests run the code under test"
			}
			return nil, routeErr(errs.RouteDurableRequired, class, what+" ("+why+"): on the repository Fast Path it runs as a durable job, and a target runs only read-only commands and the path-governed filesystem allowlist (mkdir, touch, cp, mv); "+promoteHint)
		}
		kind, touched = k, paths
	}
	if err := r.Root.CheckArgv(a.Argv); err != nil {
		return nil, err
	}
	dir, _, err := r.Root.Dir(a.Cwd)
	if err != nil {
		return nil, err
	}
	writes := kind != itarget.Refused
	risk := 10
	if writes {
		risk = 50
	}
	in := gate(r, "target_execute_command", nil, writes, risk)
	in.Argv, in.TimeoutMs, in.ApprovalID = a.Argv, a.TimeoutMs, a.ApprovalID
	if !writes {
		return &op.Plan{Gate: in, Run: func(ctx context.Context) (any, error) {
			return runCommand(ctx, c, r, a, dir, class, false)
		}}, nil
	}
	h := a
	h.WaitMs, h.ApprovalID = 0, ""
	in.Args = h
	m := mutation{Op: "target_execute_command", RequestID: a.RequestID, Hashed: h, Targets: []resolved{r}, Paths: touched, WaitMs: a.WaitMs}
	return &op.Plan{Gate: in, Run: func(ctx context.Context) (any, error) {
		var res *ExecuteResult
		m.Run = func(ctx context.Context, rec *Receipt) error {
			out, err := runCommand(ctx, c, r, a, dir, class, true)
			if err != nil {
				return err
			}
			out.Kind = string(kind)
			res = out
			for _, p := range touched {
				_, rel, _ := r.Root.Resolve(p)
				rec.Changes = append(rec.Changes, patch.Change{Path: rel, Op: prog})
			}
			return nil
		}
		return exec(ctx, c, m, func(rec Receipt) *ExecuteResult {
			res.Receipt = &rec
			return res
		}, func(r *ExecuteResult) { r.Replayed = true })
	}}, nil
}

// runCommand runs argv in dir, bounded, in the sandbox's target profile
// (the root writable only for a workspace_write command of a write
// target).
func runCommand(ctx context.Context, c *op.Call, r resolved, a ExecuteArgs, dir, class string, writes bool) (*ExecuteResult, error) {
	env := c.Env
	timeout := execDefault
	if a.TimeoutMs > 0 {
		timeout = time.Duration(a.TimeoutMs) * time.Millisecond
	}
	cmdEnv, err := op.CommandEnv(dir)
	if err != nil {
		return nil, err
	}
	spec := proc.Spec{Argv: a.Argv, Dir: dir, Timeout: timeout, Env: cmdEnv}
	root := r.path()
	// git finds no repository above the target's root (the target is the
	// boundary), and an agent's git gets harnessd's hardening: no pager,
	// hooks, fsmonitor, external diff or repository-defined drivers.
	ceiling := "GIT_CEILING_DIRECTORIES=" + filepath.Dir(root)
	if filepath.Base(a.Argv[0]) == "git" {
		cmd := env.Git.Cmd(ctx, dir, a.Argv[1:]...)
		if cmd.Err != nil {
			return nil, cmd.Err
		}
		ge, _ := gitx.ConfigEnv(dir)
		spec.Argv, spec.Env = cmd.Args, append(gitx.StripGitEnv(proc.ScrubEnv(cmd.Env, nil)), ge...)
	}
	spec.Env = append(spec.Env, ceiling)
	prep, err := env.Confine(ctx, sandbox.Target, repoEntry(r.Entry.Grant), func(p *sandbox.Policy) {
		p.Profile = sandbox.Target
		if writes {
			p.Writable = append(p.Writable, root)
		}
	})
	if err != nil {
		return nil, err
	}
	op.ApplyConfinement(&spec, prep)
	if prep == nil {
		spec.PidsMax = sandbox.DefaultPidsFast
	}
	res, err := proc.Run(ctx, spec)
	if err != nil {
		prep.Done()
		return nil, err
	}
	out := &ExecuteResult{Result: res, TargetID: r.id(), CommandClass: class, Confined: prep != nil}
	red := env.RedactorFor(ctx, root)
	var n1, n2 int
	out.Stdout.Text, n1 = red.String(res.Stdout.Text)
	out.Stderr.Text, n2 = red.String(res.Stderr.Text)
	out.Redactions = n1 + n2
	if res.TimedOut {
		out.Warnings = append(out.Warnings, "timed out after "+timeout.String()+"; the process tree was killed")
	}
	return out, nil
}
