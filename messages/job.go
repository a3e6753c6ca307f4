package messages

import "time"

// Job states. queued and running are live; the others are final, except
// that an interrupted job with retries left is queued again at boot.
const (
	JobQueued      = "queued"
	JobRunning     = "running"
	JobSucceeded   = "succeeded"
	JobFailed      = "failed"
	JobTimedOut    = "timed_out"
	JobCancelled   = "cancelled"
	JobInterrupted = "interrupted"
)

// Job isolation modes.
const (
	JobIsolationNone     = "none"
	JobIsolationWorktree = "worktree"
)

// JobError is a job's coded error, as stored.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The states of the release of a job's durable lease.
const (
	LeaseReleasePending  = "pending"
	LeaseReleaseReleased = "released"
)

// LeaseReleaseDiag is the diagnostic of a job's failed lease releases:
// the last failure's code and redacted message, when it was attempted,
// and how many attempts failed. One per job, replaced at each failure.
type LeaseReleaseDiag struct {
	Code        string    `json:"code"`
	Message     string    `json:"message"`
	AttemptedAt time.Time `json:"attempted_at"`
	Count       int       `json:"count"`
}

// Job is the persisted record of one durable job (stored at job/<id>).
type Job struct {
	ID         string   `json:"job_id"`
	RepoID     string   `json:"repo_id"`
	CheckoutID string   `json:"checkout_id"`
	Root       string   `json:"root"`          // the repository root
	Cwd        string   `json:"cwd,omitempty"` // rel to the root ("" = the root)
	Argv       []string `json:"argv"`
	RequestID  string   `json:"request_id,omitempty"`
	TimeoutS   int      `json:"timeout_s"`
	Isolation  string   `json:"isolation"`
	Writes     bool     `json:"writes"`
	// Network is true when the job may use the network (a policy rule or
	// an approval allowed it).
	Network    bool      `json:"network,omitempty"`
	RetryMax   int       `json:"retry_max,omitempty"`
	State      string    `json:"state"`
	Attempt    int       `json:"attempt"`
	CreatedAt  time.Time `json:"created_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Pid        int       `json:"pid,omitempty"`
	RunID      string    `json:"run_id,omitempty"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	DurationMs float64   `json:"duration_ms"`
	TimedOut   bool      `json:"timed_out"`
	Worktree   string    `json:"worktree,omitempty"`
	// WorktreeKept is set when a failed job's worktree is kept for
	// inspection; it is removed after its TTL or by job_clean.
	WorktreeKept bool      `json:"worktree_kept,omitempty"`
	LeaseID      string    `json:"lease_id,omitempty"`
	Cgroup       string    `json:"cgroup,omitempty"`
	LogDir       string    `json:"log_dir"`
	StdoutBytes  int64     `json:"stdout_bytes"`
	StderrBytes  int64     `json:"stderr_bytes"`
	Redactions   int       `json:"redactions"`
	Summary      []string  `json:"summary,omitempty"`
	Tail         string    `json:"tail,omitempty"`
	Error        *JobError `json:"error,omitempty"`
	Swept        int       `json:"swept,omitempty"`
	// Resources are the figures of the job's process tree: live while it
	// runs (job_status), final once it ended; nil before it started.
	Resources *Resources `json:"resources,omitempty"`
	// CallerRunID is the run that started the job (messages.Caller.RunID;
	// "" = none): the job's durable lease is taken for it, so its waits
	// and holds take part in deadlock detection across runs. (RunID above
	// is the marker of the job's process tree, proc.RunIDEnv.)
	CallerRunID string `json:"caller_run_id,omitempty"`
	// ReceiptID is the receipt of what a job that wrote its checkout in
	// place changed there (revert undoes it; "" = none).
	ReceiptID string `json:"receipt_id,omitempty"`
	// LeaseReleaseState is where the release of the job's durable lease
	// is (LeaseReleasePending, LeaseReleaseReleased; "" = no lease):
	// the job ends with it pending, and it is released only once the
	// lease's actor answered. LeaseReleaseFailure is the one redacted
	// diagnostic of the attempts that failed (retried at start-up, by
	// the holder's own lease id; it authorises nothing).
	LeaseReleaseState   string            `json:"lease_release_state,omitempty"`
	LeaseReleaseFailure *LeaseReleaseDiag `json:"lease_release_failure,omitempty"`
	// Write is the write of a write job (on_busy: "durable"); nil for a
	// job that runs a process (Argv).
	Write *JobWrite `json:"write,omitempty"`
}

// JobSubmit asks the jobs actor to queue a new job. Job carries the spec
// fields (ID, repository, argv, cwd, timeout, isolation, writes, retry);
// the actor fills in the state. Answered with JobInfo once the queued
// state is persisted. With are records stored in the job's own synced
// transaction (job_start's ledger completion).
type JobSubmit struct {
	Job  Job
	With []StoreRecord
}

// JobGet asks for a job's current record. Answered with JobInfo.
type JobGet struct{ ID string }

// JobInfo answers JobSubmit, JobGet and JobCancel.
type JobInfo struct{ Job Job }

// JobCancel asks to cancel a job: a queued job ends at once, a running one
// once its process tree is dead. Idempotent on finished jobs. Answered
// with JobInfo.
type JobCancel struct{ ID string }

// JobList asks for jobs, newest first, optionally filtered.
type JobList struct {
	RepoID string
	State  string
	Limit  int
}

// JobListReply answers JobList.
type JobListReply struct{ Jobs []Job }

// JobClean asks to remove kept worktrees of jobs that finished before
// Before (zero = all). Answered with JobCleaned.
type JobClean struct{ Before time.Time }

// JobCleaned answers JobClean.
type JobCleaned struct{ Removed []string }

// JobStats asks the jobs actor for its figures. Answered with JobStatsReply.
type JobStats struct{}

// JobStatsReply answers JobStats.
type JobStatsReply struct {
	Queued      int    `json:"queued"`
	Running     int    `json:"running"`
	Concurrency int    `json:"concurrency"`
	MaxObserved int    `json:"max_running_observed"`
	Total       int    `json:"total"`
	Containment string `json:"containment"`
	Contained   bool   `json:"contained"`
	LogDir      string `json:"log_dir"`
	// Ended are the figures of the ended jobs on record: CPU time and I/O
	// summed, peak RSS and processes the largest of one job.
	Ended Resources `json:"ended_resources"`
}
