// Package job holds the Durable Path operations: job_start, job_status,
// job_logs, job_cancel, job_list and job_clean.
package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/joblog"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/worktree"
	"github.com/harnessd/harnessd/messages"
)

// Job limits.
const (
	timeoutDefault = 600
	timeoutMax     = 86400
	retryMax       = 5
	waitMax        = 600
	listDefault    = 50
	listMax        = 1000
	logChunk       = 256 << 10
)

// Ops returns the job operations.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[JobStartArgs]{Name: "job_start", Output: JobResult{}, Destructive: true, Idempotent: true, Draw: runs.Draw{Jobs: 1},
			Route: route.Job, Toolset: op.Core, Roles: op.WriteRoles, Topics: []string{"test", "build"}, ChangesCheckout: true,
			Description: "Start work that takes longer than ~15 s, writes, or must survive a restart (suites, builds): it runs in the background; poll its job_id with job_status. A one-off read: run_command; a focused test: run_check. Example: {\"request_id\":\"j1\",\"argv\":[\"make\",\"test\"]}",
			Repo:        func(a JobStartArgs) string { return a.RepoID }, Prepare: start}),
		op.Def(op.Spec[JobStatusArgs]{Name: "job_status", Output: JobResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles, NoRepo: true,
			Description: "Follow a job from job_start or run_check: its state and, once ended, exit code, failure summary, the head and tail of its output, and sandbox_hints when the sandbox stopped it. wait_s waits for the end. Example: {\"job_id\":\"job_1\",\"wait_s\":120}",
			Prepare:     status}),
		op.Def(op.Spec[JobLogsArgs]{Name: "job_logs", Output: JobLogsResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Jobs, Roles: op.ReadRoles, NoRepo: true,
			Description: "Read a job's stdout or stderr log beyond what job_status shows: from a byte offset, or its last bytes with tail; eof once the job ended and the offset reached the end. Example: {\"job_id\":\"job_1\",\"stream\":\"stderr\",\"tail\":4000}",
			Prepare:     logs}),
		op.Def(op.Spec[JobCancelArgs]{Name: "job_cancel", Output: JobResult{}, Destructive: true, Idempotent: true,
			Route: route.Signal, Toolset: op.Jobs, Roles: op.WriteRoles,
			Description: "Stop a job you no longer need: a queued one ends at once, a running one once its processes are killed; a finished job stays as it is. Example: {\"job_id\":\"job_1\"}",
			Prepare:     cancel}),
		op.Def(op.Spec[JobListArgs]{Name: "job_list", Output: JobListResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Jobs, Roles: op.ReadRoles, NoRepo: true,
			Description: "List jobs, newest first, to find one whose job_id you lost or to see what still runs. Example: {\"state\":\"running\"}",
			Prepare:     list}),
		op.Def(op.Spec[JobCleanArgs]{Name: "job_clean", Output: JobCleanResult{}, Destructive: true, Idempotent: true,
			Route: route.Readonly, Toolset: op.Jobs, Roles: op.OperatorRoles,
			Description: "Remove the worktrees kept for inspection after failed, cancelled or interrupted jobs, once nobody needs them (they go by themselves 24 h after the job ended). Example: {\"older_than_s\":3600}",
			Prepare:     clean}),
	}
}

// Start starts a job in c's repository under the request ledger (a retry
// with the same request_id returns the same job, Replayed). It crosses no
// gate: job_start's own gate, or run_check's, decided before.
func Start(ctx context.Context, c *op.Call, s op.JobSpec) (*JobResult, error) {
	j, replayed, err := startJob(ctx, c, s)
	if err != nil {
		return nil, err
	}
	r := Result(j)
	r.Replayed = replayed
	if f := c.Env.FleetJobs; f != nil {
		_, r.Fleet, _ = f.Status(ctx, j.ID, j, nil, 0)
	}
	return r, nil
}

// startJob is Start returning the job's record, and whether an earlier
// start of the same request_id made it.
func startJob(ctx context.Context, c *op.Call, s op.JobSpec) (messages.Job, bool, error) {
	if s.RequestID == "" {
		return messages.Job{}, false, errs.New(errs.RequestIDRequired, "job_start needs a request_id (any unique string up to 255 characters) so a retry returns the same job instead of starting another")
	}
	if err := ledger.ValidateRequestID(s.RequestID); err != nil {
		return messages.Job{}, false, err
	}
	hash, err := c.InputHash("job_start", s.Hashed)
	if err != nil {
		return messages.Job{}, false, errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	env := c.Env
	c.SetRoute("durable")
	if env.Fence != nil {
		if err := env.Fence(); err != nil { // a fleet node without its session starts nothing
			return messages.Job{}, false, err
		}
	}
	begun, err := env.Ledger.Begin(ctx, messages.LedgerBegin{RequestID: s.RequestID, Operation: "job_start", InputHash: hash})
	if err != nil {
		return messages.Job{}, false, err
	}
	if begun.Replay {
		var stored struct {
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal(begun.Entry.Result, &stored); err != nil || stored.JobID == "" {
			return messages.Job{}, false, errs.New(errs.Internal, "stored result of request %q has no job_id", s.RequestID)
		}
		j, err := env.RT.Jobs.Get(ctx, stored.JobID)
		if err != nil {
			return messages.Job{}, false, err
		}
		c.FinishIn(op.SegSnapshot)
		return j, true, nil
	}
	id := newJobID(env.Now())
	if env.FleetJobs != nil { // a fleet: the request may have started a job on another node
		fs, err := env.FleetJobs.Start(ctx, c, s, hash, id)
		if err != nil || fs.Existing != nil {
			if aerr := env.Ledger.Abandon(context.Background(), s.RequestID, hash); aerr != nil {
				env.Logger.Warn("ledger: abandon a fleet job's local entry")
			}
			if err != nil {
				return messages.Job{}, false, err
			}
			return *fs.Existing, true, nil
		}
	}
	// The job's record and the request's completion are one synced
	// transaction (the jobs actor writes both): a crash leaves either
	// neither (the retry answers REQUEST_OUTCOME_UNKNOWN, no job) or both
	// (the retry replays the job), never a job behind an unknown retry.
	stored, _ := json.Marshal(map[string]string{"job_id": id})
	done, err := env.Ledger.Completion(ctx, s.RequestID, stored)
	if err != nil {
		if ferr := env.Ledger.Fail(context.Background(), s.RequestID, err); ferr != nil {
			env.Logger.Warn("ledger: record failure")
		}
		return messages.Job{}, false, err
	}
	e := c.Repo
	j, err := env.RT.Jobs.Submit(ctx, messages.Job{
		ID: id, RepoID: e.Repo.ID, CheckoutID: e.Repo.CheckoutID, Root: e.Repo.Root, Cwd: s.Cwd,
		Argv: append([]string(nil), s.Argv...), RequestID: s.RequestID, TimeoutS: s.TimeoutS,
		Isolation: s.Isolation, Writes: s.Writes, Network: s.Network, RetryMax: s.RetryMax, CallerRunID: c.Caller.RunID,
	}, done)
	if env.FleetJobs != nil {
		env.FleetJobs.Submitted(id, j, err)
	}
	if err != nil {
		// Refused before the transaction, or not answered (the record
		// may be stored with its completion; Fail then finds the
		// request succeeded and changes nothing).
		if ferr := env.Ledger.Fail(context.Background(), s.RequestID, err); ferr != nil {
			env.Logger.Warn("ledger: record failure")
		}
		return messages.Job{}, false, err
	}
	op.CrashAt("after-job-record")
	return j, false, nil
}

func start(ctx context.Context, c *op.Call, args JobStartArgs) (*op.Plan, error) {
	if len(args.Argv) == 0 || args.Argv[0] == "" {
		return nil, errs.New(errs.InvalidArgument, "argv is empty: give the command and its arguments")
	}
	timeout := args.TimeoutS
	switch {
	case timeout < 0 || timeout > timeoutMax:
		return nil, errs.New(errs.InvalidArgument, "timeout_s %d: must be between 1 and %d", timeout, timeoutMax)
	case timeout == 0:
		timeout = timeoutDefault
	}
	iso := args.Isolation
	switch iso {
	case "":
		iso = messages.JobIsolationNone
	case messages.JobIsolationNone, messages.JobIsolationWorktree:
	default:
		return nil, errs.New(errs.InvalidArgument, "isolation %q: must be none or worktree", iso)
	}
	retry := 0
	if args.Retry != nil {
		if args.Retry.Max < 0 || args.Retry.Max > retryMax {
			return nil, errs.New(errs.InvalidArgument, "retry.max %d: must be between 0 and %d", args.Retry.Max, retryMax)
		}
		retry = args.Retry.Max
	}
	_, cwd, err := c.Root.Dir(args.Cwd)
	if err != nil {
		return nil, err
	}
	var paths []string
	if cwd != "" {
		paths = []string{cwd}
	}
	hashed := args
	hashed.RequestID = ""
	gate := govern.Input{Argv: args.Argv, Paths: paths, TimeoutMs: timeout * 1000, Writes: args.Writes, Args: hashed,
		Confined: c.Env.Confines(sandbox.Job), Network: args.Network}
	// A command the router rejects gets its reasons (the gate crossing
	// refuses it first); one that passes has its argv checked like
	// run_command's: no secret path, nothing outside the root, named on
	// the command line.
	d := route.Decide(route.Request{Tool: "job_start", Kind: c.Op.Route, Argv: args.Argv, Writes: args.Writes, Confined: gate.Confined})
	if d.Mode == route.Reject {
		return &op.Plan{Gate: gate, Run: func(context.Context) (any, error) { return nil, op.RouteError(d) }}, nil
	}
	// git reset --hard, branch -D, tag -f: harnessd performs them itself
	// (gitstate.go); a form it does not support is refused before anyone
	// is asked.
	_, native, gsErr := parseGitState(args.Argv)
	if err := gsErr; native && (err != nil || iso == messages.JobIsolationWorktree || retry > 0) {
		switch {
		case err != nil:
		case retry > 0:
			// A second attempt after a restart would resolve HEAD~1
			// from where the first left HEAD: never retried.
			err = errs.New(errs.InvalidArgument, "%s is not retried after a restart (a relative revision would move twice): leave retry out", args.Argv[1])
		default:
			err = errs.New(errs.InvalidArgument, "%s changes the checkout's own git state: run it without isolation", args.Argv[1])
		}
		return nil, err
	}
	// A remote write (npm publish, gh pr merge, a deploy) runs with the
	// network: for that job only, once a person approved it (the gate's
	// remote-write rule always asks), narrowed where the sandbox can.
	network := args.Network || (d.Effect != nil && d.Effect.Kind == classify.RemoteWrite)
	gate.Network = network
	// Destructive work in the checkout writes it: under the durable lease,
	// never in a copy-on-write layer that would drop what it removed.
	// So does git-state work harnessd performs itself (gitstate.go: the
	// path forms of git checkout and restore are workspace writes too).
	writes := args.Writes || native || (d.Effect != nil && d.Effect.Kind == classify.WorkspaceDelete)
	gate.Writes = writes
	if err := c.Root.CheckArgv(args.Argv); err != nil {
		return nil, c.Refuse(gate, err)
	}
	// A job whose undo could not be kept is refused now, before a person
	// is asked and before it is queued (undoEstimate).
	if writes && iso == messages.JobIsolationNone {
		if err := undoEstimate(ctx, c.Env, c.Repo.Repo.Root, args.RequestID, args.Argv, cwd); err != nil {
			return nil, c.Refuse(gate, err)
		}
	}
	spec := op.JobSpec{Argv: args.Argv, Cwd: cwd, TimeoutS: timeout, Isolation: iso, Writes: writes, Network: network, RetryMax: retry, RequestID: args.RequestID, Hashed: hashed}
	c.SetRoute("durable")
	return &op.Plan{Gate: gate, Run: func(ctx context.Context) (any, error) { return Start(ctx, c, spec) }}, nil
}

// WorktreeSkip returns what a job's worktree must not carry over from its
// checkout (a dependency of the jobs actor): the secret files and
// directories (known to the secrets cache, or named like one now), the
// other names of hard-linked secret files, and any untracked file with
// several links. A copy would put the secrets in the data dir and, under a
// harmless name, out of the sandbox's reach.
func WorktreeSkip(env *op.Env) actors.WorktreeSkipper {
	return func(ctx context.Context, root string) (worktree.Skip, error) {
		deny := env.DenyFor(root)
		skip := worktree.Skip{File: func(rel string, fi fs.FileInfo) bool {
			if _, ok := deny.Match(rel); ok {
				return true
			}
			return pathsafe.HardLinked(fi)
		}}
		if env.Secrets == nil {
			return skip, nil
		}
		set, err := env.Secrets.Get(ctx, root)
		if err != nil {
			return skip, err
		}
		skip.Paths = append(append(append([]string(nil), set.Files...), set.Dirs...), set.Links...)
		return skip, nil
	}
}

// Confiner returns the confinement of durable jobs (a dependency of the
// jobs actor): the sandbox's job profile over the job's checkout or
// worktree, writable only where the job may write (its worktree, or the
// checkout under its durable lease), the network only when allowed, the
// output redacted with the checkout's known secret values.
func Confiner(env *op.Env) actors.JobConfiner {
	return func(ctx context.Context, j messages.Job, dir string) (actors.JobConfinement, error) {
		cmdEnv, err := op.CommandEnv(dir)
		if err != nil {
			return actors.JobConfinement{}, err
		}
		out := actors.JobConfinement{Env: cmdEnv, Redactor: env.RedactorFor(ctx, j.Root)}
		e, err := env.Repo(j.RepoID)
		if err != nil {
			return out, err
		}
		root := j.Root
		if j.Worktree != "" {
			root = j.Worktree
			e.Repo.Root = j.Worktree
		}
		prep, err := env.Confine(ctx, sandbox.Job, e, policyOf(j, root))
		if err != nil {
			return out, err
		}
		if prep != nil {
			out.Confine, out.PidsMax, out.Env = prep, prep.PidsMax(), prep.Env(cmdEnv)
		}
		return out, nil
	}
}

// JobStatusArgs are the arguments of job_status.
type JobStatusArgs struct {
	JobID string `json:"job_id" jsonschema:"from job_start"`
	WaitS int    `json:"wait_s,omitempty" jsonschema:"seconds to wait for the end (default 0, max 600)"`
	op.Approval
}

func status(_ context.Context, c *op.Call, args JobStatusArgs) (*op.Plan, error) {
	if err := ValidID(args.JobID); err != nil {
		return nil, err
	}
	if args.WaitS < 0 || args.WaitS > waitMax {
		return nil, errs.New(errs.InvalidArgument, "wait_s %d: must be between 0 and %d", args.WaitS, waitMax)
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		j, err := Wait(ctx, c, args.JobID, time.Duration(args.WaitS)*time.Second)
		var fj *op.FleetJob
		if f := c.Env.FleetJobs; f != nil { // a fleet job another node runs: the fleet's record
			j, fj, err = f.Status(ctx, args.JobID, j, err, time.Duration(args.WaitS)*time.Second)
		}
		if err != nil {
			return nil, err
		}
		r := Result(j)
		r.Fleet = fj
		r.Stdout, r.Stderr = Streams(j, StreamBytes)
		r.SandboxHints = jobWalls(ctx, c.Env, j, r.Stdout, r.Stderr)
		return r, nil
	}}, nil
}

// StreamBytes is how much of each stream job_status and a durable check
// return: head and tail, like a Fast Path check's (docs/checks.md).
const StreamBytes = 64 << 10

// Streams returns the head and tail of a job's stdout and stderr logs
// (joblog.HeadTail, maxBytes each), nil for a log that does not exist (a
// queued job, one that failed before it started) or cannot be read. The
// logs of jobs written before any upgrade read the same: two redacted,
// capped logs per job.
func Streams(j messages.Job, maxBytes int) (stdout, stderr *proc.Output) {
	read := func(name string) *proc.Output {
		if j.LogDir == "" {
			return nil
		}
		o, err := joblog.HeadTail(j.LogDir, name, maxBytes)
		if err != nil {
			return nil
		}
		return &o
	}
	return read(actors.JobStdoutLog), read(actors.JobStderrLog)
}

// Wait polls a job until it is final or wait elapsed, reporting progress
// every second. A shutting-down harness or a done context ends the wait
// with the current state.
func Wait(ctx context.Context, c *op.Call, id string, wait time.Duration) (messages.Job, error) {
	jobs := c.Env.RT.Jobs
	j, err := jobs.Get(ctx, id)
	if err != nil || wait <= 0 || Final(j.State) {
		return j, err
	}
	start := time.Now()
	deadline := start.Add(wait)
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	lastReport := start
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				// The caller gave up (notifications/cancelled, a
				// closed connection): CANCELLED, not a status it
				// will not read. A deadline answers the last state.
				return j, ctx.Err()
			}
			return j, nil
		case <-poll.C:
		}
		if c.Pipeline().Closed() {
			return j, nil
		}
		nj, err := jobs.Get(ctx, id)
		if err != nil {
			return j, err
		}
		j = nj
		now := time.Now()
		if Final(j.State) || !now.Before(deadline) {
			return j, nil
		}
		if now.Sub(lastReport) >= time.Second {
			lastReport = now
			op.Report(ctx, now.Sub(start).Seconds(), wait.Seconds(), fmt.Sprintf("%s: %.1fs, %s of output",
				j.State, j.DurationMs/1000, humanBytes(j.StdoutBytes+j.StderrBytes)))
		}
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " B"
}

// JobLogsArgs are the arguments of job_logs.
type JobLogsArgs struct {
	JobID  string `json:"job_id" jsonschema:"from job_start"`
	Stream string `json:"stream,omitempty" enum:"stdout,stderr" jsonschema:"stdout (default) or stderr"`
	Offset int64  `json:"offset,omitempty" jsonschema:"byte offset to read from (default 0)"`
	Tail   int64  `json:"tail,omitempty" jsonschema:"the last this many bytes instead"`
	op.Approval
}

// JobLogsResult is the result of job_logs.
type JobLogsResult struct {
	JobID      string `json:"job_id"`
	Stream     string `json:"stream"`
	Data       string `json:"data"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"next_offset"`
	Total      int64  `json:"total"`
	State      string `json:"state"`
	EOF        bool   `json:"eof"`
	op.Meta
}

func logs(_ context.Context, c *op.Call, args JobLogsArgs) (*op.Plan, error) {
	if err := ValidID(args.JobID); err != nil {
		return nil, err
	}
	name := ""
	switch args.Stream {
	case "", "stdout":
		args.Stream, name = "stdout", actors.JobStdoutLog
	case "stderr":
		name = actors.JobStderrLog
	default:
		return nil, errs.New(errs.InvalidArgument, "stream %q: must be stdout or stderr", args.Stream)
	}
	if args.Offset < 0 || args.Tail < 0 {
		return nil, errs.New(errs.InvalidArgument, "offset and tail must not be negative")
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		j, err := c.Env.RT.Jobs.Get(ctx, args.JobID)
		if err != nil {
			return nil, err
		}
		out := &JobLogsResult{JobID: j.ID, Stream: args.Stream, Offset: args.Offset, State: j.State}
		data, next, total, err := ReadLog(j.LogDir, name, args.Offset, args.Tail)
		if err != nil {
			return nil, err
		}
		out.Data, out.NextOffset, out.Total = string(data), next, total
		if args.Tail > 0 {
			out.Offset = max(total-args.Tail, 0)
		}
		out.EOF = Final(j.State) && next >= total
		return out, nil
	}}, nil
}

// ReadLog reads a job log, at most 256 KiB; a log that does not exist yet
// (queued job) reads as empty.
func ReadLog(dir, name string, offset, tail int64) ([]byte, int64, int64, error) {
	data, next, total, err := joblog.Read(dir, name, offset, tail)
	if err != nil && errs.CodeOf(err) == errs.NotFound {
		return nil, offset, 0, nil
	}
	if err != nil {
		if _, serr := os.Stat(dir + "/" + name); os.IsNotExist(serr) {
			return nil, offset, 0, nil
		}
	}
	if len(data) > logChunk {
		data = data[:logChunk]
		next = offset + logChunk
	}
	return data, next, total, err
}

// JobCancelArgs are the arguments of job_cancel.
type JobCancelArgs struct {
	JobID string `json:"job_id" jsonschema:"from job_start"`
	op.Approval
}

func cancel(_ context.Context, c *op.Call, args JobCancelArgs) (*op.Plan, error) {
	if err := ValidID(args.JobID); err != nil {
		return nil, err
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		j, err := c.Env.RT.Jobs.Cancel(ctx, args.JobID)
		if err != nil {
			return nil, err
		}
		return Result(j), nil
	}}, nil
}

// JobListArgs are the arguments of job_list.
type JobListArgs struct {
	RepoID string `json:"repo_id,omitempty" jsonschema:"only jobs of this repository"`
	State  string `json:"state,omitempty" enum:"queued,running,succeeded,failed,timed_out,cancelled,interrupted" jsonschema:"only jobs in this state"`
	Limit  int    `json:"limit,omitempty" jsonschema:"default 50, max 1000"`
	op.Approval
}

// JobListResult is the result of job_list.
type JobListResult struct {
	Jobs []*JobResult `json:"jobs"`
	op.Meta
}

func list(_ context.Context, c *op.Call, args JobListArgs) (*op.Plan, error) {
	switch args.State {
	case "", messages.JobQueued, messages.JobRunning, messages.JobSucceeded, messages.JobFailed,
		messages.JobTimedOut, messages.JobCancelled, messages.JobInterrupted:
	default:
		return nil, errs.New(errs.InvalidArgument, "state %q is not a job state", args.State)
	}
	if args.Limit < 0 || args.Limit > listMax {
		return nil, errs.New(errs.InvalidArgument, "limit %d: must be between 1 and %d", args.Limit, listMax)
	}
	if args.Limit == 0 {
		args.Limit = listDefault
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		jobs, err := c.Env.RT.Jobs.List(ctx, messages.JobList{RepoID: args.RepoID, State: args.State, Limit: args.Limit})
		if err != nil {
			return nil, err
		}
		out := &JobListResult{Jobs: make([]*JobResult, 0, len(jobs))}
		for _, j := range jobs {
			r := Result(j)
			r.Tail = "" // list stays small; job_status has it
			out.Jobs = append(out.Jobs, r)
		}
		return out, nil
	}}, nil
}

// JobCleanArgs are the arguments of job_clean.
type JobCleanArgs struct {
	OlderThanS int `json:"older_than_s,omitempty" jsonschema:"only of jobs that ended this long ago (default 0: all)"`
	op.Approval
}

// JobCleanResult is the result of job_clean.
type JobCleanResult struct {
	Removed []string `json:"removed"`
	op.Meta
}

func clean(_ context.Context, c *op.Call, args JobCleanArgs) (*op.Plan, error) {
	if args.OlderThanS < 0 {
		return nil, errs.New(errs.InvalidArgument, "older_than_s must not be negative")
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		var before time.Time
		if args.OlderThanS > 0 {
			before = c.Env.Now().Add(-time.Duration(args.OlderThanS) * time.Second)
		}
		removed, err := c.Env.RT.Jobs.Clean(ctx, before)
		if err != nil {
			return nil, err
		}
		if removed == nil {
			removed = []string{}
		}
		return &JobCleanResult{Removed: removed}, nil
	}}, nil
}
