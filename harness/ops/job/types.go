package job

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/wall"
	"github.com/harnessd/harnessd/messages"
)

// RetryPolicy re-runs a job interrupted by a harnessd restart.
type RetryPolicy struct {
	Max int `json:"max" jsonschema:"re-runs, 0-5"`
}

// JobStartArgs are the arguments of job_start.
type JobStartArgs struct {
	RepoID    string       `json:"repo_id" jsonschema:"from repository_list"`
	Argv      []string     `json:"argv" jsonschema:"program and arguments; no shell string"`
	Cwd       string       `json:"cwd,omitempty" jsonschema:"relative to the repository root"`
	TimeoutS  int          `json:"timeout_s,omitempty" jsonschema:"default 600, max 86400"`
	Isolation string       `json:"isolation,omitempty" enum:"none,worktree" jsonschema:"worktree: a copy with your uncommitted changes"`
	Writes    bool         `json:"writes,omitempty" jsonschema:"it writes files; others get MUTATION_BUSY meanwhile"`
	RequestID string       `json:"request_id,omitempty" required:"true" jsonschema:"unique per job; a retry returns the same job"`
	Retry     *RetryPolicy `json:"retry,omitempty" jsonschema:"re-run it when a restart interrupted it"`
	Network   bool         `json:"network,omitempty" jsonschema:"it needs the network (a rule or approval)"`
	op.Approval
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
	// Resources are the figures of the job's process tree (CPU time, peak
	// RSS, storage I/O, processes): live while it runs, final after.
	Resources *messages.Resources `json:"resources,omitempty"`
	Summary   []string            `json:"summary,omitempty"`
	// Tail is the last 4 KiB of both streams as they interleaved.
	Tail string `json:"tail,omitempty"`
	// Stdout and Stderr are the head and tail of each redacted stream, 64
	// KiB each, as run_command keeps them: text (with
	// "[... truncated N bytes ...]" where the middle is left out),
	// total_bytes (the redacted stream's length, job_logs' total) and
	// truncated. job_status only, once the job started; job_logs reads
	// the rest.
	Stdout *proc.Output `json:"stdout,omitempty"`
	Stderr *proc.Output `json:"stderr,omitempty"`
	// SandboxHints say which wall of the sandbox a failed job ran into
	// (layer, path or syscall, fix); job_status only.
	SandboxHints []wall.Diagnosis `json:"sandbox_hints,omitempty"`
	Error        *JobError        `json:"error,omitempty"`
	// Replayed is true when job_start's request_id already started this job.
	Replayed bool `json:"replayed,omitempty"`
	// Fleet is, in a fleet, where the job runs (its attempt, node and
	// token: any node answers it) or why it runs on this node only
	// (docs/fleet.md).
	Fleet *op.FleetJob `json:"fleet,omitempty"`
	// PerformedBy says that harnessd did the job's work itself, with no
	// process (git reset --hard, git branch -D, git tag -f: gitstate.go).
	PerformedBy string `json:"performed_by,omitempty"`
	// ReceiptID is the receipt of what a job that wrote its checkout in
	// place changed there, once it ended: revert undoes it.
	ReceiptID string `json:"receipt_id,omitempty"`
	// LeaseReleaseState is pending until the job's lease's actor answered
	// its release, then released; LeaseReleaseFailure is the redacted
	// diagnostic of failed attempts (retried at start-up).
	LeaseReleaseState   string                     `json:"lease_release_state,omitempty"`
	LeaseReleaseFailure *messages.LeaseReleaseDiag `json:"lease_release_failure,omitempty"`
	op.Meta
}

// Finished reports whether the job reached a final state.
func (r *JobResult) Finished() bool { return Final(r.State) }

// Final reports whether a job state is final.
func Final(state string) bool { return op.JobFinal(state) }

// Result turns a job record into its result.
func Result(j messages.Job) *JobResult {
	r := &JobResult{
		JobID: j.ID, RepoID: j.RepoID, Argv: j.Argv, Cwd: j.Cwd, State: j.State, Attempt: j.Attempt, RetryMax: j.RetryMax,
		TimeoutS: j.TimeoutS, CreatedAt: j.CreatedAt, ExitCode: j.ExitCode, Signal: j.Signal, DurationMs: j.DurationMs,
		TimedOut: j.TimedOut, Isolation: j.Isolation, Worktree: j.Worktree, WorktreeKept: j.WorktreeKept, Writes: j.Writes,
		LeaseID: j.LeaseID, Pid: j.Pid, StdoutBytes: j.StdoutBytes, StderrBytes: j.StderrBytes, Redactions: j.Redactions,
		Summary: j.Summary, Tail: j.Tail, LeaseReleaseState: j.LeaseReleaseState, LeaseReleaseFailure: j.LeaseReleaseFailure,
		ReceiptID: j.ReceiptID,
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
	r.Resources = j.Resources
	if _, ok, _ := parseGitState(j.Argv); ok && j.Write == nil {
		r.PerformedBy = PerformedByHarnessd
	}
	return r
}

// newJobID returns a fresh job id: time-ordered, with 48 random bits.
func newJobID(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "job_" + strconv.FormatInt(now.UnixNano(), 36) + hex.EncodeToString(b[:])
}

// ValidID checks a caller-supplied job id before it reaches the store
// or the file system.
func ValidID(id string) error {
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
