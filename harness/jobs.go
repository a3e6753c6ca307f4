package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/joblog"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/supervisors"
)

// Job limits.
const (
	jobTimeoutDefault = 600
	jobTimeoutMax     = 86400
	jobRetryMax       = 5
	jobWaitMax        = 600
	jobListDefault    = 50
	jobListMax        = 1000
	jobLogChunk       = 256 << 10
)

func init() {
	registerOps(func() []Op {
		return []Op{
			def("job_start", "Start a durable job: a typed argv (no shell string) run in the background with a timeout (default 600 s, max 86400), its output logged to disk, and its state persisted so it survives a harnessd restart (it is marked interrupted, and re-run when retry.max allows). isolation \"worktree\" runs it in a throw-away git worktree carrying the checkout's dirty state; writes=true on the main checkout holds the workspace lease, so Fast Path writers get MUTATION_BUSY until it ends. request_id is required: a retry with the same request_id and input returns the same job.", false, (*Harness).JobStart),
			def("job_status", "A durable job's state and result (exit code, duration, output sizes, failure summary, redacted output tail). wait_s waits up to that long (max 600) for the job to finish, reporting progress.", true, (*Harness).JobStatus),
			def("job_logs", "Read a durable job's stdout or stderr log (redacted) from a byte offset, or its last bytes with tail. eof is true once the job finished and the offset reached the end.", true, (*Harness).JobLogs),
			def("job_cancel", "Cancel a durable job: a queued job ends at once, a running one once its whole process tree is killed. Idempotent on finished jobs.", false, (*Harness).JobCancel),
			def("job_list", "List durable jobs, newest first, optionally of one repository or in one state.", true, (*Harness).JobList),
			def("job_clean", "Remove the worktrees kept for inspection after failed, cancelled or interrupted jobs (older_than_s: only those of jobs that ended at least that long ago). They are removed automatically 24 h after the job ended.", false, (*Harness).JobClean),
		}
	})
	onStatus(jobsStatus)
}

// RetryPolicy re-runs a job interrupted by a harnessd restart.
type RetryPolicy struct {
	Max int `json:"max" jsonschema:"how many times an interrupted job is run again (0-5)"`
}

// JobStartArgs are the arguments of job_start.
type JobStartArgs struct {
	RepoID    string       `json:"repo_id" jsonschema:"repository id from repository_register"`
	Argv      []string     `json:"argv" jsonschema:"the command and its arguments (no shell string)"`
	Cwd       string       `json:"cwd,omitempty" jsonschema:"working directory relative to the repository root (default the root)"`
	TimeoutS  int          `json:"timeout_s,omitempty" jsonschema:"timeout in seconds (default 600, max 86400); the process tree is killed when it expires"`
	Isolation string       `json:"isolation,omitempty" jsonschema:"none (default: the main checkout) or worktree (a detached git worktree with the checkout's dirty state)"`
	Writes    bool         `json:"writes,omitempty" jsonschema:"the job writes files; with isolation none it holds the workspace lease while it runs"`
	RequestID string       `json:"request_id,omitempty" jsonschema:"required: unique id of this start (up to 255 characters); a retry with the same id and input returns the same job"`
	Retry     *RetryPolicy `json:"retry,omitempty" jsonschema:"re-run the job when a harnessd restart interrupted it"`
}

// JobError is a job's coded error.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// JobResult is a durable job's full state.
type JobResult struct {
	JobID        string     `json:"job_id"`
	RepoID       string     `json:"repo_id"`
	Argv         []string   `json:"argv"`
	Cwd          string     `json:"cwd,omitempty"`
	State        string     `json:"state"`
	Attempt      int        `json:"attempt"`
	RetryMax     int        `json:"retry_max,omitempty"`
	TimeoutS     int        `json:"timeout_s"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	ExitCode     *int       `json:"exit_code,omitempty"`
	Signal       string     `json:"signal,omitempty"`
	DurationMs   float64    `json:"duration_ms"`
	TimedOut     bool       `json:"timed_out"`
	Isolation    string     `json:"isolation"`
	Worktree     string     `json:"worktree,omitempty"`
	WorktreeKept bool       `json:"worktree_kept,omitempty"`
	Writes       bool       `json:"writes"`
	LeaseID      string     `json:"lease_id,omitempty"`
	Pid          int        `json:"pid,omitempty"`
	StdoutBytes  int64      `json:"stdout_bytes"`
	StderrBytes  int64      `json:"stderr_bytes"`
	Redactions   int        `json:"redactions"`
	Summary      []string   `json:"summary,omitempty"`
	Tail         string     `json:"tail,omitempty"`
	Error        *JobError  `json:"error,omitempty"`
	// Replayed is true when job_start's request_id already started this job.
	Replayed bool `json:"replayed,omitempty"`
	Meta
}

// Finished reports whether the job reached a final state.
func (r *JobResult) Finished() bool { return jobFinal(r.State) }

func jobFinal(state string) bool {
	return state != messages.JobQueued && state != messages.JobRunning
}

func jobResult(j messages.Job) *JobResult {
	r := &JobResult{
		JobID: j.ID, RepoID: j.RepoID, Argv: j.Argv, Cwd: j.Cwd, State: j.State, Attempt: j.Attempt, RetryMax: j.RetryMax,
		TimeoutS: j.TimeoutS, CreatedAt: j.CreatedAt, ExitCode: j.ExitCode, Signal: j.Signal, DurationMs: j.DurationMs,
		TimedOut: j.TimedOut, Isolation: j.Isolation, Worktree: j.Worktree, WorktreeKept: j.WorktreeKept, Writes: j.Writes,
		LeaseID: j.LeaseID, Pid: j.Pid, StdoutBytes: j.StdoutBytes, StderrBytes: j.StderrBytes, Redactions: j.Redactions,
		Summary: j.Summary, Tail: j.Tail,
	}
	if !j.StartedAt.IsZero() {
		t := j.StartedAt
		r.StartedAt = &t
	}
	if !j.FinishedAt.IsZero() {
		t := j.FinishedAt
		r.FinishedAt = &t
	}
	if j.Error != nil {
		r.Error = &JobError{Code: j.Error.Code, Message: j.Error.Message}
	}
	return r
}

// newJobID returns a fresh job id: time-ordered, with 48 random bits.
func newJobID(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "job_" + strconv.FormatInt(now.UnixNano(), 36) + hex.EncodeToString(b[:])
}

// validJobID checks a caller-supplied job id before it reaches the store
// or the file system.
func validJobID(id string) error {
	if !strings.HasPrefix(id, "job_") || len(id) > 64 || len(id) <= 4 {
		return errs.New(errs.InvalidArgument, "job_id %q is not a job id (job_...)", id).With("job_id", id)
	}
	for _, c := range id[4:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return errs.New(errs.InvalidArgument, "job_id %q is not a job id (job_...)", id).With("job_id", id)
		}
	}
	return nil
}

func (h *Harness) jobsPID() error {
	if h.child(supervisors.JobsName) == nil {
		return errs.New(errs.Unavailable, "the jobs actor is not running")
	}
	return nil
}

// JobStart starts a durable job.
func (h *Harness) JobStart(ctx context.Context, args JobStartArgs) (*JobResult, error) {
	e, tr, done, err := h.begin(args.RepoID)
	if err != nil {
		return nil, err
	}
	defer done()
	if len(args.Argv) == 0 || args.Argv[0] == "" {
		return nil, errs.New(errs.InvalidArgument, "argv is empty: give the command and its arguments")
	}
	timeout := args.TimeoutS
	switch {
	case timeout < 0 || timeout > jobTimeoutMax:
		return nil, errs.New(errs.InvalidArgument, "timeout_s %d: must be between 1 and %d", timeout, jobTimeoutMax)
	case timeout == 0:
		timeout = jobTimeoutDefault
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
		if args.Retry.Max < 0 || args.Retry.Max > jobRetryMax {
			return nil, errs.New(errs.InvalidArgument, "retry.max %d: must be between 0 and %d", args.Retry.Max, jobRetryMax)
		}
		retry = args.Retry.Max
	}
	root, err := h.fast.root(e)
	if err != nil {
		return nil, err
	}
	_, cwd, err := commandDir(root, args.Cwd)
	if err != nil {
		return nil, err
	}
	var paths []string
	if cwd != "" {
		paths = []string{cwd}
	}
	hashed := args
	hashed.RequestID = ""
	if _, err := h.gate(ctx, gateInput{Tool: "job_start", Repo: &e, Root: root, Argv: args.Argv, Paths: paths,
		TimeoutMs: timeout * 1000, Writes: args.Writes, Args: hashed}); err != nil {
		return nil, err
	}
	if args.RequestID == "" {
		return nil, errs.New(errs.RequestIDRequired, "job_start needs a request_id (any unique string up to 255 characters) so a retry returns the same job instead of starting another")
	}
	if err := ledger.ValidateRequestID(args.RequestID); err != nil {
		return nil, err
	}
	if err := h.jobsPID(); err != nil {
		return nil, err
	}
	hash, err := ledger.InputHash("job_start", hashed)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	tr.mark(segPolicy)
	begun, err := request[messages.LedgerBegun](ctx, h, h.ledger, messages.LedgerBegin{RequestID: args.RequestID, Operation: "job_start", InputHash: hash})
	if err != nil {
		return nil, err
	}
	if begun.Replay {
		var stored struct {
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal(begun.Entry.Result, &stored); err != nil || stored.JobID == "" {
			return nil, errs.New(errs.Internal, "stored result of request %q has no job_id", args.RequestID)
		}
		info, err := request[messages.JobInfo](ctx, h, h.child(supervisors.JobsName), messages.JobGet{ID: stored.JobID})
		if err != nil {
			return nil, err
		}
		r := jobResult(info.Job)
		r.Replayed = true
		r.Meta = Meta{Route: "durable", Latency: tr.finish(segSnapshot, false)}
		return r, nil
	}
	id := newJobID(h.cfg.Now())
	info, err := request[messages.JobInfo](ctx, h, h.child(supervisors.JobsName), messages.JobSubmit{Job: messages.Job{
		ID: id, RepoID: e.Repo.ID, CheckoutID: e.Repo.CheckoutID, Root: e.Repo.Root, Cwd: cwd,
		Argv: append([]string(nil), args.Argv...), RequestID: args.RequestID, TimeoutS: timeout,
		Isolation: iso, Writes: args.Writes, RetryMax: retry,
	}})
	if err != nil {
		if _, ferr := request[messages.LedgerDone](context.Background(), h, h.ledger, messages.LedgerFail{RequestID: args.RequestID, Err: err}); ferr != nil {
			h.lg.Warn("ledger: record failure")
		}
		return nil, err
	}
	stored, _ := json.Marshal(map[string]string{"job_id": id})
	if _, err := request[messages.LedgerDone](context.Background(), h, h.ledger, messages.LedgerComplete{RequestID: args.RequestID, Result: stored}); err != nil {
		h.lg.Warn("ledger: record job start")
	}
	r := jobResult(info.Job)
	r.Meta = Meta{Route: "durable", Latency: tr.finish(segExecution, false)}
	return r, nil
}

// JobStatusArgs are the arguments of job_status.
type JobStatusArgs struct {
	JobID string `json:"job_id" jsonschema:"job id from job_start"`
	WaitS int    `json:"wait_s,omitempty" jsonschema:"wait up to this many seconds (max 600) for the job to finish"`
}

// JobStatus returns a job's state, waiting up to wait_s for it to finish.
func (h *Harness) JobStatus(ctx context.Context, args JobStatusArgs) (*JobResult, error) {
	tr, done, err := h.beginJob(args.JobID)
	if err != nil {
		return nil, err
	}
	defer done()
	if args.WaitS < 0 || args.WaitS > jobWaitMax {
		return nil, errs.New(errs.InvalidArgument, "wait_s %d: must be between 0 and %d", args.WaitS, jobWaitMax)
	}
	if _, err := h.gate(ctx, gateInput{Tool: "job_status", Args: args}); err != nil {
		return nil, err
	}
	j, err := h.waitJob(ctx, args.JobID, time.Duration(args.WaitS)*time.Second)
	if err != nil {
		return nil, err
	}
	r := jobResult(j)
	r.Meta = Meta{Route: "fast", Latency: tr.finish(segExecution, false)}
	return r, nil
}

func (h *Harness) getJob(ctx context.Context, id string) (messages.Job, error) {
	if err := h.jobsPID(); err != nil {
		return messages.Job{}, err
	}
	info, err := request[messages.JobInfo](ctx, h, h.child(supervisors.JobsName), messages.JobGet{ID: id})
	return info.Job, err
}

// waitJob polls a job until it is final or wait elapsed, reporting progress
// every second. A shutting-down harness or a done context ends the wait
// with the current state.
func (h *Harness) waitJob(ctx context.Context, id string, wait time.Duration) (messages.Job, error) {
	j, err := h.getJob(ctx, id)
	if err != nil || wait <= 0 || jobFinal(j.State) {
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
			return j, nil
		case <-poll.C:
		}
		if h.closed.Load() {
			return j, nil
		}
		nj, err := h.getJob(ctx, id)
		if err != nil {
			return j, err
		}
		j = nj
		now := time.Now()
		if jobFinal(j.State) || !now.Before(deadline) {
			return j, nil
		}
		if now.Sub(lastReport) >= time.Second {
			lastReport = now
			reportProgress(ctx, now.Sub(start).Seconds(), wait.Seconds(), fmt.Sprintf("%s: %.1fs, %s of output",
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
	JobID  string `json:"job_id" jsonschema:"job id from job_start"`
	Stream string `json:"stream,omitempty" jsonschema:"stdout (default) or stderr"`
	Offset int64  `json:"offset,omitempty" jsonschema:"byte offset in the (redacted) stream to read from"`
	Tail   int64  `json:"tail,omitempty" jsonschema:"read the last this many bytes instead (ignores offset)"`
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
	Meta
}

// JobLogs reads a job's log.
func (h *Harness) JobLogs(ctx context.Context, args JobLogsArgs) (*JobLogsResult, error) {
	tr, done, err := h.beginJob(args.JobID)
	if err != nil {
		return nil, err
	}
	defer done()
	name := ""
	switch args.Stream {
	case "", "stdout":
		args.Stream, name = "stdout", "stdout.log"
	case "stderr":
		name = "stderr.log"
	default:
		return nil, errs.New(errs.InvalidArgument, "stream %q: must be stdout or stderr", args.Stream)
	}
	if args.Offset < 0 || args.Tail < 0 {
		return nil, errs.New(errs.InvalidArgument, "offset and tail must not be negative")
	}
	if _, err := h.gate(ctx, gateInput{Tool: "job_logs", Args: args}); err != nil {
		return nil, err
	}
	j, err := h.getJob(ctx, args.JobID)
	if err != nil {
		return nil, err
	}
	out := &JobLogsResult{JobID: j.ID, Stream: args.Stream, Offset: args.Offset, State: j.State}
	data, next, total, err := readJobLog(j.LogDir, name, args.Offset, args.Tail)
	if err != nil {
		return nil, err
	}
	out.Data, out.NextOffset, out.Total = string(data), next, total
	if args.Tail > 0 {
		out.Offset = max(total-args.Tail, 0)
	}
	out.EOF = jobFinal(j.State) && next >= total
	out.Meta = Meta{Route: "fast", Latency: tr.finish(segExecution, false)}
	return out, nil
}

// readJobLog reads a job log; a log that does not exist yet (queued job)
// reads as empty.
func readJobLog(dir, name string, offset, tail int64) ([]byte, int64, int64, error) {
	data, next, total, err := joblog.Read(dir, name, offset, tail)
	if err != nil && errs.CodeOf(err) == errs.NotFound {
		return nil, offset, 0, nil
	}
	if err != nil {
		if _, serr := os.Stat(dir + "/" + name); os.IsNotExist(serr) {
			return nil, offset, 0, nil
		}
	}
	if len(data) > jobLogChunk {
		data = data[:jobLogChunk]
		next = offset + jobLogChunk
	}
	return data, next, total, err
}

// JobCancelArgs are the arguments of job_cancel.
type JobCancelArgs struct {
	JobID string `json:"job_id" jsonschema:"job id from job_start"`
}

// JobCancel cancels a job and returns its final state.
func (h *Harness) JobCancel(ctx context.Context, args JobCancelArgs) (*JobResult, error) {
	tr, done, err := h.beginJob(args.JobID)
	if err != nil {
		return nil, err
	}
	defer done()
	if _, err := h.gate(ctx, gateInput{Tool: "job_cancel", Args: args}); err != nil {
		return nil, err
	}
	if err := h.jobsPID(); err != nil {
		return nil, err
	}
	// Killing a tree takes the grace period plus the sweep.
	cctx, cancel := context.WithTimeout(ctx, h.cfg.RequestTimeout+30*time.Second)
	defer cancel()
	info, err := requestWithin[messages.JobInfo](cctx, h, messages.JobCancel{ID: args.JobID})
	if err != nil {
		return nil, err
	}
	r := jobResult(info.Job)
	r.Meta = Meta{Route: "fast", Latency: tr.finish(segExecution, false)}
	return r, nil
}

// requestWithin asks the jobs actor with ctx's deadline as the timeout
// (request caps it at Config.RequestTimeout).
func requestWithin[T any](ctx context.Context, h *Harness, msg any) (T, error) {
	var zero T
	dl, _ := ctx.Deadline()
	res, err := h.system.Root.RequestFuture(h.child(supervisors.JobsName), msg, time.Until(dl)).Result()
	if err != nil {
		return zero, errs.Wrap(errs.Timeout, err, "the jobs actor did not answer %T: %v", msg, err)
	}
	switch r := res.(type) {
	case T:
		return r, nil
	case messages.Failed:
		return zero, r.Err
	}
	return zero, errs.New(errs.Internal, "unexpected reply %T", res)
}

// JobListArgs are the arguments of job_list.
type JobListArgs struct {
	RepoID string `json:"repo_id,omitempty" jsonschema:"only jobs of this repository"`
	State  string `json:"state,omitempty" jsonschema:"only jobs in this state (queued, running, succeeded, failed, timed_out, cancelled, interrupted)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many jobs (default 50, max 1000)"`
}

// JobListResult is the result of job_list.
type JobListResult struct {
	Jobs []*JobResult `json:"jobs"`
	Meta
}

// JobList lists jobs, newest first.
func (h *Harness) JobList(ctx context.Context, args JobListArgs) (*JobListResult, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	tr := startTrace()
	switch args.State {
	case "", messages.JobQueued, messages.JobRunning, messages.JobSucceeded, messages.JobFailed,
		messages.JobTimedOut, messages.JobCancelled, messages.JobInterrupted:
	default:
		return nil, errs.New(errs.InvalidArgument, "state %q is not a job state", args.State)
	}
	if args.Limit < 0 || args.Limit > jobListMax {
		return nil, errs.New(errs.InvalidArgument, "limit %d: must be between 1 and %d", args.Limit, jobListMax)
	}
	if args.Limit == 0 {
		args.Limit = jobListDefault
	}
	if _, err := h.gate(ctx, gateInput{Tool: "job_list", Args: args}); err != nil {
		return nil, err
	}
	if err := h.jobsPID(); err != nil {
		return nil, err
	}
	rep, err := request[messages.JobListReply](ctx, h, h.child(supervisors.JobsName), messages.JobList{RepoID: args.RepoID, State: args.State, Limit: args.Limit})
	if err != nil {
		return nil, err
	}
	out := &JobListResult{Jobs: make([]*JobResult, 0, len(rep.Jobs))}
	for _, j := range rep.Jobs {
		r := jobResult(j)
		r.Tail = "" // list stays small; job_status has it
		out.Jobs = append(out.Jobs, r)
	}
	out.Meta = Meta{Route: "fast", Latency: tr.finish(segExecution, false)}
	return out, nil
}

// JobCleanArgs are the arguments of job_clean.
type JobCleanArgs struct {
	OlderThanS int `json:"older_than_s,omitempty" jsonschema:"only worktrees of jobs that ended at least this many seconds ago (default 0: all)"`
}

// JobCleanResult is the result of job_clean.
type JobCleanResult struct {
	Removed []string `json:"removed"`
	Meta
}

// JobClean removes kept worktrees of finished jobs.
func (h *Harness) JobClean(ctx context.Context, args JobCleanArgs) (*JobCleanResult, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	tr := startTrace()
	if args.OlderThanS < 0 {
		return nil, errs.New(errs.InvalidArgument, "older_than_s must not be negative")
	}
	if _, err := h.gate(ctx, gateInput{Tool: "job_clean", Args: args}); err != nil {
		return nil, err
	}
	if err := h.jobsPID(); err != nil {
		return nil, err
	}
	var before time.Time
	if args.OlderThanS > 0 {
		before = h.cfg.Now().Add(-time.Duration(args.OlderThanS) * time.Second)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rep, err := requestWithin[messages.JobCleaned](cctx, h, messages.JobClean{Before: before})
	if err != nil {
		return nil, err
	}
	out := &JobCleanResult{Removed: rep.Removed}
	if out.Removed == nil {
		out.Removed = []string{}
	}
	out.Meta = Meta{Route: "fast", Latency: tr.finish(segExecution, false)}
	return out, nil
}

// DurableLease is a durable lease for `harness status`.
type DurableLease struct {
	RepoID string `json:"repo_id"`
	messages.LeaseInfo
}

// jobsStatus adds the jobs figures, containment and durable leases.
func jobsStatus(ctx context.Context, h *Harness, st *StatusResult) {
	if st.Extra == nil {
		st.Extra = map[string]any{}
	}
	if pid := h.child(supervisors.JobsName); pid != nil {
		if s, err := request[messages.JobStatsReply](ctx, h, pid, messages.JobStats{}); err == nil {
			st.Extra["jobs"] = s
			st.Notes = append(st.Notes, "jobs: "+s.Containment)
		}
	}
	leases := []DurableLease{}
	for _, e := range h.index.All() {
		l, err := request[messages.LeaseList](ctx, h, e.Checkout, messages.ListLeases{})
		if err != nil {
			continue
		}
		for _, li := range l.Leases {
			if li.Visibility == "durable" {
				leases = append(leases, DurableLease{RepoID: e.Repo.ID, LeaseInfo: li})
			}
		}
	}
	st.Extra["durable_leases"] = leases
}

// beginJob starts an operation on one job: in-flight accounting, the
// latency trace and a check of the job id. Call done when it ends.
func (h *Harness) beginJob(jobID string) (tr trace, done func(), err error) {
	if err := h.enter(); err != nil {
		return tr, nil, err
	}
	if err := validJobID(jobID); err != nil {
		h.leave()
		return tr, nil, err
	}
	return startTrace(), h.leave, nil
}
