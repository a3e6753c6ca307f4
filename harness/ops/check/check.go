// Package check holds run_check: checks (tests, vet, lint) with a semantic
// identity, single-flight and evidence reuse, and the runner the checks
// actor runs their specs with.
package check

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops/job"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/joblog"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/messages"
)

// Ops returns run_check.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[RunCheckArgs]{Name: "run_check", Draw: runs.Draw{Commands: 1},
			Description: "Run a check (tests, vet, lint) with semantic identity: identical concurrent calls share one process, and a passing result is reused while the content, definition and environment are unchanged (reused: true, with the original run). Focused checks run on the Fast Path (15 s); unfocused ones as a durable job. miss_reasons explain why earlier evidence did not apply.",
			Repo:        func(a RunCheckArgs) string { return a.RepoID }, Prepare: runCheck}),
	}
}

// Check limits.
const (
	focusedTimeoutMs   = 15_000
	unfocusedTimeoutMs = 600_000
	maxOutput          = 64 << 10
	waitMargin         = 30 * time.Second
	progressEvery      = 2 * time.Second
)

// EffectWorkspaceWrite is the declared effect of a check that writes to the
// work tree (generated files, snapshots, formatting). Such a check never
// reuses evidence across checkouts.
const EffectWorkspaceWrite = "workspace_write"

// RunCheckArgs are the arguments of run_check.
type RunCheckArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"repository id from repository_register"`
	Argv                    []string `json:"argv" jsonschema:"the check as a typed argv, e.g. [\"go\",\"test\",\"./pkg\",\"-run\",\"TestX\"]"`
	Cwd                     string   `json:"cwd,omitempty" jsonschema:"working directory relative to the repository root"`
	TimeoutMs               int      `json:"timeout_ms,omitempty" jsonschema:"default 15000 for focused checks (Fast Path maximum) and 600000 for unfocused ones"`
	Effects                 []string `json:"effects,omitempty" jsonschema:"declared effects, e.g. workspace_write; part of the identity"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// OriginalRun names the run whose outcome a result reports.
type OriginalRun struct {
	RepoID     string    `json:"repo_id"`
	Pid        int       `json:"pid,omitempty"`
	JobID      string    `json:"job_id,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
}

// RunCheckResult is the result of run_check.
type RunCheckResult struct {
	Identity string `json:"identity"`
	Focused  bool   `json:"focused"`
	Path     string `json:"path"` // "fast" or "durable"
	Reused   bool   `json:"reused"`
	// Joined is true when this call waited for a run another call started.
	Joined bool `json:"joined"`
	// Shared is true when the evidence may be reused by other checkouts of
	// the repository (clean work tree, no declared workspace writes).
	Shared      bool        `json:"shared"`
	OriginalRun OriginalRun `json:"original_run"`
	ExitCode    int         `json:"exit_code"`
	Passed      bool        `json:"passed"`
	TimedOut    bool        `json:"timed_out"`
	Cancelled   bool        `json:"cancelled,omitempty"`
	Stdout      string      `json:"stdout"`
	Stderr      string      `json:"stderr"`
	Summary     []string    `json:"summary,omitempty"`
	// MissReasons say why no earlier evidence was reused (empty when reused).
	MissReasons []string `json:"miss_reasons,omitempty"`
	op.Meta
}

func runCheck(_ context.Context, c *op.Call, args RunCheckArgs) (*op.Plan, error) {
	if len(args.Argv) == 0 || args.Argv[0] == "" {
		return nil, errs.New(errs.InvalidArgument, "argv is required: a program and its arguments")
	}
	if args.TimeoutMs < 0 {
		return nil, errs.New(errs.InvalidArgument, "timeout_ms must not be negative")
	}
	effects, writes, err := checkEffects(args.Effects)
	if err != nil {
		return nil, err
	}
	focused, _ := classify.Focus(args.Argv)
	timeoutMs := args.TimeoutMs
	if timeoutMs == 0 {
		timeoutMs = unfocusedTimeoutMs
		if focused {
			timeoutMs = focusedTimeoutMs
		}
	}
	c.Mark(op.SegRouting)
	if err := c.Root.CheckArgv(args.Argv); err != nil {
		return nil, err
	}
	if _, _, err := c.Root.Dir(args.Cwd); err != nil {
		return nil, err
	}
	return &op.Plan{
		// A durable route is run_check's own durable path.
		Gate:      govern.Input{Argv: args.Argv, TimeoutMs: timeoutMs, Writes: writes, Args: args, RunsDurable: true},
		Breakdown: args.IncludeLatencyBreakdown,
		Run: func(ctx context.Context) (any, error) {
			durable := c.Gated().Decision.Route.Mode == route.Durable
			return run(ctx, c, args, focused, effects, writes, timeoutMs, durable)
		},
	}, nil
}

func run(ctx context.Context, c *op.Call, args RunCheckArgs, focused bool, effects []string, writes bool, timeoutMs int, durable bool) (*RunCheckResult, error) {
	env, root, e := c.Env, c.Root, c.Repo
	environ := proc.ScrubEnv(os.Environ(), nil)
	rev, err := checkid.ContentRevision(ctx, env.Git, root.Path(), checkid.Options{Exclude: exclude(env)})
	if err != nil {
		return nil, err
	}
	fp, err := env.Probe.Fingerprint(ctx, args.Argv, environ)
	if err != nil {
		return nil, err
	}
	defn := checkid.Definition{Argv: args.Argv, Cwd: args.Cwd, Effects: effects, TimeoutMs: timeoutMs}
	id := checkid.Compute(rev, defn, fp)
	cur := checkid.Parts{Revision: rev, Definition: defn, Env: fp}
	partsJSON, err := json.Marshal(cur)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "encode check parts: %v", err)
	}
	key := messages.CheckKey{RepoID: e.Repo.ID, CommonDir: e.Repo.CommonDir, Identity: id.Digest, Shared: rev.Clean && !writes && e.Repo.CommonDir != ""}
	c.Mark(op.SegSnapshot)

	pathName := "fast"
	wait := time.Duration(timeoutMs)*time.Millisecond + waitMargin
	if durable {
		pathName = "durable"
		wait += waitMargin
	}
	spec := messages.CheckSpec{RepoID: e.Repo.ID, Root: e.Repo.Root, Cwd: args.Cwd, Argv: append([]string(nil), args.Argv...),
		TimeoutMs: timeoutMs, Durable: durable, Writes: writes, EnvDigest: id.Env}
	res, err := env.RT.Checks.Run(ctx, messages.CheckRun{Key: key, DefinitionDigest: id.Definition, Parts: partsJSON, Spec: spec},
		wait, progressEvery, func(elapsed time.Duration) { op.Report(ctx, elapsed.Seconds(), wait.Seconds(), "check running") })
	if err != nil {
		return nil, err
	}
	c.Mark(op.SegExecution)

	o := res.Outcome
	out := &RunCheckResult{
		Identity: id.Digest, Focused: focused, Path: pathName, Reused: res.Reused, Joined: res.Joined, Shared: key.Shared,
		OriginalRun: OriginalRun{RepoID: o.RepoID, Pid: o.Pid, JobID: o.JobID, StartedAt: o.StartedAt, FinishedAt: o.FinishedAt},
		ExitCode:    o.ExitCode, Passed: o.Passed, TimedOut: o.TimedOut, Cancelled: o.Cancelled,
		Stdout: o.Stdout, Stderr: o.Stderr, Summary: o.Summary,
	}
	if o.Path != "" {
		out.Path = o.Path
	}
	if !res.Reused {
		out.MissReasons = explainMiss(ctx, c, root.Path(), res.Previous, cur)
	}
	c.SetRoute(out.Path)
	c.FinishIn(op.SegReceipt)
	return out, nil
}

// checkEffects validates and normalises declared effects.
func checkEffects(in []string) (effects []string, writes bool, err error) {
	for i, eff := range in {
		eff = strings.TrimSpace(eff)
		if eff == "" || len(eff) > 64 || strings.ContainsAny(eff, " \t\n\x00") {
			return nil, false, errs.New(errs.InvalidArgument, "effects[%d] %q is not an effect name (e.g. %s)", i, in[i], EffectWorkspaceWrite)
		}
		if eff == EffectWorkspaceWrite {
			writes = true
		}
		effects = append(effects, eff)
	}
	return effects, writes, nil
}

// exclude leaves secret paths and harnessd's own artefacts out of a check's
// content revision.
func exclude(env *op.Env) func(rel string) bool {
	return func(rel string) bool {
		if _, ok := env.Deny.Match(rel); ok {
			return true
		}
		return rel == ".harnessd" || strings.HasPrefix(rel, ".harnessd/") || strings.Contains(path.Base(rel), ".harnessd-tmp-")
	}
}

// explainMiss says why no evidence was reused.
func explainMiss(ctx context.Context, c *op.Call, root string, prev *messages.CheckEvidence, cur checkid.Parts) []string {
	if prev == nil {
		return []string{"no earlier passing run of this check definition in this repository"}
	}
	var p checkid.Parts
	if err := json.Unmarshal(prev.Parts, &p); err != nil {
		return []string{"the earlier evidence cannot be compared: " + err.Error()}
	}
	reasons := checkid.ExplainMiss(ctx, c.Env.Git, root, p, cur)
	if len(reasons) == 0 {
		reasons = []string{"the earlier evidence no longer applies"}
	}
	return reasons
}

// shortIdentity returns the first 12 hex digits of an identity.
func shortIdentity(id string) string {
	s := strings.TrimPrefix(id, "sha256:")
	if len(s) > 12 {
		s = s[:12]
	}
	return s
}

// Runner returns the runner of the checks actor: a focused check is one
// bounded Fast Path process, an unfocused one a durable job. The spec is
// data; this is the code that runs it.
func Runner(p *op.Pipeline) actors.CheckRunner {
	return func(ctx context.Context, run messages.CheckRun) (messages.CheckOutcome, error) {
		if run.Spec.Durable {
			o, err := runDurable(ctx, p, run)
			o.RepoID, o.Path = run.Spec.RepoID, "durable"
			return o, err
		}
		return runFast(ctx, p.Env(), run.Spec)
	}
}

// confined returns the spec of a check's process: its environment (git's
// repository programs neutralised) and the sandbox's check profile.
func confined(ctx context.Context, env *op.Env, s messages.CheckSpec, spec *proc.Spec) error {
	cmdEnv, err := op.CommandEnv(spec.Dir)
	if err != nil {
		return err
	}
	spec.Env = cmdEnv
	e, err := env.Repo(s.RepoID)
	if err != nil {
		return err
	}
	prep, err := env.Confine(ctx, sandbox.Check, e, func(p *sandbox.Policy) {
		if s.Writes {
			p.Writable = []string{s.Root}
		}
	})
	if err != nil {
		return err
	}
	op.ApplyConfinement(spec, prep)
	return nil
}

// runFast runs a focused check: one bounded process, output redacted
// before it can become evidence.
func runFast(ctx context.Context, env *op.Env, s messages.CheckSpec) (messages.CheckOutcome, error) {
	dir := s.Root
	if s.Cwd != "" && s.Cwd != "." {
		dir = filepath.Join(s.Root, filepath.FromSlash(s.Cwd))
	}
	started := time.Now().UTC()
	spec := proc.Spec{Argv: s.Argv, Dir: dir, Timeout: time.Duration(s.TimeoutMs) * time.Millisecond, MaxStdout: maxOutput, MaxStderr: maxOutput}
	if err := confined(ctx, env, s, &spec); err != nil {
		return messages.CheckOutcome{}, err
	}
	r, err := proc.Run(ctx, spec)
	if err != nil {
		if spec.Confine != nil {
			spec.Confine.Done()
		}
		return messages.CheckOutcome{}, err
	}
	o := messages.CheckOutcome{
		RepoID: s.RepoID, Pid: r.Pid, StartedAt: started, FinishedAt: time.Now().UTC(), Path: "fast",
		ExitCode: r.ExitCode, TimedOut: r.TimedOut, Cancelled: r.Cancelled,
	}
	o.Passed = r.ExitCode == 0 && !r.TimedOut && !r.Cancelled && r.Signal == ""
	red := env.RedactorFor(ctx, s.Root)
	o.Stdout, _ = red.String(r.Stdout.Text)
	o.Stderr, _ = red.String(r.Stderr.Text)
	if !o.Passed {
		o.Summary = joblog.Summarize(o.Stdout+"\n"+o.Stderr, 0)
	}
	return o, nil
}

// runDurable runs an unfocused check as a durable job and waits for it,
// reporting the job as the check's outcome. When ctx ends first (the check
// actor stops), the job is cancelled.
func runDurable(ctx context.Context, p *op.Pipeline, run messages.CheckRun) (messages.CheckOutcome, error) {
	s := run.Spec
	c, err := p.NewCall(s.RepoID)
	if err != nil {
		return messages.CheckOutcome{}, err
	}
	started := time.Now().UTC()
	spec := job.Spec{Argv: s.Argv, Cwd: s.Cwd, TimeoutS: (s.TimeoutMs + 999) / 1000, Isolation: messages.JobIsolationNone, Writes: s.Writes,
		RequestID: "check-" + shortIdentity(run.Key.Identity) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	spec.Hashed = map[string]any{"argv": s.Argv, "cwd": s.Cwd, "timeout_s": spec.TimeoutS, "writes": s.Writes, "check": run.Key.Identity}
	j, err := job.Start(ctx, c, spec)
	if err != nil {
		return messages.CheckOutcome{}, err
	}
	for !j.Finished() {
		if err := ctx.Err(); err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = c.Env.RT.Jobs.Cancel(cctx, j.JobID)
			cancel()
			return messages.CheckOutcome{JobID: j.JobID, StartedAt: started, FinishedAt: time.Now().UTC(), ExitCode: -1, Cancelled: true}, nil
		}
		next, err := job.Wait(ctx, c, j.JobID, time.Minute)
		if err != nil {
			if ctx.Err() != nil {
				continue // cancel the job on the next turn
			}
			return messages.CheckOutcome{}, errs.Wrap(errs.CodeOf(err), err, "wait for check job %s: %v", j.JobID, err)
		}
		j = job.Result(next)
	}
	o := messages.CheckOutcome{JobID: j.JobID, Pid: j.Pid, StartedAt: started, FinishedAt: time.Now().UTC(), ExitCode: -1,
		TimedOut: j.TimedOut, Cancelled: j.State == messages.JobCancelled, Stdout: j.Tail, Summary: j.Summary}
	if j.StartedAt != nil {
		o.StartedAt = j.StartedAt.UTC()
	}
	if j.FinishedAt != nil {
		o.FinishedAt = j.FinishedAt.UTC()
	}
	if j.ExitCode != nil {
		o.ExitCode = *j.ExitCode
	}
	o.Passed = j.State == messages.JobSucceeded && o.ExitCode == 0 && !o.TimedOut
	if j.Error != nil && o.Stderr == "" {
		o.Stderr = j.Error.Code + ": " + j.Error.Message
	}
	return o, nil
}
