package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/joblog"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/supervisors"
)

func init() {
	registerOps(func() []Op {
		return []Op{
			def("run_check", "Run a check (tests, vet, lint) with semantic identity: identical concurrent calls share one process, and a passing result is reused while the content, definition and environment are unchanged (reused: true, with the original run). Focused checks run on the Fast Path (15 s); unfocused ones as a durable job. miss_reasons explain why earlier evidence did not apply.", false, (*Harness).RunCheck),
		}
	})
	onOpen(func(ctx context.Context, h *Harness) error {
		checkProbes.Store(h, checkid.NewEnvProbe(nil))
		return nil
	})
	onClose(func(h *Harness) { checkProbes.Delete(h) })
	onStatus(func(ctx context.Context, h *Harness, st *StatusResult) {
		s, err := request[messages.CheckStatsReply](ctx, h, h.child(supervisors.ChecksName), messages.CheckStats{})
		if err != nil {
			return
		}
		if st.Extra == nil {
			st.Extra = map[string]any{}
		}
		st.Extra["checks"] = s
	})
}

// checkProbes holds the EnvProbe of each open Harness: tool version probes
// are cached for the life of the Harness.
var checkProbes sync.Map // *Harness -> *checkid.EnvProbe

func (h *Harness) envProbe() *checkid.EnvProbe {
	if p, ok := checkProbes.Load(h); ok {
		return p.(*checkid.EnvProbe)
	}
	p, _ := checkProbes.LoadOrStore(h, checkid.NewEnvProbe(nil))
	return p.(*checkid.EnvProbe)
}

// Check limits.
const (
	checkFocusedTimeoutMs   = 15_000
	checkUnfocusedTimeoutMs = 600_000
	checkMaxOutput          = 64 << 10
	checkWaitMargin         = 30 * time.Second
	checkProgressEvery      = 2 * time.Second
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
	Meta
}

// durableCheckRequest is an unfocused check to run as a durable job.
type durableCheckRequest struct {
	RepoID    string
	Argv      []string
	Cwd       string
	TimeoutS  int
	Writes    bool
	RequestID string
}

// durableCheck runs a check as a durable job and waits for it; nil while
// the jobs component is not built in (run_check then answers
// ROUTE_DURABLE_REQUIRED for unfocused checks).
var durableCheck func(ctx context.Context, h *Harness, req durableCheckRequest) (messages.CheckOutcome, error)

// RunCheck runs a check with single-flight and evidence reuse by semantic
// identity.
func (h *Harness) RunCheck(ctx context.Context, args RunCheckArgs) (*RunCheckResult, error) {
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
	effects, writes, err := checkEffects(args.Effects)
	if err != nil {
		return nil, err
	}
	root, err := h.fast.root(e)
	if err != nil {
		return nil, err
	}
	focused, _ := classify.Focus(args.Argv)
	timeoutMs := args.TimeoutMs
	if timeoutMs == 0 {
		timeoutMs = checkUnfocusedTimeoutMs
		if focused {
			timeoutMs = checkFocusedTimeoutMs
		}
	}
	tr.mark(segRouting)

	durable := false
	g, gerr := h.gate(ctx, gateInput{Tool: "run_check", Repo: &e, Root: root, Argv: args.Argv, TimeoutMs: timeoutMs, Writes: writes, Args: args})
	if gerr != nil {
		// An escalation is run_check's own durable path; anything else
		// (reject, policy, approval, loop) is the answer.
		if g.Decision.Outcome != mediate.Escalate || durableCheck == nil {
			return nil, gerr
		}
		durable = true
	}
	if err := root.CheckArgv(args.Argv); err != nil {
		return nil, err
	}
	dir, _, err := commandDir(root, args.Cwd)
	if err != nil {
		return nil, err
	}
	tr.mark(segPolicy)

	environ := proc.ScrubEnv(os.Environ(), nil)
	rev, err := checkid.ContentRevision(ctx, h.fast.git, root.Path(), checkid.Options{Exclude: h.checkExclude})
	if err != nil {
		return nil, err
	}
	env, err := h.envProbe().Fingerprint(ctx, args.Argv, environ)
	if err != nil {
		return nil, err
	}
	defn := checkid.Definition{Argv: args.Argv, Cwd: args.Cwd, Effects: effects, TimeoutMs: timeoutMs}
	id := checkid.Compute(rev, defn, env)
	cur := checkid.Parts{Revision: rev, Definition: defn, Env: env}
	partsJSON, err := json.Marshal(cur)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "encode check parts: %v", err)
	}
	key := messages.CheckKey{RepoID: e.Repo.ID, CommonDir: e.Repo.CommonDir, Identity: id.Digest, Shared: rev.Clean && !writes && e.Repo.CommonDir != ""}
	tr.mark(segSnapshot)

	pathName := "fast"
	var exec messages.CheckExec
	wait := time.Duration(timeoutMs)*time.Millisecond + checkWaitMargin
	if durable {
		pathName = "durable"
		req := durableCheckRequest{RepoID: e.Repo.ID, Argv: args.Argv, Cwd: args.Cwd, TimeoutS: (timeoutMs + 999) / 1000, Writes: writes,
			RequestID: "check-" + shortIdentity(id.Digest) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
		exec = func(ctx context.Context) (messages.CheckOutcome, error) {
			out, err := durableCheck(ctx, h, req)
			out.RepoID, out.Path = e.Repo.ID, "durable"
			return out, err
		}
		wait += checkWaitMargin
	} else {
		exec = h.fastCheckExec(e.Repo.ID, args.Argv, dir, time.Duration(timeoutMs)*time.Millisecond, environ)
	}
	res, err := h.awaitCheck(ctx, messages.CheckRun{Key: key, DefinitionDigest: id.Definition, Parts: partsJSON, Exec: exec}, wait)
	if err != nil {
		return nil, err
	}
	tr.mark(segExecution)

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
		out.MissReasons = h.explainCheckMiss(ctx, root.Path(), res.Previous, cur)
	}
	out.Meta = Meta{Route: out.Path, Latency: tr.finish(segReceipt, args.IncludeLatencyBreakdown)}
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

// checkExclude leaves secret paths and harnessd's own artefacts out of a
// check's content revision.
func (h *Harness) checkExclude(rel string) bool {
	if _, ok := h.fast.deny.Match(rel); ok {
		return true
	}
	return rel == ".harnessd" || strings.HasPrefix(rel, ".harnessd/") || strings.Contains(path.Base(rel), ".harnessd-tmp-")
}

// fastCheckExec runs a focused check on the Fast Path: one bounded process,
// output redacted before it can become evidence.
func (h *Harness) fastCheckExec(repoID string, argv []string, dir string, timeout time.Duration, environ []string) messages.CheckExec {
	argv = append([]string(nil), argv...)
	return func(ctx context.Context) (messages.CheckOutcome, error) {
		started := time.Now().UTC()
		r, err := proc.Run(ctx, proc.Spec{Argv: argv, Dir: dir, Env: environ, Timeout: timeout, MaxStdout: checkMaxOutput, MaxStderr: checkMaxOutput})
		if err != nil {
			return messages.CheckOutcome{}, err
		}
		o := messages.CheckOutcome{
			RepoID: repoID, Pid: r.Pid, StartedAt: started, FinishedAt: time.Now().UTC(), Path: "fast",
			ExitCode: r.ExitCode, TimedOut: r.TimedOut, Cancelled: r.Cancelled,
		}
		o.Passed = r.ExitCode == 0 && !r.TimedOut && !r.Cancelled && r.Signal == ""
		o.Stdout, _ = h.fast.redactor.String(r.Stdout.Text)
		o.Stderr, _ = h.fast.redactor.String(r.Stderr.Text)
		if !o.Passed {
			o.Summary = joblog.Summarize(o.Stdout+"\n"+o.Stderr, 0)
		}
		return o, nil
	}
}

// awaitCheck sends run to the checks supervisor and waits up to wait for
// the answer (longer than RequestTimeout: the answer comes when the run
// ends), reporting progress meanwhile.
func (h *Harness) awaitCheck(ctx context.Context, run messages.CheckRun, wait time.Duration) (messages.CheckResult, error) {
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d < wait {
			wait = d
		}
	}
	if wait <= 0 {
		return messages.CheckResult{}, errs.New(errs.Timeout, "deadline passed before the check was sent")
	}
	f := h.system.Root.RequestFuture(h.child(supervisors.ChecksName), run, wait)
	type answer struct {
		v   any
		err error
	}
	done := make(chan answer, 1)
	go func() { v, err := f.Result(); done <- answer{v, err} }()
	start := time.Now()
	tick := time.NewTicker(checkProgressEvery)
	defer tick.Stop()
	for {
		select {
		case a := <-done:
			switch {
			case errors.Is(a.err, actor.ErrTimeout):
				return messages.CheckResult{}, errs.New(errs.Timeout, "check %s did not finish within %s", shortIdentity(run.Key.Identity), wait)
			case errors.Is(a.err, actor.ErrDeadLetter):
				return messages.CheckResult{}, errs.New(errs.Unavailable, "checks are not running")
			case a.err != nil:
				return messages.CheckResult{}, errs.Wrap(errs.Internal, a.err, "run check: %v", a.err)
			}
			switch r := a.v.(type) {
			case messages.CheckResult:
				return r, nil
			case messages.Failed:
				return messages.CheckResult{}, r.Err
			}
			return messages.CheckResult{}, errs.New(errs.Internal, "run check: unexpected reply %T", a.v)
		case <-tick.C:
			reportProgress(ctx, time.Since(start).Seconds(), wait.Seconds(), "check running")
		case <-ctx.Done():
			// The run goes on for the other callers; its evidence will
			// answer the next identical call.
			return messages.CheckResult{}, errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "stopped waiting for check %s: %v", shortIdentity(run.Key.Identity), ctx.Err())
		}
	}
}

// explainCheckMiss says why no evidence was reused.
func (h *Harness) explainCheckMiss(ctx context.Context, root string, prev *messages.CheckEvidence, cur checkid.Parts) []string {
	if prev == nil {
		return []string{"no earlier passing run of this check definition in this repository"}
	}
	var p checkid.Parts
	if err := json.Unmarshal(prev.Parts, &p); err != nil {
		return []string{"the earlier evidence cannot be compared: " + err.Error()}
	}
	reasons := checkid.ExplainMiss(ctx, h.fast.git, root, p, cur)
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
