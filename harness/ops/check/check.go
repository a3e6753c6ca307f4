// Package check holds run_check: checks (tests, vet, lint) with a semantic
// identity, single-flight and evidence reuse, and the runner the checks
// actor runs their specs with.
package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/joblog"
	"github.com/harnessd/harnessd/internal/liveview"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/wall"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Ops returns run_check.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[RunCheckArgs]{Name: "run_check", Output: RunCheckResult{}, Draw: runs.Draw{Commands: 1},
			Route: route.Check, Toolset: op.Core, Roles: op.CheckRoles, Topics: []string{"test", "build"}, BatchStep: true,
			Description: "Run a test, vet, lint or build whose pass is evidence, after an edit and before git_commit; a pass is reused while the code is unchanged. A focused check (one package or test) answers here, an unfocused one becomes a job for job_status. One-off commands: run_command. Example: {\"argv\":[\"go\",\"test\",\"./parse\",\"-run\",\"TestEmpty\"]}",
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

// The effects a check may declare (part of its identity).
const (
	// EffectWorkspaceWrite is the declared effect of a check that writes
	// to the work tree (generated files, snapshots, formatting). Such a
	// check never reuses evidence across checkouts.
	EffectWorkspaceWrite = "workspace_write"
	// EffectNetwork is the declared effect of a check that needs the
	// network beyond loopback (which every check has): the gate asks for a
	// policy rule that allows it or a person's approval, and the sandbox
	// then lets it out.
	EffectNetwork = "network"
)

// Effects lists the effects a check may declare.
func Effects() []string { return []string{EffectWorkspaceWrite, EffectNetwork} }

// RunCheckArgs are the arguments of run_check.
type RunCheckArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"from repository_list"`
	Argv                    []string `json:"argv" jsonschema:"program and arguments; no shell string"`
	Cwd                     string   `json:"cwd,omitempty" jsonschema:"relative to the repository root"`
	TimeoutMs               int      `json:"timeout_ms,omitempty" jsonschema:"default 15000 focused, 600000 unfocused"`
	Effects                 []string `json:"effects,omitempty" jsonschema:"workspace_write (it writes files), network (needs a rule or approval)"`
	Rerun                   bool     `json:"rerun,omitempty" jsonschema:"run it even when an earlier pass of the same code could be reused"`
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
	// Resources are its process tree's figures: CPU time, peak RSS,
	// storage I/O, processes.
	Resources *messages.Resources `json:"resources,omitempty"`
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
	// the repository: a clean work tree, no workspace writes, no network,
	// a private temp directory and a toolchain whose probe succeeded.
	Shared bool `json:"shared"`
	// NotShared says why not (absent when Shared).
	NotShared   []string    `json:"not_shared,omitempty"`
	OriginalRun OriginalRun `json:"original_run"`
	ExitCode    int         `json:"exit_code"`
	Passed      bool        `json:"passed"`
	TimedOut    bool        `json:"timed_out"`
	Cancelled   bool        `json:"cancelled,omitempty"`
	Stdout      string      `json:"stdout"`
	Stderr      string      `json:"stderr"`
	Summary     []string    `json:"summary,omitempty"`
	// SandboxHints say which wall of the sandbox a failed check ran into:
	// the layer, the path or syscall, the fix.
	SandboxHints []wall.Diagnosis `json:"sandbox_hints,omitempty"`
	// MissReasons say why no earlier evidence was reused (empty when reused).
	MissReasons []string `json:"miss_reasons,omitempty"`
	// Escalated is set when the focused check outgrew the Fast Path: it
	// continues as a durable job (follow it with job_status, which has
	// its exit code and output once it ends); exit_code is then -1 (none
	// yet) and passed false. Absent otherwise.
	Escalated *Escalated `json:"escalated,omitempty"`
	// Fleet names the one fleet-wide run of a shared check when the
	// daemon is in a fleet (harnessd serve --cluster-store): the node
	// that ran it, its run id and token, and source "ran", "joined"
	// (another node's run) or "reused" (evidence by digest). Absent
	// outside a fleet and for checks whose evidence is not shared.
	Fleet *messages.FleetRun `json:"fleet,omitempty"`
	op.Meta
}

// Escalated names the durable job a focused check that reached the Fast
// Path cap continues as, and why.
type Escalated struct {
	JobID  string `json:"job_id"`
	Reason string `json:"reason"`
}

// Defined is a check definition as run_check defines it: validated, with
// its effects normalised and its default timeout (15 s focused, 600 s
// unfocused) applied. Its semantic identity is computed from it.
type Defined struct {
	Argv      []string
	Cwd       string
	Effects   []string
	TimeoutMs int
	Focused   bool
	// Writes: the check declares the workspace_write effect.
	Writes bool
	// Network: the check declares the network effect.
	Network bool
	// DefaultTimeout: the caller set no timeout (TimeoutMs is the default),
	// so a focused check that reaches the Fast Path cap continues as a
	// durable job with the Durable Path's default timeout.
	DefaultTimeout bool
}

// Define validates a check's argv, timeout and effects and applies
// run_check's defaults; the identity of the result is the one run_check
// computes for the same arguments.
func Define(argv []string, cwd string, timeoutMs int, effects []string) (Defined, error) {
	if len(argv) == 0 || argv[0] == "" {
		return Defined{}, errs.New(errs.InvalidArgument, "argv is required: a program and its arguments")
	}
	if timeoutMs < 0 {
		return Defined{}, errs.New(errs.InvalidArgument, "timeout_ms must not be negative")
	}
	eff, writes, network, err := checkEffects(effects)
	if err != nil {
		return Defined{}, err
	}
	focused, _ := classify.Focus(argv)
	defaulted := timeoutMs == 0
	if defaulted {
		timeoutMs = unfocusedTimeoutMs
		if focused {
			timeoutMs = focusedTimeoutMs
		}
	}
	return Defined{Argv: argv, Cwd: cwd, Effects: eff, TimeoutMs: timeoutMs, Focused: focused, Writes: writes, Network: network,
		DefaultTimeout: defaulted}, nil
}

// Identity is a check's semantic identity in one checkout, with its parts
// (stored with evidence to explain a miss) and the key of its check actor
// and evidence.
type Identity struct {
	ID    checkid.Identity
	Parts checkid.Parts
	Key   messages.CheckKey
	// NotShared says why the evidence stays in this checkout (checkid.Scope),
	// empty when Key.Shared.
	NotShared []string
}

// Identify computes the semantic identity of d in the checkout e (root is
// its path checker) exactly as run_check does: the content revision now,
// the definition and the environment fingerprint. It runs nothing but git
// and the cached tool version probe.
func Identify(ctx context.Context, env *op.Env, e runtime.RepoEntry, root *pathsafe.Root, d Defined) (Identity, error) {
	rev, err := Revision(ctx, env, e, root)
	if err != nil {
		return Identity{}, err
	}
	return IdentifyAt(ctx, env, e, rev, d)
}

// Revision returns the content revision of the checkout e (root is its
// path checker) as a check's identity sees it (secret paths and harnessd's
// artefacts left out). With a live index it runs no git status: the
// revision is kept per watcher generation, and after a change only the
// dirty paths are hashed again; it falls back to git status when the
// index cannot prove the dirty set (staged or conflicted paths, or no
// in-process status).
func Revision(ctx context.Context, env *op.Env, e runtime.RepoEntry, root *pathsafe.Root) (checkid.Revision, error) {
	opts := checkid.Options{Exclude: exclude(root.Deny())}
	v := env.View(e)
	if v == nil {
		return checkid.ContentRevision(ctx, env.Git, root.Path(), opts)
	}
	r, _, err := v.Cached(ctx, "content-revision", func() (any, error) {
		st, err := v.Status(ctx)
		if err != nil {
			return nil, err
		}
		if st.Source != liveview.SourceIndex || len(st.Staged) > 0 || len(st.Conflicted) > 0 {
			return checkid.ContentRevision(ctx, env.Git, root.Path(), opts)
		}
		dirty := make([]checkid.DirtyPath, 0, len(st.Unstaged)+len(st.Untracked))
		for _, u := range st.Unstaged {
			mode, oid, ok := v.IndexEntry(u.Path)
			if !ok {
				return checkid.ContentRevision(ctx, env.Git, root.Path(), opts)
			}
			dirty = append(dirty, checkid.DirtyPath{Path: u.Path, HeadMode: mode, HeadOID: oid})
		}
		for _, p := range st.Untracked {
			d, isDir := strings.CutSuffix(p, "/")
			dirty = append(dirty, checkid.DirtyPath{Path: d, Untracked: true, Dir: isDir})
		}
		return checkid.ContentRevisionOf(ctx, env.Git, root.Path(), st.Head, dirty, opts)
	})
	if err != nil {
		return checkid.Revision{}, err
	}
	rev := r.(checkid.Revision)
	rev.Dirty = maps.Clone(rev.Dirty)
	return rev, nil
}

// IdentifyAt is Identify on a content revision computed before (Revision):
// several checks judged against one revision of the checkout.
func IdentifyAt(ctx context.Context, env *op.Env, e runtime.RepoEntry, rev checkid.Revision, d Defined) (Identity, error) {
	environ := proc.ScrubEnv(os.Environ(), nil)
	fp, err := env.Probe.Fingerprint(ctx, d.Argv, environ)
	if err != nil {
		return Identity{}, err
	}
	defn := checkid.Definition{Argv: d.Argv, Cwd: d.Cwd, Effects: d.Effects, TimeoutMs: d.TimeoutMs}
	id := checkid.Compute(rev, defn, fp)
	shared, why := checkid.Scope(checkid.ScopeFacts{CommonDir: e.Repo.CommonDir, Clean: rev.Clean, Writes: d.Writes, Network: d.Network,
		PrivateTmp: env.Confines(sandbox.Check), Env: fp})
	return Identity{
		ID:        id,
		Parts:     checkid.Parts{Revision: rev, Definition: defn, Env: fp},
		Key:       messages.CheckKey{RepoID: e.Repo.ID, CommonDir: e.Repo.CommonDir, Identity: id.Digest, Shared: shared},
		NotShared: why,
	}, nil
}

// Evidence returns the stored passing evidence of id as the check actor
// would reuse it, without running or asking anything: the checkout's own,
// else (a shared identity) the evidence another clean checkout of the
// repository stored; nil when there is none (evidence has no age bound:
// its repository's budget evicts it, see actors.ChecksConfig). prev is the newest evidence of the same definition
// in the checkout when it is of another identity (what the content, or the
// environment, was when the check last passed), nil when there is none.
func Evidence(env *op.Env, id Identity) (ev, prev *messages.CheckEvidence, err error) {
	st := env.Store
	get := func(repoID, identity string) (*messages.CheckEvidence, error) {
		var e messages.CheckEvidence
		err := st.Get(persistence.CheckEvidenceKey(repoID, identity), &e)
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "read check evidence: %v", err)
		}
		if e.Identity != identity || !e.Outcome.Passed {
			return nil, nil
		}
		return &e, nil
	}
	k := id.Key
	if ev, err = get(k.RepoID, k.Identity); err != nil {
		return nil, nil, err
	}
	if ev == nil && k.Shared {
		var owner string
		switch gerr := st.Get(persistence.CheckSharedKey(k.CommonDir, k.Identity), &owner); {
		case gerr == nil && owner != "":
			o, oerr := get(owner, k.Identity)
			if oerr != nil {
				return nil, nil, oerr
			}
			if o != nil && o.Shared && o.CommonDir == k.CommonDir {
				ev = o
			}
		case gerr != nil && !errors.Is(gerr, persistence.ErrNotFound):
			return nil, nil, errs.Wrap(errs.Unavailable, gerr, "read shared check index: %v", gerr)
		}
	}
	var ix struct {
		Identity string `json:"identity"`
	}
	switch gerr := st.Get(persistence.CheckDefKey(k.RepoID, id.ID.Definition), &ix); {
	case gerr == nil && ix.Identity != "" && ix.Identity != k.Identity:
		var p messages.CheckEvidence
		if err := st.Get(persistence.CheckEvidenceKey(k.RepoID, ix.Identity), &p); err == nil {
			prev = &p
		} else if !errors.Is(err, persistence.ErrNotFound) {
			return nil, nil, errs.Wrap(errs.Unavailable, err, "read check evidence: %v", err)
		}
	case gerr != nil && !errors.Is(gerr, persistence.ErrNotFound):
		return nil, nil, errs.Wrap(errs.Unavailable, gerr, "read check index: %v", gerr)
	}
	return ev, prev, nil
}

func runCheck(_ context.Context, c *op.Call, args RunCheckArgs) (*op.Plan, error) {
	d, err := Define(args.Argv, args.Cwd, args.TimeoutMs, args.Effects)
	if err != nil {
		return nil, err
	}
	writes, timeoutMs := d.Writes, d.TimeoutMs
	c.Mark(op.SegRouting)
	if err := c.Root.CheckArgv(args.Argv); err != nil {
		return nil, err
	}
	if _, _, err := c.Root.Dir(args.Cwd); err != nil {
		return nil, err
	}
	return &op.Plan{
		// A durable route is run_check's own durable path.
		Gate:      govern.Input{Argv: args.Argv, TimeoutMs: timeoutMs, Writes: writes, Network: d.Network, Args: args, RunsDurable: true},
		Breakdown: args.IncludeLatencyBreakdown,
		Run: func(ctx context.Context) (any, error) {
			durable := c.Gated().Decision.Route.Mode == route.Durable
			return run(ctx, c, args, d, durable)
		},
	}, nil
}

func run(ctx context.Context, c *op.Call, args RunCheckArgs, d Defined, durable bool) (*RunCheckResult, error) {
	env, root, e := c.Env, c.Root, c.Repo
	focused, writes, timeoutMs := d.Focused, d.Writes, d.TimeoutMs
	ident, err := Identify(ctx, env, e, root, d)
	if err != nil {
		return nil, err
	}
	id, cur, key := ident.ID, ident.Parts, ident.Key
	partsJSON, err := json.Marshal(cur)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "encode check parts: %v", err)
	}
	c.Mark(op.SegSnapshot)

	pathName := "fast"
	wait := time.Duration(timeoutMs)*time.Millisecond + waitMargin
	if durable {
		pathName = "durable"
		wait += waitMargin
	}
	spec := messages.CheckSpec{RepoID: e.Repo.ID, Root: e.Repo.Root, Cwd: args.Cwd, Argv: append([]string(nil), args.Argv...),
		TimeoutMs: timeoutMs, Durable: durable, Writes: writes, DefaultTimeout: d.DefaultTimeout, EnvDigest: id.Env}
	res, err := env.RT.Checks.Run(ctx, messages.CheckRun{Key: key, DefinitionDigest: id.Definition, Parts: partsJSON, Spec: spec, Rerun: args.Rerun},
		wait, progressEvery, func(elapsed time.Duration) { op.Report(ctx, elapsed.Seconds(), wait.Seconds(), "check running") })
	if err != nil {
		return nil, err
	}
	c.Mark(op.SegExecution)

	o := res.Outcome
	out := &RunCheckResult{
		Identity: id.Digest, Focused: focused, Path: pathName, Reused: res.Reused, Joined: res.Joined, Shared: key.Shared, NotShared: ident.NotShared,
		OriginalRun: OriginalRun{RepoID: o.RepoID, Pid: o.Pid, JobID: o.JobID, StartedAt: o.StartedAt, FinishedAt: o.FinishedAt, Resources: o.Resources},
		ExitCode:    o.ExitCode, Passed: o.Passed, TimedOut: o.TimedOut, Cancelled: o.Cancelled,
		Stdout: o.Stdout, Stderr: o.Stderr, Summary: o.Summary,
	}
	if o.Path != "" {
		out.Path = o.Path
	}
	if o.Fleet != nil {
		fr := *o.Fleet
		switch {
		case res.Reused: // this node's own copy of the fleet's evidence
			fr.Source = "reused"
		case fr.Source == "reused":
			out.Reused = true
		case fr.Source == "joined":
			out.Joined = true
		}
		out.Fleet = &fr
	}
	if o.Escalated != nil {
		// Handed over to a durable job: nothing has ended yet.
		out.Escalated = &Escalated{JobID: o.Escalated.JobID, Reason: o.Escalated.Reason}
	} else if !o.Passed {
		out.SandboxHints = walls(ctx, env, e, args.Cwd, d, out.Path, o)
	}
	switch {
	case out.Reused:
	case args.Rerun:
		out.MissReasons = []string{"rerun: run again as asked; earlier evidence was not looked at"}
	default:
		out.MissReasons = explainMiss(ctx, c, root.Path(), res.Previous, cur)
	}
	if out.Fleet != nil && !out.Reused {
		// Fleet evidence refused on the way (a blob failing its digest).
		out.MissReasons = append(out.MissReasons, out.Fleet.Refused...)
	}
	c.SetRoute(out.Path)
	c.FinishIn(op.SegReceipt)
	return out, nil
}

// checkEffects validates and normalises declared effects: only the
// known ones (Effects), so a misspelt effect is an error, never a check
// that silently lacks what it asked for.
func checkEffects(in []string) (effects []string, writes, network bool, err error) {
	for i, eff := range in {
		eff = strings.TrimSpace(eff)
		switch eff {
		case EffectWorkspaceWrite:
			writes = true
		case EffectNetwork:
			network = true
		default:
			return nil, false, false, errs.New(errs.InvalidArgument, "effects[%d] %q is not an effect a check can declare: the valid ones are %s",
				i, in[i], strings.Join(Effects(), ", ")).With("valid", Effects())
		}
		effects = append(effects, eff)
	}
	return effects, writes, network, nil
}

// policyOf adjusts a check's sandbox policy to its declared effects: the
// checkout writable for workspace_write, outside network for network.
func policyOf(root string, writes, network bool) func(*sandbox.Policy) {
	return func(p *sandbox.Policy) {
		if writes {
			p.Writable = []string{root}
		}
		p.Network = network
	}
}

// declared reports whether the check of run declares effect: its
// definition (checkid.Parts.Definition) is what the gate judged.
func declared(run messages.CheckRun, effect string) bool {
	var parts checkid.Parts
	if err := json.Unmarshal(run.Parts, &parts); err != nil {
		return false
	}
	return slices.Contains(parts.Definition.Effects, effect)
}

// walls returns the walls of the sandbox a failed check ran into, judged
// against the policy it ran with: the check profile on the Fast Path, a
// job's on the durable one.
func walls(ctx context.Context, env *op.Env, e runtime.RepoEntry, cwd string, d Defined, path string, o messages.CheckOutcome) []wall.Diagnosis {
	profile := sandbox.Check
	if path == "durable" {
		profile = sandbox.Job
	}
	root := e.Repo.Root
	dir := root
	if cwd != "" && cwd != "." {
		dir = filepath.Join(root, filepath.FromSlash(cwd))
	}
	return env.Jobs.Walls(ctx, env, wall.ToolRunCheck, profile, e, policyOf(root, d.Writes, d.Network), dir, o.ExitCode, o.Stderr+"\n"+o.Stdout)
}

// exclude leaves secret paths (of the root's own list) and harnessd's own
// artefacts out of a check's content revision.
func exclude(deny *pathsafe.Denylist) func(rel string) bool {
	return func(rel string) bool {
		if _, ok := deny.Match(rel); ok {
			return true
		}
		return rel == ".harnessd" || strings.HasPrefix(rel, ".harnessd/") || patch.IsTempName(path.Base(rel))
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

// RunnerConfig configures Runner. Zero fields mean the defaults.
type RunnerConfig struct {
	// FastCap is the Fast Path cap: the longest a focused check runs as
	// one Fast Path process before it is handed over to a durable job
	// (0 = 15 s, the Fast Path's maximum timeout).
	FastCap time.Duration
}

func (c RunnerConfig) fastCap() time.Duration {
	if c.FastCap <= 0 {
		return focusedTimeoutMs * time.Millisecond
	}
	return c.FastCap
}

// Runner returns the runner of the checks actor: a focused check is one
// bounded Fast Path process, an unfocused one a durable job. A focused
// check the Fast Path cap stops (not a timeout of the caller's own) is
// handed over to a durable job in the same single flight: restarted
// there, since the Fast Path process runs under the check profile with
// proc.Run's timeout and process group and cannot be adopted by the job
// supervision. The runner reports the job at once (escalate) and waits
// for it; the job's outcome is the check's. The spec is data; this is the
// code that runs it.
func Runner(p *op.Pipeline, cfg RunnerConfig) actors.CheckRunner {
	fastCap := cfg.fastCap()
	return func(ctx context.Context, run messages.CheckRun, escalate func(messages.CheckOutcome)) (messages.CheckOutcome, error) {
		if run.Spec.Durable {
			o, err := runDurable(ctx, p, run, run.Spec.TimeoutMs, nil)
			o.RepoID, o.Path = run.Spec.RepoID, "durable"
			return o, err
		}
		b := budgetOf(run.Spec, fastCap)
		o, err := runFast(ctx, p.Env(), run.Spec, b.fast, declared(run, EffectNetwork))
		if err != nil || !b.escalates(o) || ctx.Err() != nil {
			return o, err
		}
		return escalateRun(ctx, p, run, b, o, escalate)
	}
}

// budget is how long a focused check may run on the Fast Path, and
// whether and for how long it continues as a durable job when that ends.
type budget struct {
	fast time.Duration // the Fast Path process's timeout
	// durableMs is the timeout of the durable job the check continues as
	// when the Fast Path cap stops it; 0 = it times out there (the
	// caller's own timeout stopped it).
	durableMs int
	capMs     int
}

// budgetOf is the budget of the focused check s under the Fast Path cap:
// the Fast Path runs it for its timeout or the cap, whichever is shorter.
// The cap hands it over to a durable job with the Durable Path's default
// timeout when the caller set none, else with the caller's timeout; a
// timeout of the caller's own no longer than the cap is the caller's
// limit, and reaching it is a time-out.
func budgetOf(s messages.CheckSpec, fastCap time.Duration) budget {
	own := time.Duration(s.TimeoutMs) * time.Millisecond
	b := budget{fast: min(own, fastCap), capMs: int(fastCap / time.Millisecond)}
	switch {
	case s.DefaultTimeout:
		b.durableMs = max(unfocusedTimeoutMs, s.TimeoutMs)
	case fastCap < own:
		b.durableMs = s.TimeoutMs
	}
	return b
}

// escalates reports whether the Fast Path outcome o is the cap stopping
// a check that continues as a durable job.
func (b budget) escalates(o messages.CheckOutcome) bool {
	return b.durableMs > 0 && o.TimedOut && !o.Cancelled
}

// escalationReason says why a check continues as job jobID, in words an
// agent acts on.
func escalationReason(fastCap time.Duration, jobID string) string {
	return fmt.Sprintf("the focused check reached the Fast Path cap of %s; it continues as durable job %s (restarted there: the Fast Path process cannot be adopted) - follow it with job_status",
		fastCap, jobID)
}

// escalateRun restarts a focused check the Fast Path cap stopped as a
// durable job: once the job exists, it is audited and reported (escalate)
// with fast, the Fast Path outcome, as the interim answer; then the job's
// outcome is the check's.
func escalateRun(ctx context.Context, p *op.Pipeline, run messages.CheckRun, b budget, fast messages.CheckOutcome,
	escalate func(messages.CheckOutcome)) (messages.CheckOutcome, error) {
	fastCap := time.Duration(b.capMs) * time.Millisecond
	env := p.Env()
	o, err := runDurable(ctx, p, run, b.durableMs, func(j messages.Job) {
		reason := escalationReason(fastCap, j.ID)
		if env.Gov != nil {
			env.Gov.AuditAppend(audit.Entry{Kind: audit.KindCheck, Operation: "run_check", RepoID: run.Spec.RepoID, RequestID: j.RequestID,
				Actor: "daemon", Outcome: "escalated", Reason: reason, Details: map[string]string{
					"identity": run.Key.Identity, "job_id": j.ID, "from": "fast", "to": "durable",
					"fast_path_cap_ms": strconv.Itoa(b.capMs), "fast_path_pid": strconv.Itoa(fast.Pid)}})
		}
		if escalate != nil {
			escalate(messages.CheckOutcome{RepoID: run.Spec.RepoID, JobID: j.ID, StartedAt: fast.StartedAt, Path: "durable", ExitCode: -1,
				Escalated: &messages.CheckEscalation{JobID: j.ID, Reason: reason, CapMs: b.capMs}})
		}
	})
	o.RepoID, o.Path = run.Spec.RepoID, "durable"
	return o, err
}

// confined returns the spec of a check's process: its environment (git's
// repository programs neutralised) and the sandbox's check profile, with
// outside network when the check declares it.
func confined(ctx context.Context, env *op.Env, s messages.CheckSpec, network bool, spec *proc.Spec) error {
	cmdEnv, err := op.CommandEnv(spec.Dir)
	if err != nil {
		return err
	}
	spec.Env = cmdEnv
	e, err := env.Repo(s.RepoID)
	if err != nil {
		return err
	}
	prep, err := env.Confine(ctx, sandbox.Check, e, policyOf(s.Root, s.Writes, network))
	if err != nil {
		return err
	}
	op.ApplyConfinement(spec, prep)
	return nil
}

// runFast runs a focused check: one process bounded by timeout, output
// redacted before it can become evidence.
func runFast(ctx context.Context, env *op.Env, s messages.CheckSpec, timeout time.Duration, network bool) (messages.CheckOutcome, error) {
	dir := s.Root
	if s.Cwd != "" && s.Cwd != "." {
		dir = filepath.Join(s.Root, filepath.FromSlash(s.Cwd))
	}
	started := time.Now().UTC()
	spec := proc.Spec{Argv: s.Argv, Dir: dir, Timeout: timeout, MaxStdout: maxOutput, MaxStderr: maxOutput}
	if err := confined(ctx, env, s, network, &spec); err != nil {
		return messages.CheckOutcome{}, err
	}
	r, usage, err := runSampled(ctx, spec)
	if err != nil {
		if spec.Confine != nil {
			spec.Confine.Done()
		}
		return messages.CheckOutcome{}, err
	}
	o := messages.CheckOutcome{
		RepoID: s.RepoID, Pid: r.Pid, StartedAt: started, FinishedAt: time.Now().UTC(), Path: "fast",
		ExitCode: r.ExitCode, TimedOut: r.TimedOut, Cancelled: r.Cancelled, Resources: usage,
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

// runDurable runs a check as a durable job (the Durable Path, env.Jobs)
// with a timeout of timeoutMs, calls started (if set) once the job exists,
// and waits for it, reporting the job as the check's outcome. When ctx
// ends first (the check actor stops), the job is cancelled.
func runDurable(ctx context.Context, p *op.Pipeline, run messages.CheckRun, timeoutMs int, started func(messages.Job)) (messages.CheckOutcome, error) {
	s := run.Spec
	c, err := p.NewCall(s.RepoID)
	if err != nil {
		return messages.CheckOutcome{}, err
	}
	jobs := c.Env.Jobs
	startedAt := time.Now().UTC()
	network := declared(run, EffectNetwork)
	spec := op.JobSpec{Argv: s.Argv, Cwd: s.Cwd, TimeoutS: (timeoutMs + 999) / 1000, Isolation: messages.JobIsolationNone, Writes: s.Writes,
		Network: network, RequestID: op.CheckJobPrefix + shortIdentity(run.Key.Identity) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	spec.Hashed = map[string]any{"argv": s.Argv, "cwd": s.Cwd, "timeout_s": spec.TimeoutS, "writes": s.Writes, "network": network, "check": run.Key.Identity}
	j, err := jobs.Start(ctx, c, spec) // the final record, once the loop ends: its logs hold the output
	if err != nil {
		return messages.CheckOutcome{}, err
	}
	if started != nil {
		started(j)
	}
	for !op.JobFinal(j.State) {
		if err := ctx.Err(); err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = c.Env.RT.Jobs.Cancel(cctx, j.ID)
			cancel()
			return messages.CheckOutcome{JobID: j.ID, StartedAt: startedAt, FinishedAt: time.Now().UTC(), ExitCode: -1, Cancelled: true}, nil
		}
		next, err := jobs.Wait(ctx, c, j.ID, time.Minute)
		if err != nil {
			if ctx.Err() != nil {
				continue // cancel the job on the next turn
			}
			return messages.CheckOutcome{}, errs.Wrap(errs.CodeOf(err), err, "wait for check job %s: %v", j.ID, err)
		}
		j = next
	}
	o := messages.CheckOutcome{JobID: j.ID, Pid: j.Pid, StartedAt: startedAt, FinishedAt: time.Now().UTC(), ExitCode: -1,
		TimedOut: j.TimedOut, Cancelled: j.State == messages.JobCancelled, Resources: j.Resources}
	// Head and tail of each stream from the job's redacted logs, as the
	// Fast Path keeps them.
	if out, errOut := jobs.Streams(j, maxOutput); out != nil || errOut != nil {
		if out != nil {
			o.Stdout = out.Text
		}
		if errOut != nil {
			o.Stderr = errOut.Text
		}
	} else {
		o.Stdout = j.Tail
	}
	if !j.StartedAt.IsZero() {
		o.StartedAt = j.StartedAt.UTC()
	}
	if !j.FinishedAt.IsZero() {
		o.FinishedAt = j.FinishedAt.UTC()
	}
	if j.ExitCode != nil {
		o.ExitCode = *j.ExitCode
	}
	o.Passed = j.State == messages.JobSucceeded && o.ExitCode == 0 && !o.TimedOut
	if !o.Passed {
		o.Summary = joblog.Summarize(o.Stdout+"\n"+o.Stderr, 0)
		if len(j.Summary) > 0 && strings.HasPrefix(j.Summary[0], "killed:") {
			o.Summary = append([]string{j.Summary[0]}, o.Summary...)
		}
		if len(o.Summary) == 0 {
			o.Summary = j.Summary
		}
	}
	// A check that failed by its own exit status reports its own stderr,
	// empty or not, as on the Fast Path; one that never ran, was killed
	// or timed out says why there.
	ownFailure := j.Error != nil && j.Error.Code == string(errs.JobFailed) && j.ExitCode != nil && *j.ExitCode > 0
	if j.Error != nil && o.Stderr == "" && !ownFailure {
		o.Stderr = j.Error.Code + ": " + j.Error.Message
	}
	return o, nil
}
